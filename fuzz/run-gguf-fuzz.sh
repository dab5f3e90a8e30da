#!/usr/bin/env bash
# Builds the GGUF reader fuzz target with clang (libFuzzer + ASan + UBSan) and runs it
# over a generated seed corpus for a bounded time; any finding fails.
# Usage: run-gguf-fuzz.sh WORK_DIR [SECONDS] [FUZZER SEEDER]
#   with FUZZER and SEEDER (prebuilt by the asan-ubsan preset) nothing is compiled.
# Exit 77 (CTest SKIP_RETURN_CODE) when clang++ or libFuzzer is unavailable.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
work="${1:?usage: run-gguf-fuzz.sh WORK_DIR [SECONDS] [FUZZER SEEDER]}"
seconds="${2:-${MB_FUZZ_SECONDS:-60}}"
fuzzer="${3:-}"
seeder="${4:-}"
mkdir -p "$work"

if [ -z "$fuzzer" ]; then
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
    flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$root/src"
           -fsanitize=address,undefined -fno-sanitize-recover=undefined)
    lib=("$root/src/format/bundle.cpp" "$root/src/format/gguf.cpp" "$root/src/format/tensor-names.cpp" "$root/src/format/sha256.cpp" "$root/src/format/tensor.cpp")
    fuzzer="$work/gguf-fuzz"
    seeder="$work/gguf-seeds"
    echo "building $fuzzer"
    "$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/gguf-fuzz.cpp" "${lib[@]}" -lcrypto -o "$fuzzer"
    "$cxx" "${flags[@]}" "$here/gguf-seeds.cpp" "${lib[@]}" -lcrypto -o "$seeder"
fi

corpus="$work/corpus"
rm -rf "$corpus" "$work/artifacts"
mkdir -p "$corpus" "$work/artifacts"
"$seeder" "$corpus"
# truncated and bit-flipped variants of each valid seed
for f in "$corpus"/seed-*.gguf; do
    size=$(stat -c %s "$f")
    for cut in 4 12 23 40 $((size / 2)) $((size - 1)); do
        [ "$cut" -gt 0 ] && [ "$cut" -lt "$size" ] && head -c "$cut" "$f" > "$f.cut$cut"
    done
done

echo "fuzzing for ${seconds}s"
# inputs parse in milliseconds; the per-input limit is generous so that a loaded CI machine
# (ctest -j, other builds) does not report scheduling stalls as hangs
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
"$fuzzer" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=60 \
    -max_len=65536 -artifact_prefix="$work/artifacts/" -print_final_stats=1
if ls "$work/artifacts/"* >/dev/null 2>&1; then
    echo "fuzzer findings in $work/artifacts"
    exit 1
fi
echo "no findings"
