#!/usr/bin/env bash
# Builds the .mbstyle / MJCF fuzz target with clang (libFuzzer + ASan + UBSan) and runs it over
# seeds (a valid style from the C++ writer, upstream's g1.xml when ../shared is present, and
# truncations of both) for a bounded time; any finding fails.
# Usage: run-style-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-style-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
lib=("$root/src/format/style.cpp" "$root/src/format/gguf.cpp" "$root/src/format/tensor-names.cpp"
     "$root/src/format/sha256.cpp" "$root/src/format/tensor.cpp" "$root/src/motion/mjcf.cpp"
     "$root/src/motion/qpos.cpp" "$root/src/motion/g1.cpp" "$root/src/motion/motion-rep.cpp" "$root/src/format/bundle.cpp"
     "$root/src/format/regular-file.cpp")
echo "building $work/style-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/style-fuzz.cpp" "${lib[@]}" -lcrypto -o "$work/style-fuzz"

# seeds: a valid style written by the C++ writer, g1.xml, truncations; byte 0 picks the reader
cat > "$work/seed.cpp" <<'CPP'
#include "format/style.h"
#include <cmath>
int main(int, char ** argv) {
    mb::style_asset s;
    s.name = "seed"; s.speed = 1.0f; s.frames = 5; s.source_sha256 = std::string(64, 'a');
    s.joint_positions.assign(5 * 34 * 3, 0.1f);
    s.joint_rotations.assign(5 * 34 * 9, 0.0f);
    for (int r = 0; r < 5 * 34; ++r) for (int i = 0; i < 3; ++i) s.joint_rotations[r * 9 + i * 4] = 1.0f;
    s.root_positions.assign(15, 0.0f); s.headings.assign(5, 0.0f);
    s.allowed_tokens = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    mb::style_write(argv[1], s);
}
CPP
"$cxx" "${flags[@]}" "$work/seed.cpp" "${lib[@]}" -lcrypto -o "$work/seed"
fuzz_corpus "$work"
"$work/seed" "$work/seed.mbstyle"
{ printf '\000'; cat "$work/seed.mbstyle"; } > "$corpus/style"
xml="$root/../shared/data/upstream/mjcf/g1.xml"
if [ -f "$xml" ]; then { printf '\001'; cat "$xml"; } > "$corpus/g1"; fi
printf '\001<mujoco><worldbody><body name="b"><freejoint/><body name="c"><joint name="j" axis="0 1 0"/></body></body></worldbody></mujoco>' > "$corpus/small"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 5 30 $((size / 3)) $((size / 2)) $((size - 1))
done

# inputs up to 4 MiB (an MJCF of 2 MB with one long tag took 59 s while attributes were compared
# pairwise; the 10 s limit per input reports such a slowdown), and a seed of that shape
awk 'BEGIN { printf "\001<mujoco"; for (i = 0; i < 250000; ++i) printf " a%d=\"0\"", i; printf "/>" }' > "$corpus/many-attributes"
fuzz_run "$work/style-fuzz" "$work" "$seconds" 10 $((4 << 20)) 1024
