#!/usr/bin/env bash
# ARM64: cross-builds the aarch64 preset (the library, the C ABI and their tests) and runs the
# tests under qemu-aarch64. Exits 77 (skipped) only when the cross compiler or qemu is missing;
# scripts/bootstrap.sh installs both, so CI runs it. Host CTest runs it as the test `arm64`.
# Usage: bash scripts/test-aarch64.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" = aarch64 ]; then
    echo "skipped: this host is ARM64; the release build runs every test natively (with NEON)"
    exit 77
fi
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
    if ! command -v "$tool" >/dev/null; then
        echo "skipped: $tool not found (bash scripts/bootstrap.sh installs g++-aarch64-linux-gnu and qemu-user)"
        exit 77
    fi
done

jobs=${MB_ARM64_JOBS:-$(nproc)}
t0=$(date +%s)
cmake --preset aarch64 >/dev/null
cmake --build --preset aarch64 -j "$jobs"
t1=$(date +%s)
# label slow (the 4096-lane batch) and the fused-lane equality sweep stay out: minutes natively,
# far longer emulated, and they test the lane bookkeeping, not the instruction set
ctest --preset aarch64 -j "$jobs" -LE slow -E '^predict_batch[.]lanes_equal_requests_alone$' "$@"
t2=$(date +%s)
echo "aarch64: cross build $((t1 - t0)) s, tests under qemu $((t2 - t1)) s"
