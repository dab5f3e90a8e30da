"""Starts `motionbricks serve-infer` on a free loopback port for a test and stops it (SIGTERM), and
builds requests. Paths come from the environment CTest sets: MB_CLI (the binary), MB_BUNDLE and
MB_STYLES (the C ABI tests' random small bundle and demo styles), MB_SHARED (../shared)."""

import os
import re
import signal
import subprocess
import time

import numpy as np

from v2_client import Client


def env(name):
    v = os.environ.get(name, "")
    return v if v and os.path.exists(v) else None


class Server:
    def __init__(self, bundle, styles=None, extra=(), threads=2):
        cmd = [os.environ["MB_CLI"], "serve-infer", "--model", bundle, "--listen", "127.0.0.1:0", "--threads", str(threads)]
        if styles:
            cmd += ["--styles", styles]
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            if "serve-infer: ready" in line:
                return
        raise RuntimeError("serve-infer did not become ready: " + "".join(self.log))

    def client(self, timeout=60):
        return Client("127.0.0.1", self.port, timeout)

    def stop(self, timeout=30):
        """SIGTERM; returns (exit code, the rest of stderr)"""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rest = self.proc.stderr.read()
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.log.append(rest)
        return code, rest

    def __enter__(self):
        return self

    def __exit__(self, *a):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def simple_inputs(seed=0, sampling="argmax", x=0.0, heading=0.0, target_z=1.0):
    """a well-formed stateless request: standing at x, facing `heading`, target target_z ahead"""
    g = np.zeros((1, 8, 5), np.float32)
    g[0, :, 0] = x
    g[0, :, 1] = 0.8
    g[0, 4:, 2] = target_z
    g[0, :, 3] = np.cos(heading)
    g[0, :, 4] = np.sin(heading)
    l = np.zeros((1, 8, 4), np.float32)
    l[0, :, 3] = 0.8
    has_l = np.ones((1, 8), np.bool_)
    has_l[0, 3] = False
    return {
        "global_root_values": g,
        "has_global_root_values": np.ones((1, 8), np.bool_),
        "local_root_values": l,
        "has_local_root_values": has_l,
        "local_poses": np.zeros((1, 8, 303), np.float32),
        "has_local_poses": np.ones((1, 8), np.bool_),
        "seed": np.array([seed], np.uint64),
        "sampling": np.array([sampling], np.object_),
    }


def metric_lines(text, name):
    return [l for l in text.splitlines() if l.startswith(name)]


def histogram_counts(text, name):
    """{le: cumulative count} of a Prometheus histogram"""
    out = {}
    for l in metric_lines(text, name + "_bucket"):
        m = re.match(r'.*le="([^"]+)"\} (\d+)', l)
        out[m.group(1)] = int(m.group(2))
    return out
