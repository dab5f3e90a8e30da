// owner/resume tokens: 16 random bytes from OpenSSL's CSPRNG as 32 lowercase hex digits
#pragma once

#include <string>

namespace mb::serve {

std::string make_token();                                        // throws std::runtime_error when the CSPRNG fails
bool        token_equal(const std::string & a, const std::string & b);   // constant time in the token length

} // namespace mb::serve
