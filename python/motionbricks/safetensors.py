"""Validating .safetensors reader (no dependency on the safetensors package).

Layout: u64 little-endian header length N, N bytes of UTF-8 JSON
{name: {"dtype": D, "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {str: str}},
then the data section; offsets are relative to its start. Every tensor must lie
inside the data section, match its shape and dtype size, and not overlap another.
"""

import json
import mmap
import os
import struct

import numpy as np

from .errors import ConvertError

DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}

FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")

MAX_HEADER_BYTES = 100 * 1024 * 1024


class LazyTensor:
    """A tensor whose data is read only when asked for: shape (tuple), dtype name
    (safetensors spelling) and load() -> numpy array (float as stored)."""

    def __init__(self, shape, dtype, loader):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._loader = loader

    def load(self):
        return self._loader()


def to_float32(name, dtype, a):
    """a (numpy, safetensors dtype name `dtype`) as float32; integers are not floats."""
    if dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    if dtype in FLOAT_DTYPES:
        return a.astype(np.float32, copy=False)
    raise ConvertError("tensor %r has dtype %s, expected a floating type" % (name, dtype))


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ConvertError("duplicate key %r" % k)
        out[k] = v
    return out


def read_safetensors(path):
    """{name: LazyTensor} and the __metadata__ dict of a .safetensors file."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ConvertError("%s: cannot open: %s" % (path, e.strerror))
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ConvertError("%s: too short for a safetensors header (%d bytes)" % (path, size))
        n = struct.unpack("<Q", f.read(8))[0]
        if n > size - 8 or n > MAX_HEADER_BYTES:
            raise ConvertError("%s: header length %d exceeds the file (%d bytes)" % (path, n, size))
        raw = f.read(n)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size > 8 + n else None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConvertError("%s: header is not valid UTF-8" % path)
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except (ConvertError, ValueError, RecursionError) as e:
        raise ConvertError("%s: bad header JSON: %s" % (path, e))
    if not isinstance(header, dict):
        raise ConvertError("%s: header is not a JSON object" % path)
    data_start = 8 + n
    data_size = size - data_start
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ConvertError("%s: __metadata__ must map strings to strings" % path)
    tensors = {}
    spans = []
    for name, info in header.items():
        where = "%s: tensor %r" % (path, name)
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise ConvertError("%s: entry must have exactly dtype, shape, data_offsets" % where)
        dtype = info["dtype"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise ConvertError("%s: unknown dtype %r" % (where, dtype))
        shape = info["shape"]
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape) or len(shape) > 8:
            raise ConvertError("%s: bad shape %r" % (where, shape))
        offs = info["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)):
            raise ConvertError("%s: bad data_offsets %r" % (where, offs))
        begin, end = offs
        if begin < 0 or end < begin or end > data_size:
            raise ConvertError("%s: data_offsets [%d, %d] out of range (data section is %d bytes)"
                               % (where, begin, end, data_size))
        count = 1
        for d in shape:
            count *= d
        itemsize = DTYPES[dtype].itemsize
        if count * itemsize != end - begin:
            raise ConvertError("%s: shape %s of %s needs %d bytes, data_offsets give %d"
                               % (where, shape, dtype, count * itemsize, end - begin))
        spans.append((begin, end, name))
        tensors[name] = LazyTensor(shape, dtype, _loader(mm, data_start + begin, count, DTYPES[dtype], shape))
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            raise ConvertError("%s: tensors %r and %r overlap" % (path, a[2], b[2]))
    return tensors, meta


def _loader(mm, offset, count, dtype, shape):
    def load():
        if count == 0:
            return np.zeros(shape, dtype=dtype)
        return np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(shape)
    return load


def write_safetensors(path, arrays, metadata=None):
    """Writes {name: numpy array} as .safetensors (tests and tooling)."""
    names = {v: k for k, v in DTYPES.items() if k != "BF16"}
    header = {}
    off = 0
    for name, a in arrays.items():
        a = np.asarray(a)
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for a in arrays.values():
            f.write(np.asarray(a).tobytes(order="C"))
