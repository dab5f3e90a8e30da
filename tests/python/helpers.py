"""Shared helpers of the converter tests: paths, running the CLI, synthetic inputs."""

import os
import subprocess
import sys
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from motionbricks import architecture  # noqa: E402
from motionbricks import constants as C  # noqa: E402

CONVERT = os.path.join(ROOT, "tools", "convert.py")


def shared_dir():
    return os.environ.get("MB_SHARED_DIR") or os.path.join(ROOT, "..", "shared")


def require_shared(rel):
    """Absolute path of ../shared/rel, or skip the test saying what is missing."""
    p = os.path.join(shared_dir(), rel)
    if not os.path.exists(p):
        raise unittest.SkipTest("skipped: ../shared/%s not found" % rel)
    return p


def run_cli(*args):
    """(exit status, stdout, stderr) of tools/convert.py."""
    p = subprocess.run([sys.executable, CONVERT] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def random_state_dicts(seed=0, preset="small"):
    """Upstream-style state dicts (prefixed keys, training-only tensors included)
    of a preset architecture: {'pose': {...}, 'root': {...}, 'vqvae': {...}}."""
    rng = np.random.default_rng(seed)
    hps = architecture.PRESETS[preset]
    out = {}
    for role, key, prefix in ((C.COMPONENT_POSE, "pose", C.PREFIX_BACKBONE),
                              (C.COMPONENT_ROOT, "root", C.PREFIX_BACKBONE),
                              (C.COMPONENT_VQ_DECODER, "vqvae", C.PREFIX_VQVAE)):
        sd = {}
        for name, shape in architecture.expected_shapes(role, hps[role]).items():
            sd[prefix + name] = rng.standard_normal(shape).astype(np.float32)
        out[key] = sd
    out["pose"][C.PREFIX_BACKBONE + "initted"] = np.ones([1], dtype=np.bool_)
    vq = out["vqvae"]
    cb = vq[C.PREFIX_VQVAE + C.NAME_CODEBOOK]
    vq[C.PREFIX_VQVAE + "encoder.model.0.weight"] = rng.standard_normal((64, 304, 3)).astype(np.float32)
    vq[C.PREFIX_VQVAE + "encoder.model.0.bias"] = rng.standard_normal(64).astype(np.float32)
    vq[C.PREFIX_VQVAE + "quantizer.vq._codebook.embed_avg"] = cb.copy()
    vq[C.PREFIX_VQVAE + "quantizer.vq._codebook.cluster_size"] = np.ones(cb.shape[:2], dtype=np.float32)
    vq[C.PREFIX_VQVAE + "quantizer.vq._codebook.initted"] = np.array(True)
    return out


def random_stats(seed=0):
    rng = np.random.default_rng(seed + 100)
    return rng.standard_normal(C.N_FEATURES), rng.uniform(0.1, 2.0, C.N_FEATURES)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_sources(directory, sds=None, stats=None, seed=0):
    """pose/root/vqvae .safetensors and mean/std .npy in directory; returns the
    bundle command's input arguments."""
    from motionbricks.safetensors import write_safetensors
    sds = sds if sds is not None else random_state_dicts(seed)
    mean, std = stats if stats is not None else random_stats(seed)
    paths = {}
    for key in ("pose", "root", "vqvae"):
        paths[key] = os.path.join(directory, key + ".safetensors")
        write_safetensors(paths[key], sds[key])
    paths["mean"] = os.path.join(directory, "mean.npy")
    paths["std"] = os.path.join(directory, "std.npy")
    np.save(paths["mean"], mean)
    np.save(paths["std"], std)
    return ["--pose", paths["pose"], "--root", paths["root"], "--vqvae", paths["vqvae"],
            "--mean", paths["mean"], "--std", paths["std"]], paths


def sha256_of(path):
    import hashlib
    return hashlib.sha256(read_bytes(path)).hexdigest()
