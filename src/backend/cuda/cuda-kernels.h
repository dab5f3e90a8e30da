// CUDA kernels of the backend ops, on device pointers and one stream. Row-major
// float32 throughout; every launcher checks its launch and throws
// std::runtime_error naming the kernel and the CUDA error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mb::cuda {

// a failed CUDA call: throws mb::error(compute_failed) naming `what` and the CUDA error, and
// saying whether the model can still be used (errors that lose the GPU context cannot be
// recovered in this process: the model must be freed)
[[noreturn]] void fail(const char * what, cudaError_t e);

// whether the environment variable `name` is set to exactly `value` (the backend's switches; read
// on every call, so a test may set one)
bool env_is(const char * name, const char * value);

// how a product's rows map to a conv and what its epilogue does (the skinny kernel, cuda-kernels.cu,
// and the GEMV, cuda-gemv.cu). t > 0: rows are the t positions of each lane (n_batch·t rows; row r is
// position r mod t of lane r / t, whose x starts at lane·c_in·t, c_in = K / k, and whose y at lane·N·t)
// and y is NCW per lane; k, dilation: the conv's taps (the skinny kernel's implicit im2col). act 1:
// leaky_relu(slope) of the biased total (linear_act, conv1d_act: the leaky_relu kernel's arithmetic,
// so fused and separate give the same floats)
struct conv_geom {
    int           t = 0, k = 1, dilation = 1;
    int           act   = 0;
    float         slope = 0.0f;
    const float * res   = nullptr;    // NCW: y ← act(·) + res (res may be y itself)
    // NCW on an explicit im2col: where ncol is given, y's im2col for the next conv (kernel nk,
    // dilation ndil, of relu(y) where nrelu) is written too, so that conv needs no im2col kernel
    float *       ncol  = nullptr;
    int           nk = 1, ndil = 1, nrelu = 0;
};

// F32 products sum every output in one order, whatever the row count (so lanes of a batch get
// the bits of their requests alone): k in slices of k_sum_slice, each summed with fmaf from 0
// in ascending k, the slice sums added in order to a total from 0, the bias last
constexpr int k_sum_slice = 32;

#if defined(__CUDACC__)
// leaky_relu(slope) of one float (slope 0: ReLU, x < 0 ? 0 : x; NaN passes through, since 0·NaN
// would not be 0): the one expression of every kernel that applies an activation (the leaky_relu
// kernel and the products' and transpose's epilogues), so fused and separate give the same floats
__device__ __forceinline__ float leaky(float v, float slope) {
    return v < 0.0f ? (slope == 0.0f ? 0.0f : v * slope) : v;
}
// a + x·w over a float4 of a slice, in ascending k: the products' one fmaf chain
__device__ __forceinline__ float fma4(float4 x, float4 w, float a) {
    return fmaf(x.w, w.w, fmaf(x.z, w.z, fmaf(x.y, w.y, fmaf(x.x, w.x, a))));
}
// a conv's output v at position i of lane ln (t positions, N outputs; this one o) into the next
// conv's im2col (kernel nk, dilation ndil, relu(v) where nrelu), as the im2col kernel would write
// it: at every row whose tap reads it, and 0 at this row's taps that fall outside the lane, so
// that the outputs of a product write every entry of the next im2col once
__device__ __forceinline__ void store_next_col(float * ncol, int nk, int ndil, int nrelu, int t, int N, int ln, int i,
                                               int o, float v) {
    const size_t K2 = (size_t) N * nk;
    const float  cv = nrelu ? leaky(v, 0.0f) : v;
    for (int kk = 0; kk < nk; ++kk) {
        const int off = (kk - (nk - 1) / 2) * ndil;
        if (i - off >= 0 && i - off < t) ncol[((size_t) ln * t + i - off) * K2 + (size_t) o * nk + kk] = cv;
        if (i + off < 0 || i + off >= t) ncol[((size_t) ln * t + i) * K2 + (size_t) o * nk + kk] = 0.0f;
    }
}
#endif

// y[n, n_out] = x[n, n_in]·w[n_out, n_in]ᵀ + b (b may be null); any n (a GEMV: weights
// streamed once per tile of up to 8 rows, made for the networks' 1–64 rows at batch one)
void linear_skinny(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out,
                   float * y, cudaStream_t s);

// an F32 GEMV of k_gemv_rows_min…k_skinny_max_rows rows (cuda-gemv.cu: one tile of up to 16
// rows, a warp 1, 2 or 4 weight rows, weights through cp.async), the same bits as linear_skinny: the
// default for linear products (MB_CUDA_GEMV, cuda-gemv.cu says why); g.t > 0: a conv on its explicit
// im2col (y NCW, g's residual and next im2col in the epilogue, as the skinny kernel's); g.act:
// leaky_relu(g.slope) in the epilogue. False where it does not run (not asked for, K % 4, alignment):
// the caller runs linear_skinny's kernel
constexpr int64_t k_gemv_rows_min = 5;
bool gemv_rows(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
               const conv_geom & g, cudaStream_t s);
// how many products gemv_rows has launched in this process (tests: that a switch reached it)
int64_t gemv_rows_launches();

// the F32 product of many rows (fused batches): a tiled SGEMM in the same order, so each
// output gets the bits linear_skinny gives it. Where linear_tiled_fits (n above
// k_skinny_max_rows, or from MB_CUDA_TILED_ROWS). conv1d keeps the GEMV where its products
// have few rows
constexpr int64_t k_skinny_max_rows = 64;
bool linear_tiled_fits(int64_t n);
// act 1: leaky_relu(slope) on the biased total in the epilogue (the leaky_relu kernel's arithmetic)
void linear_tiled(const float * x, int64_t n, int64_t K, const float * w, const float * b, int64_t N, float * y,
                  cudaStream_t s, int act = 0, float slope = 0.0f);
// the tiles MB_CUDA_TILED_TILE can force (read on every call; the bits are the same on each)
std::vector<std::string> tiled_tile_names();

// the F32 product: linear_tiled where it fits, else linear_skinny (the same bits either way);
// act 1 applies leaky_relu(slope) to y (slope 0: ReLU), in the epilogue of either kernel (the
// same arithmetic on the same float as the leaky_relu kernel)
void linear_f32(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y,
                cudaStream_t s, int act = 0, float slope = 0.0f);

// the same as linear_skinny with w[n_out, n_in] in bfloat16 (MB_PRECISION_BF16), float32 sums
void linear_skinny_bf16(const float * x, int64_t n, int64_t n_in, const void * w, const float * b, int64_t n_out,
                        float * y, cudaStream_t s);

// MB_PRECISION_TF32 on tensor cores, for shapes where linear_tf32_fits (rows and outputs
// multiples of 16, inputs of 8, 32-byte aligned x and w); weights read once per 64 rows
bool linear_tf32_fits(int64_t n, int64_t n_in, int64_t n_out, const float * x, const float * w);
void linear_tf32(const float * x, int64_t n, int64_t n_in, const float * w, const float * b, int64_t n_out, float * y,
                 cudaStream_t s);

// y[i] = bfloat16(x[i]) rounded to nearest even, i < n (the BF16 weight copies)
void f32_to_bf16(const float * x, int64_t n, void * y, cudaStream_t s);

// x[n, d] ← LayerNorm(x + r)·g + b (r may be null), mean and variance accumulated in double
void add_layer_norm(float * x, const float * r, int64_t n, int64_t d, const float * g, const float * b, float eps,
                    cudaStream_t s);

// attention core of backend::attention: qkv[n_batch, n, 3d] → out[n_batch, n, d], keys within a
// lane; key_mask[n_batch, n] may be null. Two kernels with the same arithmetic per query (so the
// same bits, whatever the lane count): kernel 1 the one reading keys from global memory, 0 and 2
// the staged one where the head's keys and values fit shared memory (else 1), its queries staged
// too where a block has one query a warp (batch one) unless kernel 2; tests compare them
void attention(const float * qkv, int64_t n, int64_t d, int64_t n_head, const uint8_t * key_mask, float * out,
               int64_t n_batch, cudaStream_t s, int kernel = 0);

// y[l, cols, rows] = x[l]ᵀ for x[n_batch, rows, cols]; act 1: leaky_relu(slope) on each value as
// it is stored (conv1d_gemm's activation, the leaky_relu kernel's arithmetic). ldx > 0: x's rows
// are ldx ≥ cols apart (lanes rows·ldx); ldy > 0: y's rows are ldy ≥ rows apart (lanes cols·ldy)
void transpose(const float * x, int64_t rows, int64_t cols, float * y, int64_t n_batch, cudaStream_t s, int act = 0,
               float slope = 0.0f, int64_t ldx = 0, int64_t ldy = 0);

// conv1d "same" (NCW, stride 1, zero padding dilation·(k−1)/2) as the skinny kernel reading
// x through an implicit im2col and writing y[c_out, t] directly: no scratch. The n_batch lanes'
// positions are the kernel's rows (n_batch·t), so the weights are streamed once for all lanes
void conv1d_skinny(const float * x, int64_t c_in, int64_t t, const float * w, const float * b, int64_t c_out,
                   int64_t k, int64_t dilation, float * y, int64_t n_batch, cudaStream_t s);
// the same through an explicit im2col in col[n_batch·t, c_in·k] (where conv1d_col_fits for t =
// n_batch·t: c_in·k % 4 == 0 and t·c_in·k ≤ capacity floats), so that x is read with 16-byte loads
// like linear's; w_bf16 (may be null) is the BF16 copy of w
bool conv1d_col_fits(int64_t c_in, int64_t t, int64_t k, int64_t capacity);
// col[n_batch·t, c_in·k] ← the im2col of x[n_batch, c_in, t] (row r: position r mod t of lane r / t);
// relu 1: of relu(x) (the relu kernel's value of each x)
void im2col(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, float * col, int64_t n_batch,
            cudaStream_t s, int relu = 0);
// the same im2col rounded to bfloat16 (col holds n_batch·t·c_in·k bfloat16 values): the x of a
// BF16 product, without an f32 im2col and a conversion pass
void im2col_bf16(const float * x, int64_t c_in, int64_t t, int64_t k, int64_t dilation, void * col, int64_t n_batch,
                 cudaStream_t s);
// act 1: leaky_relu(slope) on y, in the GEMV's epilogue; relu_in 1: the conv of relu(x) (in the
// im2col); res: y ← that + res[n_batch·c_out·t] (the add kernel's sum; res may be y)
void conv1d_col(const float * x, int64_t c_in, int64_t t, const float * w, const void * w_bf16, const float * b,
                int64_t c_out, int64_t k, int64_t dilation, float * y, float * col, int64_t n_batch, cudaStream_t s,
                int act = 0, float slope = 0.0f, int relu_in = 0, const float * res = nullptr);
// conv1d_col's product on an im2col already in col; where ncol is given, it also writes the im2col
// of y for the next conv (kernel nk, dilation ndil, of relu(y) where nrelu: what im2col would
// write), so a chain of convs needs the im2col kernel only for its first input
void conv1d_on_col(const float * col, int64_t c_in, int64_t t, int64_t k, const float * w, const void * w_bf16,
                   const float * b, int64_t c_out, float * y, int64_t n_batch, cudaStream_t s, int act = 0,
                   float slope = 0.0f, const float * res = nullptr, float * ncol = nullptr, int64_t nk = 1,
                   int64_t ndil = 1, int nrelu = 0);
void conv1d_skinny_bf16(const float * x, int64_t c_in, int64_t t, const void * w, const float * b, int64_t c_out,
                        int64_t k, int64_t dilation, float * y, int64_t n_batch, cudaStream_t s);

// ---- the element, layout and sampling ops of the backend interface (backend.h says what
// each computes; these are its device versions, same arguments)

void fill_f32(int64_t n, float v, float * y, cudaStream_t s);
void fill_i32(int64_t n, int32_t v, int32_t * y, cudaStream_t s);
void add(const float * a, const float * b, int64_t n, float * y, int64_t n_b, cudaStream_t s);
void relu(const float * x, int64_t n, float * y, cudaStream_t s);
void leaky_relu(const float * x, int64_t n, float slope, float * y, cudaStream_t s);
void silu(const float * x, int64_t n, float * y, cudaStream_t s);
void copy_rows(const float * x, int64_t ldx, int64_t n, int64_t d, float * y, int64_t ldy, cudaStream_t s);
void where_rows(const uint8_t * sel, const float * a, int64_t lda, const float * b, int64_t ldb, int64_t n, int64_t d,
                float * y, int64_t ldy, cudaStream_t s);
void scatter_rows(const float * x, const int32_t * idx, int64_t k, int64_t d, float * y, cudaStream_t s);
void mask_cols(int64_t c, int64_t t, int64_t n_valid, float * x, cudaStream_t s);
void upsample2(const float * x, int64_t c, int64_t t, float * y, cudaStream_t s);
void embed_heads(const float * table, int64_t n_head, int64_t rows_per_head, int64_t d, const int32_t * idx,
                 int64_t n, float * y, cudaStream_t s);
void replace_frames(const float * src, const uint8_t * sel, int64_t t, int64_t f, int64_t w, float * h,
                    int64_t n_batch, cudaStream_t s);
// the logs and exps that decide tokens and re-masking run in double and round to float, so
// they match the host's correctly rounded logf / expf and seeds give the CPU's tokens
void sample_codes(const float * logits, int64_t m, int64_t n_code, const float * u, int32_t * tokens, float * prob,
                  cudaStream_t s);
void remask_lowest(const float * prob, int64_t m, int64_t n_mask, int32_t mask_id, int32_t * tokens, int64_t n_batch,
                   cudaStream_t s);

// a timing's floor (cuda_speed): reads n floats of w (n % 4 == 0, w 16-byte aligned) over `blocks`
// blocks of 256 threads, 8 float4 loads in flight a thread, and nothing else: what streaming a
// product's weights costs in one kernel of a chain. n = 0: an empty kernel (the launch alone)
void stream_floor(const float * w, int64_t n, int blocks, float * sink, cudaStream_t s);

// backend::root_conditions (cuda-finish.cu): the root planner's output → the pose planner's root
// condition and the VQ decoder's external condition, the host's arithmetic
void root_conditions(const float * y, int64_t n_batch, int64_t frames, const float * stats, const float * last,
                     const uint8_t * has_last, float * root_cond, float * ext, cudaStream_t s);

// backend::motion_finish (cuda-finish.cu): predict's step 5 for n_batch lanes of `frames` frames, the
// host functions' float arithmetic in their order
void motion_finish(const float * x, int64_t n_batch, int64_t frames, const float * scale, const float * mean,
                   const float * ref, const int32_t * parents, const float * offsets, float * global,
                   float * positions, float * local_xyzw, cudaStream_t s);

} // namespace mb::cuda
