/*
 * Thread rules of the C ABI, compiled as C11: separate models used from separate threads run
 * concurrently and give the same motion as a single-threaded run; one model shared by several
 * threads is serialised by its lock and gives the same results too. Build with ThreadSanitizer
 * (-fsanitize=thread) to check for data races. With a style, every run also plans with an agent of
 * its own (agents of one model share its lock) and compares that plan with the reference.
 *
 *     test-capi-threads BUNDLE_DIR [STYLE.mbstyle]
 */
#define _POSIX_C_SOURCE 200809L
#include <motionbricks/inference.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N_THREADS 3
#define N_RUNS    3

static float    g_ref_roots[64 * 3];
static float    g_ref_rots[64 * 34 * 4];
static uint64_t g_ref_frames = 0;

static const char * g_style            = NULL;   /* optional: agents too */
static float        g_ref_plan[64 * 3];          /* the reference agent plan's roots */
static uint64_t     g_ref_plan_values = 0;

struct job {
    const mb_model * model;
    int              ok;        /* runs that matched the reference */
    char             error[256];
};

static mb_inference_request * make_request(const mb_model * model, char * error, uint64_t capacity) {
    static const float speed[2] = {0.0f, 1.0f};
    float              roots[2][12], xyzw[544];
    for (int f = 0; f < 4; ++f) {
        for (int j = 0; j < 34; ++j) {
            float * q = xyzw + (f * 34 + j) * 4;
            q[0] = q[1] = q[2] = 0.0f;
            q[3] = 1.0f;
        }
        for (int b = 0; b < 2; ++b) {
            roots[b][f * 3 + 0] = 0.0f;
            roots[b][f * 3 + 1] = 0.8f;
            roots[b][f * 3 + 2] = (float) b * 1.2f + speed[b] * (float) f / 30.0f;
        }
    }
    mb_inference_request * req = NULL;
    if (mb_inference_request_create(&req, error, capacity) != MB_OK) {
        return NULL;
    }
    if (mb_inference_request_set_boundary_poses(req, model, 0, roots[0], 12, xyzw, 544, error, capacity) != MB_OK ||
        mb_inference_request_set_boundary_poses(req, model, 1, roots[1], 12, xyzw, 544, error, capacity) != MB_OK ||
        mb_inference_request_set_seed(req, 5, error, capacity) != MB_OK) {
        mb_inference_request_free(req);
        return NULL;
    }
    return req;
}

/* runs the request once; returns 1 when the motion equals the reference (or stores it as the reference) */
static int run_once(const mb_model * model, int store, char * error, uint64_t capacity) {
    mb_inference_request * req = make_request(model, error, capacity);
    if (req == NULL) {
        return 0;
    }
    mb_motion * motion = NULL;
    mb_status   s      = mb_model_infer(model, req, &motion, error, capacity);
    mb_inference_request_free(req);
    if (s != MB_OK) {
        return 0;
    }
    const float * roots = NULL;
    const float * rots  = NULL;
    uint64_t      nr = 0, nq = 0, frames = 0;
    int           same = 0;
    if (mb_motion_get_frame_count(motion, &frames, error, capacity) == MB_OK &&
        mb_motion_get_root_translations(motion, &roots, &nr, error, capacity) == MB_OK &&
        mb_motion_get_local_rotations_xyzw(motion, &rots, &nq, error, capacity) == MB_OK && frames <= 64) {
        if (store) {
            memcpy(g_ref_roots, roots, nr * sizeof(float));
            memcpy(g_ref_rots, rots, nq * sizeof(float));
            g_ref_frames = frames;
            same         = 1;
        } else {
            same = frames == g_ref_frames && memcmp(roots, g_ref_roots, nr * sizeof(float)) == 0 &&
                   memcmp(rots, g_ref_rots, nq * sizeof(float)) == 0;
            if (!same) {
                snprintf(error, capacity, "motion differs from the single-threaded reference");
            }
        }
    }
    mb_motion_free(motion);
    return same;
}

/* one agent plan (style, agent and command of its own); 1 when it equals (or becomes) the reference */
static int plan_once(const mb_model * model, int store, char * error, uint64_t capacity) {
    mb_style *    style   = NULL;
    mb_agent *    agent   = NULL;
    mb_command *  command = NULL;
    mb_motion *   motion  = NULL;
    const float * roots   = NULL;
    uint64_t      n       = 0;
    int           same    = 0;
    if (mb_style_load(model, g_style, &style, error, capacity) == MB_OK &&
        mb_agent_create(model, &agent, error, capacity) == MB_OK && mb_agent_reset(agent, style, error, capacity) == MB_OK &&
        mb_command_create(&command, error, capacity) == MB_OK &&
        mb_command_set_style(command, style, error, capacity) == MB_OK &&
        mb_command_set_movement_direction(command, 0.0f, 0.0f, 1.0f, error, capacity) == MB_OK &&
        mb_command_set_seed(command, 5, error, capacity) == MB_OK &&
        mb_agent_plan(agent, command, &motion, error, capacity) == MB_OK &&
        mb_motion_get_root_translations(motion, &roots, &n, error, capacity) == MB_OK && n <= 64 * 3) {
        if (store) {
            memcpy(g_ref_plan, roots, n * sizeof(float));
            g_ref_plan_values = n;
            same              = 1;
        } else {
            same = n == g_ref_plan_values && memcmp(roots, g_ref_plan, n * sizeof(float)) == 0;
            if (!same) {
                snprintf(error, capacity, "agent plan differs from the single-threaded reference");
            }
        }
    }
    mb_motion_free(motion);
    mb_command_free(command);
    mb_agent_free(agent);
    mb_style_free(style);
    return same;
}

static void * worker(void * arg) {
    struct job * job = (struct job *) arg;
    for (int i = 0; i < N_RUNS; ++i) {
        job->ok += run_once(job->model, 0, job->error, sizeof job->error) &&
                   (g_style == NULL || plan_once(job->model, 0, job->error, sizeof job->error));
    }
    return NULL;
}

static int run_threads(mb_model * const * models, const char * what) {
    pthread_t  threads[N_THREADS];
    struct job jobs[N_THREADS];
    for (int t = 0; t < N_THREADS; ++t) {
        jobs[t].model    = models[t];
        jobs[t].ok       = 0;
        jobs[t].error[0] = '\0';
        if (pthread_create(&threads[t], NULL, worker, &jobs[t]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 0;
        }
    }
    int ok = 1;
    for (int t = 0; t < N_THREADS; ++t) {
        pthread_join(threads[t], NULL);
        if (jobs[t].ok != N_RUNS) {
            fprintf(stderr, "%s: thread %d matched %d of %d runs (%s)\n", what, t, jobs[t].ok, N_RUNS, jobs[t].error);
            ok = 0;
        }
    }
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    return ok;
}

int main(int argc, char ** argv) {
    struct stat st;
    if (argc < 2 || stat(argv[1], &st) != 0) {
        printf("skipped: no bundle directory\n");
        return 0;
    }
    char                 error[256];
    mb_model *           models[N_THREADS] = {NULL};
    mb_runtime_options * opt               = NULL;
    if (mb_runtime_options_create(&opt, error, sizeof error) != MB_OK ||
        mb_runtime_options_set_threads(opt, 1, error, sizeof error) != MB_OK) {
        fprintf(stderr, "options: %s\n", error);
        return 1;
    }
    int rc = 0;
    for (int t = 0; t < N_THREADS; ++t) {
        if (mb_model_load(argv[1], opt, &models[t], error, sizeof error) != MB_OK) {
            fprintf(stderr, "load: %s\n", error);
            rc = 1;
        }
    }
    mb_runtime_options_free(opt);
    g_style = argc > 2 ? argv[2] : NULL;
    if (rc == 0 && !run_once(models[0], 1, error, sizeof error)) {
        fprintf(stderr, "reference run: %s\n", error);
        rc = 1;
    }
    if (rc == 0 && g_style != NULL && !plan_once(models[0], 1, error, sizeof error)) {
        fprintf(stderr, "reference plan: %s\n", error);
        rc = 1;
    }
    if (rc == 0) {
        /* one model per thread: concurrent */
        if (!run_threads(models, "separate models")) {
            rc = 1;
        }
        /* one model shared by every thread: serialised by the model */
        mb_model * shared[N_THREADS];
        for (int t = 0; t < N_THREADS; ++t) {
            shared[t] = models[0];
        }
        if (!run_threads(shared, "shared model")) {
            rc = 1;
        }
    }
    for (int t = 0; t < N_THREADS; ++t) {
        mb_model_free(models[t]);
    }
    return rc;
}
