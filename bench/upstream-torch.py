#!/usr/bin/env python3
"""Upstream MotionBricks (PyTorch) and this runtime on the same weights and the same request, in
one process on one GPU: the issue-11 same-run comparison.

Upstream runs unmodified, imported from a checkout (tools/reference/environment.py loads our
stand-ins only for packages that cannot be imported). Its three models are built from the
checkout's own hparams.yaml (the full-size release architecture) by its `experiment.test`, then
every tensor of the random bundle (`tools/convert.py random-bundle --preset full --seed S`,
regenerated here from the same seeded generators) is copied into them by name (the converter's
names: the bundle's names under `backbone_net.` / the VQ-VAE's `pose_net.`), and the bundle's
synthetic stats are written where upstream reads its stats. Upstream's VQ-VAE checkpoint loader
is replaced by a no-op that marks the VQ-VAE loaded (its weights are set by name afterwards; the
encoder, which inference never runs, keeps its random initialisation).

The request is a fixture case (upstream `predict` inputs, e.g. reference-small's
walk_fwd_fixed10_argmax.npz): its own token count, and the same request with the count left to
the root planner ("predicted"); argmax, one step. Ours runs through the drop-in
`motionbricks.motion_inference` on the same tensors (CUDA, F32 unless --precision).

usage: bench/upstream-torch.py --upstream CHECKOUT/motionbricks --bundle DIR --seed S --case NPZ
                               [--iterations N] [--precision f32|tf32|bf16] [--out FILE.json]
Prints one JSON object (and writes it to --out)."""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))


def load_ours():
    """This runtime's Python package under the name `mbrt`: upstream's package is `motionbricks` too"""
    import importlib.util
    folder = os.path.join(ROOT, "python", "motionbricks")
    spec = importlib.util.spec_from_file_location("mbrt", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules["mbrt"] = module
    spec.loader.exec_module(module)
    return module

COMPONENT_DIRS = ("motionbricks_pose", "motionbricks_root", "motionbricks_vqvae")


def result_dir(upstream, dest, mean, std):
    """dest/out: the checkout's out/ folders without checkpoints, with the bundle's stats."""
    import numpy as np
    out = os.path.join(dest, "out")
    for folder in COMPONENT_DIRS:
        src = os.path.join(upstream, "out", folder, "version_1")
        dst = os.path.join(out, folder, "version_1")
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("checkpoints"))
        os.makedirs(os.path.join(dst, "checkpoints"), exist_ok=True)
        np.save(os.path.join(dst, "stats", "motion", "mean.npy"), mean.astype(np.float64))
        np.save(os.path.join(dst, "stats", "motion", "std.npy"), std.astype(np.float64))
    return out


def build_upstream(out, device):
    """models {'pose', 'root'} of the checkout's architecture, VQ-VAE marked loaded (weights set later)."""
    import torch
    import types
    from motionbricks.motion_backbone.models import pose_model, root_model
    for cls in (pose_model.MotionModel, root_model.MotionModel):
        cls._load_vqvae_models = lambda self: setattr(self, "_vqvae_model_loaded", True)
    if not torch.cuda.is_available():
        torch.cuda.set_device = lambda *a, **k: None
    from motionbricks.exp_setup.experiment import test
    args = types.SimpleNamespace(result_dir=out, data_root=None, explicit_dataset_folder=None, EXP="default",
                                 return_model_configs=True, return_dataloader=False)
    models, _ = test(args)
    return models


def tensor_values(t):
    import numpy as np
    return np.concatenate([np.asarray(c, dtype=np.float32).ravel() for c in t.chunks()]).reshape(t.shape)


def load_bundle_weights(models, comps):
    """Copies every bundle tensor into upstream's modules by name; returns the count copied."""
    import torch
    from mbrt import constants as C
    pose_net = models["pose"].supporting_nets["pose_net"]
    targets = {C.COMPONENT_POSE: [models["pose"].backbone_net], C.COMPONENT_ROOT: [models["root"].backbone_net],
               C.COMPONENT_VQ_DECODER: [pose_net]}
    other = models["root"].supporting_nets.get("pose_net")
    if other is not None and other is not pose_net:
        targets[C.COMPONENT_VQ_DECODER].append(other)
    copied = 0
    for role, modules in targets.items():
        if role not in comps:
            raise KeyError("bundle has no component %s" % role)
        for module in modules:
            state = module.state_dict()
            for t in comps[role].tensors:
                if t.name not in state:
                    raise KeyError("%s: upstream has no tensor %s" % (role, t.name))
                dst = state[t.name]
                src = torch.from_numpy(tensor_values(t))
                if src.numel() != dst.numel():
                    raise ValueError("%s.%s: bundle %s vs upstream %s" % (role, t.name, tuple(src.shape),
                                                                          tuple(dst.shape)))
                with torch.no_grad():
                    dst.copy_(src.reshape(dst.shape))
                copied += 1
    for m in (models["pose"], models["root"]):
        if hasattr(m.backbone_net, "initted"):
            with torch.no_grad():
                m.backbone_net.initted.fill_(True)
    return copied


def timed(fn, iterations, warmup, sync):
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(iterations):
        sync()
        t0 = time.perf_counter()
        r = fn()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return r, {"median_ms": statistics.median(ms), "p95_ms": ms[min(len(ms) - 1, int(0.95 * len(ms)))],
               "min_ms": ms[0], "iterations": iterations}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, help="the checkout's motionbricks/ folder")
    ap.add_argument("--bundle", required=True, help="random-bundle --preset full --seed S output")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--iterations", type=int, default=21)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--precision", default="f32", choices=("f32", "tf32", "bf16"))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    upstream = os.path.abspath(a.upstream)
    bundle = os.path.abspath(a.bundle)

    load_ours()
    from mbrt.random_bundle import random_components, synthetic_stats
    from mbrt.motion_inference import motion_inference as ours_inference
    import environment
    env = environment.prepare(upstream)
    import numpy as np
    import torch
    device = a.device
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("upstream-torch: torch sees no CUDA device")

    t0 = time.perf_counter()
    comps = random_components("full", a.seed)
    mean, std = synthetic_stats(a.seed)
    work = tempfile.mkdtemp(prefix="mb-upstream-")
    out = result_dir(upstream, work, mean, std)
    cwd = os.getcwd()
    os.chdir(work)      # upstream resolves hparams' skeleton and stats folders from here
    try:
        models = build_upstream(out, device)
        copied = load_bundle_weights(models, comps)
        from motionbricks.motion_backbone.inference.motion_inference import motion_inference as upstream_inference
        up = upstream_inference(models, models["pose"].args, device=device)
    finally:
        os.chdir(cwd)
    setup_s = time.perf_counter() - t0
    configured = torch.get_float32_matmul_precision()     # what upstream's hparams set

    case = np.load(a.case)
    cpu_in = [torch.from_numpy(case[k]) for k in ("in_global_root_values", "in_has_global_root_values",
                                                  "in_local_root_values", "in_has_local_root_values",
                                                  "in_local_poses", "in_has_local_poses")]
    dev_in = [x.to(device) for x in cpu_in]
    n_case = int(case["in_num_tokens"].reshape(-1)[0])
    config = {"num_inference_step": 1, "smooth_root_traj": False, "allow_pred_out_of_reach_num_tokens": False,
              "pose_token_sampling_use_argmax": True, "skip_ending_target_cond": False}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    ours = ours_inference(bundle, device=device, precision=a.precision)

    report = {"upstream": upstream, "bundle": bundle, "seed": a.seed, "case": os.path.basename(a.case),
              "device": device, "gpu": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
              "torch": torch.__version__, "stand_ins": [s["package"] for s in env["stand_ins"]],
              "tensors_copied": copied, "upstream_setup_s": round(setup_s, 1), "precision_ours": a.precision,
              "upstream_matmul_precision": configured,
              "runs": []}
    for label, n in (("%d tokens" % n_case, n_case), ("predicted", None)):
        # 18 (upstream's MASKED_NUM_TOKENS): the root planner chooses the count
        def run_up(inputs=dev_in, n=n or 18):
            tokens = torch.full([1], n, dtype=torch.int32, device=device)
            with torch.no_grad():
                return up.predict(*inputs, tokens, config=dict(config), info={}, allowed_pred_num_tokens=None)

        def run_ours(inputs=cpu_in, n=n or 18):
            tokens = torch.full([1], n, dtype=torch.int32)
            return ours.predict(*inputs, tokens, config=dict(config), info={}, allowed_pred_num_tokens=None)

        # upstream as its hparams configure torch (matmul_precision; cuDNN convolutions in TF32 by
        # torch's default), then in strict float32
        torch.set_float32_matmul_precision(configured)
        (up_poses, up_n), t_up = timed(run_up, a.iterations, a.warmup, sync)
        torch.set_float32_matmul_precision("highest")
        conv_tf32, torch.backends.cudnn.allow_tf32 = torch.backends.cudnn.allow_tf32, False
        (up32_poses, _), t_up32 = timed(run_up, a.iterations, a.warmup, sync)
        torch.set_float32_matmul_precision(configured)
        torch.backends.cudnn.allow_tf32 = conv_tf32
        (our_poses, our_n), t_ours = timed(run_ours, a.iterations, a.warmup, sync)
        nu, no = int(up_n.reshape(-1)[0]), int(our_n.reshape(-1)[0])
        row = {"request": label, "upstream": t_up, "upstream_f32": t_up32, "ours": t_ours,
               "speedup": t_up["median_ms"] / t_ours["median_ms"],
               "speedup_vs_upstream_f32": t_up32["median_ms"] / t_ours["median_ms"],
               "tokens_upstream": nu, "tokens_ours": no,
               "frames_per_s_upstream": 4 * nu * 1e3 / t_up["median_ms"],
               "frames_per_s_ours": 4 * no * 1e3 / t_ours["median_ms"]}
        if nu == no:
            f = 4 * nu
            d = (up_poses[0, :f].float().cpu() - our_poses[0, :f].float().cpu()).abs()
            row["max_abs_feature_diff"] = float(d.max())
            d32 = (up32_poses[0, :f].float().cpu() - our_poses[0, :f].float().cpu()).abs()
            row["max_abs_feature_diff_vs_upstream_f32"] = float(d32.max())
        report["runs"].append(row)
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
