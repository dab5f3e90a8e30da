// regular-file inputs (see regular-file.h)
#include "format/regular-file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mb {

namespace {

const char * kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

} // namespace

int open_regular_file(const std::string & path, uint64_t & size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw file_error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        throw file_error(path + ": cannot stat: " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw file_error(path + ": not a regular file (" + kind_of(st.st_mode) + ")");
    }
    size = uint64_t(st.st_size);
    return fd;
}

std::string read_regular_file(const std::string & path, uint64_t max_bytes) {
    uint64_t  size = 0;
    const int fd   = open_regular_file(path, size);
    if (size > max_bytes) {
        ::close(fd);
        throw file_error(path + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + " allowed");
    }
    std::string text(size_t(size), '\0');
    size_t      got = 0;
    for (;;) {
        // one byte more than expected tells a file that grew since fstat
        char          extra = 0;
        char *        dst   = got < text.size() ? text.data() + got : &extra;
        const size_t  want  = got < text.size() ? text.size() - got : 1;
        const ssize_t n     = ::read(fd, dst, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw file_error(path + ": cannot read: " + std::strerror(e));
        }
        if (n == 0) break;
        if (dst == &extra) {
            ::close(fd);
            throw file_error(path + ": grew while being read");
        }
        got += size_t(n);
    }
    ::close(fd);
    text.resize(got);
    return text;
}

} // namespace mb
