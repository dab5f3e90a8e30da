"""Seeded mutations of valid inputs (byte flips, truncation, insertion): the
readers either succeed or raise ConvertError; no other exception, no hang."""

import io
import os
import tempfile
import unittest
import zipfile

import numpy as np

from helpers import has_torch, read_bytes
from motionbricks.ckpt import load_checkpoint, plain, state_dict_tensors
from motionbricks.errors import ConvertError
from motionbricks.gguf import GGUFFile
from motionbricks.safetensors import read_safetensors, write_safetensors
from motionbricks import constants as C
from motionbricks import gguf

N_CASES = 400


def mutate(rng, data, lo=0, hi=None):
    """One random mutation of data inside [lo, hi)."""
    hi = len(data) if hi is None else hi
    b = bytearray(data)
    kind = rng.integers(4)
    pos = int(rng.integers(lo, max(lo + 1, hi)))
    if kind == 0:                       # flip bytes
        for _ in range(int(rng.integers(1, 4))):
            p = int(rng.integers(lo, max(lo + 1, hi)))
            if p < len(b):
                b[p] = int(rng.integers(256))
    elif kind == 1:                     # truncate
        del b[pos:]
    elif kind == 2:                     # insert junk
        b[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
    else:                               # set a little-endian u64 to an extreme
        v = [0, 1, 2 ** 31, 2 ** 63 - 1, 2 ** 64 - 1][int(rng.integers(5))]
        b[pos:pos + 8] = v.to_bytes(8, "little")
    return bytes(b)


class MutationTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "m.bin")

    def tearDown(self):
        self.tmp.cleanup()

    def survive(self, data, read):
        with open(self.path, "wb") as f:
            f.write(data)
        try:
            read(self.path)
        except ConvertError:
            pass

    def test_safetensors(self):
        good = os.path.join(self.tmp.name, "good.safetensors")
        write_safetensors(good, {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(5),
                                 "c": np.array([True, False])}, {"k": "v"})
        data = read_bytes(good)
        header_end = 8 + int.from_bytes(data[:8], "little")
        rng = np.random.default_rng(1)

        def read(p):
            tensors, _ = read_safetensors(p)
            for t in tensors.values():
                t.load()
        for i in range(N_CASES):
            # most mutations hit the header, where the parsing is
            self.survive(mutate(rng, data, 0, header_end if i % 4 else None), read)

    def test_gguf(self):
        good = os.path.join(self.tmp.name, "good.gguf")
        gguf.write_gguf(good, [("general.alignment", C.GGUF_TYPE_UINT32, 32),
                               ("s", C.GGUF_TYPE_STRING, "text")],
                        [gguf.Tensor("x", C.GGML_TYPE_F32, (3, 4), lambda: iter([np.ones((3, 4), np.float32)])),
                         gguf.Tensor("i", C.GGML_TYPE_I32, (2,), lambda: iter([np.ones(2, np.int32)]))])
        data = read_bytes(good)
        rng = np.random.default_rng(2)

        def read(p):
            with GGUFFile(p) as g:
                for t in g.tensors:
                    g.tensor(t["name"])
        for _ in range(N_CASES):
            self.survive(mutate(rng, data, 0, 200), read)

    @unittest.skipUnless(has_torch(), "skipped: python3-torch not installed")
    def test_ckpt_pickle(self):
        import torch
        good = os.path.join(self.tmp.name, "good.ckpt")
        torch.save({"state_dict": {"a": torch.arange(6.0).reshape(2, 3), "b": torch.ones(4, dtype=torch.int64)},
                    "hyper_parameters": {"n_head": 4, "l": [1, 2, {"x": None}]}}, good)
        with zipfile.ZipFile(good) as z:
            members = [(i, z.read(i)) for i in z.infolist()]
        pkl_index = next(k for k, (i, _) in enumerate(members) if i.filename.endswith("data.pkl"))
        pkl = members[pkl_index][1]
        rng = np.random.default_rng(3)

        def read(p):
            obj, materialise = load_checkpoint(p)
            tensors, hp = state_dict_tensors(p)
            for t in tensors.values():
                t.load()
            plain(hp)
        for _ in range(N_CASES):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                for k, (info, content) in enumerate(members):
                    z.writestr(info.filename, mutate(rng, pkl) if k == pkl_index else content)
            self.survive(buf.getvalue(), read)


if __name__ == "__main__":
    unittest.main()
