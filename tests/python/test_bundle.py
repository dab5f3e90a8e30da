"""`convert.py bundle` on synthetic upstream-style safetensors: layout, metadata,
provenance, values, training-only tensors dropped, and bad inputs rejected."""

import json
import os
import tempfile
import unittest

import numpy as np

from helpers import random_state_dicts, random_stats, read_bytes, run_cli, sha256_of, write_sources
from motionbricks import constants as C
from motionbricks.gguf import GGUFFile
from motionbricks.safetensors import write_safetensors

STANDARD_KEYS = [C.KEY_ARCHITECTURE, C.KEY_NAME, C.KEY_ALIGNMENT, C.KEY_FILE_TYPE, C.KEY_FORMAT_VERSION,
                 C.KEY_COMPONENT, C.KEY_SKELETON, C.KEY_UPSTREAM_REVISION, C.KEY_SOURCE_SHA256,
                 C.KEY_PARAMETER_COUNT]


class BundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.sds = random_state_dicts(3)
        cls.stats = random_stats(3)
        cls.args, cls.paths = write_sources(cls.tmp.name, cls.sds, cls.stats)
        cls.out = os.path.join(cls.tmp.name, "bundle")
        rc, _, err = run_cli("bundle", *cls.args, "--out", cls.out, "--pose-heads", "4", "--root-heads", "4",
                             "--quiet")
        assert rc == 0, err

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_manifest(self):
        text = read_bytes(os.path.join(self.out, "manifest.json")).decode()
        m = json.loads(text)
        self.assertEqual(text, json.dumps(m, indent=2, sort_keys=True) + "\n")
        self.assertEqual(m["format"], "motionbricks-gguf-bundle-v1")
        self.assertEqual(m["skeleton"], "g1skel34")
        self.assertEqual(m["joint_count"], 34)
        self.assertEqual(m["upstream_revision"], C.RELEASE_UPSTREAM_REVISION)
        self.assertRegex(m["safe_manifest_sha256"], "^[0-9a-f]{64}$")
        counts = {"pose": (41, 1280464), "root": (86, 750849), "vq-decoder": (35, 219533), "support": (4, 972)}
        self.assertEqual(sorted(m["components"]), sorted(counts))
        for role, (n_tensors, n_params) in counts.items():
            e = m["components"][role]
            self.assertEqual(e["path"], role + ".gguf")
            self.assertEqual(e["tensor_count"], n_tensors)
            self.assertEqual(e["parameter_count"], n_params)
            self.assertEqual(e["sha256"], sha256_of(os.path.join(self.out, e["path"])))
        self.assertEqual(m["inference_parameter_count"], 1280464 + 750849 + 219533)
        leftovers = [f for f in os.listdir(self.out) if ".tmp" in f]
        self.assertEqual(leftovers, [])

    def test_metadata_and_provenance(self):
        sources = {"pose": self.paths["pose"], "root": self.paths["root"], "vq-decoder": self.paths["vqvae"]}
        for role in C.COMPONENTS:
            with GGUFFile(os.path.join(self.out, role + ".gguf")) as g:
                keys = [k for k, _, _ in g.metadata]
                extra = {"pose": [C.KEY_N_HEAD], "root": [C.KEY_N_HEAD], "vq-decoder": [],
                         "support": [C.KEY_JOINT_NAMES]}[role]
                self.assertEqual(keys, STANDARD_KEYS + extra, role)
                types = {k: t for k, t, _ in g.metadata}
                self.assertEqual(types[C.KEY_PARAMETER_COUNT], C.GGUF_TYPE_UINT64)
                self.assertEqual(types[C.KEY_FORMAT_VERSION], C.GGUF_TYPE_UINT32)
                meta = g.meta
                self.assertEqual(meta[C.KEY_COMPONENT], role)
                self.assertEqual(meta[C.KEY_NAME], "NVIDIA MotionBricks G1")
                self.assertEqual(meta[C.KEY_FILE_TYPE], 0)
                self.assertEqual(meta[C.KEY_PARAMETER_COUNT], sum(t["n_elements"] for t in g.tensors))
                if role in sources:
                    self.assertEqual(meta[C.KEY_SOURCE_SHA256], sha256_of(sources[role]))
                if role in ("pose", "root"):
                    self.assertEqual(meta[C.KEY_N_HEAD], 4)
                    self.assertEqual(types[C.KEY_N_HEAD], C.GGUF_TYPE_UINT32)
        # support: SHA-256 of mean.npy then std.npy
        import hashlib
        h = hashlib.sha256(read_bytes(self.paths["mean"]) + read_bytes(self.paths["std"])).hexdigest()
        with GGUFFile(os.path.join(self.out, "support.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_SOURCE_SHA256], h)

    def test_values_names_and_order(self):
        sd = self.sds["root"]
        with GGUFFile(os.path.join(self.out, "root.gguf")) as g:
            stored = [t["name"] for t in g.tensors]
            self.assertEqual(len(stored), len(sd))
            # long names compacted: the 64-byte root-token out_proj weight
            self.assertIn("_root_token_transformer_model.layers.0.attn.out_proj.weight", stored)
            self.assertTrue(all(len(n.encode()) < 64 for n in stored))
            originals = sorted(k[len(C.PREFIX_BACKBONE):] for k in sd)
            from motionbricks.names import compact_name
            self.assertEqual(stored, [compact_name(n) for n in originals], "sorted by original name")
            for n in originals:
                np.testing.assert_array_equal(g.tensor(compact_name(n)), sd[C.PREFIX_BACKBONE + n])
        with GGUFFile(os.path.join(self.out, "vq-decoder.gguf")) as g:
            names = [t["name"] for t in g.tensors]
            self.assertFalse([n for n in names if n.startswith("encoder.")], "VQ encoder dropped")
            self.assertEqual([n for n in names if n.startswith("quantizer.")], [C.NAME_CODEBOOK])
            t = {x["name"]: x for x in g.tensors}
            self.assertEqual(t[C.NAME_CODEBOOK]["ne"], [8, 10, 8])
        with GGUFFile(os.path.join(self.out, "pose.gguf")) as g:
            self.assertNotIn("initted", [t["name"] for t in g.tensors])
        with GGUFFile(os.path.join(self.out, "support.gguf")) as g:
            np.testing.assert_array_equal(g.tensor(C.SUPPORT_MOTION_MEAN), self.stats[0].astype(np.float32))
            np.testing.assert_array_equal(g.tensor(C.SUPPORT_MOTION_STD), self.stats[1].astype(np.float32))
            parents = g.tensor(C.SUPPORT_JOINT_PARENTS)
            self.assertEqual(parents[0], -1)
            self.assertTrue(all(0 <= parents[i] < i for i in range(1, 34)))
            self.assertEqual(g.meta[C.KEY_JOINT_NAMES].split(",")[7], "left_toe_base")

    def test_release_hparams_write_no_extra_keys(self):
        out = os.path.join(self.tmp.name, "release-heads")
        rc, _, err = run_cli("bundle", *self.args, "--out", out, "--quiet")
        self.assertEqual(rc, 0, err)
        for role in ("pose", "root", "vq-decoder"):
            with GGUFFile(os.path.join(out, role + ".gguf")) as g:
                self.assertEqual([k for k, _, _ in g.metadata], STANDARD_KEYS, role)
        out2 = os.path.join(self.tmp.name, "dilation")
        rc, _, err = run_cli("bundle", *self.args, "--out", out2, "--quiet", "--dilation-growth", "2",
                             "--pose-heads", "16")
        self.assertEqual(rc, 0, err)
        for role, keys in (("pose", []), ("root", [C.KEY_DILATION_GROWTH]), ("vq-decoder", [C.KEY_DILATION_GROWTH])):
            with GGUFFile(os.path.join(out2, role + ".gguf")) as g:
                self.assertEqual([k for k, _, _ in g.metadata], STANDARD_KEYS + keys, role)
                if keys:
                    self.assertEqual(g.meta[C.KEY_DILATION_GROWTH], 2)

    def test_provenance_options(self):
        out = os.path.join(self.tmp.name, "prov")
        rev = "0123456789abcdef0123456789abcdef01234567"
        rc, _, err = run_cli("bundle", *self.args, "--out", out, "--quiet", "--upstream-revision", rev,
                             "--source-sha256", "root=" + "AB" * 32, "--safe-manifest-sha256", "cd" * 32)
        self.assertEqual(rc, 0, err)
        with GGUFFile(os.path.join(out, "root.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_SOURCE_SHA256], "ab" * 32)
            self.assertEqual(g.meta[C.KEY_UPSTREAM_REVISION], rev)
        with GGUFFile(os.path.join(out, "pose.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_SOURCE_SHA256], sha256_of(self.paths["pose"]))
        m = json.loads(read_bytes(os.path.join(out, "manifest.json")))
        self.assertEqual(m["safe_manifest_sha256"], "cd" * 32)
        self.assertEqual(m["upstream_revision"], rev)

    def test_deterministic(self):
        out = os.path.join(self.tmp.name, "again")
        rc, _, err = run_cli("bundle", *self.args, "--out", out, "--pose-heads", "4", "--root-heads", "4", "--quiet")
        self.assertEqual(rc, 0, err)
        for name in ["manifest.json"] + [r + ".gguf" for r in C.COMPONENTS]:
            self.assertEqual(read_bytes(os.path.join(out, name)), read_bytes(os.path.join(self.out, name)), name)


class DumpTest(unittest.TestCase):
    def test_dump(self):
        with tempfile.TemporaryDirectory() as tmp:
            args, _ = write_sources(tmp)
            out = os.path.join(tmp, "b")
            rc, _, err = run_cli("bundle", *args, "--out", out, "--quiet")
            self.assertEqual(rc, 0, err)
            rc, text, err = run_cli("dump", os.path.join(out, "support.gguf"))
            self.assertEqual(rc, 0, err)
            self.assertIn("4 tensors", text)
            self.assertIn("motionbricks.joint_names", text)
            self.assertRegex(text, "neutral_joints +F32 +ne=\\[3, 34\\]")
            self.assertRegex(text, "joint_parents +I32 +ne=\\[34\\]")
            rc, text, err = run_cli("dump", "--json", os.path.join(out, "root.gguf"))
            self.assertEqual(rc, 0, err)
            d = json.loads(text)
            self.assertEqual(d["metadata"][0], {"key": "general.architecture", "type": 8, "value": "motionbricks"})
            self.assertEqual(len(d["tensors"]), 86)
            bad = os.path.join(tmp, "bad.gguf")
            with open(bad, "wb") as f:
                f.write(read_bytes(os.path.join(out, "root.gguf"))[:100])
            rc, _, err = run_cli("dump", bad)
            self.assertEqual(rc, 2)
            self.assertRegex(err, "^convert: error: .*bad.gguf: truncated")


class BadInputTest(unittest.TestCase):
    """Every rejection is exit status 1 with one clear line, and writes nothing."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sds = random_state_dicts(5)
        self.stats = random_stats(5)

    def tearDown(self):
        self.tmp.cleanup()

    def fails(self, pattern, sds=None, stats=None, extra=(), out=None):
        args, _ = write_sources(self.tmp.name, sds or self.sds, stats or self.stats)
        out = out or os.path.join(self.tmp.name, "out")
        rc, _, err = run_cli("bundle", *args, "--out", out, "--quiet", *extra)
        self.assertEqual(rc, 2, err)
        self.assertRegex(err, "^convert: error: .*" + pattern)
        self.assertNotIn("Traceback", err)
        if os.path.isdir(out):
            self.assertEqual(os.listdir(out), [], "nothing written")
        return err

    def test_missing_layer(self):
        sds = random_state_dicts(5)
        del sds["pose"]["backbone_net._transformer_model.layers.1.linear2.weight"]
        self.fails("missing 1 tensor.*layers.1.linear2.weight", sds)

    def test_missing_whole_layer(self):
        # layer 1 present, layer 0 gone: the derived depth is 2, so layer 0 is reported missing
        sds = random_state_dicts(5)
        for k in [k for k in sds["pose"] if "_transformer_model.layers.0." in k]:
            del sds["pose"][k]
        self.fails("missing 12 tensor.*layers.0.", sds)
        sds = random_state_dicts(5)
        for k in [k for k in sds["root"] if "_shared_transformer_model.layers." in k]:
            del sds["root"][k]
        self.fails("no layers found under '_shared_transformer_model.layers'", sds)

    def test_wrong_shape(self):
        sds = random_state_dicts(5)
        sds["root"]["backbone_net._proj_local_pose.weight"] = np.zeros((32, 303), np.float32)
        self.fails("_proj_local_pose.weight.*expected \\[32, 304\\]", sds)

    def test_unexpected_tensor(self):
        sds = random_state_dicts(5)
        sds["pose"]["backbone_net._proj_text_embeddings.forward_projection.weight"] = np.zeros((2, 2), np.float32)
        self.fails("unexpected 1 tensor", sds)

    def test_missing_derivation_key(self):
        sds = random_state_dicts(5)
        del sds["vqvae"]["pose_net." + C.NAME_CODEBOOK]
        self.fails("missing tensor 'quantizer.vq._codebook.embed'", sds)

    def test_no_prefix(self):
        sds = random_state_dicts(5)
        sds["vqvae"] = {k[len("pose_net."):]: v for k, v in sds["vqvae"].items()}
        self.fails("no vq-decoder tensors", sds)

    def test_integer_weight(self):
        sds = random_state_dicts(5)
        sds["pose"]["backbone_net._proj_input.0.bias"] = np.zeros(128, np.int32)
        self.fails("dtype I32, expected floating", sds)

    def test_nan_weight(self):
        sds = random_state_dicts(5)
        sds["root"]["backbone_net._middle_token_emb.weight"][3, 2] = np.nan
        self.fails("_middle_token_emb.weight.*not finite", sds)

    def test_bad_stats(self):
        mean, std = random_stats(5)
        bad = mean.copy()
        bad[17] = np.nan
        self.fails("mean\\[17\\] is not finite", stats=(bad, std))
        bad = std.copy()
        bad[3] = -1.0
        self.fails("std\\[3\\] = -1.0 is negative", stats=(mean, bad))
        self.fails("shape \\[417\\], expected \\[418\\]", stats=(mean[:417], std))
        self.fails("overflows float32", stats=(mean, std * 1e300))

    def test_bad_stats_safetensors(self):
        args, paths = write_sources(self.tmp.name, self.sds, self.stats)
        st = os.path.join(self.tmp.name, "stats.safetensors")
        write_safetensors(st, {"mean": self.stats[0]})
        rc, _, err = run_cli("bundle", *args[:6], "--stats", st, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("missing tensor 'std'", err)
        rc, _, err = run_cli("bundle", *args, "--stats", st, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("either --stats", err)
        rc, _, err = run_cli("bundle", *args[:8], "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("--mean and --std go together", err)

    def test_bad_npy(self):
        args, paths = write_sources(self.tmp.name, self.sds, self.stats)
        with open(paths["mean"], "wb") as f:
            f.write(b"\x93NUMPY garbage")
        rc, _, err = run_cli("bundle", *args, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("mean.npy", err)
        np.save(paths["mean"], np.array([{"a": 1}], dtype=object))
        rc, _, err = run_cli("bundle", *args, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("not a plain .npy", err)

    def test_bad_options(self):
        self.fails("not 64 hexadecimal", extra=["--source-sha256", "pose=abc"])
        self.fails("not 64 hexadecimal", extra=["--source-sha256", "pose=" + "g" * 64])
        self.fails("unknown component 'vqvae'", extra=["--source-sha256", "vqvae=" + "a" * 64])
        self.fails("expected COMPONENT=HEX", extra=["--source-sha256", "a" * 64])
        self.fails("given twice", extra=["--source-sha256", "pose=" + "a" * 64, "--source-sha256", "pose=" + "b" * 64])
        self.fails("--upstream-revision", extra=["--upstream-revision", "main"])
        self.fails("--pose-heads must be positive", extra=["--pose-heads", "0"])
        self.fails("not divisible by 3 heads", extra=["--pose-heads", "3"])

    def test_out_is_a_file(self):
        out = os.path.join(self.tmp.name, "file")
        with open(out, "w") as f:
            f.write("x")
        args, _ = write_sources(self.tmp.name, self.sds, self.stats)
        rc, _, err = run_cli("bundle", *args, "--out", out)
        self.assertEqual(rc, 2)
        self.assertIn("exists and is not a directory", err)

    def test_missing_input(self):
        args, _ = write_sources(self.tmp.name, self.sds, self.stats)
        args[1] = os.path.join(self.tmp.name, "nope.ckpt")
        rc, _, err = run_cli("bundle", *args, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertRegex(err, "nope.ckpt: cannot (open|read): No such file")

    def test_corrupt_safetensors(self):
        args, paths = write_sources(self.tmp.name, self.sds, self.stats)
        raw = read_bytes(paths["root"])
        with open(paths["root"], "wb") as f:
            f.write(raw[:len(raw) // 2])
        rc, _, err = run_cli("bundle", *args, "--out", os.path.join(self.tmp.name, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("out of range", err)


if __name__ == "__main__":
    unittest.main()
