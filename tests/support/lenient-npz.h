// test-only: the numeric members of an .npz whose other members (numpy unicode
// strings, which support/npz.h rejects) are skipped; walks the zip central directory
#pragma once

#include "support/npz.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb::test {

inline std::map<std::string, npy_array> npz_numeric(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto rd16 = [&](size_t o) -> uint32_t {
        if (o + 2 > b.size()) throw std::runtime_error(path + ": truncated zip");
        return b[o] | (b[o + 1] << 8);
    };
    auto rd32 = [&](size_t o) -> uint32_t {
        return rd16(o) | (rd16(o + 2) << 16);
    };
    // end of central directory (numpy writes no archive comment)
    if (b.size() < 22 || rd32(b.size() - 22) != 0x06054b50u) throw std::runtime_error(path + ": no zip end record");
    const size_t eocd  = b.size() - 22;
    const size_t count = rd16(eocd + 10);
    size_t       cd    = rd32(eocd + 16);
    std::map<std::string, npy_array> out;
    for (size_t i = 0; i < count; ++i) {
        if (rd32(cd) != 0x02014b50u) throw std::runtime_error(path + ": bad central directory");
        const uint32_t method = rd16(cd + 10);
        const uint32_t csize  = rd32(cd + 20);
        const uint32_t nlen = rd16(cd + 28), xlen = rd16(cd + 30), clen = rd16(cd + 32);
        const uint32_t local = rd32(cd + 42);
        if (cd + 46 + nlen > b.size()) throw std::runtime_error(path + ": truncated zip");
        std::string name(reinterpret_cast<const char *>(&b[cd + 46]), nlen);
        cd += 46 + nlen + xlen + clen;
        if (method != 0 || rd32(local) != 0x04034b50u) throw std::runtime_error(path + ": unsupported member " + name);
        const size_t data = local + 30 + rd16(local + 26) + rd16(local + 28);
        if (data + csize > b.size()) throw std::runtime_error(path + ": truncated member " + name);
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
        try {
            out[name] = npy_parse(&b[data], csize, path + ":" + name);
        } catch (const std::runtime_error & e) {
            if (!std::strstr(e.what(), "unsupported npy dtype")) throw;
        }
    }
    return out;
}

} // namespace mb::test
