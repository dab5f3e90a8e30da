// helpers for the format tests: a temp directory, whole-file I/O and a little-endian
// byte builder for hand-made GGUF files
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mb::test {

// a fresh directory under $TMPDIR, removed with everything in it on destruction
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "mb-format-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file(const std::string & name) const { return (path / name).string(); }
};

inline std::string read_bytes(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string & path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

// little-endian GGUF byte builder
struct gguf_bytes {
    std::string b;
    gguf_bytes & u8(uint8_t v) { b.push_back(static_cast<char>(v)); return *this; }
    gguf_bytes & u32(uint32_t v) { b.append(reinterpret_cast<const char *>(&v), 4); return *this; }
    gguf_bytes & u64(uint64_t v) { b.append(reinterpret_cast<const char *>(&v), 8); return *this; }
    gguf_bytes & f32(float v) { b.append(reinterpret_cast<const char *>(&v), 4); return *this; }
    gguf_bytes & raw(std::string_view s) { b.append(s); return *this; }
    gguf_bytes & str(std::string_view s) { return u64(s.size()).raw(s); }
    gguf_bytes & header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    gguf_bytes & kv_str(std::string_view k, std::string_view v) { return str(k).u32(8).str(v); }
    gguf_bytes & kv_u32(std::string_view k, uint32_t v) { return str(k).u32(4).u32(v); }
    // a tensor info with n_dims = 1
    gguf_bytes & info1(std::string_view name, uint64_t ne0, uint32_t type, uint64_t offset) {
        return str(name).u32(1).u64(ne0).u32(type).u64(offset);
    }
    gguf_bytes & pad(size_t align = 32) {
        b.append((align - b.size() % align) % align, '\0');
        return *this;
    }
    gguf_bytes & zeros(size_t n) { b.append(n, '\0'); return *this; }
};

} // namespace mb::test
