// the SONIC fixtures' deterministic weights (fixtures/sonic/WEIGHTS.md): tensor names, shapes and
// scale exponents read from that page's table, values from FNV-1a-64 + SplitMix64, written as a
// SONIC GGUF under the runtime's names
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mb::test {

struct sonic_tensor_spec {
    std::string          upstream_name;   // encoders.g1.module.0.weight
    std::string          gguf_name;       // encoder.0.weight
    std::vector<int64_t> shape;           // PyTorch order
    int                  e = 0;           // values in [−2^−e, 2^−e)
    std::string          sha256;          // of the float32 LE bytes for seed 1
};

// the release-size table of WEIGHTS.md (throws std::runtime_error when it cannot be parsed)
std::vector<sonic_tensor_spec> sonic_weight_table(const std::string & weights_md);

// one tensor's values
std::vector<float> sonic_weight_values(const sonic_tensor_spec & t, uint64_t seed);

// writes the tensors whose upstream encoder is in `encoders` ("g1", "teleop", "smpl"; the decoder
// always) to `path` as component "sonic" with sonic.architecture `arch`; returns the SHA-256
// mismatches against the table (empty when every tensor is bit-exact)
std::vector<std::string> write_sonic_gguf(const std::string & path, const std::vector<sonic_tensor_spec> & table,
                                          const std::vector<std::string> & encoders, const std::string & arch,
                                          uint64_t seed = 1);

} // namespace mb::test
