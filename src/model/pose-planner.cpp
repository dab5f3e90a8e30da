#include "model/pose-planner.h"


#include <algorithm>
#include <cmath>

namespace mb {
namespace {

std::string num(int64_t v) {
    return std::to_string(v);
}

[[noreturn]] void bad_shape(const tensor_source & src, const std::string & what) {
    fail_incompatible(src, "pose planner: " + what);
}

} // namespace

pose_planner_state::pose_planner_state(backend & be, const pose_hparams & hp, int64_t lanes_) : lanes(lanes_) {
    const int64_t n = hp.max_tokens * lanes, F = hp.frames_per_token, H = hp.n_tok_head;
    const int64_t fw = hp.pose_feat_width / F;
    state_arena   a;
    a.add(root_cond, n * F * hp.root_dim);
    a.add(pose_cond, n * F * hp.pose_dim);
    a.add(has_pose_cond, n * F);
    a.add(uniforms, k_recorded_steps * n * H * hp.n_code);
    a.add(tok, n * H * hp.tok_dim);
    a.add(mlp_a, n * hp.pose_feat_width);
    a.add(mlp_b, n * hp.pose_feat_width);
    a.add(feat, n * hp.pose_feat_width);
    a.add(cond, n * F * fw);
    a.add(frames, n * F * fw);
    a.add(root, n * hp.root_feat_width);
    a.add(cat, n * (hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width));
    a.add(x, n * hp.n_embd);
    a.add(logits, n * H * hp.n_code);
    a.add(prob, n * H);
    a.add(tokens, n * H);
    pose_rows.add_to(a, n * F / 4, hp.pose_dim);    // 16 of a lane's 64 frames
    mem = a.allocate(be);
    tf  = transformer_state(be, {hp.n_embd, hp.n_head, hp.n_ff, hp.n_layer}, n);
    be.reserve_remask(n * H);
    uniforms_host.assign(size_t(k_recorded_steps * n * H * hp.n_code), 0.0f);
}

pose_planner pose_planner::load(const tensor_source & src, backend & be) {
    pose_planner  m;
    weight_loader wl{src, be, m.weights};
    pose_hparams & hp = m.hp;

    // transformer: widths from the tensors, head count from metadata
    const uint64_t n_head = src.meta_uint("motionbricks.n_head").value_or(16);
    if (n_head < 1 || n_head > 4096) bad_shape(src, "motionbricks.n_head " + std::to_string(n_head) + " out of range");
    m.tf       = transformer::load(wl, "_transformer_model.", (int64_t) n_head);
    hp.n_embd  = m.tf.hp.n_embd;
    hp.n_head  = m.tf.hp.n_head;
    hp.n_ff    = m.tf.hp.n_ff;
    hp.n_layer = m.tf.hp.n_layer;

    // tokenizer heads and codes: embedding rows H·(C+1), logit rows H·C
    const tensor_view & emb = require_any_f32(src, "_pose_token_emb.weight");
    m.proj_logit            = load_linear(wl, "_proj_pose_output_logit", 0, hp.n_embd);
    if (emb.n_dims != 2) bad_shape(src, "_pose_token_emb.weight must be 2-D");
    const int64_t rows = emb.ne[1], hc = m.proj_logit.n_out;
    hp.n_tok_head      = rows - hc;
    if (hp.n_tok_head < 1 || hc % hp.n_tok_head != 0 || hc / hp.n_tok_head < 2) {
        bad_shape(src, "token embedding rows " + num(rows) + " and logit rows " + num(hc) +
                           " do not give H·(C+1) and H·C");
    }
    hp.n_code  = hc / hp.n_tok_head;
    hp.tok_dim = emb.ne[0];
    m.token_emb = wl.upload(emb);

    // token MLP: H·tok_dim → pose_feat_width
    m.token_mlp        = load_fc_block(wl, "_proj_pose_token_emb.", hp.n_tok_head * hp.tok_dim, 0);
    hp.n_mlp_layer     = (int64_t) m.token_mlp.fc.size();
    hp.pose_feat_width = m.token_mlp.n_out();
    if (m.token_mlp.width() != hp.pose_feat_width) {
        bad_shape(src, "token MLP width " + num(m.token_mlp.width()) + " differs from its output " +
                           num(hp.pose_feat_width));
    }

    // keyframe poses: pose_dim → pose_feat_width / frames_per_token
    m.proj_pose = load_linear(wl, "_proj_local_pose", 0, 0);
    hp.pose_dim = m.proj_pose.n_in;
    if (m.proj_pose.n_out < 1 || hp.pose_feat_width % m.proj_pose.n_out != 0) {
        bad_shape(src, "_proj_local_pose width " + num(m.proj_pose.n_out) + " does not divide pose_feat_width " +
                           num(hp.pose_feat_width));
    }
    hp.frames_per_token = hp.pose_feat_width / m.proj_pose.n_out;

    // root condition: frames_per_token·root_dim → root_feat_width
    m.proj_root = load_linear(wl, "_proj_local_root_values", 0, 0);
    if (m.proj_root.n_in % hp.frames_per_token != 0) {
        bad_shape(src, "_proj_local_root_values input " + num(m.proj_root.n_in) + " not a multiple of " +
                           num(hp.frames_per_token) + " frames");
    }
    hp.root_dim        = m.proj_root.n_in / hp.frames_per_token;
    hp.root_feat_width = m.proj_root.n_out;

    // duration embedding and position table give min/max tokens
    const tensor_view & dur = require_any_f32(src, "_proj_num_valid_positions.weight");
    const tensor_view & pos = require_any_f32(src, "_position_emb.embed");
    if (dur.n_dims != 2) bad_shape(src, "_proj_num_valid_positions.weight must be 2-D");
    if (pos.n_dims != 3 || pos.ne[1] != 1 || pos.ne[0] != hp.n_embd) {
        bad_shape(src, "_position_emb.embed has shape " + torch_shape_string(pos) + ", expected [max_tokens, 1, " +
                           num(hp.n_embd) + "]");
    }
    hp.dur_feat_width = dur.ne[0];
    hp.max_tokens     = pos.ne[2];
    hp.min_tokens     = hp.max_tokens - dur.ne[1] + 1;
    if (hp.min_tokens < 1 || hp.max_tokens > 4096) {
        bad_shape(src, num(dur.ne[1]) + " durations for " + num(hp.max_tokens) + " positions");
    }
    m.dur_emb      = wl.upload(dur);
    m.position_emb = wl.upload(pos);

    // input fusion: [pose | root | duration] → n_embd
    m.proj_input = load_linear(wl, "_proj_input.0", hp.n_embd,
                               hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width);
    return m;
}

void pose_planner::check_inputs(const pose_cond_inputs & in, const pose_planner_state & st, int64_t n_batch) const {
    if (in.n < hp.min_tokens || in.n > hp.max_tokens) {
        throw mb::error(mb::status::invalid_argument, "pose planner: " + num(in.n) + " tokens, expected " + num(hp.min_tokens) + ".." +
                                    num(hp.max_tokens));
    }
    if (n_batch < 1 || n_batch > st.lanes) {
        throw mb::error(mb::status::invalid_argument, "pose planner: " + num(n_batch) + " lanes, state holds 1.." + num(st.lanes));
    }
}

void pose_planner::upload_inputs(backend & be, pose_planner_state & st, const pose_cond_inputs & in,
                                 int64_t n_batch) const {
    const int64_t F = n_batch * in.n * hp.frames_per_token;
    if (in.root_cond) be.set(st.root_cond, in.root_cond, F * hp.root_dim);
    upload_selected_rows(be, in.pose_cond, in.has_pose_cond, F, hp.pose_dim, st.pose_cond, st.pose_rows);
    be.set(st.has_pose_cond, in.has_pose_cond, F);
}

void pose_planner::backbone(backend & be, pose_planner_state & st, int64_t n_lane, int64_t n_batch, const tap_fn & tap,
                            const char * tf_in, const char * tf_out, bool stepped) const {
    // every op but attention is per row, so it runs on the n rows of all lanes at once
    const int64_t n = n_lane * n_batch;
    const int64_t F = hp.frames_per_token, H = hp.n_tok_head, E = hp.n_embd;
    const int64_t fw  = hp.pose_feat_width / F;     // pose features per frame
    const int64_t cat = hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width;

    // cat[p] = [pose (4 frames, frame-major) | root | duration]: the root and duration columns
    // on a branch (they need no tokens), the keyframe embeddings on another
    const int root = be.branch([&] {
        // root condition: [4n, root_dim] viewed [n, 4·root_dim] → [n, root_feat_width]
        be.linear(st.root_cond, n, F * hp.root_dim, proj_root.weight, proj_root.bias, hp.root_feat_width, st.root);
        be.copy_rows(st.root, hp.root_feat_width, n, hp.root_feat_width, st.cat + hp.pose_feat_width, cat);
        be.copy_rows(dur_emb + (n_lane - hp.min_tokens) * hp.dur_feat_width, 0, n, hp.dur_feat_width,
                     st.cat + hp.pose_feat_width + hp.root_feat_width, cat);
    });
    // keyframe poses: [4n, pose_dim] → [4n, pose_feat_width/4]
    const int keyframes = be.branch([&] {
        be.linear(st.pose_cond, n * F, hp.pose_dim, proj_pose.weight, proj_pose.bias, fw, st.cond);
    });

    // token embeddings: row h·(C+1) + token per head, [n, H, tok_dim] → [n, H·tok_dim]
    be.embed_heads(token_emb, H, hp.n_code + 1, hp.tok_dim, st.tokens, n * H, st.tok);

    // token MLP: [n, H·tok_dim] → [n, pose_feat_width] = [4n, pose_feat_width/4]
    fc_block_forward(be, token_mlp, st.tok, n, st.mlp_a, st.mlp_b, st.feat);

    // per frame: keyframe embedding where a pose is given, else the token features
    be.join_branch(keyframes);
    be.where_rows(st.has_pose_cond, st.cond, fw, st.feat, fw, n * F, fw, st.frames, fw);
    be.copy_rows(st.frames, hp.pose_feat_width, n, hp.pose_feat_width, st.cat, cat);
    be.join_branch(root);

    // input fusion: x = ReLU(_proj_input.0(cat)) + position_emb[p]   [n, n_embd]
    be.linear_act(st.cat, n, cat, proj_input.weight, proj_input.bias, E, 0.0f, st.x);
    be.add(st.x, position_emb, n * E, st.x, n_lane * E);
    if (stepped) tap_f32(tap, be, tf_in, st.x, {1, n, E});
    else tap_f32(tap, be, tf_in, st.x, {n, E});

    // transformer on the n valid tokens (the key padding mask only hides padded rows)
    tf.forward(be, st.x, n_lane, st.tf, n_batch);
    if (stepped) tap_f32(tap, be, tf_out, st.x, {1, n, E});
    else tap_f32(tap, be, tf_out, st.x, {n, E});

    // logits: [n, n_embd] → [n, H·C], column h·C + c
    be.linear(st.x, n, E, proj_logit.weight, proj_logit.bias, H * hp.n_code, st.logits);
}

void pose_planner::logits(backend & be, pose_planner_state & st, const pose_cond_inputs & in, const int32_t * tokens,
                          float * out, const tap_fn & tap) const {
    check_inputs(in, st, 1);
    const int64_t n = in.n, H = hp.n_tok_head;
    for (int64_t i = 0; i < n * H; ++i) {
        if (tokens[i] < 0 || tokens[i] > hp.n_code) {
            throw mb::error(mb::status::invalid_argument, "pose planner: token " + std::to_string(tokens[i]) + " at (" + num(i / H) +
                                        ", " + num(i % H) + ") outside 0.." + num(hp.n_code));
        }
    }
    upload_inputs(be, st, in, 1);
    be.set(st.tokens, tokens, n * H);
    backbone(be, st, n, 1, tap, "pose_tf_in", "pose_tf_out", false);
    be.get(bptr<const float>(st.logits), out, n * H * hp.n_code);
}

int64_t pose_remask_count(int step, int n_steps, int64_t n, int64_t n_tok_head) {
    // upstream: clip((np.cos(step / N · π · 0.5) · L · H).int(), min=1) with L an int tensor,
    // so the products run in float32 after the float64 cosine
    const double r = std::cos((double) step / (double) n_steps * M_PI * 0.5);
    float        m = (float) r * (float) n;
    m              = m * (float) n_tok_head;
    return std::max<int64_t>(1, (int64_t) m);
}

void pose_planner::decode(backend & be, pose_planner_state & st, const pose_cond_inputs & in,
                          const pose_decode_options & opt, int32_t * tokens_out, const tap_fn & tap,
                          int64_t B) const {
    check_inputs(in, st, B);
    const int64_t n = in.n, H = hp.n_tok_head, C = hp.n_code, nh = n * H;
    if (opt.n_steps < 1 || opt.n_steps > 1000) {
        throw mb::error(mb::status::invalid_argument, "pose planner: num_inference_steps " + std::to_string(opt.n_steps) +
                                    " outside 1..1000");
    }
    if (!opt.use_argmax && !opt.uniforms) {
        throw mb::error(mb::status::invalid_argument, "pose planner: Gumbel sampling needs uniforms");
    }
    upload_inputs(be, st, in, B);
    // every step's Gumbel draws up front, so that the steps issue no copy and can be recorded;
    // on the backend they lie [slot, lane, n·H, C] (a step's draws of all lanes together), staged
    // from the callers' [lane, step, max_tokens·H, C]
    const bool    recorded = opt.n_steps <= k_recorded_steps;
    const int64_t per_step = hp.max_tokens * H * C;     // one lane's draws of one step, as given
    const int64_t per_slot = B * nh * C;                // one step's draws of all lanes, as used
    const auto    upload_step = [&](int s, int64_t slot) {
        for (int64_t b = 0; b < B; ++b) {
            const float * src = opt.uniforms + (b * opt.n_steps + s) * per_step;
            std::copy(src, src + nh * C, st.uniforms_host.begin() + slot * per_slot + b * nh * C);
        }
    };
    if (!opt.use_argmax && recorded) {
        for (int s = 0; s < opt.n_steps; ++s) upload_step(s, s);
        be.set(st.uniforms, st.uniforms_host.data(), opt.n_steps * per_slot);
    }
    const auto steps = [&] {
    // all tokens start as [MASK] with probability 1/H (the probabilities on a branch: the first
    // step reads them only where they are tapped, and its sampling overwrites them)
    be.fill_i32(B * nh, hp.mask_id(), st.tokens);
    const int prob = be.branch([&] { be.fill_f32(B * nh, (float) (1.0 / (double) H), st.prob); });

    for (int s = 0; s < opt.n_steps; ++s) {
        // re-mask the n_mask least probable tokens of each lane (ascending, lower index first on
        // ties, NaN last like torch.sort); at the first step every token is [MASK] already
        if (s > 0) be.remask_lowest(st.prob, nh, pose_remask_count(s, opt.n_steps, n, H), hp.mask_id(), st.tokens, B);
        tap_i32(tap, be, "step_pose_tokens_in", st.tokens, {1, n, H});
        tap_f32(tap, be, "step_remask_prob_in", st.prob, {1, n, H});

        // backbone pass: logits [n, H, C]
        backbone(be, st, n, B, tap, "step_pose_tf_in", "step_pose_tf_out", true);
        tap_f32(tap, be, "step_pose_logits", st.logits, {1, n, H, C});

        // sample every token again, and remember the softmax probability of the choice;
        // Gumbel draws [s, p, h, :] for row i = p·H + h
        bptr<const float> u;
        if (!opt.use_argmax) {
            if (!recorded) {
                upload_step(s, 0);
                be.set(st.uniforms, st.uniforms_host.data(), per_slot);
            }
            u = st.uniforms + (recorded ? s * per_slot : 0);
        }
        if (s == 0) be.join_branch(prob);
        be.sample_codes(st.logits, B * nh, C, u, st.tokens, st.prob);
    }
    };
    if (recorded) {
        run_ops(be, tap,
                k_rec_pose | uint64_t(B) << 24 | uint64_t(n) << 16 | uint64_t(opt.n_steps) << 1 |
                    (opt.use_argmax ? 1u : 0u),
                steps);
    } else {
        steps();
    }
    if (tokens_out) be.get(bptr<const int32_t>(st.tokens), tokens_out, B * nh);
}

} // namespace mb
