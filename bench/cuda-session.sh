#!/usr/bin/env bash
# one GPU-machine session for the CUDA backend: configure (CUDA required), build the
# CUDA tests and the benchmarks, run the `cuda` CTest label, then time ops and plans.
# Logs go to $OUT (default ./cuda-out). usage: bench/cuda-session.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
build=${1:-build/cuda}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$out/gpu.txt" 2>&1
cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON > "$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; exit 1; }
targets="cuda-run test-cuda-backend test-root-planner test-pose-planner test-vq-decoder test-predict test-agent bench-networks"
cmake --build "$build" -j"$(nproc)" --target $targets > "$out/build.log" 2>&1 || { grep -B2 -A10 error "$out/build.log" | head -60; exit 1; }
echo "== ctest -L cuda"
(cd "$build" && ctest -L cuda --output-on-failure --timeout 300) > "$out/ctest-cuda.log" 2>&1
tail -15 "$out/ctest-cuda.log"
echo "== benchmarks"
"$build/bench/bench-networks" --benchmark_filter='plan' --benchmark_format=console \
    --benchmark_out="$out/bench-plan.json" --benchmark_out_format=json > "$out/bench-plan.txt" 2>&1
grep -E "median|p95" "$out/bench-plan.txt" | grep -v "_stddev" | cut -c1-150
"$build/bench/bench-networks" --benchmark_filter='(linear|conv1d)/gemm:(0|3)/thr:1/' \
    > "$out/bench-ops.txt" 2>&1
grep median "$out/bench-ops.txt" | cut -c1-150
