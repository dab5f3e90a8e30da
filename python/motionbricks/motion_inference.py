"""A drop-in for upstream's ``motion_inference.predict`` (motion_backbone/inference/motion_inference.py).

Upstream::

    from motionbricks.motion_backbone.inference.motion_inference import motion_inference
    inferencer = motion_inference(models, args, device="cuda")

here::

    from motionbricks.motion_inference import motion_inference
    inferencer = motion_inference("models/g1-f32", device="cpu")

and then the same call::

    pred_global_poses, pred_num_tokens = inferencer.predict(
        global_root_values, has_global_root_values, local_root_values, has_local_root_values,
        local_poses, has_local_poses, num_tokens, config=config, info=info,
        allowed_pred_num_tokens=allowed_pred_num_tokens)

Inputs have upstream's shapes ([B, 8, 5], [B, 8], [B, 8, 4], [B, 8], [B, 8, 303], [B, 8], num_tokens
[B] / [B, 1] / int / None, allowed_pred_num_tokens [B, 11] or None), as numpy arrays or torch tensors.
Returns (pred_global_poses [B, 64, 414] float32, pred_num_tokens [B] int32) of the inputs' kind (torch:
on the device of local_poses): frames at or after 4n are zero, where upstream leaves padding values.
Batches of any size run (64 requests per C call).

Config keys (upstream's defaults when absent): ``num_inference_step`` (1..16),
``pose_token_sampling_use_argmax`` (False: Gumbel), ``skip_ending_target_cond`` (False),
``allow_pred_out_of_reach_num_tokens`` (True upstream; an "out of reach" answer raises
ComputeFailedError), ``smooth_root_traj`` (read nowhere upstream: accepted and ignored). Keys whose
only supported value is upstream's default are accepted at that value (``use_target_cond_in_decoder``
True, ``use_constraints_at_decoder`` True, ``final_root_pred_mode`` "from_pose_module",
``debug_ground_truth_root_trajectories`` / ``debug_ground_truth_pose_tokens`` None); anything else
raises ValueError naming the key. Gumbel noise comes from the runtime's generator (``seed``; upstream
draws from torch's global generator, which cannot be reproduced here) or from explicit
``gumbel_uniforms`` [B, steps, 16, 8, 10] (keyword-only, not upstream's).
"""

import numpy as np

from . import runtime

MASKED_NUM_TOKENS = 18   # upstream's "predict the duration"
MIN_TOKENS, MAX_TOKENS = 6, 16
FRAMES = 64
FEATURES = 414

_FIXED_DEFAULTS = {
    "use_target_cond_in_decoder": True,
    "use_constraints_at_decoder": True,
    "final_root_pred_mode": "from_pose_module",
    "debug_ground_truth_root_trajectories": None,
    "debug_ground_truth_pose_tokens": None,
}
_MAPPED = ("num_inference_step", "pose_token_sampling_use_argmax", "skip_ending_target_cond",
           "allow_pred_out_of_reach_num_tokens", "smooth_root_traj")


def _torch_of(values):
    """The torch module when any input is a torch tensor, else None (torch is never imported for numpy)."""
    import sys
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return torch if any(isinstance(v, torch.Tensor) for v in values) else None


def _numpy(v):
    if v is None or isinstance(v, (int, np.ndarray)):
        return v
    if hasattr(v, "detach"):   # a torch tensor
        return v.detach().cpu().numpy()
    return np.asarray(v)


def _flag(config, key, default):
    v = config.get(key, default)
    if hasattr(v, "item"):
        v = v.item()
    if not isinstance(v, (bool, np.bool_)) and v not in (0, 1):
        raise ValueError("config[%r] must be a bool, not %r" % (key, v))
    return bool(v)


def parse_config(config):
    """(steps, argmax, skip_ending_target_cond, allow_out_of_reach) from an upstream config dict."""
    config = dict(config or {})
    for key, want in _FIXED_DEFAULTS.items():
        if key in config:
            v = config[key]
            if (want is None and v is not None) or (want is not None and not (isinstance(v, type(want)) and v == want)):
                raise ValueError("config[%r] = %r is not supported by this runtime (only %r)" % (key, v, want))
    unknown = sorted(k for k in config if k not in _FIXED_DEFAULTS and k not in _MAPPED)
    if unknown:
        raise ValueError("config keys not supported by this runtime: %s (supported: %s)"
                         % (", ".join(map(repr, unknown)), ", ".join(_MAPPED + tuple(_FIXED_DEFAULTS))))
    steps = config.get("num_inference_step", 1)
    if hasattr(steps, "item"):
        steps = steps.item()
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 1 <= steps <= 16:
        raise ValueError("config['num_inference_step'] must be an integer in 1..16, not %r" % (steps,))
    _flag(config, "smooth_root_traj", False)
    return (int(steps), _flag(config, "pose_token_sampling_use_argmax", False),
            _flag(config, "skip_ending_target_cond", False), _flag(config, "allow_pred_out_of_reach_num_tokens", True))


def _batch(a, name, tail, batch):
    a = np.asarray(a)
    if a.shape != (batch,) + tail:
        raise ValueError("%s has shape %s, expected %s" % (name, list(a.shape), [batch] + list(tail)))
    return a


def _num_tokens(num_tokens, batch):
    if num_tokens is None:
        return np.full(batch, MASKED_NUM_TOKENS, dtype=np.int64)
    if isinstance(num_tokens, (int, np.integer)):
        return np.full(batch, int(num_tokens), dtype=np.int64)
    n = np.asarray(num_tokens).astype(np.int64)
    if n.shape not in ((batch,), (batch, 1)):
        raise ValueError("num_tokens has shape %s, expected [%d] or [%d, 1]" % (list(n.shape), batch, batch))
    n = n.reshape(batch)
    bad = [int(v) for v in n if v != MASKED_NUM_TOKENS and not MIN_TOKENS <= v <= MAX_TOKENS]
    if bad:
        raise ValueError("num_tokens must be %d (predict) or %d..%d, not %s" % (MASKED_NUM_TOKENS, MIN_TOKENS,
                                                                             MAX_TOKENS, bad[0]))
    return n


def requests(global_root_values, has_global_root_values, local_root_values, has_local_root_values,
             local_poses, has_local_poses, num_tokens, allowed_pred_num_tokens=None, config=None,
             seed=0, gumbel_uniforms=None, library=None):
    """The B Requests of one predict call (numpy inputs)."""
    steps, argmax, skip_end, out_of_reach = parse_config(config)
    g = np.asarray(global_root_values)
    if g.ndim != 3:
        raise ValueError("global_root_values has shape %s, expected [B, 8, 5]" % list(g.shape))
    b = g.shape[0]
    g = _batch(g, "global_root_values", (8, 5), b)
    hg = _batch(has_global_root_values, "has_global_root_values", (8,), b)
    lr = _batch(local_root_values, "local_root_values", (8, 4), b)
    hl = _batch(has_local_root_values, "has_local_root_values", (8,), b)
    lp = _batch(local_poses, "local_poses", (8, 303), b)
    hp = _batch(has_local_poses, "has_local_poses", (8,), b)
    nt = _num_tokens(num_tokens, b)
    allowed = None if allowed_pred_num_tokens is None else _batch(allowed_pred_num_tokens, "allowed_pred_num_tokens",
                                                                  (11,), b)
    gu = None
    if gumbel_uniforms is not None:
        gu = _batch(gumbel_uniforms, "gumbel_uniforms", (steps, 16, 8, 10), b)
    out = []
    for i in range(b):
        r = runtime.Request(library)
        r.set_features(runtime.GLOBAL_ROOT, g[i])
        r.set_features(runtime.LOCAL_ROOT, lr[i])
        r.set_features(runtime.POSE, lp[i])
        r.set_mask(runtime.GLOBAL_ROOT, hg[i] != 0)
        r.set_mask(runtime.LOCAL_ROOT, hl[i] != 0)
        r.set_mask(runtime.POSE, hp[i] != 0)
        if allowed is not None:
            r.set_mask(runtime.DURATIONS, allowed[i] == 1)
        if nt[i] != MASKED_NUM_TOKENS:
            r.set_token_count(int(nt[i]))   # a given count wins over the allowed mask, as upstream
        r.set_inference_steps(steps)
        r.set_sampling_argmax(argmax)
        r.set_skip_ending_target_cond(skip_end)
        r.set_allow_out_of_reach(out_of_reach)
        r.set_seed(int(seed) + i)
        if gu is not None:
            r.set_gumbel_uniforms(gu[i])
        out.append(r)
    return out


def predict(model, global_root_values, has_global_root_values, local_root_values, has_local_root_values,
            local_poses, has_local_poses, num_tokens, text_embeddings=None, has_text_embeddings=None,
            allowed_pred_num_tokens=None, config=None, info=None, *, seed=0, gumbel_uniforms=None):
    """upstream predict on `model` (a runtime.Model): (pred_global_poses [B, 64, 414], pred_num_tokens [B])."""
    if text_embeddings is not None or has_text_embeddings is not None:
        raise ValueError("text_embeddings are not supported by this runtime (the release has no text input)")
    args = (global_root_values, has_global_root_values, local_root_values, has_local_root_values,
            local_poses, has_local_poses, num_tokens, allowed_pred_num_tokens, gumbel_uniforms)
    torch = _torch_of(args)
    a = [_numpy(v) for v in args]
    reqs = requests(*a[:8], config=config, seed=seed, gumbel_uniforms=a[8], library=model._lib.path)
    motions = []
    for k in range(0, len(reqs), runtime.MAX_BATCH):
        motions += model.infer_batch(reqs[k:k + runtime.MAX_BATCH])
    for r in reqs:
        r.close()
    poses = np.zeros((len(motions), FRAMES, FEATURES), dtype=np.float32)
    n = np.zeros(len(motions), dtype=np.int32)
    tokens = np.zeros((len(motions), MAX_TOKENS, 8), dtype=np.int64)
    logits = np.zeros((len(motions), 12), dtype=np.float32)
    for i, m in enumerate(motions):
        f = m.global_features
        poses[i, :f.shape[0]] = f
        n[i] = f.shape[0] // 4
        tokens[i, :n[i]] = m.tokens
        logits[i] = m.duration_logits
    if info is not None:
        # upstream writes nothing here; this runtime reports what it chose (padding tokens 0)
        info.update(pred_pose_tokens=tokens, num_token_logits=logits, motions=motions)
    if torch is None:
        return poses, n
    device = next(v.device for v in args if isinstance(v, torch.Tensor))
    if info is not None:
        info.update(pred_pose_tokens=torch.from_numpy(tokens).to(device),
                    num_token_logits=torch.from_numpy(logits).to(device))
    return torch.from_numpy(poses).to(device), torch.from_numpy(n).to(device)


class motion_inference:  # noqa: N801 (upstream's class name)
    """upstream's inferencer, constructed from a bundle directory (or a runtime.Model) instead of
    torch modules; predict() takes and returns what upstream's does."""

    def __init__(self, model, device="auto", threads=0, precision="f32", library=None):
        self.model = model if isinstance(model, runtime.Model) else runtime.Model(model, device, threads, precision,
                                                                                 library)

    def predict(self, global_root_values, has_global_root_values, local_root_values, has_local_root_values,
                local_poses, has_local_poses, num_tokens, text_embeddings=None, has_text_embeddings=None,
                allowed_pred_num_tokens=None, config=None, info=None, *, seed=0, gumbel_uniforms=None):
        return predict(self.model, global_root_values, has_global_root_values, local_root_values,
                       has_local_root_values, local_poses, has_local_poses, num_tokens, text_embeddings,
                       has_text_embeddings, allowed_pred_num_tokens, config, info, seed=seed,
                       gumbel_uniforms=gumbel_uniforms)

    # upstream's agent calls inferencer.eval().to(device): nothing to do here
    def eval(self):
        return self

    def to(self, device=None):
        return self
