// SHA-256 (OpenSSL EVP) as lowercase hex: tensor-name compaction, bundle provenance
#pragma once

#include <string>
#include <string_view>

namespace mb {

// SHA-256 of `data` as 64 lowercase hex digits
std::string sha256_hex(std::string_view data);

// SHA-256 of the whole file at `path`, read in 1 MiB chunks; throws mb::error (io_error)
std::string sha256_file_hex(const std::string & path);

} // namespace mb
