#include "model/transformer.h"

#include <algorithm>

namespace mb {

transformer_state::transformer_state(backend & be, const transformer_hparams & hp, int64_t n_max_)
    : n_max(n_max_) {
    state_arena a;
    a.add(qkv, n_max * 3 * hp.n_embd);
    a.add(att, n_max * hp.n_embd);
    a.add(proj, n_max * hp.n_embd);
    a.add(ff, n_max * hp.n_ff);
    mem = a.allocate(be);
    be.reserve_attention(n_max);
}

transformer transformer::load(weight_loader & wl, const std::string & prefix, int64_t n_head) {
    const tensor_source & src = wl.src;
    transformer t;
    // sizes from layer 0
    const std::string l0   = prefix + "layers.0.";
    const tensor_view & w1 = require_any_matrix(src, l0 + "linear1.weight");
    if (w1.n_dims != 2) {
        fail_incompatible(src, "tensor '" + l0 + "linear1.weight' must be 2-D, got " +
                               torch_shape_string(w1));
    }
    t.hp.n_ff   = w1.ne[1];
    t.hp.n_embd = w1.ne[0];
    t.hp.n_head = n_head;
    if (n_head <= 0 || t.hp.n_embd % n_head != 0) {
        fail_incompatible(src, "n_head " + std::to_string(n_head) + " does not divide n_embd " +
                               std::to_string(t.hp.n_embd) + " of '" + prefix + "'");
    }

    const int64_t d = t.hp.n_embd, f = t.hp.n_ff;
    for (int il = 0;; ++il) {
        const std::string p = prefix + "layers." + std::to_string(il) + ".";
        if (!src.find(p + "linear1.weight")) break;
        transformer_layer l;
        l.in_proj_weight  = wl.upload_matrix(require_matrix(src, p + "self_attn.in_proj_weight", {3 * d, d}));
        l.in_proj_bias    = wl.upload(require_f32(src, p + "self_attn.in_proj_bias", {3 * d}));
        l.out_proj_weight = wl.upload_matrix(require_matrix(src, p + "self_attn.out_proj.weight", {d, d}));
        l.out_proj_bias   = wl.upload(require_f32(src, p + "self_attn.out_proj.bias", {d}));
        l.linear1_weight  = wl.upload_matrix(require_matrix(src, p + "linear1.weight", {f, d}));
        l.linear1_bias    = wl.upload(require_f32(src, p + "linear1.bias", {f}));
        l.linear2_weight  = wl.upload_matrix(require_matrix(src, p + "linear2.weight", {d, f}));
        l.linear2_bias    = wl.upload(require_f32(src, p + "linear2.bias", {d}));
        l.norm1_weight    = wl.upload(require_f32(src, p + "norm1.weight", {d}));
        l.norm1_bias      = wl.upload(require_f32(src, p + "norm1.bias", {d}));
        l.norm2_weight    = wl.upload(require_f32(src, p + "norm2.weight", {d}));
        l.norm2_bias      = wl.upload(require_f32(src, p + "norm2.bias", {d}));
        t.layers.push_back(l);
    }
    t.hp.n_layer = (int64_t) t.layers.size();
    return t;
}

void transformer::forward(backend & be, bptr<float> x, int64_t n_lane, transformer_state & st, int64_t n_batch) const {
    if (n_lane < 1 || n_batch < 1 || n_lane * n_batch > st.n_max) {
        throw mb::error(mb::status::invalid_argument, "transformer: " + std::to_string(n_batch) + " × " +
                                    std::to_string(n_lane) + " rows, state holds 1.." + std::to_string(st.n_max));
    }
    const int64_t d = hp.n_embd, f = hp.n_ff;
    const int64_t n = n_lane * n_batch;     // rows of every lane together (all but attention are per row)
    constexpr float eps = 1e-5f;

    for (const transformer_layer & l : layers) {
        // self-attention: qkv [n, 3d] → heads [n, d] → out_proj [n, d]
        {
            be.linear(x, n, d, l.in_proj_weight, l.in_proj_bias, 3 * d, st.qkv);
            be.attention(st.qkv, n_lane, d, hp.n_head, {}, st.att, n_batch);
            be.linear(st.att, n, d, l.out_proj_weight, l.out_proj_bias, d, st.proj);
        }
        // x = norm1(x + attention)
        be.add_layer_norm(x, st.proj, n, d, l.norm1_weight, l.norm1_bias, eps);
        // feed-forward: linear2(relu(linear1(x))) [n, n_ff] → [n, d]
        {
            be.linear_act(x, n, d, l.linear1_weight, l.linear1_bias, f, 0.0f, st.ff);
            be.linear(st.ff, n, f, l.linear2_weight, l.linear2_bias, d, st.proj);
        }
        // x = norm2(x + ffn)
        be.add_layer_norm(x, st.proj, n, d, l.norm2_weight, l.norm2_bias, eps);
    }
}

} // namespace mb
