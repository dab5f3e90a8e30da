// the v2 request/response bodies (see v2-codec.h)
#include "tools/infer-service/v2-codec.h"

#include "format/json-bounded.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

static_assert(std::endian::native == std::endian::little, "the binary tensor data is little-endian");

namespace mb::infer_service {

namespace {

using json = nlohmann::json;

struct dtype_info {
    dtype        type;
    const char * name;
    size_t       size;
};

constexpr dtype_info k_dtypes[] = {
    {dtype::BOOL, "BOOL", 1},     {dtype::UINT8, "UINT8", 1}, {dtype::UINT16, "UINT16", 2}, {dtype::UINT32, "UINT32", 4},
    {dtype::UINT64, "UINT64", 8}, {dtype::INT8, "INT8", 1},   {dtype::INT16, "INT16", 2},   {dtype::INT32, "INT32", 4},
    {dtype::INT64, "INT64", 8},   {dtype::FP16, "FP16", 2},   {dtype::BF16, "BF16", 2},     {dtype::FP32, "FP32", 4},
    {dtype::FP64, "FP64", 8},     {dtype::BYTES, "BYTES", 0},
};

constexpr size_t k_max_dims = 8;

[[noreturn]] void bad(const std::string & why) { throw request_error(400, why); }

std::string clip(std::string_view s) { return std::string(s.substr(0, 64)); }

template <class T> void put(std::vector<uint8_t> & raw, T v) {
    const size_t at = raw.size();
    raw.resize(at + sizeof(T));
    std::memcpy(raw.data() + at, &v, sizeof(T));
}

// the integer JSON value v as T, range-checked
template <class T> T integer(const json & v, const std::string & where) {
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > uint64_t(std::numeric_limits<T>::max())) bad(where + " is out of range");
        return T(u);
    }
    if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if (std::is_unsigned_v<T> ? i < 0 : (i < int64_t(std::numeric_limits<T>::min()) || i > int64_t(std::numeric_limits<T>::max()))) {
            bad(where + " is out of range");
        }
        return T(i);
    }
    bad(where + " must be an integer");
}

// appends one JSON element of type t to the tensor
void put_json_element(tensor & t, const json & v, const codec_limits & lim, const std::string & where) {
    switch (t.type) {
    case dtype::BOOL:
        if (!v.is_boolean()) bad(where + " must be true or false (BOOL)");
        t.raw.push_back(v.get<bool>() ? 1 : 0);
        return;
    case dtype::UINT8: return put(t.raw, integer<uint8_t>(v, where));
    case dtype::UINT16: return put(t.raw, integer<uint16_t>(v, where));
    case dtype::UINT32: return put(t.raw, integer<uint32_t>(v, where));
    case dtype::UINT64: return put(t.raw, integer<uint64_t>(v, where));
    case dtype::INT8: return put(t.raw, integer<int8_t>(v, where));
    case dtype::INT16: return put(t.raw, integer<int16_t>(v, where));
    case dtype::INT32: return put(t.raw, integer<int32_t>(v, where));
    case dtype::INT64: return put(t.raw, integer<int64_t>(v, where));
    case dtype::FP32:
    case dtype::FP64: {
        if (!v.is_number()) bad(where + " must be a number");
        const double d = v.get<double>();
        if (t.type == dtype::FP64) return put(t.raw, d);
        return put(t.raw, float(d));   // beyond FLT_MAX becomes inf: the model's checks refuse it
    }
    case dtype::BYTES:
        if (!v.is_string()) bad(where + " must be a string (BYTES)");
        if (v.get_ref<const std::string &>().size() > lim.max_string) bad(where + " is longer than " + std::to_string(lim.max_string) + " bytes");
        t.strings.push_back(v.get<std::string>());
        return;
    case dtype::FP16:
    case dtype::BF16: bad(where + ": " + dtype_name(t.type) + " is accepted only as binary data");
    }
}

// flattens nested JSON arrays in row-major order
void put_json_data(tensor & t, const json & v, const codec_limits & lim, uint64_t & count, const std::string & where) {
    if (v.is_array()) {
        for (const json & e : v) put_json_data(t, e, lim, count, where);
        return;
    }
    if (++count > t.element_count()) bad(where + " has more elements than its shape " + std::to_string(t.element_count()));
    put_json_element(t, v, lim, where + "[" + std::to_string(count - 1) + "]");
}

// the raw bytes of one input: numeric data copied, BYTES split at their length prefixes
void put_binary_data(tensor & t, std::string_view b, const codec_limits & lim, const std::string & where) {
    const uint64_t n = t.element_count();
    if (t.type != dtype::BYTES) {
        if (uint64_t(b.size()) != n * dtype_size(t.type)) {
            bad(where + ": binary_data_size " + std::to_string(b.size()) + " but shape and datatype need " +
                std::to_string(n * dtype_size(t.type)) + " bytes");
        }
        t.raw.assign(b.begin(), b.end());
        if (t.type == dtype::BOOL) {
            for (uint8_t c : t.raw) {
                if (c > 1) bad(where + ": a BOOL byte is neither 0 nor 1");
            }
        }
        return;
    }
    size_t at = 0;
    for (uint64_t i = 0; i < n; ++i) {
        if (b.size() - at < 4) bad(where + ": BYTES element " + std::to_string(i) + " has no 4-byte length");
        uint32_t len = 0;
        std::memcpy(&len, b.data() + at, 4);
        at += 4;
        if (len > lim.max_string) bad(where + ": BYTES element " + std::to_string(i) + " is longer than " + std::to_string(lim.max_string) + " bytes");
        if (b.size() - at < len) bad(where + ": BYTES element " + std::to_string(i) + " runs past its data");
        t.strings.emplace_back(b.substr(at, len));
        at += len;
    }
    if (at != b.size()) bad(where + ": " + std::to_string(b.size() - at) + " bytes after the last BYTES element");
}

const json * find(const json & obj, const char * key) {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

void only_keys(const json & obj, std::initializer_list<const char *> keys, const std::string & where) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        bool known = false;
        for (const char * k : keys) known = known || it.key() == k;
        if (!known) bad(where + " has an unknown field '" + clip(it.key()) + "'");
    }
}

std::vector<int64_t> parse_shape(const json & v, const codec_limits & lim, const std::string & where) {
    if (!v.is_array()) bad(where + ".shape must be an array");
    if (v.size() > k_max_dims) bad(where + ".shape has more than " + std::to_string(k_max_dims) + " dimensions");
    std::vector<int64_t> shape;
    uint64_t             product = 1;
    for (const json & d : v) {
        if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<int64_t>() < 0)) {
            bad(where + ".shape must hold integers >= 0");
        }
        const uint64_t u = d.get<uint64_t>();
        if (u > lim.max_elements || (u != 0 && product > lim.max_elements / u)) {
            throw request_error(413, where + " has more than " + std::to_string(lim.max_elements) + " elements");
        }
        product *= u;
        shape.push_back(int64_t(u));
    }
    return shape;
}

void put_float(std::string & out, double v, bool single) {
    if (!std::isfinite(v)) {   // JSON has no NaN/inf; the model never returns them (its output check)
        out += "null";
        return;
    }
    char       buf[32];
    const auto res = single ? std::to_chars(buf, buf + sizeof buf, float(v)) : std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
}

} // namespace

const char * dtype_name(dtype t) {
    for (const dtype_info & d : k_dtypes) {
        if (d.type == t) return d.name;
    }
    return "?";
}

std::optional<dtype> dtype_from_name(std::string_view s) {
    for (const dtype_info & d : k_dtypes) {
        if (s == d.name) return d.type;
    }
    return std::nullopt;
}

size_t dtype_size(dtype t) {
    for (const dtype_info & d : k_dtypes) {
        if (d.type == t) return d.size;
    }
    return 0;
}

uint64_t tensor::element_count() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= uint64_t(d);   // bounded by parse_shape
    return n;
}

uint64_t parse_header_length(std::string_view v) {
    uint64_t   n   = 0;
    const auto res = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || res.ec != std::errc() || res.ptr != v.data() + v.size()) {
        bad("Inference-Header-Content-Length must be a decimal byte count");
    }
    return n;
}

infer_request parse_infer_request(std::string_view body, std::optional<uint64_t> header_length, const codec_limits & lim) {
    if (body.size() > lim.max_body_bytes) {
        throw request_error(413, "request body of " + std::to_string(body.size()) + " bytes, more than the " +
                                     std::to_string(lim.max_body_bytes) + " allowed");
    }
    std::string_view header = body, rest;
    if (header_length) {
        if (*header_length > body.size()) {
            bad("Inference-Header-Content-Length " + std::to_string(*header_length) + " exceeds the body's " +
                std::to_string(body.size()) + " bytes");
        }
        header = body.substr(0, size_t(*header_length));
        rest   = body.substr(size_t(*header_length));
    }
    json j;
    try {
        // every element is a value: the bound on values is the element bound plus the structure
        const json_bounds b = {.max_bytes = lim.max_body_bytes, .max_depth = k_max_dims + 4,
                               .max_values = size_t(lim.max_elements) + 4096};
        j = json_parse_bounded(header, b);
    } catch (const json_input_error & e) {
        bad(std::string("request header: ") + e.what());
    }
    if (!j.is_object()) bad("the request must be a JSON object");
    only_keys(j, {"id", "parameters", "inputs", "outputs"}, "the request");

    infer_request r;
    if (const json * id = find(j, "id")) {
        if (!id->is_string()) bad("id must be a string");
        if (id->get_ref<const std::string &>().size() > 256) bad("id is longer than 256 bytes");
        r.id = id->get<std::string>();
    }
    if (const json * p = find(j, "parameters")) {
        if (!p->is_object()) bad("parameters must be an object");
        if (const json * b = find(*p, "binary_data_output")) {
            if (!b->is_boolean()) bad("parameters.binary_data_output must be true or false");
            r.binary_output = b->get<bool>();
        }
    }
    const json * inputs = find(j, "inputs");
    if (!inputs || !inputs->is_array()) bad("inputs must be an array of tensors");
    if (inputs->size() > lim.max_inputs) bad("more than " + std::to_string(lim.max_inputs) + " inputs");
    uint64_t total_elements = 0;
    for (size_t i = 0; i < inputs->size(); ++i) {
        const json &      in    = (*inputs)[i];
        const std::string where = "inputs[" + std::to_string(i) + "]";
        if (!in.is_object()) bad(where + " must be an object");
        only_keys(in, {"name", "shape", "datatype", "parameters", "data"}, where);
        tensor       t;
        const json * name = find(in, "name");
        if (!name || !name->is_string() || name->get_ref<const std::string &>().empty()) bad(where + ".name must be a non-empty string");
        if (name->get_ref<const std::string &>().size() > 256) bad(where + ".name is longer than 256 bytes");
        t.name = name->get<std::string>();
        for (const tensor & o : r.inputs) {
            if (o.name == t.name) bad("input '" + clip(t.name) + "' is given twice");
        }
        const std::string tw = "input '" + clip(t.name) + "'";
        const json *      dt = find(in, "datatype");
        if (!dt || !dt->is_string()) bad(tw + ": datatype must be a string");
        const std::optional<dtype> type = dtype_from_name(dt->get_ref<const std::string &>());
        if (!type) bad(tw + ": unknown datatype '" + clip(dt->get_ref<const std::string &>()) + "'");
        t.type = *type;
        const json * shape = find(in, "shape");
        if (!shape) bad(tw + ": shape is missing");
        t.shape = parse_shape(*shape, lim, tw);
        total_elements += t.element_count();
        if (total_elements > lim.max_elements) {
            throw request_error(413, "the inputs hold more than " + std::to_string(lim.max_elements) + " elements");
        }

        std::optional<uint64_t> binary_size;
        if (const json * p = find(in, "parameters")) {
            if (!p->is_object()) bad(tw + ": parameters must be an object");
            if (const json * b = find(*p, "binary_data_size")) {
                if (!b->is_number_unsigned() && !(b->is_number_integer() && b->get<int64_t>() >= 0)) {
                    bad(tw + ": binary_data_size must be an integer >= 0");
                }
                binary_size = b->get<uint64_t>();
            }
        }
        const json * data = find(in, "data");
        if (binary_size) {
            if (data) bad(tw + " has both data and binary_data_size");
            if (!header_length) bad(tw + " has binary_data_size but the request has no Inference-Header-Content-Length");
            if (*binary_size > rest.size()) bad(tw + ": binary_data_size runs past the end of the body");
            put_binary_data(t, rest.substr(0, size_t(*binary_size)), lim, tw);
            rest = rest.substr(size_t(*binary_size));
        } else {
            if (!data) bad(tw + " has no data");
            uint64_t count = 0;
            if (t.type != dtype::BYTES) t.raw.reserve(size_t(t.element_count() * dtype_size(t.type)));
            put_json_data(t, *data, lim, count, tw);
            if (count != t.element_count()) {
                bad(tw + " has " + std::to_string(count) + " elements, its shape needs " + std::to_string(t.element_count()));
            }
        }
        r.inputs.push_back(std::move(t));
    }
    if (!rest.empty()) bad(std::to_string(rest.size()) + " bytes after the last binary input");

    if (const json * outs = find(j, "outputs")) {
        if (!outs->is_array()) bad("outputs must be an array");
        if (outs->size() > lim.max_inputs) bad("more than " + std::to_string(lim.max_inputs) + " requested outputs");
        for (size_t i = 0; i < outs->size(); ++i) {
            const json &      o     = (*outs)[i];
            const std::string where = "outputs[" + std::to_string(i) + "]";
            if (!o.is_object()) bad(where + " must be an object");
            only_keys(o, {"name", "parameters"}, where);
            const json * name = find(o, "name");
            if (!name || !name->is_string()) bad(where + ".name must be a string");
            requested_output ro{name->get<std::string>(), r.binary_output};
            if (ro.name.size() > 256) bad(where + ".name is longer than 256 bytes");
            for (const requested_output & e : r.outputs) {
                if (e.name == ro.name) bad("output '" + clip(ro.name) + "' is requested twice");
            }
            if (const json * p = find(o, "parameters")) {
                if (!p->is_object()) bad(where + ".parameters must be an object");
                if (const json * b = find(*p, "binary_data")) {
                    if (!b->is_boolean()) bad(where + ".parameters.binary_data must be true or false");
                    ro.binary = b->get<bool>();
                }
            }
            r.outputs.push_back(std::move(ro));
        }
    }
    return r;
}

encoded_response encode_infer_response(const std::string & model, const std::string & version, const std::string & id,
                                       const std::vector<tensor> & outputs) {
    std::string head = "{\"model_name\":" + json(model).dump() + ",\"model_version\":" + json(version).dump();
    if (!id.empty()) head += ",\"id\":" + json(id).dump(-1, ' ', false, json::error_handler_t::replace);
    head += ",\"outputs\":[";
    std::string binary;
    bool        any_binary = false;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const tensor & t = outputs[i];
        if (i) head += ',';
        head += "{\"name\":" + json(t.name).dump() + ",\"datatype\":\"" + dtype_name(t.type) + "\",\"shape\":[";
        for (size_t d = 0; d < t.shape.size(); ++d) head += (d ? "," : "") + std::to_string(t.shape[d]);
        head += ']';
        if (t.binary) {
            any_binary = true;
            head += ",\"parameters\":{\"binary_data_size\":" + std::to_string(t.raw.size()) + "}}";
            binary.append(reinterpret_cast<const char *>(t.raw.data()), t.raw.size());
            continue;
        }
        head += ",\"data\":[";
        const uint64_t n = t.element_count();
        for (uint64_t k = 0; k < n; ++k) {
            if (k) head += ',';
            const uint8_t * p = t.raw.data() + k * dtype_size(t.type);
            switch (t.type) {
            case dtype::FP32: {
                float v;
                std::memcpy(&v, p, 4);
                put_float(head, v, true);
                break;
            }
            case dtype::INT32: {
                int32_t v;
                std::memcpy(&v, p, 4);
                head += std::to_string(v);
                break;
            }
            case dtype::BOOL: head += *p ? "true" : "false"; break;
            default: head += "null"; break;   // the models answer only FP32, INT32 and BOOL
            }
        }
        head += "]}";
    }
    head += "]}";
    encoded_response r;
    if (any_binary) r.header_length = head.size();
    r.body = std::move(head);
    r.body += binary;
    return r;
}

std::string error_body(const std::string & why) {
    return json({{"error", why}}).dump(-1, ' ', false, json::error_handler_t::replace);
}

tensor make_tensor_f32(const std::string & name, std::vector<int64_t> shape, const float * data, size_t n) {
    tensor t;
    t.name  = name;
    t.type  = dtype::FP32;
    t.shape = std::move(shape);
    t.raw.resize(n * 4);
    if (n) std::memcpy(t.raw.data(), data, n * 4);
    return t;
}

tensor make_tensor_i32(const std::string & name, std::vector<int64_t> shape, const int32_t * data, size_t n) {
    tensor t;
    t.name  = name;
    t.type  = dtype::INT32;
    t.shape = std::move(shape);
    t.raw.resize(n * 4);
    if (n) std::memcpy(t.raw.data(), data, n * 4);
    return t;
}

} // namespace mb::infer_service
