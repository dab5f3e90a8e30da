"""A bundle of the exact architecture with seeded random weights, for tests and
benchmarks on machines without the real weights. Written by the same path as a
real conversion.

Initialisation (the fixtures' "fanin" scheme): Linear/Conv1d/in_proj weights
N(0, 1/fan_in); biases N(0, 0.05); LayerNorm weight 1 + N(0, 0.05) and bias
N(0, 0.05); embeddings and free vectors N(0, 1); the position tables are the
fixed upstream sin/cos tables; the VQ codebook is N(0, 1) and the pose token
embedding is initialised from it as upstream does (each head's codes followed by
their mean, the [MASK] row). Every tensor has its own generator seeded from
(seed, component, crc32(name)), so values do not depend on write order.
"""

import hashlib
import math
import zlib

import numpy as np

from . import architecture
from . import constants as C
from .bundle import Component, ComponentTensor, check_stats, hyperparameter_metadata, support_component, write_bundle

CHUNK_ELEMENTS = 1 << 22

# 2-D tensors that are embeddings (N(0, 1)), not projections
EMBEDDINGS = {
    C.POSE_PROJ_NUM_VALID_POSITIONS, C.ROOT_INPUT_POSITION_EMB, C.ROOT_PROJ_INPUT_NUM_TOKENS,
    C.ROOT_MIDDLE_TOKEN_EMB,
}
FREE_VECTORS = {C.ROOT_NO_LOCAL_POSE_EMB, C.ROOT_NO_LOCAL_ROOT_EMB, C.ROOT_NO_GLOBAL_ROOT_EMB,
                C.ROOT_CONV_NO_FRAME_EMB}
COMPONENT_SEED = {C.COMPONENT_POSE: 1, C.COMPONENT_ROOT: 2, C.COMPONENT_VQ_DECODER: 3, C.COMPONENT_SUPPORT: 4}


def sincos_table(seq_length, dim):
    """Upstream PE1d_sincos: [seq, 1, dim], sin on even and cos on odd columns.
    Arguments are formed in float32 as torch does; exp/sin/cos are evaluated in
    float64 and rounded (torch's float32 kernels agree to about 1 ulp)."""
    pe = np.zeros((seq_length, dim), dtype=np.float32)
    position = np.arange(seq_length, dtype=np.float32)[:, None]
    arg = np.arange(0, dim, 2, dtype=np.float32) * np.float32(-(math.log(10000.0) / dim))
    div = np.exp(arg.astype(np.float64)).astype(np.float32)
    x = (position * div).astype(np.float64)
    pe[:, 0::2] = np.sin(x)
    pe[:, 1::2] = np.cos(x)
    return pe[:, None, :]


def _rng(seed, role, name):
    return np.random.default_rng([seed, COMPONENT_SEED[role], zlib.crc32(name.encode("utf-8"))])


def _normal_chunks(seed, role, name, n, mean, std):
    def chunks():
        rng = _rng(seed, role, name)
        for i in range(0, n, CHUNK_ELEMENTS):
            c = rng.standard_normal(min(CHUNK_ELEMENTS, n - i), dtype=np.float32)
            c *= np.float32(std)
            if mean:
                c += np.float32(mean)
            yield c
    return chunks


def init_rule(name, shape):
    """(mean, std) of the normal a tensor is drawn from."""
    last = name.rsplit(".", 1)[-1]
    parts = name.split(".")
    if len(parts) >= 2 and parts[-2] in (C.LAYER_NORM1, C.LAYER_NORM2):
        return (1.0, 0.05) if last == C.WEIGHT else (0.0, 0.05)
    if name in EMBEDDINGS or name in FREE_VECTORS or name == C.NAME_CODEBOOK:
        return (0.0, 1.0)
    if last in (C.BIAS, C.LAYER_IN_PROJ_BIAS.rsplit(".", 1)[-1]):
        return (0.0, 0.05)
    fan_in = 1
    for d in shape[1:]:
        fan_in *= d
    return (0.0, 1.0 / math.sqrt(fan_in))


def codebook(seed, hp):
    shape = (C.N_CODE_HEADS, C.N_CODES, hp["code_dim"] // C.N_CODE_HEADS)
    n = shape[0] * shape[1] * shape[2]
    return np.concatenate(list(_normal_chunks(seed, C.COMPONENT_VQ_DECODER, C.NAME_CODEBOOK, n, 0.0, 1.0)())
                          ).reshape(shape)


def pose_token_embedding(cb):
    """Upstream init_embedding_from_codebooks: [heads * (codes + 1), dim]."""
    with_mask = np.concatenate([cb, cb.mean(axis=1, keepdims=True, dtype=np.float32)], axis=1)
    return np.ascontiguousarray(with_mask.reshape(-1, cb.shape[2]), dtype=np.float32)


def random_component(role, hp, seed, cb, source_sha256, n_head=None, dilation=None):
    architecture.check_heads(role, hp, n_head, "random-bundle")
    shapes = architecture.expected_shapes(role, hp)
    tensors = []
    for name, shape in shapes.items():
        n = 1
        for d in shape:
            n *= d
        if name in (C.POSE_POSITION_EMB, C.ROOT_POSITION_EMB):
            table = sincos_table(shape[0], shape[2])
            chunks = (lambda a=table: iter([a]))
        elif role == C.COMPONENT_POSE and name == C.POSE_TOKEN_EMB:
            emb = pose_token_embedding(cb)
            chunks = (lambda a=emb: iter([a]))
        elif name == C.NAME_CODEBOOK:
            chunks = (lambda a=cb: iter([a]))
        else:
            mean, std = init_rule(name, shape)
            chunks = _normal_chunks(seed, role, name, n, mean, std)
        tensors.append(ComponentTensor(name, C.GGML_TYPE_F32, shape, chunks))
    return Component(role, tensors, source_sha256, hyperparameter_metadata(role, n_head, dilation))


def synthetic_stats(seed):
    rng = np.random.default_rng([seed, COMPONENT_SEED[C.COMPONENT_SUPPORT]])
    mean = rng.normal(0.0, 0.1, C.N_FEATURES).astype(np.float32)
    std = rng.uniform(0.5, 1.5, C.N_FEATURES).astype(np.float32)
    return mean, std


def random_components(preset, seed, stats=None, sources=None, hparams=None):
    """role -> Component of a random bundle. stats = (mean, std, sha) or None for
    synthetic stats; sources overrides source hashes; hparams overrides the
    preset's heads/dilation."""
    hps = architecture.PRESETS[preset]
    extra = dict(architecture.PRESET_EXTRA[preset])
    extra.update({k: v for k, v in (hparams or {}).items() if v is not None})
    sources = dict(sources or {})

    def sha(role):
        if role in sources:
            return sources[role]
        text = "motionbricks-random-bundle:%s:%s:%d" % (role, preset, seed)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    cb = codebook(seed, hps[C.COMPONENT_VQ_DECODER])
    comps = {
        C.COMPONENT_POSE: random_component(C.COMPONENT_POSE, hps[C.COMPONENT_POSE], seed, cb, sha(C.COMPONENT_POSE),
                                           n_head=extra["pose_heads"]),
        C.COMPONENT_ROOT: random_component(C.COMPONENT_ROOT, hps[C.COMPONENT_ROOT], seed, cb, sha(C.COMPONENT_ROOT),
                                           n_head=extra["root_heads"], dilation=extra["dilation_growth"]),
        C.COMPONENT_VQ_DECODER: random_component(C.COMPONENT_VQ_DECODER, hps[C.COMPONENT_VQ_DECODER], seed, cb,
                                                 sha(C.COMPONENT_VQ_DECODER), dilation=extra["dilation_growth"]),
    }
    if stats is None:
        mean, std = synthetic_stats(seed)
        mean, std = check_stats(mean, std, "synthetic stats")
        comps[C.COMPONENT_SUPPORT] = support_component(mean, std, sha(C.COMPONENT_SUPPORT))
    else:
        mean, std, stats_sha = stats
        comps[C.COMPONENT_SUPPORT] = support_component(mean, std, sources.get(C.COMPONENT_SUPPORT, stats_sha))
    return comps


def random_bundle(args):
    """The `random-bundle` subcommand."""
    from .converter import (check_hparam_options, check_revision, check_stats_options, parse_source_overrides,
                            read_stats)
    from .errors import ConvertError
    revision = check_revision(args.upstream_revision)
    overrides = parse_source_overrides(args.source_sha256)
    stats = None
    if args.stats is not None or args.mean is not None or args.std is not None:
        check_stats_options(args)
        stats = read_stats(args.mean, args.std, args.stats)
    if args.seed < 0 or args.seed >= 2 ** 63:
        raise ConvertError("--seed must be in [0, 2^63)")
    check_hparam_options(args)
    hp = {"pose_heads": args.pose_heads, "root_heads": args.root_heads, "dilation_growth": args.dilation_growth}
    comps = random_components(args.preset, args.seed, stats, overrides, hp)
    return write_bundle(args.out, comps, revision, args.safe_manifest_sha256, progress=not args.quiet,
                        dtype=args.dtype)
