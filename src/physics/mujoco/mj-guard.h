// MuJoCo calls that return instead of exiting: MuJoCo reports fatal errors through mju_user_error,
// whose default handler exits the process; these wrappers install a handler that jumps back to the
// call (C, so no C++ frame is skipped) and warnings are recorded instead of printed
#pragma once

#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

// installs the error and warning handlers (idempotent; process-wide, MuJoCo has no other hook)
void mbph_install_handlers(void);

// each returns 0, or 1 after a MuJoCo error whose message is copied into msg[0 .. cap)
int mbph_step(const mjModel * m, mjData * d, char * msg, int cap);
int mbph_forward(const mjModel * m, mjData * d, char * msg, int cap);
int mbph_kinematics(const mjModel * m, mjData * d, char * msg, int cap);
mjData * mbph_make_data(const mjModel * m, char * msg, int cap);
mjModel * mbph_load_xml(const char * name, const mjVFS * vfs, char * msg, int cap);

// the last warning text MuJoCo reported on this thread ("" when none)
const char * mbph_last_warning(void);

#ifdef __cplusplus
}
#endif
