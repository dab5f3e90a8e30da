// little-endian fixture I/O (see fixture-io.h)
#include "format/fixture-io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mb {

void le_reader::fail_at(uint64_t offset, const std::string & field, const std::string & what) const {
    throw error(status::invalid_format, name_ + ": offset " + std::to_string(offset) + ": " + field + ": " + what);
}

void le_reader::fail(const std::string & field, const std::string & what) const { fail_at(pos_, field, what); }

void le_reader::need(uint64_t n, const char * field) const {
    if (n > remaining()) {
        fail(field, "truncated: needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
    }
}

uint32_t le_reader::u32(const char * field) {
    uint32_t v;
    raw32(&v, 1, field);
    return v;
}

int32_t le_reader::i32(const char * field) {
    int32_t v;
    raw32(&v, 1, field);
    return v;
}

uint64_t le_reader::u64(const char * field) {
    need(8, field);
    uint64_t v;
    std::memcpy(&v, bytes_.data() + pos_, 8);
    pos_ += 8;
    return v;
}

void le_reader::raw32(void * out, uint64_t n, const char * field) {
    // n ≤ remaining / 4 first, so n * 4 cannot overflow
    if (n > remaining() / 4) need(UINT64_MAX, field);
    std::memcpy(out, bytes_.data() + pos_, size_t(n * 4));
    pos_ += n * 4;
}

void le_reader::magic(const char (&want)[9], const char * format) {
    need(8, "magic");
    if (std::memcmp(bytes_.data(), want, 8) != 0) fail("magic", std::string("not a ") + format + " file");
    pos_ += 8;
}

void le_reader::finish() const {
    if (remaining() != 0) fail("end", std::to_string(remaining()) + " trailing bytes after the last field");
}

std::string num9(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

void write_file_atomic(const std::string & path, std::string_view bytes) {
    auto io_fail = [&](const std::string & what) {
        throw error(status::io_error, path + ": " + what + ": " + std::strerror(errno));
    };
    const std::string tmp = path + ".tmp";
    const int         fd  = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) io_fail("cannot create " + tmp);
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            const int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            errno = e;
            io_fail("write failed");
        }
        done += size_t(w);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        errno = e;
        io_fail("fsync/close failed");
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        errno = e;
        io_fail("rename failed");
    }
    const size_t      slash = path.find_last_of('/');
    const std::string dir   = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    const int         dfd   = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

} // namespace mb
