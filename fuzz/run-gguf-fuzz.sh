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
. "$here/fuzz-common.sh"

if [ -z "$fuzzer" ]; then
    fuzz_toolchain "$work"
    lib=("$root/src/format/bundle.cpp" "$root/src/format/gguf.cpp" "$root/src/format/tensor-names.cpp" "$root/src/format/sha256.cpp" "$root/src/format/tensor.cpp"
         "$root/src/format/regular-file.cpp")
    fuzzer="$work/gguf-fuzz"
    seeder="$work/gguf-seeds"
    echo "building $fuzzer"
    "$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/gguf-fuzz.cpp" "${lib[@]}" -lcrypto -o "$fuzzer"
    "$cxx" "${flags[@]}" "$here/gguf-seeds.cpp" "${lib[@]}" -lcrypto -o "$seeder"
fi

fuzz_corpus "$work"
"$seeder" "$corpus"
# truncated and bit-flipped variants of each valid seed
for f in "$corpus"/seed-*.gguf; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 4 12 23 40 $((size / 2)) $((size - 1))
done

# inputs parse in milliseconds; the per-input limit is generous so that a loaded CI machine
# (ctest -j, other builds) does not report scheduling stalls as hangs
# inputs up to 1 MiB: enough for counts (tensors, keys, array lengths) that would amplify
# into large allocations if a bound were missing; a 1 GB peak counts as a finding
fuzz_run "$fuzzer" "$work" "$seconds" 60 $((1 << 20)) 1024
