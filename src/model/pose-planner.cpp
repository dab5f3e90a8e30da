#include "model/pose-planner.h"

#include "model/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mb {
namespace {

std::string num(int64_t v) {
    return std::to_string(v);
}

[[noreturn]] void bad_shape(const tensor_source & src, const std::string & what) {
    throw std::runtime_error(src.origin() + ": pose planner: " + what);
}

} // namespace

pose_planner_state::pose_planner_state(const pose_hparams & hp) {
    const int64_t n = hp.max_tokens, F = hp.frames_per_token;
    const int64_t mlp_w = hp.pose_feat_width;
    tok.assign((size_t) (n * hp.n_tok_head * hp.tok_dim), 0.0f);
    mlp_a.assign((size_t) (n * mlp_w), 0.0f);
    mlp_b.assign((size_t) (n * mlp_w), 0.0f);
    feat.assign((size_t) (n * mlp_w), 0.0f);
    cond.assign((size_t) (n * F * (hp.pose_feat_width / F)), 0.0f);
    root.assign((size_t) (n * hp.root_feat_width), 0.0f);
    cat.assign((size_t) (n * (hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width)), 0.0f);
    x.assign((size_t) (n * hp.n_embd), 0.0f);
    tf_in.assign((size_t) (n * hp.n_embd), 0.0f);
    logits.assign((size_t) (n * hp.n_tok_head * hp.n_code), 0.0f);
    prob.assign((size_t) (n * hp.n_tok_head), 0.0f);
    tokens.assign((size_t) (n * hp.n_tok_head), 0);
    order.assign((size_t) (n * hp.n_tok_head), 0);
    tf = transformer_state({hp.n_embd, hp.n_head, hp.n_ff, hp.n_layer}, n);
}

pose_planner pose_planner::load(const tensor_source & src) {
    pose_planner m;
    pose_hparams & hp = m.hp;

    // transformer: widths from the tensors, head count from metadata
    const uint64_t n_head = src.meta_uint("motionbricks.n_head").value_or(16);
    if (n_head < 1 || n_head > 4096) bad_shape(src, "motionbricks.n_head " + std::to_string(n_head) + " out of range");
    m.tf       = transformer::load(src, "_transformer_model.", (int64_t) n_head);
    hp.n_embd  = m.tf.hp.n_embd;
    hp.n_head  = m.tf.hp.n_head;
    hp.n_ff    = m.tf.hp.n_ff;
    hp.n_layer = m.tf.hp.n_layer;

    // tokenizer heads and codes: embedding rows H·(C+1), logit rows H·C
    const tensor_view & emb = require_any_f32(src, "_pose_token_emb.weight");
    m.proj_logit            = load_linear(src, "_proj_pose_output_logit", 0, hp.n_embd);
    if (emb.n_dims != 2) bad_shape(src, "_pose_token_emb.weight must be 2-D");
    const int64_t rows = emb.ne[1], hc = m.proj_logit.n_out;
    hp.n_tok_head      = rows - hc;
    if (hp.n_tok_head < 1 || hc % hp.n_tok_head != 0 || hc / hp.n_tok_head < 2) {
        bad_shape(src, "token embedding rows " + num(rows) + " and logit rows " + num(hc) +
                           " do not give H·(C+1) and H·C");
    }
    hp.n_code  = hc / hp.n_tok_head;
    hp.tok_dim = emb.ne[0];
    m.token_emb = emb.f32();

    // token MLP: H·tok_dim → pose_feat_width
    m.token_mlp        = load_fc_block(src, "_proj_pose_token_emb.", hp.n_tok_head * hp.tok_dim, 0);
    hp.n_mlp_layer     = (int64_t) m.token_mlp.fc.size();
    hp.pose_feat_width = m.token_mlp.n_out();
    if (m.token_mlp.width() != hp.pose_feat_width) {
        bad_shape(src, "token MLP width " + num(m.token_mlp.width()) + " differs from its output " +
                           num(hp.pose_feat_width));
    }

    // keyframe poses: pose_dim → pose_feat_width / frames_per_token
    m.proj_pose = load_linear(src, "_proj_local_pose", 0, 0);
    hp.pose_dim = m.proj_pose.n_in;
    if (m.proj_pose.n_out < 1 || hp.pose_feat_width % m.proj_pose.n_out != 0) {
        bad_shape(src, "_proj_local_pose width " + num(m.proj_pose.n_out) + " does not divide pose_feat_width " +
                           num(hp.pose_feat_width));
    }
    hp.frames_per_token = hp.pose_feat_width / m.proj_pose.n_out;

    // root condition: frames_per_token·root_dim → root_feat_width
    m.proj_root = load_linear(src, "_proj_local_root_values", 0, 0);
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
    m.dur_emb      = dur.f32();
    m.position_emb = pos.f32();

    // input fusion: [pose | root | duration] → n_embd
    m.proj_input = load_linear(src, "_proj_input.0", hp.n_embd,
                               hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width);
    return m;
}

void pose_planner::logits(backend & be, pose_planner_state & st, const pose_cond_inputs & in, const int32_t * tokens,
                          float * out) const {
    const int64_t n = in.n, F = hp.frames_per_token, H = hp.n_tok_head;
    if (n < hp.min_tokens || n > hp.max_tokens) {
        throw mb::error(mb::status::invalid_argument, "pose planner: " + num(n) + " tokens, expected " + num(hp.min_tokens) + ".." +
                                    num(hp.max_tokens));
    }
    const int64_t fw  = hp.pose_feat_width / F;     // pose features per frame
    const int64_t cat = hp.pose_feat_width + hp.root_feat_width + hp.dur_feat_width;

    // root condition: [4n, root_dim] viewed [n, 4·root_dim] → [n, root_feat_width]
    be.linear(in.root_cond, n, F * hp.root_dim, proj_root.weight, proj_root.bias, hp.root_feat_width,
              st.root.data());

    // keyframe poses: [4n, pose_dim] → [4n, pose_feat_width/4]
    be.linear(in.pose_cond, n * F, hp.pose_dim, proj_pose.weight, proj_pose.bias, fw, st.cond.data());

    // token embeddings: row h·(C+1) + token per head, [n, H, tok_dim] → [n, H·tok_dim]
    for (int64_t p = 0; p < n; ++p) {
        for (int64_t h = 0; h < H; ++h) {
            const int32_t t = tokens[p * H + h];
            if (t < 0 || t > hp.n_code) {
                throw mb::error(mb::status::invalid_argument, "pose planner: token " + std::to_string(t) + " at (" + num(p) + ", " +
                                            num(h) + ") outside 0.." + num(hp.n_code));
            }
            const float * e = token_emb + (h * (hp.n_code + 1) + t) * hp.tok_dim;
            std::copy(e, e + hp.tok_dim, st.tok.data() + (p * H + h) * hp.tok_dim);
        }
    }
    // token MLP: [n, H·tok_dim] → [n, pose_feat_width] = [4n, pose_feat_width/4]
    float * tok_feat = st.feat.data();
    fc_block_forward(be, token_mlp, st.tok.data(), n, st.mlp_a.data(), st.mlp_b.data(), tok_feat);

    // per frame: keyframe embedding where a pose is given, else the token features;
    // then cat[p] = [pose (4 frames, frame-major) | root | duration]
    {
        const float * dur = dur_emb + (n - hp.min_tokens) * hp.dur_feat_width;
        for (int64_t p = 0; p < n; ++p) {
            float * row = st.cat.data() + p * cat;
            for (int64_t j = 0; j < F; ++j) {
                const int64_t f   = p * F + j;
                const float * src = in.has_pose_cond[f] ? st.cond.data() + f * fw : tok_feat + f * fw;
                std::copy(src, src + fw, row + j * fw);
            }
            std::copy(st.root.data() + p * hp.root_feat_width, st.root.data() + (p + 1) * hp.root_feat_width,
                      row + hp.pose_feat_width);
            std::copy(dur, dur + hp.dur_feat_width, row + hp.pose_feat_width + hp.root_feat_width);
        }
    }

    // input fusion: x = ReLU(_proj_input.0(cat)) + position_emb[p]   [n, n_embd]
    float * x = st.x.data();
    be.linear(st.cat.data(), n, cat, proj_input.weight, proj_input.bias, hp.n_embd, x);
    for (int64_t p = 0; p < n; ++p) {
        const float * pe = position_emb + p * hp.n_embd;
        for (int64_t c = 0; c < hp.n_embd; ++c) x[p * hp.n_embd + c] = std::max(x[p * hp.n_embd + c], 0.0f) + pe[c];
    }
    std::copy(x, x + n * hp.n_embd, st.tf_in.data());

    // transformer on the n valid tokens (the key padding mask only hides padded rows)
    tf.forward(be, x, n, nullptr, st.tf);

    // logits: [n, n_embd] → [n, H·C], column h·C + c
    be.linear(x, n, hp.n_embd, proj_logit.weight, proj_logit.bias, H * hp.n_code, out);
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
                          const pose_decode_options & opt, int32_t * tokens_out, pose_decode_trace * trace) const {
    const int64_t n = in.n, H = hp.n_tok_head, C = hp.n_code, nh = n * H;
    if (n < hp.min_tokens || n > hp.max_tokens) {
        throw mb::error(mb::status::invalid_argument, "pose planner: " + num(n) + " tokens, expected " + num(hp.min_tokens) + ".." +
                                    num(hp.max_tokens));
    }
    if (opt.n_steps < 1 || opt.n_steps > 1000) {
        throw mb::error(mb::status::invalid_argument, "pose planner: num_inference_steps " + std::to_string(opt.n_steps) +
                                    " outside 1..1000");
    }
    if (!opt.use_argmax && !opt.uniforms) {
        throw mb::error(mb::status::invalid_argument, "pose planner: Gumbel sampling needs uniforms");
    }
    if (trace) {
        trace->tokens_in.assign((size_t) (opt.n_steps * nh), 0);
        trace->remask_prob.assign((size_t) (opt.n_steps * nh), 0.0f);
        trace->logits.assign((size_t) (opt.n_steps * nh * C), 0.0f);
        trace->tf_in.assign((size_t) (opt.n_steps * n * hp.n_embd), 0.0f);
        trace->tf_out.assign((size_t) (opt.n_steps * n * hp.n_embd), 0.0f);
    }

    // all tokens start as [MASK] with probability 1/H
    int32_t * tok  = st.tokens.data();
    float *   prob = st.prob.data();
    std::fill(tok, tok + nh, hp.mask_id());
    std::fill(prob, prob + nh, (float) (1.0 / (double) H));

    for (int s = 0; s < opt.n_steps; ++s) {
        // re-mask the n_mask least probable tokens (ascending, lower index first on ties, NaN last
        // like torch.sort; std::sort with the index tie-break is stable and allocates nothing)
        {
            const int64_t n_mask = pose_remask_count(s, opt.n_steps, n, H);
            int32_t *     order  = st.order.data();
            std::iota(order, order + nh, 0);
            const auto key = [prob](int32_t i) { return std::isnan(prob[i]) ? INFINITY : prob[i]; };
            std::sort(order, order + nh, [&key](int32_t a, int32_t b) {
                const float ka = key(a), kb = key(b);
                return ka < kb || (ka == kb && a < b);
            });
            for (int64_t k = 0; k < n_mask && k < nh; ++k) tok[order[k]] = hp.mask_id();
        }
        if (trace) {
            std::copy(tok, tok + nh, trace->tokens_in.data() + s * nh);
            std::copy(prob, prob + nh, trace->remask_prob.data() + s * nh);
        }

        // backbone pass: logits [n, H, C]
        float * lg = st.logits.data();
        logits(be, st, in, tok, lg);
        if (trace) {
            std::copy(lg, lg + nh * C, trace->logits.data() + s * nh * C);
            std::copy(st.tf_in.data(), st.tf_in.data() + n * hp.n_embd, trace->tf_in.data() + s * n * hp.n_embd);
            std::copy(st.x.data(), st.x.data() + n * hp.n_embd, trace->tf_out.data() + s * n * hp.n_embd);
        }

        // sample every token again, and remember the softmax probability of the choice
        for (int64_t i = 0; i < nh; ++i) {
            const float * l = lg + i * C;
            int32_t       t;
            if (opt.use_argmax) {
                t = argmax_first(l, C);
            } else {
                const float * u = opt.uniforms + ((s * hp.max_tokens) * H + i) * C;   // [s, p, h, :], i = p·H + h
                t               = gumbel_argmax(l, u, C);
            }
            float mx = l[0];
            for (int64_t c = 1; c < C; ++c) mx = std::max(mx, l[c]);
            float sum = 0.0f;
            for (int64_t c = 0; c < C; ++c) sum += std::exp(l[c] - mx);
            tok[i]  = t;
            prob[i] = std::exp(l[t] - mx) * (1.0f / sum);
        }
    }
    std::copy(tok, tok + nh, tokens_out);
}

} // namespace mb
