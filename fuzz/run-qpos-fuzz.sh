#!/usr/bin/env bash
# Builds the qpos CSV / NPZ fuzz target with clang (libFuzzer + ASan + UBSan) and runs it over seeds
# (a CSV with and without its header and an NPZ from the C++ writers, and truncations) for a
# bounded time; any finding fails.
# Usage: run-qpos-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-qpos-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
lib=("$root/src/export/qpos-file.cpp" "$root/src/export/npz.cpp" "$root/src/export/qpos-resample.cpp"
     "$root/src/motion/mjcf.cpp" "$root/src/format/regular-file.cpp")
echo "building $work/qpos-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/qpos-fuzz.cpp" "${lib[@]}" -o "$work/qpos-fuzz"

cat > "$work/seed.cpp" <<'CPP'
#include "export/qpos-file.h"
#include <cstdio>
#include <string>
int main(int, char ** argv) {
    std::vector<double> q(3 * 36, 0.1);
    for (int f = 0; f < 3; ++f) q[f * 36 + 3] = 1.0;
    mb::qpos_write_options o;
    const std::string dir = argv[1];
    auto put = [&](const char * name, char tag, const std::string & bytes) {
        std::FILE * f = std::fopen((dir + "/" + name).c_str(), "wb");
        std::fputc(tag, f);
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    };
    put("csv", 0, mb::qpos_csv_text(q, o));
    o.order = mb::quat_order::xyzw;
    o.header = false;
    put("csv-plain", 0, mb::qpos_csv_text(q, o));
    put("npz", 1, mb::qpos_npz_bytes(q, o));
}
CPP
"$cxx" "${flags[@]}" "$work/seed.cpp" "${lib[@]}" -o "$work/seed"
fuzz_corpus "$work"
"$work/seed" "$corpus"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 5 30 $((size / 3)) $((size / 2)) $((size - 1))
done
fuzz_run "$work/qpos-fuzz" "$work" "$seconds" 10 $((1 << 20)) 1024
