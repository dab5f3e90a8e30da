// the root planner (upstream root_backbone_network): from 8 constraint frames
// (4 context, 4 target; normalised) it classifies the duration n (6..16 tokens,
// or "out of reach"), then predicts the normalised global root trajectory of the
// 4n frames with a second transformer and a DoubleCondDecoder. Tensor names are
// the state-dict keys with "backbone_net." stripped; sizes come from the shapes,
// n_head from metadata "motionbricks.n_head" (default 16) and the conv dilation
// growth from "motionbricks.dilation_growth" (default 3).
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/cond-decoder.h"
#include "model/layers.h"
#include "model/transformer.h"

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace mb {

struct root_planner;

struct root_hparams {
    int64_t n_embd           = 0;   // transformer width E (512)
    int64_t n_head           = 0;   // attention heads (16), metadata motionbricks.n_head
    int64_t n_ff             = 0;   // FFN width (2048)
    int64_t n_layer_shared   = 0;   // stage-1 encoder layers (3)
    int64_t n_layer_token    = 0;   // stage-2 encoder layers (3; 0 = no stage-2 transformer)
    int64_t pose_feat        = 0;   // _proj_local_pose width (256)
    int64_t local_root_feat  = 0;   // _proj_local_root_value width (64)
    int64_t global_root_feat = 0;   // _proj_global_root_value width (64)
    int64_t pose_dim         = 0;   // normalised pose per frame (304)
    int64_t local_root_dim   = 0;   // normalised local root per frame (4)
    int64_t global_root_dim  = 0;   // normalised global root per frame (5)
    int64_t frames_per_token = 0;   // 4; also the number of context (and target) slots
    int64_t max_tokens       = 0;   // 16 (rows of the position table)
    int64_t min_tokens       = 0;   // 6
    int64_t n_class          = 0;   // duration classes: max − min + 1 counts, then out-of-reach (12)

    int64_t n_slots() const { return 2 * frames_per_token; }          // constraint frames (8)
    int64_t masked_class() const { return n_class; }                   // input row for "predict" (12)
};

// one constraint set, normalised like upstream predict step 1
struct root_inputs {
    const float *   global_root = nullptr;  // [8, 5] normalised recentred global root
    const uint8_t * has_global  = nullptr;  // [8] nonzero = given
    const float *   local_root  = nullptr;  // [8, 4] normalised local root
    const uint8_t * has_local   = nullptr;  // [8]
    const float *   poses       = nullptr;  // [8, 304] normalised poses (root height first)
    const uint8_t * has_pose    = nullptr;  // [8]
    int64_t         num_tokens  = 0;        // 0 = predict, else forced min..max
    const uint8_t * allowed     = nullptr;  // [max − min + 1] nonzero = allowed count (null = all)
    bool            allow_out_of_reach = false;     // upstream config allow_pred_out_of_reach_num_tokens
};

// inputs and activations of one run of up to `lanes` lanes (each array holds every lane). The
// constraint slots lie half-major: rows [half (context, target), lane, slot in half], so each
// FCBlock runs on the rows of all lanes at once
struct root_planner_state {
    int64_t                         lanes = 1;
    bptr<float>                     global_root;    // [2, lanes, 4, 5] input
    bptr<float>                     local_root;     // [2, lanes, 4, 4] input
    bptr<float>                     poses;          // [2, lanes, 4, pose_dim] input
    bptr<uint8_t>                   has;            // [4, 2, lanes, 4] input: has_pose, has_local, has_global, has_frame
    bptr<int32_t>                   rows;           // [lanes] input: duration embedding row per lane
    bptr<float>                     emb;            // [2·lanes·4, pose + local + global root feats] per-frame embeddings
    bptr<float>                     tmp;            // [3, 2·lanes·4, feat width] projection scratch, a part each
    bptr<float>                     mlp_a;          // [2, lanes·4, FCBlock width] FCBlock scratch, a half each
    bptr<float>                     mlp_b;          // [2, lanes·4, FCBlock width]
    bptr<float>                     frame;          // [2·lanes·4, E] frame embeddings (before the slot embedding)
    bptr<float>                     fs;             // [2·lanes·4, E] frame + slot embeddings of stage 2
    bptr<float>                     fs1;            // [2·lanes·4, E] those of stage 1, which may run beside stage 2
    bptr<float>                     row_emb;        // [lanes, E] duration embeddings, then logit inputs
    bptr<float>                     x1;             // [lanes, 1 + 8, E] stage-1 sequence
    bptr<float>                     logits;         // [lanes, n_class] duration logits
    bptr<int32_t>                   pick;           // [lanes] input: stage-1 lanes of one stage-2 bucket
    bptr<uint8_t>                   has_frame2;     // [8, lanes] input: has_frame of the bucket, slot-major
    bptr<float>                     frame2;         // [2·lanes·4, E] the bucket's frame embeddings
    bptr<float>                     x2;             // [lanes, 1 + 8 + max_tokens, E] stage-2 sequence
    bptr<float>                     conv_in;        // [lanes, max_tokens, E] decoder input
    bptr<float>                     ext;            // [lanes, 4·max_tokens, E] decoder external condition
    bptr<float>                     tgt;            // [lanes, 4·max_tokens, 5] decoder target condition (input)
    bptr<uint8_t>                   has_tgt;        // [lanes, 4·max_tokens] (input)
    bptr<float>                     y;              // [lanes, 4·max_tokens, 5] decoder output
    std::unique_ptr<backend_buffer> mem;            // holds the arrays above
    transformer_state               tf;             // sized for lanes × (1 + 8 + max_tokens) rows
    transformer_state               tf1;            // stage 1's (lanes × (1 + 8) rows), which may run beside stage 2
    cond_decoder_state              dec;
    std::vector<float>              in_host;        // [2, lanes, 4, pose_dim] staging for the inputs
    std::vector<uint8_t>            has_host;       // [4, 2, lanes, 4] staging for has
    std::vector<int32_t>            idx_host;       // [lanes] staging for rows / pick
    std::vector<uint8_t>            done_host;      // [lanes] lane already in a stage-2 bucket
    std::vector<float>              logits_host;    // [lanes, n_class]
    std::vector<float>              tgt_host;       // [lanes, 4·max_tokens, 5] staging for tgt
    std::vector<uint8_t>            has_tgt_host;   // [lanes, 4·max_tokens] staging for has_tgt, then has_frame2
    std::vector<float>              y_host;         // [lanes, 4·max_tokens, 5]
    int64_t                         failed_lane = -1;   // the lane whose failure the last run threw (-1: none)
    // last run's host time per part; the embeddings, shared transformer and logits are one
    // recording, stage 2 and the conv decoder another (one per duration bucket), so on an
    // asynchronous backend the compute shows where results are read back (ms_stage1, ms_conv)
    double                          ms_embed  = 0.0;    // embeddings → logits issued
    double                          ms_stage1 = 0.0;    // logits read back, duration chosen
    double                          ms_stage2 = 0.0;    // conditions uploaded, stage 2 + conv decoder issued
    double                          ms_conv   = 0.0;    // global root read back

    root_planner_state() = default;
    root_planner_state(backend & be, const root_planner & rp, int64_t lanes = 1);
};

struct root_result {
    std::array<float, 16> logits{};     // [n_class] masked duration logits (−inf where masked)
    int64_t               n = 0;        // tokens (min..max)
    std::vector<float>    global_root;  // [4n, 5] normalised global root trajectory
};

// one stage-2 bucket of run_batch, handed to its caller while the trajectory is still on the
// backend: n tokens, the bucket's lanes (indices into the call's lanes, valid during the call) and
// y [n_lanes, 4n, 5], the normalised global root of each, which the next bucket overwrites
struct root_bucket {
    int64_t           n       = 0;
    const int32_t *   lanes   = nullptr;
    int64_t           n_lanes = 0;
    bptr<const float> y;
};
using root_bucket_fn = std::function<void(const root_bucket &)>;

struct root_planner {
    root_hparams     hp;
    bptr<const float> no_local_pose_emb;            // [pose_feat]
    bptr<const float> no_local_root_emb;            // [local_root_feat]
    bptr<const float> no_global_root_emb;           // [global_root_feat]
    bptr<const float> conv_no_frame_emb;            // [E]
    linear_weights   proj_local_pose;               // pose_dim → pose_feat
    linear_weights   proj_local_root;               // 4 → local_root_feat
    linear_weights   proj_global_root;              // 5 → global_root_feat
    fc_block_weights proj_start;                    // FCBlock feats → E for the context slots
    fc_block_weights proj_end;                      // FCBlock feats → E for the target slots
    bptr<const float> input_position_emb;           // [8, E] slot embedding
    bptr<const float> input_num_tokens;             // [n_class + 1, E] row = count − min (last = predict)
    bptr<const float> position_emb;                 // [max_tokens, 1, E] fixed sinusoid
    linear_weights   proj_logit;                    // E → n_class
    bptr<const float> middle_token_emb;             // [n_class, E] chosen duration (stage 2)
    transformer      shared_tf;                     // _shared_transformer_model
    transformer      token_tf;                      // _root_token_transformer_model (n_layer_token > 0)
    cond_decoder     conv_output;                   // _conv_output
    weight_buffers   weights;                       // backend memory of every tensor above

    // validates every tensor and uploads the weights through `be`;
    // throws mb::error (incompatible_model) naming the first problem
    static root_planner load(const tensor_source & src, backend & be);

    // stage 1, stage 2 and the conv decoder; throws mb::error: invalid_argument on a bad forced
    // count, compute_failed when the out-of-reach class wins (no trajectory exists).
    // Taps (the fixtures' dbg_root_* names): "root_shared_tf_in", "root_shared_tf_out" [1 + 8, E],
    // "root_token_tf_in", "root_token_tf_out" [1 + 8 + n, E] (rows of padded tokens are not
    // computed), "root_conv_ext" [4n, E], "root_conv_tgt" [4n, 5], "root_conv_has_tgt" [4n]
    root_result run(backend & be, root_planner_state & st, const root_inputs & in, const tap_fn & tap = {}) const;

    // the same for n_batch independent lanes (up to st.lanes) sharing every weight read: stage 1
    // for all lanes, then stage 2 and the conv decoder once per chosen duration. out[i] is what
    // run(in[i]) gives. On a failure it throws the first failing lane's error (st.failed_lane names
    // it); taps only with one lane. With `group` ([n_batch] keys), lanes of one duration form a
    // stage-2 bucket only where their keys are equal too. With `on_bucket`, each bucket's trajectory
    // stays on the backend and goes to on_bucket right after its stage 2 is issued, and out[i].global_root
    // stays empty (no copy back, no wait)
    void run_batch(backend & be, root_planner_state & st, const root_inputs * in, int64_t n_batch, root_result * out,
                   const tap_fn & tap = {}, const int64_t * group = nullptr, const root_bucket_fn & on_bucket = {}) const;
};

} // namespace mb
