// message validation of the viewer: every server message is checked before it is rendered
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
    parse_server_message, read_meta, read_targets, validate_frame, validate_hello, flatten_numbers,
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
    assert.equal(validate_frame(good_frame({ collision_transforms: new Array(14).fill(0) })), null);
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
