// motionbricks.h entry points: version, status names, runtime options, commands,
// model loading and queries, motion accessors
#include "capi/capi-error.h"
#include "capi/handles.h"

#include "format/bundle.h"
#include "motion/predict.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <system_error>

using mb::capi::fail;
using mb::capi::guard;
using mb::capi::require;

namespace {

constexpr uint32_t k_max_threads = 256;   // load clamps larger thread counts

bool valid_device(mb_device d) {
    return d == MB_DEVICE_AUTO || d == MB_DEVICE_CPU || d == MB_DEVICE_VULKAN || d == MB_DEVICE_CUDA;
}

constexpr float k_max_direction = 1.0e6f;   // |component| of a direction (a direction, not a distance)

bool finite3(float x, float y, float z) {
    return std::isfinite(x) && std::isfinite(y) && std::isfinite(z);
}

void check_direction(const char * what, float x, float y, float z) {
    if (!finite3(x, y, z)) {
        fail(MB_INVALID_ARGUMENT, std::string(what) + " direction must be finite");
    }
    if (std::fabs(x) > k_max_direction || std::fabs(y) > k_max_direction || std::fabs(z) > k_max_direction) {
        fail(MB_INVALID_ARGUMENT, std::string(what) + " direction components must be within 1e6 (its length does not matter)");
    }
}

void check_joint(const mb_model * m, uint32_t joint) {
    if (joint >= uint32_t(mb::k_n_joints)) {
        fail(MB_INVALID_ARGUMENT, "joint index " + std::to_string(joint) + " is out of range (model has " +
                                      std::to_string(mb::k_n_joints) + " joints)");
    }
    (void) m;
}

uint64_t count_parameters(const mb::model_bundle & b) {
    uint64_t n = 0;
    for (const mb::gguf_file * f : {b.pose.get(), b.root.get(), b.vq_decoder.get()}) {
        if (f == nullptr) {
            continue;
        }
        for (const mb::tensor_view & t : f->tensors()) {
            n += uint64_t(t.n_elements());
        }
    }
    return n;
}

// shared shape of the borrowed-buffer getters
mb_status get_buffer(const mb_motion * value, const float ** output, uint64_t * values,
                     std::vector<float> mb_motion::*member, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        require(values, "values");
        const std::vector<float> & v = value->*member;
        *output = v.empty() ? nullptr : v.data();
        *values = uint64_t(v.size());
        return MB_OK;
    });
}

} // namespace

namespace mb::capi {

const qpos_converter & converter() {
    static const qpos_converter conv;
    return conv;
}

void begin_batch(mb_motion ** outputs, uint64_t count) {
    require(outputs, "outputs");
    if (count == 0 || count > k_max_batch) {
        fail(MB_INVALID_ARGUMENT, "batch count must be 1.." + std::to_string(k_max_batch) + ", got " + std::to_string(count));
    }
    std::fill_n(outputs, size_t(count), nullptr);
}

std::unique_ptr<mb_motion> motion_from_result(predict_result && r) {
    auto m    = std::make_unique<mb_motion>();
    m->frames = uint64_t(r.frames);
    MB_ASSERT(r.frames > 0 && r.root_translations.size() == size_t(r.frames) * 3 &&
                  r.local_rotations_xyzw.size() == size_t(r.frames) * k_n_joints * 4 &&
                  r.joint_positions.size() == size_t(r.frames) * k_n_joints * 3 &&
                  r.global_features.size() == size_t(r.frames) * k_global_dim,
              "predict returned inconsistent shapes (frames " + std::to_string(r.frames) + ")");
    m->mujoco_qpos.resize(size_t(r.frames) * k_qpos_dim);
    for (int f = 0; f < r.frames; ++f) {
        converter().features_to_qpos(&r.global_features[size_t(f) * k_global_dim], &m->mujoco_qpos[size_t(f) * k_qpos_dim]);
    }
    m->token_count          = uint64_t(r.num_tokens);
    m->tokens               = std::move(r.tokens);
    m->duration_logits.assign(r.num_token_logits.begin(), r.num_token_logits.end());
    m->global_features      = std::move(r.global_features);
    m->timings              = r.timings;
    m->root_translations    = std::move(r.root_translations);
    m->local_rotations_xyzw = std::move(r.local_rotations_xyzw);
    m->joint_positions      = std::move(r.joint_positions);
    check_motion(*m, "inference");
    return m;
}

void check_motion(const mb_motion & m, const char * what) {
    const std::pair<const char *, const std::vector<float> *> arrays[] = {
        {"root translations", &m.root_translations},
        {"local rotations", &m.local_rotations_xyzw},
        {"joint positions", &m.joint_positions},
        {"MuJoCo qpos", &m.mujoco_qpos},
        {"global features", &m.global_features},
        {"target root translations", &m.target_root_translations},
        {"target joint positions", &m.target_joint_positions},
        {"target local rotations", &m.target_local_rotations_xyzw},
    };
    for (const auto & [name, v] : arrays) {
        for (size_t i = 0; i < v->size(); ++i) {
            if (!std::isfinite((*v)[i])) {
                fail(MB_COMPUTE_FAILED, std::string(what) + " produced non-finite values (" + name + "[" +
                                            std::to_string(i) + "]): the model's weights overflow or are not finite");
            }
        }
    }
}

std::unique_ptr<mb_motion> motion_from_qpos(const float * qpos, int64_t frames) {
    auto m    = std::make_unique<mb_motion>();
    m->frames = uint64_t(frames);
    m->mujoco_qpos.assign(qpos, qpos + size_t(frames) * k_qpos_dim);
    std::vector<float> rot(size_t(frames) * k_n_joints * 9);
    m->joint_positions.resize(size_t(frames) * k_n_joints * 3);
    converter().qpos_to_transforms(qpos, frames, m->joint_positions.data(), rot.data());
    m->root_translations.resize(size_t(frames) * 3);
    for (int64_t f = 0; f < frames; ++f) {
        for (int c = 0; c < 3; ++c) m->root_translations[size_t(f) * 3 + size_t(c)] = m->joint_positions[size_t(f) * k_n_joints * 3 + size_t(c)];
    }
    m->local_rotations_xyzw.resize(size_t(frames) * k_n_joints * 4);
    local_rotations_xyzw(rot.data(), frames, m->local_rotations_xyzw.data());
    return m;
}

} // namespace mb::capi

extern "C" {

// ---- library ---------------------------------------------------------------------------------

MB_API uint32_t mb_abi_version(void) {
    return MB_ABI_VERSION;
}

MB_API const char * mb_status_string(mb_status status) {
    switch (status) {
        case MB_OK:                  return "ok";
        case MB_INVALID_ARGUMENT:    return "invalid argument";
        case MB_OUT_OF_MEMORY:       return "out of memory";
        case MB_IO_ERROR:            return "I/O error";
        case MB_INVALID_FORMAT:      return "invalid format";
        case MB_INCOMPATIBLE_MODEL:  return "incompatible model";
        case MB_BACKEND_UNAVAILABLE: return "backend unavailable";
        case MB_COMPUTE_FAILED:      return "compute failed";
        case MB_NOT_IMPLEMENTED:     return "not implemented";
        case MB_INTERNAL_ERROR:      return "internal error";
        default:                     return "unknown status";
    }
}

// ---- runtime options -------------------------------------------------------------------------

MB_API mb_status mb_runtime_options_create(mb_runtime_options ** output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        *output = new mb_runtime_options();
        return MB_OK;
    });
}

MB_API void mb_runtime_options_free(mb_runtime_options * value) {
    delete value;
}

MB_API mb_status mb_runtime_options_set_device(mb_runtime_options * value, mb_device device, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        if (!valid_device(device)) {
            fail(MB_INVALID_ARGUMENT, "device " + std::to_string(device) +
                                          " is not MB_DEVICE_AUTO (0), MB_DEVICE_CPU (1), MB_DEVICE_VULKAN (2) or "
                                          "MB_DEVICE_CUDA (3)");
        }
        value->device = device;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_get_device(const mb_runtime_options * value, mb_device * output, char * error,
                                               uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        require(output, "output");
        *output = value->device;
        return MB_OK;
    });
}

static_assert(uint32_t(mb::backend_precision::BACKEND_PRECISION_F32) == MB_PRECISION_F32 &&
                  uint32_t(mb::backend_precision::BACKEND_PRECISION_TF32) == MB_PRECISION_TF32 &&
                  uint32_t(mb::backend_precision::BACKEND_PRECISION_BF16) == MB_PRECISION_BF16,
              "the ABI's precisions are the backend's");

MB_API mb_status mb_runtime_options_set_precision(mb_runtime_options * value, mb_precision precision, char * error,
                                                  uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        if (precision > MB_PRECISION_BF16) {
            fail(MB_INVALID_ARGUMENT, "precision " + std::to_string(precision) +
                                          " is not MB_PRECISION_F32 (0), MB_PRECISION_TF32 (1) or MB_PRECISION_BF16 (2)");
        }
        value->precision = precision;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_get_precision(const mb_runtime_options * value, mb_precision * output, char * error,
                                                  uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        require(output, "output");
        *output = value->precision;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_set_device_ordinal(mb_runtime_options * value, uint32_t ordinal, char * error,
                                                       uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        value->ordinal = ordinal;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_get_device_ordinal(const mb_runtime_options * value, uint32_t * output,
                                                       char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        require(output, "output");
        *output = value->ordinal;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_set_threads(mb_runtime_options * value, uint32_t threads, char * error,
                                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        value->threads = threads;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_get_threads(const mb_runtime_options * value, uint32_t * output, char * error,
                                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        require(output, "output");
        *output = value->threads;
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_set_backend_directory(mb_runtime_options * value, const char * directory,
                                                          char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        value->backend_directory = directory != nullptr ? directory : "";
        return MB_OK;
    });
}

MB_API mb_status mb_runtime_options_get_backend_directory(const mb_runtime_options * value, const char ** output,
                                                          char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "options");
        require(output, "output");
        *output = value->backend_directory.c_str();
        return MB_OK;
    });
}

// ---- commands --------------------------------------------------------------------------------

MB_API mb_status mb_command_create(mb_command ** output, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        *output = new mb_command();
        return MB_OK;
    });
}

MB_API void mb_command_free(mb_command * value) {
    delete value;
}

MB_API mb_status mb_command_set_style(mb_command * value, const mb_style * style, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        value->style = style;
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_style(const mb_command * value, const mb_style ** output, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(output, "output");
        *output = value->style;
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_movement_direction(mb_command * value, float x, float y, float z, char * error,
                                                   uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        check_direction("movement", x, y, z);
        value->movement = {x, y, z};
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_movement_direction(const mb_command * value, float * x, float * y, float * z,
                                                   char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(x, "x");
        require(y, "y");
        require(z, "z");
        *x = value->movement[0];
        *y = value->movement[1];
        *z = value->movement[2];
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_facing_direction(mb_command * value, float x, float y, float z, char * error,
                                                 uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        check_direction("facing", x, y, z);
        if (double(x) * x + double(y) * y + double(z) * z <= 1.0e-12) {
            fail(MB_INVALID_ARGUMENT, "facing direction must not be zero");
        }
        value->facing = {x, y, z};
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_facing_direction(const mb_command * value, float * x, float * y, float * z,
                                                 char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(x, "x");
        require(y, "y");
        require(z, "z");
        *x = value->facing[0];
        *y = value->facing[1];
        *z = value->facing[2];
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_target_speed(mb_command * value, float metres_per_second, char * error,
                                             uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        if (!std::isfinite(metres_per_second) || metres_per_second < -1.0f) {
            fail(MB_INVALID_ARGUMENT, "target speed must be finite and at least -1 (negative selects the style speed)");
        }
        value->target_speed = metres_per_second;
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_target_speed(const mb_command * value, float * output, char * error,
                                             uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(output, "output");
        *output = value->target_speed;
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_world_target(mb_command * value, float x, float y, float z, float heading_radians,
                                             uint32_t enabled, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        if (!finite3(x, y, z) || !std::isfinite(heading_radians)) {
            fail(MB_INVALID_ARGUMENT, "world target position and heading must be finite");
        }
        if (enabled > 1) {
            fail(MB_INVALID_ARGUMENT, "world target enabled must be 0 or 1, got " + std::to_string(enabled));
        }
        value->world_target         = {x, y, z};
        value->world_target_heading = heading_radians;
        value->world_target_enabled = enabled;
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_world_target(const mb_command * value, float * x, float * y, float * z,
                                             float * heading_radians, uint32_t * enabled, char * error,
                                             uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(x, "x");
        require(y, "y");
        require(z, "z");
        require(heading_radians, "heading_radians");
        require(enabled, "enabled");
        *x               = value->world_target[0];
        *y               = value->world_target[1];
        *z               = value->world_target[2];
        *heading_radians = value->world_target_heading;
        *enabled         = value->world_target_enabled;
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_seed(mb_command * value, uint64_t seed, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        value->seed = seed;
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_seed(const mb_command * value, uint64_t * output, char * error,
                                     uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(output, "output");
        *output = value->seed;
        return MB_OK;
    });
}

MB_API mb_status mb_command_set_sampling_argmax(mb_command * value, uint32_t enabled, char * error,
                                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        if (enabled > 1) {
            fail(MB_INVALID_ARGUMENT, "sampling argmax must be 0 (Gumbel) or 1 (argmax), got " + std::to_string(enabled));
        }
        value->sampling_argmax = enabled;
        return MB_OK;
    });
}

MB_API mb_status mb_command_get_sampling_argmax(const mb_command * value, uint32_t * output, char * error,
                                                uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "command");
        require(output, "output");
        *output = value->sampling_argmax;
        return MB_OK;
    });
}

// ---- model -----------------------------------------------------------------------------------

MB_API mb_status mb_model_load(const char * bundle_directory, const mb_runtime_options * options, mb_model ** output,
                               char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(output, "output");
        *output = nullptr;
        require(bundle_directory, "bundle_directory");
        if (*bundle_directory == '\0') {
            fail(MB_INVALID_ARGUMENT, "bundle_directory is empty");
        }
        const mb_runtime_options opts = options != nullptr ? *options : mb_runtime_options{};
        if (!valid_device(opts.device)) {
            fail(MB_INVALID_ARGUMENT, "runtime options hold an invalid device " + std::to_string(opts.device));
        }
        if (opts.precision > MB_PRECISION_BF16) {
            fail(MB_INVALID_ARGUMENT, "runtime options hold an invalid precision " + std::to_string(opts.precision));
        }
        if (opts.device == MB_DEVICE_CPU && opts.precision != MB_PRECISION_F32) {
            fail(MB_BACKEND_UNAVAILABLE, std::string("precision ") + (opts.precision == MB_PRECISION_TF32 ? "TF32" : "BF16") +
                                             " runs on MB_DEVICE_CUDA only; the CPU backend computes in F32");
        }
        if (opts.device == MB_DEVICE_VULKAN) {
            fail(MB_BACKEND_UNAVAILABLE, "this build has no Vulkan backend (use MB_DEVICE_CPU or MB_DEVICE_AUTO)");
        }
        if (opts.device == MB_DEVICE_CUDA) {
            const std::string problem = mb::backend_cuda_problem(int(std::min<uint32_t>(opts.ordinal, INT32_MAX)));
            if (!problem.empty()) fail(MB_BACKEND_UNAVAILABLE, "MB_DEVICE_CUDA: " + problem);
        }
        const std::string dir = bundle_directory;
        // the directory and its four components must exist and be readable: else an I/O error
        const std::string missing = mb::bundle_files_problem(dir);
        if (!missing.empty()) {
            fail(MB_IO_ERROR, missing);
        }

        // the reader throws invalid_format (io_error) for a malformed (unreadable) component, the
        // networks incompatible_model for well-formed weights they cannot run
        std::unique_ptr<mb::model_bundle> bundle = mb::bundle_load(dir);
        auto                              model  = std::make_unique<mb_model>();
        model->options                           = opts;
        model->parameter_count                   = count_parameters(*bundle);

        const int threads = int(std::min(opts.threads, k_max_threads));
        const mb::backend_device device = opts.device == MB_DEVICE_CPU    ? mb::backend_device::BACKEND_DEVICE_CPU
                                          : opts.device == MB_DEVICE_CUDA ? mb::backend_device::BACKEND_DEVICE_CUDA
                                                                          : mb::backend_device::BACKEND_DEVICE_AUTO;
        model->net = mb::motion_model::create(std::move(bundle), threads, device,
                                              int(std::min<uint32_t>(opts.ordinal, INT32_MAX)),
                                              mb::backend_precision(opts.precision));
        *output = model.release();
        return MB_OK;
    });
}

MB_API void mb_model_free(mb_model * value) {
    delete value;
}

MB_API mb_status mb_model_get_device(const mb_model * value, mb_device * output, char * error,
                                     uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        *output = std::string(value->net->backend_name()) == "cuda" ? MB_DEVICE_CUDA : MB_DEVICE_CPU;
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_precision(const mb_model * value, mb_precision * output, char * error,
                                        uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        *output = mb_precision(value->net->precision());
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_device_memory(const mb_model * value, uint64_t * model_bytes,
                                            uint64_t * device_used_bytes, uint64_t * device_total_bytes,
                                            char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(model_bytes, "model_bytes");
        require(device_used_bytes, "device_used_bytes");
        require(device_total_bytes, "device_total_bytes");
        const mb::device_memory_use use = value->net->device_memory();    // all 0 on the CPU
        *model_bytes        = use.held_bytes;
        *device_used_bytes  = use.used_bytes;
        *device_total_bytes = use.total_bytes;
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_parameter_count(const mb_model * value, uint64_t * output, char * error,
                                              uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        *output = value->parameter_count;
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_joint_count(const mb_model * value, uint32_t * output, char * error,
                                          uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        *output = uint32_t(mb::k_n_joints);
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_joint_name(const mb_model * value, uint32_t joint, const char ** output, char * error,
                                         uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        check_joint(value, joint);
        *output = value->support().joint_names[joint].c_str();
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_joint_parent(const mb_model * value, uint32_t joint, int32_t * output, char * error,
                                           uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(output, "output");
        check_joint(value, joint);
        *output = value->support().parents[joint];
        return MB_OK;
    });
}

MB_API mb_status mb_model_get_neutral_joint_position(const mb_model * value, uint32_t joint, float * x, float * y,
                                                     float * z, char * error, uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "model");
        require(x, "x");
        require(y, "y");
        require(z, "z");
        check_joint(value, joint);
        const float * p = value->support().neutral_joints.data() + size_t(joint) * 3;
        *x              = p[0];
        *y              = p[1];
        *z              = p[2];
        return MB_OK;
    });
}

// ---- motions ---------------------------------------------------------------------------------

MB_API void mb_motion_free(mb_motion * value) {
    delete value;
}

MB_API mb_status mb_motion_get_frame_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        *output = value->frames;
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_joint_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        *output = uint64_t(mb::k_n_joints);
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_root_translations(const mb_motion * value, const float ** output, uint64_t * values,
                                                 char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::root_translations, error, error_capacity);
}

MB_API mb_status mb_motion_get_local_rotations_xyzw(const mb_motion * value, const float ** output,
                                                    uint64_t * values, char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::local_rotations_xyzw, error, error_capacity);
}

MB_API mb_status mb_motion_get_joint_positions(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::joint_positions, error, error_capacity);
}

MB_API mb_status mb_motion_get_mujoco_qpos(const mb_motion * value, const float ** output, uint64_t * values,
                                           char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::mujoco_qpos, error, error_capacity);
}

MB_API mb_status mb_motion_get_target_frame_count(const mb_motion * value, uint64_t * output, char * error,
                                                  uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        *output = value->target_frames;
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_target_root_translations(const mb_motion * value, const float ** output,
                                                        uint64_t * values, char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::target_root_translations, error, error_capacity);
}

MB_API mb_status mb_motion_get_target_local_rotations_xyzw(const mb_motion * value, const float ** output,
                                                           uint64_t * values, char * error,
                                                           uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::target_local_rotations_xyzw, error, error_capacity);
}

// ---- motion extras (not in the reference runtime) ----------------------------------------------

MB_API mb_status mb_motion_get_style_name(const mb_motion * value, const char ** output, char * error,
                                          uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        *output = value->style_name.c_str();
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_token_count(const mb_motion * value, uint64_t * output, char * error,
                                           uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        *output = value->token_count;
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_tokens(const mb_motion * value, const int32_t ** output, uint64_t * values, char * error,
                                      uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        require(values, "values");
        *output = value->tokens.empty() ? nullptr : value->tokens.data();
        *values = uint64_t(value->tokens.size());
        return MB_OK;
    });
}

MB_API mb_status mb_motion_get_duration_logits(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::duration_logits, error, error_capacity);
}

MB_API mb_status mb_motion_get_global_features(const mb_motion * value, const float ** output, uint64_t * values,
                                               char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::global_features, error, error_capacity);
}

MB_API mb_status mb_motion_get_target_joint_positions(const mb_motion * value, const float ** output,
                                                      uint64_t * values, char * error, uint64_t error_capacity) {
    return get_buffer(value, output, values, &mb_motion::target_joint_positions, error, error_capacity);
}

MB_API mb_status mb_motion_get_stage_time_ms(const mb_motion * value, uint32_t stage, float * output, char * error,
                                             uint64_t error_capacity) {
    return guard(error, error_capacity, [&]() -> mb_status {
        require(value, "motion");
        require(output, "output");
        const mb::predict_timings & t = value->timings;
        switch (stage) {
            case MB_STAGE_PREPARE: *output = float(t.prepare_ms); break;
            case MB_STAGE_ROOT:    *output = float(t.root_ms); break;
            case MB_STAGE_POSE:    *output = float(t.pose_ms); break;
            case MB_STAGE_DECODER: *output = float(t.decoder_ms); break;
            case MB_STAGE_FINISH:  *output = float(t.finish_ms); break;
            case MB_STAGE_TOTAL:   *output = float(t.total_ms); break;
            default: fail(MB_INVALID_ARGUMENT, "stage " + std::to_string(stage) + " is not an MB_STAGE_* value (0..5)");
        }
        return MB_OK;
    });
}

} // extern "C"
