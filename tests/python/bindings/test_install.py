"""`pip install` of python/ offline (Debian's pip and setuptools, no build isolation) carries the
package's own copy of the library, which the binding then finds without MOTIONBRICKS_LIBRARY."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_pip_install_with_own_library(tmp_path, small_bundle):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("skipped: pip not installed")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("build", "*.egg-info", "lib"))
    (src / "motionbricks" / "lib").mkdir()
    shutil.copy(os.environ["MOTIONBRICKS_LIBRARY"], src / "motionbricks" / "lib" / "libmotionbricks.so")
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(target), str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in os.environ.items() if k != "MOTIONBRICKS_LIBRARY"}
    env["PYTHONPATH"] = str(target)
    code = ("import motionbricks as mb, motionbricks._native as n; m = mb.Model(%r, threads=1); "
            "print(n.load().path)" % small_bundle)
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(target / "motionbricks" / "lib" / "libmotionbricks.so")
