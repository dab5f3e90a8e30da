// the client pose buffer: delay, interpolation (SLERP), drift correction, underrun hold and
// rebuffer, epoch flush, overflow resync, validation of every frame
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { PoseBuffer, RATE_LIMIT } from '../../web/pose-buffer.js';

const N = 34;
// a frame at `tick` whose root x is tick/50 and whose joint 1 is turned by `angle` about Y
function frame(tick, { epoch = 0, angle = 0, x = tick / 50, paused = false } = {}) {
    const rotations = [];
    for (let j = 0; j < N; ++j) {
        if (j === 1) rotations.push(0, Math.sin(angle / 2), 0, Math.cos(angle / 2));
        else rotations.push(0, 0, 0, 1);
    }
    return { type: 'frame', epoch, tick, time: tick / 50, root: [x, 0.8, 0], rotations, paused, holding: false, planning: false };
}

// feeds ticks [from, to) at 50 Hz of wall time starting at t0, sampling at 60 Hz in between;
// returns the last sample
function run(buf, from, to, t0, opts = {}) {
    let last = null;
    for (let k = from; k < to; ++k) {
        buf.push(frame(k, opts));
        const now = t0 + (k - from) / 50;
        last = buf.sample(now);
    }
    return last;
}

test('starts buffering, plays once the lead reaches 0.75 × delay, then holds ~delay behind', () => {
    const b = new PoseBuffer();
    assert.equal(b.sample(0), null);
    b.push(frame(0));
    assert.equal(b.state, 'buffering');
    const p = b.sample(0);
    assert.equal(p.root[0], 0);
    // 0.75 × 0.15 s = 0.1125 s = 5.6 ticks: tick 5 is not enough, 6 is
    for (let k = 1; k <= 5; ++k) { b.push(frame(k)); b.sample(k / 50); }
    assert.equal(b.state, 'buffering');
    b.push(frame(6));
    b.sample(6 / 50);
    assert.equal(b.state, 'playing');
    // steady 50 Hz for 20 s: the lead converges toward the delay
    run(b, 7, 1000, 7 / 50);
    assert.equal(b.state, 'playing');
    assert.ok(Math.abs(b.lead - 0.15) < 0.03, `lead ${b.lead}`);
    assert.equal(b.stats.underruns, 0);
});

test('interpolates roots linearly and rotations by SLERP between frames', () => {
    const b = new PoseBuffer({ delay: 0.04 });
    b.push(frame(0, { angle: 0, x: 0 }));
    b.sample(0);
    b.push(frame(1, { angle: Math.PI / 2, x: 1 }));
    b.push(frame(2, { angle: Math.PI / 2, x: 1 }));
    b.push(frame(3, { angle: Math.PI / 2, x: 1 }));
    b.sample(0);            // lead 0.06 ≥ 0.03: playing
    const p = b.sample(0.01);   // half way between tick 0 and 1 (rate ≈ 1)
    assert.ok(Math.abs(p.root[0] - 0.5) < 0.01, `root ${p.root[0]}`);
    // SLERP half of 90° about Y is 45°: (0, sin 22.5°, 0, cos 22.5°); a lerp would give a shorter vector
    const y = p.rotations[4 + 1], w = p.rotations[4 + 3];
    const half = 2 * Math.atan2(y, w);
    assert.ok(Math.abs(half - Math.PI / 4) < 0.02, `angle ${half}`);
    assert.ok(Math.abs(Math.hypot(...p.rotations.slice(4, 8)) - 1) < 1e-9);
});

test('SLERP takes the short way when the quaternions have opposite signs', () => {
    const b = new PoseBuffer({ delay: 0.04 });
    const f0 = frame(0), f1 = frame(1);
    f1.rotations.splice(4, 4, 0, -0, -0, -1);   // −identity: the same rotation
    b.push(f0); b.sample(0);
    b.push(f1); b.push(frame(2)); b.push(frame(3));
    b.sample(0);
    const p = b.sample(0.01);
    assert.ok(Math.abs(Math.abs(p.rotations[7]) - 1) < 1e-9, 'stays at identity, not through 180°');
});

test('drift correction stays within ±2 % and per-render steps are clamped to 0.1 s', () => {
    const b = new PoseBuffer();
    run(b, 0, 100, 0);
    // a burst: the server suddenly 1 s ahead
    for (let k = 100; k < 150; ++k) b.push(frame(k));
    const before = b.playhead;
    b.sample(99 / 50 + 0.02);
    assert.ok(b.rate <= 1 + RATE_LIMIT + 1e-12 && b.rate > 1, `rate ${b.rate}`);
    assert.ok(b.playhead - before <= 0.02 * (1 + RATE_LIMIT) + 1e-9);
    // a frozen tab resumes 5 s later: the clock moves at most 0.1 s
    const ph = b.playhead;
    b.sample(99 / 50 + 5);
    assert.ok(b.playhead - ph <= 0.1 * (1 + RATE_LIMIT) + 1e-9, `step ${b.playhead - ph}`);
    // lead too small: slows down, never below 0.98
    const c = new PoseBuffer();
    run(c, 0, 50, 0);
    c.push(frame(50));
    c.playhead = c.newest.time - 0.05;
    c.sample(50 / 50 + 0.001);
    assert.ok(c.rate < 1 && c.rate >= 1 - RATE_LIMIT, `rate ${c.rate}`);
});

test('underrun holds the newest pose and rebuffers until the lead is back to 0.75 × delay', () => {
    const b = new PoseBuffer();
    run(b, 0, 100, 0);
    const last = b.newest.time;
    // frames stop; the clock runs on past the buffered lead
    let p;
    for (let i = 1; i <= 30; ++i) p = b.sample(99 / 50 + i * 0.02);
    assert.equal(b.state, 'buffering');
    assert.equal(b.stats.underruns, 1);
    assert.equal(b.playhead, last);
    assert.ok(Math.abs(p.root[0] - last) < 1e-12, 'holds the newest root');
    // held: time passing does not move it
    b.sample(99 / 50 + 1);
    assert.equal(b.playhead, last);
    // frames return: not playing before the lead reaches 0.1125 s
    const t = 99 / 50 + 1.1;
    for (let k = 100; k < 105; ++k) { b.push(frame(k)); b.sample(t); }
    assert.equal(b.state, 'buffering');
    b.push(frame(105));
    b.sample(t);
    assert.equal(b.state, 'playing');
});

test('a new epoch flushes the queue; stale and repeated frames are handled', () => {
    const b = new PoseBuffer();
    run(b, 0, 30, 0);
    assert.ok(b.queue.length > 1);
    b.push(frame(5, { epoch: 1, x: 42 }));
    assert.equal(b.stats.flushes, 1);
    assert.equal(b.queue.length, 1);
    assert.equal(b.state, 'buffering');
    assert.equal(b.sample(10).root[0], 42);
    // older tick in the same epoch: dropped
    b.push(frame(3, { epoch: 1 }));
    assert.equal(b.stats.stale, 1);
    assert.equal(b.queue.length, 1);
    // same tick again (paused re-send): replaces the flags, no new entry
    b.push(frame(5, { epoch: 1, x: 42, paused: true }));
    assert.equal(b.queue.length, 1);
    assert.equal(b.newest.paused, true);
});

test('the queue is bounded: overflow resyncs on the newest frame', () => {
    const b = new PoseBuffer({ capacity: 128 });
    for (let k = 0; k < 500; ++k) b.push(frame(k));   // never sampled (a hidden tab)
    assert.ok(b.queue.length <= 128);
    assert.ok(b.stats.resyncs >= 1);
    const p = b.sample(0);
    assert.ok(p.root[0] >= 384 / 50, `root ${p.root[0]}`);
});

test('invalid frames are never buffered', () => {
    const b = new PoseBuffer();
    const bad = frame(1);
    bad.rotations[3] = 0.5;
    assert.equal(b.push(bad), false);
    assert.equal(b.push({ ...frame(2), root: [0, 0] }), false);
    assert.equal(b.push({ ...frame(3), rotations: bad.rotations.slice(4) }), false);
    assert.equal(b.queue.length, 0);
    assert.equal(b.stats.rejected, 3);
    assert.match(b.stats.last_error, /rotations/);
    assert.equal(b.sample(0), null);
});

test('times come from the integer tick, not the rounded text time', () => {
    const b = new PoseBuffer();
    // after ~3 h a 6-digit time no longer tells 50 Hz ticks apart
    const f1 = { ...frame(600000, { x: 0 }), time: 12000.0 }, f2 = { ...frame(600001, { x: 0 }), time: 12000.0 };
    b.push(f1);
    b.push(f2);
    assert.equal(b.queue.length, 2);
    assert.equal(b.stats.replaced, 0);
});

test('delivery jitter up to 80 ms: smooth, monotonic playback at a 60 Hz render with no underrun', () => {
    // frames made at 50 Hz arrive late by a random 0..80 ms (in order, as over one TCP stream)
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const arrivals = [];
    let last_arrival = 0;
    for (let k = 0; k < 50 * 30; ++k) {
        last_arrival = Math.max(last_arrival, k / 50 + rand() * 0.08);
        arrivals.push([last_arrival, k]);
    }
    const b = new PoseBuffer();
    let i = 0, prev_x = -Infinity, prev_time = null, worst_step = 0;
    for (let t = 0; t < 30; t += 1 / 60) {
        while (i < arrivals.length && arrivals[i][0] <= t) b.push(frame(arrivals[i++][1]));
        const p = b.sample(t);
        if (!p) continue;
        assert.ok(p.root[0] >= prev_x - 1e-12, `monotonic at ${t}`);
        prev_x = p.root[0];
        if (t > 2 && prev_time !== null) worst_step = Math.max(worst_step, Math.abs((p.time - prev_time) * 60 - 1));
        prev_time = p.time;
    }
    assert.equal(b.stats.underruns, 0);
    assert.ok(worst_step <= RATE_LIMIT + 1e-9, `playback speed deviates by ${worst_step}`);
    assert.ok(b.lead > 0.1 && b.lead < 0.2, `lead ${b.lead}`);
});
