"""Shared setup of the robot-export tests: the motionbricks binary (MB_BIN), a small random-weight
bundle and the demo styles made once per test module, a plan script, and helpers written from the
formats' documentation (docs/FORMATS.md), not from our C++."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("MB_BIN", os.path.join(SRC, "build", "release", "motionbricks"))
PY = sys.executable

# gear_sonic_deploy policy_parameters.hpp:103: isaaclab joint j = mujoco hinge MUJOCO_OF_ISAACLAB[j]
MUJOCO_OF_ISAACLAB = [0, 6, 12, 1, 7, 13, 2, 8, 14, 3, 9, 15, 22, 4, 10, 16, 23, 5, 11, 17, 24, 18, 25, 19, 26, 20, 27, 21, 28]
BODY_INDEXES = [0, 4, 10, 18, 5, 11, 19, 9, 16, 22, 28, 17, 23, 29]


class Env:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mb-robot-")
        conv = os.path.join(SRC, "tools", "convert.py")
        for args in (["random-bundle", "--preset", "small", "--seed", "3", "--quiet", "--out", self.path("b")],
                     ["demo-styles", "--out", self.path("s")]):
            r = subprocess.run([PY, conv] + args, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("convert.py %s failed: %s" % (args[0], r.stderr))
        self.styles = []
        for f in sorted(os.listdir(self.path("s"))):
            self.styles += ["--style", self.path("s", f)]

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def script(self, name, seconds):
        """a walk-turn-idle script of `seconds` at 30 fps"""
        n = int(seconds * 30)
        segs = [{"frames": n // 3, "style": "walk", "movement": [0, 1]},
                {"frames": n // 3, "style": "walk", "movement": [1, 0], "facing": [1, 0]},
                {"frames": n - 2 * (n // 3), "style": "idle"}]
        p = self.path(name)
        with open(p, "w") as f:
            json.dump(segs, f)
        return p

    def run(self, *args, timeout=300):
        return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=timeout)

    def plan_qpos(self, script):
        """the plan's 30 fps qpos [F, 36] (quaternion w first), read back from its NPZ"""
        out = self.path(os.path.basename(script) + ".npz")
        r = self.run("plan", "--model", self.path("b"), *self.styles, "--script", script, "--output", out)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        return np.load(out)["qpos"]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def slerp(a, b, t):
    """shortest-arc SLERP of unit quaternions (rows), lerp + normalise when nearly equal"""
    d = np.sum(a * b, axis=1)
    b = np.where(d[:, None] < 0, -b, b)
    d = np.abs(d)
    th = np.arccos(np.clip(d, -1, 1))
    s = np.sin(th)
    near = d > 0.9995
    wa = np.where(near, 1 - t, np.sin((1 - t) * th) / np.where(near, 1, s))
    wb = np.where(near, t, np.sin(t * th) / np.where(near, 1, s))
    q = wa[:, None] * a + wb[:, None] * b
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def resample50(q):
    """upstream's 30 → 50 Hz rule (localmotion_kplanner.hpp:449-498): floor(F * 5 / 3) frames, frame k
    at 30 fps position 0.6 k between floor and the next frame (clamped), linear but for the quaternion"""
    F = q.shape[0]
    K = F * 5 // 3
    s = np.arange(K) * 0.6
    f0 = np.minimum(np.floor(s + 1e-9).astype(int), F - 1)
    f1 = np.minimum(f0 + 1, F - 1)
    w = s - f0
    out = (1 - w)[:, None] * q[f0] + w[:, None] * q[f1]
    out[:, 3:7] = slerp(q[f0, 3:7], q[f1, 3:7], w)
    same = (f1 == f0) | (w == 0)
    out[same, 3:7] = q[f0[same], 3:7]
    return out


def joint_vel(jp):
    """(pos[t + 1] - pos[t]) * 50, the last row repeating the one before (kplanner.hpp:501-516)"""
    v = np.zeros_like(jp)
    if len(jp) > 1:
        v[:-1] = (jp[1:] - jp[:-1]) * 50
        v[-1] = v[-2]
    return v
