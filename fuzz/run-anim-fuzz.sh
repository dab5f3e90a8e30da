#!/usr/bin/env bash
# Builds the GLB / BVH reader fuzz target with clang (libFuzzer + ASan + UBSan) and runs it over
# seeds (a valid GLB and BVH from the writers, and truncations) for a bounded time; any finding
# fails. Usage: run-anim-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-anim-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
lib=("$root/src/export/anim-clip.cpp" "$root/src/export/glb-reader.cpp" "$root/src/export/glb-writer.cpp"
     "$root/src/export/bvh-reader.cpp" "$root/src/export/bvh-writer.cpp" "$root/src/motion/g1.cpp" "$root/src/motion/motion-rep.cpp"
     "$root/src/format/json-bounded.cpp")
echo "building $work/anim-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/anim-fuzz.cpp" "${lib[@]}" -o "$work/anim-fuzz"

# seeds: a 3-frame clip as GLB and as BVH (metres and centimetres) from the writers; byte 0 picks the reader
cat > "$work/seed.cpp" <<'CPP'
#include "export/bvh.h"
#include "export/glb.h"
#include <cmath>
#include <fstream>
#include <string>
int main(int, char ** argv) {
    mb::anim_clip c;
    c.frames = 3;
    c.root = {0, 0.8f, 0, 0.01f, 0.8f, 0.03f, 0.02f, 0.8f, 0.06f};
    c.local_xyzw.assign(3 * 34 * 4, 0.0f);
    for (int i = 0; i < 3 * 34; ++i) {
        const float a = 0.1f * float(i % 7);
        c.local_xyzw[i * 4 + i % 3] = std::sin(a);
        c.local_xyzw[i * 4 + 3]     = std::cos(a);
    }
    const std::string dir = argv[1];
    std::ofstream(dir + "/glb", std::ios::binary) << '\0' << mb::glb_write(c);
    std::ofstream(dir + "/bvh") << '\1' << mb::bvh_write(c, 1.0);
    std::ofstream(dir + "/bvh-cm") << '\1' << mb::bvh_write(c, 100.0);
}
CPP
"$cxx" "${flags[@]}" "$work/seed.cpp" "${lib[@]}" -o "$work/seed"
fuzz_corpus "$work"
"$work/seed" "$corpus"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 13 21 29 $((size / 3)) $((size / 2)) $((size - 1))
done
# inputs up to the GLB bound plus a little (a BVH of 16 MiB is already a slow input to parse)
fuzz_run "$work/anim-fuzz" "$work" "$seconds" 10 $(((16 << 20) + 64)) 1024
