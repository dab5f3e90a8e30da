/*
 * Thread rules of the C ABI, compiled as C11: separate models used from separate threads run
 * concurrently and give the same motion as a single-threaded run; one model shared by several
 * threads runs them concurrently too (each agent on its own state, stateless calls on states from
 * the model's pool) and gives the same results. Build with ThreadSanitizer (-fsanitize=thread) to
 * check for data races. With a style, every run also plans with an agent of its own and compares
 * that plan with the reference, and 4 threads × 50 plans (each thread its own agent and command
 * sequence, each plan followed by a stateless inference) on ONE model must equal, bitwise, the
 * same sequences run serially.
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

/* ---- 4 threads × 50 plans on one model ------------------------------------------------------- */

#define N_SEQ_THREADS 4
#define N_SEQ_PLANS   50

struct sequence {
    const mb_model * model;
    int              index;                              /* which command sequence */
    int              store;                              /* 1: record, 0: compare */
    float            roots[N_SEQ_PLANS][64 * 3];         /* each plan's root translations */
    uint64_t         values[N_SEQ_PLANS];
    float            infer_roots[N_SEQ_PLANS][64 * 3];   /* the stateless run after each plan */
    uint64_t         infer_values[N_SEQ_PLANS];
    int              ok;                                 /* plans that matched */
    char             error[256];
};

static struct sequence g_seq_ref[N_SEQ_THREADS];
static struct sequence g_seq_run[N_SEQ_THREADS];

/* one value copied into (store) or compared with the reference; 0 on a difference */
static int keep_or_compare(struct sequence * q, int plan, const float * roots, uint64_t n, int stateless) {
    const struct sequence * ref    = &g_seq_ref[q->index];
    float *                 dst    = stateless ? q->infer_roots[plan] : q->roots[plan];
    uint64_t *              dst_n  = stateless ? &q->infer_values[plan] : &q->values[plan];
    const float *           want   = stateless ? ref->infer_roots[plan] : ref->roots[plan];
    const uint64_t          want_n = stateless ? ref->infer_values[plan] : ref->values[plan];
    if (n > 64 * 3) {
        return 0;
    }
    memcpy(dst, roots, n * sizeof(float));
    *dst_n = n;
    if (!q->store && (n != want_n || memcmp(roots, want, n * sizeof(float)) != 0)) {
        snprintf(q->error, sizeof q->error, "sequence %d plan %d: %s differs from the serial run", q->index, plan,
                 stateless ? "stateless inference" : "agent plan");
        return 0;
    }
    return 1;
}

static void * run_sequence(void * arg) {
    struct sequence * q       = (struct sequence *) arg;
    mb_style *        style   = NULL;
    mb_agent *        agent   = NULL;
    mb_command *      command = NULL;
    char *            error   = q->error;
    const uint64_t    cap     = sizeof q->error;
    q->ok                     = 0;
    if (mb_style_load(q->model, g_style, &style, error, cap) != MB_OK ||
        mb_agent_create(q->model, &agent, error, cap) != MB_OK || mb_agent_reset(agent, style, error, cap) != MB_OK ||
        mb_command_create(&command, error, cap) != MB_OK || mb_command_set_style(command, style, error, cap) != MB_OK) {
        goto done;
    }
    for (int i = 0; i < N_SEQ_PLANS; ++i) {
        /* a direction and seed of this sequence and plan; Gumbel sampling every other plan */
        const int   k = q->index * N_SEQ_PLANS + i;
        const float a = 0.37f * (float) k;
        float       x = (float) (k % 7) * 0.25f - 0.75f, z = 1.0f - (float) (k % 3) * 0.5f;
        if (x == 0.0f && z == 0.0f) {
            z = 1.0f;
        }
        mb_motion *   motion = NULL;
        const float * roots  = NULL;
        uint64_t      n      = 0;
        if (mb_command_set_movement_direction(command, x, 0.0f, z, error, cap) != MB_OK ||
            mb_command_set_facing_direction(command, (float) (a > 3.0f) - 0.5f, 0.0f, 1.0f, error, cap) != MB_OK ||
            mb_command_set_seed(command, (uint64_t) (1000 + k), error, cap) != MB_OK ||
            mb_command_set_sampling_argmax(command, (uint32_t) (i % 2), error, cap) != MB_OK ||
            mb_agent_plan(agent, command, &motion, error, cap) != MB_OK ||
            mb_motion_get_root_translations(motion, &roots, &n, error, cap) != MB_OK) {
            mb_motion_free(motion);
            goto done;
        }
        const int same = keep_or_compare(q, i, roots, n, 0);
        mb_motion_free(motion);
        if (!same || mb_agent_advance(agent, 16, error, cap) != MB_OK) {
            goto done;
        }
        /* a stateless inference between plans, from this thread */
        mb_inference_request * req = make_request(q->model, error, cap);
        motion                     = NULL;
        if (req == NULL || mb_inference_request_set_seed(req, (uint64_t) k, error, cap) != MB_OK ||
            mb_model_infer(q->model, req, &motion, error, cap) != MB_OK ||
            mb_motion_get_root_translations(motion, &roots, &n, error, cap) != MB_OK) {
            mb_inference_request_free(req);
            mb_motion_free(motion);
            goto done;
        }
        mb_inference_request_free(req);
        const int same_infer = keep_or_compare(q, i, roots, n, 1);
        mb_motion_free(motion);
        if (!same_infer) {
            goto done;
        }
        q->ok += 1;
    }
done:
    mb_command_free(command);
    mb_agent_free(agent);
    mb_style_free(style);
    return NULL;
}

/* every sequence serially (the reference), then all at once on the same model */
static int run_sequences(const mb_model * model) {
    for (int t = 0; t < N_SEQ_THREADS; ++t) {
        g_seq_ref[t].model = model;
        g_seq_ref[t].index = t;
        g_seq_ref[t].store = 1;
        run_sequence(&g_seq_ref[t]);
        if (g_seq_ref[t].ok != N_SEQ_PLANS) {
            fprintf(stderr, "serial sequence %d: %d of %d plans (%s)\n", t, g_seq_ref[t].ok, N_SEQ_PLANS,
                    g_seq_ref[t].error);
            return 0;
        }
    }
    pthread_t threads[N_SEQ_THREADS];
    for (int t = 0; t < N_SEQ_THREADS; ++t) {
        g_seq_run[t].model = model;
        g_seq_run[t].index = t;
        g_seq_run[t].store = 0;
        if (pthread_create(&threads[t], NULL, run_sequence, &g_seq_run[t]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 0;
        }
    }
    int ok = 1;
    for (int t = 0; t < N_SEQ_THREADS; ++t) {
        pthread_join(threads[t], NULL);
        if (g_seq_run[t].ok != N_SEQ_PLANS) {
            fprintf(stderr, "concurrent sequence %d: %d of %d plans matched (%s)\n", t, g_seq_run[t].ok, N_SEQ_PLANS,
                    g_seq_run[t].error);
            ok = 0;
        }
    }
    printf("%d threads x %d plans on one model: %s\n", N_SEQ_THREADS, N_SEQ_PLANS, ok ? "ok" : "FAILED");
    return ok;
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
        /* one model shared by every thread: concurrent, each call on a state of its own */
        mb_model * shared[N_THREADS];
        for (int t = 0; t < N_THREADS; ++t) {
            shared[t] = models[0];
        }
        if (!run_threads(shared, "shared model")) {
            rc = 1;
        }
        if (g_style != NULL && !run_sequences(models[0])) {
            rc = 1;
        }
    }
    for (int t = 0; t < N_THREADS; ++t) {
        mb_model_free(models[t]);
    }
    return rc;
}
