/*
 * The C ABI test suite, compiled as C11 (not C++): every exported function with valid and invalid
 * arguments (NULL handles and pointers, wrong counts, NaN/Inf, out-of-range selectors), the error
 * buffer convention (NULL, 0 and 2 bytes, cleared on success), defaults, failing setters leaving
 * objects unchanged, and, when a bundle directory is given, the model-backed happy paths: boundary
 * encoding, inference, batches, determinism and result lifetimes (motions outlive model and request).
 *
 *     test-capi                 weight-free part only
 *     test-capi BUNDLE_DIR      everything
 */
#define _POSIX_C_SOURCE 200809L
#include <motionbricks/inference.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi-check.h"

static const mb_status k_all_status[] = {MB_OK,
                                         MB_INVALID_ARGUMENT,
                                         MB_OUT_OF_MEMORY,
                                         MB_IO_ERROR,
                                         MB_INVALID_FORMAT,
                                         MB_INCOMPATIBLE_MODEL,
                                         MB_BACKEND_UNAVAILABLE,
                                         MB_COMPUTE_FAILED,
                                         MB_NOT_IMPLEMENTED,
                                         MB_INTERNAL_ERROR};

/* ==== library ==================================================================================== */

static void test_library(void) {
    CHECK(mb_abi_version() == 1);
    CHECK(mb_abi_version() == MB_ABI_VERSION);
    CHECK(MB_OK == 0 && MB_INVALID_ARGUMENT == 1 && MB_OUT_OF_MEMORY == 2 && MB_IO_ERROR == 3);
    CHECK(MB_INVALID_FORMAT == 4 && MB_INCOMPATIBLE_MODEL == 5 && MB_BACKEND_UNAVAILABLE == 6);
    CHECK(MB_COMPUTE_FAILED == 7 && MB_NOT_IMPLEMENTED == 8 && MB_INTERNAL_ERROR == 9);
    CHECK(MB_DEVICE_AUTO == 0 && MB_DEVICE_CPU == 1 && MB_DEVICE_VULKAN == 2 && MB_DEVICE_CUDA == 3);
    CHECK(MB_INFERENCE_GLOBAL_ROOT == 0 && MB_INFERENCE_LOCAL_ROOT == 1 && MB_INFERENCE_POSE == 2);
    CHECK(MB_INFERENCE_DURATIONS == 3);
    CHECK(strcmp(mb_status_string(MB_OK), "ok") == 0);
    for (size_t i = 0; i < sizeof k_all_status / sizeof k_all_status[0]; ++i) {
        const char * s = mb_status_string(k_all_status[i]);
        CHECK(s != NULL && s[0] != '\0');
        CHECK(strcmp(s, "unknown status") != 0);
        for (size_t j = 0; j < i; ++j) {
            CHECK(strcmp(s, mb_status_string(k_all_status[j])) != 0);
        }
    }
    CHECK(strcmp(mb_status_string(10), "unknown status") == 0);
    CHECK(strcmp(mb_status_string(UINT32_MAX), "unknown status") == 0);
}

/* ==== error buffer convention ==================================================================== */

static void test_error_buffers(void) {
    mb_runtime_options * opt = NULL;
    CHECK(mb_runtime_options_create(&opt, NULL, 0) == MB_OK);

    /* NULL / 0 discards */
    CHECK(mb_runtime_options_set_device(opt, 77, NULL, 0) == MB_INVALID_ARGUMENT);
    CHECK(mb_runtime_options_set_device(opt, 77, NULL, 100) == MB_INVALID_ARGUMENT);

    /* capacity 0: the buffer is not touched */
    char zero[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_runtime_options_set_device(opt, 77, zero, 0) == MB_INVALID_ARGUMENT);
    CHECK(zero[0] == 'X' && zero[3] == 'X');
    CHECK(mb_runtime_options_set_device(opt, MB_DEVICE_CPU, zero, 0) == MB_OK);
    CHECK(zero[0] == 'X');

    /* capacity 1: only the terminator fits */
    char one[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_runtime_options_set_device(opt, 77, one, 1) == MB_INVALID_ARGUMENT);
    CHECK(one[0] == '\0' && one[1] == 'X');

    /* capacity 2: one character and the terminator, nothing beyond */
    char two[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_runtime_options_set_device(opt, 77, two, 2) == MB_INVALID_ARGUMENT);
    CHECK(two[0] != '\0' && two[0] != 'X' && two[1] == '\0' && two[2] == 'X' && two[3] == 'X');

    /* a full buffer gets the whole message; success clears it */
    char full[256];
    memset(full, 'X', sizeof full);
    CHECK(mb_runtime_options_set_device(opt, 77, full, sizeof full) == MB_INVALID_ARGUMENT);
    CHECK(strlen(full) > 10 && strlen(full) < sizeof full);
    CHECK(strstr(full, "77") != NULL);
    CHECK(mb_runtime_options_set_device(opt, MB_DEVICE_CPU, full, sizeof full) == MB_OK);
    CHECK(full[0] == '\0');

    /* a message longer than the buffer is truncated and terminated */
    char small[8];
    memset(small, 'X', sizeof small);
    CHECK(mb_runtime_options_set_device(opt, 77, small, sizeof small) == MB_INVALID_ARGUMENT);
    CHECK(small[7] == '\0' && strlen(small) == 7);

    /* the error goes only to the buffer of the failing call: no hidden last error */
    char a[64] = "", b[64] = "";
    CHECK(mb_runtime_options_set_device(opt, 77, a, sizeof a) == MB_INVALID_ARGUMENT);
    CHECK(mb_runtime_options_set_device(opt, MB_DEVICE_AUTO, b, sizeof b) == MB_OK);
    CHECK(a[0] != '\0' && b[0] == '\0');

    mb_runtime_options_free(opt);
}

/* ==== runtime options ============================================================================ */

static void test_options(void) {
    mb_runtime_options * opt = (mb_runtime_options *) &g_err; /* poison: must be reset to NULL */
    CHECK_STATUS(mb_runtime_options_create(NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_create(&opt, E), MB_OK);
    CHECK(opt != NULL);

    mb_device dev = 99;
    uint32_t  threads = 99;
    const char * dir = NULL;
    CHECK_STATUS(mb_runtime_options_get_device(opt, &dev, E), MB_OK);
    CHECK(dev == MB_DEVICE_AUTO);
    CHECK_STATUS(mb_runtime_options_get_threads(opt, &threads, E), MB_OK);
    CHECK(threads == 0);
    CHECK_STATUS(mb_runtime_options_get_backend_directory(opt, &dir, E), MB_OK);
    CHECK(dir != NULL && dir[0] == '\0');

    /* device: every valid value round-trips, others fail and leave it unchanged */
    const mb_device devices[] = {MB_DEVICE_CPU, MB_DEVICE_VULKAN, MB_DEVICE_CUDA, MB_DEVICE_AUTO};
    for (int i = 0; i < 4; ++i) {
        CHECK_STATUS(mb_runtime_options_set_device(opt, devices[i], E), MB_OK);
        CHECK_STATUS(mb_runtime_options_get_device(opt, &dev, E), MB_OK);
        CHECK(dev == devices[i]);
    }
    CHECK_STATUS(mb_runtime_options_set_device(opt, 4, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_set_device(opt, UINT32_MAX, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_device(opt, &dev, E), MB_OK);
    CHECK(dev == MB_DEVICE_AUTO);
    CHECK_STATUS(mb_runtime_options_set_device(NULL, MB_DEVICE_CPU, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_device(NULL, &dev, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_device(opt, NULL, E), MB_INVALID_ARGUMENT);

    /* precision: F32 by default, every valid value round-trips, others fail and change nothing */
    mb_precision prec = 99;
    CHECK(MB_PRECISION_F32 == 0 && MB_PRECISION_TF32 == 1 && MB_PRECISION_BF16 == 2);
    CHECK_STATUS(mb_runtime_options_get_precision(opt, &prec, E), MB_OK);
    CHECK(prec == MB_PRECISION_F32);
    const mb_precision precisions[] = {MB_PRECISION_TF32, MB_PRECISION_BF16, MB_PRECISION_F32};
    for (int i = 0; i < 3; ++i) {
        CHECK_STATUS(mb_runtime_options_set_precision(opt, precisions[i], E), MB_OK);
        CHECK_STATUS(mb_runtime_options_get_precision(opt, &prec, E), MB_OK);
        CHECK(prec == precisions[i]);
    }
    CHECK_STATUS(mb_runtime_options_set_precision(opt, 3, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "MB_PRECISION_BF16") != NULL);
    CHECK_STATUS(mb_runtime_options_get_precision(opt, &prec, E), MB_OK);
    CHECK(prec == MB_PRECISION_F32);
    CHECK_STATUS(mb_runtime_options_set_precision(NULL, MB_PRECISION_F32, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_precision(NULL, &prec, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_precision(opt, NULL, E), MB_INVALID_ARGUMENT);

    /* threads */
    CHECK_STATUS(mb_runtime_options_set_threads(opt, 3, E), MB_OK);
    CHECK_STATUS(mb_runtime_options_get_threads(opt, &threads, E), MB_OK);
    CHECK(threads == 3);
    CHECK_STATUS(mb_runtime_options_set_threads(NULL, 3, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_threads(NULL, &threads, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_threads(opt, NULL, E), MB_INVALID_ARGUMENT);

    /* backend directory: copied, NULL and "" clear */
    char path[32];
    strcpy(path, "/opt/backends");
    CHECK_STATUS(mb_runtime_options_set_backend_directory(opt, path, E), MB_OK);
    strcpy(path, "changed");
    CHECK_STATUS(mb_runtime_options_get_backend_directory(opt, &dir, E), MB_OK);
    CHECK(dir != NULL && strcmp(dir, "/opt/backends") == 0);
    CHECK_STATUS(mb_runtime_options_set_backend_directory(opt, NULL, E), MB_OK);
    CHECK_STATUS(mb_runtime_options_get_backend_directory(opt, &dir, E), MB_OK);
    CHECK(dir != NULL && dir[0] == '\0');
    CHECK_STATUS(mb_runtime_options_set_backend_directory(NULL, "x", E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_backend_directory(NULL, &dir, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_backend_directory(opt, NULL, E), MB_INVALID_ARGUMENT);

    mb_runtime_options_free(opt);
    mb_runtime_options_free(NULL);
}

/* ==== commands =================================================================================== */

static void test_commands(void) {
    mb_command * cmd = NULL;
    CHECK_STATUS(mb_command_create(NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_create(&cmd, E), MB_OK);
    CHECK(cmd != NULL);

    /* defaults */
    float           x = 9, y = 9, z = 9, h = 9, speed = 9;
    uint32_t        enabled = 9, argmax = 9;
    uint64_t        seed = 9;
    const mb_style * style = (const mb_style *) &g_err;
    CHECK_STATUS(mb_command_get_style(cmd, &style, E), MB_OK);
    CHECK(style == NULL);
    CHECK_STATUS(mb_command_get_movement_direction(cmd, &x, &y, &z, E), MB_OK);
    CHECK(x == 0 && y == 0 && z == 0);
    CHECK_STATUS(mb_command_get_facing_direction(cmd, &x, &y, &z, E), MB_OK);
    CHECK(x == 0 && y == 0 && z == 1);
    CHECK_STATUS(mb_command_get_target_speed(cmd, &speed, E), MB_OK);
    CHECK(speed == -1.0f);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, &y, &z, &h, &enabled, E), MB_OK);
    CHECK(x == 0 && y == 0 && z == 0 && h == 0 && enabled == 0);
    CHECK_STATUS(mb_command_get_seed(cmd, &seed, E), MB_OK);
    CHECK(seed == 0);
    CHECK_STATUS(mb_command_get_sampling_argmax(cmd, &argmax, E), MB_OK);
    CHECK(argmax == 0);

    /* style is borrowed: any pointer round-trips, NULL clears */
    const mb_style * fake = (const mb_style *) (void *) &x;
    CHECK_STATUS(mb_command_set_style(cmd, fake, E), MB_OK);
    CHECK_STATUS(mb_command_get_style(cmd, &style, E), MB_OK);
    CHECK(style == fake);
    CHECK_STATUS(mb_command_set_style(cmd, NULL, E), MB_OK);
    CHECK_STATUS(mb_command_get_style(cmd, &style, E), MB_OK);
    CHECK(style == NULL);

    /* movement: zero allowed, non-finite rejected and the value kept */
    CHECK_STATUS(mb_command_set_movement_direction(cmd, 1, 0, -1, E), MB_OK);
    CHECK_STATUS(mb_command_set_movement_direction(cmd, NAN, 0, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_movement_direction(cmd, 0, INFINITY, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_movement_direction(cmd, 0, 0, -INFINITY, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_movement_direction(cmd, &x, &y, &z, E), MB_OK);
    CHECK(x == 1 && y == 0 && z == -1);
    CHECK_STATUS(mb_command_set_movement_direction(cmd, 0, 0, 0, E), MB_OK);

    /* facing: zero and non-finite rejected */
    CHECK_STATUS(mb_command_set_facing_direction(cmd, 1, 0, 0, E), MB_OK);
    CHECK_STATUS(mb_command_set_facing_direction(cmd, 0, 0, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_facing_direction(cmd, NAN, 0, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_facing_direction(cmd, 0, 0, INFINITY, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_facing_direction(cmd, &x, &y, &z, E), MB_OK);
    CHECK(x == 1 && y == 0 && z == 0);

    /* speed: >= -1 and finite */
    CHECK_STATUS(mb_command_set_target_speed(cmd, 1.5f, E), MB_OK);
    CHECK_STATUS(mb_command_set_target_speed(cmd, -1.0001f, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_target_speed(cmd, NAN, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_target_speed(cmd, INFINITY, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_target_speed(cmd, &speed, E), MB_OK);
    CHECK(speed == 1.5f);
    CHECK_STATUS(mb_command_set_target_speed(cmd, -1.0f, E), MB_OK);
    CHECK_STATUS(mb_command_set_target_speed(cmd, -0.5f, E), MB_OK);

    /* world target */
    CHECK_STATUS(mb_command_set_world_target(cmd, 1, 2, 3, 0.5f, 1, E), MB_OK);
    CHECK_STATUS(mb_command_set_world_target(cmd, 1, 2, 3, 0.5f, 2, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_world_target(cmd, NAN, 2, 3, 0.5f, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_world_target(cmd, 1, 2, 3, INFINITY, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, &y, &z, &h, &enabled, E), MB_OK);
    CHECK(x == 1 && y == 2 && z == 3 && h == 0.5f && enabled == 1);

    /* seed and sampling */
    CHECK_STATUS(mb_command_set_seed(cmd, UINT64_MAX, E), MB_OK);
    CHECK_STATUS(mb_command_get_seed(cmd, &seed, E), MB_OK);
    CHECK(seed == UINT64_MAX);
    CHECK_STATUS(mb_command_set_sampling_argmax(cmd, 1, E), MB_OK);
    CHECK_STATUS(mb_command_set_sampling_argmax(cmd, 2, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_sampling_argmax(cmd, &argmax, E), MB_OK);
    CHECK(argmax == 1);

    /* every NULL handle and output pointer */
    CHECK_STATUS(mb_command_set_style(NULL, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_style(NULL, &style, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_style(cmd, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_movement_direction(NULL, 0, 0, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_movement_direction(NULL, &x, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_movement_direction(cmd, NULL, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_movement_direction(cmd, &x, NULL, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_movement_direction(cmd, &x, &y, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_facing_direction(NULL, 0, 0, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_facing_direction(NULL, &x, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_facing_direction(cmd, NULL, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_facing_direction(cmd, &x, NULL, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_facing_direction(cmd, &x, &y, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_target_speed(NULL, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_target_speed(NULL, &speed, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_target_speed(cmd, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_world_target(NULL, 0, 0, 0, 0, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(NULL, &x, &y, &z, &h, &enabled, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, NULL, &y, &z, &h, &enabled, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, NULL, &z, &h, &enabled, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, &y, NULL, &h, &enabled, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, &y, &z, NULL, &enabled, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_world_target(cmd, &x, &y, &z, &h, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_seed(NULL, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_seed(NULL, &seed, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_seed(cmd, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_sampling_argmax(NULL, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_sampling_argmax(NULL, &argmax, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_get_sampling_argmax(cmd, NULL, E), MB_INVALID_ARGUMENT);

    mb_command_free(cmd);
    mb_command_free(NULL);
}

/* ==== requests without a model =================================================================== */

static const uint64_t k_field_counts[3] = {40, 32, 2424};

static void test_request_fields(void) {
    mb_inference_request * req = NULL;
    CHECK_STATUS(mb_inference_request_create(NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_create(&req, E), MB_OK);
    CHECK(req != NULL);

    /* defaults: masks on except local-root slot 3, all durations, seed 0, Gumbel */
    uint32_t mask[16];
    uint64_t count = 0;
    for (uint32_t f = 0; f < 3; ++f) {
        CHECK_STATUS(mb_inference_request_get_mask(req, f, mask, 16, &count, E), MB_OK);
        CHECK(count == 8);
        for (uint32_t i = 0; i < 8; ++i) {
            CHECK(mask[i] == ((f == MB_INFERENCE_LOCAL_ROOT && i == 3) ? 0u : 1u));
        }
    }
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_DURATIONS, mask, 16, &count, E), MB_OK);
    CHECK(count == 11);
    for (uint32_t i = 0; i < 11; ++i) {
        CHECK(mask[i] == 1);
    }
    uint64_t seed = 9;
    uint32_t argmax = 9;
    CHECK_STATUS(mb_inference_request_get_seed(req, &seed, E), MB_OK);
    CHECK(seed == 0);
    CHECK_STATUS(mb_inference_request_get_sampling_argmax(req, &argmax, E), MB_OK);
    CHECK(argmax == 0);

    /* features: size queries, zeros when unset, exact counts, round trip */
    static float buf[2424 + 8], back[2424 + 8];
    for (uint32_t f = 0; f < 3; ++f) {
        count = 0;
        CHECK_STATUS(mb_inference_request_get_features(req, f, NULL, 0, &count, E), MB_OK);
        CHECK(count == k_field_counts[f]);
        for (size_t i = 0; i < sizeof back / sizeof back[0]; ++i) {
            back[i] = 7.0f;
        }
        CHECK_STATUS(mb_inference_request_get_features(req, f, back, k_field_counts[f] + 8, &count, E), MB_OK);
        CHECK(count == k_field_counts[f] && back[0] == 0.0f && back[count - 1] == 0.0f && back[count] == 7.0f);
        CHECK_STATUS(mb_inference_request_get_features(req, f, back, k_field_counts[f] - 1, &count, E),
                     MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_inference_request_get_features(req, f, NULL, 5, &count, E), MB_INVALID_ARGUMENT);

        for (uint64_t i = 0; i < k_field_counts[f]; ++i) {
            buf[i] = (float) (i % 17) * 0.25f - 2.0f;
        }
        CHECK_STATUS(mb_inference_request_set_features(req, f, buf, k_field_counts[f] - 1, E), MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_inference_request_set_features(req, f, buf, k_field_counts[f] + 1, E), MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_inference_request_set_features(req, f, buf, 0, E), MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_inference_request_set_features(req, f, NULL, k_field_counts[f], E), MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_inference_request_set_features(req, f, buf, k_field_counts[f], E), MB_OK);
        CHECK_STATUS(mb_inference_request_get_features(req, f, back, k_field_counts[f], &count, E), MB_OK);
        CHECK(memcmp(buf, back, sizeof(float) * k_field_counts[f]) == 0);

        /* a failing setter leaves the field unchanged: NaN, Inf, > 1e4 in the last element */
        const float bad[] = {NAN, INFINITY, -INFINITY, 10000.5f, -20000.0f};
        for (int b = 0; b < 5; ++b) {
            static float tmp[2424];
            memcpy(tmp, buf, sizeof(float) * k_field_counts[f]);
            tmp[k_field_counts[f] - 1] = bad[b];
            tmp[0]                     = 123.0f;
            CHECK_STATUS(mb_inference_request_set_features(req, f, tmp, k_field_counts[f], E), MB_INVALID_ARGUMENT);
            CHECK_STATUS(mb_inference_request_get_features(req, f, back, k_field_counts[f], &count, E), MB_OK);
            CHECK(memcmp(buf, back, sizeof(float) * k_field_counts[f]) == 0);
        }
        buf[0] = 10000.0f; /* the bound itself is allowed */
        CHECK_STATUS(mb_inference_request_set_features(req, f, buf, k_field_counts[f], E), MB_OK);
    }
    CHECK_STATUS(mb_inference_request_set_features(req, MB_INFERENCE_DURATIONS, buf, 11, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_features(req, 4, buf, 40, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_DURATIONS, back, 100, &count, E),
                 MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_features(req, UINT32_MAX, back, 100, &count, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_features(NULL, 0, buf, 40, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_features(NULL, 0, back, 40, &count, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_features(req, 0, back, 40, NULL, E), MB_INVALID_ARGUMENT);

    /* masks */
    uint32_t m8[8] = {1, 0, 1, 0, 1, 0, 1, 0}, m11[11] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_POSE, m8, 8, E), MB_OK);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_POSE, mask, 8, &count, E), MB_OK);
    CHECK(count == 8 && memcmp(mask, m8, sizeof m8) == 0);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_POSE, m8, 7, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_POSE, m11, 11, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_DURATIONS, m8, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_DURATIONS, m11, 11, E), MB_OK);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_DURATIONS, NULL, 0, &count, E), MB_OK);
    CHECK(count == 11);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_DURATIONS, mask, 10, &count, E),
                 MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_DURATIONS, mask, 11, &count, E), MB_OK);
    CHECK(memcmp(mask, m11, sizeof m11) == 0);
    /* no duration → rejected, previous kept */
    uint32_t none[11] = {0};
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_DURATIONS, none, 11, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_DURATIONS, mask, 11, &count, E), MB_OK);
    CHECK(memcmp(mask, m11, sizeof m11) == 0);
    /* global-root slot 0 must stay on; values other than 0/1 rejected */
    uint32_t g0off[8] = {0, 1, 1, 1, 1, 1, 1, 1}, two[8] = {1, 1, 2, 1, 1, 1, 1, 1};
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_GLOBAL_ROOT, g0off, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_LOCAL_ROOT, g0off, 8, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_LOCAL_ROOT, two, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_LOCAL_ROOT, mask, 8, &count, E), MB_OK);
    CHECK(memcmp(mask, g0off, sizeof g0off) == 0);
    CHECK_STATUS(mb_inference_request_set_mask(req, 4, m8, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(req, 4, mask, 8, &count, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(NULL, 0, m8, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_mask(req, 0, NULL, 8, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(NULL, 0, mask, 8, &count, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_mask(req, 0, mask, 8, NULL, E), MB_INVALID_ARGUMENT);

    /* seed and sampling */
    CHECK_STATUS(mb_inference_request_set_seed(req, 0x123456789abcdefULL, E), MB_OK);
    CHECK_STATUS(mb_inference_request_get_seed(req, &seed, E), MB_OK);
    CHECK(seed == 0x123456789abcdefULL);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(req, 1, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(req, 2, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_sampling_argmax(req, &argmax, E), MB_OK);
    CHECK(argmax == 1);
    CHECK_STATUS(mb_inference_request_set_seed(NULL, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_seed(NULL, &seed, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_seed(req, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(NULL, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_sampling_argmax(NULL, &argmax, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_sampling_argmax(req, NULL, E), MB_INVALID_ARGUMENT);

    /* boundary poses and inference need a model */
    static float roots[12], xyzw[544];
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, NULL, 0, roots, 12, xyzw, 544, E), MB_INVALID_ARGUMENT);
    mb_motion * motion = (mb_motion *) &g_err;
    CHECK_STATUS(mb_model_infer(NULL, req, &motion, E), MB_INVALID_ARGUMENT);
    CHECK(motion == NULL);
    CHECK_STATUS(mb_model_infer(NULL, req, NULL, E), MB_INVALID_ARGUMENT);
    mb_motion * outs[2] = {(mb_motion *) &g_err, (mb_motion *) &g_err};
    const mb_inference_request * reqs[2] = {req, req};
    CHECK_STATUS(mb_model_infer_batch(NULL, reqs, 2, outs, E), MB_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL && outs[1] == NULL);

    mb_inference_request_free(req);
    mb_inference_request_free(NULL);
}

/* ==== models and motions without weights ========================================================= */

static void write_file(const char * path, const char * text) {
    FILE * f = fopen(path, "wb");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_model_load_errors(void) {
    mb_model * model = (mb_model *) &g_err;
    CHECK_STATUS(mb_model_load("/nonexistent/motionbricks-bundle", NULL, &model, E), MB_IO_ERROR);
    CHECK(model == NULL);
    CHECK(strstr(g_err, "nonexistent") != NULL);
    CHECK_STATUS(mb_model_load(NULL, NULL, &model, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_load("", NULL, &model, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_load("/tmp", NULL, NULL, E), MB_INVALID_ARGUMENT);

    /* Vulkan is a valid device but not available in this build */
    mb_runtime_options * opt = NULL;
    CHECK_STATUS(mb_runtime_options_create(&opt, E), MB_OK);
    CHECK_STATUS(mb_runtime_options_set_device(opt, MB_DEVICE_VULKAN, E), MB_OK);
    model = (mb_model *) &g_err;
    CHECK_STATUS(mb_model_load("/nonexistent/motionbricks-bundle", opt, &model, E), MB_BACKEND_UNAVAILABLE);
    CHECK(model == NULL);

    /* CUDA: unavailable (no CUDA in the build, no GPU) before the files are looked at, naming
     * the cause; an ordinal no machine has is always unavailable */
    uint32_t ordinal = 99;
    CHECK_STATUS(mb_runtime_options_get_device_ordinal(opt, &ordinal, E), MB_OK);
    CHECK(ordinal == 0);
    CHECK_STATUS(mb_runtime_options_set_device(opt, MB_DEVICE_CUDA, E), MB_OK);
    mb_status st = mb_model_load("/nonexistent/motionbricks-bundle", opt, &model, E);
    CHECK(st == MB_BACKEND_UNAVAILABLE || st == MB_IO_ERROR);
    if (st == MB_BACKEND_UNAVAILABLE) CHECK(strstr(g_err, "MB_DEVICE_CUDA: ") != NULL);
    CHECK(model == NULL);
    CHECK_STATUS(mb_runtime_options_set_device_ordinal(opt, 4096, E), MB_OK);
    CHECK_STATUS(mb_runtime_options_get_device_ordinal(opt, &ordinal, E), MB_OK);
    CHECK(ordinal == 4096);
    CHECK_STATUS(mb_model_load("/nonexistent/motionbricks-bundle", opt, &model, E), MB_BACKEND_UNAVAILABLE);
    CHECK(strstr(g_err, "MB_DEVICE_CUDA: ") != NULL);
    CHECK(model == NULL);
    CHECK_STATUS(mb_runtime_options_set_device_ordinal(NULL, 0, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_runtime_options_get_device_ordinal(opt, NULL, E), MB_INVALID_ARGUMENT);

    /* TF32 and BF16 on the CPU: unavailable, named, before the files are looked at */
    CHECK_STATUS(mb_runtime_options_set_device(opt, MB_DEVICE_CPU, E), MB_OK);
    CHECK_STATUS(mb_runtime_options_set_precision(opt, MB_PRECISION_TF32, E), MB_OK);
    CHECK_STATUS(mb_model_load("/nonexistent/motionbricks-bundle", opt, &model, E), MB_BACKEND_UNAVAILABLE);
    CHECK(strstr(g_err, "TF32") != NULL && strstr(g_err, "MB_DEVICE_CUDA only") != NULL);
    CHECK(model == NULL);
    CHECK_STATUS(mb_runtime_options_set_precision(opt, MB_PRECISION_BF16, E), MB_OK);
    CHECK_STATUS(mb_model_load("/nonexistent/motionbricks-bundle", opt, &model, E), MB_BACKEND_UNAVAILABLE);
    CHECK(strstr(g_err, "BF16") != NULL);
    mb_runtime_options_free(opt);

    /* a directory with garbage components: a format error, not a crash */
    char dir[] = "/tmp/mb-capi-test-XXXXXX";
    if (mkdtemp(dir) != NULL) {
        const char * names[] = {"pose.gguf", "root.gguf", "vq-decoder.gguf", "support.gguf"};
        char         path[256];
        for (int i = 0; i < 3; ++i) {
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            write_file(path, "GGUF not really a gguf file");
        }
        /* one component missing → I/O error naming it */
        CHECK_STATUS(mb_model_load(dir, NULL, &model, E), MB_IO_ERROR);
        CHECK(strstr(g_err, "support.gguf") != NULL);
        snprintf(path, sizeof path, "%s/%s", dir, names[3]);
        write_file(path, "");
        CHECK_STATUS(mb_model_load(dir, NULL, &model, E), MB_INVALID_FORMAT);
        CHECK(model == NULL);
        for (int i = 0; i < 4; ++i) {
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            unlink(path);
        }
        rmdir(dir);
    }

    /* model getters with NULL handles */
    uint64_t     u64 = 0;
    uint32_t     u32 = 0;
    int32_t      i32 = 0;
    const char * name = NULL;
    float        x, y, z;
    CHECK_STATUS(mb_model_get_parameter_count(NULL, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_count(NULL, &u32, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_name(NULL, 0, &name, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_parent(NULL, 0, &i32, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_neutral_joint_position(NULL, 0, &x, &y, &z, E), MB_INVALID_ARGUMENT);
    mb_model_free(NULL);

    /* motion getters with NULL handles */
    const float * data = NULL;
    CHECK_STATUS(mb_motion_get_frame_count(NULL, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_joint_count(NULL, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_root_translations(NULL, &data, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(NULL, &data, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_frame_count(NULL, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_root_translations(NULL, &data, &u64, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_local_rotations_xyzw(NULL, &data, &u64, E), MB_INVALID_ARGUMENT);
    mb_motion_free(NULL);
}

/* ==== model-backed tests ========================================================================= */

/* four frames standing in the rest pose at (x, z), moving along +Z at `speed` m/s, turned by `yaw` */
static void make_boundary(const mb_model * model, float x, float z, float speed, float yaw, float roots[12],
                          float xyzw[544]) {
    float lowest = 0.0f;
    for (uint32_t j = 0; j < N_JOINTS; ++j) {
        float px = 0, py = 0, pz = 0;
        CHECK(mb_model_get_neutral_joint_position(model, j, &px, &py, &pz, E) == MB_OK);
        if (py < lowest) {
            lowest = py;
        }
    }
    for (int f = 0; f < 4; ++f) {
        roots[f * 3 + 0] = x + speed * (float) f / 30.0f * sinf(yaw);
        roots[f * 3 + 1] = -lowest;
        roots[f * 3 + 2] = z + speed * (float) f / 30.0f * cosf(yaw);
        for (int j = 0; j < N_JOINTS; ++j) {
            float * q = xyzw + (f * N_JOINTS + j) * 4;
            q[0] = q[1] = q[2] = 0.0f;
            q[3] = 1.0f;
        }
        /* root rotation about +Y */
        float * q0 = xyzw + f * N_JOINTS * 4;
        q0[1]      = sinf(yaw * 0.5f);
        q0[3]      = cosf(yaw * 0.5f);
    }
}

static mb_inference_request * make_request(const mb_model * model, float target_z, uint32_t argmax, uint64_t seed,
                                           int duration_index) {
    static float           sr[12], sq[544], tr[12], tq[544];
    mb_inference_request * req = NULL;
    CHECK(mb_inference_request_create(&req, E) == MB_OK);
    make_boundary(model, 0.5f, -0.25f, 0.0f, 0.0f, sr, sq);
    make_boundary(model, 0.5f, -0.25f + target_z, 1.0f, 0.3f, tr, tq);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, sr, 12, sq, 544, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 1, tr, 12, tq, 544, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(req, argmax, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_seed(req, seed, E), MB_OK);
    if (duration_index >= 0) {
        uint32_t d[11] = {0};
        d[duration_index] = 1;
        CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_DURATIONS, d, 11, E), MB_OK);
    }
    return req;
}

/* checks shapes and values of a stateless motion; returns its frame count */
static uint64_t check_motion(const mb_motion * m) {
    uint64_t      frames = 0, joints = 0, nr = 0, nq = 0, targets = 9;
    const float * roots = NULL;
    const float * rots  = NULL;
    CHECK_STATUS(mb_motion_get_frame_count(m, &frames, E), MB_OK);
    CHECK_STATUS(mb_motion_get_joint_count(m, &joints, E), MB_OK);
    CHECK_STATUS(mb_motion_get_root_translations(m, &roots, &nr, E), MB_OK);
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(m, &rots, &nq, E), MB_OK);
    CHECK(frames >= 24 && frames <= 64 && frames % 4 == 0);
    CHECK(joints == N_JOINTS);
    CHECK(nr == frames * 3 && nq == frames * N_JOINTS * 4);
    CHECK(roots != NULL && rots != NULL);
    int finite = 1, unit = 1;
    for (uint64_t i = 0; i < nr && roots != NULL; ++i) {
        finite = finite && isfinite(roots[i]);
    }
    for (uint64_t i = 0; i + 3 < nq && rots != NULL; i += 4) {
        const float n = rots[i] * rots[i] + rots[i + 1] * rots[i + 1] + rots[i + 2] * rots[i + 2] +
                        rots[i + 3] * rots[i + 3];
        finite = finite && isfinite(n);
        unit   = unit && fabsf(n - 1.0f) < 1e-3f;
    }
    CHECK(finite);
    CHECK(unit);

    /* stateless: no target frames, empty target buffers */
    CHECK_STATUS(mb_motion_get_target_frame_count(m, &targets, E), MB_OK);
    CHECK(targets == 0);
    const float * t = (const float *) &g_err;
    uint64_t      tn = 9;
    CHECK_STATUS(mb_motion_get_target_root_translations(m, &t, &tn, E), MB_OK);
    CHECK(t == NULL && tn == 0);
    t  = (const float *) &g_err;
    tn = 9;
    CHECK_STATUS(mb_motion_get_target_local_rotations_xyzw(m, &t, &tn, E), MB_OK);
    CHECK(t == NULL && tn == 0);

    /* NULL outputs */
    CHECK_STATUS(mb_motion_get_frame_count(m, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_joint_count(m, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_root_translations(m, NULL, &nr, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_root_translations(m, &roots, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(m, NULL, &nq, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(m, &rots, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_frame_count(m, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_root_translations(m, NULL, &tn, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_root_translations(m, &t, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_local_rotations_xyzw(m, NULL, &tn, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_local_rotations_xyzw(m, &t, NULL, E), MB_INVALID_ARGUMENT);
    return frames;
}

/* byte equality of two motions */
static int same_motion(const mb_motion * a, const mb_motion * b) {
    const float * ra = NULL;
    const float * rb = NULL;
    const float * qa = NULL;
    const float * qb = NULL;
    uint64_t      na = 0, nb = 0, ma = 0, mb = 0;
    if (mb_motion_get_root_translations(a, &ra, &na, NULL, 0) != MB_OK ||
        mb_motion_get_root_translations(b, &rb, &nb, NULL, 0) != MB_OK ||
        mb_motion_get_local_rotations_xyzw(a, &qa, &ma, NULL, 0) != MB_OK ||
        mb_motion_get_local_rotations_xyzw(b, &qb, &mb, NULL, 0) != MB_OK) {
        return 0;
    }
    return na == nb && ma == mb && memcmp(ra, rb, na * sizeof(float)) == 0 && memcmp(qa, qb, ma * sizeof(float)) == 0;
}

static void test_model_queries(const mb_model * model) {
    uint64_t params = 0;
    uint32_t joints = 0;
    CHECK_STATUS(mb_model_get_parameter_count(model, &params, E), MB_OK);
    CHECK(params > 0);
    mb_device device = 99;
    CHECK_STATUS(mb_model_get_device(model, &device, E), MB_OK);
    CHECK(device == MB_DEVICE_CPU || device == MB_DEVICE_CUDA);
    CHECK_STATUS(mb_model_get_device(NULL, &device, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_device(model, NULL, E), MB_INVALID_ARGUMENT);
    mb_precision precision = 99;    /* loaded with the defaults: F32 */
    CHECK_STATUS(mb_model_get_precision(model, &precision, E), MB_OK);
    CHECK(precision == MB_PRECISION_F32);
    CHECK_STATUS(mb_model_get_precision(NULL, &precision, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_precision(model, NULL, E), MB_INVALID_ARGUMENT);
    /* device memory: 0s on the CPU; on a GPU at least the F32 weights, and used <= total */
    uint64_t held = 99, used = 99, total = 99;
    CHECK_STATUS(mb_model_get_device_memory(model, &held, &used, &total, E), MB_OK);
    if (device == MB_DEVICE_CPU) {
        CHECK(held == 0 && used == 0 && total == 0);
    } else {
        CHECK(held >= params * 4 && used > 0 && used <= total);
    }
    CHECK_STATUS(mb_model_get_device_memory(NULL, &held, &used, &total, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_device_memory(model, NULL, &used, &total, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_device_memory(model, &held, NULL, &total, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_device_memory(model, &held, &used, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_count(model, &joints, E), MB_OK);
    CHECK(joints == N_JOINTS);
    const char * name = NULL;
    CHECK_STATUS(mb_model_get_joint_name(model, 0, &name, E), MB_OK);
    CHECK(name != NULL && strcmp(name, "pelvis_skel") == 0);
    CHECK_STATUS(mb_model_get_joint_name(model, 33, &name, E), MB_OK);
    CHECK(name != NULL && strcmp(name, "right_hand_roll_skel") == 0);
    for (uint32_t j = 0; j < N_JOINTS; ++j) {
        int32_t parent = 99;
        float   x = NAN, y = NAN, z = NAN;
        CHECK_STATUS(mb_model_get_joint_parent(model, j, &parent, E), MB_OK);
        CHECK(j == 0 ? parent == -1 : (parent >= 0 && parent < (int32_t) j));
        CHECK_STATUS(mb_model_get_neutral_joint_position(model, j, &x, &y, &z, E), MB_OK);
        CHECK(isfinite(x) && isfinite(y) && isfinite(z));
        CHECK(mb_model_get_joint_name(model, j, &name, E) == MB_OK && name != NULL && name[0] != '\0');
    }
    int32_t parent = 0;
    float   x, y, z;
    CHECK_STATUS(mb_model_get_joint_name(model, 34, &name, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_parent(model, 34, &parent, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_neutral_joint_position(model, UINT32_MAX, &x, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_parameter_count(model, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_count(model, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_name(model, 0, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_joint_parent(model, 0, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_neutral_joint_position(model, 0, NULL, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_neutral_joint_position(model, 0, &x, NULL, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_neutral_joint_position(model, 0, &x, &y, NULL, E), MB_INVALID_ARGUMENT);
}

static void test_boundary_poses(const mb_model * model) {
    static float sr[12], sq[544], tr[12], tq[544];
    make_boundary(model, 1.0f, 2.0f, 0.0f, 0.0f, sr, sq);
    make_boundary(model, 1.0f, 3.0f, 1.5f, 0.0f, tr, tq);

    mb_inference_request * req = NULL;
    CHECK_STATUS(mb_inference_request_create(&req, E), MB_OK);
    /* custom masks are overwritten by the boundary helper */
    uint32_t off[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    CHECK_STATUS(mb_inference_request_set_mask(req, MB_INFERENCE_POSE, off, 8, E), MB_OK);

    /* incomplete requests cannot run */
    mb_motion * motion = (mb_motion *) &g_err;
    CHECK_STATUS(mb_model_infer(model, req, &motion, E), MB_INVALID_ARGUMENT);
    CHECK(motion == NULL);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, sr, 12, sq, 544, E), MB_OK);
    motion = (mb_motion *) &g_err;
    CHECK_STATUS(mb_model_infer(model, req, &motion, E), MB_INVALID_ARGUMENT);
    CHECK(motion == NULL);
    CHECK(strstr(g_err, "target") != NULL);

    /* argument checks; each failure leaves the request unchanged */
    static float before[2424], after[2424];
    uint64_t     n = 0;
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_POSE, before, 2424, &n, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(NULL, model, 1, tr, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, NULL, 1, tr, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 2, tr, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, NULL, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 11, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, NULL, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, tq, 543, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, tq, 545, E), MB_INVALID_ARGUMENT);
    static float bad_q[544], bad_r[12];
    memcpy(bad_q, tq, sizeof bad_q);
    bad_q[543] = 1.02f; /* |q| = 1.02 */
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, bad_q, 544, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "norm") != NULL);
    bad_q[543] = 0.985f; /* |q| = 0.985 */
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, bad_q, 544, E), MB_INVALID_ARGUMENT);
    bad_q[543] = 1.005f; /* within 1 ± 0.01: fine (on a copy) */
    {
        mb_inference_request * other = NULL;
        CHECK(mb_inference_request_create(&other, E) == MB_OK);
        CHECK_STATUS(mb_inference_request_set_boundary_poses(other, model, 0, tr, 12, bad_q, 544, E), MB_OK);
        mb_inference_request_free(other);
    }
    bad_q[543] = NAN;
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, tr, 12, bad_q, 544, E), MB_INVALID_ARGUMENT);
    memcpy(bad_r, tr, sizeof bad_r);
    bad_r[4] = INFINITY;
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, bad_r, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    bad_r[4] = 2.0e4f;
    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 0, bad_r, 12, tq, 544, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_POSE, after, 2424, &n, E), MB_OK);
    CHECK(memcmp(before, after, sizeof before) == 0);

    CHECK_STATUS(mb_inference_request_set_boundary_poses(req, model, 1, tr, 12, tq, 544, E), MB_OK);

    /* encoded features of the rest pose: heading 0, target velocity 1.5 m/s along +Z */
    float    g[40], l[32];
    uint32_t mask[8];
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_GLOBAL_ROOT, g, 40, &n, E), MB_OK);
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_LOCAL_ROOT, l, 32, &n, E), MB_OK);
    CHECK(fabsf(g[0] - 1.0f) < 1e-6f && fabsf(g[1] - sr[1]) < 1e-6f && fabsf(g[2] - 2.0f) < 1e-6f);
    CHECK(fabsf(g[3] - 1.0f) < 1e-6f && fabsf(g[4]) < 1e-6f);
    CHECK(fabsf(g[35] - 1.0f) < 1e-6f && fabsf(g[37] - (3.0f + 3.0f * 1.5f / 30.0f)) < 1e-5f);
    CHECK(l[12] == 0.0f && l[13] == 0.0f && l[14] == 0.0f && l[15] == 0.0f);   /* source slot 3 unknown */
    CHECK(fabsf(l[16 + 2] - 1.5f) < 1e-4f && fabsf(l[16 + 1]) < 1e-5f);      /* target vz, vx */
    CHECK(fabsf(l[28 + 2] - 1.5f) < 1e-4f && fabsf(l[28 + 3] - tr[10]) < 1e-6f);  /* slot 7 repeats slot 6 */
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_LOCAL_ROOT, mask, 8, &n, E), MB_OK);
    CHECK(mask[0] == 1 && mask[2] == 1 && mask[3] == 0 && mask[4] == 1 && mask[7] == 1);
    CHECK_STATUS(mb_inference_request_get_mask(req, MB_INFERENCE_POSE, mask, 8, &n, E), MB_OK);
    CHECK(mask[1] == 1 && mask[7] == 1);
    static float pose[2424];
    CHECK_STATUS(mb_inference_request_get_features(req, MB_INFERENCE_POSE, pose, 2424, &n, E), MB_OK);
    /* joint 1 of frame 0: neutral offset relative to the root's x/z, absolute y */
    float nx, ny, nz;
    CHECK(mb_model_get_neutral_joint_position(model, 1, &nx, &ny, &nz, E) == MB_OK);
    CHECK(fabsf(pose[0] - nx) < 1e-5f && fabsf(pose[1] - (ny + sr[1])) < 1e-5f && fabsf(pose[2] - nz) < 1e-5f);
    /* 6D of every joint at rest is the identity's first two columns */
    int identity = 1;
    for (int j = 0; j < N_JOINTS; ++j) {
        const float * s = pose + 99 + j * 6;
        identity = identity && fabsf(s[0] - 1) < 1e-6f && fabsf(s[1]) < 1e-6f && fabsf(s[2]) < 1e-6f &&
                   fabsf(s[3]) < 1e-6f && fabsf(s[4] - 1) < 1e-6f && fabsf(s[5]) < 1e-6f;
    }
    CHECK(identity);

    /* the same features supplied raw give the same motion as the boundary helper */
    mb_inference_request * raw = NULL;
    CHECK(mb_inference_request_create(&raw, E) == MB_OK);
    CHECK_STATUS(mb_inference_request_set_features(raw, MB_INFERENCE_GLOBAL_ROOT, g, 40, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_features(raw, MB_INFERENCE_LOCAL_ROOT, l, 32, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_features(raw, MB_INFERENCE_POSE, pose, 2424, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(raw, 1, E), MB_OK);
    CHECK_STATUS(mb_inference_request_set_sampling_argmax(req, 1, E), MB_OK);
    mb_motion * a = NULL;
    mb_motion * b = NULL;
    CHECK_STATUS(mb_model_infer(model, req, &a, E), MB_OK);
    CHECK_STATUS(mb_model_infer(model, raw, &b, E), MB_OK);
    CHECK(a != NULL && b != NULL && same_motion(a, b));
    mb_motion_free(a);
    mb_motion_free(b);

    /* an enabled global-root slot needs a unit cos/sin pair; a disabled one does not */
    g[5 * 5 + 3] = 0.5f;
    g[5 * 5 + 4] = 0.5f;
    CHECK_STATUS(mb_inference_request_set_features(raw, MB_INFERENCE_GLOBAL_ROOT, g, 40, E), MB_OK);
    a = (mb_motion *) &g_err;
    CHECK_STATUS(mb_model_infer(model, raw, &a, E), MB_INVALID_ARGUMENT);
    CHECK(a == NULL && strstr(g_err, "slot 5") != NULL);
    uint32_t g5off[8] = {1, 1, 1, 1, 1, 0, 1, 1};
    CHECK_STATUS(mb_inference_request_set_mask(raw, MB_INFERENCE_GLOBAL_ROOT, g5off, 8, E), MB_OK);
    CHECK_STATUS(mb_model_infer(model, raw, &a, E), MB_OK);
    mb_motion_free(a);

    mb_inference_request_free(raw);
    mb_inference_request_free(req);
}

static void test_infer(const mb_model * model) {
    /* fixed durations: the minimum, a middle one and the maximum */
    const int      indices[] = {0, 4, 10};
    const uint64_t frames[]  = {24, 40, 64};
    for (int i = 0; i < 3; ++i) {
        mb_inference_request * req    = make_request(model, 1.0f, 1, 0, indices[i]);
        mb_motion *            motion = NULL;
        CHECK_STATUS(mb_model_infer(model, req, &motion, E), MB_OK);
        if (motion != NULL) {
            CHECK(check_motion(motion) == frames[i]);
        }
        mb_motion_free(motion);
        mb_inference_request_free(req);
    }

    /* predicted duration, both sampling modes; repeatable; the request is not modified */
    for (uint32_t argmax = 0; argmax < 2; ++argmax) {
        mb_inference_request * req = make_request(model, 1.5f, argmax, 42, -1);
        static float           before[2424], after[2424];
        uint64_t               n = 0;
        CHECK(mb_inference_request_get_features(req, MB_INFERENCE_POSE, before, 2424, &n, E) == MB_OK);
        mb_motion * a = NULL;
        mb_motion * b = NULL;
        CHECK_STATUS(mb_model_infer(model, req, &a, E), MB_OK);
        CHECK_STATUS(mb_model_infer(model, req, &b, E), MB_OK);
        CHECK(a != NULL && b != NULL);
        if (a != NULL && b != NULL) {
            check_motion(a);
            CHECK(same_motion(a, b));
        }
        CHECK(mb_inference_request_get_features(req, MB_INFERENCE_POSE, after, 2424, &n, E) == MB_OK);
        CHECK(memcmp(before, after, sizeof before) == 0);
        mb_motion_free(a);
        mb_motion_free(b);
        mb_inference_request_free(req);
    }
}

static void test_batch(const mb_model * model) {
    mb_inference_request * reqs[3] = {make_request(model, 1.0f, 1, 0, 0), make_request(model, 1.5f, 0, 7, -1),
                                      make_request(model, 2.0f, 1, 0, 10)};
    const mb_inference_request * creqs[3] = {reqs[0], reqs[1], reqs[2]};
    mb_motion *                  outs[3]  = {NULL, NULL, NULL};
    CHECK_STATUS(mb_model_infer_batch(model, creqs, 3, outs, E), MB_OK);
    for (int i = 0; i < 3; ++i) {
        mb_motion * single = NULL;
        CHECK_STATUS(mb_model_infer(model, reqs[i], &single, E), MB_OK);
        CHECK(outs[i] != NULL && single != NULL && same_motion(outs[i], single));
        mb_motion_free(single);
    }
    uint64_t f0 = 0, f2 = 0;
    CHECK(mb_motion_get_frame_count(outs[0], &f0, E) == MB_OK && f0 == 24);
    CHECK(mb_motion_get_frame_count(outs[2], &f2, E) == MB_OK && f2 == 64);
    for (int i = 0; i < 3; ++i) {
        mb_motion_free(outs[i]);
    }

    /* failures: all outputs NULL */
    mb_motion * poison = (mb_motion *) &g_err;
    mb_motion * o3[3]  = {poison, poison, poison};
    const mb_inference_request * with_null[3] = {reqs[0], NULL, reqs[2]};
    CHECK_STATUS(mb_model_infer_batch(model, with_null, 3, o3, E), MB_INVALID_ARGUMENT);
    CHECK(o3[0] == NULL && o3[1] == NULL && o3[2] == NULL);
    CHECK(strstr(g_err, "requests[1]") != NULL);

    mb_inference_request * incomplete = NULL;
    CHECK(mb_inference_request_create(&incomplete, E) == MB_OK);
    const mb_inference_request * with_bad[3] = {reqs[0], reqs[1], incomplete};
    o3[0] = o3[1] = o3[2] = poison;
    CHECK_STATUS(mb_model_infer_batch(model, with_bad, 3, o3, E), MB_INVALID_ARGUMENT);
    CHECK(o3[0] == NULL && o3[1] == NULL && o3[2] == NULL);
    CHECK(strstr(g_err, "requests[2]") != NULL);
    mb_inference_request_free(incomplete);

    CHECK_STATUS(mb_model_infer_batch(model, creqs, 0, o3, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_infer_batch(model, NULL, 3, o3, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_infer_batch(model, creqs, 3, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_infer_batch(NULL, creqs, 3, o3, E), MB_INVALID_ARGUMENT);

    /* the limit (4096) is the maximum, one more is rejected; a batch over one fused chunk (the
     * same request repeated) gives the same motion in every lane */
    uint64_t limit = 0, fused = 0;
    CHECK_STATUS(mb_model_get_batch_limit(model, &limit, E), MB_OK);
    CHECK_STATUS(mb_model_get_batch_lanes(model, &fused, E), MB_OK);
    CHECK(limit == 4096 && fused >= 1 && fused <= limit);
    CHECK_STATUS(mb_model_get_batch_limit(NULL, &limit, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_model_get_batch_lanes(model, NULL, E), MB_INVALID_ARGUMENT);
    static const mb_inference_request * many[4097];
    static mb_motion *                  outs_many[4097];
    for (int i = 0; i < 4097; ++i) {
        many[i] = reqs[0];
    }
    CHECK_STATUS(mb_model_infer_batch(model, many, 4097, outs_many, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "4097") != NULL);
    const uint64_t n_many = fused + 6;
    CHECK_STATUS(mb_model_infer_batch(model, many, n_many, outs_many, E), MB_OK);
    int all_same = 1;
    for (uint64_t i = 0; i < n_many; ++i) {
        all_same = all_same && outs_many[i] != NULL && same_motion(outs_many[i], outs_many[0]);
    }
    CHECK(all_same);
    for (uint64_t i = 0; i < n_many; ++i) {
        mb_motion_free(outs_many[i]);
    }
    /* two bad requests among n_many (converted on several threads): the lower index is named and
     * every output stays NULL */
    mb_inference_request * bad = NULL;
    CHECK(mb_inference_request_create(&bad, E) == MB_OK);
    many[n_many - 4] = bad;
    many[n_many - 20] = bad;
    CHECK_STATUS(mb_model_infer_batch(model, many, n_many, outs_many, E), MB_INVALID_ARGUMENT);
    char want[32];
    snprintf(want, sizeof want, "requests[%llu]", (unsigned long long) (n_many - 20));
    CHECK(strstr(g_err, want) != NULL);
    int all_null = 1;
    for (uint64_t i = 0; i < n_many; ++i) {
        all_null = all_null && outs_many[i] == NULL;
    }
    CHECK(all_null);
    many[n_many - 4] = many[n_many - 20] = reqs[0];
    mb_inference_request_free(bad);
    for (int i = 0; i < 3; ++i) {
        mb_inference_request_free(reqs[i]);
    }
}

static void test_lifetimes(const char * bundle) {
    /* motions outlive the model and the request; the model outlives nothing */
    mb_model *           model = NULL;
    mb_runtime_options * opt   = NULL;
    CHECK(mb_runtime_options_create(&opt, E) == MB_OK);
    CHECK(mb_runtime_options_set_threads(opt, 1, E) == MB_OK);
    CHECK(mb_runtime_options_set_device(opt, MB_DEVICE_CPU, E) == MB_OK);
    CHECK_STATUS(mb_model_load(bundle, opt, &model, E), MB_OK);
    mb_runtime_options_free(opt); /* options are copied at load */
    if (model == NULL) {
        return;
    }
    mb_inference_request * req    = make_request(model, 1.2f, 1, 0, 4);
    mb_motion *            motion = NULL;
    CHECK_STATUS(mb_model_infer(model, req, &motion, E), MB_OK);
    mb_inference_request_free(req);
    mb_model_free(model);
    if (motion != NULL) {
        CHECK(check_motion(motion) == 40);
    }
    mb_motion_free(motion);
}

int main(int argc, char ** argv) {
    test_library();
    test_error_buffers();
    test_options();
    test_commands();
    test_request_fields();
    test_model_load_errors();

    const char * bundle = argc > 1 ? argv[1] : NULL;
    struct stat  st;
    if (bundle == NULL || stat(bundle, &st) != 0) {
        printf("skipped: model-backed tests (no bundle directory%s%s)\n", bundle ? " at " : "", bundle ? bundle : "");
    } else {
        mb_model * model = NULL;
        CHECK_STATUS(mb_model_load(bundle, NULL, &model, E), MB_OK);
        if (model != NULL) {
            test_model_queries(model);
            test_boundary_poses(model);
            test_infer(model);
            test_batch(model);
            mb_model_free(model);
        }
        test_lifetimes(bundle);
    }

    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
