// anim-export.h entry points: motions to and from BVH and GLB (src/export), motions from
// transforms, and the jump plan
#include "capi/capi-error.h"
#include "capi/handles.h"

#include "export/bvh.h"
#include "export/glb.h"
#include "format/regular-file.h"
#include "motion/g1.h"

#include <motionbricks/anim-export.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;

namespace {

// frames [first, first + count) of a motion as a clip; checks the options
mb::anim_clip clip_of(const mb_motion & m, const mb_motion_write_options & o) {
    if (o.format != MB_MOTION_FORMAT_GLB && o.format != MB_MOTION_FORMAT_BVH) {
        fail(MB_INVALID_ARGUMENT, "options->format must be MB_MOTION_FORMAT_GLB or MB_MOTION_FORMAT_BVH, got " +
                                      std::to_string(o.format));
    }
    const float unit = o.units_per_metre;
    if (!std::isfinite(unit) || unit < 0 || unit > 1000 || (o.format == MB_MOTION_FORMAT_GLB && unit != 0 && unit != 1)) {
        fail(MB_INVALID_ARGUMENT, "options->units_per_metre must be 0 or 1 for GLB (glTF is metres), in (0, 1000] for BVH");
    }
    if (o.first_frame >= m.frames) {
        fail(MB_INVALID_ARGUMENT, "options->first_frame " + std::to_string(o.first_frame) + " is past the motion's " +
                                      std::to_string(m.frames) + " frames");
    }
    const uint64_t n = o.frame_count ? o.frame_count : m.frames - o.first_frame;
    if (n > m.frames - o.first_frame) fail(MB_INVALID_ARGUMENT, "options->frame_count runs past the motion's end");
    if (n > MB_MOTION_FILE_MAX_FRAMES) {
        fail(MB_INVALID_ARGUMENT, std::to_string(n) + " frames: a motion file holds at most 18,000 (10 min at 30 fps); "
                                  "write it in parts with first_frame and frame_count");
    }
    mb::anim_clip c;
    c.frames = int64_t(n);
    c.root.assign(m.root_translations.begin() + int64_t(o.first_frame * 3), m.root_translations.begin() + int64_t((o.first_frame + n) * 3));
    const uint64_t q = uint64_t(mb::k_n_joints) * 4;
    c.local_xyzw.assign(m.local_rotations_xyzw.begin() + int64_t(o.first_frame * q),
                        m.local_rotations_xyzw.begin() + int64_t((o.first_frame + n) * q));
    return c;
}

std::string encode(const mb_motion & m, const mb_motion_write_options & o) {
    const mb::anim_clip c = clip_of(m, o);
    try {
        if (o.format == MB_MOTION_FORMAT_GLB) return mb::glb_write(c);
        return mb::bvh_write(c, o.units_per_metre == 0 ? 1.0 : double(o.units_per_metre));
    } catch (const mb::error & e) {
        // a motion's own values the file cannot hold (the library's motions are always finite)
        if (e.code() == mb::status::invalid_format) fail(MB_INVALID_ARGUMENT, e.what());
        throw;
    }
}

// a motion from a checked clip: FK over the neutral offsets, qpos by hinge projection
std::unique_ptr<mb_motion> motion_from_clip(mb::anim_clip && c) {
    const size_t F = size_t(c.frames);
    auto         m = std::make_unique<mb_motion>();
    m->frames      = F;
    m->joint_positions.resize(F * mb::k_n_joints * 3);
    std::vector<double> rot(F * mb::k_n_joints * 9);
    mb::clip_forward_kinematics(c, m->joint_positions.data(), rot.data());
    m->mujoco_qpos.resize(F * mb::k_qpos_dim);
    for (size_t f = 0; f < F; ++f) {
        mb::capi::converter().global_rotations_to_qpos(&c.root[f * 3], &rot[f * mb::k_n_joints * 9],
                                                       &m->mujoco_qpos[f * mb::k_qpos_dim]);
    }
    m->root_translations    = std::move(c.root);
    m->local_rotations_xyzw = std::move(c.local_xyzw);
    mb::capi::check_motion(*m, "reading the motion");
    return m;
}

uint32_t sniff(const uint8_t * data, uint64_t size) {
    if (size >= 4 && std::memcmp(data, "glTF", 4) == 0) return MB_MOTION_FORMAT_GLB;
    uint64_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
    if (size - i >= 9 && std::memcmp(data + i, "HIERARCHY", 9) == 0) return MB_MOTION_FORMAT_BVH;
    fail(MB_INVALID_FORMAT, "neither GLB (magic \"glTF\") nor BVH (\"HIERARCHY\")");
}

std::unique_ptr<mb_motion> decode(const uint8_t * data, uint64_t size, uint32_t format, const std::string & what) {
    if (format == MB_MOTION_FORMAT_AUTO) {
        try {
            format = sniff(data, size);
        } catch (const mb::error & e) {
            fail(MB_INVALID_FORMAT, what + ": " + e.what());
        }
    }
    const std::string_view bytes(reinterpret_cast<const char *>(data), size_t(size));
    if (format == MB_MOTION_FORMAT_GLB) return motion_from_clip(mb::glb_read(bytes, what));
    if (format == MB_MOTION_FORMAT_BVH) return motion_from_clip(mb::bvh_read(bytes, what));
    fail(MB_INVALID_ARGUMENT, "format must be MB_MOTION_FORMAT_AUTO, _GLB or _BVH, got " + std::to_string(format));
}

} // namespace

extern "C" {

MB_API mb_status mb_skeleton_get_joint(uint32_t joint, const char ** name, int32_t * parent, char * error,
                                       uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(name, "name");
        require(parent, "parent");
        if (joint >= uint32_t(mb::k_n_joints)) fail(MB_INVALID_ARGUMENT, "joint must be 0..33, got " + std::to_string(joint));
        *name   = mb::k_g1_joint_names[joint];
        *parent = mb::k_g1_parents[joint];
        return MB_OK;
    });
}

MB_API mb_status mb_motion_write(const mb_motion * motion, const mb_motion_write_options * options, uint8_t * buffer,
                                 uint64_t capacity, uint64_t * size, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(motion, "motion");
        require(options, "options");
        require(size, "size");
        const std::string bytes = encode(*motion, *options);
        *size                   = bytes.size();
        if (buffer == nullptr) return MB_OK;
        if (capacity < bytes.size()) {
            fail(MB_INVALID_ARGUMENT, "buffer capacity " + std::to_string(capacity) + " is less than the " +
                                          std::to_string(bytes.size()) + " bytes needed");
        }
        std::memcpy(buffer, bytes.data(), bytes.size());
        return MB_OK;
    });
}

MB_API mb_status mb_motion_write_file(const mb_motion * motion, const char * path,
                                      const mb_motion_write_options * options, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(motion, "motion");
        require(path, "path");
        require(options, "options");
        const std::string bytes = encode(*motion, *options);
        const std::string tmp   = std::string(path) + ".tmp." + std::to_string(::getpid());
        std::FILE *       f     = std::fopen(tmp.c_str(), "wb");
        if (!f) fail(MB_IO_ERROR, "cannot create '" + tmp + "': " + std::strerror(errno));
        bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
        ok      = std::fflush(f) == 0 && ok;
        ok      = ::fsync(::fileno(f)) == 0 && ok;
        ok      = std::fclose(f) == 0 && ok;
        if (!ok || std::rename(tmp.c_str(), path) != 0) {
            const int e = errno;
            std::remove(tmp.c_str());
            fail(MB_IO_ERROR, "cannot write '" + std::string(path) + "': " + std::strerror(e));
        }
        return MB_OK;
    });
}

MB_API mb_status mb_motion_read(const uint8_t * data, uint64_t size, uint32_t format, mb_motion ** output, char * error,
                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(data, "data");
        *output = decode(data, size, format, "motion").release();
        return MB_OK;
    });
}

MB_API mb_status mb_motion_read_file(const char * path, uint32_t format, mb_motion ** output, char * error,
                                     uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(path, "path");
        if (format > MB_MOTION_FORMAT_BVH) fail(MB_INVALID_ARGUMENT, "format must be MB_MOTION_FORMAT_AUTO, _GLB or _BVH");
        const uint64_t    limit = format == MB_MOTION_FORMAT_GLB ? MB_MOTION_GLB_MAX_BYTES : MB_MOTION_BVH_MAX_BYTES;
        const std::string bytes = mb::read_regular_file(path, limit);
        const auto *      data  = reinterpret_cast<const uint8_t *>(bytes.data());
        *output                 = decode(data, bytes.size(), format, path).release();
        return MB_OK;
    });
}

MB_API mb_status mb_motion_create(const float * root_xyz, const float * local_rotation_xyzw, uint64_t frames,
                                  mb_motion ** output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(root_xyz, "root_xyz");
        require(local_rotation_xyzw, "local_rotation_xyzw");
        if (frames < 1 || frames > MB_MOTION_FILE_MAX_FRAMES) {
            fail(MB_INVALID_ARGUMENT, "frames must be 1..18000, got " + std::to_string(frames));
        }
        mb::anim_clip c;
        c.frames = int64_t(frames);
        c.root.assign(root_xyz, root_xyz + frames * 3);
        c.local_xyzw.assign(local_rotation_xyzw, local_rotation_xyzw + frames * mb::k_n_joints * 4);
        try {
            mb::clip_check_normalise(c, "mb_motion_create");
        } catch (const mb::error & e) {
            fail(MB_INVALID_ARGUMENT, e.what());
        }
        *output = motion_from_clip(std::move(c)).release();
        return MB_OK;
    });
}

MB_API mb_status mb_agent_plan_jump(mb_agent * agent, const mb_command * command, mb_motion ** output, char * error,
                                    uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(agent, "agent");
        require(command, "command");
        mb_command jump = *command;
        const auto & mv = command->movement;
        if (mv[0] * mv[0] + mv[2] * mv[2] < 1e-12f) jump.movement = command->facing;
        jump.movement[1]          = 0.0f;
        jump.target_speed         = MB_JUMP_SPEED;
        jump.world_target_enabled = 0;
        char            msg[1024];
        const mb_status s = mb_agent_plan(agent, &jump, output, msg, sizeof msg);
        if (s != MB_OK) fail(s, std::string("jump: ") + msg);
        return MB_OK;
    });
}

} // extern "C"
