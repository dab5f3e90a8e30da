#include "model/vq-decoder.h"

#include "model/layers.h"

#include <algorithm>

namespace mb {

vq_decoder_state::vq_decoder_state(backend & be, const vq_hparams & hp, const cond_decoder_hparams & dhp,
                                   int64_t max_tokens_, int64_t lanes_)
    : max_tokens(max_tokens_), lanes(lanes_), dec(be, dhp, max_tokens_ * lanes_) {
    const int64_t T = max_tokens * lanes;       // tokens of every lane
    const int64_t F = T * hp.frames_per_token;
    state_arena   a;
    a.add(tokens, T * hp.n_tok_head);
    a.add(codes, T * hp.code_dim);
    a.add(ext, F * hp.ext_dim);
    a.add(tgt, F * hp.tgt_dim);
    a.add(has_tgt, F);
    a.add(y, F * hp.out_dim);
    tgt_rows.add_to(a, F / 4, hp.tgt_dim);    // 16 of a lane's 64 frames
    mem = a.allocate(be);
}

vq_decoder vq_decoder::load(const tensor_source & src, backend & be) {
    vq_decoder    m;
    weight_loader wl{src, be, m.weights};
    vq_hparams &  hp = m.hp;

    // codebook [H, C, head_dim]
    const tensor_view & cb = require_any_f32(src, "quantizer.vq._codebook.embed");
    if (cb.n_dims != 3 || cb.ne[0] < 1 || cb.ne[1] < 1 || cb.ne[2] < 1) {
        fail_incompatible(src, "tensor 'quantizer.vq._codebook.embed' has shape " +
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
        fail_incompatible(src, "motionbricks.dilation_growth " + std::to_string(growth) +
                               " out of range 1..64");
    }
    m.dec = cond_decoder::load(wl, "decoder.", (int64_t) growth);
    if (m.dec.hp.c_in != hp.code_dim) {
        fail_incompatible(src, "decoder input width " + std::to_string(m.dec.hp.c_in) +
                               " differs from the code width " + std::to_string(hp.code_dim));
    }
    if (m.dec.hp.ext_dim == 0 || m.dec.hp.tgt_dim == 0) {
        fail_incompatible(src, "decoder lacks external or target condition blocks");
    }
    hp.frames_per_token = m.dec.hp.frames_per_pos();
    hp.out_dim          = m.dec.hp.c_out;
    hp.ext_dim          = m.dec.hp.ext_dim;
    hp.tgt_dim          = m.dec.hp.tgt_dim;
    return m;
}

void vq_decoder::check_size(const vq_decoder_state & st, int64_t n, int64_t n_batch) const {
    if (n < 1 || n > st.max_tokens || n_batch < 1 || n_batch > st.lanes) {
        throw mb::error(mb::status::invalid_argument, "vq decoder: " + std::to_string(n_batch) + " × " +
                                    std::to_string(n) + " tokens, state holds 1.." + std::to_string(st.lanes) +
                                    " × 1.." + std::to_string(st.max_tokens));
    }
}

void vq_decoder::upload_conditions(backend & be, vq_decoder_state & st, int64_t n, int64_t n_batch,
                                   const float * ext, const float * tgt, const uint8_t * has_tgt) const {
    check_size(st, n, n_batch);
    const int64_t F = n_batch * n * hp.frames_per_token;
    if (ext) be.set(st.ext, ext, F * hp.ext_dim);
    if (has_tgt) {
        upload_selected_rows(be, tgt, has_tgt, F, hp.tgt_dim, st.tgt, st.tgt_rows);
        be.set(st.has_tgt, has_tgt, F);
    }
}

void vq_decoder::run_decoder(backend & be, vq_decoder_state & st, int64_t n, int64_t n_batch, bool has_target,
                             float * y) const {
    // [n, code_dim] → decoder → [4n, out_dim], computed on the n valid tokens of every lane
    run_ops(be, {}, k_rec_vq | uint64_t(n_batch) << 8 | uint64_t(n) << 1 | (has_target ? 1u : 0u), [&] {
        dec.forward(be, st.codes, n, n, st.ext, st.tgt,
                    has_target ? bptr<const uint8_t>(st.has_tgt) : bptr<const uint8_t>(), st.y, st.dec, n_batch);
    });
    // null y: the result stays in st.y (predict's finish step reads it on the backend)
    if (y) be.get(bptr<const float>(st.y), y, n_batch * n * hp.frames_per_token * hp.out_dim);
}

void vq_decoder::decode_codes(backend & be, vq_decoder_state & st, const float * codes, int64_t n, const float * ext,
                              const float * tgt, const uint8_t * has_tgt, float * y) const {
    upload_conditions(be, st, n, 1, ext, tgt, has_tgt);
    be.set(st.codes, codes, n * hp.code_dim);
    run_decoder(be, st, n, 1, has_tgt != nullptr, y);
}

void vq_decoder::decode(backend & be, vq_decoder_state & st, const int32_t * tokens, int64_t n, const float * ext,
                        const float * tgt, const uint8_t * has_tgt, float * y, const tap_fn & tap,
                        int64_t n_batch) const {
    check_size(st, n, n_batch);
    const int64_t T = n_batch * n;      // tokens of every lane
    for (int64_t i = 0; i < T * hp.n_tok_head; ++i) {
        if (tokens[i] < 0 || tokens[i] >= hp.n_code) {
            throw mb::error(mb::status::invalid_argument, "vq decoder: token " + std::to_string(tokens[i]) + " at (" +
                                        std::to_string(i / hp.n_tok_head) + ", " + std::to_string(i % hp.n_tok_head) +
                                        ") outside 0.." + std::to_string(hp.n_code - 1));
        }
    }
    be.set(st.tokens, tokens, T * hp.n_tok_head);
    decode(be, st, st.tokens, n, ext, tgt, has_tgt, y, n_batch, tap);
}

void vq_decoder::decode(backend & be, vq_decoder_state & st, bptr<const int32_t> tokens, int64_t n, const float * ext,
                        const float * tgt, const uint8_t * has_tgt, float * y, int64_t n_batch, const tap_fn & tap) const {
    upload_conditions(be, st, n, n_batch, ext, tgt, has_tgt);
    // codes[p] = concat_h codebook[h, tokens[p, h]]   [n, H·head_dim], head-major
    be.embed_heads(codebook, hp.n_tok_head, hp.n_code, hp.head_dim, tokens, n_batch * n * hp.n_tok_head, st.codes);
    tap_f32(tap, be, "decoder_codes", st.codes, {n, hp.code_dim});
    run_decoder(be, st, n, n_batch, has_tgt != nullptr, y);
}

} // namespace mb
