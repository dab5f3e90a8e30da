"""The reference recorder: runs upstream MotionBricks' own inference and demo agent over a
scripted session (capture.py, in its own process) and writes, into --out:

  session.mbparity   open-loop plan events (.mbparity v1): context, command, upstream's unblended
                     output and placed targets of every replan
  session.mbreplay   the session as upstream's demo showed it (.mbreplay v1)
  root.npz, pose.npz, decoder.npz
                     per replan (leading axis), the stages' tensors upstream computed
  capture.json       environment, timings, script, per-replan decisions and their margins
  manifest.json      reference fixture manifest v1 naming every file above with its SHA-256

Weights: --result-dir is an upstream out/ folder (the release's motionbricks_{pose,root,vqvae}/
version_1 with their checkpoints); or --weights DIR of {pose,root,vqvae,stats}.safetensors (such
as ../shared/fixtures/reference-small/weights) with --model-config for their size overrides, from
which an upstream-layout folder is built first (checkpoints.py).

usage: record.py --upstream CHECKOUT/motionbricks (--result-dir OUT | --weights DIR [--model-config FILE])
                 [--clips G1-clip.ckpt] [--session FILE.json] [--device cpu|cuda] [--threads N]
                 [--random-seed N] [--upstream-revision SHA] --out DIR"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoints  # noqa: E402
import session as session_script  # noqa: E402
from from_agent_run import plans_from_run, replay_from_run  # noqa: E402
from manifest import write_manifest  # noqa: E402
from mbfixtures import write_mbparity, write_mbreplay  # noqa: E402

STAGES = {  # fixture file → the captured arrays it holds (leading axis: replan)
    "root.npz": ["rp_step", "rp_in_global_root_values", "rp_in_has_global_root_values", "rp_in_local_root_values",
                 "rp_in_has_local_root_values", "rp_in_local_poses", "rp_in_has_local_poses",
                 "rp_in_allowed_pred_num_tokens", "root_in_norm_global_root_values", "root_in_norm_local_root_values",
                 "root_in_norm_local_poses", "root_num_token_logits", "rp_out_num_tokens",
                 "root_pred_global_root_values", "root_pred_local_root_values"],
    "pose.npz": ["rp_step", "rp_out_num_tokens", "pose_tokens_in", "pose_root_condition", "pose_condition",
                 "pose_has_condition", "pose_logits", "pose_tokens"],
    "decoder.npz": ["rp_step", "rp_out_num_tokens", "decoder_quantized", "decoder_target_condition",
                    "decoder_has_target_condition", "decoder_external_condition", "decoder_token_mask",
                    "decoder_output", "rp_out_global_poses"],
}
CKPT_FILES = [os.path.join(folder, "version_1", "checkpoints", checkpoints.CKPT)
              for folder in checkpoints.COMPONENTS.values()]


def upstream_revision(upstream, given):
    if given:
        return given
    try:
        return subprocess.run(["git", "-C", upstream, "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"record: {upstream} is not a git work tree; pass --upstream-revision SHA")


def write_stages(run, out):
    for name, keys in STAGES.items():
        np.savez(os.path.join(out, name), **{k: run[k] for k in keys})
    return list(STAGES)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the checkout's motionbricks/ folder")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--result-dir", help="upstream out/ folder with the release checkpoints")
    src.add_argument("--weights", help="folder of {pose,root,vqvae,stats}.safetensors")
    ap.add_argument("--model-config", help="model_config.json whose overrides size the --weights networks")
    ap.add_argument("--clips", help="clip library checkpoint (default: RESULT_DIR/G1-clip.ckpt)")
    ap.add_argument("--session", help="session script JSON (default: the built-in 420-frame session)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's)")
    ap.add_argument("--random-seed", type=int, default=1234, help="the demo's --random_seed")
    ap.add_argument("--upstream-revision", help="upstream commit (default: git rev-parse HEAD of --upstream)")
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch for the capture")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    upstream = os.path.abspath(a.upstream)
    revision = upstream_revision(upstream, a.upstream_revision)
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "work")
    weights = {}
    if a.weights:
        overrides = checkpoints.overrides_from_model_config(a.model_config) if a.model_config else {}
        result = checkpoints.build(upstream, a.weights, work, overrides)
        for name in sorted(os.listdir(a.weights)):
            weights["weights/" + name] = os.path.join(a.weights, name)
    else:
        result = os.path.abspath(a.result_dir)
    for rel in CKPT_FILES:
        weights[rel] = os.path.join(result, rel)
    clips = a.clips or os.path.join(result, "G1-clip.ckpt")
    weights[os.path.basename(clips)] = clips
    script = session_script.load(a.session)
    frames = session_script.validate(script)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "session.json"), "w") as f:
        json.dump({"script": script}, f, indent=1)
    capture = os.path.join(work, "capture.npz")
    cmd = [a.python, os.path.join(HERE, "capture.py"), "--upstream", upstream, "--result-dir", result, "--clips", clips,
           "--session", os.path.join(work, "session.json"), "--out", capture, "--device", a.device,
           "--threads", str(a.threads), "--random-seed", str(a.random_seed)]
    subprocess.run(cmd, check=True)
    run = dict(np.load(capture))
    with open(os.path.join(work, "capture.json")) as f:
        info = json.load(f)
    parents, neutral = run["skeleton_parents"], run["skeleton_neutral_joints"].astype(np.float64)
    plans = plans_from_run(run, parents, neutral)
    write_mbparity(os.path.join(a.out, "session.mbparity"), 30, parents, neutral, plans)
    write_mbreplay(os.path.join(a.out, "session.mbreplay"), 30, **replay_from_run(run, parents, plans))
    files = ["session.mbparity", "session.mbreplay", "capture.json"] + write_stages(run, a.out)
    with open(os.path.join(a.out, "capture.json"), "w") as f:
        json.dump(info, f, indent=1)
    config = info["predict_config"]
    write_manifest(a.out, {
        "upstream": {"repository": "NVlabs/GR00T-WholeBodyControl", "path": "motionbricks", "revision": revision},
        "weights": weights,
        "device": a.device,
        "sampling": "argmax" if config.get("pose_token_sampling_use_argmax") else "gumbel",
        "feature_source": "cuda_observation" if a.device == "cuda" else "cpu_replay",
        "session": {"frames": frames, "plans": len(plans), "fps": 30, "random_seed": a.random_seed,
                    "source": "tools/reference/record.py: upstream full_navigation_agent + WASD_controller, "
                              + ("--session " + os.path.basename(a.session) if a.session else "built-in session")},
        "stand_ins": info["environment"]["stand_ins"],
        "environment": {"torch": info["environment"]["torch"], "torch_backports": info["environment"]["torch_backports"],
                        "threads": info["threads"], "python": a.python},
        "files": files,
    })
    worst = min(p["num_token_logit_margin"] for p in info["plans"]), min(p["min_pose_decision_margin_valid"]
                                                                         for p in info["plans"])
    print(f"{frames} frames, {len(plans)} plans → {a.out} (smallest duration margin {worst[0]:.3g}, "
          f"pose-token margin {worst[1]:.3g}; stand-ins: {', '.join(s['package'] for s in info['environment']['stand_ins']) or 'none'})")


if __name__ == "__main__":
    main()
