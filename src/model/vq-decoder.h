// the pose VQ-VAE at inference: codebook lookup (dequantisation) and the
// DoubleCondDecoder that turns n tokens into 4n normalised 413-d local frames.
// Tensor names are the state-dict keys with "pose_net." stripped
// ("quantizer.vq._codebook.embed", "decoder.model.0.weight", …); the dilation growth
// comes from metadata "motionbricks.dilation_growth" (default 3).
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/cond-decoder.h"
#include "model/layers.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mb {

struct vq_hparams {
    int64_t n_tok_head   = 0;   // codebook heads H (8)
    int64_t n_code       = 0;   // codes per head C (10)
    int64_t head_dim     = 0;   // code width per head (32)
    int64_t code_dim     = 0;   // H·head_dim = decoder input channels (256)
    int64_t frames_per_token = 0;   // 2^down_t (4)
    int64_t out_dim      = 0;   // decoder output per frame (413)
    int64_t ext_dim      = 0;   // external condition per frame: normalised local vx, vz (2)
    int64_t tgt_dim      = 0;   // target condition per frame: normalised pose (304)
};

// inputs, activations and output of one decode of up to `lanes` lanes, sized once for max_tokens
// tokens per lane (each array below holds `lanes` lanes)
struct vq_decoder_state {
    int64_t                         max_tokens = 0;
    int64_t                         lanes      = 1;
    bptr<int32_t>                   tokens;     // [max_tokens, H]
    bptr<float>                     codes;      // [max_tokens, code_dim]
    bptr<float>                     ext;        // [4·max_tokens, ext_dim]
    bptr<float>                     tgt;        // [4·max_tokens, tgt_dim]
    bptr<uint8_t>                   has_tgt;    // [4·max_tokens]
    bptr<float>                     y;          // [4·max_tokens, out_dim] the last decode's output
    std::unique_ptr<backend_buffer> mem;        // holds the arrays above
    cond_decoder_state              dec;
    row_staging                     tgt_rows;   // tgt's keyframe rows (upload_selected_rows)

    vq_decoder_state() = default;
    vq_decoder_state(backend & be, const vq_hparams & hp, const cond_decoder_hparams & dhp, int64_t max_tokens,
                     int64_t lanes = 1);
};

struct vq_decoder {
    vq_hparams        hp;
    bptr<const float> codebook;         // quantizer.vq._codebook.embed [H, C, head_dim]
    cond_decoder      dec;              // decoder.*
    weight_buffers    weights;          // backend memory of every tensor above

    // validates every tensor and uploads the weights through `be`;
    // throws mb::error (incompatible_model) naming the first problem
    static vq_decoder load(const tensor_source & src, backend & be);

    // y[4n, out_dim] ← decoder(codes[n, code_dim]) for n valid tokens (host arrays);
    // ext[4n, ext_dim], tgt[4n, tgt_dim], has_tgt[4n] (nonzero = keyframe target, may be null)
    void decode_codes(backend & be, vq_decoder_state & st, const float * codes, int64_t n, const float * ext,
                      const float * tgt, const uint8_t * has_tgt, float * y) const;

    // codes = concat over h of codebook[h, tokens[p, h]] (head-major, tapped "decoder_codes"
    // [n, code_dim]), then the decoder as decode_codes; throws mb::error (invalid_argument) on a
    // token outside 0..C−1 or n outside 1..st.max_tokens. n_batch lanes of n tokens each (up to
    // st.lanes): every array holds the lanes back to back, each lane decoded as if alone (taps
    // only with one lane). y may be null: the result is then left in st.y, not downloaded
    void decode(backend & be, vq_decoder_state & st, const int32_t * tokens, int64_t n, const float * ext,
                const float * tgt, const uint8_t * has_tgt, float * y, const tap_fn & tap = {},
                int64_t n_batch = 1) const;

    // the same on tokens already on the backend (sampled there: in range by construction) and with
    // the external condition already in st.ext when ext is null
    void decode(backend & be, vq_decoder_state & st, bptr<const int32_t> tokens, int64_t n, const float * ext,
                const float * tgt, const uint8_t * has_tgt, float * y, int64_t n_batch, const tap_fn & tap = {}) const;

private:
    void check_size(const vq_decoder_state & st, int64_t n, int64_t n_batch) const;     // throws invalid_argument
    void upload_conditions(backend & be, vq_decoder_state & st, int64_t n, int64_t n_batch, const float * ext,
                           const float * tgt, const uint8_t * has_tgt) const;
    void run_decoder(backend & be, vq_decoder_state & st, int64_t n, int64_t n_batch, bool has_target, float * y) const;
};

} // namespace mb
