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


DECODER_OUTPUT = ("decoder.%d.weight" % (len(DECODER_WIDTHS) - 2), "decoder.%d.bias" % (len(DECODER_WIDTHS) - 2))


def write_random_sonic(out, seed, smpl, teleop, tame=None):
    """tame: multiply the decoder's output Linear by this factor (actions near 0: a robot under the
    policy then PD-holds its default pose instead of being thrown about, for benchmarks)."""
    if tame is not None and not (math.isfinite(tame) and 0.0 <= tame <= 1.0):
        raise ConvertError("--tame must be in [0, 1], not %r" % tame)
    encoders = ["g1"] + (["teleop"] if teleop else []) + (["smpl"] if smpl else [])
    specs = release_tensors(encoders)
    tensors, digest, n_params = [], hashlib.sha256(), 0
    for gname, uname, shape, e in sorted(specs, key=lambda s: s[0]):
        values = weight_values(uname, shape, e, seed)
        if tame is not None and gname in DECODER_OUTPUT:
            values = values * np.float32(tame)
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
    return "%s: %s, %d tensors, %d parameters, seed %d%s" % (out, arch, len(tensors), n_params, seed,
                                                             "" if tame is None else ", decoder output x %g" % tame)


def add_parser(sub):
    r = sub.add_parser("random-sonic", help="write a SONIC GGUF with the fixtures' deterministic weights")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", required=True, metavar="FILE.gguf")
    r.add_argument("--smpl", action="store_true", help="include the SMPL encoder (mode 2)")
    r.add_argument("--teleop", action="store_true", help="include the teleop encoder (mode 1)")
    r.add_argument("--tame", type=float, default=None, metavar="SCALE",
                   help="multiply the decoder's output layer by SCALE in [0, 1] (e.g. 1e-3: actions near 0, "
                        "the simulated robot PD-holds its pose; for benchmarks)")


# ---- ONNX (the published nvidia/GEAR-SONIC model_encoder.onnx / model_decoder.onnx) --------------

MAX_ONNX_BYTES = 1 << 30
MAX_ONNX_NODES = 100000
_LINEAR_OPS = ("Gemm", "MatMul")


def _load_onnx(path):
    import onnx
    from onnx import numpy_helper
    size = os.path.getsize(path)
    if size > MAX_ONNX_BYTES:
        raise ConvertError("%s: %d bytes, more than the 1 GiB limit" % (path, size))
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    model = onnx.load(path, load_external_data=False)
    g = model.graph
    if len(g.node) > MAX_ONNX_NODES:
        raise ConvertError("%s: %d nodes, more than %d" % (path, len(g.node), MAX_ONNX_NODES))
    inits = {}
    for t in g.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data):
            raise ConvertError("%s: initializer %r keeps its data outside the file (refused)" % (path, t.name))
        inits[t.name] = numpy_helper.to_array(t)
    return g, inits, digest


def _linear_chains(path, g, inits):
    """Every chain of Linear layers (Gemm, or MatMul + Add) found by topology: a layer's successor
    is the next Linear reached from its output through non-Linear nodes only. Returns chains as
    lists of (weight [out, in] float32, bias [out] float32)."""
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    layers = {}     # node name → (weight, bias, output tensor the next layer reads)
    order = []
    for idx, n in enumerate(g.node):
        if n.op_type not in _LINEAR_OPS:
            continue
        key = n.name or "%s_%d" % (n.op_type, idx)
        w_name = next((i for i in n.input[1:2] if i in inits), None)
        if w_name is None:
            continue    # a product of two activations is not a layer
        w = np.asarray(inits[w_name], dtype=np.float32)
        if w.ndim != 2:
            raise ConvertError("%s: %s weight %r has %d dims" % (path, n.op_type, w_name, w.ndim))
        out = n.output[0]
        if n.op_type == "Gemm":
            attrs = {a.name: a for a in n.attribute}
            for a in ("alpha", "beta"):
                if a in attrs and attrs[a].f != 1.0:
                    raise ConvertError("%s: Gemm %s has %s %g (only 1 is supported)" % (path, key, a, attrs[a].f))
            if "transA" in attrs and attrs["transA"].i:
                raise ConvertError("%s: Gemm %s transposes its input" % (path, key))
            weight = w if ("transB" in attrs and attrs["transB"].i) else w.T
            bias = np.asarray(inits[n.input[2]], dtype=np.float32) if len(n.input) > 2 and n.input[2] in inits else None
        else:
            weight = w.T        # MatMul(x, W[in, out])
            bias = None
            for c in consumers.get(out, []):
                if c.op_type == "Add":
                    other = [i for i in c.input if i != out]
                    if len(other) == 1 and other[0] in inits:
                        bias = np.asarray(inits[other[0]], dtype=np.float32)
                        out = c.output[0]
                        break
        if bias is None or bias.shape != (weight.shape[0],):
            raise ConvertError("%s: layer %s has no bias of %d values" % (path, key, weight.shape[0]))
        layers[key] = (np.ascontiguousarray(weight), bias, out)
        order.append((key, n))

    def successors(tensor):
        seen, todo, found = set(), [tensor], []
        while todo:
            t = todo.pop()
            for c in consumers.get(t, []):
                ck = c.name or None
                match = [k for k, n in order if n is c]
                if match:
                    found.append(match[0])
                    continue
                if id(c) in seen:
                    continue
                seen.add(id(c))
                todo.extend(c.output)
        return found

    nxt = {}
    for key, _ in order:
        s = successors(layers[key][2])
        if len(s) > 1:
            raise ConvertError("%s: layer %s feeds %d layers (an MLP chain expected)" % (path, key, len(s)))
        if s:
            nxt[key] = s[0]
    heads = [k for k, _ in order if k not in nxt.values()]
    chains = []
    for h in heads:
        chain, k = [], h
        while k is not None:
            chain.append(layers[k][:2])
            if len(chain) > 64:
                raise ConvertError("%s: a layer chain longer than 64 (a cycle?)" % path)
            k = nxt.get(k)
        for a, b in zip(chain, chain[1:]):
            if b[0].shape[1] != a[0].shape[0]:
                raise ConvertError("%s: chained layers of %d outputs and %d inputs" % (path, a[0].shape[0], b[0].shape[1]))
        chains.append(chain)
    return chains


def convert_onnx(encoder_path, decoder_path, out):
    """The encoders (found by their first layer's inputs: 640 G1, 267 teleop, 840 SMPL, five
    layers to 64 each) and the decoder (994 → … → 29, seven layers) to a SONIC GGUF."""
    ge, ie, enc_sha = _load_onnx(encoder_path)
    gd, idd, dec_sha = _load_onnx(decoder_path)
    by_input = {640: "g1", 267: "teleop", 840: "smpl"}
    encoders = {}
    for chain in _linear_chains(encoder_path, ge, ie):
        which = by_input.get(chain[0][0].shape[1])
        if which is None or len(chain) != 5 or chain[-1][0].shape[0] != 64:
            raise ConvertError("%s: an encoder chain of %d layers from %d inputs to %d (expected 5 layers from "
                               "640/267/840 to 64)" % (encoder_path, len(chain), chain[0][0].shape[1], chain[-1][0].shape[0]))
        if which in encoders:
            raise ConvertError("%s: two %s encoders" % (encoder_path, which))
        encoders[which] = chain
    if "g1" not in encoders:
        raise ConvertError("%s: no G1 encoder (640 inputs)" % encoder_path)
    decs = _linear_chains(decoder_path, gd, idd)
    if len(decs) != 1 or len(decs[0]) != 7 or decs[0][0][0].shape[1] != 994 or decs[0][-1][0].shape[0] != 29:
        raise ConvertError("%s: expected one decoder chain of 7 layers from 994 inputs to 29" % decoder_path)
    tensors, n_params, digest = [], 0, hashlib.sha256()
    named = [("encoder" if w == "g1" else w + "_encoder", c) for w, c in encoders.items()] + [("decoder", decs[0])]
    items = []
    for prefix, chain in named:
        for k, (w, b) in enumerate(chain):
            items.append(("%s.%d.weight" % (prefix, k), w))
            items.append(("%s.%d.bias" % (prefix, k), b))
    for name, a in sorted(items, key=lambda x: x[0]):
        a = np.ascontiguousarray(a, dtype="<f4")
        if not np.all(np.isfinite(a)):
            raise ConvertError("tensor %s holds non-finite values" % name)
        digest.update(a.tobytes())
        n_params += a.size
        tensors.append(gguf.Tensor(name, C.GGML_TYPE_F32, a.shape, lambda v=a: iter([v])))
    arch = ARCH_G1_SMPL if "smpl" in encoders else ARCH_G1
    extra = [("sonic.architecture", C.GGUF_TYPE_STRING, arch),
             ("sonic.encoder_sha256", C.GGUF_TYPE_STRING, enc_sha),
             ("sonic.decoder_sha256", C.GGUF_TYPE_STRING, dec_sha)]
    gguf.write_gguf(out, component_metadata("sonic", "0" * 40, enc_sha, n_params, extra), tensors)
    return "%s: %s from %s, %s (%s), %d parameters" % (out, arch, os.path.basename(encoder_path),
                                                      os.path.basename(decoder_path), ", ".join(sorted(encoders)), n_params)


def add_onnx_parser(sub):
    r = sub.add_parser("sonic", help="convert the GEAR-SONIC ONNX encoder and decoder to a SONIC GGUF")
    r.add_argument("--encoder", required=True, metavar="model_encoder.onnx")
    r.add_argument("--decoder", required=True, metavar="model_decoder.onnx")
    r.add_argument("--out", required=True, metavar="FILE.gguf")
