// test-only: the shared G1 scene and the skip when MuJoCo or ../shared is absent (tests that link the
// simulator directly; MB_SHARED comes from CMake)
#pragma once

#include "physics/mujoco/sim.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace mb::physics::test {

inline std::string scene_path() {
    return std::string(MB_SHARED) + "/data/upstream/mjcf/scene_43dof.xml";
}

} // namespace mb::physics::test

#define NEED_SCENE()                                                                                                    \
    do {                                                                                                                \
        if (!::mb::physics::engine_available()) GTEST_SKIP() << "this build has no MuJoCo";                             \
        if (!std::filesystem::exists(::mb::physics::test::scene_path()))                                                \
            GTEST_SKIP() << ::mb::physics::test::scene_path() << " is absent (../shared)";                              \
    } while (0)
