#include "predict-fixtures.h"
#include "support/test-device.h"

#include <stdexcept>

namespace mb::test {

reference_model::reference_model(const std::string & dir, int n_threads)
    : pose(dir + "/weights/pose.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}}),
      root(dir + "/weights/root.safetensors", "backbone_net.", {{"motionbricks.n_head", 4}}),
      vq(dir + "/weights/vqvae.safetensors", "pose_net.", {{"motionbricks.dilation_growth", 3}}) {
    model = motion_model::create_from_sources(pose, root, vq, reference_support(dir), n_threads, test_device());
}

predict_request reference_request(const npz_file & z, const reference_case & rc) {
    predict_request r;
    auto copy = [](const std::vector<float> & v, auto & dst) {
        if (v.size() != dst.size()) throw std::runtime_error("fixture array size mismatch");
        for (size_t i = 0; i < v.size(); ++i) dst[i] = v[i];
    };
    auto copy_mask = [](const std::vector<int64_t> & v, auto & dst) {
        if (v.size() != dst.size()) throw std::runtime_error("fixture mask size mismatch");
        for (size_t i = 0; i < v.size(); ++i) dst[i] = uint8_t(v[i] != 0);
    };
    copy(z.get("in_global_root_values", {1, 8, 5}).to_f32(), r.global_root);
    copy(z.get("in_local_root_values", {1, 8, 4}).to_f32(), r.local_root);
    copy(z.get("in_local_poses", {1, 8, 303}).to_f32(), r.poses);
    copy_mask(z.get("in_has_global_root_values", {1, 8}).to_i64(), r.global_root_mask);
    copy_mask(z.get("in_has_local_root_values", {1, 8}).to_i64(), r.local_root_mask);
    copy_mask(z.get("in_has_local_poses", {1, 8}).to_i64(), r.pose_mask);
    const int64_t nt = z.get("in_num_tokens", {1}).to_i64()[0];
    r.num_tokens = nt == 18 ? 0 : int(nt);
    if (z.has("in_allowed_pred_num_tokens")) {
        copy_mask(z.get("in_allowed_pred_num_tokens", {1, 11}).to_i64(), r.allowed_num_tokens);
    }
    r.num_inference_steps     = rc.num_inference_steps;
    r.skip_ending_target_cond = rc.skip_ending_target_cond;
    r.allow_out_of_reach      = rc.allow_out_of_reach;
    r.sampling = rc.use_argmax ? sampling_mode::SAMPLING_MODE_ARGMAX : sampling_mode::SAMPLING_MODE_GUMBEL;
    if (!rc.use_argmax) {
        const int64_t S = rc.num_inference_steps;
        r.gumbel_uniforms = z.get("mid_step_gumbel_uniform", {S, 1, 16, 8, 10}).to_f32();
    }
    return r;
}

} // namespace mb::test
