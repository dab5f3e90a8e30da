#!/usr/bin/env bash
# Runs the prebuilt C ABI fuzz target (asan-ubsan preset) on the small bundle and two demo styles for
# a bounded time, seeded with one program of each kind; any finding fails.
# Usage: run-capi-fuzz.sh FUZZER BUNDLE_DIR STYLES_DIR WORK_DIR [SECONDS]
set -euo pipefail
fuzzer="$1" bundle="$2" styles="$3" work="$4" seconds="${5:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
mkdir -p "$work"
fuzz_corpus "$work"
# request program: set the global root features (40 floats of zeros), then infer
{ printf '\000\000\100\000\000\050'; head -c 160 /dev/zero; printf '\007\100\000\000\000'; } > "$corpus/request"
# agent program: style on, plan, plan with side steps after a style switch
printf '\001\000\144\000\001\013\144\000\011\144\000\003\000\144\001\001\013\144\000' > "$corpus/agent"
export MB_FUZZ_BUNDLE="$bundle" MB_FUZZ_STYLES="$styles/walk_left.mbstyle:$styles/walk_right.mbstyle"
# programs up to 256 KiB (thousands of calls each; a request program is 207 bytes)
fuzz_run "$fuzzer" "$work" "$seconds" 30 $((256 << 10)) 2048
