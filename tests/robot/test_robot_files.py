"""qpos CSV / NPZ files and SONIC reference folders, read back by readers written from the formats'
text: docs/FORMATS.md for the qpos files, gear_sonic_deploy's MotionDataReader (motion_data_reader.hpp
ReadFromCSV / ReadMetadata / ReadCSV / ReadCSV3D) for the folders."""
import os
import re
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

import numpy as np

import robot_env as R

sys.path.insert(0, os.path.join(R.SRC, "python"))
from motionbricks.style import read_style  # noqa: E402

ENV = None
QPOS = None       # the plan's 30 fps qpos
SCRIPT = None
SHARED = os.environ.get("MB_SHARED_DIR", os.path.join(R.SRC, "..", "shared"))


def setUpModule():
    global ENV, QPOS, SCRIPT
    ENV = R.Env()
    SCRIPT = ENV.script("files.json", 4)
    QPOS = ENV.plan_qpos(SCRIPT)


def tearDownModule():
    ENV.close()


def slurp(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def read_csv(path):
    """our qpos CSV: optional header of names, 36 numbers a row → (names or None, [F, 36])"""
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    names = None
    if lines and lines[0][:1].isalpha():
        names = lines[0].split(",")
        lines = lines[1:]
    return names, np.array([[float(c) for c in ln.split(",")] for ln in lines])


def to_wxyz(q, order):
    q = q.copy()
    if order == "xyzw":
        q[:, 3:7] = q[:, [6, 3, 4, 5]]
    return q


class QposFiles(unittest.TestCase):
    def write(self, ext, rate, order, header="yes"):
        out = ENV.path("q-%s-%s-%s.%s" % (rate, order, header, ext))
        r = ENV.run("plan", "--model", ENV.path("b"), *ENV.styles, "--script", SCRIPT, "--output", out,
                    "--qpos-rate", str(rate), "--quat-order", order, "--qpos-header", header)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def test_round_trips_both_orders_and_rates(self):
        for rate in (30, 50):
            want = QPOS if rate == 30 else R.resample50(QPOS)
            for order in ("wxyz", "xyzw"):
                with self.subTest(rate=rate, order=order, fmt="csv"):
                    names, q = read_csv(self.write("csv", rate, order))
                    self.assertEqual(len(names), 36)
                    self.assertEqual(names[3 if order == "wxyz" else 6], "root_qw")
                    self.assertEqual(names[7], "left_hip_pitch_joint")
                    np.testing.assert_allclose(to_wxyz(q, order), want, atol=1e-5, rtol=0)
                with self.subTest(rate=rate, order=order, fmt="npz"):
                    z = np.load(self.write("npz", rate, order))
                    self.assertEqual(sorted(z.files), ["fps", "joint_names", "qpos", "quat_order"])
                    self.assertEqual(int(z["fps"]), rate)
                    self.assertEqual(str(z["quat_order"]), order)
                    self.assertEqual(list(z["joint_names"][:2]), ["left_hip_pitch_joint", "left_hip_roll_joint"])
                    np.testing.assert_allclose(to_wxyz(z["qpos"], order), want, atol=1e-5, rtol=0)
        names, q = read_csv(self.write("csv", 30, "wxyz", "no"))
        self.assertIsNone(names)
        np.testing.assert_array_equal(q.astype(np.float32), QPOS.astype(np.float32))

    def test_our_readers_take_our_files(self):
        # stream-zmq --qpos reads through the library's readers: a file that reads wrong fails
        for ext, order in (("csv", "xyzw"), ("npz", "xyzw"), ("csv", "wxyz")):
            f = self.write(ext, 30, order)
            r = ENV.run("export-sonic", "--qpos", f, "--out", ENV.path("from-" + ext + order))
            self.assertEqual(r.returncode, 0, r.stderr)
        a = slurp(ENV.path("from-csvxyzw", "joint_pos.csv"))
        self.assertEqual(a, slurp(ENV.path("from-npzxyzw", "joint_pos.csv")))
        self.assertEqual(a, slurp(ENV.path("from-csvwxyz", "joint_pos.csv")))

    def test_convert_style_reimports_our_csv(self):
        # the style made from our CSV (with its header, either order) is the style of the plan's qpos
        plain = ENV.path("plain.csv")
        np.savetxt(plain, QPOS, delimiter=",", fmt="%.9g")
        outs = []
        for src, order in ((plain, "wxyz"), (self.write("csv", 30, "wxyz"), "wxyz"), (self.write("csv", 30, "xyzw"), "xyzw")):
            out = src + ".mbstyle"
            r = subprocess.run([R.PY, os.path.join(R.SRC, "tools", "convert.py"), "style", "--qpos-csv", src, "--quat-order", order,
                                "--fps", "30", "--name", "clip", "--speed", "1", "--source-sha256", "0" * 64, "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            outs.append(read_style(out))
        # numpy's BLAS may round differently with the arrays' alignment, so the last bits of the
        # converter's float64 math can differ from run to run: equal metadata, arrays within 1e-6
        for meta, arrays in outs[1:]:
            self.assertEqual(meta, outs[0][0])
            self.assertEqual(sorted(arrays), sorted(outs[0][1]))
            for k, a in arrays.items():
                np.testing.assert_allclose(a, outs[0][1][k], atol=1e-6, rtol=0, err_msg=k)
        # a header that disagrees with --quat-order is an error
        r = subprocess.run([R.PY, os.path.join(R.SRC, "tools", "convert.py"), "style", "--qpos-csv", self.write("csv", 30, "xyzw"),
                            "--quat-order", "wxyz", "--fps", "30", "--name", "c", "--speed", "1", "--out", ENV.path("x.mbstyle")],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("header says xyzw", r.stderr)

    def test_bad_input(self):
        def bad(name, text):
            p = ENV.path(name)
            with open(p, "w" if isinstance(text, str) else "wb") as f:
                f.write(text)
            return p
        row = ",".join(["0"] * 3 + ["1"] + ["0"] * 32)
        cases = [
            ("missing file", ENV.path("nope.csv"), 1, "nope.csv"),
            ("35 columns", bad("c35.csv", ",".join(["0"] * 35) + "\n"), 2, "35 columns"),
            ("NaN", bad("nan.csv", row + "\n" + row.replace("0", "nan", 1) + "\n"), 2, "non-finite"),
            ("not a number", bad("word.csv", row + "\n" + row.replace("0", "x1", 1) + "\n"), 2, "not a number"),
            ("zero quaternion", bad("zq.csv", ",".join(["0"] * 36) + "\n"), 2, "zero root quaternion"),
            ("empty", bad("empty.csv", ""), 2, "no qpos rows"),
            ("bad header", bad("hdr.csv", ",".join(["a"] * 36) + "\n" + row + "\n"), 2, "root_qw"),
            ("npz garbage", bad("g.npz", b"PK\x03\x04garbage"), 2, "zip"),
            ("npz compressed", None, 2, "np.savez"),
            ("npz 50 Hz", None, 2, "50 fps"),
        ]
        comp = ENV.path("comp.npz")
        np.savez_compressed(comp, qpos=QPOS, fps=np.int64(30), quat_order=np.array("wxyz"), joint_names=np.array(["a"] * 29))
        cases[8] = ("npz compressed", comp, 2, "np.savez")
        cases[9] = ("npz 50 Hz", self.write("npz", 50, "wxyz"), 2, "50 fps")
        for what, path, code, msg in cases:
            with self.subTest(what):
                r = ENV.run("export-sonic", "--qpos", path, "--out", ENV.path("never"))
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertIn(msg, r.stderr)
                self.assertFalse(os.path.exists(ENV.path("never")))


# ---- the deploy's reader, re-written from motion_data_reader.hpp ----------------------------------

def deploy_read_csv(path):
    """ReadCSV (motion_data_reader.hpp:961-990): the first line is skipped as a header; every cell that
    std::stod reads is kept; returns (flat values, lines after the header)"""
    data, lines = [], 0
    with open(path) as f:
        for i, line in enumerate(f):
            if i == 0:
                continue
            for cell in line.rstrip("\n").split(","):
                m = re.match(r"\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|nan|inf)", cell, re.I)
                if m:
                    data.append(float(m.group(0)))
            lines += 1
    return np.array(data), lines


def deploy_read_csv3d(path, coords):
    """ReadCSV3D (:994-1024): rows of equal size, a multiple of `coords`"""
    flat, n = deploy_read_csv(path)
    assert n > 0 and flat.size % n == 0, "inconsistent line sizes in " + path
    assert (flat.size // n) % coords == 0, "unexpected element count per line in " + path
    return flat.reshape(n, -1, coords)


def deploy_read_metadata(path):
    """ReadMetadata (:933-958): the line after 'Body part indexes:' holds the numbers; 'Total timesteps:'"""
    idx, steps = [], None
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if "Body part indexes:" in line and i + 1 < len(lines):
            idx = [int(x) for x in re.findall(r"\d+", lines[i + 1])]
        elif "Total timesteps:" in line:
            steps = int(line.split()[2])
    return idx, steps


def deploy_load(folder):
    """ReadFromCSV (:679-900) for one folder, with its consistency checks as assertions"""
    idx, steps = deploy_read_metadata(os.path.join(folder, "metadata.txt"))
    assert idx, "could not read metadata"
    jp, n = deploy_read_csv(os.path.join(folder, "joint_pos.csv"))
    jv, nv = deploy_read_csv(os.path.join(folder, "joint_vel.csv"))
    assert n == nv and jp.size == jv.size, "joint frame counts"
    out = {"body_indexes": idx, "timesteps": steps, "joint_pos": jp.reshape(n, -1), "joint_vel": jv.reshape(n, -1)}
    for name, coords in (("body_pos", 3), ("body_quat", 4), ("body_lin_vel", 3), ("body_ang_vel", 3)):
        a = deploy_read_csv3d(os.path.join(folder, name + ".csv"), coords)
        assert a.shape[0] == n, "frame count mismatch in " + name
        out[name] = a
    assert out["body_lin_vel"].shape == out["body_pos"].shape and out["body_ang_vel"].shape == out["body_pos"].shape
    return out


def qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def qrot(q, v):
    return qmul(qmul(q, np.r_[0, v]), q * np.array([1, -1, -1, -1]))[1:]


def mjcf_fk(xml_path, qpos):
    """world (pos, quat) of every body of an MJCF for one qpos, in document order (fk.cpp's recursion)"""
    root = ET.parse(xml_path).getroot().find("worldbody").find("body")
    out = []
    hinge = [7]

    def walk(body, p, q, first):
        if not first:
            pos = np.array([float(x) for x in body.get("pos", "0 0 0").split()])
            rest = np.array([float(x) for x in body.get("quat", "1 0 0 0").split()])
            rest /= np.linalg.norm(rest)
            axis = np.array([float(x) for x in body.find("joint").get("axis", "0 0 1").split()])
            a = qpos[hinge[0]]
            hinge[0] += 1
            p = p + qrot(q, pos)
            q = qmul(qmul(q, rest), np.r_[np.cos(a / 2), np.sin(a / 2) * axis / np.linalg.norm(axis)])
        out.append((p, q))
        for child in body.findall("body"):
            walk(child, p, q, False)

    q0 = qpos[3:7] / np.linalg.norm(qpos[3:7])
    walk(root, qpos[:3], q0, True)
    return out


class SonicFolder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = ENV.path("ref", "walk_001")
        r = ENV.run("export-sonic", SCRIPT, "--model", ENV.path("b"), *ENV.styles, "--out", cls.dir)
        assert r.returncode == 0, r.stderr
        cls.m = deploy_load(cls.dir)
        cls.want = R.resample50(QPOS)

    def test_layout(self):
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(["joint_pos.csv", "joint_vel.csv", "body_pos.csv", "body_quat.csv",
                                                               "body_lin_vel.csv", "body_ang_vel.csv", "metadata.txt", "info.txt"]))
        self.assertEqual(self.m["body_indexes"], R.BODY_INDEXES)
        T = len(self.want)
        self.assertEqual(self.m["timesteps"], T)
        self.assertEqual(self.m["joint_pos"].shape, (T, 29))
        self.assertEqual(self.m["body_pos"].shape, (T, 14, 3))
        self.assertEqual(self.m["body_quat"].shape, (T, 14, 4))
        with open(os.path.join(self.dir, "metadata.txt")) as f:
            self.assertTrue(f.read().startswith("Metadata for: walk_001\n" + "=" * 30 + "\n"))

    def test_round_trip_to_the_plans_50hz_qpos(self):
        # body 0 is the pelvis: root position and quaternion; joints back through the index map
        q = np.zeros_like(self.want)
        q[:, :3] = self.m["body_pos"][:, 0]
        q[:, 3:7] = self.m["body_quat"][:, 0]
        q[:, 7 + np.array(R.MUJOCO_OF_ISAACLAB)] = self.m["joint_pos"]
        sign = np.sign(np.sum(q[:, 3:7] * self.want[:, 3:7], axis=1))
        q[:, 3:7] *= sign[:, None]
        want = self.want.copy()
        want[:, 3:7] /= np.linalg.norm(want[:, 3:7], axis=1, keepdims=True)
        np.testing.assert_allclose(q, want, atol=1e-5, rtol=0)
        np.testing.assert_allclose(self.m["joint_vel"], R.joint_vel(self.m["joint_pos"]), atol=1e-5 * 50, rtol=0)

    def test_bodies_are_the_mjcf_forward_kinematics(self):
        # the deploy's own robot model (explicit joint axes), through --mjcf, against an FK written here
        xml = os.path.join(SHARED, "data", "upstream", "mjcf", "g1_29dof.xml")
        if not os.path.exists(xml):
            self.skipTest("skipped: %s not found" % xml)
        out = ENV.path("ref", "deploy_model")
        r = ENV.run("export-sonic", "--qpos", ENV.path("files.json.npz"), "--out", out, "--mjcf", xml)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = deploy_load(out)
        # MuJoCo body of IsaacLab body i: mujoco_to_isaaclab[i - 1] + 1 (motion_data_reader.hpp:151-158)
        mj = [0 if i == 0 else R.MUJOCO_OF_ISAACLAB[i - 1] + 1 for i in R.BODY_INDEXES]
        for t in range(0, len(self.want), 17):
            fk = mjcf_fk(xml, self.want[t])
            for b, k in enumerate(mj):
                np.testing.assert_allclose(m["body_pos"][t, b], fk[k][0], atol=1e-5)
                q = m["body_quat"][t, b]
                np.testing.assert_allclose(q * np.sign(np.dot(q, fk[k][1])), fk[k][1], atol=1e-5)

    def test_builtin_model_is_motionbricks_g1_xml(self):
        xml = os.path.join(SHARED, "data", "upstream", "mjcf", "g1.xml")
        if not os.path.exists(xml):
            self.skipTest("skipped: %s not found" % xml)
        out = ENV.path("ref", "g1_file")
        r = ENV.run("export-sonic", "--qpos", ENV.path("files.json.npz"), "--out", out, "--mjcf", xml)
        self.assertEqual(r.returncode, 0, r.stderr)
        for f in ("body_pos.csv", "body_quat.csv", "joint_pos.csv"):
            self.assertEqual(slurp(os.path.join(out, f)), slurp(os.path.join(self.dir, f)), f)

    def test_velocities_follow_the_deploy_rule(self):
        # ComputeGlobalVelocities (motion_data_reader.hpp:168-250) on the folder's own positions
        p, T = self.m["body_pos"], len(self.want)
        v = np.zeros_like(p)
        for f in range(T):
            f0, f1 = max(f - 1, 0), min(T - 1, f + 1)
            v[f] = (p[f1] - p[f0]) * 50 / max(1, f1 - f0)
        k = np.exp(-0.5 / 4 * np.arange(-8, 9) ** 2)
        k /= k.sum()
        pad = np.concatenate([np.repeat(v[:1], 8, 0), v, np.repeat(v[-1:], 8, 0)])
        filt = sum(k[i] * pad[i:i + T] for i in range(17))
        np.testing.assert_allclose(self.m["body_lin_vel"], filt, atol=1e-5)

    def test_mjcf_option_and_bad_mjcf(self):
        bad = ENV.path("bad.xml")
        with open(bad, "w") as f:
            f.write("<mujoco><worldbody>")
        r = ENV.run("export-sonic", "--qpos", ENV.path("files.json.npz"), "--out", ENV.path("r2"), "--mjcf", bad)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("bad.xml", r.stderr)


if __name__ == "__main__":
    unittest.main()
