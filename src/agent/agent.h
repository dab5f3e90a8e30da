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

// what one plan should do. The one input contract: every vector is in motion space (Y up, metres;
// x left, z forward), converted to MuJoCo once, inside agent_prepare. Style roles are explicit
struct agent_command {
    const style_asset * style          = nullptr;  // the main style: duration mask, speed, target clip (borrowed)
    const style_asset * sidestep_left  = nullptr;  // both or neither: upstream's blend-space remap takes
    const style_asset * sidestep_right = nullptr;  //   the targets from these when moving sideways (borrowed)
    bool     idle         = false;          // the idle role: spring from the current velocity, targets held
    float    movement[3]  = {0, 0, 0};      // travel direction; y ignored, normalised on the ground plane;
                                            //   shorter than 1e-5 turns in place (upstream's rule)
    float    facing[3]    = {0, 0, 1};      // facing direction (y ignored)
    float    target_speed = -1.0f;          // m/s; negative: the style's configured speed
    uint64_t seed         = 0;              // target clip frame k = seed mod (style frames − 4)
    bool     argmax       = true;           // pose tokens by argmax (else Gumbel with the seed)
    bool     has_target   = false;          // a world target replaces the spring's goal (upstream
    float    target[3]    = {0, 0, 0};      //   specific_target_positions: world position, y ignored)
    float    target_heading = 0;            //   and its heading (rad about +Y)
};

// every intermediate of one plan in upstream's canonical frame (tests compare these)
struct agent_trace {
    std::array<float, k_agent_context * k_qpos_dim> context_raw{};    // [4, 36] context qpos, world
    std::array<float, k_agent_context * k_qpos_dim> context_canon{};  // [4, 36] after canonicalisation
    double yaw0 = 0;                                // context frame 0 yaw (rad about MuJoCo z)
    double p0[3] = {0, 0, 0};                       // context frame 0 position with z = 0
    double movement_canon[3] = {0, 0, 0};           // command directions, MuJoCo, canonical
    double facing_canon[3]   = {0, 0, 0};
    std::vector<float> context_pos;                 // [4, 34, 3] canonical context transforms
    std::vector<float> context_rot;                 // [4, 34, 9]
    double start_pos[4][2]{};                       // position spring, motion (x, z)
    double target_pos[4][2]{};
    double start_heading[4]{};                      // heading spring (rad about +Y)
    double target_heading[4]{};
    const style_asset * style_final = nullptr;      // the style of the targets, after the side-step remap
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
    double world_rotation[9]{};                     // canonical motion space → world motion space:
    double world_offset[3]{};                       //   x ← R x + d (the map the plan and targets use)
};

struct agent_plan {
    int                frames = 0;          // 4n (24..64)
    const style_asset * style = nullptr;    // style that supplied the targets (after the remap), borrowed
    int                num_tokens = 0;      // n
    std::vector<int32_t> tokens;            // [n, 8] pose tokens
    predict_timings    timings;             // predict's stage times
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

// steps (a)–(e): canonicalisation, springs, remap, targets, realignment and the predict
// request; `context` is [4, 36] world qpos; throws mb::error (invalid_argument) on a bad command
void agent_prepare(const qpos_converter & conv, const float * context, const agent_command & cmd, agent_trace & t);

// steps (f)–(g): predict output → canonical qpos → world qpos (t.qpos_uncanon) → the plan
// with the seam blended against the raw context; reads t.result
agent_plan agent_finish(const qpos_converter & conv, agent_trace & t);

// the history (a buffer of world qpos frames and a cursor) and the planner
class agent {
public:
    // `model` is borrowed and must outlive the agent. No history until reset(style),
    // set_context or the first plan (which starts from its style's clip)
    explicit agent(const motion_model & model);

    // predict on `st` (borrowed: it must outlive the agent and its copies; copies share it, so
    // only one of them plans at a time); null, the default, borrows a state from the model's pool
    void use_state(predict_state * st) { state_ = st; }

    // the history from `initial`'s clip as upstream's reset builds it (padded to 64 frames), cursor 0
    void reset(const style_asset & initial);
    // no history: the next plan starts from its style's clip
    void clear();
    bool has_context() const { return !buffer_.empty(); }
    // replaces the buffer with `frames` ≥ 4 world qpos frames [frames, 36]; cursor 0
    void set_context(const float * qpos, int frames);
    // plans from the 4 buffer frames at the cursor; the plan becomes the buffer, cursor 0.
    // Throws mb::error: invalid_argument for a bad command, compute_failed when predict fails
    // `tap` receives predict's named intermediates
    agent_plan plan(const agent_command & cmd, agent_trace * trace = nullptr, const trace_fn & tap = {});
    // plan() in two halves around predict, so that a batch predicts many agents' requests fused:
    // begin_plan fills t through t.request (validated; the history is seeded from the style's clip
    // when empty), finish_plan turns t.result into the plan and makes it the history
    void       begin_plan(const agent_command & cmd, agent_trace & t);
    agent_plan finish_plan(const agent_command & cmd, agent_trace & t);
    // moves the cursor (clamped to the buffer's last frame)
    void advance(int frames);
    // upstream's replan rule: the cursor reached frame 16 or the buffer's last frame, unless
    // the last plan and `cmd` both play the idle role (then the buffer plays out and holds its last frame)
    bool replan_due(const agent_command & cmd) const;
    // the ground-plane facing of the buffer frame at the cursor, motion space (x, 0, z), unit
    // up to upstream's 1e-5; (0, 0, 1) without a history
    void facing(float * out) const;

    int                        cursor() const { return cursor_; }
    const std::vector<float> & buffer() const { return buffer_; }   // [frames, 36]

private:
    const motion_model & model_;
    predict_state *      state_ = nullptr;   // borrowed; null = the model's pool
    qpos_converter       conv_;
    std::vector<float>   buffer_;            // [frames, 36] world qpos
    int                  cursor_    = 0;
    bool                 last_idle_ = false; // the last plan played the idle role
};

} // namespace mb
