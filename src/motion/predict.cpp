// upstream motion_inference.predict, computed on the valid length (n tokens, 4n frames):
//   1. recentre (start xz subtracted, heading kept) and normalise the constraints
//   2. root planner → n and the normalised global root; global → local root with the
//      final-velocity fix
//   3. pose-token planner (masked decoding, argmax or Gumbel)
//   4. VQ decoder → normalised local 413-d frames
//   5. local → global, start transform re-applied, FK (on the backend where it has
//      motion_finish and nothing is traced)
#include "motion/predict.h"

#include "backend/cpu/each-index.h"
#include "backend/cpu/fp-mode.h"
#include "backend/cpu/thread-pool.h"
#include "format/error.h"
#include "model/pose-planner.h"
#include "model/root-planner.h"
#include "model/sampling.h"
#include "model/vq-decoder.h"
#include "motion/skeleton-fk.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mb {

namespace {

constexpr float k_max_abs_value   = 1e4f;   // largest accepted |feature|
constexpr float k_heading_tol     = 0.02f;  // |cos² + sin² − 1| for enabled global-root slots
constexpr int   k_max_infer_steps = 16;
constexpr int   k_local_root_dim  = 4;
// chunks in flight on a GPU (batch_states): with two, the GPU idled while both states were in
// host steps or waits (H100, B = 1,024, same call: F32 244k → 267k frames/s with four, TF32
// 586k → 654k); three gave about as much as four
constexpr int64_t k_cuda_batch_states = 4;

// backend::motion_finish works on the representation of motion-rep.h and the G1 skeleton
static_assert(k_finish_local_dim == k_local_dim && k_finish_global_dim == k_global_dim &&
                  k_finish_rot6d == k_global_rot6d && k_finish_joints == k_n_joints && k_finish_fps == k_motion_fps,
              "backend/motion-finish.h's constants differ from motion-rep.h's");

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// MB_PREDICT_PROFILE=1: the wall time of each step of predict_chunk summed over chunks (and the
// threads running them), printed to stderr at exit: where a fused batch's host time goes
struct chunk_profile {
    enum step { prepare, root, root_host, pose_host, pose_in, pose_net, pose_out, dec_host, dec_in, dec_net,
                dec_out, finish, n_steps };
    static constexpr const char * names[n_steps] = {"prepare", "root", "root_host", "pose_host", "pose_in",
                                                    "pose_net", "pose_out", "dec_host", "dec_in", "dec_net",
                                                    "dec_out", "finish"};
    const bool on = [] {
        const char * v = std::getenv("MB_PREDICT_PROFILE");
        return v && std::string(v) == "1";
    }();
    std::mutex mu;
    double     ms[n_steps] = {};
    int64_t    chunks = 0, lanes = 0;
    double     batch_ms = 0;        // predict_batch calls of the pooled states, wall time
    int64_t    batches  = 0;
    std::vector<double> batch_each;   // each predict_batch call's wall time
    double     validate_ms = 0;     // predict_batch_states: checking every request before any runs
    double     join_ms     = 0;     // predict_batch_states: the calling thread waiting for the others
    // MB_PROFILE_TIMELINE=PATH (with MB_PREDICT_PROFILE=1): every step of every chunk and every
    // batch call as "step RANK NAME START END" / "call - - START END" lines (steady-clock ms, the
    // clock of the CUDA backend's PATH.gpu), written to PATH.host at exit
    const char * timeline = std::getenv("MB_PROFILE_TIMELINE");
    struct span {
        int    rank, step;
        double a, b;
    };
    std::vector<span> spans;

    void add(const double (&t)[n_steps], int64_t B) {
        std::lock_guard<std::mutex> lock(mu);
        for (int i = 0; i < n_steps; ++i) ms[i] += t[i];
        ++chunks;
        lanes += B;
    }
    ~chunk_profile() {
        if (!on || chunks == 0) return;
        std::fprintf(stderr, "predict profile: %lld chunks, %lld lanes; ms summed:", (long long) chunks,
                     (long long) lanes);
        for (int i = 0; i < n_steps; ++i) std::fprintf(stderr, " %s %.1f", names[i], ms[i]);
        std::fprintf(stderr, "; %lld batch calls %.1f ms", (long long) batches, batch_ms);
        if (!batch_each.empty()) {
            std::vector<double> v = batch_each;
            std::sort(v.begin(), v.end());
            std::fprintf(stderr, " (median %.2f ms)", v[v.size() / 2]);
        }
        std::fprintf(stderr, "; validate %.1f ms, join wait %.1f ms\n", validate_ms, join_ms);
        if (!timeline || !*timeline) return;
        if (FILE * f = std::fopen((std::string(timeline) + ".host").c_str(), "w")) {
            for (const span & x : spans) {
                if (x.step < 0) std::fprintf(f, "call - - %.3f %.3f\n", x.a, x.b);
                else std::fprintf(f, "step %d %s %.3f %.3f\n", x.rank, names[x.step], x.a, x.b);
            }
            std::fclose(f);
        }
    }
};
chunk_profile g_profile;

// the rank of the batch state this thread runs chunks for (predict_batch_states; 0 elsewhere)
thread_local int t_rank = 0;

double steady_ms(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

// times consecutive steps of one chunk
struct step_clock {
    double                 t[chunk_profile::n_steps] = {};
    clock_type::time_point t0 = clock_type::now();
    void lap(chunk_profile::step i) {
        const auto now = clock_type::now();
        t[i] += std::chrono::duration<double, std::milli>(now - t0).count();
        if (g_profile.on && g_profile.timeline) {
            std::lock_guard<std::mutex> lock(g_profile.mu);
            g_profile.spans.push_back({t_rank, int(i), steady_ms(t0), steady_ms(now)});
        }
        t0 = now;
    }
};

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
    // the motion ops' constants on the backend where it has them (else empty; states run steps 2–5
    // there exactly when these exist): the LOCAL subset's scale and mean, the skeleton's offsets
    // and parents, root_conditions' statistics, uploaded once from finish_host
    std::vector<float>              finish_host;   // [413 scale | 413 mean | 34·3 offsets | 34 parents (int32 bits) | 8]
    std::unique_ptr<backend_buffer> finish_mem;
    bptr<const float>               finish_scale, finish_mean, finish_offsets;   // [413], [413], [34, 3]
    bptr<const int32_t>             finish_parents;                              // [34]
    bptr<const float>               cond_stats;                                  // [8]

    // states of the stateless predict(req) and predict_batch(reqs): taken under the lock,
    // computed on outside it
    std::mutex                                  pool_mutex;
    std::vector<std::unique_ptr<predict_state>> pool;         // one lane
    std::vector<std::unique_ptr<predict_state>> batch_pool;   // batch_lanes() lanes
};

struct predict_state::impl {
    const motion_model::impl * model = nullptr;   // the model this state was made for
    int64_t                    lanes = 1;         // requests fused per chunk
    std::unique_ptr<backend>   be;
    // the host steps of a fused chunk (normalisation, conditions, FK) split over lanes: states
    // of many lanes on a GPU backend (the CPU backend's own threads have the cores)
    std::unique_ptr<cpu::thread_pool> host;
    root_planner_state         root_st;
    pose_planner_state         pose_st;
    vq_decoder_state           vq_st;

    // per-lane buffers, lane l at l × the size given, sized once for 16 tokens / 64 frames
    std::vector<float>       gn;             // [8, 5] normalised recentred global root
    std::vector<float>       ln;             // [8, 4] normalised local root
    std::vector<float>       pz;             // [8, 304] normalised poses
    std::vector<float>       ref;            // [3] start x, z, heading
    std::vector<root_inputs> rin;            // [1]
    std::vector<root_result> rr;             // [1]
    std::vector<float>       pose_cond;      // [64, 304]
    std::vector<uint8_t>     has_pose_cond;  // [64]
    std::vector<uint8_t>     has_tgt;        // [64]
    std::vector<float>       root_cond;      // [64, 4]
    std::vector<float>       global_root_u;  // [64, 5] unnormalised
    std::vector<float>       local_root;     // [64, 4] normalised after the fix
    std::vector<float>       ext;            // [64, 2]
    std::vector<float>       recon;          // [64, 413] normalised decoder output
    std::vector<float>       local;          // [64, 413] unnormalised
    std::vector<float>       uniforms;       // [steps, 16, 8, 10] generated Gumbel draws
    std::vector<int32_t>     tokens;         // [16, 8]

    // one bucket's lanes back to back at their valid sizes (lanes × the per-lane sizes above)
    std::vector<int64_t> bucket;            // lane indices of the bucket
    std::vector<uint8_t> done;              // [lanes] lane already in a bucket
    std::vector<float>   b_pose_cond, b_root_cond, b_ext, b_recon, b_uniforms;
    std::vector<uint8_t> b_has_pose_cond, b_has_tgt;
    std::vector<int32_t> b_tokens;

    // steps 2–5 on the backend (plan_on_backend): each bucket finished after its decode, its lanes'
    // outputs back to back from the frame where the buckets before it end
    bool                            plan_on_backend = false;
    std::unique_ptr<backend_buffer> finish_mem;
    bptr<float>                     f_ref;       // [lanes, 3] start x, z, heading in bucket order
    bptr<float>                     f_last;      // [lanes, 2] a bucket's given last-frame vx, vz (normalised)
    bptr<uint8_t>                   f_has_last;  // [lanes] whether it is given
    std::vector<float>              h_last;      // [lanes, 2] f_last's host side
    std::vector<uint8_t>            h_has_last;  // [lanes]
    std::vector<int64_t>            group;       // [lanes] the pose decode's options, as one key
    bptr<float>                     f_global;    // [lanes·64, 414]
    bptr<float>                     f_pos;       // [lanes·64, 34, 3]
    bptr<float>                     f_rot;       // [lanes·64, 34, 4] local rotations x y z w
    std::vector<float>              h_ref;       // [lanes, 3] f_ref's host side
    std::vector<int64_t>            f_at;        // [lanes] the lane's first frame in the outputs
    // the outputs and tokens as they come down, each bucket's copied without a wait of its own (one
    // wait a plan): in the backend's page-locked host memory where it has some (a 256-lane chunk's
    // 42 MB also come down several times faster), else plain
    std::shared_ptr<void>           h_out_pinned;
    std::vector<float>              h_out_plain;
    std::vector<int32_t>            h_tok_plain;
    float *                         h_global = nullptr, * h_pos = nullptr, * h_rot = nullptr;
    int32_t *                       h_tok    = nullptr;     // [lanes·16, 8] the buckets' tokens
};

predict_state::predict_state() = default;
predict_state::~predict_state() = default;

motion_model::motion_model(std::unique_ptr<impl> p) : p_(std::move(p)) {}
motion_model::~motion_model() = default;

const model_bundle & motion_model::bundle() const {
    return *p_->bundle;
}

std::unique_ptr<predict_state> motion_model::create_state(int64_t lanes) const {
    const impl & m = *p_;
    if (lanes < 1 || lanes > 4096) {
        throw mb::error(mb::status::invalid_argument, "predict state: " + std::to_string(lanes) + " lanes, expected 1..4096");
    }
    std::unique_ptr<predict_state> st(new predict_state());
    st->p           = std::make_unique<predict_state::impl>();
    predict_state::impl & s = *st->p;
    s.model   = p_.get();
    s.lanes   = lanes;
    s.be      = backend_create(m.device, m.n_threads, m.ordinal, m.precision);
    s.root_st = root_planner_state(*s.be, m.root, lanes);
    s.pose_st = pose_planner_state(*s.be, m.pose.hp, lanes);
    s.vq_st   = vq_decoder_state(*s.be, m.vq.hp, m.vq.dec.hp, k_max_tokens, lanes);
    const size_t L = size_t(lanes);
    const size_t F = size_t(k_max_tokens) * k_frames_per_token;
    const size_t U = size_t(k_max_infer_steps) * k_max_tokens * k_token_heads * k_token_codes;
    s.gn.assign(L * k_constraint_frames * 5, 0.0f);
    s.ln.assign(L * k_constraint_frames * 4, 0.0f);
    s.pz.assign(L * k_constraint_frames * k_pose_feat_dim, 0.0f);
    s.ref.assign(L * 3, 0.0f);
    s.rin.assign(L, root_inputs{});
    s.rr.assign(L, root_result{});
    for (root_result & r : s.rr) r.global_root.reserve(F * 5);    // the root planner assigns into it every plan
    s.pose_cond.assign(L * F * k_pose_feat_dim, 0.0f);
    s.has_pose_cond.assign(L * F, 0);
    s.has_tgt.assign(L * F, 0);
    s.root_cond.assign(L * F * 4, 0.0f);
    s.global_root_u.assign(L * F * 5, 0.0f);
    s.local_root.assign(L * F * k_local_root_dim, 0.0f);
    s.ext.assign(L * F * 2, 0.0f);
    s.recon.assign(L * F * k_local_dim, 0.0f);
    s.local.assign(L * F * k_local_dim, 0.0f);
    s.uniforms.assign(L * U, 0.0f);
    s.tokens.assign(L * k_max_tokens * k_token_heads, 0);
    s.bucket.reserve(L);
    s.done.assign(L, 0);
    s.plan_on_backend = m.finish_mem != nullptr;     // the model's backend kind has the motion ops
    if (s.plan_on_backend) {
        const size_t G = L * F * k_global_dim, P = L * F * k_n_joints * 3, R = L * F * k_n_joints * 4;
        s.finish_mem   = s.be->alloc((L * 6 + G + P + R) * sizeof(float));
        s.be->reserve_motion_finish(int64_t(F));
        s.f_ref        = s.finish_mem->as<float>();
        s.f_last       = s.f_ref + int64_t(L * 3);
        s.f_has_last   = bptr<uint8_t>(reinterpret_cast<uint8_t *>((s.f_last + int64_t(L * 2)).p));
        s.f_global     = s.f_ref + int64_t(L * 6);
        s.h_last.assign(L * 2, 0.0f);
        s.h_has_last.assign(L, 0);
        s.group.assign(L, 0);
        s.f_pos        = s.f_global + int64_t(G);
        s.f_rot        = s.f_pos + int64_t(P);
        s.h_ref.assign(L * 3, 0.0f);
        s.f_at.assign(L, 0);
        const size_t T = L * k_max_tokens * k_token_heads;
        s.h_out_pinned = s.be->alloc_host((G + P + R) * sizeof(float) + T * sizeof(int32_t));
        if (s.h_out_pinned) {
            s.h_global = static_cast<float *>(s.h_out_pinned.get());
            s.h_tok    = reinterpret_cast<int32_t *>(s.h_global + G + P + R);
        } else {
            s.h_out_plain.assign(G + P + R, 0.0f);
            s.h_tok_plain.assign(T, 0);
            s.h_global = s.h_out_plain.data();
            s.h_tok    = s.h_tok_plain.data();
        }
        s.h_pos = s.h_global + G;
        s.h_rot = s.h_pos + P;
    }
    if (lanes > 1 && std::string(s.be->name()) != "cpu") {
        const unsigned hw = std::thread::hardware_concurrency();
        if (hw > 1) s.host = std::make_unique<cpu::thread_pool>(int(std::min(hw, 16u)));
    }
    if (lanes > 1) {
        s.b_pose_cond.assign(L * F * k_pose_feat_dim, 0.0f);
        s.b_root_cond.assign(L * F * 4, 0.0f);
        s.b_ext.assign(L * F * 2, 0.0f);
        s.b_recon.assign(L * F * k_local_dim, 0.0f);
        s.b_uniforms.assign(L * U, 0.0f);
        s.b_has_pose_cond.assign(L * F, 0);
        s.b_has_tgt.assign(L * F, 0);
        s.b_tokens.assign(L * k_max_tokens * k_token_heads, 0);
    }
    return st;
}

int64_t motion_model::batch_lanes() const {
    if (p_->device != backend_device::BACKEND_DEVICE_CUDA) return 64;
    // MB_CUDA_BATCH_LANES=N (64..4096): another chunk size, to compare throughput
    static const int64_t cuda_lanes = [] {
        const char * v = std::getenv("MB_CUDA_BATCH_LANES");
        const long   n = v ? std::atol(v) : 0;
        return n >= 64 && n <= 4096 ? int64_t(n) : int64_t(256);
    }();
    return cuda_lanes;
}

int64_t motion_model::batch_states() const {
    if (p_->device != backend_device::BACKEND_DEVICE_CUDA) return 1;
    // MB_CUDA_BATCH_STATES=N (1..8): another number of chunks in flight, to compare throughput
    static const int64_t cuda_states = [] {
        const char * v = std::getenv("MB_CUDA_BATCH_STATES");
        const long   n = v ? std::atol(v) : 0;
        return n >= 1 && n <= 8 ? int64_t(n) : int64_t(k_cuda_batch_states);
    }();
    return cuda_states;
}

namespace {

// a state from `pool` (a new one of `lanes` lanes when the pool is empty), returned to it whether
// the call succeeds or throws
template <class F>
auto with_pooled_state(const motion_model & model, std::mutex & mu, std::vector<std::unique_ptr<predict_state>> & pool,
                       int64_t lanes, F && f) {
    std::unique_ptr<predict_state> st;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (!pool.empty()) {
            st = std::move(pool.back());
            pool.pop_back();
        }
    }
    if (!st) st = model.create_state(lanes);
    struct give_back {
        std::mutex &                                  mu;
        std::vector<std::unique_ptr<predict_state>> & pool;
        std::unique_ptr<predict_state> &              st;
        ~give_back() {
            std::lock_guard<std::mutex> lock(mu);
            pool.push_back(std::move(st));
        }
    } back{mu, pool, st};
    return f(*st);
}

} // namespace

predict_result motion_model::predict(const predict_request & req, const trace_fn & trace) const {
    impl & m = *p_;
    return with_pooled_state(*this, m.pool_mutex, m.pool, 1,
                             [&](predict_state & st) { return predict(st, req, trace); });
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
    p->loader = backend_create(device, 1, ordinal, precision);     // AUTO resolves here, once
    bool cuda = std::string(p->loader->name()) == "cuda";
    const auto load_networks = [&] {
        p->root = root_planner::load(root_src, *p->loader);
        p->pose = pose_planner::load(pose_src, *p->loader);
        p->vq   = vq_decoder::load(vq_src, *p->loader);
    };
    try {
        load_networks();
    } catch (const error & e) {
        // under AUTO a GPU that cannot run this bundle (BF16/Q8_0 weights on CUDA) is not a usable
        // one: the CPU runs it (a bundle no backend can run fails there with the same message)
        if (device != backend_device::BACKEND_DEVICE_AUTO || !cuda || e.code() != status::incompatible_model) throw;
        p->root   = {};
        p->pose   = {};
        p->vq     = {};
        p->loader = backend_create(backend_device::BACKEND_DEVICE_CPU, 1, ordinal, precision);
        cuda      = false;
        load_networks();
    }
    p->device    = cuda ? backend_device::BACKEND_DEVICE_CUDA : backend_device::BACKEND_DEVICE_CPU;
    p->precision = cuda ? precision : backend_precision::BACKEND_PRECISION_F32;
    p->stats  = motion_stats::from_support(p->bundle->sup);
    p->fk     = skeleton_fk::from_support(p->bundle->sup);
    if (p->loader->has_motion_ops()) {
        // the motion ops' constants, uploaded once: the LOCAL subset's scale and mean, offsets,
        // parents, then root_conditions' statistics
        const std::span<const int> idx = feature_subset_indices(feature_subset::FEATURE_SUBSET_LOCAL);
        const std::span<const int> gi  = feature_subset_indices(feature_subset::FEATURE_SUBSET_GLOBAL_ROOT);
        const std::span<const int> li  = feature_subset_indices(feature_subset::FEATURE_SUBSET_LOCAL_ROOT);
        const motion_stats &       ms  = p->stats;
        std::vector<float> &       h   = p->finish_host;
        constexpr size_t           at  = 2 * k_local_dim + k_n_joints * 3 + k_n_joints;
        h.assign(at + 8, 0.0f);
        for (int i = 0; i < k_local_dim; ++i) {
            h[size_t(i)]               = ms.scale[size_t(idx[size_t(i)])];
            h[size_t(k_local_dim + i)] = ms.mean[size_t(idx[size_t(i)])];
        }
        std::copy(p->fk.offsets.begin(), p->fk.offsets.end(), h.begin() + 2 * k_local_dim);
        std::memcpy(h.data() + 2 * k_local_dim + k_n_joints * 3, p->fk.parents.data(), k_n_joints * sizeof(int32_t));
        const float cs[8] = {ms.scale[size_t(gi[0])], ms.scale[size_t(gi[2])], ms.mean[size_t(gi[0])],
                             ms.mean[size_t(gi[2])],  ms.scale[size_t(li[1])], ms.scale[size_t(li[2])],
                             ms.mean[size_t(li[1])],  ms.mean[size_t(li[2])]};
        std::copy(cs, cs + 8, h.begin() + at);
        p->finish_mem             = p->loader->alloc_from_host(h.data(), h.size() * sizeof(float));
        const bptr<const float> c = p->finish_mem->as<float>();
        p->finish_scale           = c;
        p->finish_mean            = c + k_local_dim;
        p->finish_offsets         = c + 2 * k_local_dim;
        p->finish_parents = bptr<const int32_t>(reinterpret_cast<const int32_t *>((p->finish_offsets + k_n_joints * 3).p));
        p->cond_stats     = c + int64_t(at);
        p->loader->synchronize();
    }

    // the request format fixes 8 slots, 6..16 tokens of 4 frames, 8 heads × 10 codes, 304-d poses
    const root_hparams & rh = p->root.hp;
    const pose_hparams & ph = p->pose.hp;
    const vq_hparams &   vh = p->vq.hp;
    auto need = [](bool ok, const std::string & what) {
        if (!ok) throw error(status::incompatible_model, "model bundle: " + what);
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

device_memory_use motion_model::device_memory() const {
    device_memory_use use;
    if (!p_->loader->device_memory(use)) return {};
    // idle pooled states only: a running call's state is its own until it returns
    std::lock_guard<std::mutex> lock(p_->pool_mutex);
    for (const auto * pool : {&p_->pool, &p_->batch_pool}) {
        for (const auto & st : *pool) {
            device_memory_use s;
            if (st->p->be->device_memory(s)) use.held_bytes += s.held_bytes;
        }
    }
    return use;
}

std::unique_ptr<motion_model> motion_model::create(std::unique_ptr<model_bundle> bundle, int n_threads,
                                                   backend_device device, int ordinal,
                                                   backend_precision precision) {
    if (!bundle || !bundle->pose || !bundle->root || !bundle->vq_decoder) {
        throw error(status::incompatible_model,
                    "model bundle is incomplete (pose, root and vq-decoder components are required)");
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

namespace {

// fewer lanes than this run their host steps on the calling thread
constexpr int64_t k_pool_min_lanes = 16;

// `f(l)` for every lane on the state's host pool (cpu::each_index's rule), naming the lane that
// throws in *failed (the lowest such lane)
void each_lane(cpu::thread_pool * pool, int64_t B, int64_t * failed, const std::function<void(int64_t)> & f) {
    cpu::each_index(B >= k_pool_min_lanes ? pool : nullptr, B, failed, f);
}

} // namespace

// one chunk of predict_batch: B ≤ st.lanes validated requests; host steps run lane by lane, the
// networks once per bucket of lanes that share their op sequence. *failed names the lane whose
// error is thrown (-1: none in particular). Taps only with one lane
static void predict_chunk(const motion_model::impl & m, predict_state::impl & st, const predict_request * req,
                          int64_t B, predict_result * res, const trace_fn & trace, int64_t * failed,
                          const std::function<void(size_t)> * lane_done = nullptr, size_t first = 0) {
    constexpr int64_t S = k_constraint_frames, FM = int64_t(k_max_tokens) * k_frames_per_token;
    constexpr int64_t H = k_token_heads, U = int64_t(k_max_infer_steps) * k_max_tokens * k_token_heads * k_token_codes;
    constexpr int64_t JP = k_n_joints * 3, JR = k_n_joints * 4;     // joint positions, rotations a frame
    predict_timings tm;
    const auto      t_start = clock_type::now();
    auto            t0      = t_start;
    *failed                 = -1;
    step_clock      sc;     // MB_PREDICT_PROFILE

    // step 1: recentre (x, z − start; heading unchanged) and normalise  [8, 5] [8, 4] [8, 304]
    each_lane(st.host.get(), B, failed, [&](int64_t l) {
        const predict_request & r = req[l];
        float * g  = st.global_root_u.data() + l * FM * 5;     // scratch: recentred [8, 5]
        float * gn = st.gn.data() + l * S * 5;
        float * ln = st.ln.data() + l * S * 4;
        float * pz = st.pz.data() + l * S * k_pose_feat_dim;
        float * rf = st.ref.data() + l * 3;
        rf[0] = r.global_root[0];
        rf[1] = r.global_root[2];
        rf[2] = std::atan2(r.global_root[4], r.global_root[3]);
        for (int64_t s = 0; s < S; ++s) {
            for (int i = 0; i < 5; ++i) g[s * 5 + i] = r.global_root[size_t(s * 5 + i)];
            g[s * 5 + 0] -= rf[0];
            g[s * 5 + 2] -= rf[1];
            // root height from the global root, then the 303-d pose
            pz[s * k_pose_feat_dim] = g[s * 5 + 1];
            std::memcpy(pz + s * k_pose_feat_dim + 1, r.poses.data() + s * k_pose_dim, k_pose_dim * sizeof(float));
        }
        m.stats.normalize(g, S, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gn);
        m.stats.normalize(r.local_root.data(), S, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, ln);
        m.stats.normalize(pz, S, feature_subset::FEATURE_SUBSET_POSE, pz);
        tap_host(trace, "norm_global_root_values", gn, {S, 5});
        tap_host(trace, "norm_local_root_values", ln, {S, 4});
        tap_host(trace, "norm_local_poses", pz, {S, k_pose_feat_dim});

        root_inputs & rin       = st.rin[size_t(l)];
        rin.global_root         = gn;
        rin.has_global          = r.global_root_mask.data();
        rin.local_root          = ln;
        rin.has_local           = r.local_root_mask.data();
        rin.poses               = pz;
        rin.has_pose            = r.pose_mask.data();
        rin.num_tokens          = r.num_tokens;
        rin.allowed             = r.allowed_num_tokens.data();
        rin.allow_out_of_reach  = r.allow_out_of_reach;
    });
    tm.prepare_ms = ms_since(t0);
    sc.lap(chunk_profile::prepare);

    // a lane's keyframe condition for the pose planner (context at frames 0..3, target at
    // 4n−4..4n−1), the decoder's target flags (context only with skip_ending_target_cond) and its
    // generated Gumbel draws
    const auto keyframes = [&](int64_t l, int64_t F) {
        const predict_request & r   = req[l];
        float *                 pc  = st.pose_cond.data() + l * FM * k_pose_feat_dim;
        uint8_t *               hpc = st.has_pose_cond.data() + l * FM;
        uint8_t *               ht  = st.has_tgt.data() + l * FM;
        std::fill(pc, pc + F * k_pose_feat_dim, 0.0f);
        std::fill(hpc, hpc + F, 0);
        for (int64_t s = 0; s < S; ++s) {
            const int64_t f = s < k_frames_per_token ? s : F - k_frames_per_token + (s - k_frames_per_token);
            std::memcpy(pc + f * k_pose_feat_dim, st.pz.data() + (l * S + s) * k_pose_feat_dim,
                        k_pose_feat_dim * sizeof(float));
            hpc[f] = r.pose_mask[size_t(s)];
        }
        for (int64_t f = 0; f < F; ++f) ht[f] = (r.skip_ending_target_cond && f >= k_frames_per_token) ? 0 : hpc[f];
        if (r.sampling == sampling_mode::SAMPLING_MODE_GUMBEL && r.gumbel_uniforms.empty()) {
            uniforms_generate(r.seed, st.uniforms.data() + l * U, size_t(r.num_inference_steps) * U / k_max_infer_steps);
        }
    };
    const auto uniforms_of = [&](int64_t l) {
        return req[l].gumbel_uniforms.empty() ? st.uniforms.data() + l * U : req[l].gumbel_uniforms.data();
    };
    // lane l's keyframe condition and draws as lane i of a fused pose decode of F frames a lane
    const auto stage_pose_lane = [&](int64_t i, int64_t l, int64_t F, bool argmax) {
        const int64_t per_u = int64_t(req[l].num_inference_steps) * U / k_max_infer_steps;     // one lane's draws
        std::copy_n(st.pose_cond.begin() + l * FM * k_pose_feat_dim, F * k_pose_feat_dim,
                    st.b_pose_cond.begin() + i * F * k_pose_feat_dim);
        std::copy_n(st.has_pose_cond.begin() + l * FM, F, st.b_has_pose_cond.begin() + i * F);
        if (!argmax) std::copy_n(uniforms_of(l), per_u, st.b_uniforms.begin() + i * per_u);
    };
    // steps 2–5 on the backend where it has the motion ops (traced runs keep the host's glue and
    // step 5, whose intermediates the taps show): each bucket is finished right after its decode
    // (the decoder state holds one bucket's output), its outputs after the buckets' before it, and
    // they and its tokens (the pose planner's state holds them until the next bucket) are copied
    // down behind it, read once the plan is done
    const bool plan_here = st.plan_on_backend && !trace;
    int64_t    f_lanes = 0, f_frames = 0;     // lanes and frames finished on the backend so far
    const auto finish_bucket = [&](int64_t F) {
        const int64_t Bk = int64_t(st.bucket.size());
        for (int64_t i = 0; i < Bk; ++i) {
            const int64_t l = st.bucket[size_t(i)];
            std::copy_n(st.ref.begin() + l * 3, 3, st.h_ref.begin() + (f_lanes + i) * 3);
            st.f_at[size_t(l)] = f_frames + i * F;
        }
        const bptr<float> ref = st.f_ref + f_lanes * 3;
        st.be->set(ref, st.h_ref.data() + f_lanes * 3, Bk * 3);
        st.be->motion_finish(st.vq_st.y, Bk, F, m.finish_scale, m.finish_mean, ref, m.finish_parents, m.finish_offsets,
                             st.f_global + f_frames * k_global_dim, st.f_pos + f_frames * JP, st.f_rot + f_frames * JR);
        st.be->get_later(bptr<const float>(st.f_global + f_frames * k_global_dim), st.h_global + f_frames * k_global_dim,
                         Bk * F * k_global_dim);
        st.be->get_later(bptr<const float>(st.f_pos + f_frames * JP), st.h_pos + f_frames * JP, Bk * F * JP);
        st.be->get_later(bptr<const float>(st.f_rot + f_frames * JR), st.h_rot + f_frames * JR, Bk * F * JR);
        st.be->get_later(bptr<const int32_t>(st.pose_st.tokens), st.h_tok + f_frames / k_frames_per_token * H,
                         Bk * F / k_frames_per_token * H);
        f_lanes += Bk;
        f_frames += Bk * F;
    };
    if (plan_here) {
        // steps 2–4 on the backend, bucket by bucket: a stage-2 bucket of the root planner holds
        // lanes of one duration and one set of decode options, so its trajectory goes on to the
        // glue, the pose planner, the decoder and step 5 with nothing read back until its tokens
        t0 = clock_type::now();
        for (int64_t l = 0; l < B; ++l) {
            st.group[size_t(l)] = int64_t(req[l].num_inference_steps) * 2 +
                                  (req[l].sampling == sampling_mode::SAMPLING_MODE_ARGMAX ? 1 : 0);
        }
        double     pose_ms = 0.0, dec_ms = 0.0;
        const auto on_bucket = [&](const root_bucket & rb) {
            auto          tb = clock_type::now();
            const int64_t n = rb.n, F = n * k_frames_per_token, Bk = rb.n_lanes, l0 = rb.lanes[0];
            const int     steps  = req[l0].num_inference_steps;
            const bool    argmax = req[l0].sampling == sampling_mode::SAMPLING_MODE_ARGMAX;
            st.bucket.assign(rb.lanes, rb.lanes + Bk);
            int64_t none = -1;
            each_lane(st.host.get(), Bk, &none, [&](int64_t i) {
                const int64_t           l = st.bucket[size_t(i)];
                const predict_request & r = req[l];
                keyframes(l, F);
                // the last frame takes the given target velocity when slot 7 has one
                const bool has = r.local_root_mask[S - 1] != 0;
                st.h_has_last[size_t(i)]    = has ? 1 : 0;
                st.h_last[size_t(i * 2)]     = has ? st.ln[size_t(l * S * 4 + (S - 1) * 4 + 1)] : 0.0f;
                st.h_last[size_t(i * 2 + 1)] = has ? st.ln[size_t(l * S * 4 + (S - 1) * 4 + 2)] : 0.0f;
                if (Bk == 1) return;
                stage_pose_lane(i, l, F, argmax);
                std::copy_n(st.has_tgt.begin() + l * FM, F, st.b_has_tgt.begin() + i * F);
            });
            const bool alone = Bk == 1;
            pose_cond_inputs    pin;     // root_cond null: root_conditions writes it on the backend
            pose_decode_options opt;
            pin.n             = n;
            pin.pose_cond     = alone ? st.pose_cond.data() + l0 * FM * k_pose_feat_dim : st.b_pose_cond.data();
            pin.has_pose_cond = alone ? st.has_pose_cond.data() + l0 * FM : st.b_has_pose_cond.data();
            opt.n_steps       = steps;
            opt.use_argmax    = argmax;
            opt.uniforms      = argmax ? nullptr : alone ? uniforms_of(l0) : st.b_uniforms.data();
            const uint8_t * ht = alone ? st.has_tgt.data() + l0 * FM : st.b_has_tgt.data();
            *failed            = alone ? l0 : -1;
            st.be->set(st.f_last, st.h_last.data(), Bk * 2);
            st.be->set(st.f_has_last, st.h_has_last.data(), Bk);
            st.be->root_conditions(rb.y, Bk, F, m.cond_stats, st.f_last, st.f_has_last, st.pose_st.root_cond,
                                   st.vq_st.ext);
            m.pose.decode(*st.be, st.pose_st, pin, opt, nullptr, {}, Bk);
            pose_ms += ms_since(tb);
            tb = clock_type::now();
            m.vq.decode(*st.be, st.vq_st, st.pose_st.tokens, n, nullptr, pin.pose_cond, ht, nullptr, Bk);
            finish_bucket(F);
            *failed = -1;
            dec_ms += ms_since(tb);
        };
        try {
            m.root.run_batch(*st.be, st.root_st, st.rin.data(), B, st.rr.data(), trace, st.group.data(), on_bucket);
        } catch (...) {
            if (st.root_st.failed_lane >= 0) *failed = st.root_st.failed_lane;
            // no copy of an earlier bucket may still be landing in the staging when the state is
            // freed or reused (a failed device throws again here: its error is the first one)
            try {
                st.be->synchronize();
            } catch (...) {
            }
            throw;
        }
        st.be->synchronize();    // the buckets' copies (where every count was forced, the logits' read did it)
        for (int64_t l = 0; l < B; ++l) {    // read back last where every count was forced
            std::copy_n(st.rr[size_t(l)].logits.begin(), 12, res[l].num_token_logits.begin());
        }
        tm.root_ms    = ms_since(t0) - pose_ms - dec_ms;
        tm.pose_ms    = pose_ms;
        tm.decoder_ms = dec_ms;
        sc.lap(chunk_profile::dec_net);
    } else {
        // step 2: root planner → n, normalised global root [4n, 5] (all lanes fused)
        t0 = clock_type::now();
        try {
            m.root.run_batch(*st.be, st.root_st, st.rin.data(), B, st.rr.data(), trace);
        } catch (...) {
            *failed = st.root_st.failed_lane;
            throw;
        }
        sc.lap(chunk_profile::root);
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const predict_request & r  = req[l];
            const root_result &     rr = st.rr[size_t(l)];
            const int64_t           n = rr.n, F = n * k_frames_per_token;
            predict_result &        o = res[l];
            for (int k = 0; k < 12; ++k) o.num_token_logits[size_t(k)] = rr.logits[size_t(k)];
            tap_host(trace, "num_token_logits", o.num_token_logits.data(), {12});
            tap_host(trace, "pred_global_root_values", rr.global_root.data(), {F, 5});

            // global → local root (normalised in and out), then the last frame takes the given
            // target velocity when slot 7 has one  [4n, 4]
            float * gu = st.global_root_u.data() + l * FM * 5;
            float * lr = st.local_root.data() + l * FM * k_local_root_dim;
            m.stats.unnormalize(rr.global_root.data(), F, feature_subset::FEATURE_SUBSET_GLOBAL_ROOT, gu);
            global_root_to_local(gu, F, lr);
            m.stats.normalize(lr, F, feature_subset::FEATURE_SUBSET_LOCAL_ROOT, lr);
            if (r.local_root_mask[S - 1]) {
                std::memcpy(lr + (F - 1) * k_local_root_dim, st.ln.data() + l * S * 4 + (S - 1) * 4, 4 * sizeof(float));
            }
            tap_host(trace, "pred_local_root_values", lr, {F, 4});
        });
        tm.root_ms = ms_since(t0);
        sc.lap(chunk_profile::root_host);

        // step 3: pose tokens (keyframe conditions from keyframes(); the root condition from the trajectory)
        t0 = clock_type::now();
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const root_result & rr  = st.rr[size_t(l)];
            const int64_t       n   = rr.n, F = n * k_frames_per_token;
            const float *       pc  = st.pose_cond.data() + l * FM * k_pose_feat_dim;
            const uint8_t *     hpc = st.has_pose_cond.data() + l * FM;
            float *             rc  = st.root_cond.data() + l * FM * 4;
            keyframes(l, F);
            // root condition: normalised global x, z, cos h, sin h  [4n, 4]
            for (int64_t f = 0; f < F; ++f) {
                const float * g = rr.global_root.data() + f * 5;
                float *       o = rc + f * 4;
                o[0] = g[0];
                o[1] = g[2];
                o[2] = g[3];
                o[3] = g[4];
            }
            tap_host(trace, "pose_cond", pc, {F, k_pose_feat_dim});
            tap_host(trace, "has_pose_cond", hpc, {F});
            tap_host(trace, "pose_root_cond", rc, {F, 4});
        });
        // buckets of lanes with the same token count, steps and sampling run one fused decode; a
        // bucket of one lane decodes from its own arrays
        sc.lap(chunk_profile::pose_host);
        std::fill(st.done.begin(), st.done.end(), 0);
        for (int64_t l0 = 0; l0 < B; ++l0) {
            if (st.done[size_t(l0)]) continue;
            const int64_t n = st.rr[size_t(l0)].n, F = n * k_frames_per_token;
            const int     steps  = req[l0].num_inference_steps;
            const bool    argmax = req[l0].sampling == sampling_mode::SAMPLING_MODE_ARGMAX;
            st.bucket.clear();
            for (int64_t l = l0; l < B; ++l) {
                if (!st.done[size_t(l)] && st.rr[size_t(l)].n == n && req[l].num_inference_steps == steps &&
                    (req[l].sampling == sampling_mode::SAMPLING_MODE_ARGMAX) == argmax) {
                    st.bucket.push_back(l);
                    st.done[size_t(l)] = 1;
                }
            }
            const int64_t Bk = int64_t(st.bucket.size());
            pose_cond_inputs    pin;
            pose_decode_options opt;
            pin.n          = n;
            opt.n_steps    = steps;
            opt.use_argmax = argmax;
            int32_t * tokens_out;
            if (Bk == 1) {
                pin.root_cond     = st.root_cond.data() + l0 * FM * 4;
                pin.pose_cond     = st.pose_cond.data() + l0 * FM * k_pose_feat_dim;
                pin.has_pose_cond = st.has_pose_cond.data() + l0 * FM;
                opt.uniforms      = argmax ? nullptr : uniforms_of(l0);
                tokens_out        = st.tokens.data() + l0 * k_max_tokens * H;
            } else {
                int64_t none = -1;
                each_lane(st.host.get(), Bk, &none, [&](int64_t i) {
                    const int64_t l = st.bucket[size_t(i)];
                    std::copy_n(st.root_cond.begin() + l * FM * 4, F * 4, st.b_root_cond.begin() + i * F * 4);
                    stage_pose_lane(i, l, F, argmax);
                });
                pin.root_cond     = st.b_root_cond.data();
                pin.pose_cond     = st.b_pose_cond.data();
                pin.has_pose_cond = st.b_has_pose_cond.data();
                opt.uniforms      = argmax ? nullptr : st.b_uniforms.data();
                tokens_out        = st.b_tokens.data();
            }
            *failed = Bk == 1 ? l0 : -1;
            sc.lap(chunk_profile::pose_in);
            m.pose.decode(*st.be, st.pose_st, pin, opt, tokens_out, trace, Bk);
            sc.lap(chunk_profile::pose_net);
            if (Bk > 1) {
                int64_t none = -1;
                each_lane(st.host.get(), Bk, &none, [&](int64_t i) {
                    std::copy_n(st.b_tokens.begin() + i * n * H, n * H,
                                st.tokens.begin() + st.bucket[size_t(i)] * k_max_tokens * H);
                });
            }
        }
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const int64_t   n   = st.rr[size_t(l)].n;
            const int32_t * tok = st.tokens.data() + l * k_max_tokens * H;
            tap_host(trace, "pred_pose_tokens", tok, {n, H});
            res[l].tokens.assign(tok, tok + n * H);
        });
        tm.pose_ms = ms_since(t0);
        sc.lap(chunk_profile::pose_out);

        // step 4: decode. external condition: normalised local vx, vz; target condition: the keyframes
        // (context only with skip_ending_target_cond)
        t0 = clock_type::now();
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const int64_t   F   = st.rr[size_t(l)].n * k_frames_per_token;
            const float *   lr  = st.local_root.data() + l * FM * k_local_root_dim;
            const uint8_t * ht  = st.has_tgt.data() + l * FM;
            float *         ext = st.ext.data() + l * FM * 2;
            for (int64_t f = 0; f < F; ++f) {
                ext[f * 2 + 0] = lr[f * 4 + 1];
                ext[f * 2 + 1] = lr[f * 4 + 2];
            }
            tap_host(trace, "decoder_external_cond", ext, {F, 2});
            tap_host(trace, "decoder_has_target_cond", ht, {F});
        });
        sc.lap(chunk_profile::dec_host);
        std::fill(st.done.begin(), st.done.end(), 0);
        for (int64_t l0 = 0; l0 < B; ++l0) {
            if (st.done[size_t(l0)]) continue;
            const int64_t n = st.rr[size_t(l0)].n, F = n * k_frames_per_token;
            st.bucket.clear();
            for (int64_t l = l0; l < B; ++l) {
                if (!st.done[size_t(l)] && st.rr[size_t(l)].n == n) {
                    st.bucket.push_back(l);
                    st.done[size_t(l)] = 1;
                }
            }
            const int64_t Bk = int64_t(st.bucket.size());
            *failed          = Bk == 1 ? l0 : -1;
            if (Bk == 1) {
                m.vq.decode(*st.be, st.vq_st, st.tokens.data() + l0 * k_max_tokens * H, n, st.ext.data() + l0 * FM * 2,
                            st.pose_cond.data() + l0 * FM * k_pose_feat_dim, st.has_tgt.data() + l0 * FM,
                            st.recon.data() + l0 * FM * k_local_dim, trace);
                continue;
            }
            int64_t none = -1;
            each_lane(st.host.get(), Bk, &none, [&](int64_t i) {
                const int64_t l = st.bucket[size_t(i)];
                std::copy_n(st.tokens.begin() + l * k_max_tokens * H, n * H, st.b_tokens.begin() + i * n * H);
                std::copy_n(st.ext.begin() + l * FM * 2, F * 2, st.b_ext.begin() + i * F * 2);
                std::copy_n(st.pose_cond.begin() + l * FM * k_pose_feat_dim, F * k_pose_feat_dim,
                            st.b_pose_cond.begin() + i * F * k_pose_feat_dim);
                std::copy_n(st.has_tgt.begin() + l * FM, F, st.b_has_tgt.begin() + i * F);
            });
            sc.lap(chunk_profile::dec_in);
            m.vq.decode(*st.be, st.vq_st, st.b_tokens.data(), n, st.b_ext.data(), st.b_pose_cond.data(),
                        st.b_has_tgt.data(), st.b_recon.data(), trace, Bk);
            sc.lap(chunk_profile::dec_net);
            each_lane(st.host.get(), Bk, &none, [&](int64_t i) {
                std::copy_n(st.b_recon.begin() + i * F * k_local_dim, F * k_local_dim,
                            st.recon.begin() + st.bucket[size_t(i)] * FM * k_local_dim);
            });
        }
        tm.decoder_ms = ms_since(t0);
        sc.lap(chunk_profile::dec_out);
    }

    // step 5: unnormalise, integrate the root from 0, re-apply the start transform, FK (issued
    // on the backend with each bucket where plan_here: the outputs are downloaded)
    t0 = clock_type::now();
    // the lane's result around its global features, joints and rotations
    const auto finish_lane = [&](int64_t l, int64_t F) {
        predict_result & o = res[l];
        o.num_tokens       = int(F / k_frames_per_token);
        o.frames           = int(F);
        o.root_translations.resize(size_t(F * 3));
        for (int64_t f = 0; f < F; ++f) {
            for (int i = 0; i < 3; ++i) o.root_translations[size_t(f * 3 + i)] = o.global_features[size_t(f * k_global_dim + i)];
        }
        if (lane_done) {
            // this lane's stage times (finish and total up to its own end)
            o.timings           = tm;
            o.timings.finish_ms = ms_since(t0);
            o.timings.total_ms  = ms_since(t_start);
            (*lane_done)(first + size_t(l));
        }
    };
    if (plan_here) {
        // the copies landed at the plan's wait: into the results (on the host pool from
        // k_pool_min_lanes lanes)
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const int64_t    F  = st.rr[size_t(l)].n * k_frames_per_token;
            const int64_t    at = st.f_at[size_t(l)];
            predict_result & o  = res[l];
            const float *    g  = st.h_global + at * k_global_dim;
            const float *    jp = st.h_pos + at * JP;
            const float *    jr = st.h_rot + at * JR;
            const int32_t *  tk = st.h_tok + at / k_frames_per_token * H;
            o.tokens.assign(tk, tk + F / k_frames_per_token * H);
            o.global_features.assign(g, g + F * k_global_dim);
            o.joint_positions.assign(jp, jp + F * JP);
            o.local_rotations_xyzw.assign(jr, jr + F * JR);
            finish_lane(l, F);
        });
    } else {
        each_lane(st.host.get(), B, failed, [&](int64_t l) {
            const int64_t    F  = st.rr[size_t(l)].n * k_frames_per_token;
            const float *    rf = st.ref.data() + l * 3;
            const float *    rc = st.recon.data() + l * FM * k_local_dim;
            float *          lc = st.local.data() + l * FM * k_local_dim;
            predict_result & o  = res[l];
            tap_host(trace, "decoder_recon_state", rc, {F, k_local_dim});
            m.stats.unnormalize(rc, F, feature_subset::FEATURE_SUBSET_LOCAL, lc);
            tap_host(trace, "pred_local_poses", lc, {F, k_local_dim});
            o.global_features.assign(size_t(F * k_global_dim), 0.0f);
            local_to_global(lc, F, o.global_features.data());
            tap_host(trace, "pred_global_poses_before_reapply", o.global_features.data(), {F, k_global_dim});
            reapply_start_transform(o.global_features.data(), F, rf[0], rf[1], rf[2]);
            tap_host(trace, "pred_global_poses", o.global_features.data(), {F, k_global_dim});
            o.joint_positions.assign(size_t(F * JP), 0.0f);
            o.local_rotations_xyzw.assign(size_t(F * JR), 0.0f);
            m.fk.run(o.global_features.data(), F, o.joint_positions.data(), o.local_rotations_xyzw.data(), nullptr);
            tap_host(trace, "joint_positions", o.joint_positions.data(), {F, k_n_joints, 3});
            finish_lane(l, F);
        });
    }
    tm.finish_ms = ms_since(t0);
    sc.lap(chunk_profile::finish);
    if (g_profile.on) g_profile.add(sc.t, B);
    tm.total_ms  = ms_since(t_start);
    if (!lane_done) {
        for (int64_t l = 0; l < B; ++l) res[l].timings = tm;
    }
}

predict_result motion_model::predict(predict_state & state, const predict_request & req,
                                     const trace_fn & trace) const {
    predict_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "predict: the state belongs to another model");
    const auto        t_start = clock_type::now();
    const std::string problem = validate(req);
    if (!problem.empty()) throw mb::error(mb::status::invalid_argument, problem);
    const double   validate_ms = ms_since(t_start);
    predict_result res;
    int64_t        failed = -1;
    predict_chunk(*p_, st, &req, 1, &res, trace, &failed);
    res.timings.prepare_ms += validate_ms;
    res.timings.total_ms += validate_ms;
    return res;
}

// every request validated before any runs: invalid_argument for the first that is not, named
// in *failed (SIZE_MAX when all are valid); split over `pool` (may be null) for many requests
static void validate_each(const motion_model & model, std::span<const predict_request> reqs, size_t * failed,
                          cpu::thread_pool * pool = nullptr) {
    if (failed) *failed = SIZE_MAX;
    constexpr size_t k_pool_min_requests = 64;
    int64_t          bad = -1;
    try {
        cpu::each_index(reqs.size() >= k_pool_min_requests ? pool : nullptr, int64_t(reqs.size()), &bad, [&](int64_t i) {
            const std::string problem = model.validate(reqs[size_t(i)]);
            if (!problem.empty()) throw mb::error(mb::status::invalid_argument, problem);
        });
    } catch (...) {
        if (failed && bad >= 0) *failed = size_t(bad);
        throw;
    }
}

// validated requests in chunks of the state's lanes, one after another
static void run_chunks(const motion_model::impl & m, predict_state::impl & st, std::span<const predict_request> reqs,
                       std::span<predict_result> out, size_t * failed, const std::function<void(size_t)> & lane_done,
                       size_t first) {
    for (size_t c0 = 0; c0 < reqs.size(); c0 += size_t(st.lanes)) {
        const int64_t B    = int64_t(std::min(reqs.size() - c0, size_t(st.lanes)));
        int64_t       lane = -1;
        try {
            predict_chunk(m, st, reqs.data() + c0, B, out.data() + c0, {}, &lane, lane_done ? &lane_done : nullptr,
                          first + c0);
        } catch (...) {
            if (failed && lane >= 0) *failed = c0 + size_t(lane);
            throw;
        }
    }
}

void motion_model::predict_batch(std::span<const predict_request> reqs, std::span<predict_result> out,
                                 size_t * failed, const std::function<void(size_t)> & lane_done) const {
    impl &       m     = *p_;
    const size_t lanes = size_t(batch_lanes());
    const auto   t0    = clock_type::now();
    // any GPU: the CUDA backend makes its GPU current on whichever thread calls it
    if (m.device == backend_device::BACKEND_DEVICE_CUDA && reqs.size() > lanes && batch_states() > 1 &&
        reqs.size() == out.size()) {
        predict_batch_states(reqs, out, failed, lane_done);
    } else {
        with_pooled_state(*this, m.pool_mutex, m.batch_pool, batch_lanes(), [&](predict_state & st) {
            validate_each(*this, reqs, failed, st.p->host.get());
            run_chunks(m, *st.p, reqs, out, failed, lane_done, 0);
            return 0;
        });
    }
    if (g_profile.on) {
        std::lock_guard<std::mutex> lock(g_profile.mu);
        g_profile.batch_ms += ms_since(t0);
        g_profile.batches += 1;
        g_profile.batch_each.push_back(ms_since(t0));
        if (g_profile.timeline) g_profile.spans.push_back({0, -1, steady_ms(t0), steady_ms(clock_type::now())});
    }
}

// more than one chunk on a GPU: pooled states (batch_states() of them) take the chunks in turn,
// each from a thread of its own, so that one chunk's host steps and meetings with the host
// overlap the others' device work (each state has its own stream). The requests are split into
// equal chunks, a multiple of the states in number, so that no chunk runs alone at the end. Every
// request is validated before any runs; the lowest failing request is named
void motion_model::predict_batch_states(std::span<const predict_request> reqs, std::span<predict_result> out,
                                        size_t * failed, const std::function<void(size_t)> & lane_done) const {
    impl & m = *p_;
    const size_t lanes    = size_t(batch_lanes());
    const size_t n_states = std::min(size_t(batch_states()), (reqs.size() + lanes - 1) / lanes);
    size_t       n_chunks = (reqs.size() + lanes - 1) / lanes;
    n_chunks              = (n_chunks + n_states - 1) / n_states * n_states;
    const size_t per      = (reqs.size() + n_chunks - 1) / n_chunks;     // ≤ lanes
    n_chunks              = (reqs.size() + per - 1) / per;

    // the states borrowed from the pool (new ones when it holds too few), all given back
    std::vector<std::unique_ptr<predict_state>> states;
    struct give_back {
        impl &                                        m;
        std::vector<std::unique_ptr<predict_state>> & states;
        ~give_back() {
            std::lock_guard<std::mutex> lock(m.pool_mutex);
            for (auto & st : states) {
                if (st) m.batch_pool.push_back(std::move(st));
            }
        }
    } back{m, states};
    {
        std::lock_guard<std::mutex> lock(m.pool_mutex);
        while (states.size() < n_states && !m.batch_pool.empty()) {
            states.push_back(std::move(m.batch_pool.back()));
            m.batch_pool.pop_back();
        }
    }
    // every request checked once, on a pooled state's host threads where there is one, before
    // any state is made or chunk runs (the chunks do not check theirs again)
    const auto t_validate = clock_type::now();
    validate_each(*this, reqs, failed, states.empty() ? nullptr : states[0]->p->host.get());
    if (g_profile.on) {
        std::lock_guard<std::mutex> lock(g_profile.mu);
        g_profile.validate_ms += ms_since(t_validate);
    }
    while (states.size() < n_states) states.push_back(create_state(int64_t(lanes)));

    const uint64_t      mode = cpu::fp_mode_control();
    std::atomic<size_t> next{0};
    std::atomic<bool>   stop{false};
    std::mutex          mu;
    size_t              first = SIZE_MAX;     // lowest failing request (SIZE_MAX: none named)
    bool                any   = false;
    std::exception_ptr  err;
    const auto work = [&](predict_state & st) {
        for (size_t c; !stop.load() && (c = next.fetch_add(1)) < n_chunks;) {
            const size_t c0 = c * per, nb = std::min(per, reqs.size() - c0);
            size_t       lane = SIZE_MAX;
            try {
                run_chunks(m, *st.p, reqs.subspan(c0, nb), out.subspan(c0, nb), &lane, lane_done, c0);
            } catch (...) {
                std::lock_guard lock(mu);
                const size_t at = lane == SIZE_MAX ? SIZE_MAX : c0 + lane;
                if (!any || at < first) {
                    first = at;
                    err   = std::current_exception();
                }
                any = true;
                stop.store(true);
            }
        }
    };
    std::vector<std::thread> others;
    for (size_t i = 1; i < n_states; ++i) {
        try {
            others.emplace_back([&, i] {
                cpu::fp_mode_set(mode);
                t_rank = int(i);
                work(*states[i]);
            });
        } catch (const std::system_error &) {
            break;      // fewer threads: the ones there take every chunk
        }
    }
    work(*states[0]);
    const auto t_join = clock_type::now();
    for (std::thread & t : others) t.join();
    if (g_profile.on) {
        std::lock_guard<std::mutex> lock(g_profile.mu);
        g_profile.join_ms += ms_since(t_join);
    }
    if (err) {
        if (failed) *failed = first;
        std::rethrow_exception(err);
    }
}

void motion_model::predict_batch(predict_state & state, std::span<const predict_request> reqs,
                                 std::span<predict_result> out, size_t * failed) const {
    predict_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "predict_batch: the state belongs to another model");
    MB_ASSERT(reqs.size() == out.size(), "predict_batch: as many results as requests");
    validate_each(*this, reqs, failed, st.host.get());
    run_chunks(*p_, st, reqs, out, failed, {}, 0);
}

} // namespace mb
