/*
 * libFuzzer target for the C input boundary, written in C against the public header. The first byte
 * picks a program:
 *   - even: request calls (set/get features and masks with arbitrary fields, counts, floats and
 *     capacities, seeds, sampling flags, boundary poses), ending in mb_model_infer;
 *   - odd: command, style and agent calls (directions, speeds, world targets, seeds, caller
 *     histories of arbitrary shape and values, reset, advance, side-step styles), up to two plans,
 *     and every motion getter on the plans.
 * Error buffers have arbitrary capacity. With MB_FUZZ_BUNDLE set to a (small) bundle directory the
 * model is loaded once, and MB_FUZZ_STYLES names up to two .mbstyle files (colon-separated); without
 * them, the model-free calls are fuzzed. The checks: no crash, no sanitizer report, error buffers
 * always terminated inside their capacity, success clears them, failing calls leave outputs NULL.
 */
#include <motionbricks/inference.h>
#include <motionbricks/motionbricks.h>

#include <stdlib.h>
#include <string.h>

#define MAX_FLOATS 2600

struct reader {
    const uint8_t * p;
    size_t          n;
};

static uint32_t take(struct reader * r, int bytes) {
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) {
        v <<= 8;
        if (r->n > 0) {
            v |= *r->p++;
            --r->n;
        }
    }
    return v;
}

static float take_float(struct reader * r) {
    uint32_t bits = take(r, 4);
    /* half the time a small, mostly valid value; else raw bits (NaN, Inf, huge) */
    if ((bits & 1u) == 0u) {
        return (float) ((int32_t) (bits >> 8) % 2000) / 1000.0f;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void check_error(const char * error, uint64_t capacity) {
    if (capacity > 0 && memchr(error, '\0', (size_t) capacity) == NULL) {
        abort(); /* the message must be terminated inside the buffer */
    }
}

static const mb_model * fuzz_model(void) {
    static int        tried = 0;
    static mb_model * model = NULL;
    if (!tried) {
        tried = 1;
        const char * dir = getenv("MB_FUZZ_BUNDLE");
        if (dir != NULL && mb_model_load(dir, NULL, &model, NULL, 0) != MB_OK) {
            model = NULL;
        }
    }
    return model;
}

/* the styles of MB_FUZZ_STYLES ("a.mbstyle:b.mbstyle"), loaded once; NULL where absent */
static mb_style * g_styles[2];

static void load_styles(const mb_model * model) {
    static int tried = 0;
    if (tried || model == NULL) {
        return;
    }
    tried = 1;
    const char * list = getenv("MB_FUZZ_STYLES");
    char         path[4096];
    for (int i = 0; i < 2 && list != NULL && *list != '\0'; ++i) {
        const char * end = strchr(list, ':');
        size_t       n   = end ? (size_t) (end - list) : strlen(list);
        if (n < sizeof path) {
            memcpy(path, list, n);
            path[n] = '\0';
            if (mb_style_load(model, path, &g_styles[i], NULL, 0) != MB_OK) {
                g_styles[i] = NULL;
            }
        }
        list = end ? end + 1 : list + n;
    }
}

static void after_call(mb_status s, const char * error, uint64_t capacity) {
    check_error(error, capacity);
    if (s == MB_OK && capacity > 0 && error[0] != '\0') {
        abort(); /* success clears the buffer */
    }
}

/* every getter of a motion; buffers must hold what their counts say */
static void read_motion(const mb_motion * m) {
    typedef mb_status (*view_getter)(const mb_motion *, const float **, uint64_t *, char *, uint64_t);
    static const view_getter views[] = {
        mb_motion_get_root_translations,        mb_motion_get_local_rotations_xyzw, mb_motion_get_joint_positions,
        mb_motion_get_mujoco_qpos,              mb_motion_get_target_root_translations,
        mb_motion_get_target_local_rotations_xyzw,
    };
    uint64_t frames = 0, targets = 0;
    if (mb_motion_get_frame_count(m, &frames, NULL, 0) != MB_OK ||
        mb_motion_get_target_frame_count(m, &targets, NULL, 0) != MB_OK || frames < 24 || frames > 64) {
        abort();
    }
    const uint64_t per_frame[] = {3, 34 * 4, 34 * 3, 36, 3, 34 * 4};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; ++i) {
        const float * v = NULL;
        uint64_t      n = 0;
        if (views[i](m, &v, &n, NULL, 0) != MB_OK || n != (i < 4 ? frames : targets) * per_frame[i]) {
            abort();
        }
        volatile float sink = 0.0f;
        for (uint64_t k = 0; k < n; ++k) {
            sink += v[k]; /* every value readable (ASan) */
        }
        (void) sink;
    }
}

/* command, style and agent calls; at most two plans */
static void agent_program(struct reader * r, const mb_model * model) {
    static float roots[8 * 3], rots[8 * 40 * 4];
    char         error[300];
    mb_command * cmd   = NULL;
    mb_agent *   agent = NULL;
    if (mb_command_create(&cmd, NULL, 0) != MB_OK) {
        abort();
    }
    if (model != NULL && mb_agent_create(model, &agent, NULL, 0) != MB_OK) {
        abort();
    }
    int plans = 0;
    for (int step = 0; step < 24 && r->n > 0; ++step) {
        const uint32_t op       = take(r, 1) % 12;
        const uint64_t capacity = take(r, 1) % 260;
        mb_style *     style    = g_styles[take(r, 1) % 3 % 2];
        memset(error, 'X', sizeof error);
        mb_status s      = MB_OK;
        int       called = 1;
        switch (op) {
            case 0: s = mb_command_set_style(cmd, (take(r, 1) & 1u) ? style : NULL, error, capacity); break;
            case 1: {
                const float x = take_float(r), y = take_float(r), z = take_float(r);
                s = mb_command_set_movement_direction(cmd, x, y, z, error, capacity);
                break;
            }
            case 2: {
                const float x = take_float(r), y = take_float(r), z = take_float(r);
                s = mb_command_set_facing_direction(cmd, x, y, z, error, capacity);
                break;
            }
            case 3: s = mb_command_set_target_speed(cmd, take_float(r), error, capacity); break;
            case 4: {
                const float x = take_float(r), y = take_float(r), z = take_float(r), h = take_float(r);
                s = mb_command_set_world_target(cmd, x, y, z, h, take(r, 1) % 3, error, capacity);
                break;
            }
            case 5: s = mb_command_set_seed(cmd, ((uint64_t) take(r, 4) << 32) | take(r, 4), error, capacity); break;
            case 6: s = mb_command_set_sampling_argmax(cmd, take(r, 1) % 3, error, capacity); break;
            case 7:
                if ((called = agent != NULL)) {
                    s = mb_agent_reset(agent, (take(r, 1) & 1u) ? style : NULL, error, capacity);
                }
                break;
            case 8:
                if ((called = agent != NULL)) {
                    s = mb_agent_advance(agent, take(r, 4), error, capacity);
                }
                break;
            case 9:
                if ((called = agent != NULL)) {
                    const uint32_t pick = take(r, 1);
                    s = mb_agent_set_sidestep_styles(agent, (pick & 1u) ? g_styles[0] : NULL,
                                                     (pick & 2u) ? g_styles[1] : NULL, error, capacity);
                }
                break;
            case 10: {
                /* a caller history: 2..8 frames of 33..35 joints, identity poses with a few fuzzed values */
                if (!(called = agent != NULL)) {
                    break;
                }
                const uint64_t frames = 2 + take(r, 1) % 7, joints = 33 + take(r, 1) % 3;
                for (uint64_t i = 0; i < frames * 3; ++i) {
                    roots[i] = (float) (i % 3 == 1) * 0.8f;
                }
                for (uint64_t i = 0; i < frames * joints * 4; ++i) {
                    rots[i] = (i % 4 == 3) ? 1.0f : 0.0f;
                }
                for (int k = 0; k < 4 && r->n > 0; ++k) {
                    const uint32_t at = take(r, 2);
                    if (at & 1u) {
                        roots[(at >> 1) % (frames * 3)] = take_float(r);
                    } else {
                        rots[(at >> 1) % (frames * joints * 4)] = take_float(r);
                    }
                }
                s = mb_agent_set_context(agent, roots, rots, frames, joints, error, capacity);
                break;
            }
            default: {
                if (!(called = agent != NULL && plans < 2)) {
                    break;
                }
                ++plans;
                mb_motion * motion = (mb_motion *) (void *) error;
                s = mb_agent_plan(agent, cmd, &motion, error, capacity);
                if ((s == MB_OK) != (motion != NULL)) {
                    abort();
                }
                if (motion != NULL) {
                    read_motion(motion);
                }
                mb_motion_free(motion);
                break;
            }
        }
        if (called) {
            after_call(s, error, capacity);
        }
    }
    mb_agent_free(agent);
    mb_command_free(cmd);
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static float    floats[MAX_FLOATS], roots[MAX_FLOATS];
    static uint32_t masks[64];
    char            error[300];
    struct reader   r     = {data, size};
    const mb_model * model = fuzz_model();
    load_styles(model);
    if (take(&r, 1) & 1u) {
        agent_program(&r, model);
        return 0;
    }

    mb_inference_request * req = NULL;
    if (mb_inference_request_create(&req, NULL, 0) != MB_OK) {
        abort();
    }
    for (int step = 0; step < 16 && r.n > 0; ++step) {
        const uint32_t op       = take(&r, 1) % 8;
        const uint64_t capacity = take(&r, 1) % 260;
        const uint32_t field    = take(&r, 1) % 6;
        uint64_t       count    = take(&r, 2) % MAX_FLOATS;
        uint64_t       got      = 0;
        memset(error, 'X', sizeof error);
        mb_status s = MB_OK;
        switch (op) {
            case 0: {
                /* exact counts most of the time, so valid calls happen too */
                static const uint64_t exact[3] = {40, 32, 2424};
                if (field < 3 && (count & 3u) != 0u) {
                    count = exact[field];
                }
                for (uint64_t i = 0; i < count && r.n > 0; ++i) {
                    floats[i] = take_float(&r);
                }
                s = mb_inference_request_set_features(req, field, floats, count, error, capacity);
                break;
            }
            case 1: {
                count %= 16;
                for (uint64_t i = 0; i < count; ++i) {
                    masks[i] = take(&r, 1) % 3;
                }
                s = mb_inference_request_set_mask(req, field, masks, count, error, capacity);
                break;
            }
            case 2:
                s = mb_inference_request_get_features(req, field, (count & 1u) ? floats : NULL, count, &got, error,
                                                      capacity);
                break;
            case 3:
                s = mb_inference_request_get_mask(req, field, (count & 1u) ? masks : NULL, count % 64, &got, error,
                                                  capacity);
                break;
            case 4:
                s = mb_inference_request_set_seed(req, ((uint64_t) take(&r, 4) << 32) | take(&r, 4), error, capacity);
                break;
            case 5:
                s = mb_inference_request_set_sampling_argmax(req, take(&r, 1) % 3, error, capacity);
                break;
            case 6: {
                /* boundary poses: mostly unit quaternions with a perturbation */
                const uint64_t root_count = (count & 1u) ? 12 : count % 16;
                const uint64_t rot_count  = (count & 2u) ? 544 : count % 600;
                for (uint64_t i = 0; i < root_count; ++i) {
                    roots[i] = take_float(&r);
                }
                for (uint64_t i = 0; i < rot_count; ++i) {
                    floats[i] = (i % 4 == 3) ? 1.0f : 0.0f;
                }
                for (int k = 0; k < 4 && r.n > 0; ++k) {
                    floats[take(&r, 2) % (rot_count + 1 > 1 ? rot_count : 1)] = take_float(&r);
                }
                s = mb_inference_request_set_boundary_poses(req, model, field % 3, roots, root_count, floats, rot_count,
                                                            error, capacity);
                break;
            }
            default: {
                mb_motion * motion = (mb_motion *) (void *) error;
                if (model == NULL) {
                    break;
                }
                s = mb_model_infer(model, req, &motion, error, capacity);
                if ((s == MB_OK) != (motion != NULL)) {
                    abort();
                }
                mb_motion_free(motion);
                step = 16; /* at most one inference per input */
                break;
            }
        }
        after_call(s, error, capacity);
    }
    mb_inference_request_free(req);
    return 0;
}
