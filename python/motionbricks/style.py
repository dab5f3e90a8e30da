""".mbstyle v1 styles from G1 MuJoCo qpos clips, mirroring upstream's clip
preprocessing (motion_backbone/demo/clips.py, _preprocess_clips_from_dataloader):

  1. qpos → motion transforms (helper/mujoco_helper.py convert_mujoco_qpos_to_motion_transforms)
  2. the whole clip → 414-d global features (compute_motion_features: hip heading,
     first frame at the origin facing +Z)
  3. the [A:B] slice, then change_first_heading(·, 0)
  4. features → qpos (convert_motion_features_to_mujoco_qpos) → motion transforms
  5. root (x, 0, z), joint positions minus it, rotations, pelvis z-axis heading

Math in float64 (upstream runs float32; the difference is far below 1e-5).
Layout of the written file: src/format/style.cpp.
"""

import csv
import math
import os

import numpy as np

from . import bundle
from . import constants as C
from . import gguf
from .errors import ConvertError
from .output import staged_output

# motion (x, y, z) = (mj y, mj z, mj x)
M = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
VIRTUAL_JOINTS = (7, 14, 25, 33)
HIP_RIGHT, HIP_LEFT = 8, 1
FOOT_JOINTS = (6, 7, 13, 14)            # left ankle roll, left toe, right ankle roll, right toe
CONTACT_VEL, CONTACT_HEIGHT = 0.15, 0.10

PARENTS = np.array([j[1] for j in C.SKELETON_JOINTS])
NEUTRAL = np.array([j[2] for j in C.SKELETON_JOINTS], dtype=np.float64)


# ---- rotations (upstream conventions, quaternion w x y z) ---------------------


def quat_to_matrix(q):
    """[..., 4] → [..., 3, 3]; divides by |q|² like upstream."""
    r, i, j, k = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    s = 2.0 / (q * q).sum(-1)
    m = np.stack([1 - s * (j * j + k * k), s * (i * j - k * r), s * (i * k + j * r),
                  s * (i * j + k * r), 1 - s * (i * i + k * k), s * (j * k - i * r),
                  s * (i * k - j * r), s * (j * k + i * r), 1 - s * (i * i + j * j)], -1)
    return m.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m):
    """pytorch3d rule: branch argmax(q_abs) (first on ties), divisor 2·max(q_abs, 0.1), no sign fix."""
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    raw = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    q_abs = np.sqrt(np.maximum(raw, 0.0))
    cand = np.stack([
        np.stack([q_abs[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01], -1),
        np.stack([m21 - m12, q_abs[..., 1] ** 2, m10 + m01, m02 + m20], -1),
        np.stack([m02 - m20, m10 + m01, q_abs[..., 2] ** 2, m12 + m21], -1),
        np.stack([m10 - m01, m20 + m02, m21 + m12, q_abs[..., 3] ** 2], -1),
    ], -2)
    cand = cand / (2.0 * np.maximum(q_abs, 0.1))[..., None]
    best = np.argmax(q_abs, axis=-1)
    return np.take_along_axis(cand, best[..., None, None], axis=-2)[..., 0, :]


def matrix_to_cont6d(m):
    """[..., 3, 3] → [..., 6]: column 0 then column 1."""
    return np.concatenate([m[..., :, 0], m[..., :, 1]], -1)


def cont6d_to_matrix(c):
    x = c[..., 0:3] / np.linalg.norm(c[..., 0:3], axis=-1, keepdims=True)
    z = np.cross(x, c[..., 3:6])
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    y = np.cross(z, x)
    return np.stack([x, y, z], -1)


def rot_y(a):
    """RotY(a) for an array of angles: [..., 3, 3]."""
    c, s = np.cos(a), np.sin(a)
    z, o = np.zeros_like(a), np.ones_like(a)
    return np.stack([np.stack([c, z, s], -1), np.stack([z, o, z], -1), np.stack([-s, z, c], -1)], -2)


# ---- the MuJoCo G1 hinge tree ---------------------------------------------------


class Converter:
    """upstream mujoco_qpos_converter state, from constants.G1_HINGES."""

    def __init__(self, hinges=C.G1_HINGES):
        names = [j[0] for j in C.SKELETON_JOINTS]
        n = len(hinges)
        self.hinge_joint = np.zeros(n, dtype=np.int64)
        self.body_parent = np.full(n + 1, -1, dtype=np.int64)
        self.body_neutral = np.zeros((n + 1, 3))
        self.joint_body = np.full(len(names), -1, dtype=np.int64)
        self.joint_body[0] = 0
        self.axis_mj = np.zeros(n, dtype=np.int64)
        self.q2t = np.tile(np.eye(3), (len(names), 1, 1))
        self.f2q = np.tile(np.eye(3), (len(names), 1, 1))
        for k, (joint, parent, pos, quat, axis) in enumerate(hinges):
            j = names.index(joint.replace("_joint", "_skel"))
            self.hinge_joint[k] = j
            self.joint_body[j] = k + 1
            self.body_parent[k + 1] = parent
            self.body_neutral[k + 1] = self.body_neutral[parent] + np.array(pos)
            self.axis_mj[k] = axis
            if quat is not None:
                q = np.array(quat) / np.linalg.norm(quat)
                self.q2t[j] = quat_to_matrix(q)
                self.f2q[j] = (M @ self.q2t[j] @ M.T).T
        # MuJoCo axis x → motion z, y → x, z → y
        self.axis_motion = np.array([2, 0, 1])[self.axis_mj]

    def qpos_to_transforms(self, qpos):
        """[T, 36] (quat w first) → world positions [T, 34, 3], global rotations [T, 34, 3, 3] (motion space)."""
        qpos = np.asarray(qpos, dtype=np.float64)
        t, n = qpos.shape[0], len(self.hinge_joint)
        g_rot = np.zeros((t, n + 1, 3, 3))
        g_pos = np.zeros((t, n + 1, 3))
        g_rot[:, 0] = quat_to_matrix(qpos[:, 3:7])
        half = qpos[:, 7:] / 2
        for k in range(n):
            b, p = k + 1, self.body_parent[k + 1]
            hq = np.zeros((t, 4))
            hq[:, 0] = np.cos(half[:, k])
            hq[:, 1 + self.axis_mj[k]] = np.sin(half[:, k])
            local = self.q2t[self.hinge_joint[k]] @ quat_to_matrix(hq)
            rel = self.body_neutral[b] - self.body_neutral[p]
            g_pos[:, b] = g_pos[:, p] + g_rot[:, p] @ rel
            g_rot[:, b] = g_rot[:, p] @ local
        g_pos = g_pos + qpos[:, None, 0:3]
        pos = np.zeros((t, len(PARENTS), 3))
        rot = np.zeros((t, len(PARENTS), 3, 3))
        live = self.joint_body >= 0
        pos[:, live] = g_pos[:, self.joint_body[live]] @ M.T
        rot[:, live] = M @ g_rot[:, self.joint_body[live]] @ M.T
        # virtual joints: identity rotation, placed by the parent's transform and the skeleton offset
        neutral32 = NEUTRAL.astype(np.float32).astype(np.float64)
        for j in VIRTUAL_JOINTS:
            p = PARENTS[j]
            rot[:, j] = np.eye(3)
            pos[:, j] = pos[:, p] + rot[:, p] @ (neutral32[j] - neutral32[p])
        return pos, rot

    def features_to_qpos(self, feat):
        """un-normalised global features [T, 414] → qpos [T, 36] (quat w first)."""
        t = feat.shape[0]
        g = cont6d_to_matrix(feat[:, 104:308].reshape(t, len(PARENTS), 6))
        return self.rotations_to_qpos(feat[:, 0:3], g)

    def rotations_to_qpos(self, root, g):
        """root positions [T, 3] and global rotations [T, 34, 3, 3] (motion space) → qpos [T, 36]:
        the rotations projected onto the hinges."""
        t = g.shape[0]
        parent_rot = g[:, np.maximum(PARENTS, 0)]
        parent_rot[:, 0] = np.eye(3)
        lh = self.f2q @ (np.swapaxes(parent_rot, -1, -2) @ g)
        qpos = np.zeros((t, C.QPOS_DIM))
        qpos[:, 0:3] = root @ M                  # Mᵀ p
        qpos[:, 3:7] = matrix_to_quat(M.T @ lh[:, 0] @ M)
        r = lh[:, self.hinge_joint]
        angles = np.stack([np.arctan2(r[..., 2, 1], r[..., 2, 2]),   # motion x
                           np.arctan2(r[..., 0, 2], r[..., 0, 0]),   # motion y
                           np.arctan2(r[..., 1, 0], r[..., 1, 1])],  # motion z
                          -1)
        qpos[:, 7:] = np.take_along_axis(angles, self.axis_motion[None, :, None], axis=-1)[..., 0]
        return qpos


# ---- features (upstream compute_motion_features, removing_heading = False) ------


def heading_quat_y(a):
    q = np.zeros(a.shape + (4,))
    q[..., 0] = np.cos(a / 2)
    q[..., 2] = np.sin(a / 2)
    return q


def motion_features(pos, rot, fps=C.STYLE_FPS):
    """world joint positions [T, 34, 3] and global rotations [T, 34, 3, 3] → 414-d global
    features, canonicalised: frame 0 at x = z = 0 with (hip) heading 0."""
    t = pos.shape[0]
    if t < 2:
        raise ConvertError("a clip needs at least 2 frames to compute features")
    # raw heading from the hip vector
    across = pos[:, HIP_RIGHT] - pos[:, HIP_LEFT]
    across[:, 1] = 0
    across = across / (np.linalg.norm(across, axis=-1, keepdims=True) + 1e-6)
    h = np.stack([across[:, 2], np.zeros(t), -across[:, 0]], -1)
    h = h / np.linalg.norm(h, axis=-1, keepdims=True)
    raw = np.arctan2(h[:, 0], h[:, 2])
    # heading relative to frame 0 (q[t] ⊗ q[0]⁻¹ about Y), y-only, renormalised
    rel = raw - raw[0]
    q = heading_quat_y(rel)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    angle = 2 * np.arctan2(q[:, 2], q[:, 0])
    # positions: frame-0 root xz to the origin, rotated by the first heading's inverse
    r0 = rot_y(-raw[0])
    p = pos.copy()
    p[..., 0] -= pos[0, 0, 0]
    p[..., 2] -= pos[0, 0, 2]
    p = p @ r0.T
    vel = np.zeros_like(p)
    vel[:-1] = fps * (p[1:] - p[:-1])
    vel[-1] = vel[-2]
    ric = p.copy()
    ric[..., 0] -= p[:, 0:1, 0]
    ric[..., 2] -= p[:, 0:1, 2]
    g = r0 @ rot
    speed = np.linalg.norm(vel[:, FOOT_JOINTS], axis=-1)
    contacts = ((speed < CONTACT_VEL) & (p[:, FOOT_JOINTS, 1] < CONTACT_HEIGHT)).astype(np.float64)
    return np.concatenate([p[:, 0], np.cos(angle)[:, None], np.sin(angle)[:, None],
                           ric[:, 1:].reshape(t, -1), matrix_to_cont6d(g).reshape(t, -1),
                           vel.reshape(t, -1), contacts], -1)


def change_first_heading(feat, first_heading=0.0):
    """upstream GlobalRootLocalBody.change_first_heading on un-normalised 414-d features."""
    t = feat.shape[0]
    a = np.arctan2(feat[:, 4], feat[:, 3])
    corr = first_heading - a[0]
    new = a + corr
    r = rot_y(np.array(corr))
    out = feat.copy()
    first = feat[0, 0:3].copy()
    first[1] = 0
    out[:, 0:3] = (feat[:, 0:3] - first) @ r.T
    out[:, 3] = np.cos(new)
    out[:, 4] = np.sin(new)
    out[:, 5:104] = (feat[:, 5:104].reshape(t, -1, 3) @ r.T).reshape(t, -1)
    g = cont6d_to_matrix(feat[:, 104:308].reshape(t, -1, 6))
    out[:, 104:308] = matrix_to_cont6d(r @ g).reshape(t, -1)
    out[:, 308:410] = (feat[:, 308:410].reshape(t, -1, 3) @ r.T).reshape(t, -1)
    return out


# ---- the clip preprocessing ------------------------------------------------------


def style_buffers(qpos, start=None, end=None, converter=None):
    """upstream clip preprocessing of one clip: qpos [T, 36] (30 fps, quat w first) and the
    slice [start:end] → dict of float32 buffers (joint_positions [F, 34, 3], joint_rotations
    [F, 34, 3, 3], root_positions [F, 3], headings [F] before any load-time correction,
    motion_feature [F, 414], mujoco_qpos [F, 36])."""
    conv = converter or Converter()
    pos, rot = conv.qpos_to_transforms(qpos)
    feat = motion_features(pos, rot)[start:end]
    if feat.shape[0] < 1:
        raise ConvertError("the frame slice is empty")
    feat = change_first_heading(feat, 0.0)
    clip_qpos = conv.features_to_qpos(feat)
    pos, rot = conv.qpos_to_transforms(clip_qpos)
    root = pos[:, 0] * np.array([1.0, 0.0, 1.0])
    direction = rot[:, 0, :, 2] * np.array([1.0, 0.0, 1.0])     # pelvis z axis on XZ
    norm = np.linalg.norm(direction, axis=1)
    if not (norm > 1e-5).all():
        raise ConvertError("the pelvis heading is ill defined at clip frame %d" % int(np.argmin(norm)))
    direction = direction / norm[:, None]
    return {
        "joint_positions": (pos - root[:, None, :]).astype(np.float32),
        "joint_rotations": rot.astype(np.float32),
        "root_positions": root.astype(np.float32),
        "headings": np.arctan2(direction[:, 0], direction[:, 2]).astype(np.float32),
        "motion_feature": feat.astype(np.float32),
        "mujoco_qpos": clip_qpos.astype(np.float32),
    }


def resample(qpos, fps, out_fps=C.STYLE_FPS):
    """qpos [T, 36] at `fps` → `out_fps`: positions and hinges linearly, the root
    quaternion by slerp; frames at k / out_fps within the clip's duration."""
    if fps == out_fps:
        return qpos
    t = qpos.shape[0]
    duration = (t - 1) / fps
    n = int(math.floor(duration * out_fps + 1e-9)) + 1
    src = np.arange(n) / out_fps * fps
    i0 = np.minimum(np.floor(src).astype(np.int64), t - 1)
    i1 = np.minimum(i0 + 1, t - 1)
    w = (src - i0)[:, None]
    out = qpos[i0] * (1 - w) + qpos[i1] * w
    q0 = qpos[i0, 3:7] / np.linalg.norm(qpos[i0, 3:7], axis=1, keepdims=True)
    q1 = qpos[i1, 3:7] / np.linalg.norm(qpos[i1, 3:7], axis=1, keepdims=True)
    d = (q0 * q1).sum(1)
    q1 = np.where(d[:, None] < 0, -q1, q1)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(theta)
    wt = w[:, 0]
    small = s < 1e-8
    a = np.where(small, 1 - wt, np.sin((1 - wt) * theta) / np.where(small, 1, s))
    b = np.where(small, wt, np.sin(wt * theta) / np.where(small, 1, s))
    q = a[:, None] * q0 + b[:, None] * q1
    out[:, 3:7] = q / np.linalg.norm(q, axis=1, keepdims=True)
    return out


def read_qpos_csv(path, quat_order):
    """CSV of 36 numbers per row → [T, 36] float64 with the quaternion w first. An optional first row
    of names (motionbricks' qpos CSV: root_x, ..., root_qw in column 3 for wxyz or 6 for xyzw) is
    skipped after checking that it agrees with quat_order."""
    rows = []
    try:
        with open(path, newline="") as f:
            for ln, row in enumerate(csv.reader(f), 1):
                cells = [c.strip() for c in row]
                if not cells or (len(cells) == 1 and not cells[0]):
                    continue
                if len(cells) != C.QPOS_DIM:
                    raise ConvertError("%s:%d: %d values, a G1 qpos row has %d" % (path, ln, len(cells), C.QPOS_DIM))
                if not rows and cells[0][:1].isalpha() and cells[0].lower() not in ("nan", "inf", "infinity"):
                    named = "wxyz" if cells[3] == "root_qw" else "xyzw" if cells[6] == "root_qw" else None
                    if named is None:
                        raise ConvertError("%s:%d: a header row must name root_qw in column 3 or 6" % (path, ln))
                    if named != quat_order:
                        raise ConvertError("%s:%d: the header says %s, --quat-order is %s" % (path, ln, named, quat_order))
                    continue
                try:
                    vals = [float(c) for c in cells]
                except ValueError:
                    raise ConvertError("%s:%d: not a number" % (path, ln)) from None
                if not all(math.isfinite(v) for v in vals):
                    raise ConvertError("%s:%d: non-finite value" % (path, ln))
                rows.append(vals)
                if len(rows) > 10 * C.STYLE_MAX_FRAMES:
                    raise ConvertError("%s: more than %d rows" % (path, 10 * C.STYLE_MAX_FRAMES))
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror)) from None
    if len(rows) < 2:
        raise ConvertError("%s: needs at least 2 rows" % path)
    q = np.array(rows, dtype=np.float64)
    if quat_order == "xyzw":
        q[:, 3:7] = q[:, [6, 3, 4, 5]]
    elif quat_order != "wxyz":
        raise ConvertError("--quat-order must be wxyz or xyzw")
    norms = np.linalg.norm(q[:, 3:7], axis=1)
    if (norms < 1e-6).any():
        raise ConvertError("%s:%d: zero root quaternion" % (path, int(np.argmin(norms)) + 1))
    return q


def parse_allowed_tokens(text):
    """'6-11' or '6,8,10-12' → the [11] int32 mask for 6..16 tokens."""
    mask = np.zeros(C.MAX_TOKENS - C.MIN_TOKENS + 1, dtype=np.int32)
    for part in str(text).split(","):
        part = part.strip()
        try:
            lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part else (int(part), int(part))
        except ValueError:
            raise ConvertError("--allowed-tokens: bad range %r (want e.g. 6-11)" % part) from None
        if not (C.MIN_TOKENS <= lo <= hi <= C.MAX_TOKENS):
            raise ConvertError("--allowed-tokens: %r is outside %d..%d" % (part, C.MIN_TOKENS, C.MAX_TOKENS))
        mask[lo - C.MIN_TOKENS:hi - C.MIN_TOKENS + 1] = 1
    return mask


def parse_frames(text, n):
    """'A:B' (python slice bounds, either may be empty) → (start, end) within n frames."""
    if text is None:
        return 0, n
    parts = str(text).split(":")
    if len(parts) != 2:
        raise ConvertError("--frames must be A:B")
    try:
        a = int(parts[0]) if parts[0].strip() else 0
        b = int(parts[1]) if parts[1].strip() else n
    except ValueError:
        raise ConvertError("--frames must be A:B with integers") from None
    start, end, _ = slice(a, b).indices(n)
    if end - start < C.STYLE_MIN_FRAMES:
        raise ConvertError("--frames %s leaves %d frames of %d (a style needs at least %d)"
                           % (text, max(0, end - start), n, C.STYLE_MIN_FRAMES))
    return start, end


# ---- the .mbstyle file --------------------------------------------------------------


def write_style(path, name, speed, buffers, allowed_tokens, source_sha256, index=None,
                upstream_revision=C.RELEASE_UPSTREAM_REVISION):
    """Validates and writes one .mbstyle (atomic). Returns (size, sha256)."""
    pos = np.ascontiguousarray(buffers["joint_positions"], dtype=np.float32)
    frames = pos.shape[0]
    rot = np.ascontiguousarray(buffers["joint_rotations"], dtype=np.float32).reshape(frames, C.N_JOINTS, 9)
    root = np.ascontiguousarray(buffers["root_positions"], dtype=np.float32)
    head = np.ascontiguousarray(buffers["headings"], dtype=np.float32)
    mask = np.ascontiguousarray(allowed_tokens, dtype=np.int32)
    if not name:
        raise ConvertError("style name is empty")
    if not (0 <= speed <= C.STYLE_MAX_SPEED):
        raise ConvertError("style speed %r must be within 0..%g m/s" % (speed, C.STYLE_MAX_SPEED))
    if index is not None and not (0 <= int(index) <= 0xFFFFFFFF):
        raise ConvertError("style index %r does not fit UINT32" % index)
    if not (C.STYLE_MIN_FRAMES <= frames <= C.STYLE_MAX_FRAMES):
        raise ConvertError("style has %d frames, allowed %d..%d" % (frames, C.STYLE_MIN_FRAMES, C.STYLE_MAX_FRAMES))
    if pos.shape != (frames, C.N_JOINTS, 3) or root.shape != (frames, 3) or head.shape != (frames,):
        raise ConvertError("style buffers have inconsistent shapes")
    if mask.shape != (11,) or not np.isin(mask, (0, 1)).all() or mask.sum() == 0:
        raise ConvertError("allowed-token mask must be 11 binary values with at least one 1")
    for what, a in (("positions", pos), ("rotations", rot), ("root positions", root), ("headings", head)):
        if not np.isfinite(a).all():
            raise ConvertError("style %s are not finite" % what)
    # the reader's bounds, compared in float32 as it does
    for tensor, a, bound, unit in ((C.STYLE_JOINT_POSITIONS, pos, C.STYLE_MAX_JOINT_OFFSET, "m"),
                                   (C.STYLE_ROOT_POSITIONS, root, C.STYLE_MAX_ROOT_DISTANCE, "m"),
                                   (C.STYLE_HEADINGS, head, C.STYLE_MAX_HEADING, "rad")):
        over = np.flatnonzero(np.abs(a.reshape(-1)) > np.float32(bound))
        if over.size:
            raise ConvertError("%s[%d] = %g exceeds %g %s in magnitude"
                               % (tensor, over[0], a.reshape(-1)[over[0]], bound, unit))
    if len(source_sha256) != 64 or any(c not in "0123456789abcdef" for c in source_sha256):
        raise ConvertError("source sha256 must be 64 lowercase hex digits")
    tensors = [
        (C.STYLE_ALLOWED_TOKENS, C.GGML_TYPE_I32, mask),
        (C.STYLE_HEADINGS, C.GGML_TYPE_F32, head),
        (C.STYLE_JOINT_POSITIONS, C.GGML_TYPE_F32, pos),
        (C.STYLE_JOINT_ROTATIONS, C.GGML_TYPE_F32, rot),
        (C.STYLE_ROOT_POSITIONS, C.GGML_TYPE_F32, root),
    ]
    count = sum(int(a.size) for _, _, a in tensors)
    extra = [(C.KEY_STYLE_NAME, C.GGUF_TYPE_STRING, name),
             (C.KEY_STYLE_SPEED, C.GGUF_TYPE_FLOAT32, float(speed)),
             (C.KEY_STYLE_FRAMES, C.GGUF_TYPE_UINT32, frames)]
    if index is not None:
        extra.append((C.KEY_STYLE_INDEX, C.GGUF_TYPE_UINT32, int(index)))
    md = bundle.component_metadata(C.COMPONENT_STYLE, upstream_revision, source_sha256, count, extra)
    md = [(k, t, name if k == C.KEY_NAME else v) for k, t, v in md]
    gt = [gguf.Tensor(n, t, a.shape, (lambda a=a: iter([a]))) for n, t, a in tensors]
    return gguf.write_gguf(path, md, gt)


def read_style(path):
    """The metadata dict and the five arrays of a .mbstyle (for tests and dump)."""
    with gguf.GGUFFile(path) as g:
        meta = {k: v for k, _, v in g.metadata}
        arrays = {t["name"]: np.array(g.tensor(t["name"])) for t in g.tensors}
    return meta, arrays


def sha256_file(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def convert_qpos_csv(args):
    """tools/convert.py style: a qpos CSV → one .mbstyle. Returns a summary line."""
    if args.fps <= 0 or not math.isfinite(args.fps):
        raise ConvertError("--fps must be positive")
    q = read_qpos_csv(args.qpos_csv, args.quat_order)
    return convert_qpos(args, resample(q, args.fps), args.qpos_csv)


def convert_qpos(args, q, source_path):
    """qpos [T, 36] at 30 fps → the style of args (name, speed, frames, tokens, out)."""
    start, end = parse_frames(args.frames, q.shape[0])
    if end - start > C.STYLE_MAX_FRAMES:
        raise ConvertError("the slice has %d frames, a style holds at most %d" % (end - start, C.STYLE_MAX_FRAMES))
    mask = parse_allowed_tokens(args.allowed_tokens)
    buffers = style_buffers(q, start, end)
    source = args.source_sha256 or sha256_file(source_path)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise ConvertError("%s: directory does not exist" % out_dir)
    size, sha = write_style(args.out, args.name, args.speed, buffers, mask, source, index=args.index)
    return "%s: style %r, %d frames (of %d at 30 fps), speed %g, %d bytes, sha256 %s" % (
        args.out, args.name, end - start, q.shape[0], args.speed, size, sha)


def glb_qpos(path, converter=None):
    """a G1 GLB clip (glb.py's rules) → qpos [T, 36] at 30 fps: FK of its local rotations, then
    the rotations projected onto the hinges."""
    from .glb import read_glb
    with open(path, "rb") as f:
        data = f.read(glb_max_bytes() + 1)
    root, q = read_glb(data, path)
    local = quat_to_matrix(q[..., [3, 0, 1, 2]])
    g = np.empty_like(local)
    for j, p in enumerate(PARENTS):
        g[:, j] = local[:, j] if p < 0 else g[:, p] @ local[:, j]
    return (converter or Converter()).rotations_to_qpos(root, g)


def glb_max_bytes():
    from .glb import MAX_BYTES
    return MAX_BYTES


def convert(args):
    """tools/convert.py style: a qpos CSV or a GLB clip → one .mbstyle."""
    if (args.qpos_csv is None) == (args.glb is None):
        raise ConvertError("give exactly one of --qpos-csv and --glb")
    if args.glb is not None:
        if not os.path.isfile(args.glb):
            raise ConvertError("%s: not a regular file" % args.glb)
        return convert_qpos(args, glb_qpos(args.glb), args.glb)
    if args.quat_order is None or args.fps is None:
        raise ConvertError("--qpos-csv needs --quat-order and --fps")
    return convert_qpos_csv(args)


def add_parser(sub):
    """the `style` subcommand of tools/convert.py."""
    s = sub.add_parser("style", help="make a .mbstyle from a G1 MuJoCo qpos CSV clip or a G1 GLB clip (Kimodo animation.glb)")
    s.add_argument("--qpos-csv", metavar="FILE",
                   help="CSV, 36 values a row: root xyz (Z up), root quaternion, 29 hinges (g1.xml order); an optional header row")
    s.add_argument("--glb", metavar="FILE",
                   help="glTF 2.0 binary of the g1skel34 layout (Kimodo animation.glb, motionbricks plan --output x.glb), 30 fps")
    s.add_argument("--quat-order", choices=("wxyz", "xyzw"), help="root quaternion order in the CSV (CSV only)")
    s.add_argument("--fps", type=float, metavar="N", help="CSV frame rate, resampled to 30 (CSV only)")
    s.add_argument("--frames", metavar="A:B", help="slice of the 30 fps clip (default: all)")
    s.add_argument("--name", required=True, help="style name")
    s.add_argument("--speed", required=True, type=float, metavar="S", help="configured speed, m/s")
    s.add_argument("--allowed-tokens", default="6-11", metavar="RANGES",
                   help="allowed plan lengths in tokens of 4 frames, 6..16 (default 6-11)")
    s.add_argument("--index", type=int, metavar="N", help="motionbricks.style_index (optional)")
    s.add_argument("--source-sha256", metavar="HEX", help="source identity (default: SHA-256 of the CSV)")
    s.add_argument("--out", required=True, metavar="FILE.mbstyle")
    return s


# ---- a whole clip library (upstream G1-clip.ckpt layout) → the 15 named styles ------

CLIP_KEYS = ("global_joint_positions", "global_joint_rotations", "global_root_positions", "global_headings",
             "num_frames_per_clip")
HAND_CRAWLING, ELBOW_CRAWLING = 3, 5
ELBOW_CRAWLING_HEADING_FIX = 0.95


def apply_heading_corrections(headings):
    """upstream clip_holder_G1._apply_root_headings_correction on [15, F] headings (a copy)."""
    h = np.array(headings, dtype=np.float32, copy=True)
    h[HAND_CRAWLING, 0] = 0.0
    h[ELBOW_CRAWLING, :] -= np.float32(ELBOW_CRAWLING_HEADING_FIX)
    return h


def load_clip_library(path):
    """The clip buffers of an upstream clip checkpoint (.ckpt, read with the restricted
    unpickler; legacy key mfm_feature accepted and unused) or of an .npz holding the same
    arrays: dict of numpy arrays, headings as stored (before the load-time corrections)."""
    if path.endswith(".npz"):
        try:
            z = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ConvertError("%s: %s" % (path, e)) from None
        # clip_library.npz also holds the corrected headings; the raw ones are what a checkpoint stores
        source = {k: k for k in CLIP_KEYS}
        if "global_headings_raw" in z.files:
            source["global_headings"] = "global_headings_raw"
        try:
            out = {k: z[v] for k, v in source.items() if v in z.files}
        except ValueError as e:
            raise ConvertError("%s: %s" % (path, e)) from None
    else:
        from .ckpt import state_dict_tensors
        sd, _ = state_dict_tensors(path)
        out = {k: sd[k].load() for k in CLIP_KEYS if k in sd}
    missing = [k for k in CLIP_KEYS if k not in out]
    if missing:
        raise ConvertError("%s: clip library lacks %s" % (path, ", ".join(missing)))
    n_clips = len(C.STYLE_RELEASE)
    nf = np.asarray(out["num_frames_per_clip"])
    if nf.shape != (n_clips,) or nf.dtype.kind not in "iu":
        raise ConvertError("%s: num_frames_per_clip must be %d integers" % (path, n_clips))
    fmax = out["global_headings"].shape[1] if out["global_headings"].ndim == 2 else -1
    want = {"global_joint_positions": (n_clips, fmax, C.N_JOINTS, 3),
            "global_joint_rotations": (n_clips, fmax, C.N_JOINTS, 3, 3),
            "global_root_positions": (n_clips, fmax, 3), "global_headings": (n_clips, fmax)}
    for k, shape in want.items():
        if tuple(out[k].shape) != shape:
            raise ConvertError("%s: %s has shape %s, expected %s" % (path, k, list(out[k].shape), list(shape)))
        out[k] = np.asarray(out[k], dtype=np.float32)
    if (nf < C.STYLE_MIN_FRAMES).any() or (nf > fmax).any():
        raise ConvertError("%s: num_frames_per_clip %s outside %d..%d" % (path, list(nf), C.STYLE_MIN_FRAMES, fmax))
    return out


def convert_clip_library(args):
    """tools/convert.py styles: a clip library → 15 .mbstyle files plus manifest.json."""
    import json
    lib = load_clip_library(args.clips)
    source = args.source_sha256 or sha256_file(args.clips)
    heads = apply_heading_corrections(lib["global_headings"])
    styles = {}
    with staged_output(args.out) as stage:
        for m, (name, speed, n_allowed) in enumerate(C.STYLE_RELEASE):
            n = int(lib["num_frames_per_clip"][m])
            mask = np.zeros(11, dtype=np.int32)
            mask[:n_allowed] = 1
            buffers = {"joint_positions": lib["global_joint_positions"][m, :n],
                       "joint_rotations": lib["global_joint_rotations"][m, :n],
                       "root_positions": lib["global_root_positions"][m, :n],
                       "headings": heads[m, :n]}
            rel = name + C.STYLE_SUFFIX
            size, sha = write_style(os.path.join(stage, rel), name, speed, buffers, mask, source, index=m)
            styles[name] = {"path": rel, "sha256": sha, "tensor_count": 5,
                            "parameter_count": n * (C.N_JOINTS * 12 + 4) + 11}
        manifest = {"format": "motionbricks-style-bundle-v1", "styles": styles}
        with open(os.path.join(stage, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.write("\n")
    return "%s: %d styles from %s" % (args.out, len(styles), args.clips)


def add_library_parser(sub):
    """the `styles` subcommand of tools/convert.py."""
    s = sub.add_parser("styles", help="the 15 named .mbstyle files from an upstream clip library")
    s.add_argument("--clips", required=True, metavar="FILE",
                   help="upstream G1-clip.ckpt (restricted unpickler) or an .npz with the same buffers")
    s.add_argument("--source-sha256", metavar="HEX",
                   help="source identity (default: SHA-256 of FILE; the release used %s)" % C.STYLE_RELEASE_SOURCE_SHA256[:12])
    s.add_argument("--out", required=True, metavar="DIR")
    return s
