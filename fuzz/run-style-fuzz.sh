#!/usr/bin/env bash
# Builds the .mbstyle / MJCF fuzz target with clang (libFuzzer + ASan + UBSan) and runs it over
# seeds (a valid style from the C++ writer, upstream's g1.xml when ../shared is present, and
# truncations of both) for a bounded time; any finding fails.
# Usage: run-style-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
work="${1:?usage: run-style-fuzz.sh WORK_DIR [SECONDS]}"
seconds="${2:-${MB_FUZZ_SECONDS:-60}}"
mkdir -p "$work"
cxx="${MB_FUZZ_CXX:-clang++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "skipped: $cxx not found (install clang and libclang-rt-14-dev)"
    exit 77
fi
probe="$work/probe.cpp"
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' > "$probe"
if ! "$cxx" -fsanitize=fuzzer "$probe" -o "$work/probe" >/dev/null 2>&1; then
    echo "skipped: $cxx cannot link -fsanitize=fuzzer (libFuzzer missing: install libclang-rt-14-dev)"
    exit 77
fi
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$root/src" -fsanitize=address,undefined
       -fno-sanitize-recover=undefined)
lib=("$root/src/format/style.cpp" "$root/src/format/gguf.cpp" "$root/src/format/tensor-names.cpp"
     "$root/src/format/sha256.cpp" "$root/src/format/tensor.cpp" "$root/src/motion/mjcf.cpp"
     "$root/src/motion/qpos.cpp" "$root/src/motion/motion-rep.cpp" "$root/src/format/bundle.cpp")
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
corpus="$work/corpus"
rm -rf "$corpus" "$work/artifacts"
mkdir -p "$corpus" "$work/artifacts"
"$work/seed" "$work/seed.mbstyle"
{ printf '\000'; cat "$work/seed.mbstyle"; } > "$corpus/style"
xml="$root/../shared/data/upstream/mjcf/g1.xml"
if [ -f "$xml" ]; then { printf '\001'; cat "$xml"; } > "$corpus/g1"; fi
printf '\001<mujoco><worldbody><body name="b"><freejoint/><body name="c"><joint name="j" axis="0 1 0"/></body></body></worldbody></mujoco>' > "$corpus/small"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    for cut in 5 30 $((size / 3)) $((size / 2)) $((size - 1)); do
        [ "$cut" -gt 0 ] && [ "$cut" -lt "$size" ] && head -c "$cut" "$f" > "$f.cut$cut"
    done
done

echo "fuzzing for ${seconds}s"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
"$work/style-fuzz" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
    -max_len=65536 -artifact_prefix="$work/artifacts/" -print_final_stats=1
if ls "$work/artifacts/"* >/dev/null 2>&1; then
    echo "fuzzer findings in $work/artifacts"
    exit 1
fi
echo "no findings"
