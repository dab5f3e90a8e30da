// WebSocket animation protocol v1 as the viewer reads it: every server message is parsed and
// checked here before anything renders it, so a bad or hostile frame is dropped with a reason
// instead of turning the skeleton into NaNs. pure module: no DOM, runs under node's test runner.

export const PROTOCOL_VERSION = 1;
export const N_JOINTS = 34;
export const N_PHYSICAL = 30;                  // physical bodies in `physical` (x, y, z each)
export const MAX_COORD = 1e4;                  // metres; anything further is garbage
export const QUAT_NORM_TOLERANCE = 0.02;
export const MAX_COLLISION_TRANSFORMS = 1024;  // bodies, 7 numbers each
export const MAX_TARGET_FRAMES = 16;
export const TICK_RATE = 50;                  // server clock, ticks per second (time = tick / 50)
export const MAX_SERVER_MESSAGE = 1 << 20;     // bytes of one server message we agree to parse
export const MAX_SHAPES_MESSAGE = 16 << 20;    // ... except collision_shapes (hull meshes: 1.5 MB for the G1)
export const MAX_SHAPE_VALUES = 4 << 20;       // vertex coordinates and indices over all shapes
export const SHAPE_TYPES = new Set(['sphere', 'capsule', 'ellipsoid', 'cylinder', 'box', 'mesh']);
export const ACK_STATES = new Set(['received', 'scheduled', 'applied', 'superseded', 'duplicate', 'rejected']);

const is_int = (v) => Number.isSafeInteger(v);
const is_num = (v) => typeof v === 'number' && Number.isFinite(v);
const is_bool = (v) => typeof v === 'boolean';
const is_str = (v) => typeof v === 'string';

// flattens [[..],[..]] or a flat list of numbers; null when a leaf is not a finite number
// or the nesting is deeper than `depth`
export function flatten_numbers(v, depth = 3, out = []) {
    if (!Array.isArray(v)) return null;
    for (const e of v) {
        if (Array.isArray(e)) {
            if (depth <= 1 || flatten_numbers(e, depth - 1, out) === null) return null;
        } else if (is_num(e)) {
            out.push(e);
        } else {
            return null;
        }
    }
    return out;
}

// numbers of a list of fixed length with |x| <= limit; error text or null
function check_coords(v, n, what, limit = MAX_COORD) {
    if (!Array.isArray(v)) return `${what} is not an array`;
    if (n !== undefined && v.length !== n) return `${what} has ${v.length} values, expected ${n}`;
    for (let i = 0; i < v.length; ++i) {
        const x = v[i];
        if (!is_num(x)) return `${what}[${i}] is not a finite number`;
        if (Math.abs(x) > limit) return `${what}[${i}] = ${x} is beyond ${limit}`;
    }
    return null;
}

// quaternions (x, y, z, w) of near-unit norm
function check_quats(v, n, what) {
    const e = check_coords(v, n * 4, what, 2);
    if (e) return e;
    for (let j = 0; j < n; ++j) {
        const x = v[4 * j], y = v[4 * j + 1], z = v[4 * j + 2], w = v[4 * j + 3];
        const norm = Math.sqrt(x * x + y * y + z * z + w * w);
        if (Math.abs(norm - 1) > QUAT_NORM_TOLERANCE) return `${what} quaternion ${j} has norm ${norm.toFixed(4)}`;
    }
    return null;
}

function optional(m, key, pred, what) {
    return m[key] === undefined || pred(m[key]) ? null : `${what ?? key} has the wrong type`;
}

// a `frame` event; returns an error text or null
export function validate_frame(m, n_joints = N_JOINTS) {
    if (m === null || typeof m !== 'object') return 'frame is not an object';
    if (m.type !== 'frame') return 'not a frame';
    if (!is_int(m.epoch) || m.epoch < 0) return 'frame epoch is not a non-negative integer';
    if (!is_int(m.tick) || m.tick < 0) return 'frame tick is not a non-negative integer';
    if (!is_num(m.time) || m.time < 0) return 'frame time is not a non-negative number';
    let e = check_coords(m.root, 3, 'root') ?? check_quats(m.rotations, n_joints, 'rotations');
    if (e) return e;
    if (m.physical !== undefined && m.physical !== null) {
        e = check_coords(m.physical, N_PHYSICAL * 3, 'physical');
        if (e) return e;
    }
    if (m.collision_transforms !== undefined && m.collision_transforms !== null) {
        const c = m.collision_transforms;
        if (!Array.isArray(c) || c.length % 7 !== 0) return 'collision_transforms is not a multiple of 7 numbers';
        if (c.length > MAX_COLLISION_TRANSFORMS * 7) return 'collision_transforms has too many bodies';
        e = check_coords(c, undefined, 'collision_transforms');
        if (e) return e;
        for (let i = 0; i < c.length; i += 7) {
            const n = Math.hypot(c[i + 3], c[i + 4], c[i + 5], c[i + 6]);
            if (Math.abs(n - 1) > QUAT_NORM_TOLERANCE) return `collision_transforms quaternion ${i / 7} has norm ${n.toFixed(4)}`;
        }
    }
    if (m.parents !== undefined && m.parents !== null) {
        // the physical bodies' tree: -1 for the pelvis, else an earlier body
        const p = m.parents;
        if (!Array.isArray(p) || p.length !== N_PHYSICAL) return `parents is not a list of ${N_PHYSICAL}`;
        for (let i = 0; i < p.length; ++i) {
            if (!is_int(p[i]) || (i === 0 ? p[i] !== -1 : p[i] < 0 || p[i] >= i)) return `parents[${i}] is invalid`;
        }
    }
    // contacts: a count (this server), or a list (other servers)
    if (m.contacts !== undefined && !(Array.isArray(m.contacts) ? m.contacts.length <= 4096 : is_int(m.contacts) && m.contacts >= 0)) {
        return 'contacts is neither a count nor a list';
    }
    if (m.physics_time !== undefined && !(is_num(m.physics_time) && m.physics_time >= 0)) return 'physics_time is not a non-negative number';
    for (const k of ['paused', 'holding', 'planning', 'fallen', 'physics']) {
        e = optional(m, k, is_bool);
        if (e) return e;
    }
    for (const k of ['style', 'kind', 'error']) {
        e = optional(m, k, is_str);
        if (e) return e;
    }
    for (const k of ['revision', 'slow_ticks']) {
        e = optional(m, k, (v) => is_int(v) && v >= 0);
        if (e) return e;
    }
    if (m.progress !== undefined && !(is_num(m.progress) && m.progress >= 0 && m.progress <= 1)) return 'progress is outside 0..1';
    return null;
}

// a `targets` event, normalised: {revision, style, count, joints: Float32Array [count*n*3] | null,
// roots: Float32Array [count*3] | null, rotations: Float32Array [count*n*4] | null, frames: []}
// or {error}
export function read_targets(m, n_joints = N_JOINTS) {
    if (m === null || typeof m !== 'object' || m.type !== 'targets') return { error: 'not a targets event' };
    if (!is_int(m.revision) || m.revision < 0) return { error: 'targets revision is not a non-negative integer' };
    if (m.style !== undefined && m.style !== null && !is_str(m.style)) return { error: 'targets style is not a string' };
    const out = { revision: m.revision, style: m.style ?? null, count: 0, frames: [], joints: null, roots: null, rotations: null };
    if (m.targets === null || m.targets === undefined) return out;
    const t = m.targets;
    if (typeof t !== 'object' || Array.isArray(t)) return { error: 'targets is not an object' };
    let count = null;
    // frames: the number of placed poses, or a list of their frame indices
    if (is_int(t.frames)) {
        if (t.frames < 0 || t.frames > MAX_TARGET_FRAMES) return { error: 'targets frames is out of range' };
        count = t.frames;
    } else if (t.frames !== undefined) {
        if (!Array.isArray(t.frames) || t.frames.length > MAX_TARGET_FRAMES || !t.frames.every((f) => is_num(f))) {
            return { error: 'targets frames is neither a count nor a short list of numbers' };
        }
        out.frames = t.frames.slice();
        count = t.frames.length;
    }
    const read = (key, per) => {
        if (t[key] === undefined || t[key] === null) return null;
        const flat = flatten_numbers(t[key]);
        if (flat === null) return { error: `targets ${key} is not a list of finite numbers` };
        if (flat.length % per !== 0) return { error: `targets ${key} has ${flat.length} values, not a multiple of ${per}` };
        const k = flat.length / per;
        if (k > MAX_TARGET_FRAMES) return { error: `targets ${key} has too many poses` };
        if (count === null) count = k;
        if (k !== count) return { error: `targets ${key} has ${k} poses, expected ${count}` };
        const limit = key === 'rotations' ? 2 : MAX_COORD;
        const e = check_coords(flat, undefined, `targets ${key}`, limit);
        if (e) return { error: e };
        return { value: Float32Array.from(flat) };
    };
    for (const [key, per] of [['joints', n_joints * 3], ['roots', 3], ['rotations', n_joints * 4]]) {
        const r = read(key, per);
        if (r === null) continue;
        if (r.error) return r;
        out[key] = r.value;
    }
    if (out.rotations) {
        const e = check_quats(Array.from(out.rotations), out.rotations.length / 4, 'targets rotations');
        if (e) return { error: e };
    }
    if (!out.joints && !(out.roots && out.rotations)) return { error: 'targets have neither joints nor roots with rotations' };
    out.count = count ?? 0;
    return out;
}

// a `hello` event; error text or null. an unknown major version is refused, never guessed at
export function validate_hello(m) {
    if (m.type !== 'hello') return 'not a hello';
    if (!is_int(m.version)) return 'hello has no integer version';
    if (m.version !== PROTOCOL_VERSION) return `unsupported protocol version ${m.version} (this viewer speaks ${PROTOCOL_VERSION})`;
    if (!is_bool(m.owner)) return 'hello owner is not a boolean';
    if (m.owner && !(is_str(m.token) && /^[0-9a-f]{16,128}$/.test(m.token))) return 'owner hello has no hex token';
    if (m.last_seq !== undefined && !(is_int(m.last_seq) && m.last_seq >= 0)) return 'hello last_seq is not a non-negative integer';
    if (m.epoch !== undefined && !(is_int(m.epoch) && m.epoch >= 0)) return 'hello epoch is not a non-negative integer';
    if (m.buffer_seconds !== undefined && !(is_num(m.buffer_seconds) && m.buffer_seconds > 0 && m.buffer_seconds <= 5)) {
        return 'hello buffer_seconds is out of range';
    }
    if (m.physics_available !== undefined && !is_bool(m.physics_available)) return 'hello physics_available is not a boolean';
    if (m.physics_control !== undefined && !(is_str(m.physics_control) && m.physics_control.length <= 64)) {
        return 'hello physics_control is not a short string';
    }
    return null;
}

// a `collision_shapes` event, normalised: {id, shapes: [{type, name, size: [3], vertices: Float32Array |
// null, indices: Uint32Array | null}]} or {error}. sizes and vertices are in the geom's frame (m);
// every index must name a vertex, every mesh be whole triangles
export function read_collision_shapes(m) {
    if (m === null || typeof m !== 'object' || m.type !== 'collision_shapes') return { error: 'not a collision_shapes event' };
    if (!is_str(m.id) || !/^[0-9a-f]{64}$/.test(m.id)) return { error: 'collision_shapes id is not a SHA-256 hex digest' };
    if (!Array.isArray(m.shapes) || m.shapes.length > MAX_COLLISION_TRANSFORMS) return { error: 'collision_shapes has no short list of shapes' };
    const shapes = [];
    let budget = MAX_SHAPE_VALUES;
    for (let i = 0; i < m.shapes.length; ++i) {
        const s = m.shapes[i];
        const what = `collision shape ${i}`;
        if (s === null || typeof s !== 'object' || Array.isArray(s)) return { error: `${what} is not an object` };
        if (!SHAPE_TYPES.has(s.type)) return { error: `${what} has unknown type ${JSON.stringify(s.type)}` };
        if (s.name !== undefined && !(is_str(s.name) && s.name.length <= 256)) return { error: `${what} name is not a short string` };
        let e = check_coords(s.size, 3, `${what} size`, 100);
        if (e) return { error: e };
        if (s.size.some((v) => v < 0)) return { error: `${what} size is negative` };
        const out = { type: s.type, name: s.name ?? '', size: s.size.slice(), vertices: null, indices: null };
        if (s.type === 'mesh') {
            if (!Array.isArray(s.vertices) || !Array.isArray(s.indices)) return { error: `${what} is a mesh without vertices and indices` };
            budget -= s.vertices.length + s.indices.length;
            if (budget < 0) return { error: 'collision_shapes has too many vertices' };
            if (s.vertices.length % 3 !== 0 || s.indices.length % 3 !== 0) return { error: `${what} is not whole vertices and triangles` };
            e = check_coords(s.vertices, undefined, `${what} vertices`, 10);
            if (e) return { error: e };
            const n = s.vertices.length / 3;
            for (let k = 0; k < s.indices.length; ++k) {
                const v = s.indices[k];
                if (!is_int(v) || v < 0 || v >= n) return { error: `${what} index ${k} names no vertex` };
            }
            out.vertices = Float32Array.from(s.vertices);
            out.indices = Uint32Array.from(s.indices);
        }
        shapes.push(out);
    }
    return { id: m.id, shapes };
}

export function validate_ack(m) {
    if (!is_int(m.seq) || m.seq < 0) return 'ack seq is not a non-negative integer';
    if (!ACK_STATES.has(m.state)) return `unknown ack state ${JSON.stringify(m.state)}`;
    if (m.planner_ms !== undefined && !(is_num(m.planner_ms) && m.planner_ms >= 0)) return 'ack planner_ms is not a number';
    for (const k of ['at', 'time']) {
        if (m[k] !== undefined && !is_num(m[k])) return `ack ${k} is not a number`;
    }
    if (m.error !== undefined && m.error !== null && !is_str(m.error)) return 'ack error is not a string';
    return null;
}

// parses one text message and checks it by type: {msg} or {error}. unknown types are errors too
// (the caller ignores them), so nothing unchecked reaches the renderer
export function parse_server_message(text, n_joints = N_JOINTS) {
    if (typeof text !== 'string') return { error: 'binary message' };
    const limit = text.startsWith('{"type":"collision_shapes"') ? MAX_SHAPES_MESSAGE : MAX_SERVER_MESSAGE;
    if (text.length > limit) return { error: 'message too large' };
    let m;
    try {
        m = JSON.parse(text);
    } catch {
        return { error: 'message is not JSON' };
    }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return { error: 'message is not an object' };
    let e = null;
    switch (m.type) {
    case 'frame': e = validate_frame(m, n_joints); break;
    case 'targets': {
        const t = read_targets(m, n_joints);
        if (t.error) return { error: t.error };
        return { msg: m, targets: t };
    }
    case 'hello': e = validate_hello(m); break;
    case 'ack': e = validate_ack(m); break;
    case 'error': e = is_str(m.error) ? null : 'error event without text'; break;
    case 'pong': break;
    case 'collision_shapes': {
        const c = read_collision_shapes(m);
        if (c.error) return { error: c.error };
        return { msg: m, shapes: c };
    }
    default: e = `unknown message type ${JSON.stringify(m.type)}`;
    }
    return e ? { error: e } : { msg: m };
}

// GET /api/meta: {fps, joints[{name, parent, position}], styles[{name, speed}], demo}; throws
export function read_meta(meta) {
    if (meta === null || typeof meta !== 'object') throw new Error('meta is not an object');
    if (!is_num(meta.fps) || meta.fps <= 0 || meta.fps > 1000) throw new Error('meta fps is out of range');
    if (meta.protocol_version !== undefined && meta.protocol_version !== PROTOCOL_VERSION) {
        throw new Error(`the server speaks animation protocol ${meta.protocol_version}; this viewer speaks ${PROTOCOL_VERSION}`);
    }
    const joints = meta.joints;
    if (!Array.isArray(joints) || joints.length < 1 || joints.length > 256) throw new Error('meta joints is not a list');
    const names = [], parents = [], positions = new Float32Array(joints.length * 3);
    joints.forEach((j, i) => {
        if (!j || !is_str(j.name)) throw new Error(`meta joint ${i} has no name`);
        if (!is_int(j.parent) || (i === 0 ? j.parent !== -1 : j.parent < 0 || j.parent >= i)) {
            throw new Error(`meta joint ${i} has invalid parent ${j.parent}`);
        }
        const e = check_coords(j.position, 3, `meta joint ${i} position`, 100);
        if (e) throw new Error(e);
        names.push(j.name);
        parents.push(j.parent);
        positions.set(j.position, 3 * i);
    });
    const styles = [];
    for (const s of meta.styles ?? []) {
        if (!s || !is_str(s.name) || (s.speed !== undefined && !is_num(s.speed))) throw new Error('meta style is malformed');
        styles.push({ name: s.name, speed: s.speed ?? 0 });
    }
    const demo_reason = is_str(meta.demo_reason) ? meta.demo_reason : null;
    return { fps: meta.fps, names, parents, positions, styles, demo: meta.demo === true, demo_reason };
}
