// libFuzzer target for the GGUF reader and the bundle checks: any input must either
// open cleanly (and then every tensor byte, key and lookup is safe to touch, and the
// bundle component/support validators either accept it or throw) or throw mb::error
#include "format/bundle.h"
#include "format/gguf.h"
#include "memfd-input.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const int fd = memfd_input("gguf-fuzz", data, size);
    if (fd < 0) return 0;
    try {
        auto f = mb::gguf_file::open(memfd_path(fd));
        // touch every tensor byte the reader hands out
        volatile uint32_t sink = 0;
        for (const auto & t : f->tensors()) {
            const auto * p = static_cast<const uint8_t *>(t.data);
            for (uint64_t k = 0; k < t.n_bytes; ++k) sink = sink + p[k];
            if (f->find(t.name) != &t) __builtin_trap();
            (void) t.n_elements();
        }
        for (const auto & kv : f->kvs()) {
            for (char c : kv.raw) sink = sink + static_cast<uint8_t>(c);
            try {
                (void) f->meta_uint(kv.key);
            } catch (const mb::error &) {
            }
            try {
                (void) f->get_string(kv.key);
            } catch (const mb::error &) {
            }
        }
        (void) f->find("_root_token_transformer_model.layers.0.self_attn.out_proj.weight");
        (void) sink;

        // the bundle validators on whatever opened
        for (const char * role : mb::k_bundle_components) {
            try {
                mb::bundle_check_component(*f, role);
            } catch (const mb::error &) {
            }
        }
        try {
            mb::model_support sup = mb::bundle_decode_support(*f);
            (void) sup;
        } catch (const mb::error &) {
        }
    } catch (const mb::error &) {
        // rejected with a message: fine
    }
    close(fd);
    return 0;
}
