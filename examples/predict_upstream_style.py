"""predict called the way upstream's demo agent calls it (motion_backbone/demo/full_agent.py,
_generate_inbetween_frames): torch tensors in, the same config dict, the same call, the same
truncation of the result. Only the two lines whose comment starts with "motionbricks" (the import
and the construction) differ from upstream.

    python3 examples/predict_upstream_style.py BUNDLE_DIR CASE.npz

CASE.npz holds upstream predict inputs (in_global_root_values, ... as in
../shared/fixtures/reference-small/cases); PYTHONPATH must reach python/ (or pip install ./python).
"""

import sys

import numpy as np
import torch as t

from motionbricks.motion_inference import motion_inference  # motionbricks (upstream: motionbricks.motion_backbone.inference.motion_inference)

NUM_FRAMES_PER_TOKEN = 4
MASKED_NUM_TOKENS = 18


def main(bundle, case):
    inferencer = motion_inference(bundle, device="cpu")  # motionbricks (upstream: motion_inference(models, args, device))
    data = np.load(case)
    global_root_values = t.from_numpy(data["in_global_root_values"])
    local_root_values = t.from_numpy(data["in_local_root_values"])
    local_poses = t.from_numpy(data["in_local_poses"])
    batch_size = global_root_values.shape[0]

    has_global_root_values = t.ones_like(global_root_values[:, :, 0], dtype=t.bool)
    has_local_root_values = t.ones_like(local_root_values[:, :, 0], dtype=t.bool)
    has_local_poses = t.ones_like(local_poses[:, :, 0], dtype=t.bool)
    has_local_root_values[:, NUM_FRAMES_PER_TOKEN - 1] = False  # the last velocity is incorrect

    num_tokens = t.full([batch_size], MASKED_NUM_TOKENS).int()

    # pred the motions
    config = {'num_inference_step': 1, 'smooth_root_traj': False, 'allow_pred_out_of_reach_num_tokens': False,
              'pose_token_sampling_use_argmax': True, 'skip_ending_target_cond': False}
    info = {}
    pred_global_motions, num_pred_tokens = inferencer.predict(
        global_root_values, has_global_root_values, local_root_values, has_local_root_values,
        local_poses, has_local_poses, num_tokens, config=config, info=info,
        allowed_pred_num_tokens=None
    )
    num_pred_frames = NUM_FRAMES_PER_TOKEN * num_pred_tokens
    model_features = pred_global_motions[:, :num_pred_frames.item(), :]
    print("frames %d" % num_pred_frames.item())
    print("last root %.6f %.6f %.6f" % tuple(model_features[0, -1, :3].tolist()))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
