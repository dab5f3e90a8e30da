// quaternion helpers and forward kinematics of the viewer, checked against an independent
// rotation-matrix chain, and (when MB_MOTION_JSON names a `motionbricks plan` output) against
// the runtime's own FK joint positions
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { forward_kinematics, quat_mul, quat_rotate, quat_slerp, rest_offsets } from '../../web/skeleton-fk.js';

const close = (a, b, tol, what) => {
    assert.equal(a.length, b.length, `${what}: length`);
    for (let i = 0; i < a.length; ++i) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

// seeded random numbers (mulberry32)
function rng(seed) {
    return () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
function random_quat(r) {
    const q = [r() - 0.5, r() - 0.5, r() - 0.5, r() - 0.5];
    const n = Math.hypot(...q);
    return q.map((v) => v / n);
}
// row-major 3×3 matrix of a unit quaternion (x, y, z, w)
function matrix(q) {
    const [x, y, z, w] = q;
    return [
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ];
}
const mat_mul = (a, b) => Array.from({ length: 9 }, (_, k) => {
    const r = Math.floor(k / 3), c = k % 3;
    return a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
});
const mat_vec = (m, v) => [0, 1, 2].map((r) => m[3 * r] * v[0] + m[3 * r + 1] * v[1] + m[3 * r + 2] * v[2]);

const G1_PARENTS = [-1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
    17, 26, 27, 28, 29, 30, 31, 32];

test('quaternion product and rotation agree with rotation matrices', () => {
    const r = rng(7);
    for (let i = 0; i < 50; ++i) {
        const a = random_quat(r), b = random_quat(r), v = [r() - 0.5, r() - 0.5, r() - 0.5];
        const ab = [0, 0, 0, 0];
        quat_mul(a, 0, b, 0, ab, 0);
        close(matrix(ab), mat_mul(matrix(a), matrix(b)), 1e-12, 'a·b');
        const out = [0, 0, 0];
        quat_rotate(a, 0, v, 0, out, 0);
        close(out, mat_vec(matrix(a), v), 1e-12, 'a v');
    }
});

test('slerp: endpoints, constant angular speed, unit results', () => {
    const r = rng(11);
    for (let i = 0; i < 20; ++i) {
        const a = random_quat(r), b = random_quat(r);
        const out = [0, 0, 0, 0];
        quat_slerp(a, 0, b, 0, 0, out, 0);
        close(out, a, 1e-12, 't=0');
        quat_slerp(a, 0, b, 0, 1, out, 0);
        const sign = a.reduce((s, v, k) => s + v * b[k], 0) < 0 ? -1 : 1;
        close(out, b.map((v) => v * sign), 1e-12, 't=1');
        // the angle from a grows linearly with t
        const total = 2 * Math.acos(Math.min(1, Math.abs(a.reduce((s, v, k) => s + v * b[k], 0))));
        for (const t of [0.25, 0.5, 0.75]) {
            quat_slerp(a, 0, b, 0, t, out, 0);
            assert.ok(Math.abs(Math.hypot(...out) - 1) < 1e-12);
            const ang = 2 * Math.acos(Math.min(1, Math.abs(a.reduce((s, v, k) => s + v * out[k], 0))));
            assert.ok(Math.abs(ang - t * total) < 1e-6, `t=${t}: ${ang} vs ${t * total}`);
        }
    }
});

test('identity rotations reproduce the rest pose placed at the root', () => {
    const r = rng(3);
    const rest = Array.from({ length: 34 * 3 }, (_, i) => (i < 3 ? 0 : r() - 0.5));
    const rot = Array.from({ length: 34 }, () => [0, 0, 0, 1]).flat();
    const root = [1, 0.8, -2];
    const pos = forward_kinematics(root, rot, G1_PARENTS, rest_offsets(rest, G1_PARENTS));
    close(pos, rest.map((v, i) => v + root[i % 3]), 1e-12, 'rest');
});

test('forward kinematics matches an independent matrix chain on random poses', () => {
    const r = rng(5);
    const rest = Array.from({ length: 34 * 3 }, (_, i) => (i < 3 ? 0 : r() - 0.5));
    const offsets = rest_offsets(rest, G1_PARENTS);
    for (let trial = 0; trial < 10; ++trial) {
        const quats = Array.from({ length: 34 }, () => random_quat(r));
        const root = [r() * 10, r(), r() * 10];
        const pos = forward_kinematics(root, quats.flat(), G1_PARENTS, offsets);
        const g = [], p = [];
        for (let j = 0; j < 34; ++j) {
            const par = G1_PARENTS[j];
            const off = [0, 1, 2].map((i) => rest[3 * j + i] - (par < 0 ? 0 : rest[3 * par + i]));
            if (par < 0) {
                g[j] = matrix(quats[j]);
                p[j] = root.map((v, i) => v + off[i]);
            } else {
                g[j] = mat_mul(g[par], matrix(quats[j]));
                p[j] = mat_vec(g[par], off).map((v, i) => v + p[par][i]);
            }
        }
        close(pos, p.flat(), 1e-9, `trial ${trial}`);
    }
});

// the viewer's FK over /api/meta's rest positions reproduces the runtime's own joint positions
// (motionbricks-motion-v1 from `motionbricks plan`); CTest sets MB_MOTION_JSON when it made one
const motion_path = process.env.MB_MOTION_JSON;
test('parity with the runtime FK of `motionbricks plan` output', { skip: motion_path ? false : 'MB_MOTION_JSON not given (the web-fk-parity CTest sets it)' }, () => {
    const m = JSON.parse(readFileSync(motion_path, 'utf8'));
    assert.equal(m.format, 'motionbricks-motion-v1');
    const meta = JSON.parse(readFileSync(process.env.MB_META_JSON, 'utf8'));
    const rest = meta.joints.flatMap((j) => j.position);
    const parents = meta.joints.map((j) => j.parent);
    assert.deepEqual(parents, m.parents);
    const offsets = rest_offsets(rest, parents);
    let worst = 0;
    for (let f = 0; f < m.frames; ++f) {
        const pos = forward_kinematics(m.root_translations[f], m.local_rotations_xyzw[f].flat(), parents, offsets);
        const want = m.joint_positions[f].flat();
        for (let i = 0; i < want.length; ++i) worst = Math.max(worst, Math.abs(pos[i] - want[i]));
    }
    console.log(`FK parity over ${m.frames} frames: max |viewer − runtime| = ${worst.toExponential(2)} m`);
    assert.ok(m.frames > 0);
    assert.ok(worst < 2e-4, `max deviation ${worst} m`);
});
