"""Writers and validating readers of the binary fixture formats .mbparity v1 and .mbreplay v1
(little-endian; layouts in docs/FORMATS.md and src/format/mbparity.cpp, mbreplay.cpp). numpy only.
Every check of the C++ readers is made here too; a violation raises FixtureError."""

import struct

import numpy as np

PARITY_MAGIC = b"MBPARI1\0"
REPLAY_MAGIC = b"MBRPLY1\0"
JOINTS = 34
WINDOW = 4
MAX_BYTES = 512 << 20


class FixtureError(ValueError):
    pass


def _finite(name, a):
    a = np.asarray(a, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(a.reshape(-1)))
    if bad.size:
        raise FixtureError(f"{name}[{bad[0]}] is not finite")
    return a


def _quats(name, q):
    n2 = (q.astype(np.float64).reshape(-1, 4) ** 2).sum(-1)
    bad = np.flatnonzero(~((n2 > 0.99) & (n2 < 1.01)))
    if bad.size:
        raise FixtureError(f"{name} quaternion {bad[0]} has squared norm {n2[bad[0]]:.9g} (must be within 0.99..1.01)")


def _parents(p, n):
    p = np.asarray(p, dtype=np.int32)
    if p.shape != (n,) or p[0] != -1:
        raise FixtureError("parents[0] must be -1 (the root)")
    for j in range(1, n):
        if not 0 <= p[j] < j:
            raise FixtureError(f"parents[{j}] = {p[j]} must be within 0..{j - 1}")
    return p


PLAN_ARRAYS = [  # name, shape with F for the plan's frames, is quaternion
    ("context_roots", (WINDOW, 3), False),
    ("context_local_xyzw", (WINDOW, JOINTS, 4), True),
    ("expected_roots", ("F", 3), False),
    ("expected_local_xyzw", ("F", JOINTS, 4), True),
    ("expected_joints", ("F", JOINTS, 3), False),
    ("target_roots", (WINDOW, 3), False),
    ("target_local_xyzw", (WINDOW, JOINTS, 4), True),
    ("target_joints", (WINDOW, JOINTS, 3), False),
]


def write_mbparity(path, fps, parents, neutral, plans):
    """plans: dicts with command_frame, frames, mode, seed, movement[3], facing[3] and PLAN_ARRAYS."""
    if not 1 <= fps <= 1000:
        raise FixtureError(f"fps {fps} must be 1..1000")
    if not 1 <= len(plans) <= 10000:
        raise FixtureError(f"plan count {len(plans)} must be 1..10000")
    out = [PARITY_MAGIC, struct.pack("<7I", 1, fps, len(plans), JOINTS, WINDOW, WINDOW, 0)]
    out.append(_parents(parents, JOINTS).astype("<i4").tobytes())
    out.append(_finite("neutral joints", np.reshape(neutral, (JOINTS, 3))).astype("<f4").tobytes())
    for i, p in enumerate(plans):
        f = int(p["frames"])
        if not (24 <= f <= 64 and f % 4 == 0):
            raise FixtureError(f"plan {i} expected frames {f} must be 24..64 and a multiple of 4")
        if not 0 <= int(p["mode"]) <= 14:
            raise FixtureError(f"plan {i} mode {p['mode']} must be 0..14")
        out.append(struct.pack("<IIiIQ", int(p["command_frame"]), f, int(p["mode"]), 0, int(p["seed"])))
        out.append(_finite(f"plan {i} movement", np.reshape(p["movement"], 3)).astype("<f4").tobytes())
        out.append(_finite(f"plan {i} facing", np.reshape(p["facing"], 3)).astype("<f4").tobytes())
        for name, shape, quat in PLAN_ARRAYS:
            shape = tuple(f if s == "F" else s for s in shape)
            a = _finite(f"plan {i} {name}", p[name])
            if a.shape != shape:
                raise FixtureError(f"plan {i} {name} has shape {a.shape}, expected {shape}")
            if quat:
                _quats(f"plan {i} {name}", a)
            out.append(a.astype("<f4").tobytes())
    data = b"".join(out)
    if len(data) > MAX_BYTES:
        raise FixtureError("larger than 512 MiB")
    with open(path, "wb") as fh:
        fh.write(data)
    return data


def read_mbparity(path):
    b = open(path, "rb").read()
    if len(b) > MAX_BYTES or len(b) < 36 or b[:8] != PARITY_MAGIC:
        raise FixtureError("not a .mbparity v1 file")
    version, fps, count, joints, ctx, tgt, flags = struct.unpack_from("<7I", b, 8)
    if version != 1 or not 1 <= fps <= 1000 or not 1 <= count <= 10000 or (joints, ctx, tgt, flags) != (34, 4, 4, 0):
        raise FixtureError("unsupported .mbparity header")
    off = 36

    def take(dtype, n):
        nonlocal off
        if off + 4 * n > len(b):
            raise FixtureError(f"truncated at offset {off}")
        a = np.frombuffer(b, dtype=dtype, count=n, offset=off)
        off += 4 * n
        return a

    parents = _parents(take("<i4", JOINTS), JOINTS)
    neutral = _finite("neutral joints", take("<f4", JOINTS * 3)).reshape(JOINTS, 3)
    plans = []
    for i in range(count):
        if off + 24 > len(b):
            raise FixtureError(f"truncated at offset {off}")
        cmd, f, mode, reserved, seed = struct.unpack_from("<IIiIQ", b, off)
        off += 24
        if not (24 <= f <= 64 and f % 4 == 0) or not 0 <= mode <= 14 or reserved:
            raise FixtureError(f"plan {i}: bad frames, mode or reserved")
        p = {"command_frame": cmd, "frames": f, "mode": mode, "seed": seed,
             "movement": _finite("movement", take("<f4", 3)), "facing": _finite("facing", take("<f4", 3))}
        for name, shape, quat in PLAN_ARRAYS:
            shape = tuple(f if s == "F" else s for s in shape)
            a = _finite(f"plan {i} {name}", take("<f4", int(np.prod(shape)))).reshape(shape)
            if quat:
                _quats(f"plan {i} {name}", a)
            p[name] = a
        plans.append(p)
    if off != len(b):
        raise FixtureError(f"{len(b) - off} trailing bytes")
    return {"fps": fps, "parents": parents, "neutral": neutral, "plans": plans}


def write_mbreplay(path, fps, parents, modes, active_plan, qpos, positions, plan_first_frame, plan_mode, plan_frames,
                   target_positions):
    parents = np.asarray(parents, dtype=np.int32)
    modes, active = np.asarray(modes, dtype=np.int32), np.asarray(active_plan, dtype=np.int32)
    qpos, positions = _finite("qpos", qpos), _finite("joint positions", positions)
    first, pmode = np.asarray(plan_first_frame, dtype=np.uint32), np.asarray(plan_mode, dtype=np.int32)
    plen, targets = np.asarray(plan_frames, dtype=np.uint32), _finite("target positions", target_positions)
    frames, joints, plans = len(modes), len(parents), len(first)
    q = qpos.shape[1] if qpos.ndim == 2 else 0
    if not (1 <= fps <= 1000 and 1 <= frames <= 1000000 and 1 <= joints <= 64 and 1 <= q <= 256 and plans <= frames):
        raise FixtureError("unsafe .mbreplay dimensions")
    _parents(parents, joints)
    if (active.shape != (frames,) or qpos.shape != (frames, q) or positions.shape != (frames, joints, 3)
            or pmode.shape != (plans,) or plen.shape != (plans,) or targets.shape != (plans, 4, joints, 3)):
        raise FixtureError("array shapes disagree with the header")
    if ((modes < 0) | (modes > 14)).any() or ((pmode < 0) | (pmode > 14)).any():
        raise FixtureError("mode outside 0..14")
    if ((active < -1) | (active >= plans)).any():
        raise FixtureError("active plan outside -1..plans-1")
    if (first >= frames).any() or (np.diff(first.astype(np.int64)) < 0).any() or ((plen < 1) | (plen > 1000000)).any():
        raise FixtureError("bad plan first frame or length")
    data = b"".join([REPLAY_MAGIC, struct.pack("<8I", 1, fps, frames, joints, q, plans, 4, 0)] +
                    [a.astype(a.dtype.newbyteorder("<")).tobytes() for a in
                     (parents, modes, active, qpos, positions, first, pmode, plen, targets)])
    if len(data) > MAX_BYTES:
        raise FixtureError("larger than 512 MiB")
    with open(path, "wb") as fh:
        fh.write(data)
    return data
