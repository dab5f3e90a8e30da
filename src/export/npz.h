// NumPy .npz archives: a zip of .npy entries. The writer makes a stored (uncompressed) zip
// deterministic byte for byte (no timestamps); the reader takes stored entries only (np.savez;
// np.savez_compressed's deflate is refused by name) and validates every byte:
//   local file header  "PK\3\4", version 20, flags 0, method 0, time/date, crc32, sizes, name, extra
//   data               the .npy file: "\x93NUMPY", version 1.0 (u16 header length) or 2.0/3.0 (u32),
//                      a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (F, 36), }
//                      padded with spaces to 64 bytes and ended by '\n', then the C-order array
//   central directory  "PK\1\2" per entry (agreeing with its local header), then "PK\5\6" with the
//                      entry count, directory size and offset; nothing may follow it (a comment is refused)
// Every offset and size is bounded by the file; crc32 is checked; names are unique and end in ".npy"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mb {

struct npy_array {
    std::string          descr;     // numpy dtype string: "<f8", "<f4", "<i8", "<U24", ...
    std::vector<int64_t> shape;     // () for a scalar
    std::string          data;      // raw C-order bytes, product(shape) * itemsize
};

// item size of a supported descr ("<f4" 4, "<f8" 8, "<i4" 4, "<i8" 8, "<U n" 4 n), 0 when unsupported
size_t npy_itemsize(const std::string & descr);

// the .npz image of `arrays` (entry name = key + ".npy", in key order)
std::string npz_encode(const std::map<std::string, npy_array> & arrays);

// parses an .npz image; `origin` names it in errors. Throws mb::error (status::invalid_format)
std::map<std::string, npy_array> npz_decode(const std::string & bytes, const std::string & origin);

// crc32 (zip's, polynomial 0xEDB88320)
uint32_t crc32_bytes(const void * data, size_t size);

} // namespace mb
