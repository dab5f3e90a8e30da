// camera follow (critically damped, speed caps), orbit rig, and keyboard steering math
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CameraFollow, OrbitRig, MAX_HORIZONTAL_SPEED, MAX_VERTICAL_SPEED } from '../../web/camera-follow.js';
import { CommandState, movement_from_keys, turn_facing } from '../../web/controls.js';

const step = (f, target, seconds, dt = 1 / 60) => {
    const trace = [];
    for (let t = 0; t < seconds; t += dt) trace.push([...f.update(target, dt)]);
    return trace;
};

test('follow snaps on the first update, then converges without overshoot', () => {
    const f = new CameraFollow();
    assert.deepEqual(f.update([1, 0.8, 2], 0.016), [1, 0.8, 2]);
    const trace = step(f, [1.5, 0.8, 2], 3);
    const xs = trace.map((p) => p[0]);
    assert.ok(xs.every((x, i) => i === 0 || x >= xs[i - 1] - 1e-12), 'monotonic');
    assert.ok(Math.max(...xs) <= 1.5 + 1e-9, 'no overshoot');
    assert.ok(Math.abs(xs.at(-1) - 1.5) < 1e-3, `settles: ${xs.at(-1)}`);
});

test('follow speed is capped: 0.8 m/s vertically, 6 m/s per horizontal axis', () => {
    const f = new CameraFollow();
    f.reset([0, 0, 0]);
    const dt = 1 / 60;
    let prev = [0, 0, 0], vmax = [0, 0, 0];
    for (let t = 0; t < 2; t += dt) {
        const p = f.update([50, 5, -50], dt);
        for (let i = 0; i < 3; ++i) vmax[i] = Math.max(vmax[i], Math.abs(p[i] - prev[i]) / dt);
        prev = [...p];
    }
    assert.ok(vmax[0] <= MAX_HORIZONTAL_SPEED + 1e-9 && vmax[0] > MAX_HORIZONTAL_SPEED * 0.99, `x ${vmax[0]}`);
    assert.ok(vmax[2] <= MAX_HORIZONTAL_SPEED + 1e-9, `z ${vmax[2]}`);
    assert.ok(vmax[1] <= MAX_VERTICAL_SPEED + 1e-9 && vmax[1] > MAX_VERTICAL_SPEED * 0.99, `y ${vmax[1]}`);
    // a gait's vertical bob of ±3 cm at 2 Hz barely moves the camera
    const g = new CameraFollow();
    g.reset([0, 0.8, 0]);
    let lo = Infinity, hi = -Infinity;
    for (let t = 0; t < 4; t += dt) {
        const y = g.update([0, 0.8 + 0.03 * Math.sin(2 * Math.PI * 2 * t), 0], dt)[1];
        if (t > 2) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
    }
    assert.ok(hi - lo < 0.02, `camera bob ${hi - lo}`);
});

test('follow is frame-rate independent (substeps) and survives a long frame', () => {
    const a = new CameraFollow(), b = new CameraFollow();
    a.reset([0, 0, 0]); b.reset([0, 0, 0]);
    step(a, [1, 0, 0], 1, 1 / 30);
    step(b, [1, 0, 0], 1, 1 / 144);
    assert.ok(Math.abs(a.anchor[0] - b.anchor[0]) < 0.01);
    const c = new CameraFollow();
    c.reset([0, 0, 0]);
    const p = c.update([1, 0, 0], 30);   // a tab asleep for 30 s
    assert.ok(Number.isFinite(p[0]) && p[0] > 0 && p[0] <= 1);
});

test('orbit rig: eye at the distance, pitch and zoom clamped, forward on the ground', () => {
    const o = new OrbitRig({ yaw: 0, pitch: 0.3, distance: 5 });
    const e = o.eye([0, 1, 0]);
    assert.ok(Math.abs(Math.hypot(e[0], e[1] - 1, e[2]) - 5) < 1e-9);
    assert.ok(e[2] < 0, 'yaw 0 looks along +Z from behind');
    assert.deepEqual(o.forward(), [0, 1]);
    o.rotate(0, 10);
    assert.ok(o.pitch <= 1.45);
    o.zoom(1e-6);
    assert.equal(o.distance, 1);
    o.zoom(1e9);
    assert.equal(o.distance, 40);
    o.restore();
    assert.equal(o.distance, 5);
});

test('W/A/S/D move relative to the camera; diagonals are unit length', () => {
    const keys = (s) => new Set(s.split(''));
    assert.deepEqual(movement_from_keys(keys('w'), [0, 1]), [0, 1]);
    assert.deepEqual(movement_from_keys(keys('s'), [0, 1]), [0, -1]);
    // camera looking along +Z: its right is −X (Y up, Z forward, right-handed)
    assert.deepEqual(movement_from_keys(keys('d'), [0, 1]), [-1, 0]);
    assert.deepEqual(movement_from_keys(keys('a'), [0, 1]), [1, 0]);
    const m = movement_from_keys(keys('wd'), [1, 0]);
    assert.ok(Math.abs(Math.hypot(...m) - 1) < 1e-12);
    assert.deepEqual(movement_from_keys(keys('ws'), [0, 1]), [0, 0]);
    assert.deepEqual(movement_from_keys(new Set(), [0, 1]), [0, 0]);
});

test('facing: arrows turn it (left is counter-clockwise from above), movement steers it otherwise', () => {
    const f = turn_facing([0, 1], Math.PI / 2);
    assert.ok(Math.abs(f[0] - 1) < 1e-12 && Math.abs(f[1]) < 1e-12, 'left of +Z is +X');
    const c = new CommandState([{ name: 'idle' }, { name: 'walk' }, { name: 'run' }]);
    assert.equal(c.style, 'walk');
    c.press('d');
    c.update([0, 1], 0.016);
    assert.deepEqual(c.move, [-1, 0]);
    assert.deepEqual(c.facing, [-1, 0], 'facing follows movement');
    c.press('ArrowLeft');
    c.update([0, 1], 0.5);
    assert.ok(c.facing_locked);
    const turned = Math.atan2(c.facing[0], c.facing[1]);
    assert.ok(Math.abs(turned - (-Math.PI / 2 + Math.PI / 4)) < 1e-9, `turned to ${turned}`);
    c.release('ArrowLeft');
    c.update([0, 1], 0.5);
    assert.ok(Math.abs(Math.atan2(c.facing[0], c.facing[1]) - turned) < 1e-12, 'locked facing stays (strafe)');
    c.press('ArrowUp');
    c.update([0, 1], 0.016);
    assert.deepEqual(c.facing, [-1, 0], 'unlocked: follows movement again');
    c.press('3');
    assert.equal(c.style, 'run');
    c.press('9');
    assert.equal(c.style, 'run', 'no ninth style: unchanged');
});

test('Space and Esc stop; a control is pending only when something changed', () => {
    const c = new CommandState([{ name: 'walk' }]);
    const first = c.pending();
    assert.deepEqual(first, { style: 'walk', move: [0, 0], facing: [0, 1] });
    c.mark_sent(first);
    assert.equal(c.pending(), null);
    c.press('w');
    c.update([0, 1], 0.016);
    const go = c.pending();
    assert.deepEqual(go.move, [0, 1]);
    c.mark_sent(go);
    for (const key of [' ', 'Escape']) {
        c.press('w');
        c.update([0, 1], 0.016);
        c.press(key);
        c.update([0, 1], 0.016);
        assert.deepEqual(c.move, [0, 0], key);
        assert.equal(c.keys.size, 0);
    }
    assert.deepEqual(c.pending().move, [0, 0]);
    // facing always stays a valid (unit) direction for the server's 0.1 ≤ |f| ≤ 1.01 rule
    const n = Math.hypot(...c.pending().facing);
    assert.ok(n > 0.99 && n < 1.01);
});
