"""`convert.py random-bundle`: exact architecture, published sizes at full size,
deterministic seeded weights initialised as the fixtures README describes."""

import json
import os
import tempfile
import time
import unittest

import numpy as np

from helpers import read_bytes, run_cli
from motionbricks import architecture
from motionbricks import constants as C
from motionbricks.gguf import GGUFFile
from motionbricks.names import compact_name
from motionbricks.random_bundle import sincos_table


class RandomBundleSmallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "a")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--seed", "7", "--out", cls.out, "--quiet")
        assert rc == 0, err

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_inventory(self):
        m = json.loads(read_bytes(os.path.join(self.out, "manifest.json")))
        for role in C.LEARNED_COMPONENTS:
            shapes = architecture.expected_shapes(role, architecture.PRESET_SMALL[role])
            e = m["components"][role]
            self.assertEqual(e["tensor_count"], len(shapes))
            self.assertEqual(e["parameter_count"], architecture.parameter_count(shapes))
            with GGUFFile(os.path.join(self.out, e["path"])) as g:
                got = {t["name"]: tuple(t["shape"]) for t in g.tensors}
                self.assertEqual(got, {compact_name(n): s for n, s in shapes.items()})
                self.assertEqual(g.meta.get(C.KEY_N_HEAD), {"pose": 4, "root": 4}.get(role))
                self.assertIsNone(g.meta.get(C.KEY_DILATION_GROWTH))
        self.assertEqual(m["components"]["pose"]["parameter_count"], 1280464)
        self.assertEqual(m["components"]["root"]["parameter_count"], 750849)
        self.assertEqual(m["components"]["vq-decoder"]["parameter_count"], 219533)

    def test_initialisation(self):
        with GGUFFile(os.path.join(self.out, "vq-decoder.gguf")) as vq, \
                GGUFFile(os.path.join(self.out, "pose.gguf")) as pose, \
                GGUFFile(os.path.join(self.out, "root.gguf")) as root:
            cb = vq.tensor(C.NAME_CODEBOOK)
            emb = pose.tensor(C.POSE_TOKEN_EMB).reshape(8, 11, -1)
            np.testing.assert_array_equal(emb[:, :10], cb, "token rows are the codebook")
            np.testing.assert_allclose(emb[:, 10], cb.mean(axis=1), rtol=0, atol=1e-6, err_msg="[MASK] row")
            self.assertAlmostEqual(float(cb.std()), 1.0, delta=0.15)
            np.testing.assert_array_equal(pose.tensor(C.POSE_POSITION_EMB), sincos_table(16, 128))
            np.testing.assert_array_equal(root.tensor(C.ROOT_POSITION_EMB), sincos_table(16, 64))
            ln = pose.tensor("_transformer_model.layers.0.norm1.weight")
            self.assertAlmostEqual(float(ln.mean()), 1.0, delta=0.02)
            self.assertAlmostEqual(float(ln.std()), 0.05, delta=0.015)
            w = pose.tensor("_transformer_model.layers.1.linear2.weight")       # fan_in 2048
            self.assertAlmostEqual(float(w.std()) * np.sqrt(2048), 1.0, delta=0.02)
            conv = root.tensor("_conv_output.model.0.weight")                  # fan_in 64 * 3
            self.assertAlmostEqual(float(conv.std()) * np.sqrt(192), 1.0, delta=0.05)
            b = root.tensor("_conv_output.model.0.bias")
            self.assertLess(float(np.abs(b).max()), 0.3)
            e = root.tensor(C.ROOT_PROJ_INPUT_NUM_TOKENS)
            self.assertAlmostEqual(float(e.std()), 1.0, delta=0.15)

    def test_deterministic_and_seeded(self):
        again = os.path.join(self.tmp.name, "b")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--seed", "7", "--out", again, "--quiet")
        self.assertEqual(rc, 0, err)
        other = os.path.join(self.tmp.name, "c")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--seed", "8", "--out", other, "--quiet")
        self.assertEqual(rc, 0, err)
        for name in ["manifest.json"] + [r + ".gguf" for r in C.COMPONENTS]:
            self.assertEqual(read_bytes(os.path.join(again, name)), read_bytes(os.path.join(self.out, name)), name)
        for r in C.LEARNED_COMPONENTS:
            self.assertNotEqual(read_bytes(os.path.join(other, r + ".gguf")),
                                read_bytes(os.path.join(self.out, r + ".gguf")), r)

    def test_round_trip_through_safetensors(self):
        # exporting the random weights as upstream-style safetensors and converting them back,
        # with the same provenance, reproduces the bundle byte for byte
        from motionbricks.safetensors import write_safetensors
        src = os.path.join(self.tmp.name, "src")
        os.makedirs(src)
        prov = []
        files = {}
        for role, key, prefix in (("pose", "pose", C.PREFIX_BACKBONE), ("root", "root", C.PREFIX_BACKBONE),
                                  ("vq-decoder", "vqvae", C.PREFIX_VQVAE)):
            with GGUFFile(os.path.join(self.out, role + ".gguf")) as g:
                sd = {prefix + n: np.array(g.tensor(compact_name(n)))
                      for n in architecture.expected_shapes(role, architecture.PRESET_SMALL[role])}
                prov += ["--source-sha256", "%s=%s" % (role, g.meta[C.KEY_SOURCE_SHA256])]
            files[key] = os.path.join(src, key + ".safetensors")
            write_safetensors(files[key], sd)
        with GGUFFile(os.path.join(self.out, "support.gguf")) as g:
            stats = os.path.join(src, "stats.safetensors")
            write_safetensors(stats, {"mean": np.array(g.tensor(C.SUPPORT_MOTION_MEAN)),
                                      "std": np.array(g.tensor(C.SUPPORT_MOTION_STD))})
            prov += ["--source-sha256", "support=" + g.meta[C.KEY_SOURCE_SHA256]]
        out = os.path.join(self.tmp.name, "round-trip")
        rc, _, err = run_cli("bundle", "--pose", files["pose"], "--root", files["root"], "--vqvae", files["vqvae"],
                             "--stats", stats, "--pose-heads", "4", "--root-heads", "4", "--out", out, "--quiet",
                             *prov)
        self.assertEqual(rc, 0, err)
        for name in ["manifest.json"] + [r + ".gguf" for r in C.COMPONENTS]:
            self.assertEqual(read_bytes(os.path.join(out, name)), read_bytes(os.path.join(self.out, name)), name)

    def test_options(self):
        out = os.path.join(self.tmp.name, "d")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--seed", "7", "--out", out, "--quiet",
                             "--root-heads", "16", "--dilation-growth", "2")
        self.assertEqual(rc, 0, err)
        with GGUFFile(os.path.join(out, "root.gguf")) as g:
            self.assertNotIn(C.KEY_N_HEAD, g.meta)
            self.assertEqual(g.meta[C.KEY_DILATION_GROWTH], 2)
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--out", out, "--pose-heads", "5")
        self.assertEqual(rc, 2)
        self.assertIn("not divisible by 5 heads", err)
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--out", out, "--seed", "-1")
        self.assertEqual(rc, 2)
        self.assertIn("--seed", err)

    def test_option_errors(self):
        # the checks shared with `bundle`: statistics options and positive hyper-parameters
        out = os.path.join(self.tmp.name, "e")
        for extra, message in ((["--stats", "s.json", "--mean", "m.npy"], "give either --stats FILE"),
                               (["--mean", "m.npy"], "--mean and --std go together"),
                               (["--std", "s.npy"], "--mean and --std go together"),
                               (["--root-heads", "0"], "--root-heads must be positive (got 0)"),
                               (["--dilation-growth", "-1"], "--dilation-growth must be positive (got -1)")):
            rc, _, err = run_cli("random-bundle", "--preset", "small", "--out", out, "--quiet", *extra)
            self.assertEqual(rc, 2, extra)
            self.assertIn(message, err)
            self.assertNotIn("Traceback", err)
            self.assertFalse(os.path.exists(out), "nothing written")


class RandomBundleFullTest(unittest.TestCase):
    def test_published_sizes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "full")
            t0 = time.monotonic()
            rc, _, err = run_cli("random-bundle", "--preset", "full", "--seed", "1", "--out", out)
            elapsed = time.monotonic() - t0
            self.assertEqual(rc, 0, err)
            self.assertIn("writing pose.gguf 100%", err, "progress is shown")
            m = json.loads(read_bytes(os.path.join(out, "manifest.json")))
            self.assertEqual(m["inference_parameter_count"], C.RELEASE_INFERENCE_PARAMETER_COUNT)
            for role in C.COMPONENTS:
                e = m["components"][role]
                self.assertEqual(e["tensor_count"], C.RELEASE_TENSOR_COUNT[role], role)
                self.assertEqual(e["parameter_count"], C.RELEASE_PARAMETER_COUNT[role], role)
                self.assertEqual(os.path.getsize(os.path.join(out, e["path"])), C.RELEASE_FILE_BYTES[role], role)
                with GGUFFile(os.path.join(out, e["path"])) as g:
                    self.assertNotIn(C.KEY_N_HEAD, g.meta, "release heads are not written")
                    self.assertNotIn(C.KEY_DILATION_GROWTH, g.meta)
            self.assertEqual(os.path.getsize(os.path.join(out, "manifest.json")), 1101, "published manifest size")
            with GGUFFile(os.path.join(out, "root.gguf")) as g:
                names = [t["name"] for t in g.tensors]
                for il in range(3):
                    self.assertIn("_root_token_transformer_model.layers.%d.attn.out_proj.weight" % il, names)
                t = {x["name"]: x for x in g.tensors}
                self.assertEqual(t["_conv_output.model.6.weight"]["ne"], [3, 512, 5])
                self.assertEqual(t["_position_emb.embed"]["ne"], [512, 1, 16])
            with GGUFFile(os.path.join(out, "pose.gguf")) as g:
                t = {x["name"]: x for x in g.tensors}
                self.assertEqual(t["_pose_token_emb.weight"]["ne"], [32, 88])
                self.assertEqual(t["_proj_pose_output_logit.weight"]["ne"], [1024, 80])
            with GGUFFile(os.path.join(out, "vq-decoder.gguf")) as g:
                t = {x["name"]: x for x in g.tensors}
                self.assertEqual(t["quantizer.vq._codebook.embed"]["ne"], [32, 10, 8])
                self.assertEqual(t["decoder.model.6.weight"]["ne"], [3, 512, 413])
            print("\nfull random bundle written in %.1f s" % elapsed)
            self.assertLess(elapsed, 120)


if __name__ == "__main__":
    unittest.main()
