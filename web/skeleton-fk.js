// quaternion helpers (x, y, z, w, like the protocol) and forward kinematics of local joint
// rotations over the rest offsets, to place the bones. pure module, float64 math on plain
// arrays; the runtime does the same chain in float32 (src/motion/skeleton-fk.cpp).

// out = a · b
export function quat_mul(a, ai, b, bi, out, oi) {
    const ax = a[ai], ay = a[ai + 1], az = a[ai + 2], aw = a[ai + 3];
    const bx = b[bi], by = b[bi + 1], bz = b[bi + 2], bw = b[bi + 3];
    out[oi]     = aw * bx + ax * bw + ay * bz - az * by;
    out[oi + 1] = aw * by - ax * bz + ay * bw + az * bx;
    out[oi + 2] = aw * bz + ax * by - ay * bx + az * bw;
    out[oi + 3] = aw * bw - ax * bx - ay * by - az * bz;
}

// out = q v q⁻¹ for a unit q
export function quat_rotate(q, qi, v, vi, out, oi) {
    const x = q[qi], y = q[qi + 1], z = q[qi + 2], w = q[qi + 3];
    const vx = v[vi], vy = v[vi + 1], vz = v[vi + 2];
    // t = 2 (q.xyz × v)
    const tx = 2 * (y * vz - z * vy), ty = 2 * (z * vx - x * vz), tz = 2 * (x * vy - y * vx);
    out[oi]     = vx + w * tx + (y * tz - z * ty);
    out[oi + 1] = vy + w * ty + (z * tx - x * tz);
    out[oi + 2] = vz + w * tz + (x * ty - y * tx);
}

// spherical interpolation along the shorter arc; normalised result
export function quat_slerp(a, ai, b, bi, t, out, oi) {
    let bx = b[bi], by = b[bi + 1], bz = b[bi + 2], bw = b[bi + 3];
    const ax = a[ai], ay = a[ai + 1], az = a[ai + 2], aw = a[ai + 3];
    let d = ax * bx + ay * by + az * bz + aw * bw;
    if (d < 0) {   // q and −q are the same rotation: take the short way
        d = -d; bx = -bx; by = -by; bz = -bz; bw = -bw;
    }
    let ka, kb;
    if (d > 0.9995) {   // nearly parallel: lerp is exact enough and avoids 0/0
        ka = 1 - t; kb = t;
    } else {
        const th = Math.acos(Math.min(1, d)), s = Math.sin(th);
        ka = Math.sin((1 - t) * th) / s;
        kb = Math.sin(t * th) / s;
    }
    const x = ka * ax + kb * bx, y = ka * ay + kb * by, z = ka * az + kb * bz, w = ka * aw + kb * bw;
    const n = Math.hypot(x, y, z, w) || 1;
    out[oi] = x / n; out[oi + 1] = y / n; out[oi + 2] = z / n; out[oi + 3] = w / n;
}

// rest offsets from absolute rest positions (relative to the pelvis): offset[j] = rest[j] − rest[parent];
// the root keeps its own rest position
export function rest_offsets(rest, parents) {
    const n = parents.length;
    const off = new Float64Array(n * 3);
    for (let j = 0; j < n; ++j) {
        const p = parents[j];
        for (let i = 0; i < 3; ++i) off[3 * j + i] = p < 0 ? rest[3 * j + i] : rest[3 * j + i] - rest[3 * p + i];
    }
    return off;
}

// world joint positions [n*3] of one pose: global[j] = global[parent] · local[j],
// pos[j] = pos[parent] + global[parent] · offset[j], the root at root + offset[0].
// parents must come before children (the meta reader checks it)
export function forward_kinematics(root, rotations, parents, offsets, out = null, global = null) {
    const n = parents.length;
    out ??= new Float64Array(n * 3);
    global ??= new Float64Array(n * 4);
    for (let j = 0; j < n; ++j) {
        const p = parents[j];
        if (p < 0) {
            for (let i = 0; i < 4; ++i) global[4 * j + i] = rotations[4 * j + i];
            for (let i = 0; i < 3; ++i) out[3 * j + i] = root[i] + offsets[3 * j + i];
        } else {
            quat_mul(global, 4 * p, rotations, 4 * j, global, 4 * j);
            quat_rotate(global, 4 * p, offsets, 3 * j, out, 3 * j);
            for (let i = 0; i < 3; ++i) out[3 * j + i] += out[3 * p + i];
        }
    }
    return out;
}
