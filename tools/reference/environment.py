"""Makes upstream MotionBricks importable as a library here and in a user's normal upstream
environment: puts the checkout on sys.path, loads a stand-in of ours (standins/) for each
third-party package that cannot be imported, and on torch < 2 applies the few torch ≥ 2
behaviours upstream relies on. Everything used is returned for the manifest."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "standins")

# package → why upstream needs it on the recorded path
PACKAGES = {
    "einops": "pack/unpack/rearrange/repeat in the motion representation",
    "omegaconf": "loading the checkpoints' hparams.yaml",
    "hydra": "hydra.utils.instantiate of the models, skeleton and motion representation",
    "pytorch_lightning": "LightningModule base of the three models",
    "vector_quantize_pytorch": "the VQ-VAE's per-head codebooks",
    "scipy": "scipy.spatial.transform.Rotation in the MuJoCo converter and the WASD controller",
    "mujoco": "imported by the demo modules (no simulator is built)",
    "pynput": "imported by the demo controller (keys are scripted)",
    "colorlog": "upstream's training logger set-up",
}


def _load_standin(name):
    """Registers standins/<name> as the package `name` (and its submodules via __path__)."""
    folder = os.path.join(STANDINS, name)
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def _missing(name):
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def prepare(upstream_dir):
    """upstream_dir: the checkout's motionbricks/ folder (holding motionbricks/, scripts/, out/).
    Returns {"stand_ins": [{package, why}], "torch_backports": [...], "torch": version}."""
    pkg = os.path.join(upstream_dir, "motionbricks", "motion_backbone", "demo", "full_agent.py")
    if not os.path.isfile(pkg):
        raise FileNotFoundError(f"{upstream_dir}: not an upstream MotionBricks checkout (no {pkg})")
    if upstream_dir not in sys.path:
        sys.path.insert(0, upstream_dir)
    used = []
    for name, why in PACKAGES.items():
        if _missing(name):
            _load_standin(name)
            used.append({"package": name, "why": why + " (stand-in: " + os.path.relpath(
                os.path.join(STANDINS, name), os.path.dirname(os.path.dirname(HERE))) + ")"})
    import torch
    from torch_compat import apply as apply_torch_compat
    backports = apply_torch_compat()
    backports += _scipy_scalar_first()
    return {"stand_ins": used, "torch_backports": backports, "torch": torch.__version__}


def _scipy_scalar_first():
    """scipy < 1.14 has no scalar_first=; upstream passes it (setup.py does not pin scipy)."""
    from scipy.spatial.transform import Rotation
    import inspect
    try:
        if "scalar_first" in inspect.signature(Rotation.from_quat).parameters:
            return []
    except (TypeError, ValueError):
        return []
    original = Rotation.from_quat

    def from_quat(quat, scalar_first=False, **kw):
        import numpy as np
        q = np.asarray(quat, dtype=np.float64)
        return original(q[..., [1, 2, 3, 0]] if scalar_first else q, **kw)

    Rotation.from_quat = staticmethod(from_quat)
    return ["scipy Rotation.from_quat(scalar_first=) (scipy < 1.14)"]
