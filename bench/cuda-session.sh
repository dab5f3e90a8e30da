#!/usr/bin/env bash
# one GPU-machine session for the CUDA backend: configure (CUDA required), build the
# CUDA tests and the benchmarks, run the `cuda` CTest label (with a full-size random
# bundle for the CPU-vs-CUDA comparison), compute-sanitizer on every op and on the
# parity suite, then time plans on the CPU and the GPU. Logs go to $OUT (default
# ./cuda-out). usage: bench/cuda-session.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
build=${1:-build/cuda}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$out/gpu.txt" 2>&1
cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON > "$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; exit 1; }
targets="cuda-run test-cuda-backend test-backend-ops test-root-planner test-pose-planner test-vq-decoder test-predict test-agent bench-networks"
cmake --build "$build" -j"$(nproc)" --target $targets > "$out/build.log" 2>&1 || { grep -B2 -A10 error "$out/build.log" | head -60; exit 1; }
python3 tools/convert.py random-bundle --preset full --seed 1 --out /tmp/mb-full > /tmp/mb-bundle.log 2>&1 &&
    export MB_CUDA_FULL_BUNDLE=/tmp/mb-full
echo "== ctest -L cuda"
(cd "$build" && ctest -L cuda -V --timeout 300) > "$out/ctest-cuda.log" 2>&1
grep -E "tests passed|SKIPPED|FAILED|full bundle|skipped:|Passed|\*\*\*" "$out/ctest-cuda.log" | grep -v "^\s*$" | head -40
echo "== compute-sanitizer"
san() {     # name tool program args...
    local name=$1 tool=$2; shift 2
    timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$out/san-$name-$tool.log" 2>&1
    echo "$name $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$out/san-$name-$tool.log" | head -3 | tr '\n' ' ')"
}
san ops memcheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda_t1'
san ops racecheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda_t1'
san predict memcheck "$build/tests/backend/cuda-run" "$build/tests/motion/test-predict" --gtest_filter='predict.every_reference_case'
echo "== benchmarks"
"$build/bench/bench-networks" --benchmark_filter='plan/thr:(0|-1)/n:(6|10|16|0)' \
    > "$out/bench-plan.txt" 2>&1
grep -E "median|p95" "$out/bench-plan.txt" | cut -c1-120
