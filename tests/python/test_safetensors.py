"""The safetensors reader accepts well-formed files and rejects hostile headers."""

import json
import os
import struct
import tempfile
import unittest

import numpy as np

import helpers  # noqa: F401  (sets sys.path)
from motionbricks.errors import ConvertError
from motionbricks.safetensors import read_safetensors, to_float32, write_safetensors


def raw_file(header, data=b"", header_bytes=None):
    h = header_bytes if header_bytes is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.n = 0

    def tearDown(self):
        self.tmp.cleanup()

    def path_of(self, data):
        self.n += 1
        p = os.path.join(self.tmp.name, "f%d.safetensors" % self.n)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def rejects(self, data, pattern):
        with self.assertRaisesRegex(ConvertError, pattern):
            read_safetensors(self.path_of(data))

    def test_round_trip(self):
        arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5, -2.0]),
                  "flag": np.array(True), "i": np.arange(3, dtype=np.int64)}
        p = os.path.join(self.tmp.name, "ok.safetensors")
        write_safetensors(p, arrays, {"k": "v"})
        tensors, meta = read_safetensors(p)
        self.assertEqual(meta, {"k": "v"})
        self.assertEqual(sorted(tensors), sorted(arrays))
        for k, a in arrays.items():
            self.assertEqual(tensors[k].shape, a.shape)
            np.testing.assert_array_equal(tensors[k].load(), a)
        self.assertEqual(tensors["b"].dtype, "F64")
        self.assertEqual(to_float32("b", "F64", tensors["b"].load()).dtype, np.float32)
        with self.assertRaisesRegex(ConvertError, "floating"):
            to_float32("i", "I64", tensors["i"].load())

    def test_bf16(self):
        bits = (np.array([1.0, -2.5], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        p = self.path_of(raw_file({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, bits.tobytes()))
        t, _ = read_safetensors(p)
        np.testing.assert_array_equal(to_float32("x", "BF16", t["x"].load()), [1.0, -2.5])

    def test_bad_files(self):
        ok = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
        data = b"\0" * 8
        self.rejects(b"\1\0\0", "too short")
        self.rejects(struct.pack("<Q", 1 << 40) + b"{}", "header length")
        self.rejects(raw_file(None, data, b"{not json"), "bad header JSON")
        self.rejects(raw_file(None, data, b"\xff\xfe"), "UTF-8")
        self.rejects(raw_file(None, data, b"[1, 2]"), "not a JSON object")
        self.rejects(raw_file(None, data, b"[" * 100000 + b"]" * 100000), "bad header JSON")
        self.rejects(raw_file(None, data, b'{"x": %s, "x": %s}' % (json.dumps(ok).encode(),
                                                                   json.dumps(ok).encode())), "duplicate key")
        self.rejects(raw_file({"x": dict(ok, dtype="F128")}, data), "unknown dtype")
        self.rejects(raw_file({"x": dict(ok, dtype=7)}, data), "unknown dtype")
        self.rejects(raw_file({"x": dict(ok, shape=[-2])}, data), "bad shape")
        self.rejects(raw_file({"x": dict(ok, shape="2")}, data), "bad shape")
        self.rejects(raw_file({"x": dict(ok, data_offsets=[0, 16])}, data), "out of range")
        self.rejects(raw_file({"x": dict(ok, data_offsets=[8, 4])}, data), "out of range")
        self.rejects(raw_file({"x": dict(ok, data_offsets=[-8, 0])}, data), "out of range")
        self.rejects(raw_file({"x": dict(ok, data_offsets=[0, 4])}, data), "needs 8 bytes")
        self.rejects(raw_file({"x": dict(ok, data_offsets=[0])}, data), "bad data_offsets")
        self.rejects(raw_file({"x": {"dtype": "F32", "shape": [2]}}, data), "exactly dtype")
        self.rejects(raw_file({"x": ok, "y": dict(ok, shape=[1], data_offsets=[4, 8])}, data), "overlap")
        self.rejects(raw_file({"x": ok, "__metadata__": {"a": 1}}, data), "__metadata__")

    def test_missing_file(self):
        with self.assertRaisesRegex(ConvertError, "cannot open"):
            read_safetensors(os.path.join(self.tmp.name, "nope.safetensors"))


if __name__ == "__main__":
    unittest.main()
