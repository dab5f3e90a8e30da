// small building blocks shared by the networks: Linear / Conv1d weights uploaded into
// backend buffers with their loaders, upstream's FCBlock ("mlp"), the arena that sizes
// and allocates a state's activations, and the tap that reports named intermediates
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// receives named intermediates of a forward pass (llama.cpp's graph callback):
// name, data (host copy, valid only during the call), shape in upstream axis order.
// Names starting with "step_" are reported once per decoding step with a leading axis
// of 1; stacked along that axis they give [steps, …]
using tap_fn = std::function<void(std::string_view name, const float * data, const std::vector<int64_t> & shape)>;

// downloads x (the product of shape elements) and reports it; nothing happens (and nothing is
// allocated) without a tap
// issues `ops` through backend::run_recorded under `key` (run_recorded_concurrent where
// `concurrent`), or directly when a tap is set (taps read results back in the middle, which a
// recording cannot hold). The std::function holds one reference, which fits its local storage: a
// plan allocates nothing here
template <class F> void run_ops(backend & be, const tap_fn & tap, uint64_t key, F && ops, bool concurrent = false) {
    if (tap) {
        ops();
        return;
    }
    if (concurrent) be.run_recorded_concurrent(key, [&ops] { ops(); });
    else be.run_recorded(key, [&ops] { ops(); });
}

// recording keys: the network in the high bits, the shape that decides its op sequence below
enum : uint64_t {
    k_rec_root_a  = 1ull << 56,
    k_rec_root_b  = 2ull << 56,
    k_rec_pose    = 3ull << 56,
    k_rec_vq      = 4ull << 56,
    k_rec_root_s1 = 5ull << 56,
};

void tap_f32(const tap_fn & tap, backend & be, std::string_view name, bptr<const float> x,
             std::initializer_list<int64_t> shape);
void tap_i32(const tap_fn & tap, backend & be, std::string_view name, bptr<const int32_t> x,
             std::initializer_list<int64_t> shape);
// host arrays (integers reported as floats)
void tap_host(const tap_fn & tap, std::string_view name, const float * x, std::initializer_list<int64_t> shape);
void tap_host(const tap_fn & tap, std::string_view name, const uint8_t * x, std::initializer_list<int64_t> shape);
void tap_host(const tap_fn & tap, std::string_view name, const int32_t * x, std::initializer_list<int64_t> shape);

// the backend buffers that hold a network's weights (on the CPU: aliases of the mapped tensors)
using weight_buffers = std::vector<std::unique_ptr<backend_buffer>>;

// what a network loader reads from and uploads into
struct weight_loader {
    const tensor_source & src;
    backend &             be;       // any object of the backend kind the states will run on
    weight_buffers &      bufs;     // receives one buffer per uploaded tensor

    // the tensor's data in backend memory (once per tensor)
    bptr<const float> upload(const tensor_view & t);
    // a linear or conv weight of any dtype the backend runs (F32, BF16, Q8_0); throws mb::error
    // (incompatible_model) naming the tensor where the backend cannot run its type
    bweight upload_matrix(const tensor_view & t);
};

struct linear_weights {
    bweight           weight;           // [n_out, n_in], F32, BF16 or Q8_0
    bptr<const float> bias;             // [n_out]
    int64_t           n_in = 0, n_out = 0;
};

struct conv_weights {
    bweight           weight;           // [c_out, c_in, k], F32 or BF16
    bptr<const float> bias;             // [c_out]
    int64_t           c_in = 0, c_out = 0, k = 0;
};

// a well-formed bundle these networks cannot run: throws mb::error (incompatible_model) "<origin>: what"
[[noreturn]] void fail_incompatible(const tensor_source & src, const std::string & what);

// `<name>.weight` [n_out, n_in] and `<name>.bias` [n_out]; a size ≤ 0 is taken from the tensor;
// throws mb::error (incompatible_model) naming the tensor on a missing tensor or wrong shape
linear_weights load_linear(weight_loader & wl, const std::string & name, int64_t n_out, int64_t n_in);

// `<name>.weight` [c_out, c_in, k] and `<name>.bias` [c_out]; c_out / c_in ≤ 0 are taken from the tensor
conv_weights load_conv(weight_loader & wl, const std::string & name, int64_t c_out, int64_t c_in, int64_t k);

// upstream FCBlock "mlp": h = LeakyReLU_0.01(fc_layers.i(h)) for each i, then forward_projection
struct fc_block_weights {
    std::vector<linear_weights> fc;     // fc_layers.<i>: n_in → width, then width → width
    linear_weights              out;    // forward_projection: width → n_out

    int64_t n_in() const { return fc.empty() ? 0 : fc[0].n_in; }
    int64_t width() const { return out.n_in; }
    int64_t n_out() const { return out.n_out; }
};

// reads `<prefix>fc_layers.<i>` for i = 0, 1, … until absent, and `<prefix>forward_projection`;
// n_in / n_out ≤ 0 are taken from the tensors
fc_block_weights load_fc_block(weight_loader & wl, const std::string & prefix, int64_t n_in, int64_t n_out);

// y[n, n_out] ← FCBlock(x[n, n_in]); tmp_a and tmp_b hold n·width floats each; y may alias neither
void fc_block_forward(backend & be, const fc_block_weights & w, bptr<const float> x, int64_t n, bptr<float> tmp_a,
                      bptr<float> tmp_b, bptr<float> y);

// sizes a state's arrays, then allocates them all as one backend buffer: call add() for
// every array, then allocate(); the bptrs passed to add() are set by allocate()
class state_arena {
public:
    template <class T> void add(bptr<T> & slot, int64_t n) {
        slots_.push_back({reinterpret_cast<void **>(&slot.p), offset_});
        offset_ += (size_t(n) * sizeof(T) + 63) / 64 * 64;
    }
    std::unique_ptr<backend_buffer> allocate(backend & be);

private:
    struct slot {
        void ** p;          // the bptr's address member
        size_t  offset;     // bytes from the buffer start
    };
    std::vector<slot> slots_;
    size_t            offset_ = 0;
};

// staging for upload_selected_rows: up to cap compact rows of d floats and their row indices
// on the backend, and their host copies (all sized once, with the state)
struct row_staging {
    int64_t              cap = 0, d = 0;
    bptr<float>          rows;     // [cap, d]
    bptr<int32_t>        idx;      // [cap]
    std::vector<float>   host_rows;
    std::vector<int32_t> host_idx;

    void add_to(state_arena & a, int64_t cap_rows, int64_t row_floats);    // and sizes the host copies
};

// y[n, d] ← host[n, d] on the rows whose sel is nonzero; rows with sel 0 keep what they held.
// For arrays read only through selections by sel (where_rows, replace_frames): a batch's
// keyframe conditions are 8 of a lane's 24–64 frames, so the upload carries those rows and
// their indices (scatter_rows) instead of every row. Small arrays, and more selected rows than
// the staging holds, go up whole
void upload_selected_rows(backend & be, const float * host, const uint8_t * sel, int64_t n, int64_t d, bptr<float> y,
                          row_staging & stg);

} // namespace mb
