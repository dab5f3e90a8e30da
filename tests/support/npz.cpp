// .npz layout (PKWARE zip, as numpy.savez writes it):
//   per member: local header "PK\3\4" (30 bytes + name + extra) then the stored bytes
//   central directory: one "PK\1\2" record per member (46 bytes + name + extra + comment)
//   end of central directory "PK\5\6" (22 bytes + comment), optionally preceded by the
//   zip64 end record "PK\6\6" and its locator "PK\6\7" when counts/offsets overflow
// only method 0 (stored) is accepted; every member's crc32 is checked.
// .npy layout: "\x93NUMPY", major, minor, header length (u16 for v1, u32 for v2/v3),
// a python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (a, b), }
// padded with spaces and a newline, then the data (C order, or first axis fastest
// when fortran_order is True: converted to C order on load).
#include "support/npz.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace mb::test {

namespace {

[[noreturn]] void fail(const std::string & what, const std::string & msg) {
    throw std::runtime_error(what + ": " + msg);
}

uint16_t rd16(const uint8_t * p) {
    return uint16_t(p[0] | (p[1] << 8));
}
uint32_t rd32(const uint8_t * p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t rd64(const uint8_t * p) {
    return uint64_t(rd32(p)) | (uint64_t(rd32(p + 4)) << 32);
}

uint32_t crc32(const uint8_t * data, size_t n) {
    static uint32_t table[256];
    static bool init = false;
    if (!init) {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        init = true;
    }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

size_t dtype_size(npy_dtype t) {
    switch (t) {
        case npy_dtype::NPY_DTYPE_F32: return 4;
        case npy_dtype::NPY_DTYPE_F64: return 8;
        case npy_dtype::NPY_DTYPE_I32: return 4;
        case npy_dtype::NPY_DTYPE_I64: return 8;
        case npy_dtype::NPY_DTYPE_BOOL: return 1;
    }
    return 0;
}

// a minimal scanner for the npy header dict
struct header_scanner {
    const std::string & s;
    const std::string & what;
    size_t              i = 0;

    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) ++i;
    }
    bool peek(char c) {
        ws();
        return i < s.size() && s[i] == c;
    }
    void expect(char c) {
        ws();
        if (i >= s.size() || s[i] != c) fail(what, std::string("npy header: expected '") + c + "'");
        ++i;
    }
    std::string str() {
        ws();
        if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail(what, "npy header: expected a string");
        char q = s[i++];
        size_t start = i;
        while (i < s.size() && s[i] != q) ++i;
        if (i >= s.size()) fail(what, "npy header: unterminated string");
        return s.substr(start, i++ - start);
    }
    std::string word() {
        ws();
        size_t start = i;
        while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
        if (start == i) fail(what, "npy header: expected a value");
        return s.substr(start, i - start);
    }
};

} // namespace

int64_t npy_array::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::vector<double> npy_array::to_f64() const {
    const int64_t n = n_elements();
    std::vector<double> out(size_t(n), 0.0);
    const uint8_t * p = bytes.data();
    for (int64_t k = 0; k < n; ++k) {
        switch (type) {
            case npy_dtype::NPY_DTYPE_F32: { float v; std::memcpy(&v, p + 4 * k, 4); out[k] = v; break; }
            case npy_dtype::NPY_DTYPE_F64: { double v; std::memcpy(&v, p + 8 * k, 8); out[k] = v; break; }
            case npy_dtype::NPY_DTYPE_I32: { int32_t v; std::memcpy(&v, p + 4 * k, 4); out[k] = double(v); break; }
            case npy_dtype::NPY_DTYPE_I64: { int64_t v; std::memcpy(&v, p + 8 * k, 8); out[k] = double(v); break; }
            case npy_dtype::NPY_DTYPE_BOOL: out[k] = p[k] ? 1.0 : 0.0; break;
        }
    }
    return out;
}

std::vector<float> npy_array::to_f32() const {
    if (type == npy_dtype::NPY_DTYPE_F32) {
        std::vector<float> out(static_cast<size_t>(n_elements()));
        if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
        return out;
    }
    std::vector<double> d = to_f64();
    return std::vector<float>(d.begin(), d.end());
}

std::vector<int64_t> npy_array::to_i64() const {
    const int64_t n = n_elements();
    std::vector<int64_t> out(size_t(n), 0);
    if (type == npy_dtype::NPY_DTYPE_I64) {
        if (n) std::memcpy(out.data(), bytes.data(), size_t(n) * 8);
        return out;
    }
    if (type == npy_dtype::NPY_DTYPE_I32) {
        for (int64_t k = 0; k < n; ++k) {
            int32_t v;
            std::memcpy(&v, bytes.data() + 4 * k, 4);
            out[k] = v;
        }
        return out;
    }
    std::vector<double> d = to_f64();
    for (int64_t k = 0; k < n; ++k) {
        if (!std::isfinite(d[k]) || d[k] != std::floor(d[k]) || std::fabs(d[k]) > 9.0e15) {
            throw std::runtime_error("npy: non-integral value in an integer conversion");
        }
        out[k] = int64_t(d[k]);
    }
    return out;
}

npy_array npy_parse(const uint8_t * data, size_t size, const std::string & what) {
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (size < 10 || std::memcmp(data, magic, 6) != 0) fail(what, "not an npy file (bad magic)");
    const uint8_t major = data[6];
    size_t hlen = 0, hstart = 0;
    if (major == 1) {
        hlen   = rd16(data + 8);
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) fail(what, "truncated npy header");
        hlen   = rd32(data + 8);
        hstart = 12;
    } else {
        fail(what, "unsupported npy version " + std::to_string(major));
    }
    if (hlen > size - hstart) fail(what, "npy header runs past the end of the data");
    const std::string header(reinterpret_cast<const char *>(data + hstart), hlen);

    npy_array arr;
    std::string descr;
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    header_scanner sc{header, what};
    sc.expect('{');
    while (!sc.peek('}')) {
        const std::string key = sc.str();
        sc.expect(':');
        if (key == "descr") {
            if (have_descr) fail(what, "npy header: duplicate 'descr'");
            descr = sc.str();
            have_descr = true;
        } else if (key == "fortran_order") {
            if (have_order) fail(what, "npy header: duplicate 'fortran_order'");
            const std::string v = sc.word();
            if (v != "True" && v != "False") fail(what, "npy header: bad fortran_order '" + v + "'");
            fortran = v == "True";
            have_order = true;
        } else if (key == "shape") {
            if (have_shape) fail(what, "npy header: duplicate 'shape'");
            sc.expect('(');
            while (!sc.peek(')')) {
                const std::string d = sc.word();
                if (d.size() > 12) fail(what, "npy header: dimension too large");
                for (char c : d) {
                    if (c < '0' || c > '9') fail(what, "npy header: bad dimension '" + d + "'");
                }
                arr.shape.push_back(std::stoll(d));
                if (arr.shape.size() > 8) fail(what, "npy header: too many dimensions");
                if (sc.peek(',')) sc.expect(',');
                else break;
            }
            sc.expect(')');
            have_shape = true;
        } else {
            fail(what, "npy header: unknown key '" + key + "'");
        }
        if (sc.peek(',')) sc.expect(',');
        else break;
    }
    sc.expect('}');
    if (!have_descr || !have_order || !have_shape) fail(what, "npy header lacks descr, fortran_order or shape");

    if (descr == "<f4") arr.type = npy_dtype::NPY_DTYPE_F32;
    else if (descr == "<f8") arr.type = npy_dtype::NPY_DTYPE_F64;
    else if (descr == "<i4") arr.type = npy_dtype::NPY_DTYPE_I32;
    else if (descr == "<i8") arr.type = npy_dtype::NPY_DTYPE_I64;
    else if (descr == "|b1") arr.type = npy_dtype::NPY_DTYPE_BOOL;
    else fail(what, "unsupported npy dtype '" + descr + "'");

    // bound the element count by the bytes present before allocating
    const size_t avail = size - hstart - hlen;
    const size_t esz = dtype_size(arr.type);
    uint64_t n = 1;
    for (int64_t d : arr.shape) {
        if (d != 0 && n > avail / size_t(d)) fail(what, "npy data shorter than its shape says");
        n *= uint64_t(d);
    }
    if (n * esz != avail) {
        fail(what, "npy data has " + std::to_string(avail) + " bytes, shape needs " + std::to_string(n * esz));
    }
    const uint8_t * p = data + hstart + hlen;
    arr.bytes.assign(p, p + avail);
    if (fortran && arr.shape.size() > 1 && n > 0) {
        // fortran order (first axis fastest) → C order
        const size_t rank = arr.shape.size();
        std::vector<uint64_t> fstride(rank);
        uint64_t st = 1;
        for (size_t a = 0; a < rank; ++a) {
            fstride[a] = st;
            st *= uint64_t(arr.shape[a]);
        }
        std::vector<int64_t> idx(rank, 0);
        for (uint64_t c = 0; c < n; ++c) {
            uint64_t src = 0;
            for (size_t a = 0; a < rank; ++a) src += uint64_t(idx[a]) * fstride[a];
            std::memcpy(arr.bytes.data() + c * esz, p + src * esz, esz);
            for (size_t a = rank; a-- > 0;) {
                if (++idx[a] < arr.shape[a]) break;
                idx[a] = 0;
            }
        }
    }
    if (arr.type == npy_dtype::NPY_DTYPE_BOOL) {
        for (uint8_t b : arr.bytes) {
            if (b > 1) fail(what, "npy bool array holds a byte other than 0/1");
        }
    }
    return arr;
}

npz_file::npz_file(const std::string & path) : path_(path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(path, "cannot open");
    f.seekg(0, std::ios::end);
    const std::streamoff fsize = f.tellg();
    if (fsize < 22) fail(path, "too small to be a zip archive");
    if (fsize > (std::streamoff(1) << 34)) fail(path, "archive larger than 16 GiB");
    f.seekg(0);
    std::vector<uint8_t> buf(static_cast<size_t>(fsize));
    f.read(reinterpret_cast<char *>(buf.data()), fsize);
    if (!f) fail(path, "read error");
    const size_t size = buf.size();
    const uint8_t * b = buf.data();

    // end of central directory: the last "PK\5\6" within the final 64 KiB + 22 bytes
    size_t eocd = SIZE_MAX;
    const size_t lo = size > 65557 ? size - 65557 : 0;
    for (size_t i = size - 22 + 1; i-- > lo;) {
        if (rd32(b + i) == 0x06054b50u && i + 22 + rd16(b + i + 20) == size) {
            eocd = i;
            break;
        }
    }
    if (eocd == SIZE_MAX) fail(path, "no zip end-of-central-directory record");
    if (rd16(b + eocd + 4) != 0 || rd16(b + eocd + 6) != 0) fail(path, "multi-disk zip archives are not supported");
    uint64_t n_entries = rd16(b + eocd + 10);
    uint64_t cd_size   = rd32(b + eocd + 12);
    uint64_t cd_off    = rd32(b + eocd + 16);
    if (n_entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        if (eocd < 20 || rd32(b + eocd - 20) != 0x07064b50u) fail(path, "zip64 locator missing");
        const uint64_t z64 = rd64(b + eocd - 20 + 8);
        if (z64 > size - 56 || rd32(b + z64) != 0x06064b50u) fail(path, "bad zip64 end record");
        n_entries = rd64(b + z64 + 32);
        cd_size   = rd64(b + z64 + 40);
        cd_off    = rd64(b + z64 + 48);
    }
    if (cd_off > size || cd_size > size - cd_off) fail(path, "central directory outside the file");
    if (n_entries > cd_size / 46) fail(path, "central directory entry count exceeds its size");

    size_t pos = size_t(cd_off);
    const size_t cd_end = size_t(cd_off + cd_size);
    for (uint64_t e = 0; e < n_entries; ++e) {
        if (cd_end - pos < 46 || rd32(b + pos) != 0x02014b50u) fail(path, "bad central directory record");
        const uint16_t flags  = rd16(b + pos + 8);
        const uint16_t method = rd16(b + pos + 10);
        const uint32_t crc    = rd32(b + pos + 16);
        uint64_t csize        = rd32(b + pos + 20);
        uint64_t usize        = rd32(b + pos + 24);
        const uint16_t nlen   = rd16(b + pos + 28);
        const uint16_t xlen   = rd16(b + pos + 30);
        const uint16_t clen   = rd16(b + pos + 32);
        uint64_t loff         = rd32(b + pos + 42);
        if (size_t(46) + nlen + xlen + clen > cd_end - pos) fail(path, "central directory record runs past its end");
        const std::string name(reinterpret_cast<const char *>(b + pos + 46), nlen);
        const std::string what = path + ":" + name;
        if (flags & 1) fail(what, "encrypted zip members are not supported");
        if (method != 0) fail(what, "compressed zip members are not supported (method " + std::to_string(method) + ")");

        // zip64 extra field supplies whichever of usize, csize, loff overflowed, in that order
        const uint8_t * x = b + pos + 46 + nlen;
        for (size_t k = 0; k + 4 <= xlen;) {
            const uint16_t id = rd16(x + k), len = rd16(x + k + 2);
            if (k + 4 + len > xlen) fail(what, "bad zip extra field");
            if (id == 0x0001) {
                size_t q = k + 4;
                auto take = [&](uint64_t & v) {
                    if (v != 0xFFFFFFFFu) return;
                    if (q + 8 > k + 4 + len) fail(what, "short zip64 extra field");
                    v = rd64(x + q);
                    q += 8;
                };
                take(usize);
                take(csize);
                take(loff);
            }
            k += 4 + size_t(len);
        }
        if (csize != usize) fail(what, "stored member with differing sizes");
        if (loff > size - 30 || rd32(b + loff) != 0x04034b50u) fail(what, "bad local file header");
        const uint64_t data_off = loff + 30 + rd16(b + loff + 26) + rd16(b + loff + 28);
        if (data_off > size || usize > size - data_off) fail(what, "member data outside the file");
        if (crc32(b + data_off, size_t(usize)) != crc) fail(what, "crc32 mismatch");

        if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npy") != 0) fail(what, "member is not a .npy file");
        const std::string key = name.substr(0, name.size() - 4);
        if (arrays_.count(key)) fail(what, "duplicate member");
        arrays_.emplace(key, npy_parse(b + data_off, size_t(usize), what));
        pos += 46 + size_t(nlen) + xlen + clen;
    }
}

bool npz_file::has(const std::string & name) const {
    return arrays_.count(name) != 0;
}

const npy_array & npz_file::get(const std::string & name) const {
    auto it = arrays_.find(name);
    if (it == arrays_.end()) fail(path_, "no array '" + name + "'");
    return it->second;
}

const npy_array & npz_file::get(const std::string & name, const std::vector<int64_t> & shape) const {
    const npy_array & a = get(name);
    if (a.shape != shape) {
        std::string got, want;
        for (int64_t d : a.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
        for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
        fail(path_, "array '" + name + "' has shape [" + got + "], expected [" + want + "]");
    }
    return a;
}

std::vector<std::string> npz_file::names() const {
    std::vector<std::string> out;
    for (const auto & kv : arrays_) out.push_back(kv.first);
    return out;
}

} // namespace mb::test
