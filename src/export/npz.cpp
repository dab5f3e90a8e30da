// .npz reader and writer (see npz.h)
#include "export/npz.h"

#include "format/error.h"

#include <cstring>

namespace mb {

namespace {

constexpr uint32_t k_local_sig   = 0x04034b50;
constexpr uint32_t k_central_sig = 0x02014b50;
constexpr uint32_t k_end_sig     = 0x06054b50;
constexpr size_t   k_local_size  = 30, k_central_size = 46, k_end_size = 22;
constexpr uint16_t k_dos_date    = (1 << 5) | 1;   // 1980-01-01, 00:00: no timestamps

void put16(std::string & s, uint32_t v) {
    s += char(v & 0xff);
    s += char((v >> 8) & 0xff);
}
void put32(std::string & s, uint32_t v) {
    put16(s, v & 0xffff);
    put16(s, v >> 16);
}
uint32_t get16(const std::string & s, size_t at) {
    return uint32_t(uint8_t(s[at])) | uint32_t(uint8_t(s[at + 1])) << 8;
}
uint32_t get32(const std::string & s, size_t at) {
    return get16(s, at) | get16(s, at + 2) << 16;
}

std::string shape_text(const std::vector<int64_t> & shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
    return s + ")";
}

std::string npy_encode(const npy_array & a) {
    std::string dict = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shape_text(a.shape) + ", }";
    // magic (6) + version (2) + length (2) + dict + padding + '\n' is a multiple of 64
    size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::string s = "\x93NUMPY";
    s += char(1);
    s += char(0);
    put16(s, uint32_t(dict.size()));
    return s + dict + a.data;
}

[[noreturn]] void bad(const std::string & origin, const std::string & what) {
    fail(status::invalid_format, origin + ": " + what);
}

// the value text after "'key': " in a numpy header dict, up to the next top-level ',' or '}'
std::string dict_value(const std::string & dict, const std::string & key, const std::string & where) {
    const std::string k   = "'" + key + "':";
    const size_t      pos = dict.find(k);
    if (pos == std::string::npos || dict.find(k, pos + 1) != std::string::npos) bad(where, "header needs exactly one '" + key + "'");
    size_t i = pos + k.size();
    while (i < dict.size() && dict[i] == ' ') ++i;
    size_t j = i;
    int    depth = 0;
    while (j < dict.size() && (depth > 0 || (dict[j] != ',' && dict[j] != '}'))) {
        if (dict[j] == '(') ++depth;
        if (dict[j] == ')') --depth;
        ++j;
    }
    return dict.substr(i, j - i);
}

npy_array npy_decode(const std::string & b, const std::string & where) {
    if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) bad(where, "not a .npy file (magic)");
    const int major = uint8_t(b[6]), minor = uint8_t(b[7]);
    if (!((major == 1 || major == 2 || major == 3) && minor == 0)) bad(where, ".npy version " + std::to_string(major) + "." + std::to_string(minor) + " unsupported");
    const size_t len_size = major == 1 ? 2 : 4;
    if (b.size() < 8 + len_size) bad(where, "truncated .npy header");
    const uint64_t hlen  = major == 1 ? get16(b, 8) : get32(b, 8);
    const uint64_t start = 8 + len_size;
    if (hlen > b.size() - start) bad(where, ".npy header length " + std::to_string(hlen) + " past the entry");
    const std::string dict = b.substr(size_t(start), size_t(hlen));
    if (dict.empty() || dict.back() != '\n' || dict.front() != '{') bad(where, ".npy header is not a dict ending in a newline");
    npy_array a;
    std::string descr = dict_value(dict, "descr", where);
    if (descr.size() < 3 || descr.front() != '\'' || descr.back() != '\'') bad(where, "bad descr " + descr);
    a.descr = descr.substr(1, descr.size() - 2);
    const size_t item = npy_itemsize(a.descr);
    if (item == 0) bad(where, "dtype '" + a.descr + "' unsupported (little-endian f4, f8, i4, i8, U)");
    if (dict_value(dict, "fortran_order", where) != "False") bad(where, "fortran_order must be False");
    const std::string shape = dict_value(dict, "shape", where);
    if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') bad(where, "bad shape " + shape);
    uint64_t count = 1;
    size_t   i     = 1;
    while (i + 1 < shape.size()) {
        while (i + 1 < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
        if (i + 1 >= shape.size()) break;
        uint64_t d = 0;
        size_t   digits = 0;
        while (i + 1 < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
            if (d > (uint64_t(1) << 40)) bad(where, "shape dimension too large");
            d = d * 10 + uint64_t(shape[i++] - '0');
            ++digits;
        }
        if (digits == 0) bad(where, "bad shape " + shape);
        if (d != 0 && count > (uint64_t(1) << 40) / d) bad(where, "shape too large");
        count *= d;
        a.shape.push_back(int64_t(d));
    }
    const uint64_t data_size = b.size() - start - hlen;
    if (count > data_size / item || count * item != data_size) {
        bad(where, "shape " + shape + " of " + a.descr + " needs " + std::to_string(count * item) + " bytes, the entry has " +
                       std::to_string(data_size));
    }
    a.data = b.substr(size_t(start + hlen));
    return a;
}

} // namespace

size_t npy_itemsize(const std::string & d) {
    if (d == "<f4" || d == "<i4") return 4;
    if (d == "<f8" || d == "<i8") return 8;
    if (d.size() > 2 && d.compare(0, 2, "<U") == 0) {
        size_t n = 0;
        for (size_t i = 2; i < d.size(); ++i) {
            if (d[i] < '0' || d[i] > '9' || n > 4096) return 0;
            n = n * 10 + size_t(d[i] - '0');
        }
        return n == 0 || n > 4096 ? 0 : 4 * n;
    }
    return 0;
}

uint32_t crc32_bytes(const void * data, size_t size) {
    static uint32_t table[256];
    static bool     init = [] {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        return true;
    }();
    (void) init;
    uint32_t        c = 0xffffffffu;
    const uint8_t * p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

std::string npz_encode(const std::map<std::string, npy_array> & arrays) {
    std::string out, central;
    for (const auto & [key, a] : arrays) {
        const std::string name = key + ".npy";
        const std::string body = npy_encode(a);
        MB_ASSERT(body.size() < 0xffffffffu && out.size() < 0xffffffffu, "npz entry too large for zip32");
        const uint32_t crc    = crc32_bytes(body.data(), body.size());
        const uint32_t offset = uint32_t(out.size());
        auto header = [&](std::string & s, bool is_central) {
            put32(s, is_central ? k_central_sig : k_local_sig);
            if (is_central) put16(s, 20);   // made by
            put16(s, 20);                   // version needed
            put16(s, 0);                    // flags
            put16(s, 0);                    // stored
            put16(s, 0);                    // time
            put16(s, k_dos_date);
            put32(s, crc);
            put32(s, uint32_t(body.size()));
            put32(s, uint32_t(body.size()));
            put16(s, uint32_t(name.size()));
            put16(s, 0);   // extra
            if (is_central) {
                put16(s, 0);   // comment
                put16(s, 0);   // disk
                put16(s, 0);   // internal attributes
                put32(s, 0);   // external attributes
                put32(s, offset);
            }
            s += name;
        };
        header(out, false);
        out += body;
        header(central, true);
    }
    const uint32_t dir_offset = uint32_t(out.size());
    out += central;
    put32(out, k_end_sig);
    put16(out, 0);
    put16(out, 0);
    put16(out, uint32_t(arrays.size()));
    put16(out, uint32_t(arrays.size()));
    put32(out, uint32_t(central.size()));
    put32(out, dir_offset);
    put16(out, 0);
    return out;
}

std::map<std::string, npy_array> npz_decode(const std::string & b, const std::string & origin) {
    if (b.size() < k_end_size) bad(origin, "too small for a zip file (" + std::to_string(b.size()) + " bytes)");
    const size_t end = b.size() - k_end_size;
    if (get32(b, end) != k_end_sig) bad(origin, "no zip end record at the end (a comment or trailing bytes?)");
    if (get16(b, end + 4) != 0 || get16(b, end + 6) != 0) bad(origin, "multi-disk zip unsupported");
    const uint32_t entries = get16(b, end + 10);
    if (get16(b, end + 8) != entries) bad(origin, "zip entry counts disagree");
    const uint64_t dir_size = get32(b, end + 12), dir_offset = get32(b, end + 16);
    if (get16(b, end + 20) != 0) bad(origin, "zip comment unsupported");
    if (dir_offset > end || dir_size != end - dir_offset) bad(origin, "zip central directory does not end at the end record");
    std::map<std::string, npy_array> out;
    size_t                           at = size_t(dir_offset), data_end = 0;
    for (uint32_t e = 0; e < entries; ++e) {
        if (at + k_central_size > end || get32(b, at) != k_central_sig) bad(origin, "bad central directory entry " + std::to_string(e));
        const uint32_t flags = get16(b, at + 8), method = get16(b, at + 10), crc = get32(b, at + 16);
        const uint64_t csize = get32(b, at + 20), usize = get32(b, at + 24);
        const size_t   nlen = get16(b, at + 28), xlen = get16(b, at + 30), clen = get16(b, at + 32);
        const uint64_t local = get32(b, at + 42);
        if (at + k_central_size + nlen + xlen + clen > end) bad(origin, "central directory entry " + std::to_string(e) + " past the directory");
        const std::string name = b.substr(at + k_central_size, nlen);
        const std::string where = origin + ": " + name;
        if (method == 8) bad(where, "deflate-compressed entry (np.savez_compressed): write it with np.savez");
        if (method != 0) bad(where, "compression method " + std::to_string(method) + " unsupported");
        if (flags & 0x41) bad(where, "encrypted entry");
        if (csize != usize) bad(where, "stored entry with different sizes");
        if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npy") != 0) bad(where, "entry is not a .npy file");
        // the local header must agree with the directory
        if (local != data_end || local + k_local_size > dir_offset || get32(b, size_t(local)) != k_local_sig) {
            bad(where, "local header not where the directory says (entries must be contiguous, in order)");
        }
        const size_t   l     = size_t(local);
        const size_t   lnlen = get16(b, l + 26), lxlen = get16(b, l + 28);
        if (get16(b, l + 8) != method || get32(b, l + 14) != crc || get32(b, l + 18) != csize || get32(b, l + 22) != usize ||
            lnlen != nlen || b.compare(l + k_local_size, nlen, name) != 0) {
            bad(where, "local header disagrees with the central directory");
        }
        const uint64_t data = local + k_local_size + lnlen + lxlen;
        if (data > dir_offset || csize > dir_offset - data) bad(where, "entry data past the central directory");
        const std::string body = b.substr(size_t(data), size_t(csize));
        if (crc32_bytes(body.data(), body.size()) != crc) bad(where, "crc32 mismatch");
        const std::string key = name.substr(0, name.size() - 4);
        if (out.count(key)) bad(where, "duplicate entry");
        out.emplace(key, npy_decode(body, where));
        data_end = size_t(data + csize);
        at += k_central_size + nlen + xlen + clen;
    }
    if (data_end != dir_offset) bad(origin, "bytes between the last entry and the central directory");
    return out;
}

} // namespace mb
