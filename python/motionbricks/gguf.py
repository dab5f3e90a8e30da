"""GGUF v3 writer (deterministic, atomic) and a validating reader for dump and tests.

On-disk layout (all little-endian):
    magic "GGUF", u32 version = 3, u64 n_tensors, u64 n_kv
    n_kv times:      u64 key length, key bytes, u32 value type, value
                     (STRING: u64 length + bytes; UINT32: u32; UINT64: u64; ...)
    n_tensors times: u64 name length, name bytes, u32 n_dims, u64 ne[n_dims]
                     (ne[0] = last PyTorch dim), u32 ggml type, u64 offset
                     (relative to the data section, a multiple of the alignment)
    zero padding to the alignment, then the data section: each tensor's bytes
    followed by zero padding to the alignment (the last one too).
"""

import hashlib
import mmap
import os
import struct

import numpy as np

from . import constants as C
from .errors import ConvertError

_SCALAR_FORMATS = {
    C.GGUF_TYPE_UINT8: "<B", C.GGUF_TYPE_INT8: "<b", C.GGUF_TYPE_UINT16: "<H", C.GGUF_TYPE_INT16: "<h",
    C.GGUF_TYPE_UINT32: "<I", C.GGUF_TYPE_INT32: "<i", C.GGUF_TYPE_FLOAT32: "<f", C.GGUF_TYPE_BOOL: "<?",
    C.GGUF_TYPE_UINT64: "<Q", C.GGUF_TYPE_INT64: "<q", C.GGUF_TYPE_FLOAT64: "<d",
}

# numpy dtype of a tensor's chunks (Q8_0: its raw block bytes)
_TENSOR_DTYPES = {C.GGML_TYPE_F32: np.dtype("<f4"), C.GGML_TYPE_I32: np.dtype("<i4"),
                  C.GGML_TYPE_BF16: np.dtype("<u2"), C.GGML_TYPE_Q8_0: np.dtype("u1")}


def tensor_nbytes(ggml_type, shape):
    """Data bytes of a tensor (shape in PyTorch order; Q8_0 blocks run along the last axis)."""
    n = 1
    for d in shape:
        n *= d
    if ggml_type == C.GGML_TYPE_Q8_0:
        if shape[-1] % C.Q8_0_BLOCK:
            raise ConvertError("Q8_0 rows of %d values are not whole %d-value blocks" % (shape[-1], C.Q8_0_BLOCK))
        return n // C.Q8_0_BLOCK * C.Q8_0_BLOCK_BYTES
    return n * (2 if ggml_type == C.GGML_TYPE_BF16 else 4)

_MAX_DIMS = 4


def _align(n, a):
    return (n + a - 1) // a * a


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _encode_value(vtype, value):
    if vtype == C.GGUF_TYPE_STRING:
        return _string(value)
    fmt = _SCALAR_FORMATS.get(vtype)
    if fmt is None:
        raise ValueError("unsupported metadata value type %d" % vtype)
    return struct.pack(fmt, value)


class Tensor:
    """One tensor to write: stored name, ggml type, PyTorch-order shape, and a
    callable returning an iterator of numpy arrays whose bytes, concatenated,
    are the tensor's data in C order (so big tensors can be streamed)."""

    def __init__(self, name, ggml_type, shape, chunks):
        if ggml_type not in _TENSOR_DTYPES:
            raise ValueError("unsupported tensor type %d" % ggml_type)
        self.name = name
        self.ggml_type = ggml_type
        self.shape = tuple(int(d) for d in shape) if len(shape) else (1,)   # 0-d is stored as [1]
        if any(d <= 0 for d in self.shape):
            raise ConvertError("tensor %r has shape %s: GGUF dimensions must be positive" % (name, list(shape)))
        self.chunks = chunks
        n = 1
        for d in self.shape:
            n *= d
        self.n_elements = n
        self.nbytes = tensor_nbytes(ggml_type, self.shape)

    @property
    def dtype(self):
        return _TENSOR_DTYPES[self.ggml_type]


def build_header(metadata, tensors, alignment=C.GGUF_ALIGNMENT):
    """Header bytes (padded to the alignment) and the data offset of each tensor."""
    out = [C.GGUF_MAGIC, struct.pack("<IQQ", C.GGUF_VERSION, len(tensors), len(metadata))]
    for key, vtype, value in metadata:
        out.append(_string(key))
        out.append(struct.pack("<I", vtype))
        out.append(_encode_value(vtype, value))
    offsets = []
    off = 0
    for t in tensors:
        if len(t.shape) > _MAX_DIMS:
            raise ConvertError("tensor %r has %d dimensions (GGUF allows %d)" % (t.name, len(t.shape), _MAX_DIMS))
        out.append(_string(t.name))
        out.append(struct.pack("<I", len(t.shape)))
        out.append(b"".join(struct.pack("<Q", d) for d in reversed(t.shape)))
        out.append(struct.pack("<IQ", t.ggml_type, off))
        offsets.append(off)
        off = _align(off + t.nbytes, alignment)
    head = b"".join(out)
    head += b"\0" * (_align(len(head), alignment) - len(head))
    return head, offsets, off


def write_gguf_file(path, metadata, tensors, alignment=C.GGUF_ALIGNMENT, progress=None):
    """Writes a GGUF v3 file to `path` (fsynced, not renamed: callers write to a
    temporary name and rename). metadata is a list of (key, value type, value) in
    write order; tensors a list of Tensor in write order. progress(done, total) is
    called as data is written. Returns (size in bytes, SHA-256 hex of the file)."""
    names = set()
    for t in tensors:
        if t.name in names:
            raise ConvertError("duplicate tensor name %r" % t.name)
        names.add(t.name)
    keys = set()
    for key, _, _ in metadata:
        if key in keys:
            raise ConvertError("duplicate metadata key %r" % key)
        keys.add(key)
    head, offsets, data_size = build_header(metadata, tensors, alignment)
    total = len(head) + data_size
    h = hashlib.sha256()
    with open(path, "wb") as f:
        f.write(head)
        h.update(head)
        done = len(head)
        for t, off in zip(tensors, offsets):
            written = 0
            for chunk in t.chunks():
                a = np.ascontiguousarray(chunk)
                if a.dtype != t.dtype:
                    raise ConvertError("tensor %r: data has dtype %s, expected %s" % (t.name, a.dtype, t.dtype))
                b = memoryview(a).cast("B")
                written += len(b)
                if written > t.nbytes:
                    raise ConvertError("tensor %r: more data than its shape %s holds" % (t.name, list(t.shape)))
                f.write(b)
                h.update(b)
                done += len(b)
                if progress:
                    progress(done, total)
            if written != t.nbytes:
                raise ConvertError("tensor %r: %d data bytes, shape %s needs %d"
                                   % (t.name, written, list(t.shape), t.nbytes))
            pad = b"\0" * (_align(written, alignment) - written)
            f.write(pad)
            h.update(pad)
            done += len(pad)
        f.flush()
        os.fsync(f.fileno())
    if done != total:
        raise ConvertError("internal error: wrote %d bytes, layout says %d" % (done, total))
    if progress:
        progress(total, total)
    return total, h.hexdigest()


def write_gguf(path, metadata, tensors, alignment=C.GGUF_ALIGNMENT, progress=None):
    """write_gguf_file through a temporary file renamed into place (atomic)."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        result = write_gguf_file(tmp, metadata, tensors, alignment, progress)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(os.path.dirname(os.path.abspath(path)))
    return result


def fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- reader -----------------------------------------------------------------


class GGUFFile:
    """A parsed GGUF v3 file: metadata (ordered list of (key, type, value)),
    tensors (ordered list of dicts: name, type, ne, shape, offset, nbytes) and
    tensor data as numpy views of the mapped file."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise ConvertError("%s: empty file" % path)
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.size = size
        self._pos = 0
        self._parse()

    def _fail(self, what):
        raise ConvertError("%s: %s at offset %d" % (self.path, what, self._pos))

    def _take(self, n, what):
        if n > self.size - self._pos:
            self._fail("truncated %s (need %d bytes)" % (what, n))
        b = self._map[self._pos:self._pos + n]
        self._pos += n
        return b

    def _u(self, fmt, what):
        return struct.unpack(fmt, self._take(struct.calcsize(fmt), what))[0]

    def _str(self, what):
        n = self._u("<Q", what + " length")
        if n > self.size - self._pos:
            self._fail("%s length %d exceeds the file" % (what, n))
        b = self._take(n, what)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            self._fail("%s is not valid UTF-8" % what)

    def _value(self, vtype, what, depth=0):
        if vtype == C.GGUF_TYPE_STRING:
            return self._str(what)
        if vtype == C.GGUF_TYPE_ARRAY:
            if depth > 0:
                self._fail("nested array in %s" % what)
            etype = self._u("<I", what + " element type")
            n = self._u("<Q", what + " element count")
            if n > self.size - self._pos:
                self._fail("%s element count %d exceeds the file" % (what, n))
            return [self._value(etype, what, depth + 1) for _ in range(n)]
        fmt = _SCALAR_FORMATS.get(vtype)
        if fmt is None:
            self._fail("unknown value type %d of %s" % (vtype, what))
        return self._u(fmt, what)

    def _parse(self):
        if self._take(4, "magic") != C.GGUF_MAGIC:
            self._pos = 0
            self._fail("bad magic (not a GGUF file)")
        version = self._u("<I", "version")
        if version != C.GGUF_VERSION:
            self._fail("unsupported GGUF version %d" % version)
        n_tensors = self._u("<Q", "tensor count")
        n_kv = self._u("<Q", "metadata count")
        if n_tensors > self.size or n_kv > self.size:
            self._fail("counts %d/%d exceed the file size" % (n_tensors, n_kv))
        self.metadata = []
        keys = set()
        for _ in range(n_kv):
            key = self._str("metadata key")
            if key in keys:
                self._fail("duplicate metadata key %r" % key)
            keys.add(key)
            vtype = self._u("<I", "value type of " + key)
            self.metadata.append((key, vtype, self._value(vtype, key)))
        meta = self.meta
        alignment = meta.get(C.KEY_ALIGNMENT, C.GGUF_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            self._fail("bad alignment %r" % (alignment,))
        self.alignment = alignment
        self.tensors = []
        names = set()
        for _ in range(n_tensors):
            name = self._str("tensor name")
            if name in names:
                self._fail("duplicate tensor name %r" % name)
            names.add(name)
            n_dims = self._u("<I", "dimension count of " + name)
            if n_dims == 0 or n_dims > _MAX_DIMS:
                self._fail("tensor %r has %d dimensions" % (name, n_dims))
            ne = [self._u("<Q", "dimension of " + name) for _ in range(n_dims)]
            n = 1
            for d in ne:
                if d == 0:
                    self._fail("tensor %r has a zero dimension" % name)
                n *= d
            ttype = self._u("<I", "type of " + name)
            if ttype not in _TENSOR_DTYPES:
                self._fail("tensor %r has unsupported type %d" % (name, ttype))
            if ttype == C.GGML_TYPE_Q8_0 and ne[0] % C.Q8_0_BLOCK:
                self._fail("Q8_0 tensor %r has rows of %d values (not whole %d-value blocks)"
                           % (name, ne[0], C.Q8_0_BLOCK))
            off = self._u("<Q", "offset of " + name)
            if off % alignment:
                self._fail("tensor %r offset %d is not aligned to %d" % (name, off, alignment))
            self.tensors.append({"name": name, "type": ttype, "ne": ne, "shape": list(reversed(ne)),
                                 "offset": off, "n_elements": n,
                                 "nbytes": tensor_nbytes(ttype, list(reversed(ne)))})
        self.data_start = _align(self._pos, alignment)
        spans = []
        for t in self.tensors:
            begin = self.data_start + t["offset"]
            end = begin + t["nbytes"]
            if end > self.size:
                self._pos = begin
                self._fail("data of tensor %r lies outside the file" % t["name"])
            spans.append((begin, end, t["name"]))
        spans.sort()
        for a, b in zip(spans, spans[1:]):
            if b[0] < a[1]:
                self._pos = b[0]
                self._fail("tensors %r and %r overlap" % (a[2], b[2]))

    @property
    def meta(self):
        return {k: v for k, _, v in self.metadata}

    def tensor(self, name):
        for t in self.tensors:
            if t["name"] == name:
                from .weight_types import from_bf16, from_q8_0   # reduced types are read back as float32
                at = self.data_start + t["offset"]
                if t["type"] == C.GGML_TYPE_Q8_0:
                    a = from_q8_0(self._map[at:at + t["nbytes"]], t["n_elements"])
                else:
                    a = np.frombuffer(self._map, dtype=_TENSOR_DTYPES[t["type"]], count=t["n_elements"], offset=at)
                    if t["type"] == C.GGML_TYPE_BF16:
                        a = from_bf16(a)
                return a.reshape(t["shape"])
        raise KeyError(name)

    def close(self):
        try:
            self._map.close()
        except BufferError:
            pass    # numpy views still alive; the mapping goes with them

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
