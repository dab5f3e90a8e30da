#include "format/tensor.h"

namespace mb {

const char * dtype_name(dtype t) {
    switch (t) {
        case dtype::DTYPE_F32: return "F32";
        case dtype::DTYPE_Q8_0: return "Q8_0";
        case dtype::DTYPE_I32: return "I32";
        case dtype::DTYPE_BF16: return "BF16";
    }
    return nullptr;
}

namespace {

const tensor_view & require_present(const tensor_source & src, std::string_view name) {
    const tensor_view * t = src.find(name);
    if (!t) {
        throw error(status::incompatible_model, src.origin() + ": missing tensor '" + std::string(name) + "'");
    }
    return *t;
}

} // namespace

std::string torch_shape_string(const tensor_view & t) {
    std::string s = "[";
    for (uint32_t i = 0; i < t.n_dims; ++i) {
        if (i) s += ", ";
        s += std::to_string(t.ne[t.n_dims - 1 - i]);
    }
    return s + "]";
}

const tensor_view & require_any_f32(const tensor_source & src, std::string_view name) {
    const tensor_view & t = require_present(src, name);
    if (t.type != dtype::DTYPE_F32) {
        const char * n = dtype_name(t.type);
        throw error(status::incompatible_model, src.origin() + ": tensor '" + std::string(name) + "' is " +
                                                    (n ? n : "of an unknown type") +
                                                    "; it must be F32 (only linear and conv weights may be reduced)");
    }
    return t;
}

const tensor_view & require_any_matrix(const tensor_source & src, std::string_view name) {
    const tensor_view & t = require_present(src, name);
    if (t.type != dtype::DTYPE_F32 && t.type != dtype::DTYPE_BF16 && t.type != dtype::DTYPE_Q8_0) {
        throw error(status::incompatible_model, src.origin() + ": tensor '" + std::string(name) +
                                                    "' must be F32, BF16 or Q8_0");
    }
    return t;
}

namespace {

// t itself, or an incompatible_model error naming the tensor, its shape and the expected one
const tensor_view & check_shape(const tensor_source & src, std::string_view name, const tensor_view & t,
                                std::initializer_list<int64_t> torch_shape) {
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

} // namespace

const tensor_view & require_f32(const tensor_source & src, std::string_view name,
                                std::initializer_list<int64_t> torch_shape) {
    return check_shape(src, name, require_any_f32(src, name), torch_shape);
}

const tensor_view & require_matrix(const tensor_source & src, std::string_view name,
                                   std::initializer_list<int64_t> torch_shape) {
    return check_shape(src, name, require_any_matrix(src, name), torch_shape);
}

} // namespace mb
