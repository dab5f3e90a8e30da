/*
 * examples/agent.c — the animation agent through the C ABI: load a model and a style, plan a
 * transition, play 16 frames of it (advance), plan again, and print what each plan holds.
 *
 *     agent BUNDLE_DIR STYLE.mbstyle [THREADS]
 *
 * Build: cc -std=c11 agent.c $(pkg-config --cflags --libs motionbricks) -o agent
 */
#include <motionbricks/motionbricks.h>

#include <stdio.h>
#include <stdlib.h>

/* prints the failed call and its message, then leaves */
static void check(mb_status status, const char * what, const char * error) {
    if (status != MB_OK) {
        fprintf(stderr, "%s failed: %s: %s\n", what, mb_status_string(status), error);
        exit(1);
    }
}

static void describe(const char * label, const mb_motion * motion) {
    char          error[256];
    uint64_t      frames = 0, targets = 0, values = 0;
    const float * roots  = NULL;
    check(mb_motion_get_frame_count(motion, &frames, error, sizeof error), "mb_motion_get_frame_count", error);
    check(mb_motion_get_target_frame_count(motion, &targets, error, sizeof error), "mb_motion_get_target_frame_count",
          error);
    check(mb_motion_get_root_translations(motion, &roots, &values, error, sizeof error),
          "mb_motion_get_root_translations", error);
    printf("%s: %llu frames, %llu target frames, root (%.3f, %.3f, %.3f) -> (%.3f, %.3f, %.3f)\n", label,
           (unsigned long long) frames, (unsigned long long) targets, roots[0], roots[1], roots[2],
           roots[values - 3], roots[values - 2], roots[values - 1]);

    /* what a robot pipeline takes: G1 MuJoCo qpos per frame (root xyz, quaternion wxyz, 29 hinges) */
    const float * qpos = NULL;
    check(mb_motion_get_mujoco_qpos(motion, &qpos, &values, error, sizeof error), "mb_motion_get_mujoco_qpos", error);
    printf("%s: qpos frame 0: root (%.3f, %.3f, %.3f), quaternion (%.3f, %.3f, %.3f, %.3f), hinge 0 %.3f rad\n", label,
           qpos[0], qpos[1], qpos[2], qpos[3], qpos[4], qpos[5], qpos[6], qpos[7]);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BUNDLE_DIR STYLE.mbstyle [THREADS]\n", argv[0]);
        return 2;
    }
    char                 error[512];
    mb_runtime_options * options = NULL;
    mb_model *           model   = NULL;
    mb_style *           style   = NULL;
    mb_agent *           agent   = NULL;
    mb_command *         command = NULL;
    mb_motion *          first   = NULL;
    mb_motion *          second  = NULL;

    check(mb_runtime_options_create(&options, error, sizeof error), "mb_runtime_options_create", error);
    if (argc > 3) {
        check(mb_runtime_options_set_threads(options, (uint32_t) strtoul(argv[3], NULL, 10), error, sizeof error),
              "mb_runtime_options_set_threads", error);
    }
    check(mb_model_load(argv[1], options, &model, error, sizeof error), "mb_model_load", error);
    mb_runtime_options_free(options); /* copied by the load */

    check(mb_style_load(model, argv[2], &style, error, sizeof error), "mb_style_load", error);
    const char * name  = NULL;
    float        speed = 0.0f;
    check(mb_style_get_name(style, &name, error, sizeof error), "mb_style_get_name", error);
    check(mb_style_get_speed(style, &speed, error, sizeof error), "mb_style_get_speed", error);
    printf("style '%s', %.2f m/s\n", name, speed);

    /* the history starts from the style's clip; walk forward (+Z), facing forward */
    check(mb_agent_create(model, &agent, error, sizeof error), "mb_agent_create", error);
    check(mb_agent_reset(agent, style, error, sizeof error), "mb_agent_reset", error);
    check(mb_command_create(&command, error, sizeof error), "mb_command_create", error);
    check(mb_command_set_style(command, style, error, sizeof error), "mb_command_set_style", error);
    check(mb_command_set_movement_direction(command, 0.0f, 0.0f, 1.0f, error, sizeof error),
          "mb_command_set_movement_direction", error);
    check(mb_command_set_facing_direction(command, 0.0f, 0.0f, 1.0f, error, sizeof error),
          "mb_command_set_facing_direction", error);
    check(mb_command_set_seed(command, 7, error, sizeof error), "mb_command_set_seed", error);

    check(mb_agent_plan(agent, command, &first, error, sizeof error), "mb_agent_plan", error);
    describe("plan 1", first);

    /* 16 frames were shown: the next plan continues from there, turning to face +X */
    check(mb_agent_advance(agent, 16, error, sizeof error), "mb_agent_advance", error);
    check(mb_command_set_facing_direction(command, 1.0f, 0.0f, 0.0f, error, sizeof error),
          "mb_command_set_facing_direction", error);
    check(mb_command_set_seed(command, 8, error, sizeof error), "mb_command_set_seed", error);
    check(mb_agent_plan(agent, command, &second, error, sizeof error), "mb_agent_plan", error);
    describe("plan 2", second);

    /* the model must outlive its agents; motions outlive everything */
    mb_command_free(command);
    mb_agent_free(agent);
    mb_style_free(style);
    mb_model_free(model);
    describe("plan 1 after free", first);
    mb_motion_free(first);
    mb_motion_free(second);
    return 0;
}
