// the C ABI of include/motionbricks/robot-export.h: qpos files, SONIC folders, ZMQ v1 messages
#include "capi/capi-error.h"
#include "capi/handles.h"
#include "export/g1-isaaclab.h"
#include "export/qpos-file.h"
#include "export/qpos-resample.h"
#include "export/sonic-folder.h"
#include "export/sonic-v1.h"
#include "motion/mjcf.h"

#include <motionbricks/robot-export.h>

#include <algorithm>
#include <cmath>
#include <string>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;

namespace {

void write_qpos(const float * qpos, uint64_t frames, const char * path, uint32_t format, uint32_t rate_hz, uint32_t flags) {
    require(qpos, "qpos");
    require(path, "path");
    if (frames == 0 || frames > (uint64_t(1) << 32)) fail(MB_INVALID_ARGUMENT, "frames must be 1..2^32");
    if (format != MB_QPOS_FORMAT_CSV && format != MB_QPOS_FORMAT_NPZ) fail(MB_INVALID_ARGUMENT, "unknown qpos format " + std::to_string(format));
    if (flags & ~(MB_QPOS_QUAT_XYZW | MB_QPOS_NO_HEADER)) fail(MB_INVALID_ARGUMENT, "unknown qpos flags");
    mb::qpos_write_options opt;
    opt.rate   = int(rate_hz > 1000 ? 0 : rate_hz);
    opt.order  = flags & MB_QPOS_QUAT_XYZW ? mb::quat_order::xyzw : mb::quat_order::wxyz;
    opt.header = !(flags & MB_QPOS_NO_HEADER);
    if (format == MB_QPOS_FORMAT_CSV) {
        mb::write_qpos_csv(path, qpos, int64_t(frames), opt);
    } else {
        mb::write_qpos_npz(path, qpos, int64_t(frames), opt);
    }
}

void write_sonic(const float * qpos, uint64_t frames, const char * directory, const char * mjcf_path) {
    require(qpos, "qpos");
    require(directory, "directory");
    if (frames > (uint64_t(1) << 24)) fail(MB_INVALID_ARGUMENT, "frames must be at most 2^24");
    mb::mjcf_model model;
    if (mjcf_path) {
        try {
            model = mb::mjcf_load(mjcf_path);
        } catch (const mb::error &) {
            throw;
        } catch (const std::exception & e) {
            fail(MB_INVALID_FORMAT, e.what());
        }
        if (model.hinges.size() != size_t(mb::k_qpos_hinges)) fail(MB_INVALID_FORMAT, std::string(mjcf_path) + ": not a 29-hinge G1 model");
        for (size_t k = 0; k < model.hinges.size(); ++k) {
            if (model.hinges[k].joint != mb::mjcf_g1().hinges[k].joint) {
                fail(MB_INVALID_FORMAT, std::string(mjcf_path) + ": hinge " + std::to_string(k) + " is '" + model.hinges[k].joint +
                                            "', the G1 qpos has '" + mb::mjcf_g1().hinges[k].joint + "' there");
            }
        }
    }
    mb::write_sonic_folder(directory, mb::sonic_from_qpos(qpos, int64_t(frames), mjcf_path ? model : mb::mjcf_g1()));
}

} // namespace

extern "C" {

MB_API mb_status mb_qpos_write_file(const float * qpos, uint64_t frames, const char * path, uint32_t format, uint32_t rate_hz,
                                    uint32_t flags, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        write_qpos(qpos, frames, path, format, rate_hz, flags);
        return MB_OK;
    });
}

MB_API mb_status mb_motion_write_qpos_file(const mb_motion * motion, const char * path, uint32_t format, uint32_t rate_hz,
                                           uint32_t flags, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(motion, "motion");
        write_qpos(motion->mujoco_qpos.data(), motion->frames, path, format, rate_hz, flags);
        return MB_OK;
    });
}

MB_API mb_status mb_motion_read_qpos_file(const char * path, uint32_t format, uint32_t flags, mb_motion ** output, char * error,
                                          uint64_t error_capacity) {
    if (output) *output = nullptr;
    return guard(error, error_capacity, [&]() -> mb_status {
        require(path, "path");
        require(output, "output");
        if (format != MB_QPOS_FORMAT_CSV && format != MB_QPOS_FORMAT_NPZ) fail(MB_INVALID_ARGUMENT, "unknown qpos format " + std::to_string(format));
        if (flags & ~(MB_QPOS_QUAT_XYZW | MB_QPOS_NO_HEADER)) fail(MB_INVALID_ARGUMENT, "unknown qpos flags");
        const mb::quat_order order = flags & MB_QPOS_QUAT_XYZW ? mb::quat_order::xyzw : mb::quat_order::wxyz;
        const mb::qpos_clip  clip  = format == MB_QPOS_FORMAT_CSV ? mb::read_qpos_csv(path, 30, order, true) : mb::read_qpos_npz(path);
        if (clip.fps != 30) fail(MB_INVALID_FORMAT, std::string(path) + ": " + std::to_string(clip.fps) + " fps, a motion is read at 30");
        const std::vector<float> q(clip.qpos.begin(), clip.qpos.end());
        std::unique_ptr<mb_motion> m = mb::capi::motion_from_qpos(q.data(), clip.frames());
        mb::capi::check_motion(*m, "mb_motion_read_qpos_file");
        *output = m.release();
        return MB_OK;
    });
}

MB_API mb_status mb_qpos_write_sonic_folder(const float * qpos, uint64_t frames, const char * directory, const char * mjcf_path,
                                            char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        write_sonic(qpos, frames, directory, mjcf_path);
        return MB_OK;
    });
}

MB_API mb_status mb_motion_write_sonic_folder(const mb_motion * motion, const char * directory, const char * mjcf_path,
                                              char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(motion, "motion");
        write_sonic(motion->mujoco_qpos.data(), motion->frames, directory, mjcf_path);
        return MB_OK;
    });
}

MB_API mb_status mb_qpos_sample_isaaclab(const float * qpos, uint64_t frames, uint64_t frame, double weight, double * joint_pos,
                                         double * body_quat, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(qpos, "qpos");
        if (frames == 0 || frames > (uint64_t(1) << 40)) fail(MB_INVALID_ARGUMENT, "frames must be at least 1");
        if (!(weight >= 0 && weight <= 1)) fail(MB_INVALID_ARGUMENT, "weight must be 0..1");
        double q[mb::k_qpos_dim];
        mb::qpos_sample(qpos, int64_t(frames), int64_t(std::min(frame, frames - 1)), weight, q);
        if (joint_pos) {
            for (int j = 0; j < mb::k_qpos_hinges; ++j) joint_pos[j] = q[mb::k_qpos_root + mb::k_mujoco_of_isaaclab[j]];
        }
        if (body_quat) {
            for (int c = 0; c < 4; ++c) body_quat[c] = q[3 + c];
        }
        return MB_OK;
    });
}

MB_API mb_status mb_robot_stream_encode(const char * topic, const double * joint_pos, const double * joint_vel, const double * body_quat,
                                    const int64_t * frame_index, uint64_t frames, uint8_t * output, uint64_t capacity,
                                    uint64_t * size, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(topic, "topic");
        require(joint_pos, "joint_pos");
        require(joint_vel, "joint_vel");
        require(body_quat, "body_quat");
        require(frame_index, "frame_index");
        require(size, "size");
        const std::string t = topic;
        if (t.size() > 256) fail(MB_INVALID_ARGUMENT, "topic longer than 256 bytes");
        if (frames == 0 || frames > 10000) fail(MB_INVALID_ARGUMENT, "frames must be 1..10000");
        *size = mb::sonic_v1_message_size(t.size(), frames);
        if (!output && capacity == 0) return MB_OK;
        require(output, "output");
        if (capacity < *size) fail(MB_INVALID_ARGUMENT, "output holds " + std::to_string(capacity) + " bytes, the message needs " + std::to_string(*size));
        mb::sonic_v1_encode(t, joint_pos, joint_vel, body_quat, frame_index, frames, output);
        return MB_OK;
    });
}

} // extern "C"
