// the one way a reader opens an input file by name: never blocks on a FIFO, refuses anything
// that is not a regular file (FIFO, directory, device, socket) before reading a byte, and
// bounds the size up front. Used by the GGUF reader, the MJCF reader and the CLI's text inputs
#pragma once

#include "format/error.h"

#include <cstdint>
#include <string>

namespace mb {

// names the path and the problem ("PATH: not a regular file (a directory)")
struct file_error : error {
    explicit file_error(const std::string & msg) : error(status::io_error, msg) {}
};

// opens `path` read-only with O_NONBLOCK (a FIFO does not wait for a writer) and fstat()s the
// descriptor; returns it (caller closes) and sets `size`. Throws file_error when it cannot be
// opened or is not a regular file
int open_regular_file(const std::string & path, uint64_t & size);

// the whole regular file, at most `max_bytes` (checked from fstat before reading, and again
// while reading, so a growing file cannot exceed it); throws file_error
std::string read_regular_file(const std::string & path, uint64_t max_bytes);

} // namespace mb
