"""GGUF writer layout, determinism, atomicity, tensor-name compaction, reader checks."""

import hashlib
import os
import struct
import tempfile
import unittest

import numpy as np

from helpers import read_bytes
from motionbricks import constants as C
from motionbricks import gguf
from motionbricks.errors import ConvertError
from motionbricks.names import compact_name, compact_names


def _tensor(name, a, ttype=C.GGML_TYPE_F32):
    return gguf.Tensor(name, ttype, a.shape, lambda: iter([a]))


METADATA = [
    ("general.architecture", C.GGUF_TYPE_STRING, "motionbricks"),
    ("a.u32", C.GGUF_TYPE_UINT32, 7),
    ("a.u64", C.GGUF_TYPE_UINT64, 2 ** 40),
    ("a.i32", C.GGUF_TYPE_INT32, -3),
    ("a.f32", C.GGUF_TYPE_FLOAT32, 0.5),
    ("a.bool", C.GGUF_TYPE_BOOL, True),
    ("a.utf8", C.GGUF_TYPE_STRING, "pelvis_skel,\u00e9"),
]


class WriterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, tensors, metadata=METADATA):
        path = os.path.join(self.dir, name)
        size, sha = gguf.write_gguf(path, metadata, tensors)
        return path, size, sha

    def test_layout_round_trip(self):
        w = np.arange(12, dtype=np.float32).reshape(3, 4)
        scalar = np.array(2.5, dtype=np.float32)
        idx = np.array([-1, 0, 1], dtype=np.int32)
        tensors = [_tensor("w", w), _tensor("s", scalar), _tensor("i", idx, C.GGML_TYPE_I32)]
        path, size, sha = self.write("a.gguf", tensors)
        raw = read_bytes(path)
        self.assertEqual(len(raw), size)
        self.assertEqual(hashlib.sha256(raw).hexdigest(), sha)
        self.assertEqual(raw[:4], b"GGUF")
        self.assertEqual(struct.unpack("<IQQ", raw[4:24]), (3, 3, len(METADATA)))
        self.assertEqual(size % 32, 0, "trailing padding to the alignment")
        with gguf.GGUFFile(path) as g:
            self.assertEqual(g.metadata, [(k, t, v) for k, t, v in METADATA])
            t = {x["name"]: x for x in g.tensors}
            self.assertEqual([x["name"] for x in g.tensors], ["w", "s", "i"], "write order kept")
            self.assertEqual(t["w"]["ne"], [4, 3], "dims reversed")
            self.assertEqual(t["s"]["ne"], [1], "0-d stored as [1]")
            self.assertEqual(t["i"]["type"], 26, "I32 is type id 26")
            for x in g.tensors:
                self.assertEqual(x["offset"] % 32, 0)
            self.assertEqual(g.data_start % 32, 0)
            np.testing.assert_array_equal(g.tensor("w"), w)
            np.testing.assert_array_equal(g.tensor("s"), [2.5])
            np.testing.assert_array_equal(g.tensor("i"), idx)
            # padding after the header and after each tensor is zero
            end = g.data_start + t["w"]["offset"] + 48
            self.assertEqual(raw[end:g.data_start + t["s"]["offset"]], b"\0" * (64 - 48))

    def test_deterministic(self):
        a = np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32)
        _, _, sha1 = self.write("a.gguf", [_tensor("x", a)])
        _, _, sha2 = self.write("b.gguf", [_tensor("x", a)])
        self.assertEqual(sha1, sha2)
        self.assertEqual(read_bytes(os.path.join(self.dir, "a.gguf")),
                         read_bytes(os.path.join(self.dir, "b.gguf")))

    def test_streamed_chunks(self):
        a = np.arange(100, dtype=np.float32)
        t = gguf.Tensor("x", C.GGML_TYPE_F32, (10, 10), lambda: iter([a[:30], a[30:31], a[31:]]))
        path, _, _ = self.write("a.gguf", [t])
        with gguf.GGUFFile(path) as g:
            np.testing.assert_array_equal(g.tensor("x").reshape(-1), a)

    def test_atomic_on_failure(self):
        path, _, sha = self.write("a.gguf", [_tensor("x", np.zeros(4, np.float32))])
        before = read_bytes(path)

        def failing():
            yield np.zeros(2, np.float32)
            raise ConvertError("source went away")
        with self.assertRaises(ConvertError):
            gguf.write_gguf(path, METADATA, [gguf.Tensor("x", C.GGML_TYPE_F32, (4,), failing)])
        self.assertEqual(read_bytes(path), before, "old file untouched")
        self.assertEqual(sorted(os.listdir(self.dir)), ["a.gguf"], "no temporary left behind")

    def test_wrong_data_size_or_type(self):
        short = gguf.Tensor("x", C.GGML_TYPE_F32, (4,), lambda: iter([np.zeros(3, np.float32)]))
        with self.assertRaisesRegex(ConvertError, "data bytes"):
            self.write("a.gguf", [short])
        long_ = gguf.Tensor("x", C.GGML_TYPE_F32, (4,), lambda: iter([np.zeros(5, np.float32)]))
        with self.assertRaisesRegex(ConvertError, "more data"):
            self.write("a.gguf", [long_])
        f64 = gguf.Tensor("x", C.GGML_TYPE_F32, (4,), lambda: iter([np.zeros(4, np.float64)]))
        with self.assertRaisesRegex(ConvertError, "dtype"):
            self.write("a.gguf", [f64])
        self.assertEqual(os.listdir(self.dir), [])

    def test_empty_dimension_rejected(self):
        with self.assertRaisesRegex(ConvertError, "must be positive"):
            gguf.Tensor("x", C.GGML_TYPE_F32, (3, 0), lambda: iter([]))

    def test_duplicates_rejected(self):
        z = np.zeros(1, np.float32)
        with self.assertRaisesRegex(ConvertError, "duplicate tensor"):
            self.write("a.gguf", [_tensor("x", z), _tensor("x", z)])
        with self.assertRaisesRegex(ConvertError, "duplicate metadata"):
            self.write("a.gguf", [], METADATA + METADATA[:1])


class ReaderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "a.gguf")
        gguf.write_gguf(self.path, METADATA, [_tensor("x", np.ones((2, 3), np.float32)),
                                              _tensor("y", np.ones(5, np.float32))])
        self.good = read_bytes(self.path)

    def tearDown(self):
        self.tmp.cleanup()

    def rejects(self, data, pattern):
        bad = os.path.join(self.tmp.name, "bad.gguf")
        with open(bad, "wb") as f:
            f.write(data)
        with self.assertRaisesRegex(ConvertError, pattern):
            gguf.GGUFFile(bad).close()

    def test_bad_magic_version(self):
        self.rejects(b"GGUX" + self.good[4:], "bad magic")
        self.rejects(self.good[:4] + struct.pack("<I", 2) + self.good[8:], "version 2")

    def test_truncated_everywhere(self):
        with gguf.GGUFFile(self.path) as g:
            data_start = g.data_start
        for n in range(0, data_start, 7):
            self.rejects(self.good[:n], "truncated|empty|outside|exceed")
        self.rejects(self.good[:-40], "outside the file")

    def test_huge_counts(self):
        self.rejects(self.good[:8] + struct.pack("<QQ", 2 ** 62, 1) + self.good[24:], "exceed")

    def test_overlap(self):
        with gguf.GGUFFile(self.path) as g:
            t = g.tensors[1]
        # move y's offset onto x's data (the offset field ends where y's info ends)
        name = b"y"
        pos = self.good.index(struct.pack("<Q", 1) + name + struct.pack("<I", 1))
        off_pos = pos + 8 + 1 + 4 + 8 + 4
        self.assertEqual(struct.unpack("<Q", self.good[off_pos:off_pos + 8])[0], t["offset"])
        self.rejects(self.good[:off_pos] + struct.pack("<Q", 0) + self.good[off_pos + 8:], "overlap")
        self.rejects(self.good[:off_pos] + struct.pack("<Q", 4) + self.good[off_pos + 8:], "not aligned")


class CompactionTest(unittest.TestCase):
    def test_short_names_unchanged(self):
        n = "_transformer_model.layers.15.self_attn.in_proj_weight"
        self.assertEqual(compact_name(n), n)
        n63 = "x" * 63
        self.assertEqual(compact_name(n63), n63)

    def test_release_names(self):
        n = "_root_token_transformer_model.layers.2.self_attn.out_proj.weight"
        self.assertEqual(len(n), 64)
        self.assertEqual(compact_name(n), "_root_token_transformer_model.layers.2.attn.out_proj.weight")
        # the documented substitutions, in order
        n = "_root_token_transformer_encoder.layers.1.self_attn.in_proj_weight"
        self.assertEqual(compact_name(n), "root.l.1.attn.qkv.weight")

    def test_hash_fallback(self):
        n = "a" * 70
        c = compact_name(n)
        self.assertEqual(c, "a" * 48 + "." + hashlib.sha256(n.encode()).hexdigest()[:12])
        self.assertLess(len(c), 64)

    def test_collision_is_fatal(self):
        a = "a" * 54 + "self_attn.x"     # 65 bytes, compacts to the next name
        b = "a" * 54 + "attn.x"
        self.assertEqual(compact_name(a), b)
        with self.assertRaisesRegex(ConvertError, "both compact"):
            compact_names([a, b])
        self.assertEqual(compact_names([a, a]), {a: b})


if __name__ == "__main__":
    unittest.main()
