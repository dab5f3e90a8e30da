#!/usr/bin/env bash
# builds the library and test-capi-threads with ThreadSanitizer (clang) in WORK_DIR and runs the
# thread test on BUNDLE_DIR; any ThreadSanitizer report fails. Exit 77 when clang is unavailable.
# usage: run-tsan.sh SOURCE_DIR WORK_DIR BUNDLE_DIR [STYLE.mbstyle]  (with a style, agents plan too)
set -euo pipefail
src=$1 work=$2 bundle=$3 style=${4:-}
command -v clang++ >/dev/null 2>&1 || { echo "skipped: clang++ not found"; exit 77; }
[ -d "$bundle" ] || { echo "skipped: no bundle at $bundle"; exit 77; }
cmake -S "$src" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
      -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >"$work.log" 2>&1 ||
    { cat "$work.log"; exit 1; }
cmake --build "$work" --target test-capi-threads >>"$work.log" 2>&1 || { tail -30 "$work.log"; exit 1; }
TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$work/tests/capi/test-capi-threads" "$bundle" $style
