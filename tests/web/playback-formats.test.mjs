// the viewer's readers of .mbreplay v1 and the open-loop report v1 (web/replay-format.js,
// web/report-format.js): a valid file reads back, and a numbered corpus of broken ones is
// refused with a message naming the field, as the C++ reader does (tests/format)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { read_mbreplay } from '../../web/replay-format.js';
import { format_mm, frame_errors, read_open_loop_report } from '../../web/report-format.js';

// the C++ tests' sample (fixture-samples.h): 40 frames, 5 joints, 7 qpos, 3 plans
function sample() {
    const F = 40, J = 5, Q = 7, P = 3;
    const words = [];
    const u32 = (v) => words.push(['u', v]), i32 = (v) => words.push(['i', v]), f32 = (v) => words.push(['f', v]);
    [1, 30, F, J, Q, P, 4, 0].forEach(u32);
    [-1, 0, 1, 0, 3].forEach(i32);
    for (let i = 0; i < F; ++i) i32(Math.floor(i / 16));
    for (let i = 0; i < F; ++i) i32(i < 4 ? -1 : Math.floor((i - 4) / 12));
    for (let i = 0; i < F * Q; ++i) f32(0.01 * (i % 31));
    for (let i = 0; i < F * J * 3; ++i) f32(0.02 * (i % 17));
    [4, 16, 28].forEach(u32);
    [0, 2, 4].forEach(i32);
    [28, 32, 24].forEach(u32);
    for (let i = 0; i < P * 4 * J * 3; ++i) f32(0.5 + 0.01 * (i % 13));
    const b = new ArrayBuffer(8 + 4 * words.length), dv = new DataView(b);
    'MBRPLY1\0'.split('').forEach((c, i) => dv.setUint8(i, c.charCodeAt(0)));
    words.forEach(([t, v], k) => (t === 'u' ? dv.setUint32 : t === 'i' ? dv.setInt32 : dv.setFloat32).call(dv, 8 + 4 * k, v, true));
    return new Uint8Array(b);
}
const F = 40, J = 5, Q = 7, P = 3;
const at = { parents: 40, modes: 60, active: 60 + 4 * F, qpos: 60 + 8 * F, pos: 60 + 8 * F + 4 * F * Q };
at.first = at.pos + 4 * F * J * 3;
at.pmode = at.first + 12;
at.plen = at.pmode + 12;
at.target = at.plen + 12;
at.end = at.target + 4 * P * 4 * J * 3;

const put = (b, off, v, kind = 'u') => {
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    ({ u: dv.setUint32, i: dv.setInt32, f: dv.setFloat32 })[kind].call(dv, off, v, true);
};
const cases = [
    ['01 empty', (b) => b.subarray(0, 0), 'magic'],
    ['02 three bytes', (b) => b.subarray(0, 3), 'magic'],
    ['03 bad magic', (b) => { b[6] = 50; return b; }, 'magic'],
    ['04 parity magic', (b) => { 'MBPARI1'.split('').forEach((c, i) => { b[i] = c.charCodeAt(0); }); return b; }, 'not a .mbreplay'],
    ['05 header cut', (b) => b.subarray(0, 20), 'truncated'],
    ['06 version 0', (b) => { put(b, 8, 0); return b; }, 'version'],
    ['07 version 2', (b) => { put(b, 8, 2); return b; }, 'version'],
    ['08 fps 0', (b) => { put(b, 12, 0); return b; }, 'fps'],
    ['09 fps 1001', (b) => { put(b, 12, 1001); return b; }, 'fps'],
    ['10 frames 0', (b) => { put(b, 16, 0); return b; }, 'frames'],
    ['11 frames 1e6+1', (b) => { put(b, 16, 1000001); return b; }, 'frames'],
    ['12 joints 0', (b) => { put(b, 20, 0); return b; }, 'joints'],
    ['13 joints 65', (b) => { put(b, 20, 65); return b; }, 'joints'],
    ['14 qpos 0', (b) => { put(b, 24, 0); return b; }, 'qpos'],
    ['15 qpos 257', (b) => { put(b, 24, 257); return b; }, 'qpos'],
    ['16 plans above frames', (b) => { put(b, 28, 41); return b; }, 'exceed frames'],
    ['17 target frames 3', (b) => { put(b, 32, 3); return b; }, 'target frames'],
    ['18 flags 1', (b) => { put(b, 36, 1); return b; }, 'flags'],
    ['19 beyond 512 MiB', (b) => { put(b, 16, 1000000); put(b, 20, 64); put(b, 24, 256); return b; }, '512 MiB'],
    ['20 frames 41', (b) => { put(b, 16, 41); return b; }, 'truncated'],
    ['21 joints 4', (b) => { put(b, 20, 4); return b; }, 'trailing'],
    ['22 last byte missing', (b) => b.subarray(0, b.length - 1), 'truncated'],
    ['23 trailing byte', (b) => { const c = new Uint8Array(b.length + 1); c.set(b); return c; }, 'trailing'],
    ['24 root parent 0', (b) => { put(b, at.parents, 0, 'i'); return b; }, 'parents[0]'],
    ['25 own parent', (b) => { put(b, at.parents + 8, 2, 'i'); return b; }, 'parents[2]'],
    ['26 parent -1', (b) => { put(b, at.parents + 16, -1, 'i'); return b; }, 'parents[4]'],
    ['27 mode -1', (b) => { put(b, at.modes + 12, -1, 'i'); return b; }, 'modes[3]'],
    ['28 mode 15', (b) => { put(b, at.modes + 156, 15, 'i'); return b; }, 'modes[39]'],
    ['29 active -2', (b) => { put(b, at.active, -2, 'i'); return b; }, 'active plan[0]'],
    ['30 active = plans', (b) => { put(b, at.active + 80, 3, 'i'); return b; }, 'active plan[20]'],
    ['31 qpos NaN', (b) => { put(b, at.qpos + 400, NaN, 'f'); return b; }, 'qpos[100]'],
    ['32 position Inf', (b) => { put(b, at.pos + 28, Infinity, 'f'); return b; }, 'joint positions[7]'],
    ['33 first frame = frames', (b) => { put(b, at.first + 8, 40); return b; }, 'first playback frame[2]'],
    ['34 first frames out of order', (b) => { put(b, at.first + 4, 3); return b; }, 'precedes'],
    ['35 plan mode 15', (b) => { put(b, at.pmode + 4, 15, 'i'); return b; }, 'plan mode[1]'],
    ['36 plan length 0', (b) => { put(b, at.plen, 0); return b; }, 'plan length[0]'],
    ['37 target NaN', (b) => { put(b, at.end - 4, NaN, 'f'); return b; }, 'target positions[179]'],
    ['38 plans 0', (b) => { put(b, 28, 0); return b; }, 'trailing'],
];

test('a valid .mbreplay reads back', () => {
    const b = sample();
    assert.equal(b.length, at.end);
    const s = read_mbreplay(b);
    assert.equal(s.frames, 40);
    assert.equal(s.plans, 3);
    assert.equal(s.active_plan[3], -1);
    assert.deepEqual(Array.from(s.plan_frames), [28, 32, 24]);
    assert.ok(Math.abs(s.positions[1] - 0.02) < 1e-7);
});

test('the corrupt .mbreplay corpus is refused, naming the field', () => {
    assert.ok(cases.length >= 30);
    for (const [name, mutate, field] of cases) {
        assert.throws(() => read_mbreplay(mutate(sample())), (e) => e.message.startsWith('mbreplay: ') && e.message.includes(field),
            name);
    }
});

function report() {
    const joints = (F, v) => Array.from({ length: F }, () => Array.from({ length: 34 }, () => [v, 1, 0]));
    const parents = [-1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 17, 26, 27, 28, 29, 30, 31, 32];
    const plan = {
        index: 0, style: 'walk', mode: 2, passed: true, expected_frames: 24, actual_frames: 24, duration_exact: true,
        metrics: { joint_m: { max: 0.003, rmse: 0.003 } },
        expected_joint_positions: joints(24, 0), native_joint_positions: joints(24, 0.003),
        expected_roots: Array.from({ length: 24 }, () => [0, 1, 0]), native_roots: Array.from({ length: 24 }, () => [0.003, 1, 0]),
    };
    return { format: 'motionbricks-open-loop-report-v1', fps: 30, joints: 34, parents, passed: true, plans: [plan] };
}

test('the open-loop report reader: per-frame errors and refusals', () => {
    const r = read_open_loop_report(report());
    const e = frame_errors(r.plans[0], 5);
    assert.ok(Math.abs(e.max - 0.003) < 1e-12 && Math.abs(e.rms - 0.003) < 1e-12);
    assert.equal(format_mm(e.max), '3.00 mm');
    assert.equal(format_mm(NaN), 'n/a');
    const broken = [
        ['format', (x) => { x.format = 'x'; }, 'not a motionbricks-open-loop-report-v1'],
        ['joints', (x) => { x.joints = 33; }, 'joints'],
        ['fps', (x) => { x.fps = 0; }, 'fps'],
        ['parents length', (x) => { x.parents.pop(); }, 'parents'],
        ['parent order', (x) => { x.parents[5] = 9; }, 'parents[5]'],
        ['no plans', (x) => { x.plans = []; }, 'no plans'],
        ['index', (x) => { x.plans[0].index = 4; }, 'index'],
        ['frames', (x) => { x.plans[0].actual_frames = 65; }, 'actual_frames'],
        ['missing metric', (x) => { delete x.plans[0].metrics; }, 'joint_m'],
        ['short array', (x) => { x.plans[0].native_joint_positions.pop(); }, 'native_joint_positions'],
        ['row width', (x) => { x.plans[0].expected_joint_positions[2][3] = [1, 2]; }, 'expected_joint_positions'],
        ['not a number', (x) => { x.plans[0].native_roots[0][0] = 'a'; }, 'native_roots'],
    ];
    for (const [name, mutate, what] of broken) {
        const x = report();
        mutate(x);
        assert.throws(() => read_open_loop_report(x), (err) => err.message.startsWith('report: ') && err.message.includes(what), name);
    }
    const withnull = report();
    withnull.plans[0].native_joint_positions[0][0][0] = null;
    assert.ok(Number.isNaN(frame_errors(read_open_loop_report(withnull).plans[0], 0).max));
});
