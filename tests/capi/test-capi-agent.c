/*
 * The C ABI of styles and agents, compiled as C11: mb_style_*, mb_agent_* and the target accessors of
 * agent motions. Without arguments only the weight-free part runs (NULL handles and pointers, bad
 * counts, error buffers); with a bundle and a directory of demo styles (tools/convert.py demo-styles)
 * also loading errors, plans, history (reset, set_context, advance), batches, the axis conventions of
 * commands, failures that leave agents unchanged, and lifetimes (motions outlive everything).
 *
 *     test-capi-agent                          weight-free part only
 *     test-capi-agent BUNDLE_DIR STYLES_DIR    everything
 */
#define _POSIX_C_SOURCE 200809L
#include <motionbricks/motionbricks.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi-check.h"

#define POISON(type) ((type) (void *) &g_err)

/* ==== weight-free ================================================================================ */

static void test_null_handles(void) {
    mb_style *   style = POISON(mb_style *);
    mb_agent *   agent = POISON(mb_agent *);
    mb_motion *  motion = POISON(mb_motion *);
    const char * name  = NULL;
    float        speed = 0.0f;

    CHECK_STATUS(mb_style_load(NULL, "/tmp/x.mbstyle", &style, E), MB_INVALID_ARGUMENT);
    CHECK(style == NULL);
    CHECK(strstr(g_err, "model") != NULL);
    CHECK_STATUS(mb_style_load(NULL, "/tmp/x.mbstyle", NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_get_name(NULL, &name, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_set_speed(NULL, 1.0f, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_get_speed(NULL, &speed, E), MB_INVALID_ARGUMENT);
    mb_style_free(NULL);

    CHECK_STATUS(mb_agent_create(NULL, &agent, E), MB_INVALID_ARGUMENT);
    CHECK(agent == NULL);
    CHECK_STATUS(mb_agent_create(NULL, NULL, E), MB_INVALID_ARGUMENT);
    mb_agent_free(NULL);
    CHECK_STATUS(mb_agent_reset(NULL, NULL, E), MB_INVALID_ARGUMENT);
    float roots[12] = {0};
    float rots[4 * N_JOINTS * 4];
    for (int i = 0; i < 4 * N_JOINTS; ++i) {
        rots[i * 4 + 0] = rots[i * 4 + 1] = rots[i * 4 + 2] = 0.0f;
        rots[i * 4 + 3] = 1.0f;
    }
    CHECK_STATUS(mb_agent_set_context(NULL, roots, rots, 4, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_advance(NULL, 1, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_sidestep_styles(NULL, NULL, NULL, E), MB_INVALID_ARGUMENT);
    {
        const float * buf = NULL;
        uint64_t      n   = 0;
        CHECK_STATUS(mb_motion_get_joint_positions(NULL, &buf, &n, E), MB_INVALID_ARGUMENT);
        CHECK_STATUS(mb_motion_get_mujoco_qpos(NULL, &buf, &n, E), MB_INVALID_ARGUMENT);
    }

    mb_command * cmd = NULL;
    CHECK_STATUS(mb_command_create(&cmd, E), MB_OK);
    CHECK_STATUS(mb_agent_plan(NULL, cmd, &motion, E), MB_INVALID_ARGUMENT);
    CHECK(motion == NULL);
    CHECK_STATUS(mb_agent_plan(NULL, cmd, NULL, E), MB_INVALID_ARGUMENT);

    /* batches: outputs are NULLed before anything else is looked at */
    mb_motion *        outs[3] = {POISON(mb_motion *), POISON(mb_motion *), POISON(mb_motion *)};
    mb_agent *         agents[3] = {NULL, NULL, NULL};
    const mb_command * cmds[3]   = {cmd, cmd, cmd};
    CHECK_STATUS(mb_agent_plan_batch(agents, cmds, 3, outs, E), MB_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL && outs[1] == NULL && outs[2] == NULL);
    CHECK(strstr(g_err, "agents[0]") != NULL);
    CHECK_STATUS(mb_agent_plan_batch(NULL, cmds, 3, outs, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_plan_batch(agents, NULL, 3, outs, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_plan_batch(agents, cmds, 3, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_plan_batch(agents, cmds, 0, outs, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_plan_batch(agents, cmds, 4097, outs, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "4097") != NULL);

    /* error buffers: NULL/0 discards, capacity 0 untouched, 2 bytes hold one character */
    char zero[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_agent_advance(NULL, 1, zero, 0) == MB_INVALID_ARGUMENT);
    CHECK(zero[0] == 'X');
    CHECK(mb_agent_advance(NULL, 1, NULL, 0) == MB_INVALID_ARGUMENT);
    CHECK(mb_agent_advance(NULL, 1, NULL, 64) == MB_INVALID_ARGUMENT);
    char two[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_agent_plan(NULL, cmd, &motion, two, 2) == MB_INVALID_ARGUMENT);
    CHECK(two[0] != '\0' && two[0] != 'X' && two[1] == '\0' && two[2] == 'X');
    char two_b[4] = {'X', 'X', 'X', 'X'};
    CHECK(mb_style_get_speed(NULL, &speed, two_b, 2) == MB_INVALID_ARGUMENT);
    CHECK(two_b[1] == '\0' && two_b[2] == 'X');
    mb_command_free(cmd);
}

/* ==== model-backed =============================================================================== */

/* the functions added for programs (not in the reference runtime): NULL handles */
static void test_null_extras(void) {
    mb_motion * m = POISON(mb_motion *);
    uint64_t    u = 7;
    uint32_t    due = 7;
    float       x = 0, y = 0, z = 0;
    const char * name = NULL;
    const int32_t * tokens = NULL;
    const float *   data   = NULL;
    const float     qpos[4 * 36] = {0};
    CHECK_STATUS(mb_agent_set_context_qpos(NULL, qpos, 4, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_get_cursor(NULL, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_get_history(NULL, &m, E), MB_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK_STATUS(mb_agent_get_history(NULL, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_get_facing_direction(NULL, &x, &y, &z, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_get_replan_due(NULL, NULL, &due, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_style_name(NULL, &name, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_token_count(NULL, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_tokens(NULL, &tokens, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_duration_logits(NULL, &data, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_global_features(NULL, &data, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_target_joint_positions(NULL, &data, &u, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_motion_get_stage_time_ms(NULL, MB_STAGE_TOTAL, &x, E), MB_INVALID_ARGUMENT);

    /* a direction is a direction: finite and |v| <= 1e6, whatever its length */
    mb_command * c = NULL;
    CHECK_STATUS(mb_command_create(&c, E), MB_OK);
    CHECK_STATUS(mb_command_set_movement_direction(c, 0.0f, 0.0f, 1e38f, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "1e6") != NULL);
    CHECK_STATUS(mb_command_set_movement_direction(c, 0.0f, 0.0f, -2e6f, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_facing_direction(c, 1e38f, 0.0f, 0.0f, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_command_set_movement_direction(c, 0.0f, 0.0f, 1e6f, E), MB_OK);
    CHECK_STATUS(mb_command_get_movement_direction(c, &x, &y, &z, E), MB_OK);
    CHECK(x == 0.0f && z == 1e6f);   /* stored as given: plans normalise */
    CHECK_STATUS(mb_agent_get_replan_due(NULL, c, &due, E), MB_INVALID_ARGUMENT);
    mb_command_free(c);
}

static char g_styles[512];

static mb_style * load_style(const mb_model * model, const char * name) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s.mbstyle", g_styles, name);
    mb_style * s = NULL;
    CHECK_STATUS(mb_style_load(model, path, &s, E), MB_OK);
    return s;
}

/* checks the shapes and values of an agent plan; returns its frame count */
static uint64_t check_plan(const mb_motion * m) {
    uint64_t      frames = 0, joints = 0, targets = 0, nr = 0, nq = 0, ntr = 0, ntq = 0;
    const float * roots = NULL;
    const float * rots  = NULL;
    const float * troots = NULL;
    const float * trots  = NULL;
    CHECK_STATUS(mb_motion_get_frame_count(m, &frames, E), MB_OK);
    CHECK_STATUS(mb_motion_get_joint_count(m, &joints, E), MB_OK);
    CHECK_STATUS(mb_motion_get_root_translations(m, &roots, &nr, E), MB_OK);
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(m, &rots, &nq, E), MB_OK);
    CHECK_STATUS(mb_motion_get_target_frame_count(m, &targets, E), MB_OK);
    CHECK_STATUS(mb_motion_get_target_root_translations(m, &troots, &ntr, E), MB_OK);
    CHECK_STATUS(mb_motion_get_target_local_rotations_xyzw(m, &trots, &ntq, E), MB_OK);
    CHECK(frames >= 24 && frames <= 64 && frames % 4 == 0);
    CHECK(joints == N_JOINTS);
    CHECK(nr == frames * 3 && nq == frames * N_JOINTS * 4);
    CHECK(targets == 4);
    CHECK(ntr == 4 * 3 && ntq == 4 * N_JOINTS * 4);
    {
        /* joint 0 of the joint positions is the root; qpos holds it in MuJoCo axes (x fwd = z, y left = x, z up = y) */
        const float * jp = NULL;
        const float * qp = NULL;
        uint64_t      nj = 0, nqp = 0;
        CHECK_STATUS(mb_motion_get_joint_positions(m, &jp, &nj, E), MB_OK);
        CHECK_STATUS(mb_motion_get_mujoco_qpos(m, &qp, &nqp, E), MB_OK);
        CHECK(nj == frames * N_JOINTS * 3 && nqp == frames * 36);
        if (jp != NULL && qp != NULL && roots != NULL && nj == frames * N_JOINTS * 3 && nqp == frames * 36) {
            int same = 1;
            for (uint64_t f = 0; f < frames; ++f) {
                for (int c = 0; c < 3; ++c) {
                    same = same && fabsf(jp[f * N_JOINTS * 3 + c] - roots[f * 3 + c]) <= 1e-5f;
                }
                same = same && fabsf(qp[f * 36 + 0] - roots[f * 3 + 2]) <= 1e-5f &&
                       fabsf(qp[f * 36 + 1] - roots[f * 3 + 0]) <= 1e-5f && fabsf(qp[f * 36 + 2] - roots[f * 3 + 1]) <= 1e-5f;
            }
            CHECK(same);
        }
    }
    CHECK(roots != NULL && rots != NULL && troots != NULL && trots != NULL);
    if (roots == NULL || rots == NULL || troots == NULL || trots == NULL) {
        return frames;
    }
    int finite = 1, unit = 1;
    for (uint64_t i = 0; i < nr; ++i) {
        finite = finite && isfinite(roots[i]);
    }
    for (uint64_t i = 0; i < ntr; ++i) {
        finite = finite && isfinite(troots[i]);
    }
    for (int pass = 0; pass < 2; ++pass) {
        const float *  q = pass == 0 ? rots : trots;
        const uint64_t n = pass == 0 ? nq : ntq;
        for (uint64_t i = 0; i + 3 < n; i += 4) {
            const float s = q[i] * q[i] + q[i + 1] * q[i + 1] + q[i + 2] * q[i + 2] + q[i + 3] * q[i + 3];
            finite        = finite && isfinite(s);
            unit          = unit && fabsf(s - 1.0f) < 1e-3f;
        }
    }
    CHECK(finite);
    CHECK(unit);
    /* consecutive frames move less than 0.2 m (no jumps inside a plan) */
    int smooth = 1;
    for (uint64_t f = 1; f < frames; ++f) {
        const float dx = roots[f * 3] - roots[f * 3 - 3], dz = roots[f * 3 + 2] - roots[f * 3 - 1];
        smooth         = smooth && dx * dx + dz * dz < 0.04f;
    }
    CHECK(smooth);
    return frames;
}

static int same_plan(const mb_motion * a, const mb_motion * b) {
    const float * pa = NULL;
    const float * pb = NULL;
    uint64_t      na = 0, nb = 0;
    if (a == NULL || b == NULL) {
        return 0;
    }
    if (mb_motion_get_root_translations(a, &pa, &na, NULL, 0) != MB_OK ||
        mb_motion_get_root_translations(b, &pb, &nb, NULL, 0) != MB_OK || na != nb ||
        memcmp(pa, pb, na * sizeof(float)) != 0) {
        return 0;
    }
    if (mb_motion_get_local_rotations_xyzw(a, &pa, &na, NULL, 0) != MB_OK ||
        mb_motion_get_local_rotations_xyzw(b, &pb, &nb, NULL, 0) != MB_OK || na != nb ||
        memcmp(pa, pb, na * sizeof(float)) != 0) {
        return 0;
    }
    if (mb_motion_get_target_root_translations(a, &pa, &na, NULL, 0) != MB_OK ||
        mb_motion_get_target_root_translations(b, &pb, &nb, NULL, 0) != MB_OK || na != nb ||
        memcmp(pa, pb, na * sizeof(float)) != 0) {
        return 0;
    }
    return 1;
}

static const float * roots_of(const mb_motion * m, uint64_t * frames) {
    const float * r = NULL;
    uint64_t      n = 0;
    if (mb_motion_get_root_translations(m, &r, &n, NULL, 0) != MB_OK) {
        return NULL;
    }
    *frames = n / 3;
    return r;
}

static mb_command * make_command(const mb_style * style, float mx, float mz, float fx, float fz, uint64_t seed) {
    mb_command * c = NULL;
    CHECK_STATUS(mb_command_create(&c, E), MB_OK);
    CHECK_STATUS(mb_command_set_style(c, style, E), MB_OK);
    CHECK_STATUS(mb_command_set_movement_direction(c, mx, 0.0f, mz, E), MB_OK);
    CHECK_STATUS(mb_command_set_facing_direction(c, fx, 0.0f, fz, E), MB_OK);
    CHECK_STATUS(mb_command_set_seed(c, seed, E), MB_OK);
    CHECK_STATUS(mb_command_set_sampling_argmax(c, 1, E), MB_OK);
    return c;
}

static mb_agent * make_agent(const mb_model * model, const mb_style * initial) {
    mb_agent * a = NULL;
    CHECK_STATUS(mb_agent_create(model, &a, E), MB_OK);
    if (a != NULL && initial != NULL) {
        CHECK_STATUS(mb_agent_reset(a, initial, E), MB_OK);
    }
    return a;
}

static mb_motion * plan(mb_agent * a, const mb_command * c) {
    mb_motion * m = NULL;
    CHECK_STATUS(mb_agent_plan(a, c, &m, E), MB_OK);
    return m;
}

static void test_styles(const mb_model * model) {
    mb_style * s = POISON(mb_style *);
    CHECK_STATUS(mb_style_load(model, "/nonexistent/walk.mbstyle", &s, E), MB_IO_ERROR);
    CHECK(s == NULL);
    CHECK(strstr(g_err, "nonexistent") != NULL);
    CHECK_STATUS(mb_style_load(model, "/tmp", &s, E), MB_IO_ERROR);
    CHECK_STATUS(mb_style_load(model, NULL, &s, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_load(model, "", &s, E), MB_INVALID_ARGUMENT);
    char path[768];
    snprintf(path, sizeof path, "%s/walk.mbstyle", g_styles);
    CHECK_STATUS(mb_style_load(model, path, NULL, E), MB_INVALID_ARGUMENT);

    /* a file that is not a style, and a truncated style */
    char bad[] = "/tmp/mb-capi-agent-XXXXXX";
    int  fd    = mkstemp(bad);
    if (fd >= 0) {
        const char junk[] = "GGUF not a style at all";
        CHECK(write(fd, junk, sizeof junk) == (ssize_t) sizeof junk);
        close(fd);
        s = POISON(mb_style *);
        CHECK_STATUS(mb_style_load(model, bad, &s, E), MB_INVALID_FORMAT);
        CHECK(s == NULL);
        FILE * in  = fopen(path, "rb");
        FILE * out = fopen(bad, "wb");
        if (in != NULL && out != NULL) {
            char buf[4096];
            size_t n = fread(buf, 1, sizeof buf, in);
            fwrite(buf, 1, n, out);
        }
        if (in != NULL) fclose(in);
        if (out != NULL) fclose(out);
        CHECK_STATUS(mb_style_load(model, bad, &s, E), MB_INVALID_FORMAT);
        CHECK(s == NULL);
        unlink(bad);
    }

    s = load_style(model, "walk");
    if (s == NULL) {
        return;
    }
    const char * name  = NULL;
    float        speed = -5.0f;
    CHECK_STATUS(mb_style_get_name(s, &name, E), MB_OK);
    CHECK(name != NULL && strcmp(name, "walk") == 0);
    CHECK_STATUS(mb_style_get_name(s, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_get_speed(s, &speed, E), MB_OK);
    CHECK(speed > 0.0f && isfinite(speed));
    CHECK_STATUS(mb_style_get_speed(s, NULL, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_set_speed(s, 0.5f, E), MB_OK);
    CHECK_STATUS(mb_style_get_speed(s, &speed, E), MB_OK);
    CHECK(speed == 0.5f);
    CHECK_STATUS(mb_style_set_speed(s, 0.0f, E), MB_OK);
    /* rejected values leave the speed unchanged */
    CHECK_STATUS(mb_style_set_speed(s, NAN, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_set_speed(s, INFINITY, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_set_speed(s, -0.5f, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_style_get_speed(s, &speed, E), MB_OK);
    CHECK(speed == 0.0f);
    CHECK(g_err[0] == '\0'); /* success cleared the buffer */
    mb_style_free(s);
}

static void test_plan(const mb_model * model) {
    mb_style *   walk = load_style(model, "walk");
    mb_style *   idle = load_style(model, "idle");
    mb_agent *   a    = make_agent(model, walk);
    mb_agent *   b    = make_agent(model, walk);
    mb_agent *   cold = make_agent(model, NULL);
    mb_command * fwd  = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 3);
    if (walk == NULL || idle == NULL || a == NULL || b == NULL || cold == NULL) {
        return;
    }

    /* a command needs a style; the failure leaves the output NULL */
    mb_command * none   = NULL;
    mb_motion *  motion = POISON(mb_motion *);
    CHECK_STATUS(mb_command_create(&none, E), MB_OK);
    CHECK_STATUS(mb_agent_plan(a, none, &motion, E), MB_INVALID_ARGUMENT);
    CHECK(motion == NULL);
    CHECK(strstr(g_err, "style") != NULL);
    CHECK_STATUS(mb_agent_plan(a, NULL, &motion, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_plan(a, fwd, NULL, E), MB_INVALID_ARGUMENT);

    /* same history, same command (argmax): identical plans; a failed plan changed nothing */
    mb_motion * p1 = plan(a, fwd);
    mb_motion * q1 = plan(b, fwd);
    CHECK(p1 != NULL && check_plan(p1) > 0);
    CHECK(same_plan(p1, q1));
    /* a new agent without history starts from the command's style: same as reset to it */
    mb_motion * c1 = plan(cold, fwd);
    CHECK(same_plan(p1, c1));

    /* advance 16 and plan again: the second plan starts where the first was (the seam) */
    uint64_t      f1 = 0, f2 = 0;
    const float * r1 = roots_of(p1, &f1);
    CHECK_STATUS(mb_agent_advance(a, 16, E), MB_OK);
    mb_motion *   p2 = plan(a, fwd);
    const float * r2 = p2 != NULL ? roots_of(p2, &f2) : NULL;
    CHECK(p2 != NULL && check_plan(p2) > 0);
    if (r1 != NULL && r2 != NULL) {
        CHECK(fabsf(r2[0] - r1[16 * 3 + 0]) < 1e-3f);
        CHECK(fabsf(r2[2] - r1[16 * 3 + 2]) < 1e-3f);
    }
    /* advance clamps to the last frame; 0 is allowed; a cold agent ignores it */
    CHECK_STATUS(mb_agent_advance(b, 0, E), MB_OK);
    CHECK_STATUS(mb_agent_advance(b, UINT32_MAX, E), MB_OK);
    mb_motion * q2 = plan(b, fwd);
    uint64_t    fq = 0;
    const float * rq = q2 != NULL ? roots_of(q2, &fq) : NULL;
    if (r1 != NULL && rq != NULL) {
        CHECK(fabsf(rq[0] - r1[(f1 - 1) * 3 + 0]) < 1e-3f);
        CHECK(fabsf(rq[2] - r1[(f1 - 1) * 3 + 2]) < 1e-3f);
    }
    mb_agent * cold2 = make_agent(model, NULL);
    CHECK_STATUS(mb_agent_advance(cold2, 10, E), MB_OK);

    /* reset(NULL) forgets the history: the next plan equals a new agent's */
    CHECK_STATUS(mb_agent_reset(b, NULL, E), MB_OK);
    mb_motion * q3 = plan(b, fwd);
    CHECK(same_plan(q3, c1));

    /* the style's speed drives commands with a negative target speed; a non-negative one overrides it */
    {
        mb_agent *  s0 = make_agent(model, walk);
        mb_agent *  s2 = make_agent(model, walk);
        mb_agent *  o0 = make_agent(model, walk);
        mb_agent *  o2 = make_agent(model, walk);
        mb_command * own = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 3);
        CHECK_STATUS(mb_command_set_target_speed(own, 0.7f, E), MB_OK);
        CHECK_STATUS(mb_style_set_speed(walk, 0.0f, E), MB_OK);
        mb_motion * ps0 = plan(s0, fwd);
        mb_motion * po0 = plan(o0, own);
        CHECK_STATUS(mb_style_set_speed(walk, 2.0f, E), MB_OK);
        mb_motion * ps2 = plan(s2, fwd);
        mb_motion * po2 = plan(o2, own);
        CHECK(ps0 != NULL && ps2 != NULL && !same_plan(ps0, ps2));
        CHECK(same_plan(po0, po2));
        CHECK_STATUS(mb_style_set_speed(walk, 1.0f, E), MB_OK);
        mb_motion * done[] = {ps0, ps2, po0, po2};
        for (size_t i = 0; i < 4; ++i) {
            mb_motion_free(done[i]);
        }
        mb_agent_free(s0);
        mb_agent_free(s2);
        mb_agent_free(o0);
        mb_agent_free(o2);
        mb_command_free(own);
    }
    /* idle and Gumbel sampling plan too; the same seed reproduces the draw */
    mb_command * rest = make_command(idle, 0.0f, 0.0f, 0.0f, 1.0f, 11);
    CHECK_STATUS(mb_command_set_sampling_argmax(rest, 0, E), MB_OK);
    mb_agent *  i1 = make_agent(model, idle);
    mb_agent *  i2 = make_agent(model, idle);
    mb_motion * m1 = plan(i1, rest);
    mb_motion * m2 = plan(i2, rest);
    CHECK(m1 != NULL && check_plan(m1) > 0);
    CHECK(same_plan(m1, m2));

    mb_motion * all[] = {p1, q1, c1, p2, q2, q3, m1, m2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        mb_motion_free(all[i]);
    }
    mb_agent * agents[] = {a, b, cold, cold2, i1, i2};
    for (size_t i = 0; i < sizeof agents / sizeof agents[0]; ++i) {
        mb_agent_free(agents[i]);
    }
    mb_command * cmds[] = {none, fwd, rest};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; ++i) {
        mb_command_free(cmds[i]);
    }
    mb_style_free(walk);
    mb_style_free(idle);
}

/* the conventions of commands agree with those of poses: turning the history by 90 degrees about +Y
 * and the command with it turns the whole plan (upstream canonicalises by the context heading).
 * Checked for a movement/facing command and for a world target with heading. */
static void rotate_y(float * v) {   /* (x, y, z) -> (z, y, -x): +90 degrees about +Y */
    const float x = v[0];
    v[0]          = v[2];
    v[2]          = -x;
}

static void test_equivariance(const mb_model * model) {
    mb_style * walk = load_style(model, "walk");
    mb_agent * src  = make_agent(model, walk);
    mb_command * fwd = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 9);
    mb_motion * hist = src != NULL ? plan(src, fwd) : NULL;
    if (hist == NULL) {
        return;
    }
    uint64_t      frames = 0, nq = 0;
    const float * roots  = roots_of(hist, &frames);
    const float * rots   = NULL;
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(hist, &rots, &nq, E), MB_OK);
    float * rr = malloc(frames * 3 * sizeof(float));
    float * rq = malloc(nq * sizeof(float));
    if (roots == NULL || rots == NULL || rr == NULL || rq == NULL) {
        free(rr);
        free(rq);
        return;
    }
    memcpy(rr, roots, frames * 3 * sizeof(float));
    memcpy(rq, rots, nq * sizeof(float));
    const float h = sqrtf(0.5f);   /* (0, sin 45, 0, cos 45) */
    for (uint64_t f = 0; f < frames; ++f) {
        rotate_y(&rr[f * 3]);
        float *     q  = &rq[f * N_JOINTS * 4];
        const float x = q[0], y = q[1], z = q[2], w = q[3];
        q[0]          = h * x + h * z;   /* (0, h, 0, h) * (x, y, z, w) */
        q[1]          = h * y + h * w;
        q[2]          = h * z - h * x;
        q[3]          = h * w - h * y;
    }
    for (int variant = 0; variant < 2; ++variant) {
        mb_agent *   a  = make_agent(model, NULL);
        mb_agent *   b  = make_agent(model, NULL);
        mb_command * ca = make_command(walk, 0.3f, 0.0f, 1.0f, 0.2f, 4);
        mb_command * cb = make_command(walk, 0.0f, 0.0f, 0.2f, -1.0f, 4);   /* ca's directions turned */
        CHECK_STATUS(mb_command_set_movement_direction(cb, 0.0f, 0.0f, -0.3f, E), MB_OK);
        if (variant == 1) {
            CHECK_STATUS(mb_command_set_world_target(ca, -2.0f, 0.0f, 3.0f, 0.5f, 1, E), MB_OK);
            CHECK_STATUS(mb_command_set_world_target(cb, 3.0f, 0.0f, 2.0f, 0.5f + 1.5707963f, 1, E), MB_OK);
        }
        CHECK_STATUS(mb_agent_set_context(a, roots, rots, frames, N_JOINTS, E), MB_OK);
        CHECK_STATUS(mb_agent_set_context(b, rr, rq, frames, N_JOINTS, E), MB_OK);
        mb_motion * pa = plan(a, ca);
        mb_motion * pb = plan(b, cb);
        uint64_t    fa = 0, fb = 0;
        const float * ra = pa != NULL ? roots_of(pa, &fa) : NULL;
        const float * rb = pb != NULL ? roots_of(pb, &fb) : NULL;
        CHECK(ra != NULL && rb != NULL && fa == fb);
        if (ra != NULL && rb != NULL && fa == fb) {
            float worst = 0.0f;
            for (uint64_t f = 0; f < fa; ++f) {
                float v[3] = {ra[f * 3], ra[f * 3 + 1], ra[f * 3 + 2]};
                rotate_y(v);
                for (int c = 0; c < 3; ++c) {
                    worst = fmaxf(worst, fabsf(v[c] - rb[f * 3 + c]));
                }
            }
            const float * ta = NULL;
            const float * tb = NULL;
            uint64_t      na = 0, nb = 0;
            CHECK_STATUS(mb_motion_get_target_root_translations(pa, &ta, &na, E), MB_OK);
            CHECK_STATUS(mb_motion_get_target_root_translations(pb, &tb, &nb, E), MB_OK);
            for (uint64_t i = 0; ta != NULL && tb != NULL && i + 2 < na && na == nb; i += 3) {
                float v[3] = {ta[i], ta[i + 1], ta[i + 2]};
                rotate_y(v);
                for (int c = 0; c < 3; ++c) {
                    worst = fmaxf(worst, fabsf(v[c] - tb[i + c]));
                }
            }
            if (worst >= 2e-3f) {
                fprintf(stderr, "equivariance variant %d: worst difference %g m\n", variant, (double) worst);
            }
            CHECK(worst < 2e-3f);
        }
        mb_motion_free(pa);
        mb_motion_free(pb);
        mb_command_free(ca);
        mb_command_free(cb);
        mb_agent_free(a);
        mb_agent_free(b);
    }
    free(rr);
    free(rq);
    mb_motion_free(hist);
    mb_command_free(fwd);
    mb_agent_free(src);
    mb_style_free(walk);
}

static void test_set_context(const mb_model * model) {
    mb_style *   walk = load_style(model, "walk");
    mb_agent *   a    = make_agent(model, walk);
    mb_agent *   twin = make_agent(model, walk);
    mb_command * fwd  = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 5);
    if (walk == NULL || a == NULL || twin == NULL) {
        return;
    }
    mb_motion *   src = plan(a, fwd);
    uint64_t      frames = 0, nq = 0;
    const float * roots = src != NULL ? roots_of(src, &frames) : NULL;
    const float * rots  = NULL;
    if (src == NULL || roots == NULL) {
        return;
    }
    CHECK_STATUS(mb_motion_get_local_rotations_xyzw(src, &rots, &nq, E), MB_OK);

    /* bad arguments are rejected and leave the agent unchanged (checked by the twin below) */
    mb_agent * b = make_agent(model, walk);
    CHECK_STATUS(mb_agent_set_context(b, NULL, rots, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, NULL, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, rots, 3, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, rots, 0, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, rots, frames, 33, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, rots, frames, 35, E), MB_INVALID_ARGUMENT);
    CHECK_STATUS(mb_agent_set_context(b, roots, rots, UINT64_MAX, N_JOINTS, E), MB_INVALID_ARGUMENT);
    float * r = malloc(frames * 3 * sizeof(float));
    float * q = malloc(frames * N_JOINTS * 4 * sizeof(float));
    if (r == NULL || q == NULL) {
        free(r);
        free(q);
        return;
    }
    memcpy(r, roots, frames * 3 * sizeof(float));
    memcpy(q, rots, frames * N_JOINTS * 4 * sizeof(float));
    r[1] = NAN;
    CHECK_STATUS(mb_agent_set_context(b, r, q, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    r[1] = INFINITY;
    CHECK_STATUS(mb_agent_set_context(b, r, q, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    r[1] = roots[1];
    q[5 * 4 + 2] = NAN;
    CHECK_STATUS(mb_agent_set_context(b, r, q, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    q[5 * 4 + 2] = rots[5 * 4 + 2];
    for (int c = 0; c < 4; ++c) {
        q[(2 * N_JOINTS + 7) * 4 + c] *= 1.5f;   /* norm 1.5 */
    }
    CHECK_STATUS(mb_agent_set_context(b, r, q, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    CHECK(strstr(g_err, "norm") != NULL);
    for (int c = 0; c < 4; ++c) {
        q[(2 * N_JOINTS + 7) * 4 + c] = 0.0f;    /* zero quaternion */
    }
    CHECK_STATUS(mb_agent_set_context(b, r, q, frames, N_JOINTS, E), MB_INVALID_ARGUMENT);
    mb_motion * pb = plan(b, fwd);
    mb_motion * pt = plan(twin, fwd);
    CHECK(same_plan(pb, pt));

    /* the last 4 frames become the history: the plan starts at frame F - 4 */
    mb_agent * c = make_agent(model, NULL);
    CHECK_STATUS(mb_agent_set_context(c, roots, rots, frames, N_JOINTS, E), MB_OK);
    mb_motion * pc = plan(c, fwd);
    uint64_t    fc = 0;
    const float * rc = pc != NULL ? roots_of(pc, &fc) : NULL;
    CHECK(pc != NULL && check_plan(pc) > 0);
    if (rc != NULL) {
        CHECK(fabsf(rc[0] - roots[(frames - 4) * 3 + 0]) < 1e-3f);
        CHECK(fabsf(rc[2] - roots[(frames - 4) * 3 + 2]) < 1e-3f);
    }
    /* exactly 4 frames work as well */
    CHECK_STATUS(mb_agent_set_context(c, roots, rots, 4, N_JOINTS, E), MB_OK);

    free(r);
    free(q);
    mb_motion_free(src);
    mb_motion_free(pb);
    mb_motion_free(pt);
    mb_motion_free(pc);
    mb_agent_free(a);
    mb_agent_free(b);
    mb_agent_free(c);
    mb_agent_free(twin);
    mb_command_free(fwd);
    mb_style_free(walk);
}

static void test_batch(const mb_model * model, const char * bundle) {
    enum { K = 3 };
    mb_style *   walk = load_style(model, "walk");
    mb_style *   idle = load_style(model, "idle");
    mb_agent *   batch[K];
    mb_agent *   serial[K];
    mb_command * cmds[K];
    for (int i = 0; i < K; ++i) {
        batch[i]  = make_agent(model, walk);
        serial[i] = make_agent(model, walk);
        cmds[i]   = make_command(i == 2 ? idle : walk, (float) i, 0.0f, 1.0f, 1.0f, (uint64_t) (10 + i));
    }
    const mb_command * ccmds[K] = {cmds[0], cmds[1], cmds[2]};

    /* a repeated agent, a command without style, agents of another model: all outputs NULL, nothing
     * planned (the batch below still equals the serial plans of untouched agents) */
    mb_motion * outs[K] = {POISON(mb_motion *), POISON(mb_motion *), POISON(mb_motion *)};
    mb_agent *  dup[K]  = {batch[0], batch[1], batch[0]};
    CHECK_STATUS(mb_agent_plan_batch(dup, ccmds, K, outs, E), MB_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL && outs[1] == NULL && outs[2] == NULL);
    CHECK(strstr(g_err, "agents[2]") != NULL);
    mb_command *       bare = NULL;
    CHECK_STATUS(mb_command_create(&bare, E), MB_OK);
    const mb_command * with_bare[K] = {cmds[0], cmds[1], bare};
    outs[0] = POISON(mb_motion *);
    CHECK_STATUS(mb_agent_plan_batch(batch, with_bare, K, outs, E), MB_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL && outs[1] == NULL && outs[2] == NULL);
    mb_model * other = NULL;
    CHECK_STATUS(mb_model_load(bundle, NULL, &other, E), MB_OK);
    mb_agent * foreign = other != NULL ? make_agent(other, walk) : NULL;
    if (foreign != NULL) {
        mb_agent * mixed[K] = {batch[0], batch[1], foreign};
        CHECK_STATUS(mb_agent_plan_batch(mixed, ccmds, K, outs, E), MB_INVALID_ARGUMENT);
        CHECK(outs[0] == NULL && outs[1] == NULL && outs[2] == NULL);
        CHECK(strstr(g_err, "model") != NULL);
    }

    /* the batch equals the same plans made one by one */
    CHECK_STATUS(mb_agent_plan_batch(batch, ccmds, K, outs, E), MB_OK);
    for (int i = 0; i < K; ++i) {
        mb_motion * s = plan(serial[i], cmds[i]);
        CHECK(outs[i] != NULL && check_plan(outs[i]) > 0);
        CHECK(same_plan(outs[i], s));
        mb_motion_free(s);
        mb_motion_free(outs[i]);
    }

    /* 64 lanes work, 65 do not */
    enum { MAX = 64 };
    mb_agent *         many[MAX];
    const mb_command * mcmds[MAX];
    mb_motion *        mouts[MAX];
    for (int i = 0; i < MAX; ++i) {
        many[i]  = make_agent(model, walk);
        mcmds[i] = cmds[i % K];
    }
    CHECK_STATUS(mb_agent_plan_batch(many, mcmds, MAX, mouts, E), MB_OK);
    for (int i = 0; i < MAX; ++i) {
        CHECK(mouts[i] != NULL);
        mb_motion_free(mouts[i]);
        mb_agent_free(many[i]);
    }

    for (int i = 0; i < K; ++i) {
        mb_agent_free(batch[i]);
        mb_agent_free(serial[i]);
        mb_command_free(cmds[i]);
    }
    mb_command_free(bare);
    mb_agent_free(foreign);
    mb_model_free(other);
    mb_style_free(walk);
    mb_style_free(idle);
}

static void test_lifetimes(const char * bundle) {
    /* a motion outlives its command, style, agent and model */
    mb_model * model = NULL;
    CHECK_STATUS(mb_model_load(bundle, NULL, &model, E), MB_OK);
    if (model == NULL) {
        return;
    }
    mb_style *   walk = load_style(model, "walk");
    mb_agent *   a    = make_agent(model, NULL);
    mb_command * fwd  = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 1);
    /* the agent copies the style's clip at reset: the style may go before the agent */
    mb_style * idle = load_style(model, "idle");
    CHECK_STATUS(mb_agent_reset(a, idle, E), MB_OK);
    mb_style_free(idle);
    mb_motion * m = plan(a, fwd);
    mb_command_free(fwd);
    mb_style_free(walk);
    mb_agent_free(a);
    mb_model_free(model);
    if (m != NULL) {
        CHECK(check_plan(m) > 0);
    }
    mb_motion_free(m);
}

/* the functions added for programs: history, cursor, facing, the replan rule, qpos contexts, the
 * plan's style, tokens, targets and stage times, and movement lengths that do not matter */
static void test_program_extras(const mb_model * model) {
    mb_style * walk = load_style(model, "walk");
    mb_style * idle = load_style(model, "idle");
    mb_style * left = load_style(model, "walk_left");
    mb_style * right = load_style(model, "walk_right");
    if (walk == NULL || idle == NULL || left == NULL || right == NULL) {
        return;
    }
    mb_agent * a = make_agent(model, idle);
    uint64_t   u = 99, frames = 0, n = 0;

    /* the history: the idle clip padded to 64 frames, no targets, no tokens, no style */
    mb_motion * h = NULL;
    CHECK_STATUS(mb_agent_get_history(a, &h, E), MB_OK);
    CHECK_STATUS(mb_motion_get_frame_count(h, &frames, E), MB_OK);
    CHECK(frames >= 64);
    const float * hq = NULL;
    CHECK_STATUS(mb_motion_get_mujoco_qpos(h, &hq, &n, E), MB_OK);
    CHECK(n == frames * 36);
    CHECK_STATUS(mb_motion_get_target_frame_count(h, &u, E), MB_OK);
    CHECK(u == 0);
    CHECK_STATUS(mb_motion_get_token_count(h, &u, E), MB_OK);
    CHECK(u == 0);
    const char * name = NULL;
    CHECK_STATUS(mb_motion_get_style_name(h, &name, E), MB_OK);
    CHECK(name != NULL && name[0] == '\0');
    CHECK_STATUS(mb_agent_get_cursor(a, &u, E), MB_OK);
    CHECK(u == 0);

    /* facing: the ground plane, unit to 1e-5 */
    float fx = 0, fy = 1, fz = 0;
    CHECK_STATUS(mb_agent_get_facing_direction(a, &fx, &fy, &fz, E), MB_OK);
    CHECK(fy == 0.0f && fabs(sqrt(fx * fx + fz * fz) - 1.0) < 1e-4);

    /* upstream's replan rule: not before frame 16; idle after idle never */
    mb_command * cw = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 5);
    mb_command * ci = make_command(idle, 0.0f, 0.0f, 0.0f, 1.0f, 5);
    uint32_t     due = 7;
    CHECK_STATUS(mb_agent_get_replan_due(a, cw, &due, E), MB_OK);
    CHECK(due == 0);
    CHECK_STATUS(mb_agent_advance(a, 16, E), MB_OK);
    CHECK_STATUS(mb_agent_get_replan_due(a, cw, &due, E), MB_OK);
    CHECK(due == 1);
    mb_motion * pi = plan(a, ci);
    CHECK_STATUS(mb_agent_advance(a, 100, E), MB_OK);
    CHECK_STATUS(mb_agent_get_replan_due(a, ci, &due, E), MB_OK);
    CHECK(due == 0);   /* idle after idle: the history plays out */
    CHECK_STATUS(mb_agent_get_replan_due(a, cw, &due, E), MB_OK);
    CHECK(due == 1);

    /* a plan: its style, tokens, placed target joints (joint 0 = target roots), stage times */
    CHECK_STATUS(mb_agent_set_sidestep_styles(a, left, right, E), MB_OK);
    mb_command * cs = make_command(walk, 1.0f, 0.0f, 0.0f, 1.0f, 5);   /* walking left, facing forward */
    mb_motion *  p  = plan(a, cs);
    CHECK_STATUS(mb_motion_get_style_name(p, &name, E), MB_OK);
    CHECK(name != NULL && strcmp(name, "walk_left") == 0);
    CHECK_STATUS(mb_motion_get_frame_count(p, &frames, E), MB_OK);
    CHECK_STATUS(mb_motion_get_token_count(p, &u, E), MB_OK);
    CHECK(u * 4 == frames);
    const int32_t * tokens = NULL;
    CHECK_STATUS(mb_motion_get_tokens(p, &tokens, &n, E), MB_OK);
    CHECK(n == u * 8 && tokens != NULL);
    for (uint64_t i = 0; tokens != NULL && i < n; ++i) {
        CHECK(tokens[i] >= 0 && tokens[i] < 10);
    }
    const float * tj = NULL, * tr = NULL, * data = NULL;
    uint64_t      ntj = 0, ntr = 0;
    CHECK_STATUS(mb_motion_get_target_joint_positions(p, &tj, &ntj, E), MB_OK);
    CHECK_STATUS(mb_motion_get_target_root_translations(p, &tr, &ntr, E), MB_OK);
    CHECK(ntj == 4 * N_JOINTS * 3 && ntr == 4 * 3);
    for (int f = 0; tj != NULL && tr != NULL && f < 4; ++f) {
        CHECK(memcmp(&tj[f * N_JOINTS * 3], &tr[f * 3], 3 * sizeof(float)) == 0);
    }
    CHECK_STATUS(mb_motion_get_global_features(p, &data, &n, E), MB_OK);
    CHECK(data == NULL && n == 0);   /* agent plans: canonical features are not handed out */
    float ms = -1.0f;
    CHECK_STATUS(mb_motion_get_stage_time_ms(p, MB_STAGE_TOTAL, &ms, E), MB_OK);
    CHECK(ms >= 0.0f);
    CHECK_STATUS(mb_motion_get_stage_time_ms(p, 6, &ms, E), MB_INVALID_ARGUMENT);

    /* the history is the plan now */
    mb_motion * h2 = NULL;
    CHECK_STATUS(mb_agent_get_history(a, &h2, E), MB_OK);
    const float * pq = NULL, * h2q = NULL;
    uint64_t      npq = 0, nh2 = 0;
    CHECK_STATUS(mb_motion_get_mujoco_qpos(p, &pq, &npq, E), MB_OK);
    CHECK_STATUS(mb_motion_get_mujoco_qpos(h2, &h2q, &nh2, E), MB_OK);
    CHECK(npq == nh2 && pq != NULL && h2q != NULL && memcmp(pq, h2q, npq * sizeof(float)) == 0);

    /* a qpos context: the last 4 frames; bad ones leave the agent unchanged */
    CHECK_STATUS(mb_agent_set_context_qpos(a, pq, 3, E), MB_INVALID_ARGUMENT);
    float * bad = (float *) malloc(npq * sizeof(float));
    if (bad != NULL) {
        memcpy(bad, pq, npq * sizeof(float));
        bad[40] = NAN;
        CHECK_STATUS(mb_agent_set_context_qpos(a, bad, npq / 36, E), MB_INVALID_ARGUMENT);
        memcpy(bad, pq, npq * sizeof(float));
        bad[3] = 2.0f;   /* root quaternion of norm ~2 */
        CHECK_STATUS(mb_agent_set_context_qpos(a, bad, npq / 36, E), MB_INVALID_ARGUMENT);
        free(bad);
    }
    CHECK_STATUS(mb_agent_advance(a, 3, E), MB_OK);
    CHECK_STATUS(mb_agent_get_cursor(a, &u, E), MB_OK);
    CHECK(u == 3);   /* still the plan's history */
    CHECK_STATUS(mb_agent_set_context_qpos(a, pq, npq / 36, E), MB_OK);
    mb_motion * h3 = NULL;
    CHECK_STATUS(mb_agent_get_history(a, &h3, E), MB_OK);
    const float * h3q = NULL;
    uint64_t      nh3 = 0;
    CHECK_STATUS(mb_motion_get_mujoco_qpos(h3, &h3q, &nh3, E), MB_OK);
    CHECK(nh3 == 4 * 36 && h3q != NULL && memcmp(h3q, &pq[npq - 4 * 36], nh3 * sizeof(float)) == 0);

    /* a failure names its cause: a style whose speed puts the targets out of range is the style's */
    CHECK_STATUS(mb_style_set_speed(walk, 3.0e38f, E), MB_OK);
    mb_motion * huge = POISON(mb_motion *);
    CHECK_STATUS(mb_agent_plan(a, cw, &huge, E), MB_INVALID_ARGUMENT);
    CHECK(huge == NULL);
    CHECK(strstr(g_err, "style 'walk'") != NULL);
    CHECK_STATUS(mb_style_set_speed(walk, 1.0f, E), MB_OK);

    /* only the direction of a movement counts */
    mb_agent *   a1 = make_agent(model, walk);
    mb_agent *   a10 = make_agent(model, walk);
    mb_command * c1 = make_command(walk, 0.0f, 1.0f, 0.0f, 1.0f, 9);
    mb_command * c10 = make_command(walk, 0.0f, 10.0f, 0.0f, 1.0f, 9);
    mb_motion *  m1 = plan(a1, c1);
    mb_motion *  m10 = plan(a10, c10);
    CHECK(m1 != NULL && m10 != NULL && same_plan(m1, m10));

    mb_motion_free(m1);
    mb_motion_free(m10);
    mb_command_free(c1);
    mb_command_free(c10);
    mb_agent_free(a1);
    mb_agent_free(a10);
    mb_motion_free(h3);
    mb_motion_free(h2);
    mb_motion_free(p);
    mb_motion_free(pi);
    mb_motion_free(h);
    mb_command_free(cs);
    mb_command_free(cw);
    mb_command_free(ci);
    mb_agent_free(a);
    mb_style_free(walk);
    mb_style_free(idle);
    mb_style_free(left);
    mb_style_free(right);
}

int main(int argc, char ** argv) {
    test_null_handles();
    test_null_extras();

    const char * bundle = argc > 2 ? argv[1] : NULL;
    struct stat  st;
    if (bundle == NULL || stat(bundle, &st) != 0 || stat(argv[2], &st) != 0) {
        printf("skipped: model-backed tests (need BUNDLE_DIR STYLES_DIR)\n");
    } else {
        snprintf(g_styles, sizeof g_styles, "%s", argv[2]);
        mb_model * model = NULL;
        CHECK_STATUS(mb_model_load(bundle, NULL, &model, E), MB_OK);
        if (model != NULL) {
            test_styles(model);
            test_plan(model);
            test_set_context(model);
            test_equivariance(model);
            test_batch(model, bundle);
            test_program_extras(model);
            mb_model_free(model);
        }
        test_lifetimes(bundle);
    }
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
