// a copy of a bundle with one weight tensor overwritten by a value (NaN, Inf, or a finite 1e38
// that overflows): the input of the "non-finite results are never success" tests (issue 19)
#pragma once

#include "format/gguf.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mb::test {

// copies bundle `from` to `to` and fills tensor `tensor` of component `file` (e.g. "root.gguf")
// with `value`; false (with a gtest failure) when the tensor is not an F32 tensor of the file
inline bool poison_bundle(const std::string & from, const std::string & to, const std::string & file,
                          const std::string & tensor, float value) {
    namespace fs = std::filesystem;
    fs::remove_all(to);
    fs::copy(from, to, fs::copy_options::recursive);
    uint64_t offset = 0, count = 0;
    {
        const auto           g = gguf_file::open(to + "/" + file);
        const tensor_view * t = g->find(tensor);
        if (t == nullptr || t->type != dtype::DTYPE_F32) {
            ADD_FAILURE() << "no F32 tensor '" << tensor << "' in " << file;
            return false;
        }
        offset = g->tensor_offset(*t);
        count  = uint64_t(t->n_elements());
    }
    const std::vector<float> fill(size_t(count), value);
    std::fstream f(to + "/" + file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    f.write(reinterpret_cast<const char *>(fill.data()), std::streamsize(fill.size() * sizeof(float)));
    return bool(f);
}

// the poisoned weights of the tests: a root-planner and a VQ-decoder weight, each as NaN, +Inf and 1e38
struct poison_case {
    const char * file;
    const char * tensor;
    float        value;
    const char * label;
};

inline std::vector<poison_case> poison_cases() {
    const char * root = "_shared_transformer_model.layers.0.linear2.weight";
    const char * vq   = "decoder.model.6.weight";
    std::vector<poison_case> out;
    for (auto [file, tensor] : {std::pair{"root.gguf", root}, std::pair{"vq-decoder.gguf", vq}}) {
        out.push_back({file, tensor, std::numeric_limits<float>::quiet_NaN(), "NaN"});
        out.push_back({file, tensor, std::numeric_limits<float>::infinity(), "Inf"});
        out.push_back({file, tensor, 1e38f, "1e38"});
    }
    return out;
}

} // namespace mb::test
