// upstream motion_inference.predict, computed on the valid length (n tokens, 4n frames):
//   1. recentre (start xz subtracted, heading kept) and normalise the constraints
//   2. root planner → n and the normalised global root; global → local root with the
//      final-velocity fix
//   3. pose-token planner (masked decoding, argmax or Gumbel)
//   4. VQ decoder → normalised local 413-d frames
//   5. local → global, start transform re-applied, FK
#include "motion/predict.h"

#include "format/error.h"
#include "model/pose-planner.h"
#include "model/root-planner.h"
#include "model/sampling.h"
#include "model/vq-decoder.h"
#include "motion/skeleton-fk.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace mb {

namespace {

constexpr float k_max_abs_value   = 1e4f;   // largest accepted |feature|
constexpr float k_heading_tol     = 0.02f;  // |cos² + sin² − 1| for enabled global-root slots
constexpr int   k_max_infer_steps = 16;
constexpr int   k_local_root_dim  = 4;

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <typename T, size_t N>
std::string check_mask(const std::array<T, N> & m, const char * what) {
    for (size_t i = 0; i < N; ++i) {
        if (m[i] != 0 && m[i] != 1) {
            return std::string(what) + "[" + std::to_string(i) + "] is " + std::to_string(int(m[i])) + ", expected 0 or 1";
        }
    }
    return "";
}

template <size_t N>
std::string check_values(const std::array<float, N> & v, int row, const char * what) {
    for (size_t i = 0; i < N; ++i) {
        if (!std::isfinite(v[i])) {
            return std::string(what) + "[" + std::to_string(i / size_t(row)) + "][" + std::to_string(i % size_t(row)) +
                   "] is not finite";
        }
        if (std::fabs(v[i]) > k_max_abs_value) {
            return std::string(what) + "[" + std::to_string(i / size_t(row)) + "][" + std::to_string(i % size_t(row)) +
                   "] = " + std::to_string(v[i]) + " exceeds |v| <= 1e4";
        }
    }
    return "";
}

} // namespace

struct motion_model::impl {
    std::unique_ptr<model_bundle> bundle;   // owner of the mapped weights (sources point into it)
    backend_device                device = backend_device::BACKEND_DEVICE_CPU;   // every state's (CPU or CUDA)
    int                           ordinal   = 0;    // the GPU (CUDA)
    backend_precision             precision = backend_precision::BACKEND_PRECISION_F32;   // every state's
    int                           n_threads = 0;
    std::unique_ptr<backend>      loader;   // uploaded the weights (states use objects of their own)
    root_planner                  root;
    pose_planner                  pose;
    vq_decoder                    vq;
    motion_stats                  stats;
    skeleton_fk                   fk;

    // states of the stateless predict(req): taken under the lock, computed on outside it
    std::mutex                                  pool_mutex;
    std::vector<std::unique_ptr<predict_state>> pool;
};

struct predict_state::impl {
    const motion_model::impl * model = nullptr;   // the model this state was made for
    std::unique_ptr<backend>   be;
    root_planner_state         root_st;
    pose_planner_state         pose_st;
    vq_decoder_state           vq_st;

    // per-call buffers, sized once for 16 tokens / 64 frames
    std::vector<float>   pose_cond;      // [64, 304]
    std::vector<uint8_t> has_pose_cond;  // [64]
    std::vector<uint8_t> has_tgt;        // [64]
    std::vector<float>   root_cond;      // [64, 4]
    std::vector<float>   global_root_u;  // [64, 5] unnormalised
    std::vector<float>   local_root;     // [64, 4] normalised after the fix
    std::vector<float>   ext;            // [64, 2]
    std::vector<float>   recon;          // [64, 413] normalised decoder output
    std::vector<float>   local;          // [64, 413] unnormalised
    std::vector<float>   uniforms;       // [steps, 16, 8, 10] generated Gumbel draws
    std::vector<int32_t> tokens;         // [16, 8]
};

predict_state::predict_state() = default;
predict_state::~predict_state() = default;

motion_model::motion_model(std::unique_ptr<impl> p) : p_(std::move(p)) {}
motion_model::~motion_model() = default;

const model_bundle & motion_model::bundle() const {
    return *p_->bundle;
}

std::unique_ptr<predict_state> motion_model::create_state() const {
    const impl & m = *p_;
    std::unique_ptr<predict_state> st(new predict_state());
    st->p           = std::make_unique<predict_state::impl>();
    predict_state::impl & s = *st->p;
    s.model   = p_.get();
    s.be      = backend_create(m.device, m.n_threads, m.ordinal, m.precision);
    s.root_st = root_planner_state(*s.be, m.root);
    s.pose_st = pose_planner_state(*s.be, m.pose.hp);
    s.vq_st   = vq_decoder_state(*s.be, m.vq.hp, m.vq.dec.hp, k_max_tokens);
    const int64_t F = int64_t(k_max_tokens) * k_frames_per_token;
    s.pose_cond.assign(size_t(F * k_pose_feat_dim), 0.0f);
    s.has_pose_cond.assign(size_t(F), 0);
    s.has_tgt.assign(size_t(F), 0);
    s.root_cond.assign(size_t(F * 4), 0.0f);
    s.global_root_u.assign(size_t(F * 5), 0.0f);
    s.local_root.assign(size_t(F * k_local_root_dim), 0.0f);
    s.ext.assign(size_t(F * 2), 0.0f);
    s.recon.assign(size_t(F * k_local_dim), 0.0f);
    s.local.assign(size_t(F * k_local_dim), 0.0f);
    s.uniforms.assign(size_t(k_max_infer_steps) * k_max_tokens * k_token_heads * k_token_codes, 0.0f);
    s.tokens.assign(size_t(k_max_tokens * k_token_heads), 0);
    return st;
}

predict_result motion_model::predict(const predict_request & req, const trace_fn & trace) const {
    impl &                         m = *p_;
    std::unique_ptr<predict_state> st;
    {
        std::lock_guard<std::mutex> lock(m.pool_mutex);
        if (!m.pool.empty()) {
            st = std::move(m.pool.back());
            m.pool.pop_back();
        }
    }
    if (!st) st = create_state();
    // the state returns to the pool whether predict succeeds or throws
    struct give_back {
        impl &                           m;
        std::unique_ptr<predict_state> & st;
        ~give_back() {
            std::lock_guard<std::mutex> lock(m.pool_mutex);
            m.pool.push_back(std::move(st));
        }
    } back{m, st};
    return predict(*st, req, trace);
}

namespace {

std::unique_ptr<motion_model::impl> build(std::unique_ptr<model_bundle> bundle, const tensor_source & pose_src,
                                          const tensor_source & root_src, const tensor_source & vq_src,
                                          int n_threads, backend_device device, int ordinal,
                                          backend_precision precision) {
    auto p = std::make_unique<motion_model::impl>();
    p->bundle    = std::move(bundle);
    p->n_threads = n_threads;
    p->ordinal   = ordinal;
    p->loader    = backend_create(device, 1, ordinal, precision);     // AUTO resolves here, once
    const bool cuda = std::string(p->loader->name()) == "cuda";
    p->device    = cuda ? backend_device::BACKEND_DEVICE_CUDA : backend_device::BACKEND_DEVICE_CPU;
    p->precision = cuda ? precision : backend_precision::BACKEND_PRECISION_F32;
    p->root      = root_planner::load(root_src, *p->loader);
    p->pose      = pose_planner::load(pose_src, *p->loader);
    p->vq        = vq_decoder::load(vq_src, *p->loader);
    p->stats  = motion_stats::from_support(p->bundle->sup);
    p->fk     = skeleton_fk::from_support(p->bundle->sup);

    // the request format fixes 8 slots, 6..16 tokens of 4 frames, 8 heads × 10 codes, 304-d poses
    const root_hparams & rh = p->root.hp;
    const pose_hparams & ph = p->pose.hp;
    const vq_hparams &   vh = p->vq.hp;
    auto need = [](bool ok, const std::string & what) {
        if (!ok) throw std::runtime_error("model bundle: " + what);
    };
    need(rh.min_tokens == k_min_tokens && rh.max_tokens == k_max_tokens,
         "root planner covers " + std::to_string(rh.min_tokens) + ".." + std::to_string(rh.max_tokens) +
             " tokens, expected 6..16");
    need(rh.n_class == k_duration_choices + 1, "root planner has " + std::to_string(rh.n_class) + " duration classes, expected 12");
    need(rh.frames_per_token == k_frames_per_token && ph.frames_per_token == k_frames_per_token &&
             vh.frames_per_token == k_frames_per_token,
         "frames per token differ from 4 (root " + std::to_string(rh.frames_per_token) + ", pose " +
             std::to_string(ph.frames_per_token) + ", vq " + std::to_string(vh.frames_per_token) + ")");
    need(ph.min_tokens == k_min_tokens && ph.max_tokens == k_max_tokens,
         "pose planner covers " + std::to_string(ph.min_tokens) + ".." + std::to_string(ph.max_tokens) + " tokens");
    need(ph.n_tok_head == k_token_heads && ph.n_code == k_token_codes && vh.n_tok_head == k_token_heads &&
             vh.n_code == k_token_codes,
         "token heads / codes differ from 8 × 10");
    need(rh.pose_dim == k_pose_feat_dim && ph.pose_dim == k_pose_feat_dim && vh.tgt_dim == k_pose_feat_dim,
         "pose features differ from 304");
    need(ph.root_dim == 4 && vh.ext_dim == 2 && vh.out_dim == k_local_dim,
         "pose root condition / decoder external condition / decoder output are not 4 / 2 / 413");

    return p;
}

} // namespace

const char * motion_model::backend_name() const {
    return p_->loader->name();
}

backend_precision motion_model::precision() const {
    return p_->precision;
}

std::unique_ptr<motion_model> motion_model::create(std::unique_ptr<model_bundle> bundle, int n_threads,
                                                   backend_device device, int ordinal,
                                                   backend_precision precision) {
    if (!bundle || !bundle->pose || !bundle->root || !bundle->vq_decoder) {
        throw std::runtime_error("model bundle is incomplete (pose, root and vq-decoder components are required)");
    }
    const tensor_source & pose = *bundle->pose;
    const tensor_source & root = *bundle->root;
    const tensor_source & vq   = *bundle->vq_decoder;
    auto p = build(std::move(bundle), pose, root, vq, n_threads, device, ordinal, precision);
    return std::unique_ptr<motion_model>(new motion_model(std::move(p)));
}

std::unique_ptr<motion_model> motion_model::create_from_sources(const tensor_source & pose, const tensor_source & root,
                                                                const tensor_source & vq_decoder,
                                                                const model_support & sup, int n_threads,
                                                                backend_device device, int ordinal,
                                                   backend_precision precision) {
    auto b = std::make_unique<model_bundle>();
    b->sup = sup;
    auto p = build(std::move(b), pose, root, vq_decoder, n_threads, device, ordinal, precision);
    return std::unique_ptr<motion_model>(new motion_model(std::move(p)));
}

std::string motion_model::validate(const predict_request & req) const {
    std::string e;
    if (!(e = check_values(req.global_root, 5, "global_root")).empty()) return e;
    if (!(e = check_values(req.local_root, 4, "local_root")).empty()) return e;
    if (!(e = check_values(req.poses, k_pose_dim, "poses")).empty()) return e;
    if (!(e = check_mask(req.global_root_mask, "global_root_mask")).empty()) return e;
    if (!(e = check_mask(req.local_root_mask, "local_root_mask")).empty()) return e;
    if (!(e = check_mask(req.pose_mask, "pose_mask")).empty()) return e;
    if (!(e = check_mask(req.allowed_num_tokens, "allowed_num_tokens")).empty()) return e;
    // the start transform is read from slot 0
    if (req.global_root_mask[0] != 1) return "global_root_mask[0] must be 1 (slot 0 defines the start transform)";
    for (int s = 0; s < k_constraint_frames; ++s) {
        if (!req.global_root_mask[s]) continue;
        const float c = req.global_root[s * 5 + 3], sn = req.global_root[s * 5 + 4];
        if (std::fabs(c * c + sn * sn - 1.0f) > k_heading_tol) {
            return "global_root[" + std::to_string(s) + "] heading (cos, sin) = (" + std::to_string(c) + ", " +
                   std::to_string(sn) + ") is not a unit vector (squared norm 1 ± 0.02)";
        }
    }
    bool any_allowed = false;
    for (uint8_t v : req.allowed_num_tokens) any_allowed = any_allowed || v == 1;
    if (!any_allowed) return "allowed_num_tokens allows no token count";
    if (req.num_tokens != 0 && (req.num_tokens < k_min_tokens || req.num_tokens > k_max_tokens)) {
        return "num_tokens " + std::to_string(req.num_tokens) + " is outside 6..16 (0 = predict)";
    }
    if (req.num_inference_steps < 1 || req.num_inference_steps > k_max_infer_steps) {
        return "num_inference_steps " + std::to_string(req.num_inference_steps) + " is outside 1..16";
    }
    if (req.sampling != sampling_mode::SAMPLING_MODE_ARGMAX && req.sampling != sampling_mode::SAMPLING_MODE_GUMBEL) {
        return "unknown sampling mode " + std::to_string(uint32_t(req.sampling));
    }
    if (!req.gumbel_uniforms.empty()) {
        if (req.sampling != sampling_mode::SAMPLING_MODE_GUMBEL) return "gumbel_uniforms given but sampling is argmax";
        const size_t want = size_t(req.num_inference_steps) * k_max_tokens * k_token_heads * k_token_codes;
        if (req.gumbel_uniforms.size() != want) {
            return "gumbel_uniforms has " + std::to_string(req.gumbel_uniforms.size()) + " values, expected " +
                   std::to_string(want) + " (steps × 16 × 8 × 10)";
        }
        for (size_t i = 0; i < want; ++i) {
            const float u = req.gumbel_uniforms[i];
            if (!(u >= 0.0f && u <= 1.0f)) {
                return "gumbel_uniforms[" + std::to_string(i) + "] = " + std::to_string(u) + " is outside [0, 1]";
            }
        }
    }
    return "";
}

predict_result motion_model::predict(predict_state & state, const predict_request & req,
                                     const trace_fn & trace) const {
    const impl &          m  = *p_;
    predict_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "predict: the state belongs to another model");
    const auto t_start = clock_type::now();
    const std::string problem = validate(req);
    if (!problem.empty()) throw mb::error(mb::status::invalid_argument, problem);
    predict_result res;
    auto t0 = clock_type::now();

    // step 1: recentre (x, z − start; heading unchanged) and normalise  [8, 5] [8, 4] [8, 304]
    const float ref_x = req.global_root[0], ref_z = req.global_root[2];
    const float ref_h = std::atan2(req.global_root[4], req.global_root[3]);
    float g[k_constraint_frames * 5], gn[k_constraint_frames * 5], ln[k_constraint_frames * 4];
    float pz[k_constraint_frames * k_pose_feat_dim];
    for (int s = 0; s < k_constraint_frames; ++s) {
        for (int i = 0; i < 5; ++i) g[s * 5 + i] = req.global_root[s * 5 + i];
        g[s * 5 + 0] -= ref_x;
        g[s * 5 + 2] -= ref_z;
        // root height from the global root, then the 303-d pose
        pz[s * k_pose_feat_dim] = g[s * 5 + 1];
        std::memcpy(pz + s * k_pose_feat_dim + 1, req.poses.data() + s * k_pose_dim, k_pose_dim * sizeof(float));
    }
    m.stats.normalize(g, k_constraint_frames, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gn);
    m.stats.normalize(req.local_root.data(), k_constraint_frames, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, ln);
    m.stats.normalize(pz, k_constraint_frames, feature_subset::FEATURE_SUBSET_POSE, pz);
    tap_host(trace, "norm_global_root_values", gn, {k_constraint_frames, 5});
    tap_host(trace, "norm_local_root_values", ln, {k_constraint_frames, 4});
    tap_host(trace, "norm_local_poses", pz, {k_constraint_frames, k_pose_feat_dim});
    res.timings.prepare_ms = ms_since(t0);

    // step 2: root planner → n, normalised global root [4n, 5]
    t0 = clock_type::now();
    root_inputs rin;
    rin.global_root        = gn;
    rin.has_global         = req.global_root_mask.data();
    rin.local_root         = ln;
    rin.has_local          = req.local_root_mask.data();
    rin.poses              = pz;
    rin.has_pose           = req.pose_mask.data();
    rin.num_tokens         = req.num_tokens;
    rin.allowed            = req.allowed_num_tokens.data();
    rin.allow_out_of_reach = req.allow_out_of_reach;
    const root_result rr = m.root.run(*st.be, st.root_st, rin, trace);
    const int64_t n = rr.n, F = n * k_frames_per_token;
    for (int k = 0; k < 12; ++k) res.num_token_logits[size_t(k)] = rr.logits[size_t(k)];
    tap_host(trace, "num_token_logits", res.num_token_logits.data(), {12});
    tap_host(trace, "pred_global_root_values", rr.global_root.data(), {F, 5});

    // global → local root (normalised in and out), then the last frame takes the given
    // target velocity when slot 7 has one  [4n, 4]
    m.stats.unnormalize(rr.global_root.data(), F, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, st.global_root_u.data());
    global_root_to_local(st.global_root_u.data(), F, st.local_root.data());
    m.stats.normalize(st.local_root.data(), F, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, st.local_root.data());
    if (req.local_root_mask[k_constraint_frames - 1]) {
        std::memcpy(st.local_root.data() + (F - 1) * k_local_root_dim, ln + (k_constraint_frames - 1) * 4,
                    4 * sizeof(float));
    }
    tap_host(trace, "pred_local_root_values", st.local_root.data(), {F, 4});
    res.timings.root_ms = ms_since(t0);

    // step 3: pose tokens. dense keyframe condition: context at frames 0..3, target at 4n−4..4n−1
    t0 = clock_type::now();
    std::fill(st.pose_cond.begin(), st.pose_cond.begin() + F * k_pose_feat_dim, 0.0f);
    std::fill(st.has_pose_cond.begin(), st.has_pose_cond.begin() + F, 0);
    for (int s = 0; s < k_constraint_frames; ++s) {
        const int64_t f = s < k_frames_per_token ? s : F - k_frames_per_token + (s - k_frames_per_token);
        std::memcpy(st.pose_cond.data() + f * k_pose_feat_dim, pz + s * k_pose_feat_dim, k_pose_feat_dim * sizeof(float));
        st.has_pose_cond[size_t(f)] = req.pose_mask[s];
    }
    // root condition: normalised global x, z, cos h, sin h  [4n, 4]
    for (int64_t f = 0; f < F; ++f) {
        const float * r = rr.global_root.data() + f * 5;
        float * o = st.root_cond.data() + f * 4;
        o[0] = r[0];
        o[1] = r[2];
        o[2] = r[3];
        o[3] = r[4];
    }
    tap_host(trace, "pose_cond", st.pose_cond.data(), {F, k_pose_feat_dim});
    tap_host(trace, "has_pose_cond", st.has_pose_cond.data(), {F});
    tap_host(trace, "pose_root_cond", st.root_cond.data(), {F, 4});

    pose_cond_inputs pin;
    pin.n             = n;
    pin.root_cond     = st.root_cond.data();
    pin.pose_cond     = st.pose_cond.data();
    pin.has_pose_cond = st.has_pose_cond.data();
    pose_decode_options opt;
    opt.n_steps    = req.num_inference_steps;
    opt.use_argmax = req.sampling == sampling_mode::SAMPLING_MODE_ARGMAX;
    if (!opt.use_argmax) {
        if (!req.gumbel_uniforms.empty()) {
            opt.uniforms = req.gumbel_uniforms.data();
        } else {
            const size_t count = size_t(req.num_inference_steps) * k_max_tokens * k_token_heads * k_token_codes;
            uniforms_generate(req.seed, st.uniforms.data(), count);
            opt.uniforms = st.uniforms.data();
        }
    }
    m.pose.decode(*st.be, st.pose_st, pin, opt, st.tokens.data(), trace);
    const int64_t H = k_token_heads;
    tap_host(trace, "pred_pose_tokens", st.tokens.data(), {n, H});
    res.tokens.assign(st.tokens.begin(), st.tokens.begin() + n * H);
    res.timings.pose_ms = ms_since(t0);

    // step 4: decode. external condition: normalised local vx, vz; target condition: the keyframes
    // (context only with skip_ending_target_cond)
    t0 = clock_type::now();
    for (int64_t f = 0; f < F; ++f) {
        st.ext[size_t(f * 2 + 0)] = st.local_root[size_t(f * 4 + 1)];
        st.ext[size_t(f * 2 + 1)] = st.local_root[size_t(f * 4 + 2)];
        st.has_tgt[size_t(f)] = (req.skip_ending_target_cond && f >= k_frames_per_token) ? 0 : st.has_pose_cond[size_t(f)];
    }
    tap_host(trace, "decoder_external_cond", st.ext.data(), {F, 2});
    tap_host(trace, "decoder_has_target_cond", st.has_tgt.data(), {F});
    m.vq.decode(*st.be, st.vq_st, st.tokens.data(), n, st.ext.data(), st.pose_cond.data(), st.has_tgt.data(),
                st.recon.data(), trace);
    tap_host(trace, "decoder_recon_state", st.recon.data(), {F, k_local_dim});
    res.timings.decoder_ms = ms_since(t0);

    // step 5: unnormalise, integrate the root from 0, re-apply the start transform, FK
    t0 = clock_type::now();
    m.stats.unnormalize(st.recon.data(), F, feature_subset::FEATURE_SUBSET_LOCAL, st.local.data());
    tap_host(trace, "pred_local_poses", st.local.data(), {F, k_local_dim});
    res.global_features.assign(size_t(F * k_global_dim), 0.0f);
    local_to_global(st.local.data(), F, res.global_features.data());
    tap_host(trace, "pred_global_poses_before_reapply", res.global_features.data(), {F, k_global_dim});
    reapply_start_transform(res.global_features.data(), F, ref_x, ref_z, ref_h);
    tap_host(trace, "pred_global_poses", res.global_features.data(), {F, k_global_dim});

    res.num_tokens = int(n);
    res.frames     = int(F);
    res.root_translations.resize(size_t(F * 3));
    for (int64_t f = 0; f < F; ++f) {
        for (int i = 0; i < 3; ++i) res.root_translations[size_t(f * 3 + i)] = res.global_features[size_t(f * k_global_dim + i)];
    }
    res.joint_positions.assign(size_t(F * k_n_joints * 3), 0.0f);
    res.local_rotations_xyzw.assign(size_t(F * k_n_joints * 4), 0.0f);
    m.fk.run(res.global_features.data(), F, res.joint_positions.data(), res.local_rotations_xyzw.data(), nullptr);
    tap_host(trace, "joint_positions", res.joint_positions.data(), {F, k_n_joints, 3});
    res.timings.finish_ms = ms_since(t0);
    res.timings.total_ms  = ms_since(t_start);
    return res;
}

} // namespace mb
