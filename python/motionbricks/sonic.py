"""SONIC policy GGUF files: `random-sonic` writes the fixtures' deterministic weights
(fixtures/sonic/WEIGHTS.md: FNV-1a-64 of the upstream tensor name seeds a SplitMix64 stream;
value = (top 24 bits - 2^23) * 2^(-23-e)) at release widths, under the runtime's names:
encoder.{k} <- encoders.g1.module.{2k}, teleop_encoder.{k} <- encoders.teleop.module.{2k},
smpl_encoder.{k} <- encoders.smpl.module.{2k}, decoder.{k} <- decoders.g1_dyn.module.{2k}."""

import hashlib
import math
import os

import numpy as np

from . import constants as C
from . import gguf
from .bundle import component_metadata
from .errors import ConvertError

ENCODER_WIDTHS = {"g1": 640, "teleop": 267, "smpl": 840}
ENCODER_TAIL = (2048, 1024, 512, 512, 64)
DECODER_WIDTHS = (994, 2048, 2048, 1024, 1024, 512, 512, 29)
ARCH_G1 = "g1-mode0-mlp-fsq32-v1"
ARCH_G1_SMPL = "g1-smpl-mode02-mlp-fsq32-v1"

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_CHUNK = 1 << 20


def _fnv1a64(name):
    h = 0xcbf29ce484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def weight_values(name, shape, e, seed):
    """The tensor's float32 values (C order) per WEIGHTS.md."""
    n = int(np.prod(shape))
    state0 = np.uint64(_fnv1a64(name) ^ ((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
    out = np.empty(n, dtype="<f4")
    scale = np.float32(2.0 ** (-23 - e))
    with np.errstate(over="ignore"):
        for lo in range(0, n, _CHUNK):
            i = np.arange(lo + 1, min(n, lo + _CHUNK) + 1, dtype=np.uint64)
            z = state0 + i * _GOLDEN
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
            u = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
            out[lo:lo + len(i)] = u.astype(np.float32) * scale
    return out.reshape(shape)


def _exponent(fan_in, first, last_of_encoder):
    """WEIGHTS.md's rule: round(0.5 log2(fan_in m / 3)), m = 1 for the first Linear of an MLP and
    0.36 otherwise, minus 1 for the last Linear of each encoder."""
    e = int(round(0.5 * math.log2(fan_in * (1.0 if first else 0.36) / 3.0)))
    return e - 1 if last_of_encoder else e


def release_tensors(encoders):
    """(gguf name, upstream name, torch shape, e) of the chosen encoders and the decoder."""
    out = []

    def mlp(prefix, upstream, widths, encoder):
        for k in range(len(widths) - 1):
            n_in, n_out = widths[k], widths[k + 1]
            last = k == len(widths) - 2
            out.append(("%s.%d.weight" % (prefix, k), "%s.module.%d.weight" % (upstream, 2 * k), (n_out, n_in),
                        _exponent(n_in, k == 0, encoder and last)))
            out.append(("%s.%d.bias" % (prefix, k), "%s.module.%d.bias" % (upstream, 2 * k), (n_out,), 7))

    for which in encoders:
        prefix = "encoder" if which == "g1" else which + "_encoder"
        mlp(prefix, "encoders." + which, (ENCODER_WIDTHS[which],) + ENCODER_TAIL, True)
    mlp("decoder", "decoders.g1_dyn", DECODER_WIDTHS, False)
    return out


def write_random_sonic(out, seed, smpl, teleop):
    encoders = ["g1"] + (["teleop"] if teleop else []) + (["smpl"] if smpl else [])
    specs = release_tensors(encoders)
    tensors, digest, n_params = [], hashlib.sha256(), 0
    for gname, uname, shape, e in sorted(specs, key=lambda s: s[0]):
        values = weight_values(uname, shape, e, seed)
        digest.update(values.tobytes())
        n_params += values.size
        tensors.append(gguf.Tensor(gname, C.GGML_TYPE_F32, shape, lambda v=values: iter([v])))
    arch = ARCH_G1_SMPL if smpl else ARCH_G1
    extra = [("sonic.architecture", C.GGUF_TYPE_STRING, arch),
             ("sonic.encoder_sha256", C.GGUF_TYPE_STRING, "0" * 64),
             ("sonic.decoder_sha256", C.GGUF_TYPE_STRING, "0" * 64)]
    md = component_metadata("sonic", "0" * 40, digest.hexdigest(), n_params, extra)
    if os.path.isdir(out):
        raise ConvertError("%s is a directory" % out)
    gguf.write_gguf(out, md, tensors)
    return "%s: %s, %d tensors, %d parameters, seed %d" % (out, arch, len(tensors), n_params, seed)


def add_parser(sub):
    r = sub.add_parser("random-sonic", help="write a SONIC GGUF with the fixtures' deterministic weights")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", required=True, metavar="FILE.gguf")
    r.add_argument("--smpl", action="store_true", help="include the SMPL encoder (mode 2)")
    r.add_argument("--teleop", action="store_true", help="include the teleop encoder (mode 1)")
