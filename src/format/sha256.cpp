#include "format/sha256.h"

#include "format/error.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

namespace mb {

namespace {

using md_ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

md_ctx sha256_init() {
    md_ctx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || !EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr)) throw error(status::internal, "SHA-256 unavailable");
    return ctx;
}

std::string sha256_final(EVP_MD_CTX * ctx) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int  n = 0;
    if (!EVP_DigestFinal_ex(ctx, md, &n)) throw error(status::internal, "SHA-256 failed");
    static const char hex[] = "0123456789abcdef";
    std::string       out;
    for (unsigned int i = 0; i < n; ++i) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 15];
    }
    return out;
}

} // namespace

std::string sha256_hex(std::string_view data) {
    md_ctx ctx = sha256_init();
    EVP_DigestUpdate(ctx.get(), data.data(), data.size());
    return sha256_final(ctx.get());
}

std::string sha256_file_hex(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw error(status::io_error, path + ": cannot open for hashing");
    md_ctx            ctx = sha256_init();
    std::vector<char> buf(1 << 20);
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (f.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(f.gcount()));
    }
    if (f.bad()) throw error(status::io_error, path + ": read error while hashing");
    return sha256_final(ctx.get());
}

} // namespace mb
