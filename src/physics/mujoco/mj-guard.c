#include "physics/mujoco/mj-guard.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local jmp_buf * g_jump;
static _Thread_local char      g_error[512];
static _Thread_local char      g_warning[512];

static void on_error(const char * msg) {
    snprintf(g_error, sizeof g_error, "%s", msg);
    if (g_jump) longjmp(*g_jump, 1);
    // a MuJoCo call outside these wrappers: a bug of ours, not an input
    fprintf(stderr, "motionbricks: unguarded MuJoCo error: %s\n", msg);
    abort();
}

static void on_warning(const char * msg) {
    snprintf(g_warning, sizeof g_warning, "%s", msg);
}

void mbph_install_handlers(void) {
    mju_user_error   = on_error;
    mju_user_warning = on_warning;
}

const char * mbph_last_warning(void) {
    return g_warning;
}

static void copy_error(char * msg, int cap) {
    if (msg && cap > 0) snprintf(msg, (size_t)cap, "%s", g_error);
}

#define GUARDED(call, fail_value)          \
    jmp_buf jump;                          \
    jmp_buf * volatile prev = g_jump;      \
    if (setjmp(jump)) {                    \
        g_jump = prev;                     \
        copy_error(msg, cap);              \
        return fail_value;                 \
    }                                      \
    g_jump = &jump;

int mbph_step(const mjModel * m, mjData * d, char * msg, int cap) {
    GUARDED(mj_step, 1)
    mj_step(m, d);
    g_jump = prev;
    return 0;
}

int mbph_forward(const mjModel * m, mjData * d, char * msg, int cap) {
    GUARDED(mj_forward, 1)
    mj_forward(m, d);
    g_jump = prev;
    return 0;
}

int mbph_kinematics(const mjModel * m, mjData * d, char * msg, int cap) {
    GUARDED(mj_kinematics, 1)
    mj_kinematics(m, d);
    g_jump = prev;
    return 0;
}

mjData * mbph_make_data(const mjModel * m, char * msg, int cap) {
    GUARDED(mj_makeData, NULL)
    mjData * d = mj_makeData(m);
    g_jump = prev;
    return d;
}

mjModel * mbph_load_xml(const char * name, const mjVFS * vfs, char * msg, int cap) {
    GUARDED(mj_loadXML, NULL)
    mjModel * m = mj_loadXML(name, vfs, msg, cap);
    g_jump = prev;
    return m;
}
