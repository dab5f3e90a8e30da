/*
 * libFuzzer target for the C input boundary of stateless inference, written in C against the public
 * header: each input is a program of request calls (set/get features and masks with arbitrary
 * fields, counts, floats and capacities, seeds, sampling flags, boundary poses) with error buffers of
 * arbitrary capacity, ending in mb_model_infer when a model is loaded. With MB_FUZZ_BUNDLE set to a
 * (small) bundle directory the model is loaded once; without it, the model-free calls are fuzzed.
 * The checks: no crash, no sanitizer report, error buffers always terminated inside their capacity,
 * failing calls leave outputs NULL.
 */
#include <motionbricks/inference.h>

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

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static float    floats[MAX_FLOATS], roots[MAX_FLOATS];
    static uint32_t masks[64];
    char            error[300];
    struct reader   r     = {data, size};
    const mb_model * model = fuzz_model();

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
        check_error(error, capacity);
        if (s == MB_OK && capacity > 0 && error[0] != '\0') {
            abort(); /* success clears the buffer */
        }
    }
    mb_inference_request_free(req);
    return 0;
}
