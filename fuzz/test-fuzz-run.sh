#!/usr/bin/env bash
# fuzz_run must fail (exit 1) on a finding: libFuzzer's own failure code, 77, is CTest's skip code.
# Builds a target that aborts on input "x", seeds it with "x" and checks the verdict.
# Usage: test-fuzz-run.sh WORK_DIR. Exit 77 (skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: test-fuzz-run.sh WORK_DIR}" 5
cat > "$work/crash.cpp" <<'CPP'
#include <cstdlib>
extern "C" int LLVMFuzzerTestOneInput(const unsigned char * d, unsigned long n) {
    if (n > 0 && d[0] == 'x') std::abort();
    return 0;
}
CPP
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$work/crash.cpp" -o "$work/crash"
fuzz_corpus "$work"
printf 'x' > "$corpus/x"
rc=0
(fuzz_run "$work/crash" "$work" 5 5) > "$work/run.log" 2>&1 || rc=$?
if [ "$rc" -ne 1 ]; then
    echo "fuzz_run returned $rc on a crashing input, expected 1"
    exit 1
fi
echo "a finding fails the run (exit 1)"
