"""Stored tensor names: GGML keeps at most 63 bytes, so longer names are
compacted deterministically (the same rule as src/format/tensor-names.cpp)."""

import hashlib

from . import constants as C
from .errors import ConvertError


def compact_name(name):
    """The stored name of `name` (str): unchanged below 64 UTF-8 bytes, else the
    fixed substitutions in order, then if still too long the first 48 bytes,
    '.', and 12 hex digits of SHA-256 of the original name."""
    raw = name.encode("utf-8")
    if len(raw) < C.MAX_TENSOR_NAME:
        return name
    s = raw
    for old, new in C.COMPACTION_RULES:
        s = s.replace(old.encode("utf-8"), new.encode("utf-8"))
    if len(s) >= C.MAX_TENSOR_NAME:
        digest = hashlib.sha256(raw).hexdigest()[:C.COMPACTION_HASH_HEX]
        s = s[:C.COMPACTION_KEEP_BYTES] + b"." + digest.encode("ascii")
    try:
        return s.decode("utf-8")
    except UnicodeDecodeError:
        raise ConvertError("tensor name %r cannot be compacted without splitting a UTF-8 character" % name)


def compact_names(names):
    """{original: stored} for every name; fatal when two names collide."""
    out = {}
    origin = {}
    for n in names:
        c = compact_name(n)
        prev = origin.get(c)
        if prev is not None and prev != n:
            raise ConvertError("tensor names %r and %r both compact to %r" % (prev, n, c))
        origin[c] = n
        out[n] = c
    return out
