#include "model/cond-decoder.h"

#include <algorithm>

namespace mb {
namespace {

std::string num(int64_t v) {
    return std::to_string(v);
}

void conv(backend & be, const conv_weights & w, bptr<const float> x, int64_t t, int64_t dilation, bptr<float> y,
          int64_t n_batch) {
    be.conv1d(x, w.c_in, t, w.weight, w.bias, w.c_out, w.k, dilation, y, n_batch);
}

// conv then ReLU (one op: a backend may apply the ReLU in the product's epilogue)
void conv_relu(backend & be, const conv_weights & w, bptr<const float> x, int64_t t, int64_t dilation, bptr<float> y,
               int64_t n_batch) {
    be.conv1d_act(x, w.c_in, t, w.weight, w.bias, w.c_out, w.k, dilation, 0.0f, y, n_batch);
}

} // namespace

cond_decoder_state::cond_decoder_state(backend & be, const cond_decoder_hparams & hp, int64_t max_pos_)
    : max_pos(max_pos_) {
    const int64_t frames = max_pos * hp.frames_per_pos();
    const int64_t ch     = std::max({hp.width, hp.c_in, hp.c_out});
    state_arena   a;
    a.add(h, ch * frames);
    a.add(t0, ch * frames);
    a.add(t1, ch * frames);
    a.add(rows, frames * (hp.width + hp.ext_dim));
    a.add(tc, frames * hp.width);
    mem = a.allocate(be);
    // every conv has at most ch channels in and out, the full frame count and kernel 3
    be.reserve_conv1d(ch, frames, ch, k_conv_kernel);
}

cond_decoder cond_decoder::load(weight_loader & wl, const std::string & prefix, int64_t dilation_growth) {
    const tensor_source & src = wl.src;
    cond_decoder d;
    auto & hp = d.hp;
    if (dilation_growth < 1 || dilation_growth > 64) {
        fail_incompatible(src, "dilation growth " + num(dilation_growth) + " out of range 1..64");
    }
    hp.dilation_growth = dilation_growth;

    // model.0: input conv, gives c_in and width
    d.conv_in = load_conv(wl, prefix + "model.0", 0, 0, k_conv_kernel);
    hp.c_in   = d.conv_in.c_in;
    hp.width  = d.conv_in.c_out;

    // stage count and resnet depth from which tensors exist
    while (src.find(prefix + "model." + num(2 + hp.down_t) + ".2.weight")) ++hp.down_t;
    while (src.find(prefix + "model.2.0.model." + num(hp.depth) + ".conv1.weight")) ++hp.depth;
    if (hp.down_t < 1 || hp.down_t > 6 || hp.depth < 1 || hp.depth > 8) {
        fail_incompatible(src, "'" + prefix + "' has " + num(hp.down_t) + " upsampling stages and " +
                               num(hp.depth) + " resnet blocks; expected 1..6 and 1..8");
    }
    const int64_t w = hp.width, F = hp.frames_per_pos();
    if (w % F != 0) {
        fail_incompatible(src, "'" + prefix + "' width " + num(w) + " not divisible by " + num(F));
    }

    // condition widths from the first blocks (absent blocks = no such condition)
    const std::string ext0 = prefix + "external_cond_blocks.0.weight";
    if (const tensor_view * e = src.find(ext0)) {
        const int64_t n_in = e->n_dims == 2 ? e->ne[0] : 0;
        if (n_in <= w || (n_in - w) % F != 0) {
            fail_incompatible(src, "tensor '" + ext0 + "' has shape " + torch_shape_string(*e) +
                                   ", expected [" + num(w) + ", " + num(F) + "·ext_dim + " + num(w) + "]");
        }
        hp.ext_dim = (n_in - w) / F;
    }
    const std::string tgt0 = prefix + "target_cond_blocks.0.weight";
    if (const tensor_view * t = src.find(tgt0)) {
        if (t->n_dims != 2) {
            fail_incompatible(src, "tensor '" + tgt0 + "' must be 2-D");
        }
        hp.tgt_dim = t->ne[0];
    }
    // cond_fusion_last_layer = True would add one more block of each kind
    if (src.find(prefix + "external_cond_blocks." + num(2 * hp.down_t) + ".weight") ||
        src.find(prefix + "target_cond_blocks." + num(2 * hp.down_t) + ".weight")) {
        fail_incompatible(src, "'" + prefix + "' has condition blocks at the last layer "
                               "(cond_fusion_last_layer), which is not supported");
    }

    for (int64_t i = 0; i < hp.down_t; ++i) {
        cond_decoder_stage  st;
        const std::string   sp = prefix + "model." + num(2 + i) + ".";
        const int64_t       n  = int64_t(1) << (hp.down_t - i);
        for (int64_t il = 0; il < hp.depth; ++il) {
            const std::string  bp = sp + "0.model." + num(il) + ".";
            const conv_weights c1 = load_conv(wl, bp + "conv1", w, w, k_conv_kernel);
            const conv_weights c2 = load_conv(wl, bp + "conv2", w, w, 1);
            int64_t dil = 1;
            for (int64_t k = 0; k < hp.depth - 1 - il; ++k) dil *= hp.dilation_growth;
            st.res.push_back({c1.weight, c1.bias, c1.k, dil, c2.weight, c2.bias, c2.k});
        }
        if (src.find(sp + "0.model." + num(hp.depth) + ".conv1.weight")) {
            fail_incompatible(src, "'" + sp + "0' has more resnet blocks than '" + prefix +
                                   "model.2.0'");
        }
        st.conv = load_conv(wl, sp + "2", w, w, k_conv_kernel);
        if (hp.ext_dim > 0) {
            st.ext = load_linear(wl, prefix + "external_cond_blocks." + num(2 * i), w, n * hp.ext_dim + w);
        }
        if (hp.tgt_dim > 0) {
            st.tgt = load_linear(wl, prefix + "target_cond_blocks." + num(2 * i), w / n, hp.tgt_dim);
        }
        d.stages.push_back(st);
    }
    d.conv_mid = load_conv(wl, prefix + "model." + num(2 + hp.down_t), w, w, k_conv_kernel);
    d.conv_out = load_conv(wl, prefix + "model." + num(4 + hp.down_t), 0, w, k_conv_kernel);
    hp.c_out   = d.conv_out.c_out;
    if (src.find(prefix + "model." + num(5 + hp.down_t) + ".weight")) {
        fail_incompatible(src, "'" + prefix + "' has layers after model." + num(4 + hp.down_t));
    }
    return d;
}

void cond_decoder::forward(backend & be, bptr<const float> x, int64_t n_pos, int64_t n_valid, bptr<const float> ext,
                           bptr<const float> tgt, bptr<const uint8_t> has_tgt, bptr<float> y,
                           cond_decoder_state & st, int64_t B) const {
    if (n_pos < 1 || B < 1 || n_pos * B > st.max_pos || n_valid < 0 || n_valid > n_pos) {
        throw mb::error(mb::status::invalid_argument, "cond_decoder: " + num(B) + " × " + num(n_pos) + " positions (" +
                                    num(n_valid) + " valid), state holds 1.." + num(st.max_pos));
    }
    if ((hp.ext_dim > 0 && !ext) || (hp.tgt_dim > 0 && has_tgt && !tgt)) {
        throw mb::error(mb::status::invalid_argument, "cond_decoder: missing external or target condition");
    }
    const int64_t     w  = hp.width;
    const bptr<float> h  = st.h;
    const bptr<float> t0 = st.t0;
    const bptr<float> t1 = st.t1;

    // a stage's conditions need only the decoder's inputs, so each is issued as a branch one
    // stage ahead (once the stage before has read the scratch it writes), joined where it is used:
    // the target condition [frames, w/n] into tc, the external condition's columns of rows
    const auto target = [&, this](int64_t i, int64_t Pi) {
        if (!(hp.tgt_dim > 0 && has_tgt) || i >= hp.down_t) return -1;
        const int64_t n = int64_t(1) << (hp.down_t - i);
        return be.branch([&be, &st, &s = stages[(size_t) i], tgt, B, Pi, n, w, td = hp.tgt_dim] {
            be.linear_act(tgt, B * Pi * n, td, s.tgt.weight, s.tgt.bias, w / n, 0.0f, st.tc);
        });
    };
    const auto external = [&, this](int64_t i, int64_t Pi) {
        if (hp.ext_dim <= 0 || i >= hp.down_t) return -1;
        const int64_t n = int64_t(1) << (hp.down_t - i), e = n * hp.ext_dim;
        return be.branch([&be, &st, ext, B, Pi, e, w] { be.copy_rows(ext, e, B * Pi, e, st.rows + w, w + e); });
    };
    int tgt_branch = target(0, n_pos), ext_branch = external(0, n_pos);

    // every lane is NCW [channels, positions] at its own offset; row-wise ops take all B lanes' rows
    // input: x[n_pos, c_in] → masked NCW [c_in, n_pos]
    be.transpose(x, n_pos, hp.c_in, t0, B);
    be.mask_cols(B * hp.c_in, n_pos, n_valid, t0);
    // model.0 + ReLU: [c_in, P] → [width, P], k3 p1
    conv_relu(be, conv_in, t0, n_pos, 1, h, B);

    int64_t P  = n_pos;     // positions at this resolution
    int64_t nv = n_valid;   // valid positions at this resolution
    for (int64_t i = 0; i < hp.down_t; ++i) {
        const cond_decoder_stage & s = stages[(size_t) i];
        const int64_t n = int64_t(1) << (hp.down_t - i);   // frames per position
        const int64_t wn = w / n;                           // channels per frame

        // target condition: frame f = p·n + j takes channels [j·w/n, (j+1)·w/n) of position p
        if (hp.tgt_dim > 0 && has_tgt) {
            be.join_branch(tgt_branch);
            be.replace_frames(st.tc, has_tgt, P, n, wn, h, B);
            tgt_branch = target(i + 1, 2 * P);
        }

        // external condition fusion per position: [h (w), ext frames p·n..p·n+n−1 (n·E)] → w, ReLU
        if (hp.ext_dim > 0) {
            const int64_t row = w + n * hp.ext_dim;
            be.transpose(h, w, P, st.rows, B, row);                         // [P, w] into rows' first columns
            be.join_branch(ext_branch);
            be.linear_act(st.rows, B * P, row, s.ext.weight, s.ext.bias, w, 0.0f, t0);   // [P, w]
            ext_branch = external(i + 1, 2 * P);
            be.transpose(t0, P, w, h, B);                                   // [w, P]
        }

        // Resnet1D: pre-activation blocks, dilations growth^(depth−1) … 1
        be.res_blocks(h, t0, t1, w, P, nv, s.res.data(), (int64_t) s.res.size(), B);

        // nearest ×2 upsample: [w, P] → [w, 2P]; the mask doubles with it
        be.upsample2(h, B * w, P, t1);
        P *= 2;
        nv *= 2;
        be.mask_cols(B * w, P, nv, t1);
        // model.<2+i>.2: k3 p1 (the last stage's goes with the convs after it, below)
        if (i + 1 < hp.down_t) conv(be, s.conv, t1, P, 1, h, B);
    }

    // the last stage's conv, model.<2+down_t> + ReLU, then model.<4+down_t>: [w, 4·n_pos] → [c_out,
    // 4·n_pos], each output masked
    backend::conv_step steps[3];
    int64_t            n_steps = 0;
    if (hp.down_t > 0) {
        const conv_weights & c = stages.back().conv;
        steps[n_steps++]       = {c.weight, c.bias, c.c_in, c.c_out, c.k, 1, false, h};
    } else {
        be.mask_cols(B * w, P, nv, h);
    }
    steps[n_steps++] = {conv_mid.weight, conv_mid.bias, conv_mid.c_in, conv_mid.c_out, conv_mid.k, 1, true, t0};
    steps[n_steps++] = {conv_out.weight, conv_out.bias, conv_out.c_in, conv_out.c_out, conv_out.k, 1, false, t1};
    be.conv_chain(hp.down_t > 0 ? bptr<const float>(t1) : bptr<const float>(h), P, nv, steps, n_steps, B);

    // output transposed to frame-major [n_pos·F, c_out]
    be.transpose(t1, hp.c_out, P, y, B);
}

} // namespace mb
