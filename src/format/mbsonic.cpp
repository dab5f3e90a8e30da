#include "format/mbsonic.h"

#include "format/error.h"
#include "format/regular-file.h"

#include <cmath>
#include <cstring>

namespace mb {

namespace {

constexpr char   k_magic[8]   = {'M', 'B', 'S', 'O', 'N', 'I', 'C', '1'};
constexpr size_t k_header     = 12;

// the fields of a sample in order, for messages
const char * field_at(int64_t f) {
    static const std::pair<int64_t, const char *> fields[] = {
        {1762, "encoder obs"},      {994, "decoder obs"},      {2048, "encoder layer 0"}, {1024, "encoder layer 1"},
        {512, "encoder layer 2"},   {512, "encoder layer 3"},  {64, "encoder layer 4"},   {64, "tokens"},
        {2048, "decoder layer 0"},  {2048, "decoder layer 1"}, {1024, "decoder layer 2"}, {1024, "decoder layer 3"},
        {512, "decoder layer 4"},   {512, "decoder layer 5"},  {29, "decoder layer 6"},   {29, "actions"},
        {29, "composed actions"}};
    for (const auto & [n, name] : fields) {
        if (f < n) return name;
        f -= n;
    }
    return "past the sample";
}

} // namespace

mbsonic_file mbsonic_file::read(const std::string & path) {
    const uint64_t max = k_header + uint64_t(k_mbsonic_max_samples) * k_mbsonic_sample_floats * 4;
    return parse(read_regular_file(path, max), path);
}

mbsonic_file mbsonic_file::parse(const std::string & bytes, const std::string & origin) {
    auto bad = [&](const std::string & what) { throw mb::error(mb::status::invalid_format, origin + ": .mbsonic: " + what); };
    if (bytes.size() < k_header) bad("truncated header (" + std::to_string(bytes.size()) + " bytes)");
    if (std::memcmp(bytes.data(), k_magic, 8) != 0) bad("bad magic (expected MBSONIC1; an unknown major version is refused)");
    uint32_t n = 0;
    std::memcpy(&n, bytes.data() + 8, 4);
    if (n < 1 || n > k_mbsonic_max_samples) bad("sample count " + std::to_string(n) + " is outside 1..20000");
    const uint64_t want = k_header + uint64_t(n) * k_mbsonic_sample_floats * 4;
    if (bytes.size() < want) bad("truncated: " + std::to_string(bytes.size()) + " bytes, " + std::to_string(want) + " expected");
    if (bytes.size() > want) bad(std::to_string(bytes.size() - want) + " trailing bytes");
    mbsonic_file f;
    f.n_ = n;
    f.data_.resize(size_t(n) * k_mbsonic_sample_floats);
    std::memcpy(f.data_.data(), bytes.data() + k_header, f.data_.size() * sizeof(float));
    for (size_t i = 0; i < f.data_.size(); ++i) {
        if (!std::isfinite(f.data_[i])) {
            const int64_t s = int64_t(i) / k_mbsonic_sample_floats, at = int64_t(i) % k_mbsonic_sample_floats;
            bad(std::string("sample ") + std::to_string(s) + ": " + field_at(at) + " holds a non-finite value");
        }
    }
    return f;
}

mbsonic_sample mbsonic_file::sample(size_t i) const {
    const float *  p = data_.data() + i * k_mbsonic_sample_floats;
    mbsonic_sample s{};
    s.encoder_obs = p;
    p += 1762;
    s.decoder_obs = p;
    p += 994;
    for (size_t k = 0; k < 5; ++k) {
        s.encoder_layers[k] = p;
        p += k_mbsonic_encoder_widths[k];
    }
    s.tokens = p;
    p += 64;
    for (size_t k = 0; k < 7; ++k) {
        s.decoder_layers[k] = p;
        p += k_mbsonic_decoder_widths[k];
    }
    s.actions = p;
    p += 29;
    s.composed = p;
    return s;
}

} // namespace mb
