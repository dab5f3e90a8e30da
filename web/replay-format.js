// .mbreplay v1 reader for the viewer (docs/FORMATS.md; the same checks as src/format/mbreplay.cpp):
// read_mbreplay(ArrayBuffer) → the session, or throws Error("mbreplay: offset N: field: what")

const MAGIC = 'MBRPLY1\0';
const MAX_BYTES = 512 * 1024 * 1024;

function fail(offset, field, what) {
    throw new Error(`mbreplay: offset ${offset}: ${field}: ${what}`);
}

export function read_mbreplay(buffer) {
    const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (bytes.length > MAX_BYTES) fail(0, 'file', `${bytes.length} bytes (at most 512 MiB)`);
    if (bytes.length < 8) fail(0, 'magic', `truncated: needs 8 bytes, ${bytes.length} left`);
    for (let i = 0; i < 8; ++i) {
        if (bytes[i] !== MAGIC.charCodeAt(i)) fail(0, 'magic', 'not a .mbreplay file');
    }
    if (bytes.length < 40) fail(8, 'header', `truncated: needs 40 bytes, the file has ${bytes.length}`);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const fields = [['version', 1, 1], ['fps', 1, 1000], ['frames', 1, 1000000], ['joints', 1, 64], ['qpos', 1, 256],
        ['plans', 0, 1000000], ['target frames', 4, 4], ['flags', 0, 0]];
    const h = fields.map(([name, lo, hi], i) => {
        const v = dv.getUint32(8 + 4 * i, true);
        if (v < lo || v > hi) fail(8 + 4 * i, name, `${v} must be ${lo === hi ? lo : `${lo}..${hi}`}`);
        return v;
    });
    const [, fps, F, J, Q, P] = h;
    if (P > F) fail(28, 'plans', `${P} exceed frames ${F}`);
    const words = J + 2 * F + F * Q + F * J * 3 + 3 * P + P * 4 * J * 3;
    const want = 40 + 4 * words;
    if (want > MAX_BYTES) fail(16, 'header', `dimensions need ${want} bytes (at most 512 MiB)`);
    if (bytes.length < want) fail(40, 'payload', `truncated: the header needs ${want} bytes, the file has ${bytes.length}`);
    if (bytes.length > want) fail(want, 'end', `${bytes.length - want} trailing bytes after the last field`);

    // copies (the file's offsets need not be 4-byte aligned in the caller's buffer)
    let off = 40;
    const take = (Type, n) => {
        const out = new Type(n);
        for (let i = 0; i < n; ++i, off += 4) {
            out[i] = Type === Float32Array ? dv.getFloat32(off, true) : Type === Int32Array ? dv.getInt32(off, true) : dv.getUint32(off, true);
        }
        return out;
    };
    const s = {
        fps, frames: F, joints: J, qpos_size: Q, plans: P,
        parents: take(Int32Array, J), modes: take(Int32Array, F), active_plan: take(Int32Array, F),
        qpos: take(Float32Array, F * Q), positions: take(Float32Array, F * J * 3),
        plan_first_frame: take(Uint32Array, P), plan_mode: take(Int32Array, P), plan_frames: take(Uint32Array, P),
        target_positions: take(Float32Array, P * 4 * J * 3),
    };
    const bad = (what) => { throw new Error(`mbreplay: ${what}`); };
    if (s.parents[0] !== -1) bad(`parents[0] = ${s.parents[0]} must be -1 (the root)`);
    for (let j = 1; j < J; ++j) {
        if (s.parents[j] < 0 || s.parents[j] >= j) bad(`parents[${j}] = ${s.parents[j]} must be within 0..${j - 1}`);
    }
    for (let i = 0; i < F; ++i) {
        if (s.modes[i] < 0 || s.modes[i] > 14) bad(`modes[${i}] = ${s.modes[i]} must be 0..14`);
        if (s.active_plan[i] < -1 || s.active_plan[i] >= P) bad(`active plan[${i}] = ${s.active_plan[i]} must be -1..${P - 1}`);
    }
    for (let p = 0; p < P; ++p) {
        if (s.plan_first_frame[p] >= F) bad(`first playback frame[${p}] = ${s.plan_first_frame[p]} must be below frames ${F}`);
        if (p > 0 && s.plan_first_frame[p] < s.plan_first_frame[p - 1]) {
            bad(`first playback frame[${p}] = ${s.plan_first_frame[p]} precedes the previous plan's ${s.plan_first_frame[p - 1]}`);
        }
        if (s.plan_mode[p] < 0 || s.plan_mode[p] > 14) bad(`plan mode[${p}] = ${s.plan_mode[p]} must be 0..14`);
        if (s.plan_frames[p] < 1 || s.plan_frames[p] > 1000000) bad(`plan length[${p}] = ${s.plan_frames[p]} must be 1..1000000`);
    }
    for (const [name, a] of [['qpos', s.qpos], ['joint positions', s.positions], ['target positions', s.target_positions]]) {
        for (let i = 0; i < a.length; ++i) {
            if (!Number.isFinite(a[i])) bad(`${name}[${i}] is not finite`);
        }
    }
    return s;
}
