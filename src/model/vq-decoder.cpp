#include "model/vq-decoder.h"

#include <algorithm>
#include <stdexcept>

namespace mb {

vq_decoder_state::vq_decoder_state(const vq_hparams & hp, const cond_decoder_hparams & dhp, int64_t max_tokens)
    : codes((size_t) (max_tokens * hp.code_dim), 0.0f), dec(dhp, max_tokens) {}

vq_decoder vq_decoder::load(const tensor_source & src) {
    vq_decoder m;
    vq_hparams & hp = m.hp;

    // codebook [H, C, head_dim]
    const tensor_view & cb = require_any_f32(src, "quantizer.vq._codebook.embed");
    if (cb.n_dims != 3 || cb.ne[0] < 1 || cb.ne[1] < 1 || cb.ne[2] < 1) {
        throw std::runtime_error(src.origin() + ": tensor 'quantizer.vq._codebook.embed' has shape " +
                                 torch_shape_string(cb) + ", expected [heads, codes, head_dim]");
    }
    hp.n_tok_head = cb.ne[2];
    hp.n_code     = cb.ne[1];
    hp.head_dim   = cb.ne[0];
    hp.code_dim   = hp.n_tok_head * hp.head_dim;
    m.codebook    = cb.f32();

    // conv decoder; its input width must be the concatenated code
    const uint64_t growth = src.meta_uint("motionbricks.dilation_growth").value_or(3);
    if (growth < 1 || growth > 64) {
        throw std::runtime_error(src.origin() + ": motionbricks.dilation_growth " + std::to_string(growth) +
                                 " out of range 1..64");
    }
    m.dec = cond_decoder::load(src, "decoder.", (int64_t) growth);
    if (m.dec.hp.c_in != hp.code_dim) {
        throw std::runtime_error(src.origin() + ": decoder input width " + std::to_string(m.dec.hp.c_in) +
                                 " differs from the code width " + std::to_string(hp.code_dim));
    }
    if (m.dec.hp.ext_dim == 0 || m.dec.hp.tgt_dim == 0) {
        throw std::runtime_error(src.origin() + ": decoder lacks external or target condition blocks");
    }
    hp.frames_per_token = m.dec.hp.frames_per_pos();
    hp.out_dim          = m.dec.hp.c_out;
    hp.ext_dim          = m.dec.hp.ext_dim;
    hp.tgt_dim          = m.dec.hp.tgt_dim;
    return m;
}

void vq_decoder::dequantise(const int32_t * tokens, int64_t n, float * codes) const {
    // codes[p] = concat_h codebook[h, tokens[p, h]]   [n, H·head_dim], head-major
    for (int64_t p = 0; p < n; ++p) {
        for (int64_t h = 0; h < hp.n_tok_head; ++h) {
            const int32_t t = tokens[p * hp.n_tok_head + h];
            if (t < 0 || t >= hp.n_code) {
                throw mb::error(mb::status::invalid_argument, "vq decoder: token " + std::to_string(t) + " at (" + std::to_string(p) +
                                            ", " + std::to_string(h) + ") outside 0.." +
                                            std::to_string(hp.n_code - 1));
            }
            const float * e = codebook + (h * hp.n_code + t) * hp.head_dim;
            std::copy(e, e + hp.head_dim, codes + p * hp.code_dim + h * hp.head_dim);
        }
    }
}

void vq_decoder::decode_codes(backend & be, vq_decoder_state & st, const float * codes, int64_t n, const float * ext,
                              const float * tgt, const uint8_t * has_tgt, float * y) const {
    // [n, code_dim] → decoder → [4n, out_dim], computed on the n valid tokens
    dec.forward(be, codes, n, n, ext, tgt, has_tgt, y, st.dec);
}

void vq_decoder::decode(backend & be, vq_decoder_state & st, const int32_t * tokens, int64_t n, const float * ext,
                        const float * tgt, const uint8_t * has_tgt, float * y) const {
    if (n < 1 || n > st.dec.max_pos) {
        throw mb::error(mb::status::invalid_argument, "vq decoder: " + std::to_string(n) + " tokens, state holds 1.." +
                                    std::to_string(st.dec.max_pos));
    }
    dequantise(tokens, n, st.codes.data());
    decode_codes(be, st, st.codes.data(), n, ext, tgt, has_tgt, y);
}

} // namespace mb
