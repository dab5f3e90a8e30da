"""The reference recorder's pieces that need no upstream checkout (CI runs these): the session
script → per-step commands, the manifest writer, the hparams overrides, the stand-ins (each
against the documented behaviour of the package it replaces) and the torch < 2 backports."""

import copy
import functools
import hashlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
import checkpoints  # noqa: E402
import environment  # noqa: E402
import session  # noqa: E402
from manifest import sha256_file, write_manifest  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def standin(name):
    """The stand-in module, loaded as the recorder loads it; None when the real package is installed
    (then the recorder would not use the stand-in either)."""
    if name in sys.modules:
        return sys.modules[name] if getattr(sys.modules[name], "__version__", "") == "0-standin" else None
    if not environment._missing(name):
        return None
    environment._load_standin(name)
    return sys.modules[name]


def need(name):
    if torch is None and name in ("einops", "vector_quantize_pytorch", "pytorch_lightning"):
        raise unittest.SkipTest("skipped: torch not installed")
    m = standin(name)
    if m is None:
        raise unittest.SkipTest(f"skipped: the real {name} is installed, its stand-in is not used")
    return m


class SessionTest(unittest.TestCase):
    def test_default_session_covers_the_issue(self):
        frames = session.validate(session.DEFAULT)
        self.assertGreaterEqual(frames, 300)
        keys = [s["keys"] for s in session.DEFAULT]
        self.assertIn("w", keys)                                        # walk
        self.assertTrue({"a", "d"} <= set(keys))                        # strafes (walk_left / walk_right by remap)
        self.assertIn("wv", keys)                                       # speed change: slow_walk, then walk again
        self.assertTrue({"wf", "wx"} <= set(keys))                      # style changes
        turns = [s for s in session.DEFAULT if s["keys"] and s["azimuth_start_deg"] != s["azimuth_end_deg"]]
        self.assertGreaterEqual(len(turns), 2)                          # turns while moving
        stops = [i for i, k in enumerate(keys) if k == "" and 0 < i < len(keys) - 1 and keys[i + 1]]
        self.assertTrue(stops)                                          # stop, then start again

    def test_commands(self):
        script = [{"first_step": 1, "last_step": 3, "keys": "", "azimuth_start_deg": 0, "azimuth_end_deg": 0},
                  {"first_step": 4, "last_step": 8, "keys": "wv", "azimuth_start_deg": 10, "azimuth_end_deg": 50}]
        cmds = session.commands(script)
        self.assertEqual([c["step"] for c in cmds], list(range(1, 9)))
        self.assertEqual([c["azimuth_deg"] for c in cmds[3:]], [10.0, 20.0, 30.0, 40.0, 50.0])
        self.assertEqual(set(cmds[0]["key_pressed"]), set(session.KEYS))
        self.assertFalse(any(cmds[0]["key_pressed"].values()))
        self.assertEqual({k for k, v in cmds[5]["key_pressed"].items() if v}, {"w", "v"})

    def test_bad_scripts(self):
        seg = {"first_step": 1, "last_step": 4, "keys": "w", "azimuth_start_deg": 0, "azimuth_end_deg": 0}
        for change, what in (({"first_step": 2}, "start at 1"), ({"keys": "wy"}, "unknown keys"),
                             ({"azimuth_end_deg": float("nan")}, "finite angle"), ({"last_step": 0}, "start at 1")):
            with self.assertRaisesRegex(session.ScriptError, what):
                session.validate([dict(seg, **change)])
        with self.assertRaisesRegex(session.ScriptError, "empty"):
            session.validate([])
        with self.assertRaisesRegex(session.ScriptError, "lacks"):
            session.validate([{"first_step": 1, "last_step": 2}])
        gap = [seg, dict(seg, first_step=6, last_step=9)]
        with self.assertRaisesRegex(session.ScriptError, "expected to start at 5"):
            session.validate(gap)


class ManifestTest(unittest.TestCase):
    def test_hashes_and_keys(self):
        with tempfile.TemporaryDirectory() as d:
            for name, data in (("a.mbparity", b"abc"), ("b.npz", b"\0" * 10), ("w.ckpt", b"weights")):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
            doc = write_manifest(d, {"upstream": {"repository": "r", "path": "p", "revision": "x" * 40},
                                     "weights": {"pose": os.path.join(d, "w.ckpt")}, "device": "cpu",
                                     "sampling": "argmax", "feature_source": "cpu_replay", "session": {"frames": 3},
                                     "stand_ins": [{"package": "einops", "why": "w"}], "environment": {"torch": "1"},
                                     "files": ["b.npz", "a.mbparity"]})
            with open(os.path.join(d, "manifest.json")) as f:
                text = f.read()
            self.assertEqual(json.loads(text), doc)
            self.assertEqual(text, json.dumps(doc, indent=2, sort_keys=True) + "\n")
            self.assertEqual(doc["format"], "motionbricks-reference-fixture-manifest-v1")
            self.assertEqual(doc["files"]["a.mbparity"], {"sha256": hashlib.sha256(b"abc").hexdigest(), "bytes": 3})
            self.assertEqual(doc["weights"]["pose"], hashlib.sha256(b"weights").hexdigest())
            self.assertEqual(doc["environment"], {"torch": "1"})
            self.assertEqual(sha256_file(os.path.join(d, "b.npz")), hashlib.sha256(b"\0" * 10).hexdigest())
            with self.assertRaisesRegex(ValueError, "feature_source"):
                write_manifest(d, dict(doc, feature_source="gpu", weights={}, files=[]))


class OverridesTest(unittest.TestCase):
    def test_apply(self):
        doc = {"model": {"backbone_network": {"args": {"n_embd": 1024, "n_head": 16}}, "pose_vqvae_network": {"width": 512}}}
        checkpoints.apply_overrides(doc, ["model.backbone_network.args.n_embd=128", "model.backbone_network.args.n_head=4"])
        checkpoints.apply_overrides(doc, ["width=64"], "model.pose_vqvae_network.")
        self.assertEqual(doc["model"]["backbone_network"]["args"], {"n_embd": 128, "n_head": 4})
        self.assertEqual(doc["model"]["pose_vqvae_network"]["width"], 64)
        self.assertIsInstance(doc["model"]["pose_vqvae_network"]["width"], int)
        with self.assertRaisesRegex(KeyError, "no key"):
            checkpoints.apply_overrides(doc, ["model.backbone_network.args.n_layers=2"])
        with self.assertRaisesRegex(KeyError, "not a section"):
            checkpoints.apply_overrides(doc, ["model.nothing.x=1"])
        with self.assertRaisesRegex(ValueError, "key=value"):
            checkpoints.apply_overrides(doc, ["model"])


class EinopsTest(unittest.TestCase):
    def setUp(self):
        self.e = need("einops")

    def test_pack_unpack(self):
        a, b = torch.randn(2, 3, 5, 4), torch.randn(7, 4)
        packed, ps = self.e.pack([a, b], "* dim")
        self.assertEqual(tuple(packed.shape), (2 * 3 * 5 + 7, 4))
        self.assertEqual(ps, [(2, 3, 5), (7,)])
        a2, b2 = self.e.unpack(packed, ps, "* dim")
        self.assertTrue(torch.equal(a2, a) and torch.equal(b2, b))
        x = torch.randn(2, 6, 3)
        p, ps = self.e.pack([x], "batch * dim")
        self.assertEqual((tuple(p.shape), ps), ((2, 6, 3), [(6,)]))
        s = torch.randn(3)
        p, ps = self.e.pack([s], "*")
        self.assertEqual((tuple(p.shape), ps), ((3,), [(3,)]))
        p, ps = self.e.pack([torch.randn(2, 5)], "* nbframes")
        self.assertEqual(ps, [(2,)])
        self.assertEqual(tuple(self.e.unpack(torch.randn(1, 5), [()], "* nbframes")[0].shape), (5,))

    def test_rearrange_and_repeat(self):
        x = torch.arange(2 * 3 * 4 * 3.0).reshape(2, 3, 4, 3)
        y = self.e.rearrange(x, "batch time joints dim -> batch time (joints dim)")
        self.assertTrue(torch.equal(y, x.reshape(2, 3, 12)))
        z = self.e.rearrange(y, "batch time (joints dim) -> batch time joints dim", dim=3)
        self.assertTrue(torch.equal(z, x))
        self.assertTrue(torch.equal(self.e.rearrange(x, "bs time j xyz -> (bs time) j xyz"), x.reshape(6, 4, 3)))
        self.assertTrue(torch.equal(self.e.rearrange(x, "b t j d -> d b t j"), x.permute(3, 0, 1, 2)))
        q = torch.randn(2, 4)
        r = self.e.repeat(q, "batch quat -> batch time nbj quat", time=3, nbj=5)
        self.assertEqual(tuple(r.shape), (2, 3, 5, 4))
        self.assertTrue(torch.equal(r[1, 2, 4], q[1]))
        j = torch.randn(1, 1, 4, 3)
        self.assertTrue(torch.equal(self.e.repeat(j, "bs 1 nbjoints xyz -> bs time nbjoints xyz", time=6)[0, 5], j[0, 0]))
        self.assertEqual(tuple(self.e.repeat(torch.randn(4, 3), "j k -> b j k", b=2).shape), (2, 4, 3))
        with self.assertRaisesRegex(ValueError, "new axes"):
            self.e.rearrange(q, "b q -> b t q", t=2)


class OmegaConfHydraTest(unittest.TestCase):
    def setUp(self):
        self.oc = need("omegaconf")

    def load(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return self.oc.OmegaConf.load(f.name)

    def test_access_and_interpolation(self):
        c = self.load("a:\n  b: 3\n  s: x_${a.b}_y\n  m: ???\n  sel: ${oc.select:a.none,true}\n  sel2: ${oc.select:a.b,7}\n"
                      "  l: [1, '${a.b}']\nc: ${a.b}\nfps: 30\n")
        self.assertEqual((c.a.b, c["a"]["b"], c.c, c.a.s, c.a.sel, c.a.sel2, list(c.a.l)), (3, 3, 3, "x_3_y", True, 3, [1, 3]))
        self.assertIs(type(c.c), int)
        with self.assertRaises(self.oc.MissingMandatoryValue):
            c.a.m
        self.assertEqual(getattr(c.a, "nothing", "default"), "default")
        self.assertTrue("fps" in c and "nope" not in c)
        c.ckpt_path = "/p"
        with self.oc.open_dict(c):
            del c.a["m"]
        self.assertEqual((c.ckpt_path, "m" in c.a), ("/p", False))
        d = copy.deepcopy(c)
        d.a.b = 9
        self.assertEqual((c.a.b, d.a.b), (3, 9))

    def test_instantiate(self):
        need("hydra")
        from hydra.utils import instantiate
        c = self.load("m:\n  _target_: fractions.Fraction\n  numerator: ${n}\n  denominator: ???\n"
                      "p:\n  _target_: fractions.Fraction\n  _partial_: true\n  numerator: 1\n"
                      "nest:\n  _target_: builtins.dict\n  inner:\n    _target_: fractions.Fraction\n    numerator: 2\n"
                      "  plain:\n    x: 1\nn: 3\n")
        from fractions import Fraction
        self.assertEqual(instantiate(c.m, denominator=4), Fraction(3, 4))
        self.assertIsInstance(instantiate(c.p), functools.partial)
        self.assertEqual(instantiate(c.p)(denominator=2), Fraction(1, 2))
        nest = instantiate(c.nest)
        self.assertEqual(nest["inner"], Fraction(2))
        self.assertEqual(nest["plain"].x, 1)                 # a nested config without _target_ stays a config


class RotationTest(unittest.TestCase):
    def setUp(self):
        need("scipy")
        from scipy.spatial.transform import Rotation
        self.R = Rotation

    def test_documented_behaviour(self):
        rx = self.R.from_euler("x", -90, degrees=True)
        np.testing.assert_allclose(rx.as_matrix(), [[1, 0, 0], [0, 0, 1], [0, -1, 0]], atol=1e-15)
        rz = self.R.from_euler("z", -90, degrees=True)
        np.testing.assert_allclose((rx * rz).as_matrix(), rx.as_matrix() @ rz.as_matrix(), atol=1e-15)
        np.testing.assert_allclose((rx * rx.inv()).as_matrix(), np.eye(3), atol=1e-15)
        q = self.R.from_quat([math.cos(0.3), 0, 0, math.sin(0.3)], scalar_first=True)   # 0.6 rad about z
        np.testing.assert_allclose(q.apply([1.0, 0, 0]), [math.cos(0.6), math.sin(0.6), 0], atol=1e-15)
        np.testing.assert_allclose(q.as_quat(), [0, 0, math.sin(0.3), math.cos(0.3)], atol=1e-15)
        np.testing.assert_allclose(self.R.from_quat([0, 0, 0, 2.0]).as_matrix(), np.eye(3))      # normalised
        np.testing.assert_allclose(self.R.from_matrix(q.as_matrix()).as_quat(), q.as_quat(), atol=1e-15)
        v = np.random.default_rng(1).normal(size=(5, 3))
        np.testing.assert_allclose(q.apply(v), v @ q.as_matrix().T)


class VectorQuantizeTest(unittest.TestCase):
    def test_codes_head_major(self):
        vq = need("vector_quantize_pytorch").VectorQuantize(dim=6, codebook_dim=3, heads=2, separate_codebook_per_head=True,
                                                            codebook_size=4)
        self.assertEqual({k: tuple(v.shape) for k, v in vq.state_dict().items()},
                         {"_codebook.initted": (), "_codebook.cluster_size": (2, 4), "_codebook.embed_avg": (2, 4, 3),
                          "_codebook.embed": (2, 4, 3)})
        vq._codebook.embed.copy_(torch.arange(24.0).reshape(2, 4, 3))
        codes = vq.get_codes_from_indices(torch.tensor([[[1, 2], [3, 0]]]))
        self.assertEqual(codes.tolist(), [[[3, 4, 5, 18, 19, 20], [9, 10, 11, 12, 13, 14]]])
        self.assertIs(vq.codebook, vq._codebook.embed)


class TorchCompatTest(unittest.TestCase):
    def test_padded_encoder_output(self):
        if torch is None:
            self.skipTest("skipped: torch not installed")
        import torch_compat
        applied = torch_compat.apply()
        if int(torch.__version__.split(".")[0]) >= 2:
            self.assertEqual(applied, [])
            return
        self.assertEqual(torch_compat.apply(), applied)                     # idempotent
        layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        enc = torch.nn.TransformerEncoder(layer, 2).eval()
        src = torch.randn(1, 6, 8)
        pad = torch.tensor([[False] * 4 + [True] * 2])
        with torch.no_grad():
            out = enc(src, src_key_padding_mask=pad)
        self.assertEqual(tuple(out.shape), (1, 6, 8))
        self.assertTrue(torch.equal(out[:, 4:], torch.zeros(1, 2, 8)))
        self.assertEqual(torch.arange(5)[torch.tensor([1, 3], dtype=torch.int32)].tolist(), [1, 3])


if __name__ == "__main__":
    unittest.main()
