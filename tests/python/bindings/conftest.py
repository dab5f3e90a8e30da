"""Fixtures of the binding tests: bundles and styles made with tools/convert.py in a temporary
directory, the reference fixtures from ../shared (skipped, saying so, when absent).

MB_TEST_HIDE_TORCH=1 makes `import torch` fail for the whole run (the suite then proves the
binding needs numpy alone); CTest runs the suite both ways.
"""

import importlib.abc
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
CONVERT = os.path.join(ROOT, "tools", "convert.py")


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is hidden for this run (MB_TEST_HIDE_TORCH=1)")
        return None


if os.environ.get("MB_TEST_HIDE_TORCH") == "1":
    sys.meta_path.insert(0, _NoTorch())
    for m in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        del sys.modules[m]


def shared(rel):
    base = os.environ.get("MB_SHARED_DIR") or os.path.join(ROOT, "..", "shared")
    p = os.path.join(base, rel)
    if not os.path.exists(p):
        pytest.skip("skipped: ../shared/%s not found" % rel)
    return p


def convert(*args):
    p = subprocess.run([sys.executable, CONVERT] + [str(a) for a in args] + ["--quiet"] * (args[0] == "bundle"),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bindings")


@pytest.fixture(scope="session")
def small_bundle(data_dir):
    """Seeded random weights of the small architecture (always available)."""
    out = data_dir / "small"
    convert("random-bundle", "--preset", "small", "--seed", "1", "--out", out)
    return str(out)


@pytest.fixture(scope="session")
def demo_styles(data_dir):
    out = data_dir / "demo-styles"
    convert("demo-styles", "--out", out)
    return str(out)


@pytest.fixture(scope="session")
def reference_bundle(data_dir):
    """The reference-small weights of ../shared as a bundle."""
    w = shared("fixtures/reference-small/weights")
    out = data_dir / "reference-small"
    if not out.exists():
        convert("bundle", "--pose", os.path.join(w, "pose.safetensors"), "--root", os.path.join(w, "root.safetensors"),
                "--vqvae", os.path.join(w, "vqvae.safetensors"), "--stats", os.path.join(w, "stats.safetensors"),
                "--out", out, "--pose-heads", "4", "--root-heads", "4", "--dilation-growth", "3")
    return str(out)


@pytest.fixture(scope="session")
def agent_styles(data_dir):
    """The 15 styles of the agent-small clip library."""
    clips = shared("fixtures/agent-small/clip_library.npz")
    out = data_dir / "agent-styles"
    if not out.exists():
        convert("styles", "--clips", clips, "--out", out)
    return str(out)


@pytest.fixture(scope="session")
def model(small_bundle):
    import motionbricks as mb
    return mb.Model(small_bundle, device="cpu", threads=1)


@pytest.fixture(scope="session")
def walk(model, demo_styles):
    return model.load_style(os.path.join(demo_styles, "walk.mbstyle"))
