"""Skeleton maths for the reference fixtures (numpy, float64): 6D → matrix, local rotations as
quaternions x, y, z, w, forward kinematics over parents and neutral joints, the vertical rotation."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from motionbricks.style import cont6d_to_matrix, matrix_to_quat, quat_to_matrix  # noqa: E402


def rot_y(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def local_xyzw(global_rot, parents):
    """global rotations [..., J, 3, 3] → parent-relative quaternions [..., J, 4] (x, y, z, w); root: world."""
    g = np.asarray(global_rot, dtype=np.float64)
    local = g.copy()
    for j, p in enumerate(parents):
        if p >= 0:
            local[..., j, :, :] = np.swapaxes(g[..., p, :, :], -1, -2) @ g[..., j, :, :]
    q = matrix_to_quat(local)
    return q[..., [1, 2, 3, 0]]


def fk(parents, neutral, roots, local):
    """roots [F, 3], local x, y, z, w [F, J, 4] → joint positions [F, J, 3]: position = root + T_global.t."""
    local = np.asarray(local, dtype=np.float64)
    m = quat_to_matrix(local[..., [3, 0, 1, 2]])
    neutral = np.asarray(neutral, dtype=np.float64)
    f, joints = local.shape[0], local.shape[1]
    g = np.zeros((f, joints, 3, 3))
    t = np.zeros((f, joints, 3))
    for j, p in enumerate(parents):
        if p < 0:
            g[:, j], t[:, j] = m[:, j], neutral[j]
        else:
            g[:, j] = g[:, p] @ m[:, j]
            t[:, j] = t[:, p] + g[:, p] @ (neutral[j] - neutral[p])
    return t + np.asarray(roots, dtype=np.float64)[:, None, :]


def features_to_transforms(feat):
    """414-d global features [F, 414] → roots [F, 3], global rotations [F, 34, 3, 3]."""
    feat = np.asarray(feat, dtype=np.float64)
    return feat[:, 0:3], cont6d_to_matrix(feat[:, 104:308].reshape(-1, 34, 6))


def mujoco_to_motion(v):
    """MuJoCo (x forward, y left, z up) → motion (x left, y up, z forward)."""
    v = np.asarray(v)
    return np.stack([v[..., 1], v[..., 2], v[..., 0]], -1)


def qpos_yaw(q_wxyz):
    r = quat_to_matrix(np.asarray(q_wxyz, dtype=np.float64))
    return np.arctan2(r[..., 1, 0], r[..., 0, 0])
