#!/usr/bin/env bash
# Builds the .mbparity / .mbreplay fuzz target with clang (libFuzzer + ASan + UBSan) and runs it
# over seeds (the format tests' sample files written by the C++ writers, and truncations) for a
# bounded time; any finding fails.
# Usage: run-fixture-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-fixture-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
lib=("$root/src/format/mbparity.cpp" "$root/src/format/mbreplay.cpp" "$root/src/format/fixture-io.cpp"
     "$root/src/format/regular-file.cpp")
echo "building $work/fixture-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/fixture-fuzz.cpp" "${lib[@]}" -o "$work/fixture-fuzz"

# seeds: the sample fixture and replay of tests/format/fixture-samples.h, byte 0 picking the reader
cat > "$work/seed.cpp" <<'CPP'
#include "fixture-samples.h"
#include "format/fixture-io.h"
int main(int, char ** argv) {
    mb::write_file_atomic(argv[1], std::string(1, char(0)) + mb::mbparity_serialize(mb::test::sample_parity()));
    mb::write_file_atomic(argv[2], std::string(1, char(1)) + mb::mbreplay_serialize(mb::test::sample_replay()));
}
CPP
"$cxx" "${flags[@]}" -I"$root/tests/format" "$work/seed.cpp" "${lib[@]}" -o "$work/seed"
fuzz_corpus "$work"
"$work/seed" "$corpus/parity" "$corpus/replay"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 9 37 41 $((size / 3)) $((size / 2)) $((size - 1))
done
# inputs up to 1 MiB (the readers bound everything by the file's own size)
fuzz_run "$work/fixture-fuzz" "$work" "$seconds" 10 $((1 << 20)) 1024
