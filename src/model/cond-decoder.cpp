#include "model/cond-decoder.h"

#include <algorithm>
#include <stdexcept>

namespace mb {
namespace {

std::string num(int64_t v) {
    return std::to_string(v);
}

// x[c, t] ← 0 for t ≥ n_valid (upstream multiplies by token_mask[:, None, :])
void apply_mask(float * x, int64_t c, int64_t t, int64_t n_valid) {
    if (n_valid >= t) return;
    for (int64_t i = 0; i < c; ++i) std::fill(x + i * t + n_valid, x + (i + 1) * t, 0.0f);
}

void conv(backend & be, const conv_weights & w, const float * x, int64_t t, int64_t dilation, float * y) {
    be.conv1d(x, w.c_in, t, w.weight, w.bias, w.c_out, w.k, dilation, y);
}

} // namespace

cond_decoder_state::cond_decoder_state(const cond_decoder_hparams & hp, int64_t max_pos_) : max_pos(max_pos_) {
    const int64_t frames = max_pos * hp.frames_per_pos();
    const int64_t ch     = std::max({hp.width, hp.c_in, hp.c_out});
    h.assign((size_t) (ch * frames), 0.0f);
    t0.assign((size_t) (ch * frames), 0.0f);
    t1.assign((size_t) (ch * frames), 0.0f);
    rows.assign((size_t) (frames * (hp.width + hp.ext_dim)), 0.0f);
    tc.assign((size_t) (frames * hp.width), 0.0f);
}

cond_decoder cond_decoder::load(const tensor_source & src, const std::string & prefix, int64_t dilation_growth) {
    cond_decoder d;
    auto & hp = d.hp;
    if (dilation_growth < 1 || dilation_growth > 64) {
        throw std::runtime_error(src.origin() + ": dilation growth " + num(dilation_growth) + " out of range 1..64");
    }
    hp.dilation_growth = dilation_growth;

    // model.0: input conv, gives c_in and width
    d.conv_in = load_conv(src, prefix + "model.0", 0, 0, 3);
    hp.c_in   = d.conv_in.c_in;
    hp.width  = d.conv_in.c_out;

    // stage count and resnet depth from which tensors exist
    while (src.find(prefix + "model." + num(2 + hp.down_t) + ".2.weight")) ++hp.down_t;
    while (src.find(prefix + "model.2.0.model." + num(hp.depth) + ".conv1.weight")) ++hp.depth;
    if (hp.down_t < 1 || hp.down_t > 6 || hp.depth < 1 || hp.depth > 8) {
        throw std::runtime_error(src.origin() + ": '" + prefix + "' has " + num(hp.down_t) + " upsampling stages and " +
                                 num(hp.depth) + " resnet blocks; expected 1..6 and 1..8");
    }
    const int64_t w = hp.width, F = hp.frames_per_pos();
    if (w % F != 0) {
        throw std::runtime_error(src.origin() + ": '" + prefix + "' width " + num(w) + " not divisible by " + num(F));
    }

    // condition widths from the first blocks (absent blocks = no such condition)
    const std::string ext0 = prefix + "external_cond_blocks.0.weight";
    if (const tensor_view * e = src.find(ext0)) {
        const int64_t n_in = e->n_dims == 2 ? e->ne[0] : 0;
        if (n_in <= w || (n_in - w) % F != 0) {
            throw std::runtime_error(src.origin() + ": tensor '" + ext0 + "' has shape " + torch_shape_string(*e) +
                                     ", expected [" + num(w) + ", " + num(F) + "·ext_dim + " + num(w) + "]");
        }
        hp.ext_dim = (n_in - w) / F;
    }
    const std::string tgt0 = prefix + "target_cond_blocks.0.weight";
    if (const tensor_view * t = src.find(tgt0)) {
        if (t->n_dims != 2) {
            throw std::runtime_error(src.origin() + ": tensor '" + tgt0 + "' must be 2-D");
        }
        hp.tgt_dim = t->ne[0];
    }
    // cond_fusion_last_layer = True would add one more block of each kind
    if (src.find(prefix + "external_cond_blocks." + num(2 * hp.down_t) + ".weight") ||
        src.find(prefix + "target_cond_blocks." + num(2 * hp.down_t) + ".weight")) {
        throw std::runtime_error(src.origin() + ": '" + prefix + "' has condition blocks at the last layer "
                                 "(cond_fusion_last_layer), which is not supported");
    }

    for (int64_t i = 0; i < hp.down_t; ++i) {
        cond_decoder_stage  st;
        const std::string   sp = prefix + "model." + num(2 + i) + ".";
        const int64_t       n  = int64_t(1) << (hp.down_t - i);
        for (int64_t il = 0; il < hp.depth; ++il) {
            res_block_weights rb;
            const std::string bp = sp + "0.model." + num(il) + ".";
            rb.conv1 = load_conv(src, bp + "conv1", w, w, 3);
            rb.conv2 = load_conv(src, bp + "conv2", w, w, 1);
            int64_t dil = 1;
            for (int64_t k = 0; k < hp.depth - 1 - il; ++k) dil *= hp.dilation_growth;
            rb.dilation = dil;
            st.res.push_back(rb);
        }
        if (src.find(sp + "0.model." + num(hp.depth) + ".conv1.weight")) {
            throw std::runtime_error(src.origin() + ": '" + sp + "0' has more resnet blocks than '" + prefix +
                                     "model.2.0'");
        }
        st.conv = load_conv(src, sp + "2", w, w, 3);
        if (hp.ext_dim > 0) {
            st.ext = load_linear(src, prefix + "external_cond_blocks." + num(2 * i), w, n * hp.ext_dim + w);
        }
        if (hp.tgt_dim > 0) {
            st.tgt = load_linear(src, prefix + "target_cond_blocks." + num(2 * i), w / n, hp.tgt_dim);
        }
        d.stages.push_back(st);
    }
    d.conv_mid = load_conv(src, prefix + "model." + num(2 + hp.down_t), w, w, 3);
    d.conv_out = load_conv(src, prefix + "model." + num(4 + hp.down_t), 0, w, 3);
    hp.c_out   = d.conv_out.c_out;
    if (src.find(prefix + "model." + num(5 + hp.down_t) + ".weight")) {
        throw std::runtime_error(src.origin() + ": '" + prefix + "' has layers after model." + num(4 + hp.down_t));
    }
    return d;
}

void cond_decoder::forward(backend & be, const float * x, int64_t n_pos, int64_t n_valid, const float * ext,
                           const float * tgt, const uint8_t * has_tgt, float * y, cond_decoder_state & st) const {
    if (n_pos < 1 || n_pos > st.max_pos || n_valid < 0 || n_valid > n_pos) {
        throw mb::error(mb::status::invalid_argument, "cond_decoder: " + num(n_pos) + " positions (" + num(n_valid) +
                                    " valid), state holds 1.." + num(st.max_pos));
    }
    if ((hp.ext_dim > 0 && !ext) || (hp.tgt_dim > 0 && has_tgt && !tgt)) {
        throw mb::error(mb::status::invalid_argument, "cond_decoder: missing external or target condition");
    }
    const int64_t w = hp.width;
    float *       h = st.h.data();
    float *       t0 = st.t0.data();
    float *       t1 = st.t1.data();

    // input: x[n_pos, c_in] → masked NCW [c_in, n_pos]
    for (int64_t p = 0; p < n_pos; ++p) {
        for (int64_t c = 0; c < hp.c_in; ++c) t0[c * n_pos + p] = p < n_valid ? x[p * hp.c_in + c] : 0.0f;
    }
    // model.0 + ReLU: [c_in, P] → [width, P], k3 p1
    conv(be, conv_in, t0, n_pos, 1, h);
    relu_inplace(h, w * n_pos);

    int64_t P  = n_pos;     // positions at this resolution
    int64_t nv = n_valid;   // valid positions at this resolution
    for (int64_t i = 0; i < hp.down_t; ++i) {
        const cond_decoder_stage & s = stages[(size_t) i];
        const int64_t n = int64_t(1) << (hp.down_t - i);   // frames per position
        const int64_t frames = P * n;
        const int64_t wn = w / n;                           // channels per frame

        // target condition: frame f = p·n + j takes channels [j·w/n, (j+1)·w/n) of position p
        if (hp.tgt_dim > 0 && has_tgt) {
            float * tc = st.tc.data();
            be.linear(tgt, frames, hp.tgt_dim, s.tgt.weight, s.tgt.bias, wn, tc);   // [frames, w/n]
            relu_inplace(tc, frames * wn);
            for (int64_t f = 0; f < frames; ++f) {
                if (!has_tgt[f]) continue;
                const int64_t p = f / n, j = f % n;
                for (int64_t c = 0; c < wn; ++c) h[(j * wn + c) * P + p] = tc[f * wn + c];
            }
        }

        // external condition fusion per position: [h (w), ext frames p·n..p·n+n−1 (n·E)] → w, ReLU
        if (hp.ext_dim > 0) {
            const int64_t row = w + n * hp.ext_dim;
            float *       r   = st.rows.data();
            for (int64_t p = 0; p < P; ++p) {
                float * dst = r + p * row;
                for (int64_t c = 0; c < w; ++c) dst[c] = h[c * P + p];
                std::copy(ext + p * n * hp.ext_dim, ext + (p + 1) * n * hp.ext_dim, dst + w);
            }
            be.linear(r, P, row, s.ext.weight, s.ext.bias, w, t0);   // [P, w]
            for (int64_t p = 0; p < P; ++p) {
                for (int64_t c = 0; c < w; ++c) h[c * P + p] = std::max(t0[p * w + c], 0.0f);
            }
        }

        // Resnet1D: pre-activation blocks, dilations growth^(depth−1) … 1
        for (const res_block_weights & rb : s.res) {
            apply_mask(h, w, P, nv);                        // x = x·m; x0 = x
            for (int64_t c = 0; c < w * P; ++c) t0[c] = std::max(h[c], 0.0f);
            apply_mask(t0, w, P, nv);
            conv(be, rb.conv1, t0, P, rb.dilation, t1);     // k3, padding = dilation
            relu_inplace(t1, w * P);
            apply_mask(t1, w, P, nv);
            conv(be, rb.conv2, t1, P, 1, t0);               // k1
            for (int64_t c = 0; c < w * P; ++c) h[c] = t0[c] + h[c];
            apply_mask(h, w, P, nv);
        }

        // nearest ×2 upsample: [w, P] → [w, 2P]; the mask doubles with it
        for (int64_t c = 0; c < w; ++c) {
            for (int64_t t = 0; t < P; ++t) t1[c * 2 * P + 2 * t] = t1[c * 2 * P + 2 * t + 1] = h[c * P + t];
        }
        P *= 2;
        nv *= 2;
        apply_mask(t1, w, P, nv);
        // model.<2+i>.2: k3 p1
        conv(be, s.conv, t1, P, 1, h);
    }

    // model.<2+down_t> + ReLU, then model.<4+down_t>: [w, 4·n_pos] → [c_out, 4·n_pos]
    apply_mask(h, w, P, nv);
    conv(be, conv_mid, h, P, 1, t0);
    relu_inplace(t0, w * P);
    apply_mask(t0, w, P, nv);
    conv(be, conv_out, t0, P, 1, t1);
    apply_mask(t1, hp.c_out, P, nv);

    // output transposed to frame-major [n_pos·F, c_out]
    for (int64_t c = 0; c < hp.c_out; ++c) {
        for (int64_t t = 0; t < P; ++t) y[t * hp.c_out + c] = t1[c * P + t];
    }
}

} // namespace mb
