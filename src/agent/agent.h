// the animation agent of upstream's interactive demo (motion_backbone/demo/full_agent.py
// as scripts/interactive_demo_g1.py drives it): canonicalise the 4 context frames,
// spring-model the root, take 4 target frames from the style clip, build the predict
// inputs, run predict, un-canonicalise to MuJoCo qpos and blend the seam
#pragma once

#include "format/style.h"
#include "motion/predict.h"
#include "motion/qpos.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mb {

constexpr int k_agent_context = 4;      // context and target frames per plan
constexpr int k_agent_replan  = 16;     // frames shown per plan in the upstream demo (generate_dt 2 × 8/30 s)

// what one plan should do; directions are MuJoCo world vectors (x forward, y left, z up; z ignored)
struct agent_command {
    int      style        = 0;              // index into the agent's styles
    float    movement[3]  = {0, 0, 0};      // movement direction (any length; zero turns in place)
    float    facing[3]    = {1, 0, 0};      // facing direction
    float    target_speed = -1.0f;          // m/s; negative: the style's configured speed
    uint64_t seed         = 0;              // target clip frame k = seed mod (style frames − 4)
    bool     argmax       = true;           // pose tokens by argmax (else Gumbel with the seed)
    bool     has_target   = false;          // a world target replaces the spring's goal (upstream
    float    target[3]    = {0, 0, 0};      //   specific_target_positions: MuJoCo world, z ignored)
    float    target_heading = 0;            //   and its heading (rad about MuJoCo z, like the root yaw)
};

// every intermediate of one plan in upstream's canonical frame (tests compare these)
struct agent_trace {
    std::array<float, k_agent_context * 36> context_raw{};    // [4, 36] context qpos, world
    std::array<float, k_agent_context * 36> context_canon{};  // [4, 36] after canonicalisation
    double yaw0 = 0;                                // context frame 0 yaw (rad about MuJoCo z)
    double p0[3] = {0, 0, 0};                       // context frame 0 position with z = 0
    double movement_canon[3] = {0, 0, 0};           // command directions, canonical
    double facing_canon[3]   = {0, 0, 0};
    std::vector<float> context_pos;                 // [4, 34, 3] canonical context transforms
    std::vector<float> context_rot;                 // [4, 34, 9]
    double start_pos[4][2]{};                       // position spring, motion (x, z)
    double target_pos[4][2]{};
    double start_heading[4]{};                      // heading spring (rad about +Y)
    double target_heading[4]{};
    int    style_final = 0;                         // after the walk → walk_left/right remap
    int    clip_frame  = 0;                         // k
    std::vector<float> target_joint_pos;            // [4, 34, 3] realigned clip frames (root-relative xz)
    std::vector<float> target_joint_rot;            // [4, 34, 9]
    std::vector<float> target_root;                 // [4, 3] (spring x, clip root y, spring z)
    std::vector<float> context_pos_realigned;       // [4, 34, 3] after source realignment
    std::vector<float> context_rot_realigned;       // [4, 34, 9]
    predict_request    request;                     // the predict inputs
    predict_result     result;                      // predict output (canonical)
    std::vector<float> qpos_canon;                  // [4n, 36] generated, canonical
    std::vector<float> qpos_uncanon;                // [4n, 36] generated, world, before the blend
};

struct agent_plan {
    int                frames = 0;          // 4n (24..64)
    int                style  = 0;          // style that supplied the targets (after the remap)
    int                num_tokens = 0;      // n
    std::vector<float> qpos;                // [frames, 36] world, seam-blended, quaternion w first
    std::vector<float> root_translations;   // [frames, 3] pelvis position, world, motion space (Y up, m)
    std::vector<float> local_rotations_xyzw;// [frames, 34, 4] parent-relative rotations (root: world)
    std::vector<float> joint_positions;     // [frames, 34, 3] world joint positions (FK of the qpos)
    std::vector<float> joint_rotations;     // [frames, 34, 9] world global rotations, row-major
    std::vector<float> target_positions;    // [4, 34, 3] the placed target poses, world, motion space
    std::vector<float> target_rotations;    // [4, 34, 9] their global rotations
    std::vector<float> target_local_rotations_xyzw;   // [4, 34, 4]
};

// parent-relative rotations as quaternions x, y, z, w of `frames` frames of global rotations
// [frames, 34, 9] (the root's parent is the world; pytorch3d branch rule)
void local_rotations_xyzw(const float * global_rotations, int64_t frames, float * out);

// the styles one plan may use, borrowed: cmd.style indexes it, and the idle rule and the walk →
// walk_left/right remap look styles up in it by name
using style_refs = std::vector<const style_asset *>;
style_refs refs_of(const std::vector<style_asset> & styles);

// steps (a)–(e): canonicalisation, springs, remap, targets, realignment and the predict
// request; `context` is [4, 36] world qpos; throws std::invalid_argument on a bad command
void agent_prepare(const style_refs & styles, const qpos_converter & conv, const float * context,
                   const agent_command & cmd, agent_trace & t);
inline void agent_prepare(const std::vector<style_asset> & styles, const qpos_converter & conv, const float * context,
                          const agent_command & cmd, agent_trace & t) {
    agent_prepare(refs_of(styles), conv, context, cmd, t);
}

// steps (f)–(g): predict output → canonical qpos → world qpos (t.qpos_uncanon) → the plan
// with the seam blended against the raw context; reads t.result
agent_plan agent_finish(const qpos_converter & conv, agent_trace & t);

class agent {
public:
    // `model` is borrowed and must outlive the agent; styles are copied. The initial buffer
    // is the "idle" style's clip (else style 0) as upstream's reset builds it
    agent(const motion_model & model, std::vector<style_asset> styles);
    // an agent without styles of its own, for callers that pass styles with each plan (the C
    // ABI): no buffer until reset(style), set_context or the first plan (from its style's clip)
    explicit agent(const motion_model & model);

    // predict on `st` (borrowed: it must outlive the agent and its copies; copies share it, so
    // only one of them plans at a time); null, the default, borrows a state from the model's pool
    void use_state(predict_state * st) { state_ = st; }

    const std::vector<style_asset> & styles() const { return styles_; }
    int find_style(const std::string & name) const;     // -1 when absent

    // back to the initial buffer, cursor 0
    void reset();
    // the initial buffer from `initial`'s clip instead of the idle style's, cursor 0
    void reset(const style_asset & initial);
    // no buffer: the next plan starts from its style's clip
    void clear();
    bool has_context() const { return !buffer_.empty(); }
    // replaces the buffer with `frames` ≥ 4 world qpos frames [frames, 36]; cursor 0
    void set_context(const float * qpos, int frames);
    // plans from the 4 buffer frames at the cursor; the plan becomes the buffer, cursor 0
    agent_plan plan(const agent_command & cmd, agent_trace * trace = nullptr);
    // the same with the caller's styles (cmd.style indexes `styles`; the agent's own are unused)
    agent_plan plan(const style_refs & styles, const agent_command & cmd, agent_trace * trace = nullptr);
    agent_plan plan(const std::vector<style_asset> & styles, const agent_command & cmd, agent_trace * trace = nullptr) {
        return plan(refs_of(styles), cmd, trace);
    }
    // moves the cursor (clamped to the buffer's last frame)
    void advance(int frames);
    // upstream's replan rule: the cursor reached frame 16 or the buffer's last frame, unless
    // the last plan and `cmd` are both idle (then the buffer plays out and holds its last frame)
    bool replan_due(const agent_command & cmd) const;
    // the style of the last plan (after the remap), -1 before the first
    int last_style() const { return last_style_; }

    int                        cursor() const { return cursor_; }
    const std::vector<float> & buffer() const { return buffer_; }   // [frames, 36]

private:
    const motion_model &     model_;
    predict_state *          state_ = nullptr;  // borrowed; null = the model's pool
    std::vector<style_asset> styles_;
    qpos_converter           conv_;
    std::vector<float>       buffer_;      // [frames, 36] world qpos
    int                      cursor_     = 0;
    int                      last_style_ = -1;
};

} // namespace mb
