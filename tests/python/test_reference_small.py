"""The reduced-size reference weights (../shared/fixtures/reference-small) convert
with their head counts, keep exactly the inference tensors bit for bit and report
the parameter counts of model_config.json; the full-size inventory matches the
upstream tensor list."""

import json
import os
import tempfile
import unittest

import numpy as np

from helpers import read_bytes, require_shared, run_cli
from motionbricks import architecture
from motionbricks import constants as C
from motionbricks.gguf import GGUFFile
from motionbricks.names import compact_name
from motionbricks.safetensors import read_safetensors


class ReferenceSmallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.weights = require_shared("fixtures/reference-small/weights")
        cls.config = json.loads(read_bytes(require_shared("fixtures/reference-small/model_config.json")))
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "bundle")
        w = cls.weights
        rc, _, err = run_cli("bundle", "--pose", os.path.join(w, "pose.safetensors"),
                             "--root", os.path.join(w, "root.safetensors"),
                             "--vqvae", os.path.join(w, "vqvae.safetensors"),
                             "--stats", os.path.join(w, "stats.safetensors"),
                             "--pose-heads", "4", "--root-heads", "4", "--out", cls.out)
        cls.rc, cls.err = rc, err

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "tmp"):
            cls.tmp.cleanup()

    def test_counts_from_model_config(self):
        self.assertEqual(self.rc, 0, self.err)
        pc = self.config["param_counts"]
        m = json.loads(read_bytes(os.path.join(self.out, "manifest.json")))
        comps = m["components"]
        self.assertEqual(comps["pose"]["parameter_count"], pc["pose"]["parameters_total"])
        self.assertEqual(comps["root"]["parameter_count"], pc["root"]["parameters_total"])
        self.assertEqual(comps["vq-decoder"]["parameter_count"], pc["vqvae"]["decoder_plus_codebook"])
        self.assertEqual(comps["support"]["parameter_count"], 972)
        self.assertEqual(m["inference_parameter_count"], pc["pose"]["parameters_total"] +
                         pc["root"]["parameters_total"] + pc["vqvae"]["decoder_plus_codebook"])
        self.assertEqual({r: comps[r]["tensor_count"] for r in comps},
                         {"pose": 41, "root": 86, "vq-decoder": 35, "support": 4})

    def test_heads_from_model_config(self):
        self.assertEqual(self.rc, 0, self.err)
        resolved = self.config["resolved"]
        for role in ("pose", "root"):
            with GGUFFile(os.path.join(self.out, role + ".gguf")) as g:
                self.assertEqual(g.meta[C.KEY_N_HEAD], resolved[role]["backbone_network"]["args"]["n_head"])

    def test_values_bit_exact(self):
        self.assertEqual(self.rc, 0, self.err)
        for src, role, prefix in (("pose", "pose", C.PREFIX_BACKBONE), ("root", "root", C.PREFIX_BACKBONE),
                                  ("vqvae", "vq-decoder", C.PREFIX_VQVAE)):
            tensors, _ = read_safetensors(os.path.join(self.weights, src + ".safetensors"))
            with GGUFFile(os.path.join(self.out, role + ".gguf")) as g:
                stored = {t["name"] for t in g.tensors}
                n_kept = 0
                for name, t in tensors.items():
                    short = name[len(prefix):]
                    if compact_name(short) not in stored:
                        self.assertTrue(short == "initted" or short.startswith("encoder.") or
                                        short.startswith("quantizer."), "dropped %s" % name)
                        continue
                    n_kept += 1
                    np.testing.assert_array_equal(g.tensor(compact_name(short)), t.load(), name)
                self.assertEqual(n_kept, len(stored))
        tensors, _ = read_safetensors(os.path.join(self.weights, "stats.safetensors"))
        with GGUFFile(os.path.join(self.out, "support.gguf")) as g:
            np.testing.assert_array_equal(g.tensor(C.SUPPORT_MOTION_MEAN), tensors["mean"].load().astype(np.float32))
            np.testing.assert_array_equal(g.tensor(C.SUPPORT_MOTION_STD), tensors["std"].load().astype(np.float32))

    def test_small_preset_matches_fixture_shapes(self):
        for src, role, prefix in (("pose", "pose", C.PREFIX_BACKBONE), ("root", "root", C.PREFIX_BACKBONE),
                                  ("vqvae", "vq-decoder", C.PREFIX_VQVAE)):
            tensors, _ = read_safetensors(os.path.join(self.weights, src + ".safetensors"))
            shapes = {n[len(prefix):]: t.shape for n, t in tensors.items()}
            want = architecture.expected_shapes(role, architecture.PRESET_SMALL[role])
            self.assertEqual({n: shapes[n] for n in want}, want, role)

    def test_sincos_table_matches_upstream(self):
        from motionbricks.random_bundle import sincos_table
        for src, width in (("pose", 128), ("root", 64)):
            tensors, _ = read_safetensors(os.path.join(self.weights, src + ".safetensors"))
            np.testing.assert_allclose(sincos_table(16, width), tensors["backbone_net._position_emb.embed"].load(),
                                       rtol=0, atol=2e-6)


class FullInventoryTest(unittest.TestCase):
    def test_upstream_tensor_list(self):
        path = require_shared("docs/upstream-tensor-list.tsv")
        roles = {"pose_planner": "pose", "root_planner": "root", "pose_vq_decoder": "vq-decoder"}
        got = {r: {} for r in roles.values()}
        with open(path) as f:
            for line in f:
                comp, name, shape = line.rstrip("\n").split("\t")
                got[roles[comp]][name.split(".", 1)[1]] = tuple(json.loads(shape))
        for role, shapes in got.items():
            self.assertEqual(shapes, architecture.expected_shapes(role, architecture.PRESET_FULL[role]), role)
            self.assertEqual(architecture.check_inventory(role, shapes), architecture.PRESET_FULL[role])
            self.assertEqual(architecture.parameter_count(shapes), C.RELEASE_PARAMETER_COUNT[role])
            self.assertEqual(len(shapes), C.RELEASE_TENSOR_COUNT[role])


if __name__ == "__main__":
    unittest.main()
