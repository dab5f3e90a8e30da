"""The drop-in predict against upstream's recorded predict (../shared/fixtures/reference-small):
every case, durations and tokens exact, features within 1e-4 (the C ABI parity's tolerance);
batches; numpy in → numpy out, torch in → torch out; config keys mapped or refused."""

import json
import os

import numpy as np
import pytest

from conftest import shared

from motionbricks.motion_inference import motion_inference, parse_config

TOL = 1e-4   # absolute, on features of magnitude ~1..10 (measured max 3.9e-5)
INPUTS = ("in_global_root_values", "in_has_global_root_values", "in_local_root_values",
          "in_has_local_root_values", "in_local_poses", "in_has_local_poses", "in_num_tokens")


def cases():
    d = shared("fixtures/reference-small")
    with open(os.path.join(d, "summary.json")) as f:
        summary = json.load(f)
    out = []
    for c in summary["cases"]:
        z = np.load(os.path.join(d, "cases", c["name"] + ".npz"))
        out.append((c, {k: z[k] for k in z.files}))
    return out


def call(inf, z, config, **kw):
    gu = None
    if not config.get("pose_token_sampling_use_argmax", False):
        gu = z["mid_step_gumbel_uniform"].transpose(1, 0, 2, 3, 4)   # [S, B, ...] → [B, S, ...]
    args = [z[k] for k in INPUTS]
    return inf.predict(*args, allowed_pred_num_tokens=z.get("in_allowed_pred_num_tokens"), config=config,
                       gumbel_uniforms=gu, **kw)


@pytest.fixture(scope="module")
def inf(reference_bundle):
    return motion_inference(reference_bundle, device="cpu", threads=1)


def check(poses, n, tokens, z, label):
    want_n = int(z["out_pred_num_tokens"][0])
    assert int(n) == want_n, label + ": duration"
    np.testing.assert_array_equal(tokens[:want_n], z["mid_pred_pose_tokens"][0, :want_n], label + ": tokens")
    err = np.abs(poses[:4 * want_n] - z["out_pred_global_poses"][0, :4 * want_n]).max()
    assert err <= TOL, "%s: features differ by %.2e" % (label, err)
    assert not poses[4 * want_n:].any(), label + ": padding frames are zero"
    return err


def test_every_case(inf):
    worst = 0.0
    for c, z in cases():
        info = {}
        poses, n = call(inf, z, c["config"], info=info)
        assert isinstance(poses, np.ndarray) and poses.shape == (1, 64, 414) and poses.dtype == np.float32
        assert isinstance(n, np.ndarray) and n.shape == (1,) and n.dtype == np.int32
        worst = max(worst, check(poses[0], n[0], info["pred_pose_tokens"][0], z, c["name"]))
    print("10 cases: exact durations and tokens, features max err %.2e" % worst)


def test_torch_in_torch_out(inf):
    torch = pytest.importorskip("torch")
    c, z = cases()[3]
    zt = {k: torch.from_numpy(np.asarray(v)) for k, v in z.items() if k.startswith(("in_", "mid_step_gumbel"))}
    info = {}
    poses, n = call(inf, zt, c["config"], info=info)
    assert isinstance(poses, torch.Tensor) and isinstance(n, torch.Tensor)
    assert poses.dtype == torch.float32 and tuple(poses.shape) == (1, 64, 414)
    check(poses.numpy()[0], n.numpy()[0], info["pred_pose_tokens"].numpy()[0], z, c["name"])


def test_batch_of_different_cases(inf):
    """One call for all 1-step argmax cases (durations differ): each lane equals its case."""
    picked = [(c, z) for c, z in cases() if c["config"]["pose_token_sampling_use_argmax"]
              and c["config"]["num_inference_step"] == 1 and not c["config"]["skip_ending_target_cond"]]
    assert len(picked) >= 4
    batch = {k: np.concatenate([z[k] for _, z in picked]) for k in INPUTS}
    batch["in_allowed_pred_num_tokens"] = np.concatenate(
        [z.get("in_allowed_pred_num_tokens", np.ones((1, 11), np.int64)) for _, z in picked])
    info = {}
    poses, n = call(inf, batch, picked[0][0]["config"], info=info)
    assert poses.shape == (len(picked), 64, 414)
    for i, (c, z) in enumerate(picked):
        check(poses[i], n[i], info["pred_pose_tokens"][i], z, c["name"] + " in a batch")


def test_batch_above_64_lanes(inf):
    """70 lanes run as 64 + 6 C calls and all equal the single call."""
    c, z = cases()[1]
    one, n1 = call(inf, z, c["config"])
    batch = {k: np.repeat(z[k], 70, axis=0) for k in INPUTS}
    poses, n = call(inf, batch, c["config"])
    assert poses.shape[0] == 70 and (n == n1[0]).all()
    assert (poses == one).all()


def test_num_tokens_forms(inf):
    c, z = cases()[1]   # walk_fwd_fixed10_argmax: 10 tokens given
    a, _ = call(inf, z, c["config"])
    for form in (10, np.array([[10]]), [10]):
        zz = dict(z, in_num_tokens=form)
        b, n = call(inf, zz, c["config"])
        assert n[0] == 10 and (a == b).all()
    zz = dict(z, in_num_tokens=None)   # None: predicted
    _, n = call(inf, zz, c["config"])
    assert 6 <= n[0] <= 16
    with pytest.raises(ValueError, match="num_tokens"):
        call(inf, dict(z, in_num_tokens=np.array([17])), c["config"])


def test_config_keys():
    assert parse_config({}) == (1, False, False, True)   # upstream's defaults
    assert parse_config({"num_inference_step": 3, "pose_token_sampling_use_argmax": True,
                         "skip_ending_target_cond": True, "allow_pred_out_of_reach_num_tokens": False,
                         "smooth_root_traj": False, "use_target_cond_in_decoder": True,
                         "final_root_pred_mode": "from_pose_module"}) == (3, True, True, False)
    for bad, word in (({"temperature": 0.5}, "temperature"), ({"use_target_cond_in_decoder": False}, "use_target_cond"),
                      ({"final_root_pred_mode": "from_root_module"}, "final_root_pred_mode"),
                      ({"debug_ground_truth_pose_tokens": np.zeros(3)}, "debug_ground_truth"),
                      ({"num_inference_step": 0}, "num_inference_step"),
                      ({"num_inference_step": 17}, "num_inference_step"),
                      ({"pose_token_sampling_use_argmax": "yes"}, "argmax")):
        with pytest.raises(ValueError, match=word):
            parse_config(bad)


def test_refusals(inf):
    c, z = cases()[0]
    with pytest.raises(ValueError, match="text_embeddings"):
        inf.predict(*[z[k] for k in INPUTS], text_embeddings=np.zeros((1, 512), np.float32))
    with pytest.raises(ValueError, match="local_poses"):
        inf.predict(*[z[k] if k != "in_local_poses" else z[k][:, :, :300] for k in INPUTS])
    import motionbricks as mb
    bad = dict(z, in_global_root_values=z["in_global_root_values"].copy())
    bad["in_global_root_values"][0, 0, 3:] = 3.0   # cos² + sin² far from 1
    with pytest.raises(mb.InvalidArgumentError, match="cos"):
        inf.predict(*[bad[k] for k in INPUTS], config=c["config"])
