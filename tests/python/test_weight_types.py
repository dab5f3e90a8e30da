"""--dtype bf16 / q8_0: ggml's encodings, which tensors are reduced, the manifest keys,
and reading the reduced tensors back."""

import json
import os
import tempfile
import unittest

import numpy as np

from helpers import read_bytes, run_cli
from motionbricks import constants as C
from motionbricks import weight_types as W
from motionbricks.gguf import GGUFFile


class EncodingTest(unittest.TestCase):
    def test_bf16_rounds_to_nearest_even(self):
        a = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5, 0.0], dtype=np.float32)
        self.assertEqual(W.from_bf16(W.to_bf16(a)).tolist(), [1.0, 1.0, 1.0 + 2 ** -6, -2.5, 0.0])

    def test_q8_0_blocks(self):
        rng = np.random.default_rng(3)
        a = rng.standard_normal(96).astype(np.float32)
        a[32:64] = 0.0   # an all-zero block: scale 0, values 0
        b = W.to_q8_0(a)
        self.assertEqual(b.size, 3 * C.Q8_0_BLOCK_BYTES)
        back = W.from_q8_0(b.tobytes(), 96)
        d = np.abs(a[:32]).max() / 127
        self.assertLessEqual(np.abs(back[:32] - a[:32]).max(), d * 0.5 + d * 1e-3)
        self.assertEqual(back[32:64].tolist(), [0.0] * 32)
        self.assertEqual(int(b[2 + int(np.argmax(np.abs(a[:32])))].view(np.int8)), int(np.sign(a[np.argmax(np.abs(a[:32]))]) * 127))

    def test_which_tensors(self):
        self.assertEqual(W.weight_type("_transformer_model.layers.0.linear1.weight", (2048, 1024), "q8_0"),
                         C.GGML_TYPE_Q8_0)
        self.assertEqual(W.weight_type("decoder.model.0.weight", (512, 413, 3), "q8_0"), C.GGML_TYPE_BF16)
        self.assertEqual(W.weight_type("x.linear.weight", (16, 5), "q8_0"), C.GGML_TYPE_BF16)
        for name, shape in (("_transformer_model.layers.0.norm1.weight", (1024,)), ("a.bias", (64, 64)),
                            (C.POSE_TOKEN_EMB, (1296, 32)), ("quantizer.vq._codebook.embed", (8, 161, 32))):
            self.assertEqual(W.weight_type(name, shape, "q8_0"), C.GGML_TYPE_F32, name)
            self.assertEqual(W.weight_type(name, shape, "bf16"), C.GGML_TYPE_F32, name)


class ReducedBundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = {}
        for d in ("f32", "q8_0"):
            cls.out[d] = os.path.join(cls.tmp.name, d)
            rc, _, err = run_cli("random-bundle", "--preset", "small", "--seed", "7", "--dtype", d,
                                 "--out", cls.out[d], "--quiet")
            assert rc == 0, err

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_manifest(self):
        f = json.loads(read_bytes(os.path.join(self.out["f32"], "manifest.json")))
        q = json.loads(read_bytes(os.path.join(self.out["q8_0"], "manifest.json")))
        self.assertNotIn(C.MANIFEST_KEY_WEIGHT_DTYPE, f)
        self.assertEqual(q[C.MANIFEST_KEY_WEIGHT_DTYPE], "q8_0")
        self.assertEqual(q["components"]["support"][C.MANIFEST_KEY_TENSOR_TYPES], {"F32": 3, "I32": 1})
        self.assertGreater(q["components"]["pose"][C.MANIFEST_KEY_TENSOR_TYPES]["Q8_0"], 0)
        for role in C.COMPONENTS:   # the same tensors and parameters, fewer bytes
            self.assertEqual(f["components"][role]["parameter_count"], q["components"][role]["parameter_count"])

    def test_tensors_read_back_close_to_f32(self):
        name = "_transformer_model.layers.0.linear1.weight"
        with GGUFFile(os.path.join(self.out["f32"], "pose.gguf")) as gf, \
                GGUFFile(os.path.join(self.out["q8_0"], "pose.gguf")) as gq:
            self.assertEqual(gq.meta[C.KEY_FILE_TYPE], C.FILE_TYPE_MOSTLY_Q8_0)
            types = {t["name"]: t["type"] for t in gq.tensors}
            self.assertEqual(types[name], C.GGML_TYPE_Q8_0)
            a, b = gf.tensor(name), gq.tensor(name)
            self.assertEqual(a.shape, b.shape)
            self.assertLess(np.abs(a - b).max(), np.abs(a).max() / 127)


if __name__ == "__main__":
    unittest.main()
