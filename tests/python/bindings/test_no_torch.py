"""The run with MB_TEST_HIDE_TORCH=1 really has no torch, and the binding never imports it."""

import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(os.environ.get("MB_TEST_HIDE_TORCH") != "1", reason="only in the run without torch")
def test_torch_is_hidden():
    with pytest.raises(ImportError):
        import torch  # noqa: F401


def test_binding_never_imports_torch(small_bundle):
    code = ("import sys, numpy as np; import motionbricks as mb; from motionbricks import motion_inference, demo_agent; "
            "m = mb.Model(%r, threads=1); assert 'torch' not in sys.modules, 'torch imported'" % small_bundle)
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "python")
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=root), capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
