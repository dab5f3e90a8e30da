// `.mbsonic` v1: SONIC parity samples (reference-runtime §3(c)). Magic "MBSONIC1", u32 LE sample
// count 1..20,000, then per sample 14,235 float32 LE: encoder obs 1762, decoder obs 994, encoder
// layers 2048, 1024, 512, 512, 64 (pre-activations), tokens 64, decoder layers 2048, 2048, 1024,
// 1024, 512, 512, 29, actions 29, composed actions 29 (the encoder's tokens decoded). Nothing else
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mb {

struct mbsonic_sample {
    const float *                  encoder_obs;      // [1762]
    const float *                  decoder_obs;      // [994]
    std::array<const float *, 5>   encoder_layers;   // widths k_mbsonic_encoder_widths
    const float *                  tokens;           // [64]
    std::array<const float *, 7>   decoder_layers;   // widths k_mbsonic_decoder_widths
    const float *                  actions;          // [29]
    const float *                  composed;         // [29]
};

inline constexpr std::array<int64_t, 5> k_mbsonic_encoder_widths = {2048, 1024, 512, 512, 64};
inline constexpr std::array<int64_t, 7> k_mbsonic_decoder_widths = {2048, 2048, 1024, 1024, 512, 512, 29};
inline constexpr int64_t                k_mbsonic_sample_floats  = 14235;
inline constexpr uint32_t               k_mbsonic_max_samples    = 20000;

class mbsonic_file {
public:
    // reads and validates the whole file (size exactly header + samples, every value finite);
    // throws mb::error: io_error when unreadable, invalid_format naming the field and sample
    static mbsonic_file read(const std::string & path);
    static mbsonic_file parse(const std::string & bytes, const std::string & origin);

    size_t         size() const { return n_; }
    mbsonic_sample sample(size_t i) const;

private:
    std::vector<float> data_;
    size_t             n_ = 0;
};

} // namespace mb
