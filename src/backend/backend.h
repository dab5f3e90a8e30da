// the compute interface the networks run on (ggml-backend style, without a graph:
// every network issues a fixed sequence of ops). A backend owns memory (buffers)
// and runs ops on it; model code holds typed addresses into that memory (bptr),
// offsets them and passes them to ops, and never dereferences them. Data enters
// with set() and leaves with get(). The CPU backend is one implementation; a GPU
// backend is another, behind the same interface (weights uploaded once at load,
// every activation buffer allocated when a state is created, nothing per call).
//
// Conventions for every op below
//   - arrays are row-major and contiguous unless a leading dimension (ld*) is given;
//     shapes are written [rows, cols]; counts are elements, not bytes
//   - inputs are `bptr<const T>`, outputs `bptr<T>`; outputs come last
//   - an output may alias an input only where the op says so
//   - a bptr argument documented "may be null" is absent when null
//   - ops on one backend object run in the order they are issued (they may run
//     asynchronously with respect to the host; get() and synchronize() wait)
//   - float results need not be bitwise equal between backends: test-backend-ops
//     bounds each op's NMSE against a scalar reference. Integer results (tokens)
//     are exact given the same float inputs
//   - lanes: ops whose work must stay inside one request take n_batch (default 1): the
//     arrays hold n_batch lanes back to back, each laid out as the op describes for one,
//     and no lane reads another's data. Row-wise ops need no lane count (pass B·rows), and
//     NCW ops that are per channel row (mask_cols, upsample2) take B·c channels
//   - subnormal floats: a backend may flush subnormal inputs and results to zero
//     (the CPU backend runs every op with FTZ and DAZ set)
//
// Threads: a backend object is used by one thread at a time (it may hold scratch and
// worker threads). Buffers belong to the backend kind, not to the object: a buffer
// allocated through one object of a kind may be read and written by ops of any other
// object of the same kind in the same process, and read concurrently by several
// (weights are loaded once through one object, each state runs on its own object).
#pragma once

#include "backend/motion-finish.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mb {

// a typed address in backend memory: a host pointer on the CPU backend, a device
// pointer on a GPU backend; only backends dereference it
template <class T> struct bptr {
    T * p = nullptr;    // backend address; never dereferenced by model code

    bptr() = default;
    explicit bptr(T * q) : p(q) {}
    // bptr<T> converts to bptr<const T>
    template <class U>
        requires std::is_same_v<T, const U>
    bptr(bptr<U> o) : p(o.p) {}

    bptr          operator+(int64_t n) const { return bptr(p + n); }   // n elements further
    explicit      operator bool() const { return p != nullptr; }
};

// the element types a matrix weight (linear, conv) may be stored in; the values are
// GGUF's type ids (mb::dtype), so a tensor's type converts directly
enum class weight_type : uint32_t {
    WEIGHT_F32  = 0,
    WEIGHT_Q8_0 = 8,     // rows of n_in / 32 ggml block_q8_0 (F16 scale + 32 int8 = 34 bytes); n_in % 32 == 0
    WEIGHT_BF16 = 30,    // bfloat16 values, rows of n_in
};

// a matrix weight in backend memory with its element type. A bptr<const float> converts
// to an F32 bweight, so F32 callers pass their pointers unchanged
struct bweight {
    const void * p    = nullptr;                    // backend address of row 0; never dereferenced by model code
    weight_type  type = weight_type::WEIGHT_F32;

    bweight() = default;
    bweight(const void * q, weight_type t) : p(q), type(t) {}
    bweight(bptr<const float> w) : p(w.p) {}        // NOLINT: implicit on purpose (F32)
    explicit operator bool() const { return p != nullptr; }
};

// "F32", "Q8_0", "BF16"
const char * weight_type_name(weight_type t);

// one block of backend memory, zero-initialised, 64-byte aligned; freed by its unique_ptr
class backend_buffer {
public:
    virtual ~backend_buffer() = default;

    virtual size_t size() const = 0;    // bytes
    virtual void * base()       = 0;    // backend address of byte 0

    template <class T> bptr<T> as() { return bptr<T>(static_cast<T *>(base())); }
};

// device memory as a backend object sees it (backend::device_memory)
struct device_memory_use {
    uint64_t held_bytes  = 0;    // held by buffers and scratch allocated through this object and not yet freed
    uint64_t used_bytes  = 0;    // in use on the whole device: total − free (every process, the driver's contexts)
    uint64_t total_bytes = 0;    // the device's memory
};

class backend {
public:
    virtual ~backend() = default;

    // ---- identity -----------------------------------------------------------------------------

    virtual const char * name() const      = 0;     // "cpu", "cpu-avx2", "cuda", …
    virtual int          n_threads() const = 0;     // host threads this object computes with

    // whether linear and conv1d take weights of type t. Optional: the default is F32 only
    virtual bool supports_weight_type(weight_type t) const { return t == weight_type::WEIGHT_F32; }

    // ---- memory -------------------------------------------------------------------------------

    // a new buffer of `bytes` zero bytes (bytes 0 gives a valid empty buffer);
    // throws std::bad_alloc (or std::runtime_error naming the device) when out of memory
    virtual std::unique_ptr<backend_buffer> alloc(size_t bytes) = 0;

    // a read-only buffer holding a copy of host[0..bytes) (weights). Optional: the default
    // is alloc + set. The CPU backend aliases the host memory instead of copying, so the
    // host memory must stay valid and unchanged for the buffer's lifetime on every backend
    virtual std::unique_ptr<backend_buffer> alloc_from_host(const void * host, size_t bytes);

    // host memory that get() copies into fastest (page-locked on CUDA), bytes long, freed when the
    // last copy of the pointer goes. Not a set() source: a copy from page-locked memory may still
    // be reading it after set() returns. Optional: the default is null (plain memory is as fast),
    // and callers then use their own
    virtual std::shared_ptr<void> alloc_host(size_t bytes) {
        (void) bytes;
        return nullptr;
    }

    // fills `out` and returns true on a backend with device memory. held_bytes counts every
    // buffer allocated through this object until it is freed (whichever object of the kind uses it)
    // and the object's own scratch; memory that libraries keep for themselves (cuBLAS's workspace,
    // the driver's context) shows only in used_bytes. Throws like an op when the device cannot be
    // asked. Optional: the default returns false (host memory only; out unchanged)
    virtual bool device_memory(device_memory_use & out) const {
        (void) out;
        return false;
    }

    // host → backend: dst[0..bytes) ← host[0..bytes); ordered after the ops issued before;
    // the host memory may be reused when it returns
    virtual void set_bytes(void * dst, const void * host, size_t bytes) = 0;

    // backend → host: host[0..bytes) ← src[0..bytes) once every op issued before has finished
    virtual void get_bytes(const void * src, void * host, size_t bytes) = 0;

    // get() without its wait: the copy is issued after the ops issued before it and has landed at
    // the next get() or synchronize(), until when host must stay valid and unread (page-locked,
    // from alloc_host, so that the copy needs no wait of its own). The default is get_bytes
    virtual void get_bytes_later(const void * src, void * host, size_t bytes) { get_bytes(src, host, bytes); }

    // waits until every op issued so far has finished. Optional: the default does nothing
    // (for backends whose ops complete before they return)
    virtual void synchronize() {}

    // issues the ops that `ops` issues. A backend may record them the first time it sees `key`
    // on this object and replay the recording afterwards (CUDA graphs: one launch instead of
    // hundreds), so for one key `ops` must issue the same ops on the same addresses every
    // time, with no set() or get() inside. The default runs `ops`
    virtual void run_recorded(uint64_t key, const std::function<void()> & ops) {
        (void) key;
        ops();
    }

    // run_recorded, but the recording may run concurrently with the ops issued after it, until
    // join_concurrent() (which get() and synchronize() imply): for work whose results are read
    // only later (the root planner's duration logits where every duration is given). Until the
    // join, later ops must not touch what `ops` writes, nor write what it reads. The defaults run
    // `ops` in place and join nothing
    virtual void run_recorded_concurrent(uint64_t key, const std::function<void()> & ops) { run_recorded(key, ops); }
    virtual void join_concurrent() {}

    // issues the ops that `ops` issues as a branch that may run beside the ops issued after it,
    // until join_branch(id) (get(), synchronize() and the end of a recording join every branch):
    // for glue whose inputs are ready early (embeddings, conditions) so that it leaves the
    // chain of dependent ops. The branch reads only what was written before it; until the join,
    // later ops neither touch what it writes nor write what it reads. Returns the branch's id.
    // The defaults run `ops` in place and join nothing
    virtual int branch(const std::function<void()> & ops) {
        ops();
        return -1;
    }
    virtual void join_branch(int id) { (void) id; }

    template <class T> void set(bptr<T> dst, const T * host, int64_t n) {
        set_bytes(dst.p, host, size_t(n) * sizeof(T));
    }
    template <class T> void get(bptr<const T> src, T * host, int64_t n) {
        get_bytes(src.p, host, size_t(n) * sizeof(T));
    }
    template <class T> void get_later(bptr<const T> src, T * host, int64_t n) {
        get_bytes_later(src.p, host, size_t(n) * sizeof(T));
    }

    // ---- scratch (optional; the defaults do nothing) --------------------------------------------

    // the largest operands the ops of this object will get, declared when a state is created, so
    // that a backend sizes its own working memory (the CPU backend's im2col, attention scores and
    // sort order) once and no op allocates during a plan. Each call raises the maxima; an op on
    // larger operands stays correct but may allocate
    virtual void reserve_conv1d(int64_t c_in, int64_t t, int64_t c_out, int64_t k) {
        (void) c_in, (void) t, (void) c_out, (void) k;
    }
    virtual void reserve_attention(int64_t n) { (void) n; }   // n rows (= keys)
    virtual void reserve_remask(int64_t m) { (void) m; }      // m probabilities
    virtual void reserve_motion_finish(int64_t frames) { (void) frames; }    // frames a lane

    // ---- elementwise (y may alias an input) -----------------------------------------------------

    // y[i] ← v for i < n
    virtual void fill_f32(int64_t n, float v, bptr<float> y) = 0;
    virtual void fill_i32(int64_t n, int32_t v, bptr<int32_t> y) = 0;

    // y[i] ← a[i] + b[i mod n_b] for i < n; n_b 0 means n (b repeated: a position table added
    // to every lane)
    virtual void add(bptr<const float> a, bptr<const float> b, int64_t n, bptr<float> y, int64_t n_b = 0) = 0;

    // y[i] ← x[i] < 0 ? 0 : x[i] for i < n (NaN passes through)
    virtual void relu(bptr<const float> x, int64_t n, bptr<float> y) = 0;

    // y[i] ← x[i] < 0 ? x[i]·slope : x[i] for i < n (PyTorch LeakyReLU)
    virtual void leaky_relu(bptr<const float> x, int64_t n, float slope, bptr<float> y) = 0;

    // y[i] ← x[i] / (1 + exp(−x[i])) for i < n (PyTorch SiLU; large negative x gives −0, not NaN)
    virtual void silu(bptr<const float> x, int64_t n, bptr<float> y) = 0;

    // ---- layout (y must not overlap an input) ---------------------------------------------------

    // y[i·ldy + j] ← x[i·ldx + j] for i < n, j < d; ldx 0 repeats row 0 of x (broadcast)
    virtual void copy_rows(bptr<const float> x, int64_t ldx, int64_t n, int64_t d, bptr<float> y, int64_t ldy) = 0;

    // y[i·ldy + j] ← sel[i] != 0 ? a[i·lda + j] : b[i·ldb + j] for i < n, j < d;
    // sel[n] bytes; lda or ldb 0 repeats row 0 of that input
    virtual void where_rows(bptr<const uint8_t> sel, bptr<const float> a, int64_t lda, bptr<const float> b,
                            int64_t ldb, int64_t n, int64_t d, bptr<float> y, int64_t ldy) = 0;

    // y[idx[i]·d + j] ← x[i·d + j] for i < k, j < d; other rows of y keep what they hold (idx
    // distinct, each in y's rows: the caller's)
    virtual void scatter_rows(bptr<const float> x, bptr<const int32_t> idx, int64_t k, int64_t d, bptr<float> y) = 0;

    // x[r, c] → y[c, r]: y[j·ldy + i] ← x[i·c + j], per lane (x's lanes r·c elements apart, y's c·ldy);
    // ldy 0 is r (rows of y beyond r keep what they hold)
    virtual void transpose(bptr<const float> x, int64_t r, int64_t c, bptr<float> y, int64_t n_batch = 1,
                           int64_t ldy = 0) = 0;

    // in place on x[c, t] (NCW): x[i·t + j] ← 0 for i < c, n_valid ≤ j < t (a token mask that
    // keeps the first n_valid positions; n_valid ≥ t does nothing)
    virtual void mask_cols(int64_t c, int64_t t, int64_t n_valid, bptr<float> x) = 0;

    // nearest ×2 upsampling along time, NCW: x[c, t] → y[c, 2t], y[i·2t + 2j] = y[i·2t + 2j + 1] = x[i·t + j]
    virtual void upsample2(bptr<const float> x, int64_t c, int64_t t, bptr<float> y) = 0;

    // per-head embedding lookup: y[n, d] with y[i·d + k] ← table[((i mod n_head)·rows_per_head + idx[i])·d + k];
    // table [n_head·rows_per_head, d]; every idx[i] must be in 0..rows_per_head−1 (callers validate:
    // an index outside is undefined behaviour). Used for token embeddings (n = tokens·heads) and
    // codebook dequantisation
    virtual void embed_heads(bptr<const float> table, int64_t n_head, int64_t rows_per_head, int64_t d,
                             bptr<const int32_t> idx, int64_t n, bptr<float> y) = 0;

    // frame-wise replacement of an NCW hidden state by target embeddings (DoubleCondDecoder):
    // h[c, t] with c = f·w (f frames per position, w channels per frame), src[t·f, w] row-major,
    // sel[t·f] bytes. For every frame g < t·f with sel[g] != 0, with p = g / f and j = g mod f:
    // h[(j·w + k)·t + p] ← src[g·w + k] for k < w. Other entries of h are unchanged. Per lane
    // (h lanes of f·w·t, src of t·f·w, sel of t·f)
    virtual void replace_frames(bptr<const float> src, bptr<const uint8_t> sel, int64_t t, int64_t f, int64_t w,
                                bptr<float> h, int64_t n_batch = 1) = 0;

    // ---- network layers (y must not overlap an input) -------------------------------------------

    // y[n, n_out] ← x[n, n_in]·w[n_out, n_in]ᵀ + b[n_out] (PyTorch nn.Linear; b may be null)
    virtual void linear(bptr<const float> x, int64_t n, int64_t n_in, bptr<const float> w, bptr<const float> b,
                        int64_t n_out, bptr<float> y) = 0;

    // the same with a weight of any weight_type (sums in float32). Optional: the default runs
    // the F32 linear above for an F32 weight and throws std::runtime_error naming the backend
    // and the type for any other
    virtual void linear(bptr<const float> x, int64_t n, int64_t n_in, bweight w, bptr<const float> b, int64_t n_out,
                        bptr<float> y);

    // y ← act(x·wᵀ + b): linear (either overload's meaning) followed by relu on y where slope is
    // 0, else by leaky_relu(slope). Optional: the default issues exactly those two ops; a
    // backend may apply the activation in the product's epilogue (the same float result)
    virtual void linear_act(bptr<const float> x, int64_t n, int64_t n_in, bweight w, bptr<const float> b,
                            int64_t n_out, float slope, bptr<float> y);

    // in place: x[n, d] ← LayerNorm(x + r)·g + b per row, mean and biased variance over d,
    // (v − mean)/sqrt(var + eps); r [n, d] may be null (no residual); g, b [d]
    virtual void add_layer_norm(bptr<float> x, bptr<const float> r, int64_t n, int64_t d, bptr<const float> g,
                                bptr<const float> b, float eps) = 0;

    // multi-head self-attention core (before out_proj): qkv[n, 3·d] holds rows [q | k | v];
    // head h uses dims [h·d/n_head, (h+1)·d/n_head); scores q·kᵀ/sqrt(d/n_head), softmax over
    // keys j with key_mask[j] == 0 (key_mask [n] bytes, may be null = all keys; at least one key
    // must be unmasked); out[n, d] is the concatenation of the heads (head h at its dims).
    // Per lane: queries of a lane see only its n keys (qkv, key_mask and out hold n_batch lanes)
    virtual void attention(bptr<const float> qkv, int64_t n, int64_t d, int64_t n_head, bptr<const uint8_t> key_mask,
                           bptr<float> out, int64_t n_batch = 1) = 0;

    // Conv1d, NCW, stride 1, "same" zero padding dilation·(k−1)/2 on each side (k odd):
    // y[o·t + i] ← b[o] + Σ_{c < c_in, kk < k} w[(o·c_in + c)·k + kk]·x[c·t + i + (kk − (k−1)/2)·dilation]
    // with x outside 0..t−1 read as 0; x[c_in, t], w[c_out, c_in, k], b[c_out] (may be null), y[c_out, t];
    // per lane (x [n_batch, c_in, t], y [n_batch, c_out, t]), the weights read once for all lanes
    virtual void conv1d(bptr<const float> x, int64_t c_in, int64_t t, bptr<const float> w, bptr<const float> b,
                        int64_t c_out, int64_t k, int64_t dilation, bptr<float> y, int64_t n_batch = 1) = 0;

    // the same with a weight of any weight_type (rows of c_in·k values); optional as linear's
    virtual void conv1d(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b, int64_t c_out,
                        int64_t k, int64_t dilation, bptr<float> y, int64_t n_batch = 1);

    // y ← act(conv1d(x)): conv1d (the bweight overload's meaning), then relu on y[n_batch·c_out·t]
    // where slope is 0, else leaky_relu(slope). Optional as linear_act
    virtual void conv1d_act(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b,
                            int64_t c_out, int64_t k, int64_t dilation, float slope, bptr<float> y,
                            int64_t n_batch = 1);

    // a residual block's two convolutions (cond-decoder.cpp), each with its neighbouring op. Optional:
    // the defaults issue exactly these ops; a backend may fuse them (the same float results).
    //   relu_conv1d_act: xr ← relu(x[n_batch·c_in·t]), then y ← act(conv1d(xr)) (conv1d_act); xr is
    //     scratch that a fusing backend need not write
    //   conv1d_residual: tmp ← conv1d(x), then h ← tmp + h (add, h [n_batch·c_out·t]); tmp as xr
    virtual void relu_conv1d_act(bptr<const float> x, bptr<float> xr, int64_t c_in, int64_t t, bweight w,
                                 bptr<const float> b, int64_t c_out, int64_t k, int64_t dilation, float slope,
                                 bptr<float> y, int64_t n_batch = 1);
    virtual void conv1d_residual(bptr<const float> x, int64_t c_in, int64_t t, bweight w, bptr<const float> b,
                                 int64_t c_out, int64_t k, int64_t dilation, bptr<float> tmp, bptr<float> h,
                                 int64_t n_batch = 1);

    // one pre-activation residual block of a conv decoder stage (cond-decoder.cpp's Resnet1D), c → c
    // channels: conv1 (kernel k1, dilation), then conv2 (kernel k2, dilation 1)
    struct res_block {
        bweight           w1;
        bptr<const float> b1;
        int64_t           k1 = 3, dilation = 1;
        bweight           w2;
        bptr<const float> b2;
        int64_t           k2 = 1;
    };
    // a stage's residual blocks on h [n_batch, c, t] (NCW lanes, the first n_valid positions valid),
    // each: h ← mask(h); t1 ← mask(relu(conv1(relu(h)))); h ← mask(h + conv2(t1)), where mask zeroes
    // the positions from n_valid on; t0 and t1 [n_batch, c, t] are scratch. Optional: the default
    // issues exactly those ops (mask_cols, relu_conv1d_act, conv1d_residual); a backend may chain the
    // blocks' products (the same float results)
    virtual void res_blocks(bptr<float> h, bptr<float> t0, bptr<float> t1, int64_t c, int64_t t, int64_t n_valid,
                            const res_block * blocks, int64_t n_blocks, int64_t n_batch = 1);

    // one conv of a chain (conv_chain): y ← conv1d(x), then ReLU where relu (conv1d_act's meaning)
    struct conv_step {
        bweight           w;
        bptr<const float> b;
        int64_t           c_in = 0, c_out = 0, k = 1, dilation = 1;
        bool              relu = false;
        bptr<float>       y;
    };
    // convs in sequence on NCW lanes [n_batch, ·, t]: step i reads step i−1's y (step 0 reads x),
    // and each y is masked after its conv (mask_cols: the positions from n_valid on zeroed).
    // Optional: the default issues exactly those ops; a backend may chain the products as res_blocks
    virtual void conv_chain(bptr<const float> x, int64_t t, int64_t n_valid, const conv_step * steps, int64_t n_steps,
                            int64_t n_batch = 1);

    // ---- sampling (masked token decoding) ------------------------------------------------------

    // per row r < m of logits[m, n_code]: the token and the softmax probability of the choice.
    //   argmax (u null): t = the first index of the largest logit (NaN never wins unless all are NaN: 0)
    //   Gumbel (u[m, n_code] uniforms in [0, 1]): t = the first index of the largest
    //     logit[c] + g(u[c]) with g(u) = −log(max(−log(max(u, 1e−20)), 1e−20)), in float32
    //   prob[r] = exp(l[t] − mx)·(1 / Σ_c exp(l[c] − mx)), mx = the largest logit, in float32
    virtual void sample_codes(bptr<const float> logits, int64_t m, int64_t n_code, bptr<const float> u,
                              bptr<int32_t> tokens, bptr<float> prob) = 0;

    // re-masking: tokens[i] ← mask_id for the n_mask entries i < m of smallest key(prob[i]),
    // key = prob with NaN read as +inf, ties going to the lower index. Equivalently: with
    // rank(i) = #{j : key(j) < key(i) or (key(j) == key(i) and j < i)}, tokens[i] ← mask_id
    // where rank(i) < n_mask; other tokens are unchanged (n_mask ≥ m masks all). Per lane: prob and
    // tokens hold n_batch lanes of m, each ranked on its own
    virtual void remask_lowest(bptr<const float> prob, int64_t m, int64_t n_mask, int32_t mask_id,
                               bptr<int32_t> tokens, int64_t n_batch = 1) = 0;

    // ---- motion (optional) ----------------------------------------------------------------------

    // whether root_conditions and motion_finish run on this backend. Optional: the default is
    // false, and predict then runs that glue and step 5 on the host (the CPU backend has them: the
    // host's functions, backend/motion-finish.h)
    virtual bool has_motion_ops() const { return false; }

    // predict's glue between the root planner and the pose planner / VQ decoder on the backend, the
    // host's float32 arithmetic in its order (motion_stats::unnormalize, global_root_to_local,
    // motion_stats::normalize), for n_batch lanes of `frames` ≥ 2 frames of the root planner's
    // normalised global root y [n_batch, frames, 5] (x, y, z, cos h, sin h):
    //   root_cond[t] = (y[t, 0], y[t, 2], y[t, 3], y[t, 4])                       [n_batch, frames, 4]
    //   ext[t, i] = (fps·(g[t + 1] − g[t]) − stats[6 + i]) / stats[4 + i]         [n_batch, frames, 2]
    //     with g[t] = y[t, c]·stats[i] + stats[2 + i], c = 0 (x) for i = 0, 2 (z) for i = 1, for
    //     t < frames − 1; the last frame repeats frame frames − 2's, or is last[lane] where has_last[lane]
    // stats [8]: global-root scale of x, z, its mean of x, z, local-root scale of vx, vz, its mean of
    // vx, vz; last [n_batch, 2]; has_last [n_batch] bytes; fps k_finish_fps. No output overlaps an
    // input. The default throws std::runtime_error naming the backend (call it only where has_motion_ops())
    virtual void root_conditions(bptr<const float> y, int64_t n_batch, int64_t frames, bptr<const float> stats,
                                 bptr<const float> last, bptr<const uint8_t> has_last, bptr<float> root_cond,
                                 bptr<float> ext);

    virtual void motion_finish(bptr<const float> x, int64_t n_batch, int64_t frames, bptr<const float> scale,
                               bptr<const float> mean, bptr<const float> ref, bptr<const int32_t> parents,
                               bptr<const float> offsets, bptr<float> global, bptr<float> positions,
                               bptr<float> local_xyzw);
};

// the backends built into this library; the first entry is the default (CPU).
// A new backend adds one entry in backend-registry.cpp; tests/backend/test-backend-ops
// then checks every op of it against the scalar reference
struct backend_reg {
    std::string name;                                        // "cpu", …
    std::unique_ptr<backend> (*create)(int n_threads);       // n_threads <= 0 = hardware threads
};
const std::vector<backend_reg> & backend_registry();

// n_threads <= 0 selects the number of hardware threads
std::unique_ptr<backend> backend_cpu_create(int n_threads);

} // namespace mb
