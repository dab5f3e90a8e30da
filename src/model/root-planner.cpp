#include "model/root-planner.h"

#include "backend/token-select.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

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
        fail_incompatible(src, "tensor '" + name + "' has shape " + torch_shape_string(t) +
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
        fail_incompatible(src, "motionbricks.n_head " + std::to_string(n_head) + " out of range");
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
            fail_incompatible(src, "stage-2 transformer width " + num(rp.token_tf.hp.n_embd) +
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
        fail_incompatible(src, "root projections take " + num(hp.local_root_dim) + " / " +
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
        fail_incompatible(src, "_proj_start_input and _proj_end_input widths differ");
    }

    // slot embedding: 2 × frames per token rows
    const tensor_view & slots = require_any_f32(src, "_input_position_emb.weight");
    if (slots.n_dims != 2 || slots.ne[0] != E || slots.ne[1] < 2 || slots.ne[1] % 2 != 0 || slots.ne[1] > 64) {
        fail_incompatible(src, "tensor '_input_position_emb.weight' has shape " +
                               torch_shape_string(slots) + ", expected [2·frames_per_token, " + num(E) + "]");
    }
    hp.frames_per_token    = slots.ne[1] / 2;
    rp.input_position_emb  = wl.upload(slots);
    if (hp.frames_per_token != 4) {
        fail_incompatible(src, num(hp.n_slots()) + " constraint slots; predict uses 8");
    }

    // duration classes: classifier rows = counts + out-of-reach; input rows add "predict"
    rp.proj_logit = load_linear(wl, "_proj_num_token_output_logit", 0, E);
    hp.n_class    = rp.proj_logit.n_out;
    const tensor_view & pos = require_any_f32(src, "_position_emb.embed");
    if (pos.n_dims != 3 || pos.ne[0] != E || pos.ne[1] != 1) {
        fail_incompatible(src, "tensor '_position_emb.embed' has shape " + torch_shape_string(pos) +
                               ", expected [max_tokens, 1, " + num(E) + "]");
    }
    hp.max_tokens   = pos.ne[2];
    hp.min_tokens   = hp.max_tokens - (hp.n_class - 1) + 1;
    rp.position_emb = wl.upload(pos);
    if (hp.n_class < 2 || hp.min_tokens < 2 || hp.max_tokens > 64 || hp.n_class > int64_t(root_result{}.logits.size())) {
        fail_incompatible(src, num(hp.n_class) + " duration classes for " +
                               num(hp.max_tokens) + " positions is inconsistent");
    }
    rp.input_num_tokens = wl.upload(require_f32(src, "_proj_input_num_tokens.weight", {hp.n_class + 1, E}));
    if (hp.n_layer_token > 0) {
        rp.middle_token_emb = wl.upload(require_f32(src, "_middle_token_emb.weight", {hp.n_class, E}));
    }

    // conv decoder: E channels per token in, global root per frame out, E-wide external condition
    const uint64_t growth = meta_or(src, "motionbricks.dilation_growth", 3);
    if (growth < 1 || growth > 64) {
        fail_incompatible(src, "motionbricks.dilation_growth " + std::to_string(growth) +
                               " out of range");
    }
    rp.conv_output = cond_decoder::load(wl, "_conv_output.", int64_t(growth));
    const cond_decoder_hparams & dh = rp.conv_output.hp;
    if (dh.c_in != E || dh.c_out != hp.global_root_dim || dh.ext_dim != E || dh.tgt_dim != hp.global_root_dim ||
        dh.frames_per_pos() != hp.frames_per_token) {
        fail_incompatible(src, "_conv_output has c_in " + num(dh.c_in) + ", c_out " +
                               num(dh.c_out) + ", external " + num(dh.ext_dim) + ", target " + num(dh.tgt_dim) +
                               ", " + num(dh.frames_per_pos()) + " frames per token; expected " + num(E) + ", " +
                               num(hp.global_root_dim) + ", " + num(E) + ", " + num(hp.global_root_dim) + ", " +
                               num(hp.frames_per_token));
    }
    return rp;
}

root_planner_state::root_planner_state(backend & be, const root_planner & rp, int64_t lanes_) : lanes(lanes_) {
    const root_hparams & hp = rp.hp;
    const int64_t L = lanes, E = hp.n_embd, S = hp.n_slots(), F = hp.frames_per_token * hp.max_tokens;
    const int64_t feats = hp.pose_feat + hp.local_root_feat + hp.global_root_feat;
    state_arena   a;
    a.add(global_root, L * S * hp.global_root_dim);
    a.add(local_root, L * S * hp.local_root_dim);
    a.add(poses, L * S * hp.pose_dim);
    a.add(has, 4 * L * S);
    a.add(rows, L);
    a.add(emb, L * S * feats);
    a.add(tmp, L * S * feats);
    a.add(mlp_a, 2 * L * hp.frames_per_token * rp.proj_start.width());    // both halves' widths are equal (load)
    a.add(mlp_b, 2 * L * hp.frames_per_token * rp.proj_start.width());
    a.add(frame, L * S * E);
    a.add(fs, L * S * E);
    a.add(fs1, L * S * E);
    a.add(row_emb, L * E);
    a.add(x1, L * (1 + S) * E);
    a.add(logits, L * hp.n_class);
    a.add(pick, L);
    a.add(has_frame2, L * S);
    a.add(frame2, L * S * E);
    a.add(x2, L * (1 + S + hp.max_tokens) * E);
    a.add(conv_in, L * hp.max_tokens * E);
    a.add(ext, L * F * E);
    a.add(tgt, L * F * hp.global_root_dim);
    a.add(has_tgt, L * F);
    a.add(y, L * F * hp.global_root_dim);
    mem = a.allocate(be);
    transformer_hparams th = rp.shared_tf.hp;
    if (hp.n_layer_token > 0) th.n_ff = std::max(th.n_ff, rp.token_tf.hp.n_ff);
    tf  = transformer_state(be, th, L * (1 + S + hp.max_tokens));
    tf1 = transformer_state(be, rp.shared_tf.hp, L * (1 + S));
    dec = cond_decoder_state(be, rp.conv_output.hp, L * hp.max_tokens);
    in_host.assign(size_t(L * S * hp.pose_dim), 0.0f);
    has_host.assign(size_t(4 * L * S), 0);
    idx_host.assign(size_t(L), 0);
    done_host.assign(size_t(L), 0);
    logits_host.assign(size_t(L * hp.n_class), 0.0f);
    tgt_host.assign(size_t(L * F * hp.global_root_dim), 0.0f);
    has_tgt_host.assign(size_t(L * F), 0);
    y_host.assign(size_t(L * F * hp.global_root_dim), 0.0f);
}

root_result root_planner::run(backend & be, root_planner_state & st, const root_inputs & in, const tap_fn & tap) const {
    root_result res;
    run_batch(be, st, &in, 1, &res, tap);
    return res;
}

void root_planner::run_batch(backend & be, root_planner_state & st, const root_inputs * in, int64_t B,
                             root_result * out, const tap_fn & tap, const int64_t * group,
                             const root_bucket_fn & on_bucket) const {
    const int64_t E = hp.n_embd, S = hp.n_slots(), P = hp.frames_per_token;
    const int64_t n_counts = hp.n_class - 1;    // real durations min..max
    st.failed_lane = -1;
    if (B < 1 || B > st.lanes) {
        throw mb::error(mb::status::invalid_argument, "root planner: " + num(B) + " lanes, state holds 1.." + num(st.lanes));
    }
    for (int64_t b = 0; b < B; ++b) {
        st.failed_lane = b;
        if (in[b].num_tokens != 0 && (in[b].num_tokens < hp.min_tokens || in[b].num_tokens > hp.max_tokens)) {
            throw mb::error(mb::status::invalid_argument, "forced token count " + num(in[b].num_tokens) + " outside " +
                                                              num(hp.min_tokens) + ".." + num(hp.max_tokens));
        }
        if (!in[b].global_root || !in[b].has_global || !in[b].local_root || !in[b].has_local || !in[b].poses ||
            !in[b].has_pose) {
            throw mb::error(mb::status::invalid_argument, "root planner inputs missing");
        }
    }
    st.failed_lane = -1;

    auto t0 = clock_type::now();

    // inputs half-major: row (half, lane, slot in half) holds lane's slot half·P + j; a slot has a
    // frame when anything of it is given; the duration embedding row is the forced count or the
    // masked class
    const int64_t LS = B * S;   // constraint rows of every lane
    const auto    at = [&](int64_t b, int64_t s) { return (s / P) * B * P + b * P + s % P; };
    {
        const struct {
            bptr<float> dst;
            int64_t     w;
            const float * root_inputs::*src;
        } parts[3] = {{st.global_root, hp.global_root_dim, &root_inputs::global_root},
                      {st.local_root, hp.local_root_dim, &root_inputs::local_root},
                      {st.poses, hp.pose_dim, &root_inputs::poses}};
        for (const auto & p : parts) {
            for (int64_t b = 0; b < B; ++b) {
                for (int64_t s = 0; s < S; ++s) {
                    const float * src = in[b].*p.src + s * p.w;
                    std::copy(src, src + p.w, st.in_host.begin() + at(b, s) * p.w);
                }
            }
            be.set(p.dst, st.in_host.data(), LS * p.w);
        }
        for (int64_t b = 0; b < B; ++b) {
            const root_inputs & r = in[b];
            for (int64_t s = 0; s < S; ++s) {
                const int64_t i = at(b, s);
                st.has_host[size_t(0 * LS + i)] = r.has_pose[s] ? 1 : 0;
                st.has_host[size_t(1 * LS + i)] = r.has_local[s] ? 1 : 0;
                st.has_host[size_t(2 * LS + i)] = r.has_global[s] ? 1 : 0;
                st.has_host[size_t(3 * LS + i)] = (r.has_pose[s] || r.has_global[s] || r.has_local[s]) ? 1 : 0;
            }
            st.idx_host[size_t(b)] = int32_t(r.num_tokens == 0 ? hp.masked_class() : r.num_tokens - hp.min_tokens);
        }
        be.set(st.has, st.has_host.data(), 4 * LS);
        be.set(st.rows, st.idx_host.data(), B);
    }

    // embeddings through the duration logits: one recording per lane count
    const int64_t feats = hp.pose_feat + hp.local_root_feat + hp.global_root_feat;
    const int64_t BP    = B * P;    // rows of one half
    run_ops(be, tap, k_rec_root_a | uint64_t(B), [&] {
    // per-slot embeddings: projection where given, the learned "missing" vector elsewhere
    // [2, B, 4, pose_feat | local_root_feat | global_root_feat]
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
            {proj_local_root, st.local_root, st.has + LS, no_local_root_emb, hp.pose_feat},
            {proj_global_root, st.global_root, st.has + 2 * LS, no_global_root_emb, hp.pose_feat + hp.local_root_feat},
        };
        // the parts are independent (a scratch region each): two of them run as branches
        const auto embed = [&be, &st, LS, feats](const part & p) {
            const bptr<float> tmp = st.tmp + LS * p.offset;
            be.linear(p.x, LS, p.w.n_in, p.w.weight, p.w.bias, p.w.n_out, tmp);
            be.where_rows(p.has, tmp, p.w.n_out, p.none, 0, LS, p.w.n_out, st.emb + p.offset, feats);
        };
        const int local = be.branch([&] { embed(parts[1]); });
        const int global = be.branch([&] { embed(parts[2]); });
        embed(parts[0]);
        be.join_branch(local);
        be.join_branch(global);
    }

    // frame embeddings: FCBlock per half, [B·4, feats] → [B·4, E] each; the end's on a branch
    // with its own scratch
    const int64_t W   = proj_start.width();    // proj_end's too (load)
    const int     end = be.branch([&] {
        fc_block_forward(be, proj_end, st.emb + BP * feats, BP, st.mlp_a + BP * W, st.mlp_b + BP * W,
                         st.frame + BP * E);
    });
    fc_block_forward(be, proj_start, st.emb, BP, st.mlp_a, st.mlp_b, st.frame);
    be.join_branch(end);
    });

    // stage 1: shared transformer (no mask), duration logits from row 0 of each lane. Stage 2
    // reads only the frame embeddings: where every duration is given, the logits are reported but
    // decide nothing, so stage 1 may run beside stage 2 (its own transformer state and slot
    // embeddings), joined when the logits are read back at the end
    const bool all_forced = std::all_of(in, in + B, [](const root_inputs & r) { return r.num_tokens != 0; });
    const auto stage1     = [&] {
        // input: [duration embedding, frames + slot embedding]  [B, 1 + 8, E]
        be.embed_heads(input_num_tokens, 1, hp.n_class + 1, E, st.rows, B, st.row_emb);
        be.copy_rows(st.row_emb, E, B, E, st.x1, (1 + S) * E);
        be.add(st.frame, input_position_emb, BP * E, st.fs1, P * E);
        be.add(st.frame + BP * E, input_position_emb + P * E, BP * E, st.fs1 + BP * E, P * E);
        be.copy_rows(st.fs1, P * E, B, P * E, st.x1 + E, (1 + S) * E);
        be.copy_rows(st.fs1 + BP * E, P * E, B, P * E, st.x1 + (1 + P) * E, (1 + S) * E);
        tap_f32(tap, be, "root_shared_tf_in", st.x1, {1 + S, E});
        shared_tf.forward(be, st.x1, 1 + S, st.tf1, B);
        tap_f32(tap, be, "root_shared_tf_out", st.x1, {1 + S, E});
        be.copy_rows(st.x1, (1 + S) * E, B, E, st.row_emb, E);
        be.linear(st.row_emb, B, E, proj_logit.weight, proj_logit.bias, hp.n_class, st.logits);
    };
    run_ops(be, tap, k_rec_root_s1 | uint64_t(B), stage1, all_forced);
    st.ms_embed = ms_since(t0);    // the embeddings and stage 1 (issued, where concurrent)
    t0          = clock_type::now();

    // per lane: masks (out-of-reach unless allowed, disallowed counts), then the chosen class:
    // argmax (first on ties) unless the count is forced. Where every count is forced, the logits
    // are read back after stage 2 is issued, so that the plan does not wait for them
    const auto read_logits = [&] {
        be.get(bptr<const float>(st.logits), st.logits_host.data(), B * hp.n_class);
        const float ninf = -std::numeric_limits<float>::infinity();
        for (int64_t b = 0; b < B; ++b) {
            const root_inputs & r   = in[b];
            root_result &       res = out[b];
            res.logits.fill(0.0f);
            std::copy_n(st.logits_host.begin() + b * hp.n_class, hp.n_class, res.logits.begin());
            st.failed_lane = b;
            // NaN logits would pick a class at random (often "out of reach"): name the real cause
            for (int64_t k = 0; k < hp.n_class; ++k) {
                if (!std::isfinite(res.logits[size_t(k)])) {
                    throw mb::error(mb::status::compute_failed,
                                    "the root planner's duration logits are not finite: its weights overflow or are not finite");
                }
            }
            if (!r.allow_out_of_reach) res.logits[size_t(n_counts)] = ninf;
            if (r.allowed) {
                for (int64_t k = 0; k < n_counts; ++k) {
                    if (r.allowed[k] != 1) res.logits[size_t(k)] = ninf;
                }
            }
            const int64_t c =
                r.num_tokens == 0 ? int64_t(argmax_first(res.logits.data(), hp.n_class)) : r.num_tokens - hp.min_tokens;
            if (c >= n_counts) {
                throw mb::error(mb::status::compute_failed, "the root planner classifies the target as out of reach (more than " +
                                                                num(hp.max_tokens) + " tokens); no trajectory is produced");
            }
            res.n = c + hp.min_tokens;
        }
        st.failed_lane = -1;
    };
    if (all_forced) {
        for (int64_t b = 0; b < B; ++b) out[b].n = in[b].num_tokens;
    } else {
        read_logits();
    }
    st.ms_stage1 = ms_since(t0);
    st.ms_stage2 = st.ms_conv = 0.0;

    // stage 2 and the conv decoder once per chosen duration (and group), on that bucket's lanes
    std::fill(st.done_host.begin(), st.done_host.begin() + B, 0);
    for (int64_t c = 0; c < n_counts; ++c) {
        for (int64_t b0 = 0; b0 < B; ++b0) {
            if (st.done_host[size_t(b0)] || out[b0].n != c + hp.min_tokens) continue;
            t0 = clock_type::now();
            int64_t Bk = 0;     // lanes in the bucket
            for (int64_t b = b0; b < B; ++b) {
                if (!st.done_host[size_t(b)] && out[b].n == c + hp.min_tokens && (!group || group[b] == group[b0])) {
                    st.idx_host[size_t(Bk++)] = int32_t(b);
                    st.done_host[size_t(b)]   = 1;
                }
            }
            const int64_t n = c + hp.min_tokens, F = n * P, G = hp.global_root_dim;

            // the conv decoder's target condition over 4n frames: context slots at frames 0..3, target
            // slots at 4n−4..4n−1; the bucket's has_frame slot-major (uploaded before the recording
            // below, which may hold no copy)
            std::fill(st.tgt_host.begin(), st.tgt_host.begin() + Bk * F * G, 0.0f);
            std::fill(st.has_tgt_host.begin(), st.has_tgt_host.begin() + Bk * F, 0);
            for (int64_t i = 0; i < Bk; ++i) {
                const root_inputs & r = in[st.idx_host[size_t(i)]];
                for (int64_t s = 0; s < S; ++s) {
                    const int64_t f = i * F + (s < P ? s : F - P + (s - P));
                    std::copy(r.global_root + s * G, r.global_root + (s + 1) * G, st.tgt_host.begin() + f * G);
                    st.has_tgt_host[size_t(f)] = r.has_global[s] ? 1 : 0;
                }
            }
            be.set(st.pick, st.idx_host.data(), Bk);
            be.set(st.tgt, st.tgt_host.data(), Bk * F * G);
            be.set(st.has_tgt, st.has_tgt_host.data(), Bk * F);
            tap_host(tap, "root_conv_tgt", st.tgt_host.data(), {F, G});
            tap_host(tap, "root_conv_has_tgt", st.has_tgt_host.data(), {F});
            for (int64_t i = 0; i < Bk; ++i) {
                const root_inputs & r = in[st.idx_host[size_t(i)]];
                for (int64_t s = 0; s < S; ++s) {
                    st.has_tgt_host[size_t(s * Bk + i)] = (r.has_pose[s] || r.has_global[s] || r.has_local[s]) ? 1 : 0;
                }
            }
            be.set(st.has_frame2, st.has_tgt_host.data(), S * Bk);

            const int64_t R = 1 + S + n;    // stage-2 rows per lane
            // the key holds B too: the bucket's gathers read the frame embeddings of all B lanes
            run_ops(be, tap, k_rec_root_b | uint64_t(B) << 24 | uint64_t(Bk) << 8 | uint64_t(c), [&] {
            // the bucket's frame embeddings, half-major like stage 1's  [2, Bk, 4, E]
            be.embed_heads(st.frame, 1, B, P * E, st.pick, Bk, st.frame2);
            be.embed_heads(st.frame + BP * E, 1, B, P * E, st.pick, Bk, st.frame2 + Bk * P * E);

            // the decoder's external condition, on a branch (it needs only the frame embeddings):
            // the frame embedding without the slot embedding, or the "no frame" vector, at the
            // context frames 0..3 and the target frames 4n−4..4n−1
            const int ext = be.branch([&] {
                be.copy_rows(conv_no_frame_emb, 0, Bk * F, E, st.ext, E);
                for (int64_t s = 0; s < S; ++s) {
                    const int64_t f = s < P ? s : F - P + (s - P);
                    be.where_rows(st.has_frame2 + s * Bk, st.frame2 + (s / P) * Bk * P * E + (s % P) * E, P * E,
                                  conv_no_frame_emb, 0, Bk, E, st.ext + f * E, F * E);
                }
            });

            // stage 2: [chosen-duration embedding, frames + slot embedding, position rows 0..n−1]  [Bk, 1 + 8 + n, E];
            // padded token rows are masked keys upstream, so the valid length alone gives the same rows.
            // Its parts are written by branches (rows apart)
            if (hp.n_layer_token > 0) {
                const int fixed = be.branch([&] {
                    be.copy_rows(middle_token_emb + c * E, 0, Bk, E, st.x2, R * E);
                    be.copy_rows(position_emb, 0, Bk, n * E, st.x2 + (1 + S) * E, R * E);
                });
                const int target = be.branch([&] {
                    be.add(st.frame2 + Bk * P * E, input_position_emb + P * E, Bk * P * E, st.fs + Bk * P * E, P * E);
                    be.copy_rows(st.fs + Bk * P * E, P * E, Bk, P * E, st.x2 + (1 + P) * E, R * E);
                });
                be.add(st.frame2, input_position_emb, Bk * P * E, st.fs, P * E);
                be.copy_rows(st.fs, P * E, Bk, P * E, st.x2 + E, R * E);
                be.join_branch(fixed);
                be.join_branch(target);
                tap_f32(tap, be, "root_token_tf_in", st.x2, {R, E});
                token_tf.forward(be, st.x2, R, st.tf, Bk);
                tap_f32(tap, be, "root_token_tf_out", st.x2, {R, E});
                be.copy_rows(st.x2 + (1 + S) * E, R * E, Bk, n * E, st.conv_in, n * E);
            } else {
                be.copy_rows(position_emb, 0, Bk, n * E, st.conv_in, n * E);
            }
            be.join_branch(ext);
            tap_f32(tap, be, "root_conv_ext", st.ext, {F, E});

            // conv decoder: [n, E] tokens → [4n, 5] normalised global root, per lane
            conv_output.forward(be, st.conv_in, n, n, st.ext, st.tgt, st.has_tgt, st.y, st.dec, Bk);
            });
            st.ms_stage2 += ms_since(t0);
            t0 = clock_type::now();
            if (on_bucket) {
                on_bucket(root_bucket{n, st.idx_host.data(), Bk, st.y});
                continue;
            }
            be.get(bptr<const float>(st.y), st.y_host.data(), Bk * F * G);
            for (int64_t i = 0; i < Bk; ++i) {
                root_result & res = out[st.idx_host[size_t(i)]];
                res.global_root.assign(st.y_host.begin() + i * F * G, st.y_host.begin() + (i + 1) * F * G);
            }
            st.ms_conv += ms_since(t0);
        }
    }
    if (all_forced) {
        be.join_concurrent();
        read_logits();
    }
}

} // namespace mb
