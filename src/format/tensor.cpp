#include "format/tensor.h"

namespace mb {

std::string torch_shape_string(const tensor_view & t) {
    std::string s = "[";
    for (uint32_t i = 0; i < t.n_dims; ++i) {
        if (i) s += ", ";
        s += std::to_string(t.ne[t.n_dims - 1 - i]);
    }
    return s + "]";
}

const tensor_view & require_any_f32(const tensor_source & src, std::string_view name) {
    const tensor_view * t = src.find(name);
    if (!t) {
        throw error(status::incompatible_model, src.origin() + ": missing tensor '" + std::string(name) + "'");
    }
    if (t->type != dtype::DTYPE_F32) {
        throw error(status::incompatible_model, src.origin() + ": tensor '" + std::string(name) + "' must be F32");
    }
    return *t;
}

const tensor_view & require_f32(const tensor_source & src, std::string_view name,
                                std::initializer_list<int64_t> torch_shape) {
    const tensor_view & t = require_any_f32(src, name);
    bool ok = torch_shape.size() == t.n_dims;
    if (ok) {
        uint32_t i = t.n_dims;
        for (int64_t d : torch_shape) {
            if (t.ne[--i] != d) ok = false;
        }
    }
    if (!ok) {
        std::string want = "[";
        bool first = true;
        for (int64_t d : torch_shape) {
            if (!first) want += ", ";
            want += std::to_string(d);
            first = false;
        }
        want += "]";
        throw error(status::incompatible_model, src.origin() + ": tensor '" + std::string(name) + "' has shape " +
                                                    torch_shape_string(t) + ", expected " + want);
    }
    return t;
}

} // namespace mb
