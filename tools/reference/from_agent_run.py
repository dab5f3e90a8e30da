"""Turns upstream's recorded demo-agent run (../shared/fixtures/agent-small: agent_run.npz, written by
upstream's own full_agent on the reference-small weights) into an open-loop .mbparity v1 fixture, a
portable .mbreplay v1 of the session as upstream's demo showed it, and a reference fixture manifest v1. Each replan becomes one plan: the world context (the recorded qpos as
world transforms), the controller's command and clip-frame draw, upstream's unblended 414-d output and
the placed targets, both moved into the world by the same rigid map upstream's agent applies to the
generated qpos. No upstream code runs here: the arrays are upstream's.

usage: from_agent_run.py --fixtures DIR [--skeleton feature_layout.json] --out DIR"""

import argparse
import json
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from kinematics import features_to_transforms, fk, local_xyzw, mujoco_to_motion, qpos_yaw, rot_y  # noqa: E402
from manifest import write_manifest  # noqa: E402
from mbfixtures import write_mbparity, write_mbreplay  # noqa: E402
from motionbricks.style import Converter  # noqa: E402  (kinematics put python/ on the path)


def plans_from_run(run, parents, neutral):
    conv = Converter()
    plans = []
    for r in range(len(run["rp_step"])):
        n = int(run["rp_num_frames"][r])
        # world context: recorded qpos → motion-space transforms
        pos, rot = conv.qpos_to_transforms(run["rp_context_qpos_raw"][r])
        ctx_local = local_xyzw(rot, parents)
        # canonical → world: rotate by yaw0 − yaw(generated frame 0) about the vertical, frame 0 onto p0
        yaw0, p0 = float(run["rp_first_frame_heading"][r]), run["rp_first_frame_position"][r].astype(np.float64)
        canon0 = run["rp_qpos_generated_canon"][r, 0].astype(np.float64)
        yawg = float(qpos_yaw(canon0[3:7]))
        c, s = np.cos(yaw0 - yawg), np.sin(yaw0 - yawg)
        rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        first = rz @ canon0[0:3]
        d = mujoco_to_motion(np.array([p0[0] - first[0], p0[1] - first[1], 0.0]))
        rm = rot_y(yaw0 - yawg)
        roots, grot = features_to_transforms(run["rp_out_global_poses"][r, :n])
        roots_w = roots @ rm.T + d
        local = local_xyzw(rm @ grot, parents)
        # targets: clip poses placed in the canonical frame (root-relative xz + spring root), then the same map
        tpos = run["rp_target_joint_pos"][r].astype(np.float64) + run["rp_target_root_pos"][r][:, None, :]
        troot_w = tpos[:, 0] @ rm.T + d
        tlocal = local_xyzw(rm @ run["rp_target_joint_rot"][r].astype(np.float64), parents)
        plans.append({
            "command_frame": int(run["rp_step"][r]),
            "frames": n,
            "mode": min(int(run["rp_mode_controller"][r]), 14),
            "seed": int(run["rp_rng_draws"][r, 1]),
            "movement": mujoco_to_motion(run["rp_movement_world"][r]) * np.array([1, 0, 1]),
            "facing": mujoco_to_motion(run["rp_facing_world"][r]) * np.array([1, 0, 1]),
            "context_roots": pos[:, 0],
            "context_local_xyzw": ctx_local,
            "expected_roots": roots_w,
            "expected_local_xyzw": local,
            "expected_joints": fk(parents, neutral, roots_w, local),
            "target_roots": troot_w,
            "target_local_xyzw": tlocal,
            "target_joints": fk(parents, neutral, troot_w, tlocal),
        })
    return plans


VIRTUAL = (7, 14, 25, 33)   # the hand and toe endpoints, omitted from a replay


def replay_from_run(run, parents, plans):
    """the displayed session: qpos, the root and 29 physical bodies' world positions, per-frame plan and
    mode, each plan's first shown frame (the frame after its replan step), mode, length and targets."""
    keep = [j for j in range(len(parents)) if j not in VIRTUAL]
    sub_parents = [-1 if parents[j] < 0 else keep.index(int(parents[j])) for j in keep]
    qpos = run["frame_qpos"].astype(np.float64)
    pos, _ = Converter().qpos_to_transforms(qpos)
    frames = len(qpos)
    first = [int(s) for s in run["rp_step"]]   # replan at step s (1-based) → shown from 0-based frame s
    active = np.full(frames, -1, dtype=np.int32)
    for r, f in enumerate(first):
        active[f:] = r
    final = np.minimum(run["rp_mode_final"].astype(np.int32), 14)
    modes = np.where(active >= 0, final[np.maximum(active, 0)], np.minimum(run["frame_ctrl_mode"], 14)).astype(np.int32)
    targets = np.stack([p["target_joints"][:, keep] for p in plans])
    return dict(parents=sub_parents, modes=modes, active_plan=active, qpos=qpos, positions=pos[:, keep],
                plan_first_frame=first, plan_mode=final, plan_frames=run["rp_num_frames"], target_positions=targets)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", required=True, help="../shared/fixtures")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    agent = os.path.join(a.fixtures, "agent-small")
    run = dict(np.load(os.path.join(agent, "agent_run.npz")))
    summary = json.load(open(os.path.join(agent, "summary.json")))
    layout = json.load(open(os.path.join(a.fixtures, "reference-small", "feature_layout.json")))
    parents = np.array(layout["skeleton"]["parents"], dtype=np.int32)
    neutral = np.array(layout["skeleton"]["neutral_joints_m"], dtype=np.float32).astype(np.float64)
    os.makedirs(a.out, exist_ok=True)
    plans = plans_from_run(run, parents, neutral)
    write_mbparity(os.path.join(a.out, "agent-small.mbparity"), 30, parents, neutral, plans)
    write_mbreplay(os.path.join(a.out, "agent-small.mbreplay"), 30, **replay_from_run(run, parents, plans))
    weights = os.path.join(a.fixtures, "reference-small", "weights")
    write_manifest(a.out, {
        "upstream": {"repository": "NVlabs/GR00T-WholeBodyControl", "path": "motionbricks",
                     "revision": summary.get("upstream", {}).get("commit", "1983e88888217f6c69283cf3a9d1af01e87f07af")
                     if isinstance(summary.get("upstream"), dict) else "1983e88888217f6c69283cf3a9d1af01e87f07af"},
        "weights": {name: os.path.join(weights, name) for name in sorted(os.listdir(weights))},
        "device": "cpu",
        "sampling": "argmax",
        "feature_source": "cpu_replay",
        "session": {"frames": int(len(run["frame_step"])), "plans": len(plans), "fps": 30,
                    "source": "agent-small/agent_run.npz (upstream full_agent, recorded)"},
        "stand_ins": [],
        "files": ["agent-small.mbparity", "agent-small.mbreplay"],
    })
    print(f"{len(plans)} plans → {os.path.join(a.out, 'agent-small.mbparity')}, agent-small.mbreplay")


if __name__ == "__main__":
    main()
