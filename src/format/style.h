// .mbstyle v1: one motion style (a short G1 exemplar clip plus its speed and
// duration mask) as a GGUF v3 file with component "style". Layout in style.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mb {

constexpr int      k_style_joints          = 34;
constexpr int      k_style_mask_len        = 11;        // duration mask entries for 6..16 tokens
constexpr uint32_t k_style_min_frames      = 4;
constexpr uint32_t k_style_max_frames      = 100000;
constexpr uint32_t k_style_format_version  = 1;
constexpr float    k_style_rotation_tol    = 1e-3f;     // max |RᵀR − I| entry accepted
// physical bounds (a G1 stands 1.3 m and walks at most about 2 m/s; docs/FORMATS.md)
constexpr float    k_style_max_speed         = 10.0f;             // m/s, style_speed
constexpr float    k_style_max_joint_offset  = 5.0f;              // m, |each coordinate| of a joint minus the root
constexpr float    k_style_max_root_distance = 1e4f;              // m, |x|, |y|, |z| of the root path
constexpr float    k_style_max_heading       = 12.566370614359172f;   // rad, |heading| ≤ 4π

// upstream code revision every MotionBricks component records
extern const char * const k_style_upstream_revision;   // "a0732b642c0333077e127a2f56ab0014c196bca4"
// the released styles' source: upstream G1-clip safetensors
extern const char * const k_style_release_sha256;

struct style_asset {
    std::string             name;              // general.name = motionbricks.style_name, non-empty
    float                   speed = 0.0f;      // motionbricks.style_speed, configured speed (m/s), finite ≥ 0
    uint32_t                frames = 0;        // motionbricks.style_frames, F in 4..100,000
    std::optional<uint32_t> index;             // motionbricks.style_index (0..14 for the released styles)
    std::string             source_sha256;     // motionbricks.source_sha256, 64 lowercase hex
    std::vector<float>      joint_positions;   // [F, 34, 3] global joint positions (m, Y up, minus root x/z)
    std::vector<float>      joint_rotations;   // [F, 34, 9] row-major global rotation matrices
    std::vector<float>      root_positions;    // [F, 3] root (x, 0, z)
    std::vector<float>      headings;          // [F] heading about +Y (rad)
    std::array<int32_t, k_style_mask_len> allowed_tokens{};   // 1 = 6 + i tokens allowed
};

// "" when `s` is a valid style, else the first problem (field, expected vs actual)
std::string style_validate(const style_asset & s);

// reads and fully validates a .mbstyle; throws mb::error naming the file and the problem
style_asset style_read(const std::string & path);

// validates `s` and writes it deterministically and atomically; throws mb::error
void style_write(const std::string & path, const style_asset & s);

} // namespace mb
