// the pose VQ-VAE at inference: codebook lookup (dequantisation) and the
// DoubleCondDecoder that turns n tokens into 4n normalised 413-d local frames.
// Tensor names are the state-dict keys with "pose_net." stripped
// ("quantizer.vq._codebook.embed", "decoder.model.0.weight", …); the dilation growth
// comes from metadata "motionbricks.dilation_growth" (default 3).
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/cond-decoder.h"

#include <cstdint>
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

struct vq_decoder_state {
    std::vector<float> codes;   // [max_tokens, code_dim]
    cond_decoder_state dec;

    vq_decoder_state() = default;
    vq_decoder_state(const vq_hparams & hp, const cond_decoder_hparams & dhp, int64_t max_tokens);
};

struct vq_decoder {
    vq_hparams    hp;
    const float * codebook = nullptr;   // quantizer.vq._codebook.embed [H, C, head_dim]
    cond_decoder  dec;                  // decoder.*

    // validates every tensor; throws std::runtime_error naming the first problem
    static vq_decoder load(const tensor_source & src);

    // codes[n, code_dim] ← concat over h of codebook[h, tokens[p, h]] (head-major);
    // throws std::invalid_argument on a token outside 0..C−1
    void dequantise(const int32_t * tokens, int64_t n, float * codes) const;

    // y[4n, out_dim] ← decoder(codes[n, code_dim]) for n valid tokens;
    // ext[4n, ext_dim], tgt[4n, tgt_dim], has_tgt[4n] (nonzero = keyframe target, may be null)
    void decode_codes(backend & be, vq_decoder_state & st, const float * codes, int64_t n, const float * ext,
                      const float * tgt, const uint8_t * has_tgt, float * y) const;

    // dequantise + decode_codes; st.codes holds the codes afterwards
    void decode(backend & be, vq_decoder_state & st, const int32_t * tokens, int64_t n, const float * ext,
                const float * tgt, const uint8_t * has_tgt, float * y) const;
};

} // namespace mb
