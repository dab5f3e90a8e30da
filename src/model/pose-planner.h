// the pose-token planner (upstream pose_backbone_network) and its iterative masked
// decoding (motion_inference._predict_pose_tokens): tokens [n, H] from the root
// trajectory and the keyframe poses. Tensor names are the state-dict keys with
// "backbone_net." stripped; sizes come from the shapes, n_head from metadata
// "motionbricks.n_head" (default 16).
#pragma once

#include "backend/backend.h"
#include "format/tensor.h"
#include "model/layers.h"
#include "model/transformer.h"

#include <cstdint>
#include <vector>

namespace mb {

struct pose_hparams {
    int64_t n_embd           = 0;   // transformer width (1024)
    int64_t n_head           = 0;   // attention heads (16), metadata motionbricks.n_head
    int64_t n_layer          = 0;   // encoder layers (16)
    int64_t n_ff             = 0;   // FFN width (2048)
    int64_t n_tok_head       = 0;   // tokenizer heads H (8)
    int64_t n_code           = 0;   // codes per head C (10); the [MASK] id is n_code
    int64_t tok_dim          = 0;   // token embedding width per head (32)
    int64_t n_mlp_layer      = 0;   // FCBlock hidden layers of the token MLP (2)
    int64_t pose_feat_width  = 0;   // token / keyframe pose features per token (640)
    int64_t root_feat_width  = 0;   // root condition features per token (256)
    int64_t dur_feat_width   = 0;   // duration embedding width (128)
    int64_t frames_per_token = 0;   // 4
    int64_t root_dim         = 0;   // root condition per frame: normalised global x, z, cos, sin (4)
    int64_t pose_dim         = 0;   // keyframe pose per frame, normalised (304)
    int64_t max_tokens       = 0;   // rows of the position table (16)
    int64_t min_tokens       = 0;   // max_tokens − duration rows + 1 (6)

    int32_t mask_id() const { return (int32_t) n_code; }
};

// what one decode conditions on; all per-frame arrays cover the 4n valid frames (of every lane,
// back to back, for a decode of several lanes)
struct pose_cond_inputs {
    int64_t         n             = 0;          // valid tokens L (min_tokens..max_tokens)
    const float *   root_cond     = nullptr;    // [4n, root_dim] normalised global x, z, cos h, sin h
                                                // (null: decode finds it in st.root_cond, written on the backend)
    const float *   pose_cond     = nullptr;    // [4n, pose_dim] normalised keyframe poses (0 elsewhere)
    const uint8_t * has_pose_cond = nullptr;    // [4n] nonzero where pose_cond holds a keyframe
};

struct pose_decode_options {
    int           n_steps    = 1;           // num_inference_steps ≥ 1
    bool          use_argmax = true;        // false = Gumbel-max with the uniforms below
    const float * uniforms   = nullptr;     // Gumbel only: [n_steps, max_tokens, H, C] draws in [0, 1)
                                            // per lane ([lanes, n_steps, max_tokens, H, C])
};

// decodes of up to this many steps upload their draws at once and run as one recording
// (more steps upload each step's draws into the first slot)
inline constexpr int k_recorded_steps = 16;

// inputs, activations and outputs of one decode of up to `lanes` lanes, sized once for max_tokens
// tokens per lane (each array below holds `lanes` lanes)
struct pose_planner_state {
    int64_t                         lanes = 1;
    bptr<float>                     root_cond;      // [4·max_tokens, root_dim] input
    bptr<float>                     pose_cond;      // [4·max_tokens, pose_dim] input
    bptr<uint8_t>                   has_pose_cond;  // [4·max_tokens] input
    bptr<float>                     uniforms;       // [k_recorded_steps, lanes (of the call), n·H, C] Gumbel draws
    bptr<float>                     tok;            // [max_tokens, H·tok_dim] gathered token embeddings
    bptr<float>                     mlp_a;          // [max_tokens, pose_feat_width]
    bptr<float>                     mlp_b;          // [max_tokens, pose_feat_width]
    bptr<float>                     feat;           // [max_tokens, pose_feat_width] token MLP output
    bptr<float>                     cond;           // [4·max_tokens, pose_feat_width / 4] keyframe pose embeddings
    bptr<float>                     frames;         // [4·max_tokens, pose_feat_width / 4] chosen per frame
    bptr<float>                     root;           // [max_tokens, root_feat_width]
    bptr<float>                     cat;            // [max_tokens, pose + root + dur feature widths]
    bptr<float>                     x;              // [max_tokens, n_embd] transformer input, then output
    bptr<float>                     logits;         // [max_tokens, H·C]
    bptr<float>                     prob;           // [max_tokens, H] probability of each chosen token
    bptr<int32_t>                   tokens;         // [max_tokens, H] current tokens
    std::unique_ptr<backend_buffer> mem;            // holds the arrays above
    transformer_state               tf;
    std::vector<float>              uniforms_host;  // staging for uniforms, in its layout
    row_staging                     pose_rows;      // pose_cond's keyframe rows (upload_selected_rows)

    pose_planner_state() = default;
    pose_planner_state(backend & be, const pose_hparams & hp, int64_t lanes = 1);
};

struct pose_planner {
    pose_hparams      hp;
    bptr<const float> token_emb;        // _pose_token_emb [H·(C+1), tok_dim], row h·(C+1) + token
    fc_block_weights  token_mlp;        // _proj_pose_token_emb: H·tok_dim → pose_feat_width
    linear_weights    proj_root;        // _proj_local_root_values: 4·root_dim → root_feat_width
    linear_weights    proj_pose;        // _proj_local_pose: pose_dim → pose_feat_width / 4
    bptr<const float> dur_emb;          // _proj_num_valid_positions [max−min+1, dur_feat_width]
    linear_weights    proj_input;       // _proj_input.0: pose+root+dur widths → n_embd (ReLU)
    bptr<const float> position_emb;     // _position_emb.embed [max_tokens, 1, n_embd]
    transformer       tf;               // _transformer_model
    linear_weights    proj_logit;       // _proj_pose_output_logit: n_embd → H·C, column h·C + c
    weight_buffers    weights;          // backend memory of every tensor above

    // validates every tensor and uploads the weights through `be`;
    // throws mb::error (incompatible_model) naming the first problem
    static pose_planner load(const tensor_source & src, backend & be);

    // one backbone pass: tokens[n, H] (0..C, C = [MASK]) → logits[n, H, C] (host arrays);
    // taps "pose_tf_in" and "pose_tf_out" [n, n_embd]
    void logits(backend & be, pose_planner_state & st, const pose_cond_inputs & in, const int32_t * tokens,
                float * logits, const tap_fn & tap = {}) const;

    // upstream's iterative masked decoding (see pose-planner.cpp); tokens_out[n, H]; taps per step
    // "step_pose_tokens_in" [1, n, H] (the tokens the backbone sees, C = [MASK]),
    // "step_remask_prob_in" [1, n, H] (the probabilities that chose the re-masked tokens),
    // "step_pose_tf_in", "step_pose_tf_out" [1, n, n_embd] and "step_pose_logits" [1, n, H, C];
    // throws mb::error (invalid_argument) on bad options (n out of range, n_steps < 1, Gumbel without uniforms).
    // n_batch lanes (up to st.lanes) of the same n and options: inputs, uniforms and tokens_out
    // hold the lanes back to back, and each lane decodes as if alone (taps only with one lane).
    // tokens_out may be null: the tokens then stay in st.tokens [n_batch, n, H], not downloaded
    void decode(backend & be, pose_planner_state & st, const pose_cond_inputs & in, const pose_decode_options & opt,
                int32_t * tokens_out, const tap_fn & tap = {}, int64_t n_batch = 1) const;

private:
    void check_inputs(const pose_cond_inputs & in, const pose_planner_state & st, int64_t n_batch) const;
    void upload_inputs(backend & be, pose_planner_state & st, const pose_cond_inputs & in, int64_t n_batch) const;
    // the backbone on st's inputs and st.tokens → st.logits; tf_in / tf_out tap names
    void backbone(backend & be, pose_planner_state & st, int64_t n, int64_t n_batch, const tap_fn & tap,
                  const char * tf_in, const char * tf_out, bool stepped) const;
};

// number of tokens re-masked before step `step` of n_steps for n valid tokens and H heads:
// max(1, trunc(float32(cos(step/n_steps·π/2))·n·H)), products in float32 like upstream
int64_t pose_remask_count(int step, int n_steps, int64_t n, int64_t n_tok_head);

} // namespace mb
