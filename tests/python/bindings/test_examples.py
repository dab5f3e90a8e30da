"""examples/: the upstream-style predict script runs unchanged but for its import and construction
lines; the README's Python and Go examples are exactly the example files (which tests run)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, shared

EXAMPLE = os.path.join(ROOT, "examples", "predict_upstream_style.py")


def env():
    return dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))


def test_predict_upstream_style(reference_bundle):
    pytest.importorskip("torch")   # written as upstream writes it: with torch
    case = shared("fixtures/reference-small/cases/turn_left_pred_argmax.npz")
    p = subprocess.run([sys.executable, EXAMPLE, reference_bundle, case], env=env(), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    z = np.load(case)
    n = int(z["out_pred_num_tokens"][0])
    assert "frames %d" % (4 * n) in p.stdout
    root = [float(v) for v in re.search(r"last root (\S+) (\S+) (\S+)", p.stdout).groups()]
    assert np.abs(np.array(root) - z["out_pred_global_poses"][0, 4 * n - 1, :3]).max() <= 1e-4


def test_predict_example_differs_from_upstream_only_in_two_lines():
    src = open(EXAMPLE).read()
    body = src.split('"""', 2)[2]   # after the module docstring
    code = [ln for ln in body.splitlines() if "motionbricks" in ln]
    marked = [ln for ln in body.splitlines() if "# motionbricks" in ln]
    assert len(marked) == 2 and set(code) <= set(marked)
    # upstream's call in full_agent._generate_inbetween_frames, verbatim
    assert ("pred_global_motions, num_pred_tokens = inferencer.predict(\n"
            "        global_root_values, has_global_root_values, local_root_values, has_local_root_values,\n"
            "        local_poses, has_local_poses, num_tokens, config=config, info=info,\n") in src


def readme_blocks():
    """{example path: code} for every README block introduced by <!-- example: PATH -->."""
    text = open(os.path.join(ROOT, "README.md")).read()
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", text, re.S)}


def test_readme_examples_are_the_files():
    blocks = readme_blocks()
    assert set(blocks) == {"examples/quickstart.py", "bindings/go/examples/quickstart/main.go"}
    for path, code in blocks.items():
        assert open(os.path.join(ROOT, path)).read() == code, path + " differs from its README block"


def test_python_quickstart_runs(small_bundle, demo_styles, tmp_path):
    (tmp_path / "models").mkdir()
    os.symlink(small_bundle, tmp_path / "models" / "g1-f32")
    os.symlink(demo_styles, tmp_path / "styles")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")], cwd=tmp_path, env=env(),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert len(re.findall(r"^\d+ frames, root ends at", p.stdout, re.M)) == 3
