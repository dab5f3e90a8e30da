"""Style converter (tools/convert.py style): upstream's clip preprocessing against
../shared/fixtures (agent-small clip library, qpos converter cases), the .mbstyle
layout, resampling and bad inputs."""

import glob
import os
import tempfile
import unittest

import numpy as np

from helpers import require_shared, run_cli
from motionbricks import constants as C
from motionbricks import style as S
from motionbricks.errors import ConvertError

TOL = 1e-5


def wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def write_csv(path, q):
    np.savetxt(path, q, delimiter=",", fmt="%.9g")


class ClipLibraryTest(unittest.TestCase):
    """A style built from a source clip equals upstream's buffers for that mode."""

    @classmethod
    def setUpClass(cls):
        cls.lib = np.load(require_shared("fixtures/agent-small/clip_library.npz"))

    def source(self, m):
        z = self.lib
        i = int(z["mode_source_index"][m])
        off = z["source_offsets"]
        return z["source_qpos"][off[i]:off[i + 1]].astype(np.float64)

    def check(self, m, got, what):
        z = self.lib
        n = int(z["num_frames_per_clip"][m])
        errs = {
            "joint positions": np.abs(got["joint_positions"].reshape(n, 34, 3) - z["global_joint_positions"][m, :n]).max(),
            "rotations": np.abs(got["joint_rotations"].reshape(n, 34, 3, 3) - z["global_joint_rotations"][m, :n]).max(),
            "root positions": np.abs(got["root_positions"] - z["global_root_positions"][m, :n]).max(),
            "headings": np.abs(wrap(got["headings"] - z["global_headings_raw"][m, :n])).max(),
        }
        for k, e in errs.items():
            self.assertLessEqual(e, TOL, "%s mode %d %s: max error %.3g" % (what, m, k, e))
        return max(errs.values())

    def test_every_mode_matches_upstream_buffers(self):
        z = self.lib
        worst = 0.0
        for m in range(15):
            buf = S.style_buffers(self.source(m), int(z["mode_start_frame"][m]), int(z["mode_end_frame"][m]))
            worst = max(worst, self.check(m, buf, "style_buffers"))
            n = int(z["num_frames_per_clip"][m])
            self.assertLessEqual(np.abs(buf["motion_feature"][:, :308] - z["motion_feature"][m, :n, :308]).max(), TOL)
            self.assertLessEqual(np.abs(buf["mujoco_qpos"][:, :3] - z["mujoco_qpos"][m, :n, :3]).max(), TOL)
        print("  clip library: worst buffer error %.2e over 15 modes" % worst)

    def test_cli_builds_the_mode_from_a_csv(self):
        z = self.lib
        with tempfile.TemporaryDirectory() as d:
            for m, order in ((10, "wxyz"), (4, "xyzw"), (7, "wxyz")):
                q = self.source(m)
                if order == "xyzw":
                    q = q[:, [0, 1, 2, 4, 5, 6, 3] + list(range(7, 36))]
                csv = os.path.join(d, "clip%d.csv" % m)
                write_csv(csv, q)
                out = os.path.join(d, "mode%d.mbstyle" % m)
                name = str(z["mode_names"][m])
                rc, _, err = run_cli("style", "--qpos-csv", csv, "--quat-order", order, "--fps", "30",
                                     "--frames", "%d:%d" % (z["mode_start_frame"][m], z["mode_end_frame"][m]),
                                     "--name", name, "--speed", "0.6", "--allowed-tokens", "6-11", "--out", out)
                self.assertEqual(rc, 0, err)
                meta, arrays = S.read_style(out)
                n = int(z["num_frames_per_clip"][m])
                self.assertEqual(meta[C.KEY_COMPONENT], C.COMPONENT_STYLE)
                self.assertEqual(meta[C.KEY_NAME], name)
                self.assertEqual(meta[C.KEY_STYLE_NAME], name)
                self.assertEqual(meta[C.KEY_STYLE_FRAMES], n)
                self.assertAlmostEqual(meta[C.KEY_STYLE_SPEED], 0.6, places=6)
                self.assertEqual(meta[C.KEY_PARAMETER_COUNT], n * (102 + 306 + 3 + 1) + 11)
                self.assertEqual(len(meta[C.KEY_SOURCE_SHA256]), 64)
                self.assertEqual(list(arrays[C.STYLE_ALLOWED_TOKENS]), [1] * 6 + [0] * 5)
                self.check(m, {"joint_positions": arrays[C.STYLE_JOINT_POSITIONS],
                               "joint_rotations": arrays[C.STYLE_JOINT_ROTATIONS],
                               "root_positions": arrays[C.STYLE_ROOT_POSITIONS],
                               "headings": arrays[C.STYLE_HEADINGS]}, "cli")

    def test_resampling_60_fps_to_30(self):
        q30 = self.source(10)[:40]
        # a 60 fps clip whose even frames are the 30 fps clip (midpoints: lerp, normalised quaternion mean)
        mid = (q30[:-1] + q30[1:]) / 2
        qa, qb = q30[:-1, 3:7], q30[1:, 3:7]
        qb = np.where(((qa * qb).sum(1) < 0)[:, None], -qb, qb)
        mid[:, 3:7] = (qa + qb) / np.linalg.norm(qa + qb, axis=1, keepdims=True)
        q60 = np.zeros((2 * len(q30) - 1, 36))
        q60[0::2] = q30
        q60[1::2] = mid
        back = S.resample(q60, 60)
        self.assertEqual(back.shape, q30.shape)
        self.assertLessEqual(np.abs(back - q30).max(), 1e-7)   # quaternions renormalised
        # midpoints of a 15 fps clip interpolate the dropped frames
        up = S.resample(q30[0::2], 15)
        self.assertEqual(up.shape[0], len(q30) - 1)
        self.assertLessEqual(np.abs(up[0::2] - q30[0:-1:2]).max(), 1e-7)


class UpstreamFeatureTest(unittest.TestCase):
    """The pipeline stages against upstream's own converter and representation."""

    def test_stages_match_fixtures(self):
        files = sorted(glob.glob(os.path.join(require_shared("fixtures/qpos"), "fwd_*.npz")))
        self.assertEqual(len(files), 5)
        conv = S.Converter()
        for f in files:
            z = np.load(f)
            pos, rot = conv.qpos_to_transforms(z["qpos"])
            self.assertLessEqual(np.abs(pos - z["joint_pos"]).max(), TOL, f)
            self.assertLessEqual(np.abs(rot - z["joint_rot"]).max(), TOL, f)
            feat = S.motion_features(pos, rot)
            # root, ric and rotations; velocities are fps × float32 position noise upstream
            self.assertLessEqual(np.abs(feat[:, :308] - z["feat414"][:, :308]).max(), TOL, f)
            scale = np.maximum(1.0, np.abs(z["feat414"][:, 308:410]))
            self.assertLessEqual((np.abs(feat[:, 308:410] - z["feat414"][:, 308:410]) / scale).max(), 1e-4, f)
            np.testing.assert_array_equal(feat[:, 410:], z["feat414"][:, 410:])
            s = int(z["slice_start"])
            cfh = S.change_first_heading(z["feat414"][s:].astype(np.float64))
            self.assertLessEqual(np.abs(cfh[:, :308] - z["feat414_slice_first_heading0"][:, :308]).max(), TOL, f)
            q = conv.features_to_qpos(z["feat414"].astype(np.float64))
            want = z["qpos_from_feat414"]
            self.assertLessEqual(np.abs(q[:, :3] - want[:, :3]).max(), TOL, f)
            dq = np.minimum(np.abs(q[:, 3:7] - want[:, 3:7]).max(1), np.abs(q[:, 3:7] + want[:, 3:7]).max(1))
            self.assertLessEqual(dq.max(), TOL, f)
            self.assertLessEqual(np.abs(wrap(q[:, 7:] - want[:, 7:])).max(), TOL, f)

    def test_branch_rule(self):
        half_x = np.diag([1.0, -1.0, -1.0])
        np.testing.assert_array_equal(S.matrix_to_quat(half_x), [0.0, 1.0, 0.0, 0.0])
        q = np.array([-0.2, 0.9, 0.3, 0.2])
        q /= np.linalg.norm(q)
        np.testing.assert_allclose(S.matrix_to_quat(S.quat_to_matrix(q)), q, atol=1e-12)   # w < 0 kept


class BadInputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        q = np.zeros((20, 36))
        q[:, 2] = 0.79
        q[:, 3] = 1.0
        self.csv = os.path.join(self.d, "ok.csv")
        write_csv(self.csv, q)
        self.out = os.path.join(self.d, "out.mbstyle")

    def tearDown(self):
        self.tmp.cleanup()

    def run_style(self, *extra, csv=None):
        args = {"--qpos-csv": csv or self.csv, "--quat-order": "wxyz", "--fps": "30", "--name": "s",
                "--speed": "1", "--out": self.out}
        flat = []
        over = dict(zip(extra[0::2], extra[1::2]))
        args.update(over)
        for k, v in args.items():
            if v is not None:
                flat += [k, v]
        return run_cli("style", *flat)

    def test_standing_clip_converts(self):
        rc, _, err = self.run_style()
        self.assertEqual(rc, 0, err)
        meta, arrays = S.read_style(self.out)
        self.assertEqual(meta[C.KEY_STYLE_FRAMES], 20)
        self.assertLessEqual(np.abs(arrays[C.STYLE_HEADINGS]).max(), 1e-6)

    def test_magnitudes_are_bounded(self):
        # the writer applies the runtime's bounds (src/format/style.h), in float32 as the reader does
        q = np.zeros((10, 36))
        q[:, 2] = 0.79
        q[:, 3] = 1.0
        buffers = S.style_buffers(q)
        mask = np.ones(11, dtype=np.int32)
        ok = os.path.join(self.d, "ok.mbstyle")
        edge = {k: np.array(v, copy=True) for k, v in buffers.items()}
        edge["joint_positions"][3, 5, 1] = -C.STYLE_MAX_JOINT_OFFSET
        edge["root_positions"][2, 0] = C.STYLE_MAX_ROOT_DISTANCE
        edge["headings"][4] = np.float32(C.STYLE_MAX_HEADING)
        S.write_style(ok, "edge", C.STYLE_MAX_SPEED, edge, mask, "0" * 64)
        for what, key, idx, value, needle in (
                ("joint 1e38", "joint_positions", (3, 5, 1), 1e38, "global_joint_positions"),
                ("joint 5.5 m off", "joint_positions", (3, 5, 1), 5.5, "global_joint_positions"),
                ("root 1e38", "root_positions", (2, 2), 1e38, "global_root_positions"),
                ("heading 1e38", "headings", (4,), 1e38, "global_headings"),
                ("heading -13 rad", "headings", (4,), -13.0, "global_headings")):
            b = {k: np.array(v, copy=True) for k, v in buffers.items()}
            b[key][idx] = value
            with self.assertRaisesRegex(ConvertError, needle, msg=what):
                S.write_style(self.out, "bad", 1.0, b, mask, "0" * 64)
        for speed in (10.5, 3.4e38):
            with self.assertRaisesRegex(ConvertError, "within 0..10 m/s"):
                S.write_style(self.out, "bad", speed, buffers, mask, "0" * 64)
        self.assertFalse(os.path.exists(self.out))

    def test_rejected(self):
        bad_csv = os.path.join(self.d, "bad.csv")
        with open(bad_csv, "w") as f:
            f.write(",".join(["0"] * 35) + "\n")
        nan_csv = os.path.join(self.d, "nan.csv")
        q = np.zeros((10, 36))
        q[:, 3] = 1
        q[4, 9] = np.nan
        write_csv(nan_csv, q)
        zq_csv = os.path.join(self.d, "zq.csv")
        write_csv(zq_csv, np.zeros((10, 36)))
        far_csv = os.path.join(self.d, "far.csv")
        q = np.zeros((10, 36))
        q[:, 3] = 1
        q[:, 0] = np.linspace(0, 2e4, 10)   # the root travels 20 km in a third of a second
        write_csv(far_csv, q)
        cases = [
            ("35 columns", ("--qpos-csv", bad_csv), "36"),
            ("NaN", ("--qpos-csv", nan_csv), "non-finite"),
            ("zero quaternion", ("--qpos-csv", zq_csv), "zero root quaternion"),
            ("missing file", ("--qpos-csv", os.path.join(self.d, "nope.csv")), "nope.csv"),
            ("short slice", ("--frames", "5:7"), "at least 4"),
            ("bad slice", ("--frames", "a:b"), "--frames"),
            ("tokens out of range", ("--allowed-tokens", "4-11"), "outside"),
            ("tokens garbage", ("--allowed-tokens", "x"), "bad range"),
            ("negative speed", ("--speed", "-1"), "speed"),
            ("NaN speed", ("--speed", "nan"), "speed"),
            ("huge speed", ("--speed", "1e300"), "speed"),
            ("speed over 10 m/s", ("--speed", "10.5"), "within 0..10 m/s"),
            ("root travels 20 km", ("--qpos-csv", far_csv), "global_root_positions"),
            ("negative index", ("--index", "-1"), "index"),
            ("zero fps", ("--fps", "0"), "--fps"),
            ("bad source hash", ("--source-sha256", "ABC"), "sha256"),
            ("empty name", ("--name", ""), "name"),
            ("missing directory", ("--out", os.path.join(self.d, "no", "x.mbstyle")), "directory"),
        ]
        for what, extra, needle in cases:
            rc, _, err = self.run_style(*extra)
            self.assertEqual(rc, 2, "%s: exit %d, stderr %s" % (what, rc, err))
            self.assertIn(needle, err, what)
            self.assertEqual(err.count("\n"), 1, "%s: one line: %r" % (what, err))
        self.assertFalse(os.path.exists(self.out))


class LibraryTest(unittest.TestCase):
    """tools/convert.py styles: the synthetic clip checkpoint (restricted unpickler) and its
    .npz twin → 15 styles equal to the library the agent uses (corrected headings)."""

    def test_checkpoint_and_npz_give_the_agent_library(self):
        ckpt = require_shared("fixtures/agent-small/G1-clip-synthetic.ckpt")
        npz = require_shared("fixtures/agent-small/clip_library.npz")
        z = np.load(npz)
        self.assertEqual([str(n) for n in z["mode_names"]], [s[0] for s in C.STYLE_RELEASE])
        with tempfile.TemporaryDirectory() as d:
            shas = []
            for src in (ckpt, npz):
                out = os.path.join(d, os.path.basename(src) + ".styles")
                rc, _, err = run_cli("styles", "--clips", src, "--source-sha256", "0" * 64, "--out", out)
                self.assertEqual(rc, 0, err)
                with open(os.path.join(out, "manifest.json")) as f:
                    import json
                    manifest = json.load(f)
                self.assertEqual(manifest["format"], "motionbricks-style-bundle-v1")
                self.assertEqual(len(manifest["styles"]), 15)
                shas.append({k: v["sha256"] for k, v in manifest["styles"].items()})
                for m, (name, speed, _) in enumerate(C.STYLE_RELEASE):
                    meta, a = S.read_style(os.path.join(out, name + C.STYLE_SUFFIX))
                    n = int(z["num_frames_per_clip"][m])
                    self.assertEqual(meta[C.KEY_STYLE_INDEX], m)
                    self.assertEqual(meta[C.KEY_STYLE_FRAMES], n)
                    self.assertAlmostEqual(meta[C.KEY_STYLE_SPEED] * 2, float(z["mode_avg_root_vel"][m]), places=6)
                    np.testing.assert_array_equal(a[C.STYLE_ALLOWED_TOKENS], z["mode_allowed_pred_num_tokens"][m])
                    np.testing.assert_array_equal(a[C.STYLE_HEADINGS], z["global_headings"][m, :n])
                    np.testing.assert_array_equal(a[C.STYLE_JOINT_POSITIONS], z["global_joint_positions"][m, :n])
                    np.testing.assert_array_equal(a[C.STYLE_JOINT_ROTATIONS],
                                                  z["global_joint_rotations"][m, :n].reshape(n, 34, 9))
                    np.testing.assert_array_equal(a[C.STYLE_ROOT_POSITIONS], z["global_root_positions"][m, :n])
            self.assertEqual(shas[0], shas[1])   # same bytes from either container

    def test_bad_library(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.npz")
            np.savez(bad, num_frames_per_clip=np.zeros(3, dtype=np.int32))
            rc, _, err = run_cli("styles", "--clips", bad, "--out", os.path.join(d, "o"))
            self.assertEqual(rc, 2)
            self.assertIn("lacks", err)
            junk = os.path.join(d, "junk.ckpt")
            with open(junk, "wb") as f:
                f.write(b"not a checkpoint")
            rc, _, err = run_cli("styles", "--clips", junk, "--out", os.path.join(d, "o"))
            self.assertEqual(rc, 2)
            self.assertIn("junk.ckpt", err)


if __name__ == "__main__":
    unittest.main()
