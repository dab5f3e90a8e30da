"""The MotionBricks GGUF model bundle v1 writer: four components plus
manifest.json, all written into a staging directory and moved into place only
when every one is complete (output.staged_output), so a failed conversion leaves
nothing behind.

Shared by `convert.py bundle` (real checkpoints) and `convert.py random-bundle`.
"""

import hashlib
import json
import os
import sys
import time

import numpy as np

from . import constants as C
from . import gguf
from .errors import ConvertError
from .names import compact_names
from .output import staged_output


class ComponentTensor:
    """A tensor of a component under its original (uncompacted) name."""

    def __init__(self, name, ggml_type, shape, chunks):
        self.name = name
        self.ggml_type = ggml_type
        self.shape = tuple(shape)
        self.chunks = chunks


class Component:
    """One bundle file: role, tensors, provenance and extra metadata
    (list of (key, type, value) appended after the standard keys)."""

    def __init__(self, role, tensors, source_sha256, extra_metadata=()):
        self.role = role
        self.tensors = tensors
        self.source_sha256 = source_sha256
        self.extra_metadata = list(extra_metadata)


def hyperparameter_metadata(role, n_head=None, dilation_growth=None):
    """The optional keys shapes cannot tell, only where they differ from the release."""
    out = []
    if role in (C.COMPONENT_POSE, C.COMPONENT_ROOT) and n_head is not None:
        release = C.RELEASE_N_HEAD_POSE if role == C.COMPONENT_POSE else C.RELEASE_N_HEAD_ROOT
        if n_head != release:
            out.append((C.KEY_N_HEAD, C.GGUF_TYPE_UINT32, n_head))
    if role in (C.COMPONENT_ROOT, C.COMPONENT_VQ_DECODER) and dilation_growth is not None:
        if dilation_growth != C.RELEASE_DILATION_GROWTH:
            out.append((C.KEY_DILATION_GROWTH, C.GGUF_TYPE_UINT32, dilation_growth))
    return out


def component_metadata(role, upstream_revision, source_sha256, parameter_count, extra=(), dtype="f32"):
    file_type = C.FILE_TYPES[dtype] if role != C.COMPONENT_SUPPORT else C.FILE_TYPE_ALL_F32
    md = [
        (C.KEY_ARCHITECTURE, C.GGUF_TYPE_STRING, C.ARCHITECTURE),
        (C.KEY_NAME, C.GGUF_TYPE_STRING, C.MODEL_NAME),
        (C.KEY_ALIGNMENT, C.GGUF_TYPE_UINT32, C.GGUF_ALIGNMENT),
        (C.KEY_FILE_TYPE, C.GGUF_TYPE_UINT32, file_type),
        (C.KEY_FORMAT_VERSION, C.GGUF_TYPE_UINT32, C.FORMAT_VERSION),
        (C.KEY_COMPONENT, C.GGUF_TYPE_STRING, role),
        (C.KEY_SKELETON, C.GGUF_TYPE_STRING, C.SKELETON),
        (C.KEY_UPSTREAM_REVISION, C.GGUF_TYPE_STRING, upstream_revision),
        (C.KEY_SOURCE_SHA256, C.GGUF_TYPE_STRING, source_sha256),
        (C.KEY_PARAMETER_COUNT, C.GGUF_TYPE_UINT64, parameter_count),
    ]
    if role == C.COMPONENT_SUPPORT:
        md.append((C.KEY_JOINT_NAMES, C.GGUF_TYPE_STRING,
                   C.JOINT_NAMES_SEPARATOR.join(j[0] for j in C.SKELETON_JOINTS)))
    md.extend(extra)
    return md


def gguf_tensors(component):
    """Tensors in write order (sorted by original name) under their stored names."""
    order = sorted(component.tensors, key=lambda t: t.name)
    stored = compact_names([t.name for t in order])
    return [gguf.Tensor(stored[t.name], t.ggml_type, t.shape, t.chunks) for t in order]


# ---- support ------------------------------------------------------------------


def check_stats(mean, std, where):
    """mean/std as float32 [418]; finite, std >= 0."""
    out = []
    for what, a in (("mean", mean), ("std", std)):
        a = np.asarray(a)
        if a.dtype.kind != "f":
            raise ConvertError("%s: %s has dtype %s, expected floating point" % (where, what, a.dtype))
        if a.shape != (C.N_FEATURES,):
            raise ConvertError("%s: %s has shape %s, expected [%d]" % (where, what, list(a.shape), C.N_FEATURES))
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise ConvertError("%s: %s[%d] is not finite (%r)" % (where, what, bad[0], a[bad[0]]))
        with np.errstate(over="ignore"):
            f = a.astype(np.float32)
        bad = np.flatnonzero(~np.isfinite(f))
        if bad.size:
            raise ConvertError("%s: %s[%d] = %r overflows float32" % (where, what, bad[0], a[bad[0]]))
        out.append(f)
    neg = np.flatnonzero(out[1] < 0)
    if neg.size:
        raise ConvertError("%s: std[%d] = %r is negative" % (where, neg[0], out[1][neg[0]]))
    return out


def support_component(mean, std, source_sha256):
    """The support component: skeleton constants and the stats (float32 [418])."""
    parents = np.array([j[1] for j in C.SKELETON_JOINTS], dtype=np.int32)
    neutral = np.array([j[2] for j in C.SKELETON_JOINTS], dtype=np.float64).astype(np.float32)
    arrays = {
        C.SUPPORT_JOINT_PARENTS: (C.GGML_TYPE_I32, parents),
        C.SUPPORT_MOTION_MEAN: (C.GGML_TYPE_F32, np.asarray(mean, dtype=np.float32)),
        C.SUPPORT_MOTION_STD: (C.GGML_TYPE_F32, np.asarray(std, dtype=np.float32)),
        C.SUPPORT_NEUTRAL_JOINTS: (C.GGML_TYPE_F32, neutral),
    }
    tensors = [ComponentTensor(n, t, a.shape, (lambda a=a: iter([a]))) for n, (t, a) in arrays.items()]
    return Component(C.COMPONENT_SUPPORT, tensors, source_sha256)


# ---- progress -------------------------------------------------------------------


class Progress:
    """Progress of a long write on stderr: a rewritten line on a terminal, else a
    line every 10 percent. Small files are written silently."""

    MIN_BYTES = 32 << 20

    def __init__(self, label, enabled=True):
        self.label = label
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.last = -1
        self.t0 = time.monotonic()

    def __call__(self, done, total):
        if not self.enabled or total < self.MIN_BYTES:
            return
        pct = int(100 * done / total)
        step = 1 if self.tty else 10
        if pct == self.last or (pct // step == self.last // step and done != total):
            return
        self.last = pct
        msg = "convert: writing %s %3d%% (%d / %d MB, %.1f s)" % (
            self.label, pct, done >> 20, total >> 20, time.monotonic() - self.t0)
        if self.tty:
            sys.stderr.write("\r" + msg + ("\n" if done == total else ""))
        else:
            sys.stderr.write(msg + "\n")
        sys.stderr.flush()


# ---- the bundle -------------------------------------------------------------------


def default_safe_manifest_sha256(components, upstream_revision):
    """SHA-256 of the canonical JSON record of what was extracted: per component
    its source hash and every kept tensor (original name, stored name, type, shape)."""
    rec = {"upstream_revision": upstream_revision, "components": {}}
    for role, comp in components.items():
        stored = compact_names(sorted(t.name for t in comp.tensors))
        rec["components"][role] = {
            "source_sha256": comp.source_sha256,
            "tensors": [[t.name, stored[t.name], C.GGML_TYPE_NAMES[t.ggml_type], list(t.shape)]
                        for t in sorted(comp.tensors, key=lambda t: t.name)],
        }
    text = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_bundle(out_dir, components, upstream_revision, safe_manifest_sha256=None, progress=True, dtype="f32"):
    """Writes the four components and manifest.json into out_dir. components maps
    role -> Component. dtype (f32, bf16, q8_0) reduces the matrix weights
    (weight_types.py); a reduced bundle's manifest names it (weight_dtype) and counts
    each component's tensors per type (tensor_types). Returns the manifest dict."""
    from .weight_types import DTYPES, reduce_component
    if dtype not in DTYPES:
        raise ConvertError("--dtype %r: expected one of %s" % (dtype, ", ".join(DTYPES)))
    for comp in components.values():
        reduce_component(comp, dtype)
    missing = [c for c in C.COMPONENTS if c not in components]
    if missing:
        raise ConvertError("internal error: components %s missing" % missing)
    if safe_manifest_sha256 is None:
        safe_manifest_sha256 = default_safe_manifest_sha256(components, upstream_revision)
    entries = {}
    with staged_output(out_dir) as stage:
        for role in C.COMPONENTS:
            comp = components[role]
            tensors = gguf_tensors(comp)
            n_params = sum(t.n_elements for t in tensors)
            md = component_metadata(role, upstream_revision, comp.source_sha256, n_params, comp.extra_metadata,
                                    dtype)
            size, sha = gguf.write_gguf_file(os.path.join(stage, C.COMPONENT_FILES[role]), md, tensors,
                                             progress=Progress(C.COMPONENT_FILES[role], progress))
            entries[role] = {
                C.MANIFEST_KEY_PATH: C.COMPONENT_FILES[role],
                C.MANIFEST_KEY_SHA256: sha,
                C.MANIFEST_KEY_TENSOR_COUNT: len(tensors),
                C.MANIFEST_KEY_PARAMETER_COUNT: n_params,
            }
            if dtype != "f32":
                types = {}
                for t in tensors:
                    types[C.GGML_TYPE_NAMES[t.ggml_type]] = types.get(C.GGML_TYPE_NAMES[t.ggml_type], 0) + 1
                entries[role][C.MANIFEST_KEY_TENSOR_TYPES] = types
        manifest = {
            C.MANIFEST_KEY_FORMAT: C.MANIFEST_FORMAT,
            C.MANIFEST_KEY_UPSTREAM_REVISION: upstream_revision,
            C.MANIFEST_KEY_SKELETON: C.SKELETON,
            C.MANIFEST_KEY_JOINT_COUNT: C.N_JOINTS,
            C.MANIFEST_KEY_INFERENCE_PARAMETER_COUNT: sum(
                entries[c][C.MANIFEST_KEY_PARAMETER_COUNT] for c in C.LEARNED_COMPONENTS),
            C.MANIFEST_KEY_COMPONENTS: entries,
            C.MANIFEST_KEY_SAFE_MANIFEST_SHA256: safe_manifest_sha256,
        }
        if dtype != "f32":   # F32 manifests stay byte-identical to the release's
            manifest[C.MANIFEST_KEY_WEIGHT_DTYPE] = dtype
        with open(os.path.join(stage, C.MANIFEST_FILE), "w", encoding="utf-8", newline="\n") as f:
            f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
    return manifest
