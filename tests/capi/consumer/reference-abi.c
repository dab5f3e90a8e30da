/*
 * Issue-5 acceptance: a program written only against the reference runtime's documented C ABI v1
 * (names, argument order, status values, defaults and rules of its motionbricks.h / inference.h),
 * built from the installed headers with `cc -std=c11 $(pkg-config --cflags --libs motionbricks)`.
 * It exercises model load with runtime options, command setters/getters and defaults, style load,
 * agent reset/plan/advance/set_context, motion accessors with the 4 targets, batch plans, stateless
 * requests and inference (single and batch), and the error-buffer convention.
 *
 *     reference-abi BUNDLE_DIR STYLE.mbstyle
 */
#include <motionbricks/inference.h>
#include <motionbricks/motionbricks.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            ++failures;                                                                                                \
            fprintf(stderr, "reference-abi.c:%d: expected %s (last error: %s)\n", __LINE__, #cond, err);              \
        }                                                                                                              \
    } while (0)

static char err[1024];
#define ERR err, (uint64_t) sizeof err

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: reference-abi BUNDLE_DIR STYLE.mbstyle\n");
        return 2;
    }

    /* library, status values */
    EXPECT(mb_abi_version() == 1 && MB_ABI_VERSION == 1);
    EXPECT(strcmp(mb_status_string(MB_OK), "ok") == 0);
    EXPECT(MB_INVALID_ARGUMENT == 1 && MB_IO_ERROR == 3 && MB_INTERNAL_ERROR == 9);
    EXPECT(MB_DEVICE_AUTO == 0 && MB_DEVICE_CPU == 1 && MB_DEVICE_VULKAN == 2);
    EXPECT(MB_INFERENCE_GLOBAL_ROOT == 0 && MB_INFERENCE_POSE == 2 && MB_INFERENCE_DURATIONS == 3);

    /* runtime options: defaults AUTO / 0 threads / no backend directory */
    mb_runtime_options * options = NULL;
    mb_device            device  = 99;
    uint32_t             threads = 99;
    const char *         dir     = NULL;
    EXPECT(mb_runtime_options_create(&options, ERR) == MB_OK);
    EXPECT(mb_runtime_options_get_device(options, &device, ERR) == MB_OK && device == MB_DEVICE_AUTO);
    EXPECT(mb_runtime_options_get_threads(options, &threads, ERR) == MB_OK && threads == 0);
    EXPECT(mb_runtime_options_set_device(options, 7, ERR) == MB_INVALID_ARGUMENT && err[0] != '\0');
    EXPECT(mb_runtime_options_set_device(options, MB_DEVICE_CPU, ERR) == MB_OK && err[0] == '\0');
    EXPECT(mb_runtime_options_get_device(options, &device, ERR) == MB_OK && device == MB_DEVICE_CPU);
    EXPECT(mb_runtime_options_set_threads(options, 1, ERR) == MB_OK);
    EXPECT(mb_runtime_options_get_threads(options, &threads, ERR) == MB_OK && threads == 1);
    EXPECT(mb_runtime_options_set_backend_directory(options, "/opt/backends", ERR) == MB_OK);
    EXPECT(mb_runtime_options_get_backend_directory(options, &dir, ERR) == MB_OK && strcmp(dir, "/opt/backends") == 0);
    EXPECT(mb_runtime_options_set_backend_directory(options, NULL, ERR) == MB_OK);
    EXPECT(mb_runtime_options_get_backend_directory(options, &dir, ERR) == MB_OK && (dir == NULL || dir[0] == '\0'));

    /* model: missing directory is an I/O error; the bundle loads with the options, which may go after */
    mb_model * model = NULL;
    EXPECT(mb_model_load("/nonexistent/bundle", options, &model, ERR) == MB_IO_ERROR && model == NULL);
    EXPECT(mb_model_load(argv[1], options, &model, ERR) == MB_OK && model != NULL);
    mb_runtime_options_free(options);
    if (model == NULL) {
        return 1;
    }
    uint64_t     params = 0;
    uint32_t     joints = 0;
    const char * name   = NULL;
    int32_t      parent = 0;
    float        nx = 0, ny = 0, nz = 0;
    EXPECT(mb_model_get_parameter_count(model, &params, ERR) == MB_OK && params > 0);
    EXPECT(mb_model_get_joint_count(model, &joints, ERR) == MB_OK && joints == 34);
    EXPECT(mb_model_get_joint_name(model, 0, &name, ERR) == MB_OK && strcmp(name, "pelvis_skel") == 0);
    EXPECT(mb_model_get_joint_parent(model, 0, &parent, ERR) == MB_OK && parent == -1);
    EXPECT(mb_model_get_joint_parent(model, 33, &parent, ERR) == MB_OK && parent >= 0 && parent < 33);
    EXPECT(mb_model_get_joint_name(model, 34, &name, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_model_get_neutral_joint_position(model, 1, &nx, &ny, &nz, ERR) == MB_OK && isfinite(ny));

    /* command: the documented defaults, setters, getters and rejections */
    mb_command *     command = NULL;
    const mb_style * borrowed = NULL;
    float            x = 1, y = 1, z = 1, heading = 1, speed = 0;
    uint32_t         enabled = 1, argmax = 1;
    uint64_t         seed = 1;
    EXPECT(mb_command_create(&command, ERR) == MB_OK);
    EXPECT(mb_command_get_style(command, &borrowed, ERR) == MB_OK && borrowed == NULL);
    EXPECT(mb_command_get_movement_direction(command, &x, &y, &z, ERR) == MB_OK && x == 0 && y == 0 && z == 0);
    EXPECT(mb_command_get_facing_direction(command, &x, &y, &z, ERR) == MB_OK && x == 0 && y == 0 && z == 1);
    EXPECT(mb_command_get_target_speed(command, &speed, ERR) == MB_OK && speed == -1.0f);
    EXPECT(mb_command_get_world_target(command, &x, &y, &z, &heading, &enabled, ERR) == MB_OK && enabled == 0);
    EXPECT(mb_command_get_seed(command, &seed, ERR) == MB_OK && seed == 0);
    EXPECT(mb_command_get_sampling_argmax(command, &argmax, ERR) == MB_OK && argmax == 0);
    EXPECT(mb_command_set_facing_direction(command, 0, 0, 0, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_command_set_movement_direction(command, NAN, 0, 0, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_command_set_target_speed(command, -2.0f, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_command_set_sampling_argmax(command, 2, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_command_set_movement_direction(command, 0, 0, 1, ERR) == MB_OK);
    EXPECT(mb_command_set_facing_direction(command, 0, 0, 1, ERR) == MB_OK);
    EXPECT(mb_command_set_target_speed(command, -1.0f, ERR) == MB_OK);
    EXPECT(mb_command_set_world_target(command, 0, 0, 2, 0.0f, 0, ERR) == MB_OK);
    EXPECT(mb_command_set_seed(command, 23, ERR) == MB_OK);
    EXPECT(mb_command_get_seed(command, &seed, ERR) == MB_OK && seed == 23);

    /* style */
    mb_style * style = NULL;
    EXPECT(mb_style_load(model, "/nonexistent/walk.mbstyle", &style, ERR) == MB_IO_ERROR && style == NULL);
    EXPECT(mb_style_load(model, argv[2], &style, ERR) == MB_OK && style != NULL);
    if (style == NULL) {
        return 1;
    }
    EXPECT(mb_style_get_name(style, &name, ERR) == MB_OK && name != NULL && name[0] != '\0');
    EXPECT(mb_style_get_speed(style, &speed, ERR) == MB_OK && speed >= 0.0f);
    EXPECT(mb_style_set_speed(style, 1.0f, ERR) == MB_OK);
    EXPECT(mb_style_get_speed(style, &speed, ERR) == MB_OK && speed == 1.0f);
    EXPECT(mb_command_set_style(command, style, ERR) == MB_OK);
    EXPECT(mb_command_get_style(command, &borrowed, ERR) == MB_OK && borrowed == style);

    /* agent: reset, plan, advance, plan; each plan has 4 placed targets */
    mb_agent *  agent  = NULL;
    mb_motion * first  = NULL;
    mb_motion * second = NULL;
    uint64_t    frames = 0, count = 0, values = 0;
    EXPECT(mb_agent_create(model, &agent, ERR) == MB_OK);
    EXPECT(mb_agent_reset(agent, style, ERR) == MB_OK);
    EXPECT(mb_agent_plan(agent, command, &first, ERR) == MB_OK && first != NULL);
    EXPECT(mb_agent_advance(agent, 16, ERR) == MB_OK);
    EXPECT(mb_agent_plan(agent, command, &second, ERR) == MB_OK && second != NULL);
    if (first == NULL || second == NULL) {
        return 1;
    }
    const float * roots = NULL;
    const float * rots  = NULL;
    EXPECT(mb_motion_get_frame_count(first, &frames, ERR) == MB_OK && frames >= 24 && frames <= 64 && frames % 4 == 0);
    EXPECT(mb_motion_get_joint_count(first, &count, ERR) == MB_OK && count == 34);
    EXPECT(mb_motion_get_root_translations(first, &roots, &values, ERR) == MB_OK && values == frames * 3);
    EXPECT(mb_motion_get_local_rotations_xyzw(first, &rots, &values, ERR) == MB_OK && values == frames * 34 * 4);
    EXPECT(mb_motion_get_target_frame_count(first, &count, ERR) == MB_OK && count == 4);
    const float * targets = NULL;
    EXPECT(mb_motion_get_target_root_translations(first, &targets, &values, ERR) == MB_OK && values == 12);
    EXPECT(mb_motion_get_target_local_rotations_xyzw(first, &targets, &values, ERR) == MB_OK && values == 4 * 34 * 4);

    /* caller history: the first plan's frames */
    EXPECT(mb_agent_set_context(agent, roots, rots, frames, 34, ERR) == MB_OK);
    EXPECT(mb_agent_set_context(agent, roots, rots, 3, 34, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_agent_set_context(agent, roots, rots, frames, 30, ERR) == MB_INVALID_ARGUMENT);

    /* batch of two distinct agents */
    mb_agent * other = NULL;
    EXPECT(mb_agent_create(model, &other, ERR) == MB_OK);
    EXPECT(mb_agent_reset(other, style, ERR) == MB_OK);
    mb_agent *         agents[2]   = {agent, other};
    const mb_command * commands[2] = {command, command};
    mb_motion *        planned[2]  = {NULL, NULL};
    EXPECT(mb_agent_plan_batch(agents, commands, 2, planned, ERR) == MB_OK && planned[0] != NULL && planned[1] != NULL);
    mb_agent * twice[2] = {agent, agent};
    mb_motion * none[2] = {NULL, NULL};
    EXPECT(mb_agent_plan_batch(twice, commands, 2, none, ERR) == MB_INVALID_ARGUMENT && none[0] == NULL && none[1] == NULL);

    /* stateless inference between two boundaries of the plan, single and batch */
    mb_inference_request * request = NULL;
    mb_motion *            motion  = NULL;
    EXPECT(mb_inference_request_create(&request, ERR) == MB_OK);
    EXPECT(mb_inference_request_set_boundary_poses(request, model, 0, roots, 12, rots, 544, ERR) == MB_OK);
    EXPECT(mb_inference_request_set_boundary_poses(request, model, 1, roots + 20 * 3, 12, rots + 20 * 136, 544, ERR) ==
           MB_OK);
    EXPECT(mb_inference_request_set_boundary_poses(request, model, 2, roots, 12, rots, 544, ERR) == MB_INVALID_ARGUMENT);
    EXPECT(mb_inference_request_get_features(request, MB_INFERENCE_POSE, NULL, 0, &count, ERR) == MB_OK && count == 2424);
    float global_root[40];
    EXPECT(mb_inference_request_get_features(request, MB_INFERENCE_GLOBAL_ROOT, global_root, 40, &count, ERR) == MB_OK);
    EXPECT(mb_inference_request_set_features(request, MB_INFERENCE_GLOBAL_ROOT, global_root, 39, ERR) ==
           MB_INVALID_ARGUMENT);
    uint32_t durations[11] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    uint32_t mask[11];
    EXPECT(mb_inference_request_set_mask(request, MB_INFERENCE_DURATIONS, durations, 11, ERR) == MB_OK);
    EXPECT(mb_inference_request_get_mask(request, MB_INFERENCE_DURATIONS, mask, 11, &count, ERR) == MB_OK &&
           count == 11 && mask[4] == 1 && mask[0] == 0);
    EXPECT(mb_inference_request_set_seed(request, 5, ERR) == MB_OK);
    EXPECT(mb_inference_request_get_seed(request, &seed, ERR) == MB_OK && seed == 5);
    EXPECT(mb_inference_request_set_sampling_argmax(request, 1, ERR) == MB_OK);
    EXPECT(mb_inference_request_get_sampling_argmax(request, &argmax, ERR) == MB_OK && argmax == 1);
    EXPECT(mb_model_infer(model, request, &motion, ERR) == MB_OK && motion != NULL);
    EXPECT(mb_motion_get_frame_count(motion, &frames, ERR) == MB_OK && frames == 40);   /* 6 + 4 tokens, 4 frames each */
    EXPECT(mb_motion_get_target_frame_count(motion, &count, ERR) == MB_OK && count == 0);
    const mb_inference_request * requests[2] = {request, request};
    mb_motion *                  inferred[2] = {NULL, NULL};
    EXPECT(mb_model_infer_batch(model, requests, 2, inferred, ERR) == MB_OK && inferred[0] != NULL);
    EXPECT(mb_model_infer_batch(model, requests, 0, inferred, ERR) == MB_INVALID_ARGUMENT);

    /* error buffers: 2 bytes hold one character and the terminator; NULL/0 discards */
    char tiny[2] = {'X', 'X'};
    EXPECT(mb_agent_advance(NULL, 1, tiny, 2) == MB_INVALID_ARGUMENT && tiny[1] == '\0');
    EXPECT(mb_agent_advance(NULL, 1, NULL, 0) == MB_INVALID_ARGUMENT);

    /* lifetimes: the model outlives its agents; motions outlive everything */
    mb_inference_request_free(request);
    mb_agent_free(agent);
    mb_agent_free(other);
    mb_command_free(command);
    mb_style_free(style);
    mb_model_free(model);
    EXPECT(mb_motion_get_frame_count(second, &frames, ERR) == MB_OK && frames >= 24);
    EXPECT(mb_motion_get_root_translations(planned[1], &roots, &values, ERR) == MB_OK && isfinite(roots[values - 1]));
    mb_motion_free(first);
    mb_motion_free(second);
    mb_motion_free(planned[0]);
    mb_motion_free(planned[1]);
    mb_motion_free(motion);
    mb_motion_free(inferred[0]);
    mb_motion_free(inferred[1]);
    mb_style_free(NULL);
    mb_agent_free(NULL);

    printf("reference ABI program: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
