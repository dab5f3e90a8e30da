// owner/resume tokens
#include "tools/serve/tokens.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace mb::serve {

std::string make_token() {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof(b)) != 1) throw std::runtime_error("cannot draw random bytes for a token");
    static const char hex[] = "0123456789abcdef";
    std::string       s;
    for (unsigned char c : b) {
        s += hex[c >> 4];
        s += hex[c & 15];
    }
    return s;
}

bool token_equal(const std::string & a, const std::string & b) {
    if (a.size() != b.size() || a.empty()) return false;
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace mb::serve
