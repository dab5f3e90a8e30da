// the Open Inference Protocol v2 (KServe v2 REST) request and response bodies: the JSON tensor
// encoding and the binary tensor extension (Inference-Header-Content-Length). Model-agnostic:
// names, datatypes and shapes are checked against a model's table in model-io.h.
//
// A request body is either all JSON, or (binary extension) a JSON header of
// Inference-Header-Content-Length bytes followed by the raw data of every input whose
// parameters carry "binary_data_size", in the order the inputs are listed, with nothing after:
//     { "id"?: string, "parameters"?: {...}, "inputs": [ $tensor, ... ], "outputs"?: [ $out, ... ] }
//     $tensor = { "name": string, "shape": [int >= 0, ...], "datatype": string,
//                 "parameters"?: { "binary_data_size"?: int }, "data"?: [ ... ] }
//     $out    = { "name": string, "parameters"?: { "binary_data"?: bool } }
// Raw data is little-endian, row-major; BOOL one byte per element (0 or 1); BYTES each element a
// 4-byte little-endian length then that many bytes. JSON "data" may be flat or nested (flattened
// in row-major order); the element count must equal the shape's product.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mb::infer_service {

// the datatypes of the protocol (FP16 and BF16 only in binary form)
enum class dtype { BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES };

const char *          dtype_name(dtype t);
std::optional<dtype>  dtype_from_name(std::string_view s);
size_t                dtype_size(dtype t);   // bytes per element; 0 for BYTES

// a request is refused with this HTTP status and message (400 malformed, 413 too large)
struct request_error : std::runtime_error {
    unsigned status;
    request_error(unsigned s, const std::string & msg) : std::runtime_error(msg), status(s) {}
};

struct tensor {
    std::string               name;
    dtype                     type = dtype::FP32;
    std::vector<int64_t>      shape;
    std::vector<uint8_t>      raw;       // numeric data, little-endian, shape product * dtype_size bytes
    std::vector<std::string>  strings;   // BYTES elements
    bool                      binary = false;   // response: send as raw data after the JSON header

    uint64_t element_count() const;
};

struct requested_output {
    std::string name;
    bool        binary = false;
};

struct infer_request {
    std::string                    id;
    std::vector<tensor>            inputs;
    std::vector<requested_output>  outputs;              // empty: every output of the model
    bool                           binary_output = false; // request parameter binary_data_output
};

struct codec_limits {
    size_t   max_body_bytes  = size_t(4) << 20;   // whole body (413 above)
    uint64_t max_elements    = uint64_t(1) << 20; // one tensor (413 above)
    size_t   max_inputs      = 64;
    size_t   max_string      = 4096;              // one BYTES element
};

// parses a request body; header_length is the Inference-Header-Content-Length value when the
// header is present. Throws request_error; never anything else for any bytes
infer_request parse_infer_request(std::string_view body, std::optional<uint64_t> header_length,
                                  const codec_limits & limits);

// parses the Inference-Header-Content-Length header value (decimal digits only); throws request_error
uint64_t parse_header_length(std::string_view v);

struct encoded_response {
    std::string              body;
    std::optional<uint64_t>  header_length;   // set when some output is binary
};

// {"model_name", "model_version", "id", "outputs": [...]}; outputs with `binary` set go after the
// JSON header as raw data
encoded_response encode_infer_response(const std::string & model, const std::string & version, const std::string & id,
                                       const std::vector<tensor> & outputs);

// {"error": why} as the protocol's error body
std::string error_body(const std::string & why);

// a tensor from host values (copied)
tensor make_tensor_f32(const std::string & name, std::vector<int64_t> shape, const float * data, size_t n);
tensor make_tensor_i32(const std::string & name, std::vector<int64_t> shape, const int32_t * data, size_t n);

} // namespace mb::infer_service
