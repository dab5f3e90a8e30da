// StreamClient: token in sessionStorage, resume after an owner hello, seq numbering, ping every
// 10 s, reconnect after 750 ms, the 16 KiB bufferedAmount guard, validation of every message,
// refusal of other protocol versions; then the same client against the node mock server over a
// real socket
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';

import { StreamClient, TOKEN_KEY, PING_INTERVAL_MS, RECONNECT_MS, MAX_BUFFERED } from '../../web/stream-client.js';

class FakeTimers {
    constructor() { this.now = 0; this.jobs = []; this.next = 1; }
    setTimeout(fn, ms) { const id = this.next++; this.jobs.push({ id, at: this.now + ms, fn }); return id; }
    setInterval(fn, ms) { const id = this.next++; this.jobs.push({ id, at: this.now + ms, fn, every: ms }); return id; }
    clearTimeout(id) { this.jobs = this.jobs.filter((j) => j.id !== id); }
    clearInterval(id) { this.clearTimeout(id); }
    advance(ms) {
        const end = this.now + ms;
        for (;;) {
            this.jobs.sort((a, b) => a.at - b.at);
            const j = this.jobs[0];
            if (!j || j.at > end) break;
            this.now = j.at;
            if (j.every) j.at += j.every; else this.jobs.shift();
            j.fn();
        }
        this.now = end;
    }
}
class FakeStorage {
    constructor() { this.m = new Map(); }
    getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
    setItem(k, v) { this.m.set(k, String(v)); }
    removeItem(k) { this.m.delete(k); }
}
function fake_socket_class() {
    const made = [];
    class FakeSocket {
        constructor(url) { this.url = url; this.readyState = 0; this.sent = []; this.bufferedAmount = 0; made.push(this); }
        open() { this.readyState = 1; this.onopen?.(); }
        recv(obj) { this.onmessage?.({ data: typeof obj === 'string' ? obj : JSON.stringify(obj) }); }
        send(text) { this.sent.push(JSON.parse(text)); }
        close() { this.readyState = 3; }
        drop() { this.readyState = 3; this.onclose?.({ code: 1006 }); }
    }
    return { FakeSocket, made };
}
const TOKEN = '0123456789abcdef0123456789abcdef';
const hello = (over = {}) => ({ type: 'hello', version: 1, owner: true, token: TOKEN, last_seq: 0, epoch: 0, physics_available: false, buffer_seconds: 0.15, ...over });

function setup() {
    const timers = new FakeTimers(), storage = new FakeStorage(), { FakeSocket, made } = fake_socket_class();
    const got = [], invalid = [], states = [];
    const c = new StreamClient({
        url: 'ws://h/api/stream/socket', WebSocket: FakeSocket, storage, timers,
        on_message: (m) => got.push(m), on_invalid: (e) => invalid.push(e), on_state: (s) => states.push(s),
    });
    return { c, timers, storage, made, got, invalid, states };
}

test('owner hello stores the token and sends resume; commands get increasing seq', () => {
    const { c, storage, made } = setup();
    c.connect();
    assert.equal(made[0].url, 'ws://h/api/stream/socket');
    made[0].open();
    made[0].recv(hello({ last_seq: 41 }));
    assert.equal(storage.getItem(TOKEN_KEY), TOKEN);
    assert.equal(c.owner, true);
    assert.deepEqual(made[0].sent[0], { type: 'resume', seq: 42 }, 'seq continues above last_seq');
    assert.equal(c.send({ type: 'control', move: [0, 1] }), 43);
    assert.equal(c.send({ type: 'control', move: [0, 0] }), 44);
    assert.deepEqual(made[0].sent.map((m) => m.seq), [42, 43, 44]);
});

test('seq wraps to 1 after 2^53 - 1, as the server accepts', () => {
    const { c, made } = setup();
    c.connect();
    made[0].open();
    made[0].recv(hello({ last_seq: Number.MAX_SAFE_INTEGER - 1 }));
    assert.deepEqual(made[0].sent[0], { type: 'resume', seq: Number.MAX_SAFE_INTEGER });
    assert.equal(c.send({ type: 'control', move: [0, 1] }), 1);
    assert.equal(c.send({ type: 'control', move: [0, 0] }), 2);
});

test('a spectator hello clears a stale token; reconnect uses a stored token', () => {
    const { c, storage, made } = setup();
    storage.setItem(TOKEN_KEY, TOKEN);
    c.connect();
    assert.equal(made[0].url, `ws://h/api/stream/socket?resume=${TOKEN}`);
    made[0].open();
    made[0].recv(hello({ owner: false, token: undefined }));
    assert.equal(storage.getItem(TOKEN_KEY), null);
    assert.equal(made[0].sent.length, 0, 'a spectator sends no resume');
});

test('ping every 10 s while open; reconnect 750 ms after a drop, not after close()', () => {
    const { c, timers, made, states } = setup();
    c.connect();
    made[0].open();
    made[0].recv(hello());
    timers.advance(PING_INTERVAL_MS * 3 + 1);
    assert.equal(made[0].sent.filter((m) => m.type === 'ping').length, 3);
    assert.ok(made[0].sent.filter((m) => m.type === 'ping').every((m) => m.seq === undefined));
    made[0].drop();
    assert.equal(states.at(-1), 'closed');
    timers.advance(RECONNECT_MS - 1);
    assert.equal(made.length, 1);
    timers.advance(1);
    assert.equal(made.length, 2, 'reconnected');
    assert.equal(made[1].url, `ws://h/api/stream/socket?resume=${TOKEN}`);
    // the old socket's ping timer is gone
    timers.advance(PING_INTERVAL_MS * 2);
    assert.equal(made[0].sent.filter((m) => m.type === 'ping').length, 3);
    c.close();
    timers.advance(RECONNECT_MS * 4);
    assert.equal(made.length, 2, 'no reconnect after close()');
});

test('refuses to send while the socket buffers more than 16 KiB, or when not open', () => {
    const { c, made } = setup();
    assert.equal(c.send({ type: 'control' }), false);
    c.connect();
    assert.equal(c.send({ type: 'control' }), false, 'connecting');
    made[0].open();
    made[0].bufferedAmount = MAX_BUFFERED + 1;
    assert.equal(c.send({ type: 'control' }), false);
    assert.equal(c.stats.refused, 1);
    made[0].bufferedAmount = MAX_BUFFERED;
    assert.notEqual(c.send({ type: 'control' }), false);
});

test('invalid messages are dropped, not delivered; another protocol version stops the client', () => {
    const { c, timers, made, got, invalid } = setup();
    c.connect();
    made[0].open();
    made[0].recv('not json');
    made[0].recv({ type: 'frame', epoch: 0, tick: 1, time: 0.02, root: [0, 0], rotations: [] });
    made[0].recv({ type: 'mystery' });
    assert.equal(got.length, 0);
    assert.equal(invalid.length, 3);
    made[0].recv(hello({ version: 2 }));
    assert.match(c.fatal, /unsupported protocol version 2/);
    timers.advance(RECONNECT_MS * 4);
    assert.equal(made.length, 1, 'no reconnect loop against an incompatible server');
});

const web_modules = new URL('../../web/node_modules/ws/package.json', import.meta.url);
test('against the mock server over a real socket: hello, frames, acks, resume after a drop', { skip: existsSync(web_modules) ? false : 'web/node_modules missing (npm ci in web/)' }, async () => {
    const { start_mock } = await import('./mock-server.mjs');
    const require = createRequire(web_modules);
    const { WebSocket } = require('ws');
    const mock = await start_mock();
    const storage = new FakeStorage();
    const got = [];
    const c = new StreamClient({ url: mock.url.replace('http', 'ws') + '/api/stream/socket', WebSocket, storage, on_message: (m) => got.push(m) });
    const until = async (pred, what, ms = 5000) => {
        const end = Date.now() + ms;
        while (!pred()) {
            if (Date.now() > end) throw new Error(`timed out: ${what}`);
            await new Promise((r) => setTimeout(r, 10));
        }
    };
    try {
        c.connect();
        await until(() => got.some((m) => m.type === 'hello'), 'hello');
        assert.equal(c.owner, true);
        await until(() => got.filter((m) => m.type === 'frame').length >= 10, 'frames');
        assert.ok(got.some((m) => m.type === 'targets'));
        const seq = c.send({ type: 'control', style: 'walk', move: [0, 1], facing: [0, 1] });
        await until(() => got.some((m) => m.type === 'ack' && m.seq === seq && m.state === 'applied'), 'applied ack');
        await fetch(mock.url + '/mock/drop');
        const hellos = () => got.filter((m) => m.type === 'hello').length;
        await until(() => hellos() === 2, 'second hello after reconnect');
        assert.equal(c.owner, true, 'token resumed ownership');
        await until(() => mock.log.filter((m) => m.type === 'resume').length === 2, 'resume sent again');
        const seqs = mock.log.filter((m) => m.seq !== undefined).map((m) => m.seq);
        assert.ok(seqs.every((v, i) => i === 0 || v > seqs[i - 1]), `seq increases across reconnects: ${seqs}`);
    } finally {
        c.close();
        await mock.close();
    }
});
