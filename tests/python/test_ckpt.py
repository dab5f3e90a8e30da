"""Reading Lightning .ckpt files never runs pickle code, and a .ckpt converts to
the same bundle bytes as the equivalent safetensors."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
import zipfile

import numpy as np

from helpers import has_torch, random_state_dicts, random_stats, read_bytes, run_cli, write_sources
from motionbricks import constants as C
from motionbricks.ckpt import Inert, load_checkpoint, plain, state_dict_tensors
from motionbricks.errors import ConvertError
from motionbricks.gguf import GGUFFile

MARKER = "pwned-marker"


class Evil:
    """Runs a shell command when unpickled by a normal unpickler."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class AttributeDict(dict):
    """Like Lightning's AttributeDict: a dict subclass the converter cannot import."""


class FakeNode:
    """Pickles like an omegaconf value node: state {'_val': value, ...}."""

    def __init__(self, val):
        self._val = val
        self._metadata = object.__new__(FakeMeta)


class FakeMeta:
    pass


class FakeDictConfig:
    """Pickles like an omegaconf DictConfig: state {'_content': {key: node}, ...}."""

    def __init__(self, content):
        self._content = content
        self._parent = None


def _torch_sd(sd):
    import torch
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


class TorchSaveCase(unittest.TestCase):
    """A temporary directory and torch.save into it (no tests of its own)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def save(self, name, obj):
        import torch
        p = os.path.join(self.dir, name)
        torch.save(obj, p)
        return p


@unittest.skipUnless(has_torch(), "skipped: python3-torch not installed")
class CkptTest(TorchSaveCase):
    def setUp(self):
        super().setUp()
        self.marker = os.path.join(self.dir, MARKER)

    def assert_payload_is_live(self, path):
        """The premise: a normal torch.load / pickle.load of the file runs the command."""
        code = textwrap.dedent("""
            import sys, torch
            try:
                torch.load(sys.argv[1], weights_only=False)
            except TypeError:
                torch.load(sys.argv[1])
            except Exception:
                pass
        """)
        subprocess.run([sys.executable, "-c", code, path], cwd=self.dir, capture_output=True)
        self.assertTrue(os.path.exists(self.marker), "the malicious file must run code under a normal load")
        os.unlink(self.marker)

    def test_tensors_and_views(self):
        import torch
        base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        sd = {"t": base.t(), "slice": base[1:3, 2:5], "scalar": torch.tensor(3.5, dtype=torch.float64),
              "flag": torch.tensor([True]), "ints": torch.arange(5), "half": torch.ones(3, dtype=torch.float16),
              "bf16": torch.tensor([1.0, -2.0], dtype=torch.bfloat16)}
        p = self.save("a.ckpt", {"state_dict": sd, "hyper_parameters": {"n_head": 4}, "epoch": 7})
        tensors, hp = state_dict_tensors(p)
        self.assertEqual(hp, {"n_head": 4})
        for k, v in sd.items():
            self.assertEqual(tensors[k].shape, tuple(v.shape), k)
            got = tensors[k].load()
            want = v.float().numpy() if k == "bf16" else v.numpy()
            if k == "bf16":
                from motionbricks.safetensors import to_float32
                got = to_float32(k, tensors[k].dtype, got)
            np.testing.assert_array_equal(got, want, k)
        self.assertEqual(tensors["scalar"].dtype, "F64")
        self.assertEqual(tensors["ints"].dtype, "I64")

    def test_malicious_outside_state_dict_is_inert(self):
        sd = _torch_sd({"a": np.ones(3, np.float32)})
        p = self.save("evil.ckpt", {"evil": Evil("touch " + MARKER), "state_dict": sd,
                                    "hyper_parameters": {"n_head": Evil("touch " + MARKER)}})
        self.assert_payload_is_live(p)
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            obj, _ = load_checkpoint(p)
            tensors, hp = state_dict_tensors(p)
        finally:
            os.chdir(cwd)
        self.assertFalse(os.path.exists(self.marker))
        self.assertIsInstance(obj["evil"], Inert)
        self.assertEqual(obj["evil"]._inert_name, os.system.__module__ + ".system")
        self.assertEqual(obj["evil"].args, ("touch " + MARKER,), "recorded, never called")
        self.assertEqual(list(tensors), ["a"])
        self.assertIsNone(plain(hp)["n_head"], "inert objects are not values")

    def test_malicious_inside_state_dict_fails_cleanly(self):
        sd = _torch_sd({"backbone_net.a": np.ones(3, np.float32)})
        sd["backbone_net.b"] = Evil("touch " + MARKER)
        p = self.save("evil.ckpt", {"state_dict": sd})
        self.assert_payload_is_live(p)
        args, _ = write_sources(self.dir)
        rc, _, err = run_cli("bundle", "--pose", p, *args[2:], "--out", os.path.join(self.dir, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("is not a tensor", err)
        self.assertNotIn("Traceback", err)
        self.assertFalse(os.path.exists(self.marker))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o", "pose.gguf")))

    def test_handcrafted_pickles(self):
        # raw protocol-2 pickles that call os.system, builtins.eval, subprocess
        def zip_with(pkl):
            p = os.path.join(self.dir, "hand.ckpt")
            with zipfile.ZipFile(p, "w") as z:
                z.writestr("archive/data.pkl", pkl)
                z.writestr("archive/version", "3\n")
            return p
        def s(text):
            b = text.encode()
            return b"X" + len(b).to_bytes(4, "little") + b

        def call(module, name, *args):
            # GLOBAL module.name, args tuple, REDUCE, STOP
            return b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n(" + b"".join(args) + b"tR."
        payloads = [
            call("posix", "system", s("touch " + MARKER)),
            call("builtins", "eval", s("__import__('os').system('touch %s')" % MARKER)),
            call("subprocess", "call", b"](" + s("touch") + s(MARKER) + b"e"),
        ]
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            for pkl in payloads:
                subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.loads(sys.stdin.buffer.read())"],
                               input=pkl, cwd=self.dir, capture_output=True)
                self.assertTrue(os.path.exists(self.marker), pkl)
                os.unlink(self.marker)
                p = zip_with(pkl)
                obj, _ = load_checkpoint(p)      # inert object, nothing runs
                self.assertFalse(os.path.exists(self.marker), pkl)
                with self.assertRaisesRegex(ConvertError, "state_dict is not a dictionary"):
                    state_dict_tensors(p)
                self.assertFalse(os.path.exists(self.marker))
        finally:
            os.chdir(cwd)

    def test_bad_archives(self):
        p = os.path.join(self.dir, "x.ckpt")
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01ctorch._utils\n_rebuild_tensor_v2\n"
                       b"q\x02(ctorch\nFloatStorage\nX\x01\x00\x00\x000Q")
        with self.assertRaisesRegex(ConvertError, "unsupported persistent id"):
            load_checkpoint(p)
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00a")   # truncated
        with self.assertRaisesRegex(ConvertError, "cannot read data.pkl"):
            load_checkpoint(p)
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("other/file", b"")
        with self.assertRaisesRegex(ConvertError, "data.pkl"):
            load_checkpoint(p)
        with open(p, "wb") as f:
            f.write(b"PK\x03\x04garbage")
        with self.assertRaisesRegex(ConvertError, "not a zip-format"):
            load_checkpoint(p)
        import torch
        legacy = os.path.join(self.dir, "legacy.ckpt")
        torch.save({"state_dict": {}}, legacy, _use_new_zipfile_serialization=False)
        args, _ = write_sources(self.dir)
        rc, _, err = run_cli("bundle", "--pose", legacy, *args[2:], "--out", os.path.join(self.dir, "o"))
        self.assertEqual(rc, 2)
        self.assertIn("legacy", err)

    def test_omegaconf_like_hyper_parameters(self):
        hp = FakeDictConfig({"model": FakeDictConfig({"backbone_network": FakeDictConfig({
            "args": FakeDictConfig({"n_head": FakeNode(8), "n_layers": FakeNode(2)})})})})
        p = self.save("a.ckpt", {"state_dict": {}, "hyper_parameters": hp})
        _, raw = state_dict_tensors(p)
        self.assertEqual(plain(raw), {"model": {"backbone_network": {"args": {"n_head": 8, "n_layers": 2}}}})

    def test_skeleton_cross_check(self):
        import torch
        skel = os.path.join(self.dir, "skeleton")
        os.makedirs(skel)
        joints = torch.tensor([j[2] for j in C.SKELETON_JOINTS], dtype=torch.float64)
        parents = torch.tensor([j[1] for j in C.SKELETON_JOINTS], dtype=torch.int64)
        torch.save(joints, os.path.join(skel, "joints.p"))
        torch.save(parents, os.path.join(skel, "parents.p"))
        args, _ = write_sources(self.dir)
        rc, _, err = run_cli("bundle", *args, "--skeleton", skel, "--out", os.path.join(self.dir, "ok"), "--quiet")
        self.assertEqual(rc, 0, err)
        joints[7, 1] += 0.01
        torch.save(joints, os.path.join(skel, "joints.p"))
        rc, _, err = run_cli("bundle", *args, "--skeleton", skel, "--out", os.path.join(self.dir, "bad"))
        self.assertEqual(rc, 2)
        self.assertIn("joint 7 (left_toe_base)", err)
        joints[7, 1] -= 0.01
        torch.save(joints, os.path.join(skel, "joints.p"))
        parents[5] = 3
        torch.save(parents, os.path.join(skel, "parents.p"))
        rc, _, err = run_cli("bundle", *args, "--skeleton", skel, "--out", os.path.join(self.dir, "bad"))
        self.assertEqual(rc, 2)
        self.assertIn("differs from the G1Skeleton34 parents", err)

    def test_storage_bounds(self):
        import torch
        t = torch.arange(10, dtype=torch.float32)
        p = self.save("a.ckpt", {"state_dict": {"x": t}})
        # shrink the storage: the tensor no longer fits
        src = zipfile.ZipFile(p)
        q = os.path.join(self.dir, "b.ckpt")
        with zipfile.ZipFile(q, "w") as z:
            for info in src.infolist():
                data = src.read(info)
                if "/data/" in info.filename:
                    data = data[:16]
                z.writestr(info.filename, data)
        src.close()
        with self.assertRaisesRegex(ConvertError, "exceeds its storage"):
            state_dict_tensors(q)

    def test_ckpt_equals_safetensors(self):
        import torch
        sds = random_state_dicts(11)
        stats = random_stats(11)
        args, paths = write_sources(self.dir, sds, stats)
        hp = {
            "pose": AttributeDict(model={"backbone_network": {"args": {"n_head": 4, "n_layers": 2}}}),
            "root": {"model": {"backbone_network": {"args": {"n_head": 4, "dilation_growth_rate": 3}}}},
            "vqvae": {"model": {"pose_vqvae_network": {"dilation_growth_rate": 3}}},
        }
        ckpts = {}
        for key in ("pose", "root", "vqvae"):
            sd = _torch_sd(sds[key])
            # store one weight as a transposed view and give the ckpt optimizer state, like Lightning
            name = next(k for k in sd if sd[k].dim() == 2)
            sd[name] = sd[name].t().contiguous().t()
            self.assertFalse(sd[name].is_contiguous())
            ckpts[key] = self.save(key + ".ckpt", {
                "epoch": 3, "global_step": 2000000, "pytorch-lightning_version": "2.1.0",
                "state_dict": sd, "hyper_parameters": hp[key],
                "optimizer_states": [{"state": {0: {"exp_avg": torch.zeros(4)}}, "param_groups": [{"lr": 1e-4}]}],
                "lr_schedulers": [], "loops": {"fit_loop": {"epoch_progress": {"current": {"completed": 3}}}},
            })
        prov = []
        for role in ("pose", "root", "vq-decoder"):
            prov += ["--source-sha256", "%s=%s" % (role, "%02x" % len(role) * 32)]
        out_st = os.path.join(self.dir, "from-safetensors")
        rc, _, err = run_cli("bundle", *args, "--out", out_st, "--pose-heads", "4", "--root-heads", "4", "--quiet",
                             *prov)
        self.assertEqual(rc, 0, err)
        out_ck = os.path.join(self.dir, "from-ckpt")
        rc, _, err = run_cli("bundle", "--pose", ckpts["pose"], "--root", ckpts["root"], "--vqvae", ckpts["vqvae"],
                             *args[6:], "--out", out_ck, "--quiet", *prov)
        self.assertEqual(rc, 0, err)
        for name in ["manifest.json"] + [r + ".gguf" for r in C.COMPONENTS]:
            self.assertEqual(read_bytes(os.path.join(out_ck, name)), read_bytes(os.path.join(out_st, name)), name)
        with GGUFFile(os.path.join(out_ck, "pose.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_N_HEAD], 4, "heads read from the checkpoint's hyper_parameters")
        # default provenance is the checkpoint file's own hash; the option loses to the checkpoint
        out_def = os.path.join(self.dir, "defaults")
        rc, _, err = run_cli("bundle", "--pose", ckpts["pose"], "--root", ckpts["root"], "--vqvae", ckpts["vqvae"],
                             *args[6:], "--out", out_def, "--pose-heads", "8")
        self.assertEqual(rc, 0, err)
        self.assertIn("overrides the option value 8", err)
        import hashlib
        with GGUFFile(os.path.join(out_def, "root.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_SOURCE_SHA256], hashlib.sha256(read_bytes(ckpts["root"])).hexdigest())
        with GGUFFile(os.path.join(out_def, "pose.gguf")) as g:
            self.assertEqual(g.meta[C.KEY_N_HEAD], 4)



class HyperParameterTest(unittest.TestCase):
    """Where heads and dilation come from: checkpoint, else option, else release."""

    def test_resolution_order(self):
        from motionbricks.converter import resolve_hparam
        hp = {"model": {"backbone_network": {"args": {"n_head": 4, "dilation_growth_rate": 2}},
                        "pose_vqvae_network": {"dilation_growth_rate": 5}}}
        self.assertEqual(resolve_hparam("pose", "n_head", hp, None, 16, "f"), 4)
        self.assertEqual(resolve_hparam("root", "dilation_growth", hp, None, 3, "f"), 2)
        self.assertEqual(resolve_hparam("vq-decoder", "dilation_growth", hp, None, 3, "f"), 5)
        self.assertEqual(resolve_hparam("pose", "n_head", {"other": 1}, 8, 16, "f"), 8)
        self.assertEqual(resolve_hparam("pose", "n_head", None, None, 16, "f"), 16)
        self.assertEqual(resolve_hparam("pose", "n_head", {"n_head": 2}, None, 16, "f"), 2)
        for bad in (0, -4, "16", 4.0, True, [4]):
            with self.assertRaisesRegex(ConvertError, "not a positive integer"):
                resolve_hparam("pose", "n_head", {"n_head": bad}, None, 16, "f")


    def test_hostile_structures_are_bounded(self):
        # cycles and exponentially shared sub-trees are walked once
        d = {"n_head": 4}
        d["self"] = d
        d["again"] = [d, d]
        self.assertEqual(plain(d)["n_head"], 4)
        x = {"v": 1}
        for _ in range(80):
            x = {"x": x, "y": x}
        y = plain(x)
        for i in range(80):
            y = y["xy"[i % 2]]
        self.assertEqual(y, {"v": 1})
        inert = Inert()
        inert.items["k"] = inert
        self.assertEqual(plain(inert), {"k": None})
        deep = {}
        for _ in range(20000):
            deep = {"d": deep}
        with self.assertRaisesRegex(ConvertError, "nested too deeply"):
            plain(deep)
        import motionbricks.ckpt as ckpt
        saved = ckpt.MAX_PLAIN_NODES
        ckpt.MAX_PLAIN_NODES = 1000
        try:
            with self.assertRaisesRegex(ConvertError, "more than 1000 objects"):
                plain([[i] for i in range(2000)])
            self.assertEqual(len(plain([[i] for i in range(900)])), 900)
        finally:
            ckpt.MAX_PLAIN_NODES = saved

if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(has_torch(), "skipped: python3-torch not installed")
class CkptBombTest(TorchSaveCase):
    """A checkpoint cannot expand into more data than it stores (issue 19.6): overlapping strides
    (stride 0 = torch.expand) are refused, and what a conversion may materialise is capped."""

    def test_overlapping_strides_are_refused(self):
        import torch
        one = torch.zeros(1)
        for what, t in (("stride 0 (expand)", one.expand(4096, 4096)),
                        ("stride 0 in one dim", torch.zeros(8).expand(3, 8)),
                        ("overlapping rows", torch.zeros(20).as_strided((4, 8), (2, 1))),
                        ("overlapping permuted", torch.zeros(20).as_strided((8, 4), (1, 3)))):
            p = self.save("x.ckpt", {"state_dict": {"w": t}})
            with self.assertRaisesRegex(ConvertError, "overlap", msg=what):
                state_dict_tensors(p)
        # permuted, gapped and size-1 dims are fine; an empty tensor has no layout to check
        base = torch.arange(60, dtype=torch.float32)
        fine = {"t": base.reshape(6, 10).t(), "gap": base.as_strided((3, 4), (20, 2)),
                "one": base.as_strided((1, 5), (0, 1)), "empty": base.as_strided((0, 5), (0, 0))}
        tensors, _ = state_dict_tensors(self.save("ok.ckpt", {"state_dict": fine}))
        for k, v in fine.items():
            np.testing.assert_array_equal(tensors[k].load(), v.numpy(), k)

    def test_stride0_ckpt_is_not_a_bomb(self):
        # a few-KB .ckpt whose pose weights are expanded views used to become a 540 MB pose.gguf
        import torch
        sds = random_state_dicts(5)
        args, _ = write_sources(self.dir, sds)
        sd = _torch_sd(sds["pose"])
        for k in sd:
            if sd[k].dim() == 2:
                sd[k] = torch.zeros(1).expand(*sd[k].shape)
        pose = self.save("pose.ckpt", {"state_dict": sd})
        self.assertLess(os.path.getsize(pose), 200 * 1024)
        out = os.path.join(self.dir, "out")
        rc, _, err = run_cli("bundle", "--pose", pose, *args[2:], "--out", out, "--quiet")
        self.assertEqual(rc, 2, err)
        self.assertIn("overlap", err)
        self.assertFalse(os.path.exists(os.path.join(out, "pose.gguf")))


class ArchitectureCapTest(unittest.TestCase):
    """Widths and total size of what the converter accepts: a sane multiple of the release."""

    def test_release_and_small_presets_pass(self):
        from motionbricks import architecture
        for preset in ("full", "small"):
            for role, hp in architecture.PRESETS[preset].items():
                shapes = architecture.expected_shapes(role, hp)
                self.assertEqual(architecture.check_inventory(role, shapes), hp, (preset, role))
        release = sum(architecture.parameter_count(architecture.expected_shapes(r, hp))
                      for r, hp in architecture.PRESET_FULL.items())
        self.assertEqual(release, 183148382)   # the inference parameters of the release bundle
        self.assertGreaterEqual(architecture.MAX_CONVERT_BYTES, 4 * 4 * release)

    def test_wide_architecture_is_refused(self):
        from motionbricks import architecture
        for role, key, factor in ((C.COMPONENT_POSE, "n_embd", 8), (C.COMPONENT_POSE, "n_layer", 5),
                                  (C.COMPONENT_ROOT, "width", 8), (C.COMPONENT_VQ_DECODER, "depth", 5)):
            hp = dict(architecture.PRESET_FULL[role])
            hp[key] *= factor
            shapes = architecture.expected_shapes(role, hp)
            with self.assertRaisesRegex(ConvertError, "%s .* more than" % key, msg=(role, key)):
                architecture.check_inventory(role, shapes)

    def test_total_bytes_are_capped(self):
        # every component within its widths, the conversion as a whole over the cap: refused before
        # anything is read or written
        from unittest import mock
        from motionbricks import architecture, cli, converter
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        args, _ = write_sources(tmp.name)
        out = os.path.join(tmp.name, "out")
        ns = cli.build_parser().parse_args(["bundle", *args, "--out", out, "--quiet", "--pose-heads", "4",
                                            "--root-heads", "4"])
        with mock.patch.object(architecture, "MAX_CONVERT_BYTES", 1000000):
            with self.assertRaisesRegex(ConvertError, "more than the 1000000 bytes"):
                converter.convert(ns)
        self.assertFalse(os.path.exists(out))
        converter.convert(ns)   # the same sources convert under the real cap
        self.assertTrue(os.path.exists(os.path.join(out, "pose.gguf")))
