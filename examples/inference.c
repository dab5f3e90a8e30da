/*
 * inference.c — the smallest complete stateless inference program: load a bundle, describe four
 * source poses (standing at the origin) and four target poses (standing 1.2 m ahead), infer the
 * 40-frame motion between them, print where the root goes. Uses only the installed C headers.
 *
 *     cc -std=c11 inference.c $(pkg-config --cflags --libs motionbricks) -o inference
 *     ./inference BUNDLE_DIRECTORY [THREADS]
 */
#include <motionbricks/inference.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOINTS 34

/* four frames of the rest pose (identity local rotations) with the feet on the ground at (x, z),
 * drifting forward at `speed` m/s along +Z */
static void rest_boundary(const mb_model * model, float x, float z, float speed, float roots[12],
                          float xyzw[4 * JOINTS * 4]) {
    float lowest = 0.0f;
    for (uint32_t j = 0; j < JOINTS; ++j) {
        float px, py, pz;
        if (mb_model_get_neutral_joint_position(model, j, &px, &py, &pz, NULL, 0) == MB_OK && py < lowest) {
            lowest = py;
        }
    }
    for (int f = 0; f < 4; ++f) {
        roots[f * 3 + 0] = x;
        roots[f * 3 + 1] = -lowest;
        roots[f * 3 + 2] = z + speed * (float) f / 30.0f;
        for (int j = 0; j < JOINTS; ++j) {
            float * q = xyzw + (f * JOINTS + j) * 4;
            q[0] = q[1] = q[2] = 0.0f;
            q[3] = 1.0f;
        }
    }
}

/* infers the motion from the source to the target boundary with a fixed duration of 40 frames;
 * returns the motion (caller frees it) or NULL with `error` filled */
static mb_motion * infer_between(const mb_model * model, const float source_roots[12], const float source_xyzw[544],
                                 const float target_roots[12], const float target_xyzw[544], char * error,
                                 uint64_t capacity) {
    mb_inference_request * request = NULL;
    mb_motion *            motion  = NULL;
    uint32_t               durations[11] = {0};
    durations[4] = 1; /* 24 + 4 * 4 = 40 frames */

    if (mb_inference_request_create(&request, error, capacity) != MB_OK ||
        mb_inference_request_set_boundary_poses(request, model, 0, source_roots, 12, source_xyzw, 544, error,
                                                capacity) != MB_OK ||
        mb_inference_request_set_boundary_poses(request, model, 1, target_roots, 12, target_xyzw, 544, error,
                                                capacity) != MB_OK ||
        mb_inference_request_set_mask(request, MB_INFERENCE_DURATIONS, durations, 11, error, capacity) != MB_OK ||
        mb_inference_request_set_sampling_argmax(request, 1, error, capacity) != MB_OK ||
        mb_model_infer(model, request, &motion, error, capacity) != MB_OK) {
        motion = NULL;
    }
    mb_inference_request_free(request); /* the motion does not depend on the request */
    return motion;
}

int main(int argc, char ** argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s BUNDLE_DIRECTORY [THREADS]\n", argv[0]);
        return 2;
    }
    char                 error[512];
    mb_runtime_options * options = NULL;
    mb_model *           model   = NULL;
    if (mb_runtime_options_create(&options, error, sizeof error) != MB_OK ||
        mb_runtime_options_set_threads(options, argc == 3 ? (uint32_t) strtoul(argv[2], NULL, 10) : 0, error,
                                       sizeof error) != MB_OK) {
        fprintf(stderr, "options: %s\n", error);
        mb_runtime_options_free(options);
        return 1;
    }
    mb_status status = mb_model_load(argv[1], options, &model, error, sizeof error);
    mb_runtime_options_free(options); /* copied by the model */
    if (status != MB_OK) {
        fprintf(stderr, "load: %s (%s)\n", mb_status_string(status), error);
        return 1;
    }

    static float source_xyzw[4 * JOINTS * 4], target_xyzw[4 * JOINTS * 4];
    float        source_roots[12], target_roots[12];
    rest_boundary(model, 0.0f, 0.0f, 0.0f, source_roots, source_xyzw);
    rest_boundary(model, 0.0f, 1.2f, 1.0f, target_roots, target_xyzw);

    mb_motion * motion = infer_between(model, source_roots, source_xyzw, target_roots, target_xyzw, error,
                                       sizeof error);
    mb_model_free(model); /* motions outlive the model */
    if (motion == NULL) {
        fprintf(stderr, "inference: %s\n", error);
        return 1;
    }

    uint64_t      frames = 0, joints = 0, n_roots = 0, n_rotations = 0;
    const float * roots     = NULL;
    const float * rotations = NULL;
    if (mb_motion_get_frame_count(motion, &frames, error, sizeof error) != MB_OK ||
        mb_motion_get_joint_count(motion, &joints, error, sizeof error) != MB_OK ||
        mb_motion_get_root_translations(motion, &roots, &n_roots, error, sizeof error) != MB_OK ||
        mb_motion_get_local_rotations_xyzw(motion, &rotations, &n_rotations, error, sizeof error) != MB_OK) {
        fprintf(stderr, "motion: %s\n", error);
        mb_motion_free(motion);
        return 1;
    }
    printf("frames: %llu\njoints: %llu\n", (unsigned long long) frames, (unsigned long long) joints);
    printf("first root: %.4f %.4f %.4f\n", roots[0], roots[1], roots[2]);
    printf("last root: %.4f %.4f %.4f\n", roots[n_roots - 3], roots[n_roots - 2], roots[n_roots - 1]);
    printf("rotation values: %llu\n", (unsigned long long) n_rotations);
    mb_motion_free(motion);
    return frames == 40 && joints == JOINTS && n_roots == frames * 3 && n_rotations == frames * JOINTS * 4 ? 0 : 1;
}
