"""Upstream checkpoints (.ckpt or .safetensors) to a bundle: select and strip the
inference tensors, drop training-only state, check the inventory against the
architecture derived from the shapes, resolve what shapes cannot tell, write."""

import hashlib
import os
import re
import sys

import numpy as np

from . import architecture
from . import constants as C
from .bundle import Component, ComponentTensor, check_stats, hyperparameter_metadata, support_component, write_bundle
from .ckpt import plain, state_dict_tensors
from .errors import ConvertError
from .safetensors import DTYPES, FLOAT_DTYPES, read_safetensors, to_float32

CHUNK_ELEMENTS = 1 << 22

# where Lightning checkpoints keep what shapes cannot tell (first match wins)
HP_PATHS = {
    (C.COMPONENT_POSE, "n_head"): [("model", "backbone_network", "args", "n_head"), ("backbone_network", "args", "n_head"),
                         ("args", "n_head"), ("n_head",)],
    (C.COMPONENT_ROOT, "n_head"): [("model", "backbone_network", "args", "n_head"), ("backbone_network", "args", "n_head"),
                         ("args", "n_head"), ("n_head",)],
    (C.COMPONENT_ROOT, "dilation_growth"): [("model", "backbone_network", "args", "dilation_growth_rate"),
                                  ("backbone_network", "args", "dilation_growth_rate"),
                                  ("args", "dilation_growth_rate"), ("dilation_growth_rate",)],
    (C.COMPONENT_VQ_DECODER, "dilation_growth"): [("model", "pose_vqvae_network", "dilation_growth_rate"),
                                        ("model", "pose_network", "dilation_growth_rate"),
                                        ("pose_vqvae_network", "dilation_growth_rate"),
                                        ("pose_network", "dilation_growth_rate"),
                                        ("args", "dilation_growth_rate"), ("dilation_growth_rate",)],
}


def warn(msg):
    sys.stderr.write("convert: warning: %s\n" % msg)


def sha256_file(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while True:
                b = f.read(1 << 24)
                if not b:
                    break
                h.update(b)
    except OSError as e:
        raise ConvertError("%s: cannot read: %s" % (path, e.strerror))
    return h.hexdigest()


def _magic(path):
    try:
        with open(path, "rb") as f:
            return f.read(4)
    except OSError as e:
        raise ConvertError("%s: cannot open: %s" % (path, e.strerror))


def read_source(path):
    """({name: LazyTensor}, hyper-parameters or None) of a .ckpt or .safetensors."""
    magic = _magic(path)
    if magic == b"PK\x03\x04":
        tensors, hp = state_dict_tensors(path)
        return tensors, (plain(hp) if hp is not None else None)
    if magic == b"\x80\x02\x8a\x0a":     # pickle protocol 2 + torch's legacy magic number
        raise ConvertError("%s: legacy (pre-zip) torch.save format is not supported; re-save it with a "
                           "current torch or export the state dict to .safetensors" % path)
    tensors, _ = read_safetensors(path)
    return tensors, None


def select(role, tensors, path):
    """{stored name: LazyTensor} of a component from a state dict; drops training-only state."""
    out = {}
    dropped = 0
    if role in (C.COMPONENT_POSE, C.COMPONENT_ROOT):
        prefix = C.PREFIX_BACKBONE
    else:
        prefix = C.PREFIX_VQVAE
    for name, t in tensors.items():
        if not name.startswith(prefix):
            dropped += 1
            continue
        short = name[len(prefix):]
        if role == C.COMPONENT_VQ_DECODER:
            keep = short.startswith(C.PREFIX_VQ_DECODER) or short == C.NAME_CODEBOOK
        else:
            keep = short not in C.TRAINING_ONLY_EXACT
        if not keep:
            dropped += 1
            continue
        out[short] = t
    if not out:
        raise ConvertError("%s: no %s tensors (keys starting %r) found" % (path, role, prefix))
    return out, dropped


def _lookup(hp, path):
    cur = hp
    for k in path:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur


def resolve_hparam(role, what, hp, option, release, source):
    """From the checkpoint's hyper-parameters, else the option, else the release value."""
    if hp is not None:
        for path in HP_PATHS[(role, what)]:
            v = _lookup(hp, path)
            if v is None:
                continue
            if type(v) is not int or v <= 0:
                raise ConvertError("%s: hyper-parameter %s = %r is not a positive integer"
                                   % (source, ".".join(path), v))
            if option is not None and option != v:
                warn("%s: %s %s = %d from the checkpoint overrides the option value %d"
                     % (source, role, what, v, option))
            return v
    if option is not None:
        return option
    return release


def _float_chunks(name, lazy):
    def chunks():
        a = to_float32(name, lazy.dtype, lazy.load()).reshape(-1)
        for i in range(0, max(a.size, 1), CHUNK_ELEMENTS):
            c = np.ascontiguousarray(a[i:i + CHUNK_ELEMENTS], dtype=np.float32)
            if not np.isfinite(c).all():
                j = i + int(np.flatnonzero(~np.isfinite(c))[0])
                raise ConvertError("tensor %r: element %d is not finite" % (name, j))
            yield c
    return chunks


def learned_component(role, path, source_sha256, heads_option, dilation_option):
    tensors, hp = read_source(path)
    chosen, dropped = select(role, tensors, path)
    for name, t in chosen.items():
        if t.dtype not in FLOAT_DTYPES:
            raise ConvertError("%s: tensor %r has dtype %s, expected floating point" % (path, name, t.dtype))
    shapes = {n: t.shape for n, t in chosen.items()}
    try:
        hparams = architecture.check_inventory(role, shapes)
    except ConvertError as e:
        raise ConvertError("%s: %s" % (path, e))
    n_head = dilation = None
    if role == C.COMPONENT_POSE:
        n_head = resolve_hparam(role, "n_head", hp, heads_option, C.RELEASE_N_HEAD_POSE, path)
    elif role == C.COMPONENT_ROOT:
        n_head = resolve_hparam(role, "n_head", hp, heads_option, C.RELEASE_N_HEAD_ROOT, path)
    if role in (C.COMPONENT_ROOT, C.COMPONENT_VQ_DECODER):
        dilation = resolve_hparam(role, "dilation_growth", hp, dilation_option, C.RELEASE_DILATION_GROWTH, path)
    architecture.check_heads(role, hparams, n_head, path)
    tlist = [ComponentTensor(n, C.GGML_TYPE_F32, t.shape, _float_chunks(n, t)) for n, t in chosen.items()]
    comp = Component(role, tlist, source_sha256, hyperparameter_metadata(role, n_head, dilation))
    # bytes the conversion will read: as stored (F64 is 8 per element), at least the F32 written
    nbytes = sum(architecture.parameter_count({n: t.shape}) * max(4, DTYPES[t.dtype].itemsize)
                 for n, t in chosen.items())
    info = {"kept": len(chosen), "dropped": dropped, "parameters": architecture.parameter_count(shapes),
            "bytes": nbytes,
            "hparams": hparams, "n_head": n_head, "dilation_growth": dilation}
    return comp, info


def read_stats(mean_path=None, std_path=None, stats_path=None):
    """(mean, std) float32 [418] and the support source hash."""
    if stats_path is not None:
        tensors, _ = read_safetensors(stats_path)
        arrays = []
        for key in (C.STATS_KEY_MEAN, C.STATS_KEY_STD):
            if key not in tensors:
                raise ConvertError("%s: missing tensor %r" % (stats_path, key))
            t = tensors[key]
            if t.dtype not in FLOAT_DTYPES:
                raise ConvertError("%s: %s has dtype %s, expected floating point" % (stats_path, key, t.dtype))
            a = t.load()
            arrays.append(to_float32(key, t.dtype, a) if t.dtype in ("F16", "BF16") else a)
        mean, std = check_stats(arrays[0], arrays[1], stats_path)
        return mean, std, sha256_file(stats_path)
    arrays = []
    for p in (mean_path, std_path):
        try:
            a = np.load(p, allow_pickle=False)
        except OSError as e:
            raise ConvertError("%s: cannot read: %s" % (p, e))
        except ValueError as e:
            raise ConvertError("%s: not a plain .npy array: %s" % (p, e))
        if not isinstance(a, np.ndarray):
            raise ConvertError("%s: not a .npy array" % p)
        arrays.append(a)
    mean, std = check_stats(arrays[0], arrays[1], "%s / %s" % (mean_path, std_path))
    # one hash for the pair: SHA-256 of the two files' bytes, mean first
    h = hashlib.sha256()
    for p in (mean_path, std_path):
        with open(p, "rb") as f:
            h.update(f.read())
    return mean, std, h.hexdigest()


def check_skeleton(directory):
    """Cross-checks the carried G1Skeleton34 constants against upstream's
    skeleton/joints.p and parents.p (torch files, read by the safe unpickler)."""
    from .ckpt import TensorRef, load_checkpoint
    arrays = {}
    for name in ("joints", "parents"):
        path = os.path.join(directory, name + ".p")
        obj, materialise = load_checkpoint(path)
        if not isinstance(obj, TensorRef):
            raise ConvertError("%s: expected one tensor" % path)
        arrays[name] = np.squeeze(materialise(obj))
    joints = arrays["joints"]
    want = np.array([j[2] for j in C.SKELETON_JOINTS], dtype=np.float64)
    if joints.shape != want.shape or joints.dtype.kind != "f":
        raise ConvertError("%s/joints.p: shape %s %s, expected [%d, 3] floats"
                           % (directory, list(joints.shape), joints.dtype, C.N_JOINTS))
    bad = np.flatnonzero((joints.astype(np.float32) != want.astype(np.float32)).any(axis=1))
    if bad.size:
        raise ConvertError("%s/joints.p: joint %d (%s) rest position %s differs from G1Skeleton34 %s"
                           % (directory, bad[0], C.SKELETON_JOINTS[bad[0]][0], joints[bad[0]].tolist(),
                              want[bad[0]].tolist()))
    parents = arrays["parents"]
    want = [j[1] for j in C.SKELETON_JOINTS]
    if parents.shape != (C.N_JOINTS,) or parents.dtype.kind not in "iu" or parents.tolist() != want:
        raise ConvertError("%s/parents.p: %s differs from the G1Skeleton34 parents %s"
                           % (directory, parents.tolist(), want))


_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_REV = re.compile(r"^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$")


def parse_source_overrides(items):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConvertError("--source-sha256 %r: expected COMPONENT=HEX" % item)
        comp, hexval = item.split("=", 1)
        if comp not in C.COMPONENTS:
            raise ConvertError("--source-sha256 %r: unknown component %r (one of %s)"
                               % (item, comp, ", ".join(C.COMPONENTS)))
        if not _HEX64.match(hexval):
            raise ConvertError("--source-sha256 %r: %r is not 64 hexadecimal digits" % (item, hexval))
        if comp in out:
            raise ConvertError("--source-sha256: %s given twice" % comp)
        out[comp] = hexval.lower()
    return out


def check_revision(rev):
    if not _REV.match(rev):
        raise ConvertError("--upstream-revision %r: expected a 40 (or 64) hex digit commit id" % rev)
    return rev.lower()


def check_hparam_options(args):
    """--pose-heads, --root-heads and --dilation-growth: positive where given."""
    for opt in ("pose_heads", "root_heads", "dilation_growth"):
        v = getattr(args, opt)
        if v is not None and v <= 0:
            raise ConvertError("--%s must be positive (got %d)" % (opt.replace("_", "-"), v))


def check_stats_options(args):
    """Either --stats FILE or both --mean and --std."""
    if (args.stats is None) == (args.mean is None and args.std is None):
        raise ConvertError("give either --stats FILE or both --mean and --std")
    if args.stats is None and (args.mean is None or args.std is None):
        raise ConvertError("--mean and --std go together")


def convert(args):
    """The `bundle` subcommand."""
    revision = check_revision(args.upstream_revision)
    overrides = parse_source_overrides(args.source_sha256)
    if args.safe_manifest_sha256 is not None and not _HEX64.match(args.safe_manifest_sha256):
        raise ConvertError("--safe-manifest-sha256 %r is not 64 hexadecimal digits" % args.safe_manifest_sha256)
    check_hparam_options(args)
    check_stats_options(args)
    if args.skeleton is not None:
        check_skeleton(args.skeleton)
    sources = {C.COMPONENT_POSE: args.pose, C.COMPONENT_ROOT: args.root, C.COMPONENT_VQ_DECODER: args.vqvae}
    heads = {C.COMPONENT_POSE: args.pose_heads, C.COMPONENT_ROOT: args.root_heads, C.COMPONENT_VQ_DECODER: None}
    components = {}
    total_bytes = 0
    for role, path in sources.items():
        sha = overrides.get(role) or sha256_file(path)
        comp, info = learned_component(role, path, sha, heads[role], args.dilation_growth)
        components[role] = comp
        total_bytes += info["bytes"]
        if total_bytes > architecture.MAX_CONVERT_BYTES:
            raise ConvertError("%s: the weights up to %s need %d bytes, more than the %d bytes allowed "
                               "(%dx the release)" % (path, role, total_bytes, architecture.MAX_CONVERT_BYTES,
                                                      architecture.MAX_MULTIPLE_OF_RELEASE))
        if not args.quiet:
            sys.stderr.write("convert: %s: %d tensors kept (%d parameters), %d dropped, hparams %s%s%s\n"
                             % (role, info["kept"], info["parameters"], info["dropped"], info["hparams"],
                                "" if info["n_head"] is None else ", n_head %d" % info["n_head"],
                                "" if info["dilation_growth"] is None
                                else ", dilation_growth %d" % info["dilation_growth"]))
    mean, std, stats_sha = read_stats(args.mean, args.std, args.stats)
    components[C.COMPONENT_SUPPORT] = support_component(mean, std, overrides.get(C.COMPONENT_SUPPORT) or stats_sha)
    manifest = write_bundle(args.out, components, revision, args.safe_manifest_sha256, progress=not args.quiet,
                            dtype=args.dtype)
    return manifest
