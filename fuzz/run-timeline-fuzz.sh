#!/usr/bin/env bash
# Builds the reference-timeline fuzz target with clang (libFuzzer + ASan + UBSan) and runs it over
# seeds (valid clips as a first reference and as a replacement, a NaN clip, lying counts) for a
# bounded time; any finding fails.
# Usage: run-timeline-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-timeline-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
lib=("$root/src/physics/timeline.cpp" "$root/src/physics/observation.cpp")
echo "building $work/timeline-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/timeline-fuzz.cpp" "${lib[@]}" -o "$work/timeline-fuzz"

cat > "$work/seed.cpp" <<'CPP'
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
// header (values, frames, gen, ticks) + frames × 36 floats of a standing clip
static void put(const std::string & path, uint64_t values, int64_t frames, int64_t gen, uint8_t ticks, int stored, float poison) {
    std::vector<float> q(size_t(stored) * 36, 0.1f);
    for (int f = 0; f < stored; ++f) { q[size_t(f) * 36 + 2] = 0.79f; q[size_t(f) * 36 + 3] = std::cos(0.01f * f); q[size_t(f) * 36 + 6] = std::sin(0.01f * f); }
    if (poison != 0 && !q.empty()) q[q.size() / 2] = poison;
    std::FILE * f = std::fopen(path.c_str(), "wb");
    std::fwrite(&values, 8, 1, f); std::fwrite(&frames, 8, 1, f); std::fwrite(&gen, 8, 1, f); std::fwrite(&ticks, 1, 1, f);
    std::fwrite(q.data(), 4, q.size(), f);
    std::fclose(f);
}
int main(int, char ** argv) {
    const std::string d = argv[1];
    put(d + "/first", 30 * 36, 30, 0, 3, 30, 0);
    put(d + "/replace", 12 * 36, 12, 5, 9, 12, 0);
    put(d + "/nan", 8 * 36, 8, 0, 1, 8, NAN);
    put(d + "/lying-count", 8 * 36, 9, 0, 1, 8, 0);
    put(d + "/huge", uint64_t(1) << 40, int64_t(1) << 40, 0, 2, 4, 0);
    put(d + "/reset", 4 * 36, 4, 0, 0x81, 4, 0);
}
CPP
"$cxx" -std=c++20 "$work/seed.cpp" -o "$work/seed"
fuzz_corpus "$work"
"$work/seed" "$corpus"
fuzz_run "$work/timeline-fuzz" "$work" "$seconds" 10 $((64 * 1024)) 1024
