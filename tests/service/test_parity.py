"""Parity over HTTP: each reference-small fixture case, sent to serve-infer (JSON and binary
encodings), matches the fixture as `motionbricks infer` does (tests/cli/test-cmd-infer.cpp):
tokens and the duration exactly, the masked duration logits within 1e-4 (-inf where masked),
global features and joint positions within 1e-4 absolute."""

import json
import os
import subprocess

import numpy as np
import pytest

from service_fixture import Server, env

SHARED = env("MB_SHARED")
FIXTURE = os.path.join(SHARED, "fixtures", "reference-small") if SHARED else None
pytestmark = pytest.mark.skipif(not FIXTURE or not os.path.isdir(FIXTURE), reason="skipped: ../shared/fixtures/reference-small not found")
TOL = 1e-4


@pytest.fixture(scope="module")
def server():
    out = os.path.join(os.environ["MB_WORK"], "reference-small-bundle")
    w = os.path.join(FIXTURE, "weights")
    subprocess.run([os.environ["MB_PYTHON"], os.path.join(os.environ["MB_SOURCE_DIR"], "tools", "convert.py"), "bundle",
                    "--pose", os.path.join(w, "pose.safetensors"), "--root", os.path.join(w, "root.safetensors"),
                    "--vqvae", os.path.join(w, "vqvae.safetensors"), "--stats", os.path.join(w, "stats.safetensors"),
                    "--out", out, "--pose-heads", "4", "--root-heads", "4", "--quiet"], check=True)
    with Server(out, None, threads=1) as s:
        yield s


def cases():
    if not FIXTURE or not os.path.isdir(FIXTURE):
        return []
    with open(os.path.join(FIXTURE, "summary.json")) as f:
        return json.load(f)["cases"]


def inputs_of(z, cfg):
    x = {
        "global_root_values": z["in_global_root_values"].astype(np.float32),
        "has_global_root_values": z["in_has_global_root_values"].astype(np.bool_),
        "local_root_values": z["in_local_root_values"].astype(np.float32),
        "has_local_root_values": z["in_has_local_root_values"].astype(np.bool_),
        "local_poses": z["in_local_poses"].astype(np.float32),
        "has_local_poses": z["in_has_local_poses"].astype(np.bool_),
        "num_tokens": z["in_num_tokens"].astype(np.int32).reshape(1),
        "seed": np.array([0], np.uint64),
        "sampling": np.array(["argmax" if cfg["pose_token_sampling_use_argmax"] else "gumbel"], np.object_),
        "num_inference_steps": np.array([cfg["num_inference_step"]], np.int32),
        "skip_ending_target_cond": np.array([cfg["skip_ending_target_cond"]], np.bool_),
        "allow_out_of_reach": np.array([cfg["allow_pred_out_of_reach_num_tokens"]], np.bool_),
    }
    if "in_allowed_pred_num_tokens" in z.files:
        x["allowed_pred_num_tokens"] = (z["in_allowed_pred_num_tokens"] != 0).astype(np.int32).reshape(1, 11)
    if not cfg["pose_token_sampling_use_argmax"]:
        u = z["mid_step_gumbel_uniform"].astype(np.float32)   # [S, 1, 16, 8, 10]
        x["gumbel_uniforms"] = u.reshape(1, u.shape[0], 16, 8, 10)
    return x


CASES = cases()


# ids as a list: an id function would be called on pytest's placeholder for an empty case list
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_reference_case(server, case, binary):
    z = np.load(os.path.join(FIXTURE, case["file"]))
    c = server.client()
    _, out = c.infer("motionbricks", inputs_of(z, case["config"]), binary_inputs=binary, binary_outputs=binary)
    n = int(z["out_pred_num_tokens"][0])
    assert int(out["num_tokens"][0]) == n and int(out["num_frames"][0]) == 4 * n
    assert np.array_equal(out["pose_tokens"][0], z["mid_pred_pose_tokens"][0, :n])
    want_l, got_l = z["mid_num_token_logits"][0], out["num_token_logits"][0]
    masked = np.isinf(want_l)
    assert np.array_equal(masked, ~np.isfinite(got_l))   # -inf in binary, null (NaN) in JSON
    assert np.abs(got_l[~masked] - want_l[~masked]).max() <= TOL
    g = out["global_features"][0]
    assert np.abs(g - z["out_pred_global_poses"][0, : 4 * n]).max() <= TOL
    assert np.abs(out["joint_positions"][0] - z["derived_posed_joints"][0, : 4 * n]).max() <= TOL
    assert np.array_equal(out["root_translations"][0], g[:, :3])
