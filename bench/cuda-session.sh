#!/usr/bin/env bash
# one GPU-machine session for the CUDA backend: configure (CUDA required), build the CUDA
# tests, the CLI and the benchmarks, run the `cuda` CTest label (with a full-size random
# bundle for the CPU-vs-CUDA and precision comparisons), compute-sanitizer on every op and on
# the parity suite, then `motionbricks bench` on the CPU and on the GPU in F32 / TF32 / BF16,
# with and without CUDA graphs. Logs go to $OUT (default ./cuda-out): summary.txt, bench.jsonl
# (one bench object a line) and logs.tar.gz.
# usage: bench/cuda-session.sh [BUILD_DIR] [SHARED_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
build=${1:-build/cuda}
shared=${2:-$PWD/../shared}
mkdir -p "$out/logs"
sum="$out/summary.txt"
log="$out/logs"
exec > >(tee -a "$sum") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
lscpu | grep -E "Model name|^CPU\(s\)"
t0=$(date +%s)
cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_SHARED_DIR="$shared" > "$log/configure.log" 2>&1 ||
    { tail -30 "$log/configure.log"; exit 1; }
targets="motionbricks cuda-run test-cuda-backend test-backend-ops test-root-planner test-pose-planner test-vq-decoder test-predict test-agent test-sonic"
cmake --build "$build" -j"$(nproc)" --target $targets > "$log/build.log" 2>&1 ||
    { grep -B2 -A12 -E "error|FAILED" "$log/build.log" | head -80; exit 1; }
echo "== built in $(( $(date +%s) - t0 )) s"
python3 tools/convert.py random-bundle --preset full --seed 1 --out /tmp/mb-full > "$log/bundle.log" 2>&1 &&
    export MB_CUDA_FULL_BUNDLE=/tmp/mb-full
echo "== ctest -L cuda"
(cd "$build" && timeout 200 ctest -L cuda -V --timeout 150) > "$log/ctest-cuda.log" 2>&1
grep -E "tests passed|tests failed|SKIPPED|FAILED|Failed|full bundle|skipped:|max rel err|\*\*\*" "$log/ctest-cuda.log" | head -60
echo "== bench"
mbb() {     # label env... -- args...
    local label=$1; shift
    timeout 60 env "$@" --tokens 10,0 > "$log/bench-$label.json" 2> "$log/bench-$label.err" ||
        { echo "bench $label failed: $(tail -3 "$log/bench-$label.err")"; return; }
    python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$log/bench-$label.json" >> "$out/bench.jsonl"
    python3 - "$label" "$log/bench-$label.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[2]))
m = b["model"]
for r in b["runs"]:
    s = r["stage_ms_lane0"]
    print(f'{sys.argv[1]:>14} {m["device"]:>4} {m["precision"]:>4} B={r["batch"]:<4} n={str(r["tokens"]):>9}: '
          f'{r["ms_per_call_median"]:8.3f} ms (p95 {r["ms_per_call_p95"]:.3f}), {r["frames_per_s"]:10.0f} frames/s'
          f'  root {s["root"]:.3f} pose {s["pose"]:.3f} dec {s["decoder"]:.3f} fin {s["finish"]:.3f}'
          + (f'  floor x{r["ratio_to_floor"]:.2f}' if "ratio_to_floor" in r else ''))
PY
}
mb="$build/motionbricks"
full=/tmp/mb-full
mbb cpu16 "$mb" bench --model "$full" --device cpu --batch 1 --iterations 21
mbb cuda-f32 "$mb" bench --model "$full" --device cuda --precision f32 --batch 1,8,64
mbb cuda-f32-big "$mb" bench --model "$full" --device cuda --precision f32 --batch 256,1024,4096 --iterations 5 --warmup 1
mbb cuda-tf32-big "$mb" bench --model "$full" --device cuda --precision tf32 --batch 1024,4096 --iterations 5 --warmup 1
mbb cuda-bf16-big "$mb" bench --model "$full" --device cuda --precision bf16 --batch 1024,4096 --iterations 5 --warmup 1
mbb cpu16-b8 "$mb" bench --model "$full" --device cpu --batch 8
mbb cuda-f32-nograph MB_CUDA_GRAPHS=0 "$mb" bench --model "$full" --device cuda --precision f32 --batch 1
mbb cuda-tf32 "$mb" bench --model "$full" --device cuda --precision tf32 --batch 1,64
mbb cuda-bf16 "$mb" bench --model "$full" --device cuda --precision bf16 --batch 1,64
echo "== compute-sanitizer"
san() {     # name tool program args...
    local name=$1 tool=$2; shift 2
    timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log/san-$name-$tool.log" 2>&1
    echo "$name $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$log/san-$name-$tool.log" | head -3 | tr '\n' ' ')"
}
san ops memcheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
san ops racecheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
san precision memcheck "$build/tests/backend/test-cuda-backend" --gtest_filter='backends.reduced_precision*'
MB_TEST_DEVICE=cuda san predict memcheck "$build/tests/motion/test-predict"
echo "== bench sonic"
if python3 tools/convert.py random-sonic --seed 1 --out /tmp/sonic.gguf > /dev/null 2>&1; then
    for spec in "cpu 1" "cpu 2" "cpu 16" "cuda 1"; do
        set -- $spec
        "$mb" bench sonic --model /tmp/sonic.gguf --device "$1" --threads "$2" --batch 1,64 --iterations 51 2> /dev/null |
            python3 -c "import json,sys; b=json.load(sys.stdin); print('sonic $1 threads $2 floor %.3f ms:' % b['floor']['ms_per_pair'], ', '.join('B=%d %.3f ms (%.3f ms/robot, x%.2f floor)' % (r['batch'], r['ms_per_call_median'], r['ms_per_robot'], r['ratio_to_floor']) for r in b['runs']))"
    done
fi
nvidia-smi --query-gpu=memory.used --format=csv
echo "== session $(( $(date +%s) - t0 )) s"
tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$log"
