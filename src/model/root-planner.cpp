#include "model/root-planner.h"

#include "backend/token-select.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace mb {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

std::string num(int64_t v) {
    return std::to_string(v);
}

// a free vector tensor [n] (n ≤ 0: any length, returned through n)
bptr<const float> load_vector(weight_loader & wl, const std::string & name, int64_t & n) {
    const tensor_source & src = wl.src;
    const tensor_view &   t   = require_any_f32(src, name);
    if (t.n_dims != 1 || (n > 0 && t.ne[0] != n)) {
        throw std::runtime_error(src.origin() + ": tensor '" + name + "' has shape " + torch_shape_string(t) +
                                 ", expected [" + (n > 0 ? num(n) : std::string("n")) + "]");
    }
    n = t.ne[0];
    return wl.upload(t);
}

uint64_t meta_or(const tensor_source & src, const char * key, uint64_t def) {
    return src.meta_uint(key).value_or(def);
}

} // namespace

root_planner root_planner::load(const tensor_source & src, backend & be) {
    root_planner  rp;
    weight_loader wl{src, be, rp.weights};
    root_hparams & hp = rp.hp;

    // transformers: widths from the shapes, head count from metadata
    const uint64_t n_head = meta_or(src, "motionbricks.n_head", 16);
    if (n_head < 1 || n_head > 4096) {
        throw std::runtime_error(src.origin() + ": motionbricks.n_head " + std::to_string(n_head) + " out of range");
    }
    rp.shared_tf = transformer::load(wl, "_shared_transformer_model.", int64_t(n_head));
    hp.n_embd         = rp.shared_tf.hp.n_embd;
    hp.n_head         = int64_t(n_head);
    hp.n_ff           = rp.shared_tf.hp.n_ff;
    hp.n_layer_shared = rp.shared_tf.hp.n_layer;
    const int64_t E   = hp.n_embd;
    if (src.find("_root_token_transformer_model.layers.0.linear1.weight")) {
        rp.token_tf = transformer::load(wl, "_root_token_transformer_model.", int64_t(n_head));
        if (rp.token_tf.hp.n_embd != E) {
            throw std::runtime_error(src.origin() + ": stage-2 transformer width " + num(rp.token_tf.hp.n_embd) +
                                     " differs from stage 1 (" + num(E) + ")");
        }
        hp.n_layer_token = rp.token_tf.hp.n_layer;
    }

    // per-frame projections and their "missing" embeddings
    rp.proj_local_pose  = load_linear(wl, "_proj_local_pose", 0, 0);
    rp.proj_local_root  = load_linear(wl, "_proj_local_root_value", 0, 0);
    rp.proj_global_root = load_linear(wl, "_proj_global_root_value", 0, 0);
    hp.pose_feat        = rp.proj_local_pose.n_out;
    hp.local_root_feat  = rp.proj_local_root.n_out;
    hp.global_root_feat = rp.proj_global_root.n_out;
    hp.pose_dim         = rp.proj_local_pose.n_in;
    hp.local_root_dim   = rp.proj_local_root.n_in;
    hp.global_root_dim  = rp.proj_global_root.n_in;
    if (hp.local_root_dim != 4 || hp.global_root_dim != 5) {
        throw std::runtime_error(src.origin() + ": root projections take " + num(hp.local_root_dim) + " / " +
                                 num(hp.global_root_dim) + " inputs, expected 4 (local root) / 5 (global root)");
    }
    rp.no_local_pose_emb  = load_vector(wl, "_no_local_pose_emb", hp.pose_feat);
    rp.no_local_root_emb  = load_vector(wl, "_no_local_root_emb", hp.local_root_feat);
    rp.no_global_root_emb = load_vector(wl, "_no_global_root_emb", hp.global_root_feat);
    int64_t e = E;
    rp.conv_no_frame_emb = load_vector(wl, "_conv_no_frame_emb", e);

    // context / target FCBlocks: concatenated features → E
    const int64_t feats = hp.pose_feat + hp.local_root_feat + hp.global_root_feat;
    rp.proj_start = load_fc_block(wl, "_proj_start_input.", feats, E);
    rp.proj_end   = load_fc_block(wl, "_proj_end_input.", feats, E);
    if (rp.proj_start.width() != rp.proj_end.width()) {
        throw std::runtime_error(src.origin() + ": _proj_start_input and _proj_end_input widths differ");
    }

    // slot embedding: 2 × frames per token rows
    const tensor_view & slots = require_any_f32(src, "_input_position_emb.weight");
    if (slots.n_dims != 2 || slots.ne[0] != E || slots.ne[1] < 2 || slots.ne[1] % 2 != 0 || slots.ne[1] > 64) {
        throw std::runtime_error(src.origin() + ": tensor '_input_position_emb.weight' has shape " +
                                 torch_shape_string(slots) + ", expected [2·frames_per_token, " + num(E) + "]");
    }
    hp.frames_per_token    = slots.ne[1] / 2;
    rp.input_position_emb  = wl.upload(slots);
    if (hp.frames_per_token != 4) {
        throw std::runtime_error(src.origin() + ": " + num(hp.n_slots()) + " constraint slots; predict uses 8");
    }

    // duration classes: classifier rows = counts + out-of-reach; input rows add "predict"
    rp.proj_logit = load_linear(wl, "_proj_num_token_output_logit", 0, E);
    hp.n_class    = rp.proj_logit.n_out;
    const tensor_view & pos = require_any_f32(src, "_position_emb.embed");
    if (pos.n_dims != 3 || pos.ne[0] != E || pos.ne[1] != 1) {
        throw std::runtime_error(src.origin() + ": tensor '_position_emb.embed' has shape " + torch_shape_string(pos) +
                                 ", expected [max_tokens, 1, " + num(E) + "]");
    }
    hp.max_tokens   = pos.ne[2];
    hp.min_tokens   = hp.max_tokens - (hp.n_class - 1) + 1;
    rp.position_emb = wl.upload(pos);
    if (hp.n_class < 2 || hp.min_tokens < 2 || hp.max_tokens > 64 || hp.n_class > int64_t(root_result{}.logits.size())) {
        throw std::runtime_error(src.origin() + ": " + num(hp.n_class) + " duration classes for " +
                                 num(hp.max_tokens) + " positions is inconsistent");
    }
    rp.input_num_tokens = wl.upload(require_f32(src, "_proj_input_num_tokens.weight", {hp.n_class + 1, E}));
    if (hp.n_layer_token > 0) {
        rp.middle_token_emb = wl.upload(require_f32(src, "_middle_token_emb.weight", {hp.n_class, E}));
    }

    // conv decoder: E channels per token in, global root per frame out, E-wide external condition
    const uint64_t growth = meta_or(src, "motionbricks.dilation_growth", 3);
    if (growth < 1 || growth > 64) {
        throw std::runtime_error(src.origin() + ": motionbricks.dilation_growth " + std::to_string(growth) +
                                 " out of range");
    }
    rp.conv_output = cond_decoder::load(wl, "_conv_output.", int64_t(growth));
    const cond_decoder_hparams & dh = rp.conv_output.hp;
    if (dh.c_in != E || dh.c_out != hp.global_root_dim || dh.ext_dim != E || dh.tgt_dim != hp.global_root_dim ||
        dh.frames_per_pos() != hp.frames_per_token) {
        throw std::runtime_error(src.origin() + ": _conv_output has c_in " + num(dh.c_in) + ", c_out " +
                                 num(dh.c_out) + ", external " + num(dh.ext_dim) + ", target " + num(dh.tgt_dim) +
                                 ", " + num(dh.frames_per_pos()) + " frames per token; expected " + num(E) + ", " +
                                 num(hp.global_root_dim) + ", " + num(E) + ", " + num(hp.global_root_dim) + ", " +
                                 num(hp.frames_per_token));
    }
    return rp;
}

root_planner_state::root_planner_state(backend & be, const root_planner & rp) {
    const root_hparams & hp = rp.hp;
    const int64_t E = hp.n_embd, S = hp.n_slots(), F = hp.frames_per_token * hp.max_tokens;
    const int64_t feats = hp.pose_feat + hp.local_root_feat + hp.global_root_feat;
    state_arena   a;
    a.add(global_root, S * hp.global_root_dim);
    a.add(local_root, S * hp.local_root_dim);
    a.add(poses, S * hp.pose_dim);
    a.add(has, 4 * S);
    a.add(emb, S * feats);
    a.add(tmp, S * std::max({hp.pose_feat, hp.local_root_feat, hp.global_root_feat}));
    a.add(mlp_a, hp.frames_per_token * rp.proj_start.width());
    a.add(mlp_b, hp.frames_per_token * rp.proj_start.width());
    a.add(frame, S * E);
    a.add(x1, (1 + S) * E);
    a.add(logits, hp.n_class);
    a.add(x2, (1 + S + hp.max_tokens) * E);
    a.add(ext, F * E);
    a.add(tgt, F * hp.global_root_dim);
    a.add(has_tgt, F);
    a.add(y, F * hp.global_root_dim);
    mem = a.allocate(be);
    transformer_hparams th = rp.shared_tf.hp;
    if (hp.n_layer_token > 0) th.n_ff = std::max(th.n_ff, rp.token_tf.hp.n_ff);
    tf  = transformer_state(be, th, 1 + S + hp.max_tokens);
    dec = cond_decoder_state(be, rp.conv_output.hp, hp.max_tokens);
    tgt_host.assign(size_t(F * hp.global_root_dim), 0.0f);
    has_tgt_host.assign(size_t(F), 0);
}

root_result root_planner::run(backend & be, root_planner_state & st, const root_inputs & in, const tap_fn & tap) const {
    const int64_t E = hp.n_embd, S = hp.n_slots(), P = hp.frames_per_token;
    const int64_t n_counts = hp.n_class - 1;    // real durations min..max
    if (in.num_tokens != 0 && (in.num_tokens < hp.min_tokens || in.num_tokens > hp.max_tokens)) {
        throw mb::error(mb::status::invalid_argument, "forced token count " + num(in.num_tokens) + " outside " + num(hp.min_tokens) +
                                    ".." + num(hp.max_tokens));
    }
    if (!in.global_root || !in.has_global || !in.local_root || !in.has_local || !in.poses || !in.has_pose) {
        throw mb::error(mb::status::invalid_argument, "root planner inputs missing");
    }

    auto t0 = clock_type::now();

    // inputs: constraints and their flags; a slot has a frame when anything of it is given
    {
        uint8_t has[4 * 8] = {};
        for (int64_t s = 0; s < S; ++s) {
            has[0 * S + s] = in.has_pose[s] ? 1 : 0;
            has[1 * S + s] = in.has_local[s] ? 1 : 0;
            has[2 * S + s] = in.has_global[s] ? 1 : 0;
            has[3 * S + s] = (in.has_pose[s] || in.has_global[s] || in.has_local[s]) ? 1 : 0;
        }
        be.set(st.global_root, in.global_root, S * hp.global_root_dim);
        be.set(st.local_root, in.local_root, S * hp.local_root_dim);
        be.set(st.poses, in.poses, S * hp.pose_dim);
        be.set(st.has, has, 4 * S);
    }

    // embeddings through the duration logits: one recording per duration row (the forced count
    // or the masked class)
    const int64_t feats = hp.pose_feat + hp.local_root_feat + hp.global_root_feat;
    const int64_t row   = in.num_tokens == 0 ? hp.masked_class() : in.num_tokens - hp.min_tokens;
    run_ops(be, tap, k_rec_root_a | uint64_t(row), [&] {
    // per-slot embeddings: projection where given, the learned "missing" vector elsewhere
    // [8, pose_feat | local_root_feat | global_root_feat]
    {
        struct part {
            const linear_weights & w;
            bptr<const float>      x;
            bptr<const uint8_t>    has;
            bptr<const float>      none;
            int64_t                offset;
        };
        const part parts[3] = {
            {proj_local_pose, st.poses, st.has, no_local_pose_emb, 0},
            {proj_local_root, st.local_root, st.has + S, no_local_root_emb, hp.pose_feat},
            {proj_global_root, st.global_root, st.has + 2 * S, no_global_root_emb, hp.pose_feat + hp.local_root_feat},
        };
        for (const part & p : parts) {
            be.linear(p.x, S, p.w.n_in, p.w.weight, p.w.bias, p.w.n_out, st.tmp);
            be.where_rows(p.has, st.tmp, p.w.n_out, p.none, 0, S, p.w.n_out, st.emb + p.offset, feats);
        }
    }

    // frame embeddings: FCBlock per half, [4, feats] → [4, E] each
    fc_block_forward(be, proj_start, st.emb, P, st.mlp_a, st.mlp_b, st.frame);
    fc_block_forward(be, proj_end, st.emb + P * feats, P, st.mlp_a, st.mlp_b, st.frame + P * E);

    // stage 1 input: [duration embedding, frames + slot embedding]  [1 + 8, E]
    {
        be.copy_rows(input_num_tokens + row * E, E, 1, E, st.x1, E);
        be.add(st.frame, input_position_emb, S * E, st.x1 + E);
    }
    tap_f32(tap, be, "root_shared_tf_in", st.x1, {1 + S, E});

    // stage 1: shared transformer (no mask), duration logits from row 0
    shared_tf.forward(be, st.x1, 1 + S, st.tf);
    tap_f32(tap, be, "root_shared_tf_out", st.x1, {1 + S, E});
    be.linear(st.x1, 1, E, proj_logit.weight, proj_logit.bias, hp.n_class, st.logits);
    });
    st.ms_embed = ms_since(t0);    // the embeddings and stage 1 are one recording now
    t0          = clock_type::now();
    root_result res;
    res.logits.fill(0.0f);
    be.get(bptr<const float>(st.logits), res.logits.data(), hp.n_class);
    // NaN logits would pick a class at random (often "out of reach"): name the real cause
    for (int64_t k = 0; k < hp.n_class; ++k) {
        if (!std::isfinite(res.logits[size_t(k)])) {
            throw mb::error(mb::status::compute_failed,
                            "the root planner's duration logits are not finite: its weights overflow or are not finite");
        }
    }

    // masks: out-of-reach unless allowed, disallowed counts
    const float ninf = -std::numeric_limits<float>::infinity();
    if (!in.allow_out_of_reach) res.logits[size_t(n_counts)] = ninf;
    if (in.allowed) {
        for (int64_t k = 0; k < n_counts; ++k) {
            if (in.allowed[k] != 1) res.logits[size_t(k)] = ninf;
        }
    }

    // chosen class: argmax (first on ties) unless the count is forced
    int64_t c = in.num_tokens == 0 ? int64_t(argmax_first(res.logits.data(), hp.n_class)) : in.num_tokens - hp.min_tokens;
    if (c >= n_counts) {
        throw mb::error(mb::status::compute_failed, "the root planner classifies the target as out of reach (more than " +
                                                        num(hp.max_tokens) + " tokens); no trajectory is produced");
    }
    const int64_t n = c + hp.min_tokens;
    const int64_t F = n * P;
    res.n = n;
    st.ms_stage1 = ms_since(t0);
    t0 = clock_type::now();

    // the conv decoder's target condition over 4n frames: context slots at frames 0..3, target
    // slots at 4n−4..4n−1 (uploaded before the recording below, which may hold no copy)
    const int64_t G = hp.global_root_dim;
    std::fill(st.tgt_host.begin(), st.tgt_host.begin() + F * G, 0.0f);
    std::fill(st.has_tgt_host.begin(), st.has_tgt_host.begin() + F, 0);
    for (int64_t s = 0; s < S; ++s) {
        const int64_t f = s < P ? s : F - P + (s - P);
        std::memcpy(st.tgt_host.data() + f * G, in.global_root + s * G, size_t(G) * sizeof(float));
        st.has_tgt_host[size_t(f)] = in.has_global[s] ? 1 : 0;
    }
    be.set(st.tgt, st.tgt_host.data(), F * G);
    be.set(st.has_tgt, st.has_tgt_host.data(), F);
    tap_host(tap, "root_conv_tgt", st.tgt_host.data(), {F, G});
    tap_host(tap, "root_conv_has_tgt", st.has_tgt_host.data(), {F});

    run_ops(be, tap, k_rec_root_b | uint64_t(c), [&] {
    // stage 2: [chosen-duration embedding, frames + slot embedding, position rows 0..n−1]  [1 + 8 + n, E];
    // padded token rows are masked keys upstream, so the valid length alone gives the same rows
    bptr<const float> conv_in;
    if (hp.n_layer_token > 0) {
        be.copy_rows(middle_token_emb + c * E, E, 1, E, st.x2, E);
        be.add(st.frame, input_position_emb, S * E, st.x2 + E);
        be.copy_rows(position_emb, E, n, E, st.x2 + (1 + S) * E, E);
        tap_f32(tap, be, "root_token_tf_in", st.x2, {1 + S + n, E});
        token_tf.forward(be, st.x2, 1 + S + n, st.tf);
        tap_f32(tap, be, "root_token_tf_out", st.x2, {1 + S + n, E});
        conv_in = st.x2 + (1 + S) * E;
    } else {
        conv_in = position_emb;
    }

    // the external condition: the frame embedding without the slot embedding, or the "no
    // frame" vector
    be.copy_rows(conv_no_frame_emb, 0, F, E, st.ext, E);
    be.where_rows(st.has + 3 * S, st.frame, E, conv_no_frame_emb, 0, P, E, st.ext, E);
    be.where_rows(st.has + 3 * S + P, st.frame + P * E, E, conv_no_frame_emb, 0, P, E, st.ext + (F - P) * E, E);
    tap_f32(tap, be, "root_conv_ext", st.ext, {F, E});

    // conv decoder: [n, E] tokens → [4n, 5] normalised global root
    conv_output.forward(be, conv_in, n, n, st.ext, st.tgt, st.has_tgt, st.y, st.dec);
    });
    st.ms_stage2 = ms_since(t0);    // stage 2 and the conv decoder are one recording now
    t0           = clock_type::now();
    res.global_root.assign(size_t(F * hp.global_root_dim), 0.0f);
    be.get(bptr<const float>(st.y), res.global_root.data(), F * hp.global_root_dim);
    st.ms_conv = ms_since(t0);
    return res;
}

} // namespace mb
