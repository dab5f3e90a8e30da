// message validation of the viewer: every server message is checked before it is rendered
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
    parse_server_message, read_collision_shapes, read_meta, read_targets, validate_frame, validate_hello, flatten_numbers,
} from '../../web/protocol.js';

const identity = () => Array.from({ length: 34 }, () => [0, 0, 0, 1]).flat();
export const good_frame = (over = {}) => ({
    type: 'frame', epoch: 0, tick: 10, time: 0.2, root: [0, 0.79, 0], rotations: identity(), contacts: [], physics: false,
    physics_time: 0, fallen: false, paused: false, holding: false, planning: false, kind: 'motion', progress: 0,
    revision: 1, style: 'walk', slow_ticks: 0, ...over,
});

test('a well-formed frame passes', () => {
    assert.equal(validate_frame(good_frame()), null);
    assert.equal(validate_frame(good_frame({ physical: new Array(90).fill(0.1) })), null);
    assert.equal(validate_frame(good_frame({ collision_transforms: [0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0.6, 0, 0.8] })), null);
});

// a physics frame as `motionbricks serve` sends it
const parents = [-1, ...Array.from({ length: 29 }, (_, i) => Math.floor(i / 2))];
const physics_frame = (over = {}) => good_frame({
    physics: true, physical: new Array(90).fill(0.2), parents, collision_transforms: [0, 1, 0, 0, 0, 0, 1], contacts: 4,
    physics_time: 1.5, fallen: false, ...over,
});

test('physics frames: bodies, parents, transforms, contacts, physics time', () => {
    assert.equal(validate_frame(physics_frame()), null);
    assert.equal(validate_frame(physics_frame({ fallen: true, error: 'physics: compute failed' })), null);
    assert.equal(validate_frame(physics_frame({ contacts: [] })), null);   // a list from other servers
    const bad = {
        'physical NaN': physics_frame({ physical: [NaN, ...new Array(89).fill(0)] }),
        'physical far': physics_frame({ physical: [2e4, ...new Array(89).fill(0)] }),
        'parents short': physics_frame({ parents: parents.slice(1) }),
        'parents root': physics_frame({ parents: [0, ...parents.slice(1)] }),
        'parents forward': physics_frame({ parents: [-1, 5, ...parents.slice(2)] }),
        'parents fractional': physics_frame({ parents: [-1, 0.5, ...parents.slice(2)] }),
        'transform quaternion': physics_frame({ collision_transforms: [0, 1, 0, 0, 0, 0, 2] }),
        'contacts negative': physics_frame({ contacts: -1 }),
        'contacts string': physics_frame({ contacts: '3' }),
        'physics_time negative': physics_frame({ physics_time: -1 }),
        'fallen number': physics_frame({ fallen: 1 }),
        'physics string': physics_frame({ physics: 'yes' }),
    };
    for (const [name, f] of Object.entries(bad)) assert.notEqual(validate_frame(f), null, name);
});

const shapes_event = (over = {}) => ({
    type: 'collision_shapes', id: 'a'.repeat(64),
    shapes: [
        { type: 'box', name: 'left_ankle_roll_link:0', size: [0.085, 0.03, 0.005] },
        { type: 'mesh', name: 'pelvis:1', size: [0.1, 0.1, 0.1], vertices: [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1], indices: [0, 1, 2, 0, 2, 3] },
    ],
    ...over,
});

test('collision shapes: typed, sized, meshes of whole triangles over their own vertices', () => {
    const r = read_collision_shapes(shapes_event());
    assert.equal(r.error, undefined);
    assert.equal(r.shapes.length, 2);
    assert.ok(r.shapes[1].vertices instanceof Float32Array && r.shapes[1].indices instanceof Uint32Array);
    assert.equal(r.shapes[0].vertices, null);
    const parsed = parse_server_message(JSON.stringify(shapes_event()));
    assert.equal(parsed.shapes.shapes[1].indices.length, 6);
    const mesh = shapes_event().shapes[1];
    const bad = {
        'id short': shapes_event({ id: 'abc' }),
        'id upper': shapes_event({ id: 'A'.repeat(64) }),
        'shapes missing': shapes_event({ shapes: null }),
        'type unknown': shapes_event({ shapes: [{ type: 'plane', size: [1, 1, 1] }] }),
        'size short': shapes_event({ shapes: [{ type: 'box', size: [1, 1] }] }),
        'size negative': shapes_event({ shapes: [{ type: 'box', size: [1, -1, 1] }] }),
        'size NaN': shapes_event({ shapes: [{ type: 'sphere', size: [NaN, 0, 0] }] }),
        'mesh without indices': shapes_event({ shapes: [{ ...mesh, indices: undefined }] }),
        'index beyond': shapes_event({ shapes: [{ ...mesh, indices: [0, 1, 4] }] }),
        'index negative': shapes_event({ shapes: [{ ...mesh, indices: [0, 1, -1] }] }),
        'partial triangle': shapes_event({ shapes: [{ ...mesh, indices: [0, 1] }] }),
        'partial vertex': shapes_event({ shapes: [{ ...mesh, vertices: [0, 0] }] }),
        'vertex far': shapes_event({ shapes: [{ ...mesh, vertices: [0, 0, 0, 100, 0, 0, 0, 1, 0, 0, 0, 1] }] }),
        'name long': shapes_event({ shapes: [{ type: 'box', name: 'x'.repeat(300), size: [1, 1, 1] }] }),
    };
    for (const [name, m] of Object.entries(bad)) {
        assert.ok(read_collision_shapes(m).error, name);
        assert.ok(parse_server_message(JSON.stringify(m)).error, name);
    }
    // the shapes may exceed the 1 MiB of other messages, up to 16 MiB
    const big = shapes_event({ shapes: [{ ...mesh, name: 'x', vertices: new Array(3 * 120000).fill(0.123), indices: [0, 1, 2] }] });
    assert.ok(JSON.stringify(big).length > (1 << 20));
    assert.equal(parse_server_message(JSON.stringify(big)).error, undefined);
});

test('frames with wrong shapes, bad numbers or bad quaternions are rejected', () => {
    const cases = {
        'root length': good_frame({ root: [0, 0] }),
        'root NaN': good_frame({ root: [0, NaN, 0] }),
        'root string': good_frame({ root: [0, '1', 0] }),
        'root beyond 10 km': good_frame({ root: [1e4 + 1, 0, 0] }),
        'rotations length': good_frame({ rotations: identity().slice(4) }),
        'rotations not unit': good_frame({ rotations: [0, 0, 0, 1.03, ...identity().slice(4)] }),
        'rotations zero': good_frame({ rotations: [0, 0, 0, 0, ...identity().slice(4)] }),
        'physical length': good_frame({ physical: new Array(89).fill(0) }),
        'collision not multiple of 7': good_frame({ collision_transforms: new Array(8).fill(0) }),
        'collision too many': good_frame({ collision_transforms: new Array(1025 * 7).fill(0) }),
        'negative tick': good_frame({ tick: -1 }),
        'fractional tick': good_frame({ tick: 1.5 }),
        'epoch string': good_frame({ epoch: '0' }),
        'paused not bool': good_frame({ paused: 1 }),
        'progress above 1': good_frame({ progress: 1.5 }),
        'style number': good_frame({ style: 3 }),
    };
    for (const [name, f] of Object.entries(cases)) assert.notEqual(validate_frame(f), null, name);
    // quaternion norm tolerance is 0.02
    assert.equal(validate_frame(good_frame({ rotations: [0, 0, 0, 1.019, ...identity().slice(4)] })), null);
});

test('parse_server_message checks JSON, object shape and type', () => {
    assert.match(parse_server_message('{').error, /not JSON/);
    assert.match(parse_server_message('[1]').error, /not an object/);
    assert.match(parse_server_message('null').error, /not an object/);
    assert.match(parse_server_message('{"type":"nope"}').error, /unknown message type/);
    assert.match(parse_server_message(new ArrayBuffer(4)).error, /binary/);
    assert.match(parse_server_message(' '.repeat((1 << 20) + 1)).error, /too large/);
    assert.equal(parse_server_message(JSON.stringify(good_frame())).msg.tick, 10);
    assert.ok(parse_server_message(JSON.stringify(good_frame({ root: [1, 2] }))).error);
    assert.deepEqual(parse_server_message('{"type":"pong"}').msg, { type: 'pong' });
    assert.ok(parse_server_message('{"type":"error"}').error);
    assert.equal(parse_server_message('{"type":"error","error":"command queue full"}').msg.error, 'command queue full');
});

test('hello: physics_available and physics_control are typed', () => {
    const hello = { type: 'hello', version: 1, owner: false, last_seq: 0, epoch: 0, buffer_seconds: 0.15 };
    assert.equal(validate_hello({ ...hello, physics_available: true, physics_control: 'PD tracking' }), null);
    assert.ok(validate_hello({ ...hello, physics_available: 'yes' }));
    assert.ok(validate_hello({ ...hello, physics_available: true, physics_control: 7 }));
});

test('hello: version 1 only, owner needs a hex token', () => {
    const hello = { type: 'hello', version: 1, owner: true, token: 'ab'.repeat(16), last_seq: 0, epoch: 0, physics_available: false, buffer_seconds: 0.15 };
    assert.equal(validate_hello(hello), null);
    assert.match(validate_hello({ ...hello, version: 2 }), /unsupported protocol version 2/);
    assert.ok(validate_hello({ ...hello, version: '1' }));
    assert.ok(validate_hello({ ...hello, token: undefined }));
    assert.ok(validate_hello({ ...hello, token: 'zz'.repeat(16) }));
    assert.equal(validate_hello({ ...hello, owner: false, token: undefined }), null);
    assert.ok(validate_hello({ ...hello, last_seq: -1 }));
    assert.ok(validate_hello({ ...hello, buffer_seconds: 0 }));
});

test('acks: known states only', () => {
    for (const state of ['received', 'scheduled', 'applied', 'superseded', 'duplicate', 'rejected']) {
        assert.ok(parse_server_message(JSON.stringify({ type: 'ack', seq: 3, state, epoch: 0 })).msg, state);
    }
    assert.ok(parse_server_message('{"type":"ack","seq":3,"state":"maybe"}').error);
    assert.ok(parse_server_message('{"type":"ack","seq":-3,"state":"applied"}').error);
    assert.ok(parse_server_message('{"type":"ack","seq":3,"state":"scheduled","planner_ms":"x"}').error);
});

test('targets: the server form (count, flat joints/roots/rotations), lists of poses, null, and bad shapes', () => {
    const joints = new Array(4 * 34 * 3).fill(0.5);
    const roots = new Array(12).fill(0.1);
    const rotations = identity().concat(identity(), identity(), identity());
    const t = read_targets({ type: 'targets', revision: 2, targets: { frames: 4, joints, roots, rotations }, style: 'walk' });
    assert.equal(t.error, undefined);
    assert.equal(t.count, 4);
    assert.equal(t.joints.length, 4 * 34 * 3);
    assert.equal(t.style, 'walk');
    const nested = read_targets({ type: 'targets', revision: 2, targets: { frames: [16, 32, 48, 64], roots: [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3]], rotations: [identity(), identity(), identity(), identity()] } });
    assert.equal(nested.count, 4);
    assert.deepEqual(Array.from(nested.roots.slice(3, 6)), [0, 0, 1]);
    const none = read_targets({ type: 'targets', revision: 0, targets: null, style: 'walk' });
    assert.equal(none.count, 0);
    const bad = [
        { revision: -1, targets: null },
        { revision: 1, targets: { frames: 4, joints: joints.slice(1) } },
        { revision: 1, targets: { frames: 3, joints } },
        { revision: 1, targets: { frames: 4, joints: [...joints.slice(1), NaN] } },
        { revision: 1, targets: { frames: 4, joints: [...joints.slice(1), 2e4] } },
        { revision: 1, targets: { frames: 4, roots } },
        { revision: 1, targets: { frames: 4, roots, rotations: rotations.map((v, i) => (i === 3 ? 2 : v)) } },
        { revision: 1, targets: { frames: 400, joints } },
        { revision: 1, targets: [] },
    ];
    for (const b of bad) assert.ok(read_targets({ type: 'targets', ...b }).error, JSON.stringify(b).slice(0, 80));
});

test('flatten_numbers bounds nesting and rejects non-numbers', () => {
    assert.deepEqual(flatten_numbers([[1, 2], [3]]), [1, 2, 3]);
    assert.equal(flatten_numbers([[[[1]]]]), null);
    assert.equal(flatten_numbers([1, 'x']), null);
    assert.equal(flatten_numbers([1, null]), null);
    assert.equal(flatten_numbers('12'), null);
});

test('meta: joints with valid parents and rest positions, styles, demo flag', () => {
    const joints = [{ name: 'pelvis', parent: -1, position: [0, 0, 0] }, { name: 'hip', parent: 0, position: [0.1, -0.1, 0] }];
    const m = read_meta({ fps: 30, joints, styles: [{ name: 'walk', speed: 1.2 }], demo: true, demo_reason: 'random' });
    assert.deepEqual(m.parents, [-1, 0]);
    assert.equal(m.demo, true);
    assert.equal(m.demo_reason, 'random');
    assert.deepEqual(m.styles, [{ name: 'walk', speed: 1.2 }]);
    assert.equal(read_meta({ fps: 30, joints }).demo, false);
    assert.throws(() => read_meta({ fps: 30, joints: [{ name: 'a', parent: 0, position: [0, 0, 0] }] }), /parent/);
    assert.throws(() => read_meta({ fps: 30, joints: [joints[0], { name: 'b', parent: 1, position: [0, 0, 0] }] }), /parent/);
    assert.throws(() => read_meta({ fps: 30, joints: [joints[0], { name: 'b', parent: 0, position: [0, 0] }] }), /position/);
    assert.throws(() => read_meta({ fps: 0, joints }), /fps/);
    assert.throws(() => read_meta({ fps: 30, joints, styles: [{ speed: 1 }] }), /style/);
    assert.throws(() => read_meta(null), /object/);
    assert.equal(read_meta({ fps: 30, joints, protocol_version: 1 }).fps, 30);
    assert.throws(() => read_meta({ fps: 30, joints, protocol_version: 2 }), /protocol 2/);
});
