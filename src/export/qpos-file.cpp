// qpos CSV and NPZ files (see qpos-file.h)
#include "export/qpos-file.h"

#include "export/npz.h"
#include "export/qpos-resample.h"
#include "format/error.h"
#include "format/regular-file.h"
#include "motion/mjcf.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unistd.h>

namespace mb {

namespace {

constexpr uint64_t k_max_file_bytes = uint64_t(1) << 30;   // 1 GiB: ~2.5M CSV frames

const char * order_name(quat_order o) {
    return o == quat_order::wxyz ? "wxyz" : "xyzw";
}

// rows [F, 36] w first → the file's column order
std::vector<double> to_file_order(const std::vector<double> & q, quat_order order) {
    std::vector<double> out = q;
    if (order == quat_order::xyzw) {
        for (size_t f = 0; f < q.size() / k_qpos_dim; ++f) {
            double * r = &out[f * k_qpos_dim];
            const double w = r[3];
            r[3] = r[4];
            r[4] = r[5];
            r[5] = r[6];
            r[6] = w;
        }
    }
    return out;
}

// a row in file order → w first, in place
void from_file_order(double * r, quat_order order) {
    if (order == quat_order::xyzw) {
        const double w = r[6];
        r[6] = r[5];
        r[5] = r[4];
        r[4] = r[3];
        r[3] = w;
    }
}

// the checks every clip passes before it is written or returned: finite, non-zero quaternions
void check_clip(const std::vector<double> & q, const std::string & origin, status code) {
    for (size_t f = 0; f < q.size() / k_qpos_dim; ++f) {
        const double * r = &q[f * k_qpos_dim];
        for (int c = 0; c < k_qpos_dim; ++c) {
            if (!std::isfinite(r[c])) fail(code, origin + ": frame " + std::to_string(f) + ", column " + std::to_string(c) + ": non-finite value");
        }
        if (std::sqrt(r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6]) < 1e-6) {
            fail(code, origin + ": frame " + std::to_string(f) + ": zero root quaternion");
        }
    }
}

std::vector<double> resample_checked(const float * qpos, int64_t frames, const qpos_write_options & opt) {
    if (!qpos || frames < 1) fail(status::invalid_argument, "a qpos clip needs at least 1 frame");
    if (opt.rate != 30 && opt.rate != 50) fail(status::invalid_argument, "qpos rate must be 30 or 50 Hz, not " + std::to_string(opt.rate));
    std::vector<double> in(qpos, qpos + frames * k_qpos_dim);
    check_clip(in, "qpos", status::invalid_argument);
    if (resampled_frames(frames, opt.rate) < 1) fail(status::invalid_argument, "a 1-frame clip has no 50 Hz frame");
    return qpos_resample(qpos, frames, opt.rate);
}

std::string utf32(const std::string & s, size_t width) {
    std::string out(width * 4, '\0');
    for (size_t i = 0; i < s.size() && i < width; ++i) out[i * 4] = s[i];
    return out;
}

std::string from_utf32(const std::string & data, size_t offset, size_t width, const std::string & where) {
    std::string s;
    for (size_t i = 0; i < width; ++i) {
        const char * p = data.data() + offset + i * 4;
        const uint32_t c = uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 | uint32_t(uint8_t(p[2])) << 16 |
                           uint32_t(uint8_t(p[3])) << 24;
        if (c == 0) break;
        if (c > 0x7e || c < 0x20) fail(status::invalid_format, where + ": non-ASCII text");
        s += char(c);
    }
    return s;
}

// a header cell: starts with a letter and is not nan / inf / infinity
bool is_name(const std::string & cell) {
    if (cell.empty() || !std::isalpha(uint8_t(cell[0]))) return false;
    std::string l;
    for (char c : cell) l += char(std::tolower(uint8_t(c)));
    return l != "nan" && l != "inf" && l != "infinity";
}

} // namespace

std::vector<std::string> qpos_column_names(quat_order order) {
    std::vector<std::string> n = {"root_x", "root_y", "root_z"};
    if (order == quat_order::wxyz) {
        n.insert(n.end(), {"root_qw", "root_qx", "root_qy", "root_qz"});
    } else {
        n.insert(n.end(), {"root_qx", "root_qy", "root_qz", "root_qw"});
    }
    for (const mjcf_hinge & h : mjcf_g1().hinges) n.push_back(h.joint);
    return n;
}

void write_file_atomic(const std::string & path, const std::string & bytes) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE *            f   = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(status::io_error, "cannot create '" + tmp + "': " + std::strerror(errno));
    const bool ok     = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = std::strerror(errno);
        std::remove(tmp.c_str());
        fail(status::io_error, "cannot write '" + path + "': " + err);
    }
}

std::string qpos_csv_text(const std::vector<double> & qpos, const qpos_write_options & opt) {
    std::string s;
    s.reserve(qpos.size() * 14 + 1024);
    if (opt.header) {
        const std::vector<std::string> names = qpos_column_names(opt.order);
        for (size_t c = 0; c < names.size(); ++c) s += (c ? "," : "") + names[c];
        s += '\n';
    }
    const std::vector<double> rows = to_file_order(qpos, opt.order);
    char                      buf[40];
    for (size_t i = 0; i < rows.size(); ++i) {
        // 9 significant digits: every float32 (the model's precision) comes back bit-exact
        std::snprintf(buf, sizeof buf, "%.9g", rows[i]);
        s += buf;
        s += (i + 1) % k_qpos_dim ? ',' : '\n';
    }
    return s;
}

std::string qpos_npz_bytes(const std::vector<double> & qpos, const qpos_write_options & opt) {
    std::map<std::string, npy_array> a;
    const std::vector<double>        rows = to_file_order(qpos, opt.order);
    a["qpos"] = {"<f8", {int64_t(rows.size() / k_qpos_dim), k_qpos_dim},
                 std::string(reinterpret_cast<const char *>(rows.data()), rows.size() * sizeof(double))};
    const int64_t fps = opt.rate;
    a["fps"]          = {"<i8", {}, std::string(reinterpret_cast<const char *>(&fps), sizeof fps)};
    a["quat_order"]   = {"<U4", {}, utf32(order_name(opt.order), 4)};
    size_t width = 1;
    for (const mjcf_hinge & h : mjcf_g1().hinges) width = std::max(width, h.joint.size());
    std::string names;
    for (const mjcf_hinge & h : mjcf_g1().hinges) names += utf32(h.joint, width);
    a["joint_names"] = {"<U" + std::to_string(width), {k_qpos_hinges}, names};
    return npz_encode(a);
}

void write_qpos_csv(const std::string & path, const float * qpos, int64_t frames, const qpos_write_options & opt) {
    write_file_atomic(path, qpos_csv_text(resample_checked(qpos, frames, opt), opt));
}

void write_qpos_npz(const std::string & path, const float * qpos, int64_t frames, const qpos_write_options & opt) {
    write_file_atomic(path, qpos_npz_bytes(resample_checked(qpos, frames, opt), opt));
}

qpos_clip parse_qpos_csv(const std::string & text, const std::string & origin, int fps, quat_order order, bool order_from_header) {
    qpos_clip clip;
    clip.fps     = fps;
    size_t  pos  = 0;
    int64_t line = 0;
    bool    first = true;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        std::string row = text.substr(pos, eol - pos);
        pos = eol + 1;
        ++line;
        if (!row.empty() && row.back() == '\r') row.pop_back();
        if (row.empty()) continue;
        const std::string where = origin + ":" + std::to_string(line);
        // split into cells
        std::vector<std::string> cells;
        size_t                   a = 0;
        for (;;) {
            const size_t c = row.find(',', a);
            cells.push_back(row.substr(a, c == std::string::npos ? std::string::npos : c - a));
            if (c == std::string::npos) break;
            a = c + 1;
        }
        if (cells.size() != size_t(k_qpos_dim)) {
            fail(status::invalid_format, where + ": " + std::to_string(cells.size()) + " columns, a G1 qpos row has " + std::to_string(k_qpos_dim));
        }
        const bool header = first && is_name(cells[0]);
        first = false;
        if (header) {
            const bool wxyz = cells[3] == "root_qw", xyzw = cells[6] == "root_qw";
            if (!wxyz && !xyzw) fail(status::invalid_format, where + ": header row must name root_qw in column 3 (wxyz) or 6 (xyzw)");
            const quat_order h = wxyz ? quat_order::wxyz : quat_order::xyzw;
            if (!order_from_header && h != order) {
                fail(status::invalid_format, where + ": header says " + order_name(h) + ", expected " + order_name(order));
            }
            order = h;
            const std::vector<std::string> names = qpos_column_names(order);
            for (int c = 0; c < k_qpos_dim; ++c) {
                if (cells[size_t(c)] != names[size_t(c)]) fail(status::invalid_format, where + ": header column " + std::to_string(c) + " is '" + cells[size_t(c)] + "', expected '" + names[size_t(c)] + "'");
            }
            continue;
        }
        double r[k_qpos_dim];
        for (int c = 0; c < k_qpos_dim; ++c) {
            std::string cell = cells[size_t(c)];
            while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
            while (!cell.empty() && cell.back() == ' ') cell.pop_back();
            const char * b = cell.data(), * e = b + cell.size();
            if (b != e && *b == '+') ++b;
            const auto res = std::from_chars(b, e, r[c]);
            if (cell.empty() || res.ec != std::errc() || res.ptr != e) {
                fail(status::invalid_format, where + ", column " + std::to_string(c) + ": '" + cell + "' is not a number");
            }
            if (!std::isfinite(r[c])) fail(status::invalid_format, where + ", column " + std::to_string(c) + ": non-finite value");
        }
        from_file_order(r, order);
        if (std::sqrt(r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6]) < 1e-6) fail(status::invalid_format, where + ": zero root quaternion");
        clip.qpos.insert(clip.qpos.end(), r, r + k_qpos_dim);
    }
    if (clip.qpos.empty()) fail(status::invalid_format, origin + ": no qpos rows");
    return clip;
}

qpos_clip read_qpos_csv(const std::string & path, int fps, quat_order order, bool order_from_header) {
    return parse_qpos_csv(read_regular_file(path, k_max_file_bytes), path, fps, order, order_from_header);
}

qpos_clip parse_qpos_npz(const std::string & bytes, const std::string & origin) {
    const std::map<std::string, npy_array> a = npz_decode(bytes, origin);
    for (const char * k : {"qpos", "fps", "quat_order", "joint_names"}) {
        if (!a.count(k)) fail(status::invalid_format, origin + ": no '" + std::string(k) + "' entry");
    }
    if (a.size() != 4) fail(status::invalid_format, origin + ": " + std::to_string(a.size()) + " entries, expected qpos, fps, quat_order, joint_names");
    const npy_array & q = a.at("qpos");
    if (q.descr != "<f8" || q.shape.size() != 2 || q.shape[1] != k_qpos_dim || q.shape[0] < 1) {
        fail(status::invalid_format, origin + ": qpos must be <f8 [F >= 1, 36]");
    }
    const npy_array & f = a.at("fps");
    if (f.descr != "<i8" || !f.shape.empty()) fail(status::invalid_format, origin + ": fps must be a <i8 scalar");
    int64_t fps = 0;
    std::memcpy(&fps, f.data.data(), sizeof fps);
    if (fps < 1 || fps > 1000) fail(status::invalid_format, origin + ": fps " + std::to_string(fps) + " outside 1..1000");
    const npy_array & o = a.at("quat_order");
    if (o.descr.compare(0, 2, "<U") != 0 || !o.shape.empty()) fail(status::invalid_format, origin + ": quat_order must be a text scalar");
    const std::string order = from_utf32(o.data, 0, o.data.size() / 4, origin + ": quat_order");
    if (order != "wxyz" && order != "xyzw") fail(status::invalid_format, origin + ": quat_order '" + order + "', expected wxyz or xyzw");
    const npy_array & n = a.at("joint_names");
    if (n.descr.compare(0, 2, "<U") != 0 || n.shape.size() != 1 || n.shape[0] != k_qpos_hinges) {
        fail(status::invalid_format, origin + ": joint_names must be text [29]");
    }
    const size_t width = npy_itemsize(n.descr) / 4;
    for (int k = 0; k < k_qpos_hinges; ++k) {
        const std::string name = from_utf32(n.data, size_t(k) * width * 4, width, origin + ": joint_names");
        if (name != mjcf_g1().hinges[size_t(k)].joint) {
            fail(status::invalid_format, origin + ": joint_names[" + std::to_string(k) + "] is '" + name + "', expected '" + mjcf_g1().hinges[size_t(k)].joint + "'");
        }
    }
    qpos_clip clip;
    clip.fps = int(fps);
    clip.qpos.resize(size_t(q.shape[0]) * k_qpos_dim);
    std::memcpy(clip.qpos.data(), q.data.data(), q.data.size());
    const quat_order qo = order == "wxyz" ? quat_order::wxyz : quat_order::xyzw;
    for (int64_t fr = 0; fr < q.shape[0]; ++fr) from_file_order(&clip.qpos[size_t(fr) * k_qpos_dim], qo);
    check_clip(clip.qpos, origin, status::invalid_format);
    return clip;
}

qpos_clip read_qpos_npz(const std::string & path) {
    return parse_qpos_npz(read_regular_file(path, k_max_file_bytes), path);
}

} // namespace mb
