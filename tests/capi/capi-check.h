/*
 * Checks shared by the C11 test programs of the C ABI (one translation unit each): CHECK counts and
 * reports a failed condition, CHECK_STATUS compares an mb_status and prints both names and the
 * message in g_err, which every call passes as E (g_err, sizeof g_err).
 */
#ifndef MB_TESTS_CAPI_CHECK_H
#define MB_TESTS_CAPI_CHECK_H

#include <motionbricks/motionbricks.h>

#include <stdio.h>

static int  g_failures = 0;
static int  g_checks   = 0;
static char g_err[512];
#define E g_err, sizeof g_err

#define N_JOINTS 34

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        ++g_checks;                                                                                                    \
        if (!(cond)) {                                                                                                 \
            ++g_failures;                                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

/* status equality, printing both names and the message on mismatch */
#define CHECK_STATUS(call, expected)                                                                                   \
    do {                                                                                                               \
        const mb_status got_ = (call);                                                                                 \
        ++g_checks;                                                                                                    \
        if (got_ != (expected)) {                                                                                      \
            ++g_failures;                                                                                              \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,                   \
                    mb_status_string(got_), mb_status_string(expected), g_err);                                        \
        }                                                                                                              \
    } while (0)

#endif
