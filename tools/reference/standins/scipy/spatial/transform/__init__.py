"""Stand-in for scipy.spatial.transform.Rotation on float64 unit quaternions (x, y, z, w
inside, as scipy): from_euler (single or sequential extrinsic lowercase axes), from_quat with
scalar_first, from_matrix, composition with *, inv, apply, as_matrix, as_quat."""

import numpy as np

_AXES = {"x": 0, "y": 1, "z": 2}


def _mul(p, q):
    px, py, pz, pw = np.moveaxis(p, -1, 0)
    qx, qy, qz, qw = np.moveaxis(q, -1, 0)
    return np.stack([pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx,
                     pw * qz + px * qy - py * qx + pz * qw,
                     pw * qw - px * qx - py * qy - pz * qz], -1)


class Rotation:
    def __init__(self, quat_xyzw, single):
        q = np.asarray(quat_xyzw, dtype=np.float64).reshape(-1, 4)
        self._q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        self._single = single

    @classmethod
    def from_quat(cls, quat, scalar_first=False):
        q = np.asarray(quat, dtype=np.float64)
        if scalar_first:
            q = q[..., [1, 2, 3, 0]]
        return cls(q, q.ndim == 1)

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        if seq != seq.lower():
            raise NotImplementedError("stand-in: extrinsic (lowercase) sequences only")
        a = np.atleast_1d(np.asarray(angles, dtype=np.float64)).reshape(-1, len(seq))
        if degrees:
            a = np.radians(a)
        q = np.tile([0.0, 0.0, 0.0, 1.0], (len(a), 1))
        for i, axis in enumerate(seq):
            e = np.zeros((len(a), 4))
            e[:, _AXES[axis]] = np.sin(a[:, i] / 2)
            e[:, 3] = np.cos(a[:, i] / 2)
            q = _mul(e, q)   # extrinsic: each new rotation applies after the previous ones
        return cls(q, np.ndim(angles) <= 1 and len(a) == 1)

    @classmethod
    def from_matrix(cls, m):
        m = np.asarray(m, dtype=np.float64)
        single = m.ndim == 2
        m = m.reshape(-1, 3, 3)
        w = np.sqrt(np.maximum(0.0, 1 + m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2])) / 2
        x = np.sqrt(np.maximum(0.0, 1 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2])) / 2
        y = np.sqrt(np.maximum(0.0, 1 - m[:, 0, 0] + m[:, 1, 1] - m[:, 2, 2])) / 2
        z = np.sqrt(np.maximum(0.0, 1 - m[:, 0, 0] - m[:, 1, 1] + m[:, 2, 2])) / 2
        x = np.copysign(x, m[:, 2, 1] - m[:, 1, 2])
        y = np.copysign(y, m[:, 0, 2] - m[:, 2, 0])
        z = np.copysign(z, m[:, 1, 0] - m[:, 0, 1])
        return cls(np.stack([x, y, z, w], -1), single)

    def __mul__(self, other):
        return Rotation(_mul(self._q, other._q), self._single and other._single)

    def inv(self):
        return Rotation(self._q * np.array([-1.0, -1.0, -1.0, 1.0]), self._single)

    def as_quat(self, scalar_first=False):
        q = self._q[:, [3, 0, 1, 2]] if scalar_first else self._q
        return q[0].copy() if self._single else q.copy()

    def as_matrix(self):
        x, y, z, w = self._q.T
        m = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                      2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                      2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1).reshape(-1, 3, 3)
        return m[0] if self._single else m

    def apply(self, vectors):
        v = np.asarray(vectors, dtype=np.float64)
        m, v2 = self.as_matrix().reshape(-1, 3, 3), v.reshape(-1, 3)
        out = v2 @ m[0].T if len(m) == 1 else np.einsum("nij,nj->ni", m, v2)
        return out[0] if v.ndim == 1 else out
