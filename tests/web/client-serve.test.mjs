// the viewer's StreamClient against the real `motionbricks serve` (MB_SERVE_URL, set by
// serve-e2e.mjs): every message the server sends passes the viewer's validation, and the
// ownership, ack and resume behaviour the viewer relies on holds
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { StreamClient } from '../../web/stream-client.js';

const base = process.env.MB_SERVE_URL;
const skip = base ? false : 'MB_SERVE_URL not given (the web-client-serve CTest sets it)';

class Storage {
    constructor() { this.m = new Map(); }
    getItem(k) { return this.m.get(k) ?? null; }
    setItem(k, v) { this.m.set(k, String(v)); }
    removeItem(k) { this.m.delete(k); }
}

function client(WebSocket, storage = new Storage()) {
    const got = [], invalid = [];
    const c = new StreamClient({
        url: base.replace(/^http/, 'ws') + '/api/stream/socket', WebSocket, storage,
        on_message: (m) => got.push(m), on_invalid: (e, text) => invalid.push(`${e}: ${String(text).slice(0, 200)}`),
    });
    c.got = got;
    c.invalid = invalid;
    return c;
}

async function until(pred, what, ms = 30000) {
    const end = Date.now() + ms;
    while (!pred()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
    }
}

test('StreamClient against motionbricks serve', { skip }, async () => {
    const require = createRequire(new URL('../../web/package.json', import.meta.url));
    const { WebSocket } = require('ws');
    const owner = client(WebSocket);
    const spectator = client(WebSocket);
    try {
        // the owner: hello with a token, frames, resume acknowledged
        owner.connect();
        await until(() => owner.hello, 'owner hello');
        assert.equal(owner.hello.version, 1);
        assert.equal(owner.owner, true);
        assert.match(owner.hello.token, /^[0-9a-f]{32}$/);
        await until(() => owner.got.filter((m) => m.type === 'frame').length >= 20, '20 frames');

        // a control is received, then scheduled/applied/superseded; states come in order
        const seq = owner.send({ type: 'control', style: 'walk', move: [0, 1], facing: [0, 1] });
        assert.ok(seq > 0);
        const acks = () => owner.got.filter((m) => m.type === 'ack' && m.seq === seq).map((m) => m.state);
        await until(() => acks().some((s) => s !== 'received'), `a final ack for seq ${seq}`);
        assert.equal(acks()[0], 'received', `ack order ${acks()}`);
        assert.ok(acks().every((s) => ['received', 'scheduled', 'applied', 'superseded'].includes(s)), `acks ${acks()}`);

        // a repeated seq is a duplicate
        owner.ws.send(JSON.stringify({ type: 'control', seq, move: [0, 0] }));
        await until(() => owner.got.some((m) => m.type === 'ack' && m.seq === seq && m.state === 'duplicate'), 'duplicate ack');

        // the planner placed targets: four poses the viewer can draw
        await until(() => owner.got.some((m) => m.type === 'targets' && m.targets), 'targets with poses');

        // a second viewer is a spectator: no token, control rejected, ping answered
        spectator.connect();
        await until(() => spectator.hello, 'spectator hello');
        assert.equal(spectator.owner, false);
        assert.equal(spectator.hello.token, undefined);
        const sseq = spectator.send({ type: 'control', move: [1, 0], facing: [1, 0] });
        await until(() => spectator.got.some((m) => m.type === 'ack' && m.seq === sseq && m.state === 'rejected'), 'spectator rejected');
        spectator.ping();
        await until(() => spectator.got.some((m) => m.type === 'pong'), 'pong');
        await until(() => spectator.got.filter((m) => m.type === 'frame').length >= 10, 'spectator frames');

        // the owner's link drops: the client reconnects with its token and owns again
        const last = owner.seq;
        owner.ws.close();
        await until(() => owner.got.filter((m) => m.type === 'hello').length === 2, 'hello after reconnect');
        assert.equal(owner.owner, true, 'the token resumed ownership');
        assert.ok(owner.hello.last_seq >= last - 1, `server remembers seq (${owner.hello.last_seq} vs ${last})`);
        const seq2 = owner.send({ type: 'control', style: 'walk', move: [1, 0], facing: [1, 0] });
        assert.ok(seq2 > last);
        await until(() => owner.got.some((m) => m.type === 'ack' && m.seq === seq2 && m.state !== 'received'), 'ack after resume');
        assert.ok(!owner.got.some((m) => m.type === 'ack' && m.seq === seq2 && m.state === 'duplicate'), 'seq continues above the server’s');

        // frames: ticks increase within an epoch, and nothing failed validation
        const frames = owner.got.filter((m) => m.type === 'frame');
        for (let i = 1; i < frames.length; ++i) {
            if (frames[i].epoch === frames[i - 1].epoch) assert.ok(frames[i].tick >= frames[i - 1].tick, `tick ${frames[i].tick} after ${frames[i - 1].tick}`);
        }
        assert.deepEqual(owner.invalid, []);
        assert.deepEqual(spectator.invalid, []);
    } finally {
        owner.close();
        spectator.close();
    }
});
