// the fuzz input as an anonymous file, for readers that take a path
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

// a memfd holding data[0..size), or -1; read it through memfd_path(fd), then close(fd)
inline int memfd_input(const char * name, const uint8_t * data, size_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += static_cast<size_t>(w);
    }
    return fd;
}

inline std::string memfd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }
