"""Styles from G1 GLB clips (tools/convert.py style --glb): a qpos clip written as a GLB of the
g1skel34 layout converts to the same style as the qpos CSV itself; hostile GLBs are refused by
python/motionbricks/glb.py with a message naming the problem."""

import json
import os
import struct
import tempfile
import unittest

import numpy as np

from helpers import run_cli
from motionbricks import constants as C
from motionbricks import style as S
from motionbricks.errors import ConvertError
from motionbricks.glb import read_glb


def walking_qpos(n=60):
    """a synthetic 30 fps walk: root forward at 1 m/s, hips and knees swinging, a slow turn."""
    t = np.arange(n) / 30.0
    q = np.zeros((n, 36))
    q[:, 0] = t
    q[:, 2] = 0.78
    yaw = 0.3 * t
    q[:, 3] = np.cos(yaw / 2)
    q[:, 6] = np.sin(yaw / 2)
    q[:, 7] = 0.4 * np.sin(2 * np.pi * t)      # left hip pitch
    q[:, 10] = 0.6 + 0.3 * np.sin(2 * np.pi * t)  # left knee
    q[:, 13] = -0.4 * np.sin(2 * np.pi * t)    # right hip pitch
    q[:, 16] = 0.6 - 0.3 * np.sin(2 * np.pi * t)  # right knee
    return q


def glb_bytes(root, quats, edit=None):
    """the writer's layout (src/export/glb-writer.cpp), from root [F, 3] and x y z w [F, 34, 4]."""
    f = root.shape[0]
    parents = [j[1] for j in C.SKELETON_JOINTS]
    neutral = np.array([j[2] for j in C.SKELETON_JOINTS])
    binary = bytearray()
    views, accessors = [], []

    def add(a, typ):
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": a.size * 4})
        binary.extend(a.astype("<f4").tobytes())
        accessors.append({"bufferView": len(views) - 1, "componentType": 5126, "count": f, "type": typ})

    add(np.arange(f) / 30.0, "SCALAR")
    add(root, "VEC3")
    for j in range(34):
        add(quats[:, j], "VEC4")
    nodes = []
    for j, (name, p, _) in enumerate(C.SKELETON_JOINTS):
        node = {"name": name, "translation": (neutral[j] - neutral[p]).tolist() if p >= 0 else root[0].tolist()}
        kids = [c for c in range(34) if parents[c] == j]
        if kids:
            node["children"] = kids
        nodes.append(node)
    samplers = [{"input": 0, "output": 1 + k, "interpolation": "LINEAR"} for k in range(35)]
    channels = [{"sampler": 0, "target": {"node": 0, "path": "translation"}}] + [
        {"sampler": 1 + j, "target": {"node": j, "path": "rotation"}} for j in range(34)]
    doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": nodes,
           "buffers": [{"byteLength": len(binary)}], "bufferViews": views, "accessors": accessors,
           "animations": [{"samplers": samplers, "channels": channels}]}
    if edit:
        edit(doc, binary)
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    out = b"glTF" + struct.pack("<II", 2, 28 + len(text) + len(binary))
    return out + struct.pack("<I", len(text)) + b"JSON" + text + struct.pack("<I", len(binary)) + b"BIN\0" + bytes(binary)


def clip_of(q):
    """qpos → (root, local x y z w) through the converter's FK."""
    pos, rot = S.Converter().qpos_to_transforms(q)
    parents = np.array([j[1] for j in C.SKELETON_JOINTS])
    local = rot.copy()
    for j, p in enumerate(parents):
        if p >= 0:
            local[:, j] = np.swapaxes(rot[:, p], -1, -2) @ rot[:, j]
    wxyz = S.matrix_to_quat(local)
    return pos[:, 0], wxyz[..., [1, 2, 3, 0]]


class GlbStyleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_glb_style_equals_csv_style(self):
        q = walking_qpos()
        root, quats = clip_of(q)
        glb = os.path.join(self.d, "animation.glb")
        with open(glb, "wb") as f:
            f.write(glb_bytes(root, quats))
        csv = os.path.join(self.d, "clip.csv")
        np.savetxt(csv, q, delimiter=",", fmt="%.9g")
        common = ["--name", "w", "--speed", "1", "--source-sha256", "0" * 64]
        rc, _, err = run_cli("style", "--glb", glb, "--out", os.path.join(self.d, "g.mbstyle"), *common)
        self.assertEqual(rc, 0, err)
        rc, _, err = run_cli("style", "--qpos-csv", csv, "--quat-order", "wxyz", "--fps", "30",
                             "--out", os.path.join(self.d, "c.mbstyle"), *common)
        self.assertEqual(rc, 0, err)
        _, a = S.read_style(os.path.join(self.d, "g.mbstyle"))
        _, b = S.read_style(os.path.join(self.d, "c.mbstyle"))
        for k in a:
            # float32 storage of the GLB's quaternions: 1e-5 of the CSV's float64 path
            self.assertLess(np.abs(np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)).max(), 1e-4, k)

    def test_cli_needs_one_source(self):
        rc, _, err = run_cli("style", "--name", "w", "--speed", "1", "--out", os.path.join(self.d, "x.mbstyle"))
        self.assertNotEqual(rc, 0)
        self.assertIn("exactly one of --qpos-csv and --glb", err)

    def test_hostile_glbs_are_refused(self):
        root, quats = clip_of(walking_qpos(8))
        good = glb_bytes(root, quats)
        read_glb(good)

        def nan_time(doc, b):
            b[8:12] = struct.pack("<f", float("nan"))

        def backwards(doc, b):
            b[12:16] = struct.pack("<f", 0.01)

        def cycle(doc, b):
            doc["nodes"][1]["children"].append(0)

        cases = [
            ("bad magic", b"glTX" + good[4:], "magic"),
            ("JSON chunk past the file", good[:12] + struct.pack("<I", 1 << 30) + good[16:], "runs past"),
            ("trailing bytes", good[:8] + struct.pack("<I", len(good) + 4) + good[12:] + b"\0" * 4, "does not end"),
            ("a mesh", glb_bytes(root, quats, lambda d, b: d.update(meshes=[])), "node-only"),
            ("wrong node name", glb_bytes(root, quats, lambda d, b: d["nodes"][3].update(name="Hips")), "not a g1skel34 joint"),
            ("node cycle", glb_bytes(root, quats, cycle), "cycle"),
            ("overlapping views", glb_bytes(root, quats, lambda d, b: d["bufferViews"][1].update(byteOffset=16)), "overlap"),
            ("count past the view", glb_bytes(root, quats, lambda d, b: d["accessors"][2].update(count=9)), "do not fit"),
            ("NaN key", glb_bytes(root, quats, nan_time), "not finite"),
            ("non-monotonic keys", glb_bytes(root, quats, backwards), "strictly increasing"),
            ("STEP", glb_bytes(root, quats, lambda d, b: d["animations"][0]["samplers"][4].update(interpolation="STEP")), "LINEAR"),
        ]
        for what, data, needle in cases:
            with self.assertRaisesRegex(ConvertError, needle, msg=what):
                read_glb(data)


if __name__ == "__main__":
    unittest.main()
