// Google Benchmark program: milliseconds per backend op at the release model's
// shapes (own kernel AVX-512 and AVX2/FMA vs OpenBLAS, 1 and 2 threads) and per network stage
// (root planner, pose backbone pass, VQ decoder) and per whole plan on full-size random weights.
//   bench-networks --benchmark_filter=linear     ops only
//   bench-networks --benchmark_filter=stage      stages only (stage_pose_subnormal: FTZ/DAZ at work)
//   bench-networks --benchmark_filter=plan       upstream predict end to end (motion_model)
//   MB_BENCH_RING_MB=1024 bench-networks ...      op weights cycle through 1 GB (default 256 MB)
// Every benchmark reports mean, median and stddev over 5 repetitions after warmup.
#include "backend/cpu/cpu-backend.h"
#include "format/tensor.h"
#include "model/pose-planner.h"
#include "model/root-planner.h"
#include "motion/predict.h"
#include "model/sampling.h"
#include "model/vq-decoder.h"

#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace mb;

// ---------------------------------------------------------------- random weights

// a tensor_source of full-size tensors with fan-in scaled uniform values
// (LayerNorm weights 1, biases small), enough for timing and finite activations
class random_source final : public tensor_source {
public:
    explicit random_source(std::string origin) : origin_(std::move(origin)) {}

    void add(const std::string & name, std::vector<int64_t> torch_shape, float scale) {
        auto e   = std::make_unique<entry>();
        int64_t n = 1;
        for (int64_t d : torch_shape) n *= d;
        e->data.resize((size_t) n);
        uniforms_generate(seed_++, e->data.data(), e->data.size());
        for (float & v : e->data) v = (2.0f * v - 1.0f) * scale;
        e->view.type   = dtype::DTYPE_F32;
        e->view.n_dims = (uint32_t) torch_shape.size();
        for (int i = 0; i < 4; ++i) e->view.ne[i] = 1;
        for (size_t i = 0; i < torch_shape.size(); ++i) e->view.ne[i] = torch_shape[torch_shape.size() - 1 - i];
        e->view.data    = e->data.data();
        e->view.n_bytes = (uint64_t) n * 4;
        e->name         = name;
        e->view.name    = e->name;   // the entry is heap-allocated: the view stays valid
        entries_[name]  = std::move(e);
        bytes_ += (uint64_t) n * 4;
    }
    void linear(const std::string & name, int64_t n_out, int64_t n_in) {
        add(name + ".weight", {n_out, n_in}, 1.0f / std::sqrt((float) n_in));
        add(name + ".bias", {n_out}, 0.01f);
    }
    void conv(const std::string & name, int64_t c_out, int64_t c_in, int64_t k) {
        add(name + ".weight", {c_out, c_in, k}, 1.0f / std::sqrt((float) (c_in * k)));
        add(name + ".bias", {c_out}, 0.01f);
    }
    void norm(const std::string & name, int64_t d) {
        add(name + ".weight", {d}, 0.0f);
        add(name + ".bias", {d}, 0.0f);
        for (float & v : entries_[name + ".weight"]->data) v = 1.0f;
    }
    // a post-norm transformer encoder layer: width d, feed-forward f
    void encoder_layer(const std::string & p, int64_t d, int64_t f) {
        add(p + "self_attn.in_proj_weight", {3 * d, d}, 1.0f / std::sqrt((float) d));
        add(p + "self_attn.in_proj_bias", {3 * d}, 0.01f);
        linear(p + "self_attn.out_proj", d, d);
        linear(p + "linear1", f, d);
        linear(p + "linear2", d, f);
        norm(p + "norm1", d);
        norm(p + "norm2", d);
    }
    // the conv decoder's two upsampling stages p2, p3: 4 residual units of width w, then a conv
    void conv_stages(const std::string & p, int64_t w) {
        for (int i = 0; i < 2; ++i) {
            const std::string q = p + std::to_string(2 + i) + ".";
            for (int il = 0; il < 4; ++il) {
                conv(q + "0.model." + std::to_string(il) + ".conv1", w, w, 3);
                conv(q + "0.model." + std::to_string(il) + ".conv2", w, w, 1);
            }
            conv(q + "2", w, w, 3);
        }
    }

    const tensor_view * find(std::string_view name) const override {
        auto it = entries_.find(std::string(name));
        return it == entries_.end() ? nullptr : &it->second->view;
    }
    std::string origin() const override { return origin_; }
    uint64_t    bytes() const { return bytes_; }

    // every 4th weight of every tensor becomes a subnormal (about 1e−40): a model whose
    // training left denormal weights, which cost a microcode assist each without FTZ/DAZ
    void make_subnormal() {
        for (auto & [name, e] : entries_)
            for (size_t i = 0; i < e->data.size(); i += 4) e->data[i] = (i & 4) ? 1e-40f : -1e-40f;
    }

private:
    struct entry {
        std::string        name;
        std::vector<float> data;
        tensor_view        view{};
    };
    std::string                                   origin_;
    std::map<std::string, std::unique_ptr<entry>> entries_;
    uint64_t                                      seed_  = 1;
    uint64_t                                      bytes_ = 0;
};

// the release pose planner: n_embd 1024, 16 heads, 16 layers, 8×10 tokens of 32 dims
std::unique_ptr<random_source> release_pose_weights() {
    auto          s = std::make_unique<random_source>("random release pose planner");
    const int64_t d = 1024, f = 2048;
    for (int il = 0; il < 16; ++il) {
        s->encoder_layer("_transformer_model.layers." + std::to_string(il) + ".", d, f);
    }
    s->add("_pose_token_emb.weight", {88, 32}, 1.0f);
    s->linear("_proj_pose_token_emb.forward_projection", 640, 640);
    s->linear("_proj_pose_token_emb.fc_layers.0", 640, 256);
    s->linear("_proj_pose_token_emb.fc_layers.1", 640, 640);
    s->linear("_proj_local_root_values", 256, 16);
    s->linear("_proj_local_pose", 160, 304);
    s->add("_proj_num_valid_positions.weight", {11, 128}, 1.0f);
    s->linear("_proj_input.0", d, 1024);
    s->add("_position_emb.embed", {16, 1, d}, 1.0f);
    s->linear("_proj_pose_output_logit", 80, d);
    return s;
}

std::unique_ptr<random_source> subnormal_pose_weights() {
    auto s = release_pose_weights();
    s->make_subnormal();
    return s;
}

// the release pose VQ decoder: width 512, depth 4, 2 upsampling stages, 413 outputs
std::unique_ptr<random_source> release_vq_weights() {
    auto          s = std::make_unique<random_source>("random release VQ decoder");
    const int64_t w = 512;
    s->add("quantizer.vq._codebook.embed", {8, 10, 32}, 1.0f);
    s->conv("decoder.model.0", w, 256, 3);
    s->conv_stages("decoder.model.", w);
    s->conv("decoder.model.4", w, w, 3);
    s->conv("decoder.model.6", 413, w, 3);
    s->linear("decoder.external_cond_blocks.0", w, 4 * 2 + w);
    s->linear("decoder.external_cond_blocks.2", w, 2 * 2 + w);
    s->linear("decoder.target_cond_blocks.0", 128, 304);
    s->linear("decoder.target_cond_blocks.2", 256, 304);
    return s;
}

// gemm argument: the cpu_gemm value (0 own kernel, best ISA; 1 OpenBLAS; 2 own kernel, AVX2 only)
// the release root planner: E 512, 16 heads, 3 + 3 layers, conv decoder to 5 channels
std::unique_ptr<random_source> release_root_weights() {
    auto          s = std::make_unique<random_source>("random release root planner");
    const int64_t e = 512, f = 2048, w = 512;
    for (const char * tf : {"_shared_transformer_model.", "_root_token_transformer_model."}) {
        for (int il = 0; il < 3; ++il) s->encoder_layer(std::string(tf) + "layers." + std::to_string(il) + ".", e, f);
    }
    s->add("_no_local_pose_emb", {256}, 1.0f);
    s->add("_no_local_root_emb", {64}, 1.0f);
    s->add("_no_global_root_emb", {64}, 1.0f);
    s->add("_conv_no_frame_emb", {e}, 1.0f);
    s->conv("_conv_output.model.0", w, e, 3);
    s->conv_stages("_conv_output.model.", w);
    s->conv("_conv_output.model.4", w, w, 3);
    s->conv("_conv_output.model.6", 5, w, 3);
    s->linear("_conv_output.external_cond_blocks.0", w, 4 * e + w);
    s->linear("_conv_output.external_cond_blocks.2", w, 2 * e + w);
    s->linear("_conv_output.target_cond_blocks.0", 128, 5);
    s->linear("_conv_output.target_cond_blocks.2", 256, 5);
    s->linear("_proj_local_pose", 256, 304);
    s->linear("_proj_local_root_value", 64, 4);
    s->linear("_proj_global_root_value", 64, 5);
    for (const char * m : {"_proj_start_input.", "_proj_end_input."}) {
        s->linear(std::string(m) + "forward_projection", e, e);
        s->linear(std::string(m) + "fc_layers.0", e, 384);
        s->linear(std::string(m) + "fc_layers.1", e, e);
    }
    s->add("_input_position_emb.weight", {8, e}, 1.0f);
    s->add("_proj_input_num_tokens.weight", {13, e}, 1.0f);
    s->add("_position_emb.embed", {16, 1, e}, 1.0f);
    s->linear("_proj_num_token_output_logit", 12, e);
    s->add("_middle_token_emb.weight", {12, e}, 1.0f);
    return s;
}

std::unique_ptr<backend> make_backend(int64_t gemm, int64_t threads) {
    return backend_cpu_create_with((int) threads, (cpu_gemm) gemm);
}

std::vector<float> random_vec(size_t n, uint64_t seed) {
    std::vector<float> v(n);
    uniforms_generate(seed, v.data(), n);
    for (float & x : v) x = 2.0f * x - 1.0f;
    return v;
}

void label(benchmark::State & state, const backend & be, double weight_bytes) {
    state.SetLabel(std::string(be.name()) + " t" + std::to_string(be.n_threads()));
    state.counters["GB/s"] =
        benchmark::Counter(weight_bytes * (double) state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// ---------------------------------------------------------------- ops

// copies of one weight matrix totalling at least MB_BENCH_RING_MB (default 256) MB, used
// in turn, so every call reads its weights from memory as a plan does (set it above the
// last-level cache size)
int64_t ring_bytes() {
    const char * e = std::getenv("MB_BENCH_RING_MB");
    const long   mb = e ? std::strtol(e, nullptr, 10) : 256;
    return (int64_t) std::clamp(mb, 1L, 65536L) << 20;
}

class weight_ring {
public:
    explicit weight_ring(int64_t n) : n_(n) {
        const int64_t copies = std::max<int64_t>(2, ring_bytes() / (4 * n) + 1);
        data_.resize((size_t) (n * copies));
        for (size_t i = 0; i < data_.size(); ++i) data_[i] = (float) (int) (i % 17) * 0.01f - 0.08f;   // cheap, finite
        copies_ = copies;
    }
    const float * next() {
        i_ = (i_ + 1) % copies_;
        return data_.data() + i_ * n_;
    }

private:
    int64_t            n_, copies_ = 1, i_ = 0;
    std::vector<float> data_;
};

// args: gemm, threads, rows, n_in, n_out
void linear(benchmark::State & state) {
    const int64_t gemm = state.range(0), threads = state.range(1), n = state.range(2), n_in = state.range(3),
                  n_out = state.range(4);
    auto be = make_backend(gemm, threads);
    auto x = random_vec((size_t) (n * n_in), 1), b = random_vec((size_t) n_out, 3);
    weight_ring        w(n_out * n_in);
    std::vector<float> y((size_t) (n * n_out));
    for (auto _ : state) {
        // CPU backends address host memory directly
        be->linear(bptr<const float>(x.data()), n, n_in, bptr<const float>(w.next()), bptr<const float>(b.data()),
                   n_out, bptr<float>(y.data()));
        benchmark::DoNotOptimize(y.data());
    }
    label(state, *be, 4.0 * (double) (n_out * n_in));
}

// args: gemm, threads, frames, c_in, c_out, kernel, dilation
void conv1d(benchmark::State & state) {
    const int64_t gemm = state.range(0), threads = state.range(1), t = state.range(2), c_in = state.range(3),
                  c_out = state.range(4), k = state.range(5), dil = state.range(6);
    auto be = make_backend(gemm, threads);
    auto x = random_vec((size_t) (c_in * t), 1), b = random_vec((size_t) c_out, 3);
    weight_ring        w(c_out * c_in * k);
    std::vector<float> y((size_t) (c_out * t));
    for (auto _ : state) {
        be->conv1d(bptr<const float>(x.data()), c_in, t, bptr<const float>(w.next()), bptr<const float>(b.data()),
                   c_out, k, dil, bptr<float>(y.data()));
        benchmark::DoNotOptimize(y.data());
    }
    label(state, *be, 4.0 * (double) (c_out * c_in * k));
}

void linear_args(benchmark::internal::Benchmark * b) {
    for (int64_t gemm : {0, 2, 1})
        for (int64_t threads : {1, 2})
            for (int64_t n : {6, 10, 16, 25}) {
                b->Args({gemm, threads, n, 1024, 3072});     // pose qkv
                b->Args({gemm, threads, n, 1024, 2048});     // pose linear1
                b->Args({gemm, threads, n, 2048, 1024});     // pose linear2
                b->Args({gemm, threads, n, 1024, 1024});     // pose out_proj / input fusion
            }
}

void conv_args(benchmark::internal::Benchmark * b) {
    for (int64_t gemm : {0, 2, 1})
        for (int64_t threads : {1, 2}) {
            for (int64_t t : {16, 32, 64}) b->Args({gemm, threads, t, 512, 512, 3, 1});
            b->Args({gemm, threads, 32, 512, 512, 3, 27});
            b->Args({gemm, threads, 32, 512, 512, 1, 1});
            b->Args({gemm, threads, 64, 512, 413, 3, 1});
        }
}

BENCHMARK(linear)->Apply(linear_args)->ArgNames({"gemm", "thr", "rows", "in", "out"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->MinTime(0.05)->Repetitions(5)->DisplayAggregatesOnly(true);
BENCHMARK(conv1d)->Apply(conv_args)->ArgNames({"gemm", "thr", "t", "cin", "cout", "k", "dil"})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.05)->Repetitions(5)->DisplayAggregatesOnly(true);

// ---------------------------------------------------------------- stages

// one network on full-size random weights, built once on first use
template <typename net_t, std::unique_ptr<random_source> (*make)()>
struct net_fixture {
    std::unique_ptr<random_source> src    = make();
    std::unique_ptr<backend>       loader = backend_cpu_create(1);     // the CPU aliases the weights
    net_t                          net    = net_t::load(*src, *loader);

    static net_fixture & get() {
        static net_fixture f;
        return f;
    }
};

using pose_fixture = net_fixture<pose_planner, release_pose_weights>;
using root_fixture = net_fixture<root_planner, release_root_weights>;
using vq_fixture   = net_fixture<vq_decoder, release_vq_weights>;

// keyframe flags of the 4 context and 4 target frames of a 4n-frame plan
std::vector<uint8_t> keyframe_flags(int64_t n) {
    std::vector<uint8_t> has((size_t) (4 * n), 0);
    for (int i = 0; i < 4; ++i) has[(size_t) i] = has[(size_t) (4 * n - 1 - i)] = 1;
    return has;
}

// one pose backbone pass (1 inference step, argmax) on the weights `make` builds
template <std::unique_ptr<random_source> (*make)()>
void pose_stage(benchmark::State & state, int64_t gemm, int64_t threads, int64_t n) {
    auto &        f  = net_fixture<pose_planner, make>::get();
    auto          be = make_backend(gemm, threads);
    pose_planner_state st(*be, f.net.hp);
    auto root = random_vec((size_t) (4 * n * 4), 4), pose = random_vec((size_t) (4 * n * 304), 5);
    const auto has = keyframe_flags(n);
    const pose_cond_inputs in{n, root.data(), pose.data(), has.data()};
    std::vector<int32_t>   tokens((size_t) (n * 8));
    for (auto _ : state) {
        f.net.decode(*be, st, in, pose_decode_options{}, tokens.data());
        benchmark::DoNotOptimize(tokens.data());
    }
    label(state, *be, (double) f.src->bytes());
}

// args: gemm, threads, tokens
void stage_pose(benchmark::State & state) {
    pose_stage<release_pose_weights>(state, state.range(0), state.range(1), state.range(2));
}

// the same on weights of which a quarter are subnormal (own kernel); args: threads, tokens
void stage_pose_subnormal(benchmark::State & state) {
    pose_stage<subnormal_pose_weights>(state, 0, state.range(0), state.range(1));
}

// the VQ decoder from tokens to 4n frames; args: gemm, threads, tokens
void stage_vq_decoder(benchmark::State & state) {
    const int64_t gemm = state.range(0), threads = state.range(1), n = state.range(2);
    auto &        f  = vq_fixture::get();
    auto          be = make_backend(gemm, threads);
    vq_decoder_state st(*be, f.net.hp, f.net.dec.hp, 16);
    std::vector<int32_t> tokens((size_t) (n * 8));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = (int32_t) (i * 7 % 10);
    auto ext = random_vec((size_t) (4 * n * 2), 6), tgt = random_vec((size_t) (4 * n * 304), 7);
    const auto has = keyframe_flags(n);
    std::vector<float> y((size_t) (4 * n * 413));
    for (auto _ : state) {
        f.net.decode(*be, st, tokens.data(), n, ext.data(), tgt.data(), has.data(), y.data());
        benchmark::DoNotOptimize(y.data());
    }
    label(state, *be, (double) f.src->bytes());
}

// the root planner (duration logits, stage 2, conv decoder) with a forced count; args: gemm, threads, tokens
void stage_root(benchmark::State & state) {
    const int64_t gemm = state.range(0), threads = state.range(1), n = state.range(2);
    auto &        f  = root_fixture::get();
    auto          be = make_backend(gemm, threads);
    root_planner_state st(*be, f.net);
    auto g = random_vec(8 * 5, 8), l = random_vec(8 * 4, 9), p = random_vec(8 * 304, 10);
    std::vector<uint8_t> has(8, 1);
    root_inputs in;
    in.global_root = g.data();
    in.has_global  = has.data();
    in.local_root  = l.data();
    in.has_local   = has.data();
    in.poses       = p.data();
    in.has_pose    = has.data();
    in.num_tokens  = n;
    for (auto _ : state) {
        root_result r = f.net.run(*be, st, in);
        benchmark::DoNotOptimize(r.global_root.data());
    }
    label(state, *be, (double) f.src->bytes());
}

void stage_args(benchmark::internal::Benchmark * b) {
    for (int64_t gemm : {0, 2, 1})
        for (int64_t threads : {1, 2})
            for (int64_t n : {6, 10, 16}) b->Args({gemm, threads, n});
}

BENCHMARK(stage_pose)->Apply(stage_args)->ArgNames({"gemm", "thr", "n"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true)->MinWarmUpTime(0.2);
BENCHMARK(stage_pose_subnormal)->ArgsProduct({{1, 2}, {6, 16}})->ArgNames({"thr", "n"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true)->MinWarmUpTime(0.2);
BENCHMARK(stage_root)->Apply(stage_args)->ArgNames({"gemm", "thr", "n"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true)->MinWarmUpTime(0.2);
BENCHMARK(stage_vq_decoder)->Apply(stage_args)->ArgNames({"gemm", "thr", "n"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true)->MinWarmUpTime(0.2);

// ---------------------------------------------------------------- whole plan

// support data good enough for timing: a chain skeleton, zero mean, unit std
model_support random_support() {
    model_support sup;
    for (int j = 0; j < k_n_joints; ++j) {
        sup.joint_names[(size_t) j] = "joint_" + std::to_string(j);
        sup.parents[(size_t) j]     = j - 1;
        for (int c = 0; c < 3; ++c) sup.neutral_joints[(size_t) (j * 3 + c)] = c == 1 ? -0.02f * (float) j : 0.0f;
    }
    sup.mean.fill(0.0f);
    sup.std.fill(1.0f);
    return sup;
}

// standing start and a target 1 m ahead, all keyframes given (slot 3 without velocity, as upstream's agent)
predict_request plan_request(int num_tokens) {
    predict_request req;
    for (int s = 0; s < k_constraint_frames; ++s) {
        const float z = s < 4 ? 0.0f : 1.0f;
        const float g[5] = {0.0f, 0.8f, z, 1.0f, 0.0f};
        std::copy(g, g + 5, req.global_root.begin() + s * 5);
        req.global_root_mask[(size_t) s] = 1;
        req.local_root[(size_t) (s * 4 + 3)] = 0.8f;
        req.local_root_mask[(size_t) s]      = s == 3 ? 0 : 1;
        req.pose_mask[(size_t) s]            = 1;
    }
    const auto p = random_vec((size_t) (k_constraint_frames * k_pose_dim), 11);
    for (size_t i = 0; i < p.size(); ++i) req.poses[i] = 0.1f * p[i];
    req.num_tokens = num_tokens;
    return req;
}

struct plan_fixture {
    pose_fixture & pose = pose_fixture::get();
    root_fixture & root = root_fixture::get();
    vq_fixture &   vq   = vq_fixture::get();
    uint64_t bytes() const { return pose.src->bytes() + root.src->bytes() + vq.src->bytes(); }
};

// upstream predict end to end (argmax, 1 step); args: threads, tokens (0 = predicted duration)
void plan(benchmark::State & state) {
    const int64_t threads = state.range(0), n = state.range(1);
    plan_fixture  f;
    auto model = motion_model::create_from_sources(*f.pose.src, *f.root.src, *f.vq.src, random_support(), (int) threads);
    const predict_request req = plan_request((int) n);
    const std::string     err = model->validate(req);
    if (!err.empty()) {
        state.SkipWithError(err.c_str());
        return;
    }
    const std::unique_ptr<predict_state> st = model->create_state();
    model->predict(*st, req); // warm-up outside the timing (Iterations(1) forbids MinWarmUpTime)
    int64_t tokens = 0;
    for (auto _ : state) {
        predict_result r = model->predict(*st, req);
        tokens           = r.num_tokens;
        benchmark::DoNotOptimize(r.global_features.data());
    }
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    state.SetLabel("cpu t" + std::to_string(threads) + " n=" + std::to_string(tokens));
    state.counters["GB/s"] =
        benchmark::Counter((double) f.bytes() * (double) state.iterations() / 1e9, benchmark::Counter::kIsRate);
    state.counters["weight_MB"]   = (double) f.bytes() / 1e6;
    state.counters["peak_RSS_MB"] = (double) ru.ru_maxrss / 1024.0;
}

// 95th percentile of the per-repetition times (one plan per repetition, so this is the plan's p95)
double p95(const std::vector<double> & v) {
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    const size_t i = (size_t) std::ceil(0.95 * (double) s.size());
    return s.empty() ? 0.0 : s[std::min(s.size(), std::max<size_t>(i, 1)) - 1];
}

BENCHMARK(plan)->ArgsProduct({{1, 2}, {6, 10, 16, 0}})->ArgNames({"thr", "n"})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Iterations(1)->Repetitions(21)->ComputeStatistics("p95", p95)
    ->DisplayAggregatesOnly(true);

} // namespace

BENCHMARK_MAIN();
