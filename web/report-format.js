// motionbricks-open-loop-report-v1 reader for the viewer's comparison mode (docs/FORMATS.md):
// read_open_loop_report(json) checks what the viewer uses and returns flat arrays per plan, or
// throws Error("report: ..."); frame_errors() gives the per-frame joint error the screen shows

const JOINTS = 34;

function bad(what) {
    throw new Error(`report: ${what}`);
}

// a nested array [n][inner][cols] (inner 0: [n][cols]) of numbers or null (null → NaN), flattened
function flat(v, n, inner, cols, what) {
    if (!Array.isArray(v) || (n !== null && v.length !== n)) bad(`${what} must have ${n} rows`);
    const rows = inner ? v.flatMap((e, i) => {
        if (!Array.isArray(e) || e.length !== inner) bad(`${what}[${i}] must have ${inner} entries`);
        return e;
    }) : v;
    const out = new Float64Array(rows.length * cols);
    rows.forEach((r, i) => {
        if (!Array.isArray(r) || r.length !== cols) bad(`${what}: a row of ${cols} numbers expected`);
        for (let c = 0; c < cols; ++c) {
            const x = r[c];
            if (x !== null && typeof x !== 'number') bad(`${what}: ${JSON.stringify(x)} is not a number`);
            out[i * cols + c] = x === null ? NaN : x;
        }
    });
    return out;
}

export function read_open_loop_report(r) {
    if (!r || typeof r !== 'object' || r.format !== 'motionbricks-open-loop-report-v1') bad('not a motionbricks-open-loop-report-v1');
    if (r.joints !== JOINTS) bad(`joints ${r.joints} must be 34`);
    if (!Number.isInteger(r.fps) || r.fps < 1 || r.fps > 1000) bad(`fps ${r.fps} must be 1..1000`);
    const parents = r.parents;
    if (!Array.isArray(parents) || parents.length !== JOINTS || parents[0] !== -1) bad('parents must be 34 entries, the root -1');
    parents.forEach((p, j) => {
        if (j > 0 && !(Number.isInteger(p) && p >= 0 && p < j)) bad(`parents[${j}] = ${p} must be within 0..${j - 1}`);
    });
    if (!Array.isArray(r.plans) || r.plans.length === 0) bad('no plans');
    const plans = r.plans.map((p, i) => {
        const w = `plans[${i}]`;
        if (p.index !== i) bad(`${w}.index is ${p.index}`);
        for (const k of ['expected_frames', 'actual_frames']) {
            if (!Number.isInteger(p[k]) || p[k] < 1 || p[k] > 64) bad(`${w}.${k} must be 1..64`);
        }
        const m = p.metrics?.joint_m;
        if (!m || !(m.max === null || typeof m.max === 'number')) bad(`${w}.metrics.joint_m.max missing`);
        return {
            index: i, style: String(p.style ?? ''), mode: p.mode, passed: !!p.passed,
            expected_frames: p.expected_frames, actual_frames: p.actual_frames, duration_exact: !!p.duration_exact,
            joint_max: m.max === null ? NaN : m.max,
            expected_joints: flat(p.expected_joint_positions, p.expected_frames, JOINTS, 3, `${w}.expected_joint_positions`),
            native_joints: flat(p.native_joint_positions, p.actual_frames, JOINTS, 3, `${w}.native_joint_positions`),
            expected_roots: flat(p.expected_roots, p.expected_frames, 0, 3, `${w}.expected_roots`),
            native_roots: flat(p.native_roots, p.actual_frames, 0, 3, `${w}.native_roots`),
        };
    });
    return { fps: r.fps, parents, passed: !!r.passed, tolerances: r.tolerances ?? {}, plans };
}

// per-joint distances of frame f of a plan: { max, rms } in metres (NaN when a value is null)
export function frame_errors(plan, f) {
    let max = 0, sum = 0;
    for (let j = 0; j < JOINTS; ++j) {
        const k = (f * JOINTS + j) * 3;
        const d = Math.hypot(plan.native_joints[k] - plan.expected_joints[k], plan.native_joints[k + 1] - plan.expected_joints[k + 1],
            plan.native_joints[k + 2] - plan.expected_joints[k + 2]);
        max = Number.isNaN(d) || Number.isNaN(max) ? NaN : Math.max(max, d);
        sum += d * d;
    }
    return { max, rms: Math.sqrt(sum / JOINTS) };
}

// a length for the screen: "0.0412 mm" (3 significant digits), "n/a" for NaN
export function format_mm(metres) {
    return Number.isFinite(metres) ? `${(metres * 1000).toPrecision(3)} mm` : 'n/a';
}
