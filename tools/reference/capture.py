"""Runs upstream MotionBricks' own demo agent (full_navigation_agent + WASD_controller, built as
upstream's navigation_demo builds them, stepped as interactive_demo_g1.py steps them without a
viewer) over a scripted session, and saves what upstream computed: every displayed qpos, and
for each replan the context, controls, random draws, placed targets, predict output and the
root/pose/decoder stages' tensors. Upstream's code runs unmodified; the recorder only wraps
methods of the built objects to observe their arguments and results.

Runs in its own process: it imports upstream's `motionbricks` package, which shares its name
with this project's python/motionbricks (record.py does the rest).

usage: capture.py --upstream DIR --result-dir DIR --clips FILE --session FILE.json --out FILE.npz
                  [--device cpu|cuda] [--threads N] [--random-seed N]"""

import argparse
import json
import os
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import environment  # noqa: E402
import session as session_script  # noqa: E402


def _np(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy().copy()
    return np.asarray(x).copy()


class Recorder:
    """Wraps the agent's and inferencer's methods; `plan` collects one replan's tensors."""

    def __init__(self, agent):
        import torch
        self.torch = torch
        self.agent = agent
        self.plan = None
        inf = agent._inferencer
        self._wrap(agent, "_canonicalize_mujoco_qpos", before=self._ctx_before, after=self._ctx_after)
        self._wrap(agent, "_uncanonicalize_mujoco_qpos", before=self._uncanon_before)
        self._wrap(agent, "_generate_target_joint_transforms", after=self._targets)
        self._wrap(inf, "predict", before=self._predict_in, after=self._predict_out)
        self._wrap(inf, "_predict_root_trajectories", before=self._root_in, after=self._root_out)
        self._wrap(inf, "_predict_pose_tokens", after=self._pose_out)
        self._wrap(inf._root_model.backbone_net, "forward", after=self._root_net)
        self._wrap(inf._pose_model.backbone_net, "forward", after=self._pose_net)
        self._wrap(inf._vqvae_pose_model, "forward_decoder", before=self._decoder_in, after=self._decoder_out)

    def _wrap(self, obj, name, before=None, after=None):
        original = getattr(obj, name)

        def wrapper(*args, **kwargs):
            if self.plan is not None and before:
                before(*args, **kwargs)
            result = original(*args, **kwargs)
            if self.plan is not None and after:
                after(result, *args, **kwargs)
            return result

        setattr(obj, name, wrapper)

    def _ctx_before(self, inp):
        self.plan["rp_context_qpos_raw"] = _np(inp["context_mujoco_qpos"][0])

    def _ctx_after(self, result, inp):
        self.plan["rp_context_qpos_canon"] = _np(inp["context_mujoco_qpos"][0])
        self.plan["rp_first_frame_heading"] = _np(inp["first_frame_heading_angle"][0])
        self.plan["rp_first_frame_position"] = _np(inp["first_frame_position"][0])
        self.plan["rp_movement_canon"] = _np(inp["movement_direction"][0])
        self.plan["rp_facing_canon"] = _np(inp["facing_direction"][0])

    def _uncanon_before(self, inp):
        self.plan["rp_qpos_generated_canon"] = _np(inp["mujoco_qpos"][0])

    def _targets(self, result, inp):
        pos, rot, root = result
        self.plan["rp_target_joint_pos"] = _np(pos[0])
        self.plan["rp_target_joint_rot"] = _np(rot[0])
        self.plan["rp_target_root_pos"] = _np(root[0])
        self.plan["rp_spring_target_root_positions"] = _np(inp["target_root_positions"][0].T)
        self.plan["rp_spring_target_root_headings"] = _np(inp["target_root_headings"][0])
        self.plan["rp_mode_final"] = int(inp["mode"].reshape(-1)[0])

    def _predict_in(self, g, hg, l, hl, p, hp, n, *args, **kwargs):
        for name, v in (("global_root_values", g), ("has_global_root_values", hg), ("local_root_values", l),
                        ("has_local_root_values", hl), ("local_poses", p), ("has_local_poses", hp)):
            self.plan["rp_in_" + name] = _np(v[0])
        allowed = kwargs.get("allowed_pred_num_tokens")
        self.plan["rp_in_allowed_pred_num_tokens"] = _np(allowed.reshape(-1)) if allowed is not None \
            else np.ones(11, np.int64)
        self.plan["predict_config"] = dict(kwargs.get("config", {}))
        self.t0 = time.perf_counter()

    def _predict_out(self, result, *args, **kwargs):
        self.plan["predict_seconds"] = time.perf_counter() - self.t0
        poses, n = result
        self.plan["rp_out_global_poses"] = _np(poses[0])
        self.plan["rp_out_num_tokens"] = int(n.reshape(-1)[0])

    def _root_in(self, batch, config):
        for k in ("global_root_values", "local_root_values", "local_poses"):
            self.plan["root_in_norm_" + k] = _np(batch[k][0])

    def _root_out(self, result, batch, config):
        n, g, l = result
        self.plan["root_pred_global_root_values"] = _np(g[0])
        self.plan["root_pred_local_root_values"] = _np(l[0])

    def _root_net(self, result, *args, **kwargs):
        self.plan["root_num_token_logits"] = _np(result["num_token_logits"][0])

    def _pose_net(self, result, tokens_in, root_cond, pose_cond, has_pose_cond, *args, **kwargs):
        self.plan["pose_tokens_in"] = _np(tokens_in[0])
        self.plan["pose_root_condition"] = _np(root_cond[0])
        self.plan["pose_condition"] = _np(pose_cond[0])
        self.plan["pose_has_condition"] = _np(has_pose_cond[0])
        self.plan["pose_logits"] = _np(result["pose_logits"][0])   # the last masked-decoding step

    def _pose_out(self, result, *args, **kwargs):
        self.plan["pose_tokens"] = _np(result[0][0])

    def _decoder_in(self, tokens, target_cond=None, has_target_cond=None, external_cond=None, token_mask=None, **kw):
        self.plan["decoder_quantized"] = _np(self.agent._inferencer._vqvae_pose_model.quantizer.dequantize(
            tokens, use_overall_indices=False)[0])
        self.plan["decoder_target_condition"] = _np(target_cond[0])
        self.plan["decoder_has_target_condition"] = _np(has_target_cond[0])
        self.plan["decoder_external_condition"] = _np(external_cond[0])
        self.plan["decoder_token_mask"] = _np(token_mask[0])

    def _decoder_out(self, result, *args, **kwargs):
        self.plan["decoder_output"] = _np(result["recon_state"][0])


def build(a, device):
    """Upstream's navigation_demo construction (demo/utils.py), with the device as a parameter:
    navigation_demo itself hard-codes 'cuda'."""
    import torch
    from motionbricks.exp_setup.experiment import test
    from motionbricks.motion_backbone.inference.motion_inference import motion_inference
    from motionbricks.motion_backbone.demo.full_agent import full_navigation_agent
    from motionbricks.motion_backbone.demo.controllers import WASD_controller
    args = types.SimpleNamespace(result_dir=a.result_dir, data_root=None, explicit_dataset_folder=None,
                                 EXP="default", return_model_configs=True, return_dataloader=False)
    models, confs = test(args)
    for name in ("pose", "root"):
        models[name].load_state_dict(torch.load(confs[name].ckpt_path, map_location=device)["state_dict"])
    inferencer = motion_inference(models, models["pose"].args, device=device)
    agent = full_navigation_agent(
        inferencer, None, device=device, speed_scale=[1.0, 1.0], target_root_realignment=True,
        source_root_realignment=True, force_canonicalization=True,
        skeleton_xml=os.path.join(a.upstream, "assets", "skeletons", "g1", "g1.xml"),
        skip_ending_target_cond=False, filter_qpos=True, clips="G1", ckpt_path=a.clips,
        reprocess_clips=False, val_dataloader=None).to(device)
    controller = WASD_controller(lookat_movement_direction=False, clips="G1",
                                 min_token=inferencer._args["min_tokens"], max_token=inferencer._args["max_tokens"])
    return agent, controller


def run(agent, controller, commands, seed):
    """interactive_demo_g1.main() for one run without a viewer: the seed rule, reset, then per step
    get_next_frame → context → controller → generate_new_frames, and the camera follow. The
    controller reads the scripted keys and a camera namespace in place of the viewer."""
    import torch
    random_seed = seed * (1 + 2333) * 2333 % (2 ** 32 - 1)
    np.random.seed(random_seed)
    torch.manual_seed(random_seed)
    agent.reset()
    mj_model = types.SimpleNamespace(nq=36, opt=types.SimpleNamespace(timestep=1.0 / 30))
    mj_data = types.SimpleNamespace(qpos=np.zeros(36))
    viewer = types.SimpleNamespace(cam=types.SimpleNamespace(lookat=np.zeros(3), distance=session_script.CAMERA["distance"],
                                                             azimuth=0.0, elevation=session_script.CAMERA["elevation_deg"]))
    rec = Recorder(agent)
    frames, plans = [], []
    draw = torch.randint
    for cmd in commands:
        qpos = agent.get_next_frame()
        context = agent.get_context_mujoco_qpos()
        mj_data.qpos[:] = qpos
        viewer.cam.azimuth = cmd["azimuth_deg"]
        cs = controller.generate_control_signals(viewer, mj_model, mj_data, visualize=False,
                                                 control_info={"force_idle": False, "allowed_mode": None,
                                                               "key_pressed": cmd["key_pressed"]})
        cs["context_mujoco_qpos"] = context
        rec.plan = {"rp_step": cmd["step"], "rp_mode_controller": int(cs["mode"].reshape(-1)[0]),
                    "rp_movement_world": _np(cs["movement_direction"][0]).astype(np.float32),
                    "rp_facing_world": _np(cs["facing_direction"][0]).astype(np.float32),
                    "draws": []}

        def recording_randint(*args, **kwargs):
            value = draw(*args, **kwargs)
            rec.plan["draws"].append(int(value.reshape(-1)[0]))
            return value

        torch.randint = recording_randint
        try:
            with torch.no_grad():
                agent.generate_new_frames(cs, controller.get_controller_dt() * 2.0)
        finally:
            torch.randint = draw
        replan = -1
        if "rp_out_global_poses" in rec.plan:
            if len(rec.plan["draws"]) != 2:
                raise RuntimeError(f"step {cmd['step']}: {len(rec.plan['draws'])} random draws, upstream makes 2 per replan")
            rec.plan["rp_rng_draws"] = np.array(rec.plan.pop("draws"), np.int64)
            rec.plan["rp_num_frames"] = int(agent.frames["num_pred_frames"].reshape(-1)[0])
            replan = len(plans)
            plans.append(rec.plan)
        rec.plan = None
        frames.append({"frame_step": cmd["step"], "frame_qpos": np.asarray(qpos, np.float32),
                       "frame_ctrl_mode": int(cs["mode"].reshape(-1)[0]), "frame_replan_index": replan,
                       "frame_cam_azimuth_deg": cmd["azimuth_deg"]})
        viewer.cam.lookat[:] = controller.get_prev_qpos()[:, :3].mean(axis=0)
    return frames, plans, random_seed


def margins(plan):
    """Top-1 minus top-2 of the duration logits and the smallest valid pose-token argmax gap:
    how far upstream's decisions are from a tie a port could legitimately break the other way."""
    logits = np.sort(plan["root_num_token_logits"][np.isfinite(plan["root_num_token_logits"])])
    n = plan["rp_out_num_tokens"]
    pose = np.sort(plan["pose_logits"][:n], axis=-1)
    return float(logits[-1] - logits[-2]) if len(logits) > 1 else float("inf"), float((pose[..., -1] - pose[..., -2]).min())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--result-dir", required=True)
    ap.add_argument("--clips", required=True)
    ap.add_argument("--session", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--random-seed", type=int, default=1234)
    a = ap.parse_args(argv)
    a.upstream, a.result_dir, a.clips, a.session, a.out = (os.path.abspath(p) for p in (a.upstream, a.result_dir, a.clips,
                                                                                  a.session, a.out))
    env = environment.prepare(a.upstream)
    import torch
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.device == "cpu" and not torch.cuda.is_available():
        # experiment.test calls torch.cuda.set_device because the checkpoints were trained with
        # accelerator: gpu; on a machine without CUDA there is no device to select
        torch.cuda.set_device = lambda *args, **kwargs: None
        env["torch_backports"].append("torch.cuda.set_device is a no-op without CUDA (experiment.test calls it)")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("capture: --device cuda but torch sees no CUDA device")
    # upstream resolves the skeleton and stats folders of hparams.yaml relative to the working directory
    os.chdir(os.path.dirname(a.result_dir))
    script = session_script.load(a.session)
    t0 = time.perf_counter()
    agent, controller = build(a, a.device)
    frames, plans, seed_used = run(agent, controller, session_script.commands(script), a.random_seed)
    out = {k: np.stack([f[k] for f in frames]) for k in frames[0]}
    for k in plans[0]:
        if k != "predict_config":
            out[k] = np.stack([np.asarray(p[k]) for p in plans])
    skeleton = agent._motion_rep.skeleton
    out["skeleton_parents"] = _np(skeleton.joint_parents).astype(np.int32)
    out["skeleton_neutral_joints"] = _np(skeleton.neutral_joints).astype(np.float32)
    np.savez(a.out, **out)
    info = {"environment": env, "device": a.device, "threads": torch.get_num_threads(), "random_seed": a.random_seed,
            "seed_used": seed_used, "seconds": time.perf_counter() - t0, "script": script,
            "predict_config": plans[0]["predict_config"],
            "plans": [dict(zip(("num_token_logit_margin", "min_pose_decision_margin_valid"), margins(p)),
                           step=int(p["rp_step"]), num_tokens=int(p["rp_out_num_tokens"]),
                           mode_controller=int(p["rp_mode_controller"]), mode_final=int(p["rp_mode_final"]),
                           predict_seconds=p["predict_seconds"]) for p in plans]}
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(info, f, indent=1)
    print(f"captured {len(frames)} frames, {len(plans)} replans in {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
