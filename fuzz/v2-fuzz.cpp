// libFuzzer target for serve-infer's request parser (src/tools/infer-service/v2-codec.h), both
// tensor encodings. Byte 0 picks the encoding: even, a JSON body; odd, the binary tensor
// extension, with bytes 1..2 (little-endian) the Inference-Header-Content-Length and the rest the
// body. Checks beyond "no crash, no sanitizer report": only request_error escapes, with status
// 400 or 413; an accepted request's tensors hold exactly their shape's data within the bounds;
// its inputs encode into a response whose JSON header parses.
#include "tools/infer-service/v2-codec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

namespace is = mb::infer_service;

void require(bool ok) {
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 1) return 0;
    const bool                binary = data[0] & 1;
    std::optional<uint64_t>   header_length;
    size_t                    at = 1;
    if (binary) {
        if (size < 3) return 0;
        header_length = uint64_t(data[1]) | uint64_t(data[2]) << 8;
        at            = 3;
    }
    const std::string body(reinterpret_cast<const char *>(data) + at, size - at);
    is::codec_limits  lim;
    lim.max_body_bytes = size_t(1) << 20;
    lim.max_elements   = 1 << 16;
    is::infer_request r;
    try {
        r = is::parse_infer_request(body, header_length, lim);
    } catch (const is::request_error & e) {
        require(e.status == 400 || e.status == 413);
        require(e.what()[0] != '\0');
        require(nlohmann::json::accept(is::error_body(e.what())));
        return 0;
    }
    uint64_t total = 0;
    for (const is::tensor & t : r.inputs) {
        require(!t.name.empty() && t.shape.size() <= 8);
        const uint64_t n = t.element_count();
        total += n;
        if (t.type == is::dtype::BYTES) {
            require(t.strings.size() == n && t.raw.empty());
            for (const std::string & s : t.strings) require(s.size() <= lim.max_string);
        } else {
            require(t.strings.empty() && t.raw.size() == n * is::dtype_size(t.type));
            if (t.type == is::dtype::BOOL) {
                for (uint8_t b : t.raw) require(b <= 1);
            }
        }
    }
    require(total <= lim.max_elements);
    // the inputs as outputs: half of them binary
    std::vector<is::tensor> outs;
    for (size_t i = 0; i < r.inputs.size(); ++i) {
        is::tensor t = r.inputs[i];
        if (t.type == is::dtype::BYTES) continue;
        t.binary = i % 2;
        outs.push_back(std::move(t));
    }
    const is::encoded_response e = is::encode_infer_response("m", "1", r.id, outs);
    const size_t               n = e.header_length ? size_t(*e.header_length) : e.body.size();
    require(n <= e.body.size() && nlohmann::json::accept(e.body.substr(0, n)));
    return 0;
}
