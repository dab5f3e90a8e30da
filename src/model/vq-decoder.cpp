#include "model/vq-decoder.h"

#include "model/layers.h"

#include <algorithm>
#include <stdexcept>

namespace mb {

vq_decoder_state::vq_decoder_state(backend & be, const vq_hparams & hp, const cond_decoder_hparams & dhp,
                                   int64_t max_tokens_)
    : max_tokens(max_tokens_), dec(be, dhp, max_tokens_) {
    const int64_t F = max_tokens * hp.frames_per_token;
    state_arena   a;
    a.add(tokens, max_tokens * hp.n_tok_head);
    a.add(codes, max_tokens * hp.code_dim);
    a.add(ext, F * hp.ext_dim);
    a.add(tgt, F * hp.tgt_dim);
    a.add(has_tgt, F);
    a.add(y, F * hp.out_dim);
    mem = a.allocate(be);
}

vq_decoder vq_decoder::load(const tensor_source & src, backend & be) {
    vq_decoder    m;
    weight_loader wl{src, be, m.weights};
    vq_hparams &  hp = m.hp;

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
    m.codebook    = wl.upload(cb);

    // conv decoder; its input width must be the concatenated code
    const uint64_t growth = src.meta_uint("motionbricks.dilation_growth").value_or(3);
    if (growth < 1 || growth > 64) {
        throw std::runtime_error(src.origin() + ": motionbricks.dilation_growth " + std::to_string(growth) +
                                 " out of range 1..64");
    }
    m.dec = cond_decoder::load(wl, "decoder.", (int64_t) growth);
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

void vq_decoder::upload_conditions(backend & be, vq_decoder_state & st, int64_t n, const float * ext,
                                   const float * tgt, const uint8_t * has_tgt) const {
    if (n < 1 || n > st.max_tokens) {
        throw mb::error(mb::status::invalid_argument, "vq decoder: " + std::to_string(n) + " tokens, state holds 1.." +
                                    std::to_string(st.max_tokens));
    }
    const int64_t F = n * hp.frames_per_token;
    be.set(st.ext, ext, F * hp.ext_dim);
    if (has_tgt) {
        be.set(st.tgt, tgt, F * hp.tgt_dim);
        be.set(st.has_tgt, has_tgt, F);
    }
}

void vq_decoder::run_decoder(backend & be, vq_decoder_state & st, int64_t n, bool has_target, float * y) const {
    // [n, code_dim] → decoder → [4n, out_dim], computed on the n valid tokens
    be.run_recorded(k_rec_vq | uint64_t(n) << 1 | (has_target ? 1u : 0u), [&] {
        dec.forward(be, st.codes, n, n, st.ext, st.tgt,
                    has_target ? bptr<const uint8_t>(st.has_tgt) : bptr<const uint8_t>(), st.y, st.dec);
    });
    be.get(bptr<const float>(st.y), y, n * hp.frames_per_token * hp.out_dim);
}

void vq_decoder::decode_codes(backend & be, vq_decoder_state & st, const float * codes, int64_t n, const float * ext,
                              const float * tgt, const uint8_t * has_tgt, float * y) const {
    upload_conditions(be, st, n, ext, tgt, has_tgt);
    be.set(st.codes, codes, n * hp.code_dim);
    run_decoder(be, st, n, has_tgt != nullptr, y);
}

void vq_decoder::decode(backend & be, vq_decoder_state & st, const int32_t * tokens, int64_t n, const float * ext,
                        const float * tgt, const uint8_t * has_tgt, float * y, const tap_fn & tap) const {
    upload_conditions(be, st, n, ext, tgt, has_tgt);
    for (int64_t i = 0; i < n * hp.n_tok_head; ++i) {
        if (tokens[i] < 0 || tokens[i] >= hp.n_code) {
            throw mb::error(mb::status::invalid_argument, "vq decoder: token " + std::to_string(tokens[i]) + " at (" +
                                        std::to_string(i / hp.n_tok_head) + ", " + std::to_string(i % hp.n_tok_head) +
                                        ") outside 0.." + std::to_string(hp.n_code - 1));
        }
    }
    // codes[p] = concat_h codebook[h, tokens[p, h]]   [n, H·head_dim], head-major
    be.set(st.tokens, tokens, n * hp.n_tok_head);
    be.embed_heads(codebook, hp.n_tok_head, hp.n_code, hp.head_dim, st.tokens, n * hp.n_tok_head, st.codes);
    tap_f32(tap, be, "decoder_codes", st.codes, {n, hp.code_dim});
    run_decoder(be, st, n, has_tgt != nullptr, y);
}

} // namespace mb
