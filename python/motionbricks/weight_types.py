"""Reduced-precision weights chosen when a bundle is made (--dtype f32|bf16|q8_0).

Only the matrices of linear and conv layers are reduced: names ending in
"weight" with two or more dimensions that are not embeddings. Norms, biases,
embeddings, position tables, the codebook and the support tensors stay F32.
Q8_0 needs rows of whole 32-value blocks along the fastest axis (ggml's
definition), so conv weights (rows of kernel size 3 or 1) are stored BF16 in a
q8_0 bundle. Encodings follow ggml: BF16 rounds to nearest even (NaN kept
quiet); Q8_0 blocks hold d = max|x| / 127 as F16 and q = round(x / d).
"""

import numpy as np

from . import constants as C

DTYPES = ("f32", "bf16", "q8_0")

# 2-D ".weight" tensors that are looked up, not multiplied (they stay F32)
EMBEDDING_WEIGHTS = {C.POSE_TOKEN_EMB, C.POSE_PROJ_NUM_VALID_POSITIONS, C.ROOT_INPUT_POSITION_EMB,
                     C.ROOT_PROJ_INPUT_NUM_TOKENS, C.ROOT_MIDDLE_TOKEN_EMB}


def weight_type(name, shape, dtype):
    """The ggml type `name` of `shape` (PyTorch order) is stored in under --dtype."""
    if dtype == "f32" or len(shape) < 2 or not name.endswith("weight") or name in EMBEDDING_WEIGHTS:
        return C.GGML_TYPE_F32
    if dtype == "q8_0" and len(shape) == 2 and shape[-1] % C.Q8_0_BLOCK == 0:
        return C.GGML_TYPE_Q8_0
    return C.GGML_TYPE_BF16


def to_bf16(a):
    """float32 array -> uint16 bfloat16 bits (round to nearest even)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        r[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return r


def to_q8_0(a):
    """float32 array (a multiple of 32 values) -> uint8 bytes of ggml block_q8_0."""
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, C.Q8_0_BLOCK)
    amax = np.abs(x).max(axis=1)
    d = amax / np.float32(127)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, np.float32(1)), np.float32(0)).astype(np.float32)
    v = x * inv[:, None]
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)   # roundf: half away from zero
    out = np.empty((x.shape[0], C.Q8_0_BLOCK_BYTES), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(-1)


def from_q8_0(b, n):
    """Bytes of n / 32 Q8_0 blocks -> float32 [n]."""
    blk = np.frombuffer(b, dtype=np.uint8).reshape(-1, C.Q8_0_BLOCK_BYTES)
    d = blk[:, :2].copy().view("<f2").astype(np.float32)
    q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(-1)[:n]


def from_bf16(h):
    return (np.asarray(h, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def encoded_chunks(chunks, ggml_type):
    """chunks (a callable giving float32 arrays) re-encoded as ggml_type; Q8_0 regroups
    values into whole blocks across chunk boundaries."""
    if ggml_type == C.GGML_TYPE_F32:
        return chunks
    if ggml_type == C.GGML_TYPE_BF16:
        return lambda: (to_bf16(np.asarray(c, dtype=np.float32).reshape(-1)) for c in chunks())

    def q8():
        rest = np.zeros(0, dtype=np.float32)
        for c in chunks():
            v = np.concatenate([rest, np.asarray(c, dtype=np.float32).reshape(-1)])
            whole = v.size - v.size % C.Q8_0_BLOCK
            if whole:
                yield to_q8_0(v[:whole])
            rest = v[whole:]
        if rest.size:
            raise ValueError("Q8_0 tensor is not a whole number of 32-value blocks")
    return q8


def reduce_component(component, dtype):
    """The component with its matrix weights re-encoded under dtype (in place)."""
    if dtype == "f32":
        return component
    for t in component.tensors:
        if t.ggml_type != C.GGML_TYPE_F32:
            continue
        new = weight_type(t.name, t.shape, dtype)
        if new != C.GGML_TYPE_F32:
            t.chunks = encoded_chunks(t.chunks, new)
            t.ggml_type = new
    return component
