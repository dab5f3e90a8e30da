// CUDA backend: buffers in device memory, every op one kernel on one non-blocking stream
// (so ops run asynchronously to the host; get() and synchronize() wait). Linear and conv1d
// run the skinny kernel (conv1d through an im2col), F32 products above 64 rows the tiled kernel
// that sums in the same order. MB_PRECISION_BF16 keeps a bfloat16 copy of every weight matrix
// (made once, at load) and streams that; MB_PRECISION_TF32 runs products of 32+ rows on tensor
// cores; both run products above 64 rows on cuBLAS (cuBLASLt, with the bias, and for linear_act
// with slope 0 the ReLU, in its epilogue).
#include "backend/cuda/cuda-backend.h"

#include "backend/cuda/cuda-blas.h"
#include "backend/cuda/cuda-ops.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb {
namespace {

void check(cudaError_t e, const char * what) {
    if (e != cudaSuccess) cuda::fail(what, e);
}

// cudaMalloc that reports exhaustion as std::bad_alloc (the C ABI's MB_OUT_OF_MEMORY)
void * device_alloc(size_t bytes) {
    void *            p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw std::bad_alloc();
    }
    check(e, "cudaMalloc");
    return p;
}

// the bfloat16 copies of weight buffers, by the float32 buffer's address range: buffers belong
// to the kind, so a state's object finds the copies its model's loader made
class bf16_copies {
public:
    void add(const void * f32, size_t bytes, void * bf16) {
        std::unique_lock lock(m_);
        by_start_[uintptr_t(f32)] = {uintptr_t(f32) + bytes, bf16};
    }
    void remove(const void * f32) {
        std::unique_lock lock(m_);
        by_start_.erase(uintptr_t(f32));
    }
    // the copy of w[0..] when w lies inside a copied buffer, else null
    const void * find(const float * w) const {
        std::shared_lock lock(m_);
        auto it = by_start_.upper_bound(uintptr_t(w));
        if (it == by_start_.begin()) return nullptr;
        --it;
        if (uintptr_t(w) >= it->second.end) return nullptr;
        const size_t at = (uintptr_t(w) - it->first) / sizeof(float);
        return static_cast<const uint16_t *>(it->second.bf16) + at;
    }

private:
    struct range {
        uintptr_t end;
        void *    bf16;
    };
    mutable std::shared_mutex   m_;
    std::map<uintptr_t, range>  by_start_;
};

bf16_copies & bf16_registry() {
    static bf16_copies r;
    return r;
}

// weight buffers smaller than this (norms, biases) get no bfloat16 copy
constexpr size_t k_bf16_min_bytes = 64 * 1024;

// the device bytes held through one backend object (device_memory), shared with its buffers:
// they belong to the kind and may outlive the object
using held_counter = std::shared_ptr<std::atomic<uint64_t>>;

// bytes of device memory at p (and bytes / 2 of its bfloat16 copy at bf16, when there is one),
// counted in `held` until freed
class cuda_buffer final : public backend_buffer {
public:
    cuda_buffer(held_counter held, void * p, size_t bytes, void * bf16 = nullptr)
        : held_(std::move(held)), p_(p), bytes_(bytes), bf16_(bf16) {
        *held_ += device_bytes();
    }
    ~cuda_buffer() override {
        if (bf16_) {
            bf16_registry().remove(p_);
            cudaFree(bf16_);
        }
        cudaFree(p_);
        *held_ -= device_bytes();
    }
    size_t size() const override { return bytes_; }
    void * base() override { return p_; }

private:
    uint64_t device_bytes() const { return bytes_ + (bf16_ ? bytes_ / 2 : 0); }

    held_counter held_;
    void *       p_;
    size_t       bytes_;
    void *       bf16_;
};

int compute_major(int ordinal) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess) cudaGetLastError();
    return major;
}

// MB_CUDA_PROFILE=1: the GPU time of every replayed recording by network (events around each
// launch, read at the next wait) and the host time of copies and waits, summed over every object
// of the process and printed to stderr at exit: how busy fused batches keep the GPU
struct gpu_profile {
    static constexpr int k_kinds = 6;     // recordings by the key's top byte: other, root a, root b, pose, vq, root stage 1
    const bool  on = cuda::env_is("MB_CUDA_PROFILE", "1");
    std::mutex  mu;
    double      graph_ms[k_kinds] = {};
    int64_t     graphs[k_kinds]   = {};
    double      set_ms = 0, get_ms = 0, wait_ms = 0;
    double      set_bytes = 0, get_bytes = 0;
    int64_t     sets = 0;
    // every recording's [start, stop] on the GPU in ms after `ref` (recorded before the first
    // timed launch), over all streams: their union is the time the GPU ran any recording
    cudaEvent_t                            ref = nullptr;
    double                                 ref_host_ms = 0;     // steady-clock ms when ref completed
    std::vector<std::pair<double, double>> spans;

    ~gpu_profile() {
        if (!on) return;
        static const char * names[k_kinds] = {"other", "root_a", "root_b", "pose", "vq", "root_s1"};
        std::fprintf(stderr, "cuda profile: graphs (GPU ms, launches):");
        for (int i = 0; i < k_kinds; ++i) std::fprintf(stderr, " %s %.1f (%lld)", names[i], graph_ms[i], (long long) graphs[i]);
        std::fprintf(stderr, "; %lld sets %.1f ms %.1f MB, get %.1f ms %.1f MB, waits %.1f ms\n", (long long) sets,
                     set_ms, set_bytes / 1e6, get_ms, get_bytes / 1e6, wait_ms);
        if (spans.empty()) return;
        // busy: the union of the spans; idle: the gaps between them, also counted by length
        std::sort(spans.begin(), spans.end());
        double busy = 0, idle = 0, idle_long = 0, end = spans[0].first;
        int64_t n_long = 0;
        for (const auto & [a, b] : spans) {
            if (a > end) {
                const double gap = a - end;
                idle += gap;
                if (gap >= 2.0) {
                    idle_long += gap;
                    ++n_long;
                }
            }
            if (b > end) {
                busy += b - std::max(a, end);
                end = b;
            }
        }
        std::fprintf(stderr,
                     "cuda profile: recordings ran %.1f ms of the %.1f ms from the first start to the last stop "
                     "(%.1f %%); idle %.1f ms, of which %.1f ms in %lld gaps of 2 ms or more\n",
                     busy, end - spans[0].first, 100.0 * busy / std::max(1e-9, end - spans[0].first), idle, idle_long,
                     (long long) n_long);
        // MB_PROFILE_TIMELINE=PATH: every recording's span in steady-clock ms (the host's clock,
        // aligned at ref to within a synchronisation) to PATH.gpu, for the predict profile's PATH.host
        const char * path = std::getenv("MB_PROFILE_TIMELINE");
        if (!path || !*path) return;
        if (FILE * f = std::fopen((std::string(path) + ".gpu").c_str(), "w")) {
            for (const auto & [a, b] : spans) std::fprintf(f, "gpu %.3f %.3f\n", ref_host_ms + a, ref_host_ms + b);
            std::fclose(f);
        }
    }
};
gpu_profile & profile() {
    static gpu_profile p;
    return p;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class cuda_backend final : public backend {
public:
    cuda_backend(int ordinal, backend_precision precision)
        : ordinal_(ordinal), precision_(precision), ops_(make_ops(ordinal)), s_(ops_->stream()),
          col_(device_buffer(k_col_floats * sizeof(float))) {}

    ~cuda_backend() override {
        cudaSetDevice(ordinal_);
        for (auto & kv : graphs_) cudaGraphExecDestroy(kv.second);
        if (s_) cudaStreamSynchronize(s_);
        blas_.reset();
        ops_.reset();
        padded_.clear();
        if (side_) cudaStreamDestroy(side_);
        for (branch_stream & b : branches_) {
            cudaStreamSynchronize(b.s);
            cudaStreamDestroy(b.s);
            cudaEventDestroy(b.start);
            cudaEventDestroy(b.done);
        }
        if (conc_) {
            cudaStreamSynchronize(conc_);
            cudaStreamDestroy(conc_);
            cudaEventDestroy(fork_);
            cudaEventDestroy(join_);
        }
    }

    const char * name() const override { return "cuda"; }
    int          n_threads() const override { return 1; }

    std::unique_ptr<backend_buffer> alloc(size_t bytes) override {
        check(cudaSetDevice(ordinal_), "cudaSetDevice");
        void * p = bytes ? device_alloc(bytes) : nullptr;
        auto   b = std::make_unique<cuda_buffer>(held_, p, bytes);
        if (bytes) {
            // zeroed before any object of this kind (any stream) can use it
            check(cudaMemsetAsync(p, 0, bytes, s_), "cudaMemsetAsync");
            check(cudaStreamSynchronize(s_), "alloc");
        }
        return b;
    }

    std::unique_ptr<backend_buffer> alloc_from_host(const void * host, size_t bytes) override {
        check(cudaSetDevice(ordinal_), "cudaSetDevice");
        void * p = bytes ? device_alloc(bytes) : nullptr;
        if (bytes) check(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (weights)");
        if (precision_ != backend_precision::BACKEND_PRECISION_BF16 || bytes < k_bf16_min_bytes || bytes % 4 != 0) {
            return std::make_unique<cuda_buffer>(held_, p, bytes);
        }
        void * h = nullptr;
        try {
            h = device_alloc(bytes / 2);
        } catch (...) {
            cudaFree(p);
            throw;
        }
        auto b = std::make_unique<cuda_buffer>(held_, p, bytes, h);
        cuda::f32_to_bf16(static_cast<const float *>(p), int64_t(bytes / 4), h, s_);
        check(cudaStreamSynchronize(s_), "bf16 weights");
        bf16_registry().add(p, bytes, h);
        return b;
    }

    // held: this object's buffers and scratch; used and total: cudaMemGetInfo on its GPU
    bool device_memory(device_memory_use & out) const override {
        bind();
        size_t free_bytes = 0, total_bytes = 0;
        check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
        out.held_bytes  = held_->load();
        out.used_bytes  = total_bytes - free_bytes;
        out.total_bytes = total_bytes;
        return true;
    }

    std::shared_ptr<void> alloc_host(size_t bytes) override {
        void * p = nullptr;
        if (!bytes || cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
            cudaGetLastError();     // not sticky: the caller falls back to plain memory
            return nullptr;
        }
        return std::shared_ptr<void>(p, [](void * q) { cudaFreeHost(q); });
    }

    void set_bytes(void * dst, const void * host, size_t bytes) override {
        if (!bytes) return;
        const auto t0 = std::chrono::steady_clock::now();
        // from pageable memory the call returns once the host bytes are staged
        check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s()), "set");
        if (profile().on) {
            std::lock_guard<std::mutex> lock(profile().mu);
            profile().set_ms += ms_since(t0);
            profile().set_bytes += double(bytes);
            profile().sets += 1;
        }
    }

    void get_bytes(const void * src, void * host, size_t bytes) override {
        join_concurrent();
        join_branches();
        if (profile().on) {
            // the wait for the device work before the copy, then the copy
            auto t0 = std::chrono::steady_clock::now();
            check(cudaStreamSynchronize(s()), "get");
            collect_profile();
            const double wait = ms_since(t0);
            t0                = std::chrono::steady_clock::now();
            if (bytes) check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s()), "get");
            check(cudaStreamSynchronize(s()), "get");
            std::lock_guard<std::mutex> lock(profile().mu);
            profile().wait_ms += wait;
            profile().get_ms += ms_since(t0);
            profile().get_bytes += double(bytes);
            return;
        }
        get_bytes_later(src, host, bytes);
        check(cudaStreamSynchronize(s()), "get");
    }

    // to page-locked memory the copy returns at once (to plain memory it waits for its data)
    void get_bytes_later(const void * src, void * host, size_t bytes) override {
        join_concurrent();
        join_branches();
        if (bytes) check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s()), "get");
    }

    void synchronize() override {
        join_concurrent();
        join_branches();
        check(cudaStreamSynchronize(s()), "synchronize");
        collect_profile();
    }

    // the first run of a key is captured into a CUDA graph (thread-local capture: other
    // states' threads keep working) and launched; later runs launch the graph alone. A
    // capture that fails (an op the graph cannot hold) runs the ops directly from then on.
    // MB_CUDA_GRAPHS=0 turns recording off (to measure what it saves)
    void run_recorded(uint64_t key, const std::function<void()> & ops) override {
        if (!graphs_on_) {
            ops();
            join_branches();
            return;
        }
        auto it = graphs_.find(key);
        if (it == graphs_.end()) {
            scratch_ = false;
            // relaxed: a first product of many rows may open cuBLAS (and allocate its workspace)
            // while the ops are being recorded
            check(cudaStreamBeginCapture(s(), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
            cudaGraph_t g = nullptr;
            try {
                ops();
                join_branches();    // a capture ends with every stream it forked joined
            } catch (...) {
                abandon_branches();
                cudaStreamEndCapture(s(), &g);
                if (g) cudaGraphDestroy(g);
                cudaGetLastError();
                throw;
            }
            cudaGraphExec_t   exec = nullptr;
            cudaError_t       e    = cudaStreamEndCapture(s(), &g);
            if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
            if (g) cudaGraphDestroy(g);
            if (e != cudaSuccess) {
                cudaGetLastError();
                graphs_on_ = false;
                ops();
                join_branches();
                return;
            }
            it = graphs_.emplace(key, exec).first;
            if (scratch_) scratch_keys_.insert(key);
        }
        if (profile().on) {
            const int kind = int(std::min<uint64_t>(key >> 56, gpu_profile::k_kinds - 1));
            {
                std::lock_guard<std::mutex> lock(profile().mu);
                if (!profile().ref) {
                    check(cudaEventCreate(&profile().ref), "cudaEventCreate");
                    check(cudaEventRecord(profile().ref, s()), "cudaEventRecord");
                    check(cudaEventSynchronize(profile().ref), "cudaEventSynchronize");
                    profile().ref_host_ms = std::chrono::duration<double, std::milli>(
                                                std::chrono::steady_clock::now().time_since_epoch())
                                                .count();
                }
            }
            cudaEvent_t ev[2];
            check(cudaEventCreate(&ev[0]), "cudaEventCreate");
            check(cudaEventCreate(&ev[1]), "cudaEventCreate");
            check(cudaEventRecord(ev[0], s()), "cudaEventRecord");
            check(cudaGraphLaunch(it->second, s()), "cudaGraphLaunch");
            check(cudaEventRecord(ev[1], s()), "cudaEventRecord");
            timed_.push_back({kind, ev[0], ev[1]});
            return;
        }
        check(cudaGraphLaunch(it->second, s()), "cudaGraphLaunch");
    }

    // the recording launched on a second stream after what is issued so far, joined by a later
    // op's wait (the root planner's stage 1 beside stage 2: a 10-token plan 1.82–1.84 against
    // 1.92–1.93 ms in place, H100, sixteenth session). In place (run_recorded) where a recording
    // cannot run beside others: without graphs, while profiling by network, or where its ops use
    // the backend's shared scratch (cuBLAS, the convs' im2col, BF16 x)
    void run_recorded_concurrent(uint64_t key, const std::function<void()> & ops) override {
        if (!graphs_on_ || profile().on) {
            run_recorded(key, ops);
            return;
        }
        auto it = graphs_.find(key);
        if (it == graphs_.end()) {
            // record it (run_recorded launches it in place the first time, which is correct)
            run_recorded(key, ops);
            return;
        }
        if (scratch_keys_.count(key)) {
            check(cudaGraphLaunch(it->second, s()), "cudaGraphLaunch");
            return;
        }
        if (!conc_) {
            check(cudaStreamCreateWithFlags(&conc_, cudaStreamNonBlocking), "cudaStreamCreate");
            check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate");
            check(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreate");
        }
        join_concurrent();    // one concurrent recording at a time
        check(cudaEventRecord(fork_, s()), "cudaEventRecord");
        check(cudaStreamWaitEvent(conc_, fork_, 0), "cudaStreamWaitEvent");
        check(cudaGraphLaunch(it->second, conc_), "cudaGraphLaunch");
        check(cudaEventRecord(join_, conc_), "cudaEventRecord");
        joined_ = false;
    }
    void join_concurrent() override {
        if (joined_) return;
        check(cudaStreamWaitEvent(s(), join_, 0), "cudaStreamWaitEvent");
        joined_ = true;
    }

    // a branch is issued on a stream of its own that waits for what the current stream issued
    // so far, and joined by the current stream's wait for it; inside a capture the two make a
    // fork and a join of the graph. A branch whose ops use the shared scratch (cuBLAS and its
    // workspace, the im2col, BF16 x) is joined at once, so it never runs beside another user of
    // the scratch. A branch inside a branch runs in place
    int branch(const std::function<void()> & ops) override {
        if (on_branch_ >= 0) {
            ops();
            return -1;
        }
        bind();
        size_t i = 0;
        while (i < branches_.size() && branches_[i].open) ++i;
        if (i == branches_.size()) {
            branch_stream b;
            check(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking), "cudaStreamCreate");
            check(cudaEventCreateWithFlags(&b.start, cudaEventDisableTiming), "cudaEventCreate");
            check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
            branches_.push_back(b);
        }
        branch_stream & b = branches_[i];
        check(cudaEventRecord(b.start, s_), "cudaEventRecord");
        check(cudaStreamWaitEvent(b.s, b.start, 0), "cudaStreamWaitEvent");
        const bool scratch_before = scratch_;
        scratch_                  = false;
        on_branch_                = int(i);
        b.open                    = true;
        try {
            ops();
        } catch (...) {
            on_branch_ = -1;
            throw;
        }
        on_branch_ = -1;
        check(cudaEventRecord(b.done, b.s), "cudaEventRecord");
        const bool used_scratch = scratch_;
        scratch_                = scratch_before || used_scratch;
        if (used_scratch) {
            join_branch(int(i));
            return -1;
        }
        return int(i);
    }
    void join_branch(int id) override {
        if (id < 0 || size_t(id) >= branches_.size() || !branches_[size_t(id)].open) return;
        branches_[size_t(id)].open = false;
        check(cudaStreamWaitEvent(s_, branches_[size_t(id)].done, 0), "cudaStreamWaitEvent");
    }
    void join_branches() {
        for (size_t i = 0; i < branches_.size(); ++i) join_branch(int(i));
    }
    // after a failed capture: the branches' streams left as they are (the capture is discarded)
    void abandon_branches() {
        on_branch_ = -1;
        for (branch_stream & b : branches_) b.open = false;
    }

    void fill_f32(int64_t n, float v, bptr<float> y) override { cuda::fill_f32(n, v, y.p, s()); }
    void fill_i32(int64_t n, int32_t v, bptr<int32_t> y) override { cuda::fill_i32(n, v, y.p, s()); }
    void add(bptr<const float> a, bptr<const float> b, int64_t n, bptr<float> y, int64_t n_b) override {
        cuda::add(a.p, b.p, n, y.p, n_b, s());
    }
    void relu(bptr<const float> x, int64_t n, bptr<float> y) override { cuda::relu(x.p, n, y.p, s()); }
    void leaky_relu(bptr<const float> x, int64_t n, float slope, bptr<float> y) override {
        cuda::leaky_relu(x.p, n, slope, y.p, s());
    }
    void silu(bptr<const float> x, int64_t n, bptr<float> y) override { cuda::silu(x.p, n, y.p, s()); }
    void copy_rows(bptr<const float> x, int64_t ldx, int64_t n, int64_t d, bptr<float> y, int64_t ldy) override {
        cuda::copy_rows(x.p, ldx, n, d, y.p, ldy, s());
    }
    void scatter_rows(bptr<const float> x, bptr<const int32_t> idx, int64_t k, int64_t d, bptr<float> y) override {
        cuda::scatter_rows(x.p, idx.p, k, d, y.p, s());
    }
    bool has_motion_ops() const override { return true; }
    void root_conditions(bptr<const float> y, int64_t n_batch, int64_t frames, bptr<const float> stats,
                         bptr<const float> last, bptr<const uint8_t> has_last, bptr<float> root_cond,
                         bptr<float> ext) override {
        cuda::root_conditions(y.p, n_batch, frames, stats.p, last.p, has_last.p, root_cond.p, ext.p, s());
    }
    void motion_finish(bptr<const float> x, int64_t n_batch, int64_t frames, bptr<const float> scale,
                       bptr<const float> mean, bptr<const float> ref, bptr<const int32_t> parents,
                       bptr<const float> offsets, bptr<float> global, bptr<float> positions,
                       bptr<float> local_xyzw) override {
        cuda::motion_finish(x.p, n_batch, frames, scale.p, mean.p, ref.p, parents.p, offsets.p, global.p, positions.p,
                            local_xyzw.p, s());
    }
    void where_rows(bptr<const uint8_t> sel, bptr<const float> a, int64_t lda, bptr<const float> b, int64_t ldb,
                    int64_t n, int64_t d, bptr<float> y, int64_t ldy) override {
        cuda::where_rows(sel.p, a.p, lda, b.p, ldb, n, d, y.p, ldy, s());
    }
    void transpose(bptr<const float> x, int64_t r, int64_t c, bptr<float> y, int64_t n_batch, int64_t ldy) override {
        if (r > 0 && c > 0 && n_batch > 0) cuda::transpose(x.p, r, c, y.p, n_batch, s(), 0, 0.0f, 0, ldy);
    }
    void mask_cols(int64_t c, int64_t t, int64_t n_valid, bptr<float> x) override {
        cuda::mask_cols(c, t, n_valid, x.p, s());
    }
    void upsample2(bptr<const float> x, int64_t c, int64_t t, bptr<float> y) override {
        cuda::upsample2(x.p, c, t, y.p, s());
    }
    void embed_heads(bptr<const float> table, int64_t n_head, int64_t rows_per_head, int64_t d,
                     bptr<const int32_t> idx, int64_t n, bptr<float> y) override {
        cuda::embed_heads(table.p, n_head, rows_per_head, d, idx.p, n, y.p, s());
    }
    void replace_frames(bptr<const float> src, bptr<const uint8_t> sel, int64_t t, int64_t f, int64_t w,
                        bptr<float> h, int64_t n_batch) override {
        cuda::replace_frames(src.p, sel.p, t, f, w, h.p, n_batch, s());
    }
    void linear(bptr<const float> x, int64_t n, int64_t n_in, bptr<const float> w, bptr<const float> b,
                int64_t n_out, bptr<float> y) override {
        if (n <= 0 || n_out <= 0) return;
        bind();    // cuBLAS's handle works on its GPU only
        // F32 keeps its own kernels at every row count (their sums do not depend on it, so a
        // lane of a batch gets the bits of its request alone); TF32 and BF16 take cuBLAS
        if (blas_rows(n)) {
            blas_linear(x.p, n, n_in, w.p, b.p, n_out, y.p, false);
        } else if (precision_ == backend_precision::BACKEND_PRECISION_TF32 && tf32_ok_ && n >= 32 &&
            cuda::linear_tf32_fits(n, n_in, n_out, x.p, w.p)) {
            cuda::linear_tf32(x.p, n, n_in, w.p, b.p, n_out, y.p, s());
        } else if (const void * h = bf16_of(w.p)) {
            cuda::linear_skinny_bf16(x.p, n, n_in, h, b.p, n_out, y.p, s());
        } else {
            cuda::linear_f32(x.p, n, n_in, w.p, b.p, n_out, y.p, s());
        }
    }
    // the activation in the product's epilogue: where linear() would run the F32 kernels, the
    // GEMV's or the tiled SGEMM's, on the biased total (the leaky_relu kernel's arithmetic on the
    // same float, so lanes of a batch keep their bits); where it would run cuBLAS, ReLU (slope 0)
    // in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_RELU_BIAS). Elsewhere (leaky on cuBLAS, TF32's
    // own kernel, BF16 GEMV) the two ops
    void linear_act(bptr<const float> x, int64_t n, int64_t n_in, bweight w, bptr<const float> b, int64_t n_out,
                    float slope, bptr<float> y) override {
        const float * wf = static_cast<const float *>(w.p);
        if (w.type == weight_type::WEIGHT_F32 && n > 0 && n_out > 0) {
            bind();
            if (f32_kernels(n, n_in, n_out, x.p, wf)) {
                cuda::linear_f32(x.p, n, n_in, wf, b.p, n_out, y.p, s(), 1, slope);
                return;
            }
            if (slope == 0.0f && blas_rows(n)) {
                blas_linear(x.p, n, n_in, wf, b.p, n_out, y.p, true);
                return;
            }
        }
        backend::linear_act(x, n, n_in, w, b, n_out, slope, y);
    }
    void conv1d_act(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b, int64_t c_out,
                    int64_t k, int64_t dilation, float slope, bptr<float> y, int64_t n_batch) override {
        if (w.type == weight_type::WEIGHT_F32 && t > 0 && c_out > 0 && n_batch > 0 &&
            conv1d_impl(x.p, c_in, t, static_cast<const float *>(w.p), b.p, c_out, k, dilation, y.p, n_batch, true, slope)) {
            return;
        }
        backend::conv1d_act(x, c_in, t, w, b, c_out, k, dilation, slope, y, n_batch);
    }
    // a residual block's convs at batch one (the im2col path) fused with their neighbours: the ReLU
    // before the first in its im2col, the residual add after the second in the GEMV's epilogue (the
    // same floats; two kernels fewer a block: 2.00 against 2.07 ms a 10-token plan on an H100, fifteenth
    // session). Batches keep the separate ops
    void relu_conv1d_act(bptr<const float> x, bptr<float> xr, int64_t c_in, int64_t t, bweight w, bptr<const float> b,
                         int64_t c_out, int64_t k, int64_t dilation, float slope, bptr<float> y,
                         int64_t n_batch) override {
        if (w.type == weight_type::WEIGHT_F32 && t > 0 && c_out > 0 && n_batch > 0 &&
            conv1d_impl(x.p, c_in, t, static_cast<const float *>(w.p), b.p, c_out, k, dilation, y.p, n_batch, true, slope,
                        true, nullptr)) {
            return;
        }
        backend::relu_conv1d_act(x, xr, c_in, t, w, b, c_out, k, dilation, slope, y, n_batch);
    }
    void conv1d_residual(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b, int64_t c_out,
                         int64_t k, int64_t dilation, bptr<float> tmp, bptr<float> h, int64_t n_batch) override {
        if (w.type == weight_type::WEIGHT_F32 && t > 0 && c_out > 0 && n_batch > 0 &&
            conv1d_impl(x.p, c_in, t, static_cast<const float *>(w.p), b.p, c_out, k, dilation, h.p, n_batch, false, 0.0f,
                        false, h.p)) {
            return;
        }
        backend::conv1d_residual(x, c_in, t, w, b, c_out, k, dilation, tmp, h, n_batch);
    }
    // batch one with every position valid (the masks change nothing): the blocks' products chained
    // on the two halves of the im2col scratch in turn, each product writing the next one's im2col
    // in its epilogue, so only the first block's input goes through the im2col kernel (a 10-token
    // plan 1.657 against 1.731 ms, H100, nineteenth session)
    void res_blocks(bptr<float> h, bptr<float> t0, bptr<float> t1, int64_t c, int64_t t, int64_t n_valid,
                    const res_block * blocks, int64_t n_blocks, int64_t n_batch) override {
        bool chain = chains(t, n_valid, n_blocks, n_batch);
        for (int64_t i = 0; chain && i < n_blocks; ++i) {
            const res_block & rb = blocks[i];
            chain = chain_fits(rb.w1, c, t, rb.k1, n_batch) && chain_fits(rb.w2, c, t, rb.k2, n_batch);
        }
        if (!chain) {
            backend::res_blocks(h, t0, t1, c, t, n_valid, blocks, n_blocks, n_batch);
            return;
        }
        bind();
        scratch_ = true;
        float * ca = col_->as<float>().p, * cb = ca + k_col_floats / 2;
        cuda::im2col(h.p, c, t, blocks[0].k1, blocks[0].dilation, ca, n_batch, s(), 1);
        for (int64_t i = 0; i < n_blocks; ++i) {
            const res_block & rb   = blocks[i];
            const res_block * next = i + 1 < n_blocks ? &blocks[i + 1] : nullptr;
            const float *     w1   = static_cast<const float *>(rb.w1.p), * w2 = static_cast<const float *>(rb.w2.p);
            // t1 ← relu(conv1(relu(h))), and its im2col for conv2
            cuda::conv1d_on_col(ca, c, t, rb.k1, w1, bf16_of(w1), rb.b1.p, c, t1.p, n_batch, s(), 1, 0.0f, nullptr, cb,
                                rb.k2, 1, 0);
            // h ← h + conv2(t1), and the im2col of relu(h) for the next block's conv1
            cuda::conv1d_on_col(cb, c, t, rb.k2, w2, bf16_of(w2), rb.b2.p, c, h.p, n_batch, s(), 0, 0.0f, h.p,
                                next ? ca : nullptr, next ? next->k1 : 1, next ? next->dilation : 1, 1);
        }
    }
    // conv_chain as res_blocks chains its products
    void conv_chain(bptr<const float> x, int64_t t, int64_t n_valid, const conv_step * steps, int64_t n_steps,
                    int64_t n_batch) override {
        bool chain = chains(t, n_valid, n_steps, n_batch);
        for (int64_t i = 0; chain && i < n_steps; ++i) {
            chain = chain_fits(steps[i].w, steps[i].c_in, t, steps[i].k, n_batch) &&
                    (i == 0 || steps[i].c_in == steps[i - 1].c_out);
        }
        if (!chain) {
            backend::conv_chain(x, t, n_valid, steps, n_steps, n_batch);
            return;
        }
        bind();
        scratch_ = true;
        float * col[2] = {col_->as<float>().p, col_->as<float>().p + k_col_floats / 2};
        cuda::im2col(x.p, steps[0].c_in, t, steps[0].k, steps[0].dilation, col[0], n_batch, s(), 0);
        for (int64_t i = 0; i < n_steps; ++i) {
            const conv_step & c    = steps[i];
            const conv_step * next = i + 1 < n_steps ? &steps[i + 1] : nullptr;
            const float *     w    = static_cast<const float *>(c.w.p);
            cuda::conv1d_on_col(col[i % 2], c.c_in, t, c.k, w, bf16_of(w), c.b.p, c.c_out, c.y.p, n_batch, s(),
                                c.relu ? 1 : 0, 0.0f, nullptr, next ? col[(i + 1) % 2] : nullptr, next ? next->k : 1,
                                next ? next->dilation : 1, 0);
        }
    }
    // whether res_blocks / conv_chain chain n products: batch one (the skinny kernel's rows) with
    // every position valid (the masks change nothing)
    static bool chains(int64_t t, int64_t n_valid, int64_t n, int64_t n_batch) {
        return n_valid == t && n > 0 && t > 0 && n_batch > 0 && n_batch * t < k_conv_gemm_rows;
    }
    // a product of the chain: F32 weights, its im2col in half the scratch
    static bool chain_fits(bweight w, int64_t c_in, int64_t t, int64_t k, int64_t n_batch) {
        return w.type == weight_type::WEIGHT_F32 && c_in > 0 && cuda::conv1d_col_fits(c_in, n_batch * t, k, k_col_floats / 2);
    }
    void add_layer_norm(bptr<float> x, bptr<const float> r, int64_t n, int64_t d, bptr<const float> g,
                        bptr<const float> b, float eps) override {
        if (n > 0) cuda::add_layer_norm(x.p, r.p, n, d, g.p, b.p, eps, s());
    }
    void attention(bptr<const float> qkv, int64_t n, int64_t d, int64_t n_head, bptr<const uint8_t> key_mask,
                   bptr<float> out, int64_t n_batch) override {
        if (n > 0 && n_batch > 0) cuda::attention(qkv.p, n, d, n_head, key_mask.p, out.p, n_batch, s());
    }
    void conv1d(bptr<const float> x, int64_t c_in, int64_t t, bptr<const float> w, bptr<const float> b,
                int64_t c_out, int64_t k, int64_t dilation, bptr<float> y, int64_t n_batch) override {
        if (t <= 0 || c_out <= 0 || n_batch <= 0) return;
        conv1d_impl(x.p, c_in, t, w.p, b.p, c_out, k, dilation, y.p, n_batch, false, 0.0f);
    }
    void sample_codes(bptr<const float> logits, int64_t m, int64_t n_code, bptr<const float> u, bptr<int32_t> tokens,
                      bptr<float> prob) override {
        cuda::sample_codes(logits.p, m, n_code, u.p, tokens.p, prob.p, s());
    }
    void remask_lowest(bptr<const float> prob, int64_t m, int64_t n_mask, int32_t mask_id,
                       bptr<int32_t> tokens, int64_t n_batch) override {
        cuda::remask_lowest(prob.p, m, n_mask, mask_id, tokens.p, n_batch, s());
    }

    // the im2col and product scratch of conv1d_gemm for every lane of the largest conv at once
    void reserve_conv1d(int64_t c_in, int64_t t, int64_t c_out, int64_t k) override {
        const int64_t col = std::min(c_in * k * t, k_conv_max_floats), yt = std::min(t * c_out, k_conv_max_floats);
        if (col <= col_floats_ && yt <= yt_floats_ &&
            (precision_ != backend_precision::BACKEND_PRECISION_BF16 || col <= xh_floats_)) {
            return;
        }
        // recordings hold the old scratch's addresses
        check(cudaStreamSynchronize(s()), "reserve_conv1d");
        for (auto & kv : graphs_) cudaGraphExecDestroy(kv.second);
        graphs_.clear();
        if (col > col_floats_) {
            col_        = device_buffer(size_t(col) * sizeof(float));
            col_floats_ = col;
        }
        if (yt > yt_floats_) {
            yt_        = device_buffer(size_t(yt) * sizeof(float));
            yt_floats_ = yt;
        }
        if (precision_ == backend_precision::BACKEND_PRECISION_BF16 && col > xh_floats_) {
            xh_        = device_buffer(size_t(col) * 2);
            xh_floats_ = col;
        }
    }

private:
    // MB_CUDA_PROFILE: the recordings launched since the last wait, with their events
    struct timed_launch {
        int         kind;
        cudaEvent_t start, stop;
    };
    std::vector<timed_launch> timed_;

    // after a wait: the GPU time of the launches since the previous one, added to the profile
    void collect_profile() {
        if (timed_.empty()) return;
        std::lock_guard<std::mutex> lock(profile().mu);
        for (const timed_launch & t : timed_) {
            float ms = 0, a = 0, b = 0;
            if (cudaEventElapsedTime(&ms, t.start, t.stop) == cudaSuccess) {
                profile().graph_ms[t.kind] += ms;
                profile().graphs[t.kind] += 1;
            } else {
                cudaGetLastError();
            }
            if (cudaEventElapsedTime(&a, profile().ref, t.start) == cudaSuccess &&
                cudaEventElapsedTime(&b, profile().ref, t.stop) == cudaSuccess) {
                profile().spans.emplace_back(a, b);
            } else {
                cudaGetLastError();
            }
            cudaEventDestroy(t.start);
            cudaEventDestroy(t.stop);
        }
        timed_.clear();
    }

    // whether linear() runs a product of n rows on cuBLAS (TF32, BF16, MB_CUDA_F32_CUBLAS above
    // 64 rows)
    bool blas_rows(int64_t n) {
        return n > cuda::k_skinny_max_rows && (precision_ != backend_precision::BACKEND_PRECISION_F32 || f32_blas_) &&
               blas_ok();
    }

    // linear() on cuBLAS, then (relu) max(0, ·) (in cuBLASLt's epilogue where it runs the product)
    void blas_linear(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                     float * y, bool relu) {
        scratch_ = true;
        const void * h = bf16_of(w);
        // x rounded to bfloat16: the conv scratch of a batch state (reserve_conv1d) holds the
        // largest batched product's x; the im2col scratch the others'
        void * xb = !h ? nullptr
                    : xh_ && n * n_in <= xh_floats_                         ? xh_->base()
                    : n * n_in * 2 <= k_col_floats * int64_t(sizeof(float)) ? col_->base()
                                                                            : nullptr;
        blas_->use_stream(s());
        blas_->linear_bias(x, n, n_in, w, xb ? h : nullptr, xb, n_out, b, y, relu);
    }

    // whether linear() runs an F32 product on the own kernels (linear_f32) for these operands
    bool f32_kernels(int64_t n, int64_t n_in, int64_t n_out, const float * x, const float * w) const {
        if (n > cuda::k_skinny_max_rows && (precision_ != backend_precision::BACKEND_PRECISION_F32 || f32_blas_)) {
            return false;
        }
        if (precision_ == backend_precision::BACKEND_PRECISION_TF32 && tf32_ok_ && n >= 32 &&
            cuda::linear_tf32_fits(n, n_in, n_out, x, w)) {
            return false;
        }
        return bf16_of(w) == nullptr;
    }

    // conv1d, then (act) leaky_relu(slope): in the GEMV's epilogue on the im2col path (batch
    // one), in the transpose to NCW on the batched path (conv1d_gemm), every precision. False
    // (nothing issued) for an activation on a path without one: the caller composes
    bool conv1d_impl(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                     int64_t k, int64_t dilation, float * y, int64_t n_batch, bool act, float slope, bool relu_in = false,
                     const float * res = nullptr) {
        bind();
        scratch_ = true;    // col_, yt_, xh_
        const bool fused = relu_in || res;    // relu_conv1d_act / conv1d_residual: the im2col path only
        if (n_batch * t >= k_conv_gemm_rows &&
            (fused || conv1d_gemm(x, c_in, t, w, b, c_out, k, dilation, y, n_batch, act, slope))) {
            return !fused;
        }
        if (cuda::conv1d_col_fits(c_in, t, k, k_col_floats)) {
            // lanes in chunks whose im2col fits the scratch (all of them at batch one)
            const int64_t per = std::max<int64_t>(1, k_col_floats / (t * c_in * k));
            for (int64_t l0 = 0; l0 < n_batch; l0 += per) {
                const int64_t nb = std::min(per, n_batch - l0);
                cuda::conv1d_col(x + l0 * c_in * t, c_in, t, w, bf16_of(w), b, c_out, k, dilation, y + l0 * c_out * t,
                                 col_->as<float>().p, nb, s(), act ? 1 : 0, act ? slope : 0.0f, relu_in ? 1 : 0,
                                 res ? res + l0 * c_out * t : nullptr);
            }
            return true;
        }
        if (act || fused) return false;
        if (const void * h = bf16_of(w)) {
            cuda::conv1d_skinny_bf16(x, c_in, t, h, b, c_out, k, dilation, y, n_batch, s());
        } else {
            cuda::conv1d_skinny(x, c_in, t, w, b, c_out, k, dilation, y, n_batch, s());
        }
        return true;
    }

    // conv1d of many lanes as one product per chunk of lanes: im2col, then the linear product
    // (F32: the tiled kernel, which sums as the skinny kernel on the explicit im2col does, so a
    // lane keeps the bits of its conv alone; TF32 / BF16: cuBLAS), then y[lane] = ytᵀ (NCW), with
    // (act) leaky_relu(slope) applied by the transpose as it stores each value.
    // Without the reserved scratch (fewer than 2 lanes' rows fit) it declines: false
    bool conv1d_gemm(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                     int64_t k, int64_t dilation, float * y, int64_t n_batch, bool act, float slope) {
        const int64_t K   = c_in * k;
        const bool    f32 = precision_ == backend_precision::BACKEND_PRECISION_F32 && !f32_blas_;
        // cuBLAS products of a multiple of 4 outputs (413 outputs took align1 kernels, 89-201 µs a
        // call): weights and bias with zero rows appended (made once per weight), product rows
        // of N4 floats, the pads left out by the transpose. F32's own kernel keeps c_out
        const int64_t N4  = f32 ? c_out : (c_out + 3) / 4 * 4;
        const int64_t per = std::min({n_batch, col_floats_ / (t * K), yt_ ? yt_floats_ / (t * N4) : 0});
        if (per * t < k_conv_gemm_rows) return false;
        if (!f32 && !blas_ok()) return false;
        const void * h = f32 ? nullptr : bf16_of(w);
        if (N4 != c_out) {
            const padded_weights & pw = padded(w, h, b, c_out, K, N4);
            w = pw.w->as<const float>().p;
            h = pw.h ? pw.h->base() : nullptr;
            b = pw.b ? pw.b->as<const float>().p : nullptr;
        }
        float * col = col_->as<float>().p, * yt = yt_->as<float>().p;
        if (blas_) blas_->use_stream(s());
        for (int64_t l0 = 0; l0 < n_batch; l0 += per) {
            const int64_t nb = std::min(per, n_batch - l0), rows = nb * t;
            void *        xb = h && xh_ && rows * K <= xh_floats_ ? xh_->base() : nullptr;
            if (xb) {
                // BF16: the im2col written rounded, straight into the product's x (same bits as
                // im2col followed by the product's own rounding)
                cuda::im2col_bf16(x + l0 * c_in * t, c_in, t, k, dilation, xb, nb, s());
                blas_->linear_bias(nullptr, rows, K, w, h, xb, N4, b, yt);
            } else {
                cuda::im2col(x + l0 * c_in * t, c_in, t, k, dilation, col, nb, s());
                if (f32) {
                    cuda::linear_f32(col, rows, K, w, b, c_out, yt, s());
                } else {
                    // TF32, or BF16 whose x does not fit its staging: float weights
                    blas_->linear_bias(col, rows, K, w, nullptr, nullptr, N4, b, yt);
                }
            }
            cuda::transpose(yt, t, c_out, y + l0 * c_out * t, nb, s(), act ? 1 : 0, act ? slope : 0.0f, N4);
        }
        return true;
    }

    // w[N, K] (its bfloat16 copy h, bias b; h and b may be null) with zero rows up to N4: made
    // on a side stream the first time a weight is seen (also while a recording is being
    // captured: the copies run at once, outside the graph) and kept with this object
    struct padded_weights {
        std::unique_ptr<cuda_buffer> w, h, b;
    };
    const padded_weights & padded(const float * w, const void * h, const float * b, int64_t N, int64_t K, int64_t N4) {
        auto it = padded_.find(w);
        if (it != padded_.end()) return it->second;
        if (!side_) check(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreate");
        const auto copy = [&](const void * src, size_t row_bytes) {
            const size_t bytes = size_t(N4) * row_bytes;
            auto         buf   = device_buffer(bytes);
            check(cudaMemsetAsync(buf->base(), 0, bytes, side_), "cudaMemsetAsync");
            check(cudaMemcpyAsync(buf->base(), src, size_t(N) * row_bytes, cudaMemcpyDeviceToDevice, side_), "pad");
            return buf;
        };
        padded_weights p;
        p.w = copy(w, size_t(K) * sizeof(float));
        if (h) p.h = copy(h, size_t(K) * 2);
        if (b) p.b = copy(b, sizeof(float));
        check(cudaStreamSynchronize(side_), "pad");
        return padded_.emplace(w, std::move(p)).first->second;
    }

    // cuBLAS, opened and given a handle the first time it is wanted
    bool blas_ok() {
        if (!blas_tried_) {
            blas_tried_ = true;
            blas_ = std::make_unique<cuda::blas>(s(), precision_ == backend_precision::BACKEND_PRECISION_TF32);
        }
        return blas_->ok();
    }

    const void * bf16_of(const float * w) const {
        return precision_ == backend_precision::BACKEND_PRECISION_BF16 ? bf16_registry().find(w) : nullptr;
    }

    // this object's GPU made current on the calling thread: models live one per GPU and a state
    // may be used from any thread, so every op, copy and launch asks (a cheap query when current)
    void bind() const {
        int d = -1;
        if (cudaGetDevice(&d) != cudaSuccess || d != ordinal_) check(cudaSetDevice(ordinal_), "cudaSetDevice");
    }
    // the stream ops are issued on: a branch's while its ops are being issued
    cudaStream_t        s() const {
        bind();
        return on_branch_ >= 0 ? branches_[size_t(on_branch_)].s : s_;
    }

    // `bytes` of device memory (not zeroed) counted in held_
    std::unique_ptr<cuda_buffer> device_buffer(size_t bytes) {
        return std::make_unique<cuda_buffer>(held_, device_alloc(bytes), bytes);
    }

    static std::unique_ptr<cuda::device_ops> make_ops(int ordinal) {
        check(cudaSetDevice(ordinal), "cudaSetDevice");
        return std::make_unique<cuda::device_ops>();
    }

    held_counter                      held_ = std::make_shared<std::atomic<uint64_t>>(0);   // first: col_ counts in it
    int                               ordinal_;
    backend_precision                 precision_;
    bool                              graphs_on_ = !cuda::env_is("MB_CUDA_GRAPHS", "0");
    // MB_CUDA_F32_CUBLAS=1: F32 products of many rows on cuBLAS (pedantic FP32), to compare speed;
    // lanes then differ from requests alone in the last bits
    bool                              f32_blas_  = cuda::env_is("MB_CUDA_F32_CUBLAS", "1");
    bool                              tf32_ok_   = compute_major(ordinal_) >= 8;    // TF32 tensor cores
    std::map<uint64_t, cudaGraphExec_t> graphs_;
    std::unique_ptr<cuda::device_ops> ops_;
    cudaStream_t                      s_;
    // conv1d's im2col scratch, made with the object (a recording may hold no allocation); the
    // networks' convolutions need at most 64 frames × 512 channels × 3 taps
    static constexpr int64_t          k_col_floats = int64_t(1) << 20;
    // convs of at least this many rows (lanes × frames) run as one product (conv1d_gemm); a
    // batch-one plan's convs (≤ 64 frames) keep the skinny kernel
    static constexpr int64_t          k_conv_gemm_rows  = 256;
    static constexpr int64_t          k_conv_max_floats = int64_t(1) << 28;    // 1 GiB of scratch at most
    std::unique_ptr<cuda_buffer>      col_;
    // run_recorded_concurrent: its stream and events; whether ops since the last recording began used
    // the shared scratch, and the recordings that did (they run in place)
    cudaStream_t                      conc_ = nullptr;
    cudaEvent_t                       fork_ = nullptr, join_ = nullptr;
    bool                              joined_ = true, scratch_ = false;
    std::set<uint64_t>                scratch_keys_;
    // branch(): a stream each, made on first use and reused once joined
    struct branch_stream {
        cudaStream_t s     = nullptr;
        cudaEvent_t  start = nullptr, done = nullptr;
        bool         open  = false;
    };
    std::vector<branch_stream>        branches_;
    int                               on_branch_ = -1;
    int64_t                           col_floats_ = k_col_floats;
    std::unique_ptr<cuda_buffer>      yt_, xh_;     // conv1d_gemm's product [rows, c_out]; BF16 x
    std::map<const float *, padded_weights> padded_;    // conv1d_gemm's weights with rows up to N4
    cudaStream_t                      side_ = nullptr;  // their copies
    int64_t                           yt_floats_ = 0, xh_floats_ = 0;
    bool                              blas_tried_ = false;
    std::unique_ptr<cuda::blas>       blas_;
};

} // namespace

std::string cuda_device_problem(int ordinal) {
    int               count = 0;
    const cudaError_t e     = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return std::string("no usable CUDA driver or GPU (") + cudaGetErrorString(e) + ")";
    }
    if (count == 0) return "no CUDA GPU is present";
    if (ordinal < 0 || ordinal >= count) {
        return "GPU ordinal " + std::to_string(ordinal) + " is not present (" + std::to_string(count) + " GPUs)";
    }
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, ordinal) != cudaSuccess) {
        cudaGetLastError();
        return "cannot read the properties of GPU " + std::to_string(ordinal);
    }
    if (p.major * 10 + p.minor < 75) {
        return std::string("GPU ") + std::to_string(ordinal) + " (" + p.name + ") has compute capability " +
               std::to_string(p.major) + "." + std::to_string(p.minor) + "; the CUDA backend needs 7.5 or newer";
    }
    return "";
}

std::unique_ptr<backend> backend_cuda_create(int ordinal, backend_precision precision) {
    const std::string problem = cuda_device_problem(ordinal);
    if (!problem.empty()) throw backend_unavailable(problem);    // the GPU went away since the check
    return std::make_unique<cuda_backend>(ordinal, precision);
}

} // namespace mb
