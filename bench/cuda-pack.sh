#!/usr/bin/env bash
# prepares .gpu/ (git-ignored) for one GPU-machine call of bench/cuda-session.sh, which sees
# only the checkout: copies the fixtures the `cuda` tests read (agent-small, reference-small,
# sonic) into .gpu/shared, and, given a CUDA build of this checkout, packs the programs that
# session runs (tests, CLI, their CTest files) into .gpu/build.tgz, so that a short lease
# spends no time compiling. That build must need no library the GPU image lacks (OpenBLAS,
# libzmq): configure it with PKG_CONFIG_LIBDIR pointing at an empty folder, -DMB_ZMQ=OFF,
# -DMB_PYTHON=python3 and -DMB_SHARED_DIR=<this checkout>/.gpu/shared (see docs/BACKEND.md).
# The whole carried folder must stay under the device's 64 MiB limit with the tree.
# usage: [PACK_FIXTURES='agent-small reference-small'] [PACK_BASE=OTHER_BUILD_DIR] bench/cuda-pack.sh [BUILD_DIR (inside this checkout)] [SHARED_DIR]
# (PACK_BASE: that build's motionbricks goes along as .gpu/base.xz, the baseline cuda-quick.sh times beside this one)
# (with packed programs, leave sonic out: bench/cuda-quick.sh does not read it, and all must fit 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-}
build=${build%/}
case "$build" in /*) build=$(realpath --relative-to=. "$build") ;; esac
shared=${2:-$PWD/../shared}
rm -rf .gpu/shared/fixtures && mkdir -p .gpu/shared/fixtures     # only those asked for
for f in ${PACK_FIXTURES:-agent-small reference-small sonic}; do
    [ -d "$shared/fixtures/$f" ] || { echo "cuda-pack: $shared/fixtures/$f is missing" >&2; exit 1; }
    cp -r "$shared/fixtures/$f" .gpu/shared/fixtures/
done
rm -f .gpu/build.tgz .gpu/checkout-path .gpu/build-dir .gpu/base.xz
[ -n "${PACK_BASE:-}" ] && xz -6 -c "$PACK_BASE/motionbricks" > .gpu/base.xz
if [ -n "$build" ]; then
    progs="motionbricks tests/backend/cuda-run tests/backend/test-cuda-backend tests/backend/test-backend-ops
           tests/model/test-root-planner tests/model/test-pose-planner tests/model/test-vq-decoder
           tests/motion/test-predict tests/motion/test-predict-batch tests/agent/test-agent"
    [ -d .gpu/shared/fixtures/sonic ] && progs="$progs tests/sonic/test-sonic"     # only with its fixtures
    list=$(mktemp)
    for p in $progs; do
        [ -x "$build/$p" ] || { echo "cuda-pack: $build/$p is not built" >&2; exit 1; }
        echo "$build/$p" >> "$list"
    done
    find "$build" -name 'libmotionbricks.so*' -not -path '*/CMakeFiles/*' >> "$list"
    find "$build" \( -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake' \) >> "$list"
    XZ_OPT=-6 tar -cJf .gpu/build.tgz -T "$list"     # xz: the carried folder must fit 64 MiB
    rm -f "$list"
    # the CTest files name absolute paths: the session links this checkout's path to its copy
    sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" > .gpu/checkout-path
    echo "$build" > .gpu/build-dir
fi
du -sh .gpu
