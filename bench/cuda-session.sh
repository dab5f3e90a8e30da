#!/usr/bin/env bash
# one GPU-machine session for the CUDA backend: configure (CUDA required) and build the CUDA
# tests, the CLI and the benchmarks (or unpack the programs bench/cuda-pack.sh packed into
# .gpu/build.tgz), run the `cuda` CTest label (with a full-size random bundle for the
# CPU-vs-CUDA and precision comparisons), then `motionbricks bench` on the GPU in F32 / TF32 /
# BF16 (F32 products of many rows on our tiled kernel and, for comparison, on cuBLAS), and in
# the full plan also compute-sanitizer on every op and on the parity suite, the CPU, CUDA
# without graphs and the SONIC pair. Logs go to $OUT (default ./cuda-out): summary.txt,
# ctest-cuda.log, bench.jsonl (one bench object a line) and logs.tar.gz.
# usage: bench/cuda-session.sh [BUILD_DIR] [SHARED_DIR]
#   MB_SESSION=quick       tests and the main timings only (for a short lease)
#   MB_SESSION_SECONDS=N   steps that would start after N seconds are skipped, saying so
#   MB_SESSION_SKIP="L …"  bench labels to leave out (e.g. cuda-f32-4096)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
plan=${MB_SESSION:-full}
budget=${MB_SESSION_SECONDS:-1000000}
build=${1:-}
shared=${2:-}
[ -n "$shared" ] || { [ -d .gpu/shared/fixtures ] && shared=$PWD/.gpu/shared || shared=$PWD/../shared; }
mkdir -p "$out/logs"
sum="$out/summary.txt"
log="$out/logs"
exec > >(tee -a "$sum") 2>&1
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
# time_for SECONDS STEP: whether STEP may start (it would end before the budget)
time_for() {
    if [ $(( $(elapsed) + $1 )) -gt "$budget" ]; then
        echo "== skipped (time, $(elapsed) s of $budget): $2"
        return 1
    fi
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
lscpu | grep -E "Model name|^CPU\(s\)"

targets="motionbricks cuda-run test-cuda-backend test-backend-ops test-root-planner test-pose-planner test-vq-decoder
         test-predict test-predict-batch test-agent test-sonic"
if [ -z "$build" ] && [ -f .gpu/build.tgz ]; then
    tar -xf .gpu/build.tgz
    build=$(cat .gpu/build-dir)
    src=$(cat .gpu/checkout-path)
    if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
    if ldd "$build/motionbricks" $(find "$build/tests" -type f -perm -u+x -name 'test-*') | grep "not found"; then
        echo "== the packed programs lack libraries here: building instead"
        build=""
    else
        echo "== packed programs from $build (built for $src)"
    fi
fi
if [ -z "$build" ] || [ ! -x "$build/motionbricks" ]; then
    build=${build:-build/cuda}
    # the python3 on PATH (the GPU image's /usr/bin/python3 has no numpy)
    cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_SHARED_DIR="$shared" \
        -DMB_PYTHON="$(command -v python3)" \
        > "$log/configure.log" 2>&1 || { tail -30 "$log/configure.log"; exit 1; }
    cmake --build "$build" -j"$(nproc)" --target $targets > "$log/build.log" 2>&1 ||
        { grep -B2 -A12 -E "error|FAILED" "$log/build.log" | head -80; exit 1; }
    echo "== built in $(elapsed) s"
fi
export MB_SHARED_DIR=$shared

full=/tmp/mb-full
python3 tools/convert.py random-bundle --preset full --seed 1 --out "$full" > "$log/bundle.log" 2>&1 &
bundle_pid=$!
echo "== ctest -L cuda ($(elapsed) s)"
per_test=$(( budget - $(elapsed) - 30 ))
[ "$per_test" -gt 300 ] && per_test=300
[ "$per_test" -lt 30 ] && per_test=30
# the parity suites need no full-size bundle: they run while it is written
(cd "$build" && ctest -L cuda -E 'cuda\.test-cuda-backend$' -j4 -V --timeout "$per_test") > "$out/ctest-cuda.log" 2>&1
wait "$bundle_pid" && export MB_CUDA_FULL_BUNDLE=$full || echo "random bundle failed: $(tail -3 "$log/bundle.log")"
(cd "$build" && ctest -R 'cuda\.test-cuda-backend$' -V --timeout "$per_test") >> "$out/ctest-cuda.log" 2>&1
grep -E "tests passed|tests failed|Test *#|SKIPPED|\*\*\*Failed|FAILED|Failure|full bundle|skipped:|max rel err|outputs differing|max diff|lanes vs alone|Expected|Which is|request [0-9]" \
    "$out/ctest-cuda.log" | grep -v "^[0-9]*: *\[ *OK" | head -80
echo "== tests done ($(elapsed) s)"

mbb() {     # label seconds env... -- args...
    local label=$1 need=$2; shift 2
    case " ${MB_SESSION_SKIP:-} " in *" $label "*) echo "== skipped (MB_SESSION_SKIP): bench $label"; return 0 ;; esac
    time_for "$need" "bench $label" || return 0
    # device memory of the bench process, sampled every 100 ms (the largest is printed)
    nvidia-smi --query-compute-apps=used_memory --format=csv,noheader,nounits -lms 100 > "$log/mem-$label.txt" 2>/dev/null &
    local smi=$!
    timeout 90 env "$@" --tokens 10,0 > "$log/bench-$label.json" 2> "$log/bench-$label.err"
    local rc=$?
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    echo "$label: device memory max $(sort -n "$log/mem-$label.txt" | tail -1) MiB"
    [ "$rc" = 0 ] || { echo "bench $label failed: $(tail -3 "$log/bench-$label.err")"; return 0; }
    python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$log/bench-$label.json" >> "$out/bench.jsonl"
    python3 - "$label" "$log/bench-$label.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[2]))
m = b["model"]
for r in b["runs"]:
    s = r["stage_ms_lane0"]
    print(f'{sys.argv[1]:>16} {m["device"]:>4} {m["precision"]:>4} B={r["batch"]:<4} n={str(r["tokens"]):>9}: '
          f'{r["ms_per_call_median"]:8.3f} ms (p95 {r["ms_per_call_p95"]:.3f}), {r["frames_per_s"]:10.0f} frames/s'
          f'  root {s["root"]:.3f} pose {s["pose"]:.3f} dec {s["decoder"]:.3f} fin {s["finish"]:.3f}'
          + (f'  floor x{r["ratio_to_floor"]:.2f}' if "ratio_to_floor" in r else ''))
PY
}
echo "== bench ($(elapsed) s)"
mb="$build/motionbricks"
big="--iterations 5 --warmup 1"
if [ "$plan" = quick ]; then
    # the issue's table: B = 1 (10 tokens and predicted), then frames/s at B = 8 … 4,096 per precision
    mbb cuda-f32 10 "$mb" bench --model "$full" --device cuda --precision f32 --batch 1
    mbb cuda-f32-batch 30 "$mb" bench --model "$full" --device cuda --precision f32 --batch 8,64,256,1024 $big
    mbb cuda-f32-4096 30 "$mb" bench --model "$full" --device cuda --precision f32 --batch 4096 --iterations 3 --warmup 1
    for p in tf32 bf16; do
        mbb cuda-$p 10 "$mb" bench --model "$full" --device cuda --precision $p --batch 1
        mbb cuda-$p-batch 25 "$mb" bench --model "$full" --device cuda --precision $p --batch 8,64,256,1024 $big
        mbb cuda-$p-4096 25 "$mb" bench --model "$full" --device cuda --precision $p --batch 4096 --iterations 3 --warmup 1
    done
    mbb cuda-f32-cublas 15 MB_CUDA_F32_CUBLAS=1 "$mb" bench --model "$full" --device cuda --precision f32 --batch 256,1024 $big
    # variants (same bits or, for TF32 / BF16, the same bounds): fused chunks of other sizes,
    # programmatic dependent launch at batch one
    for lanes in ${MB_SESSION_LANES:-}; do
        for p in f32 tf32; do
            mbb cuda-$p-lanes$lanes 30 MB_CUDA_BATCH_LANES=$lanes "$mb" bench --model "$full" --device cuda --precision $p \
                --batch 1024,4096 --iterations 3 --warmup 1
        done
    done
    upstream=${MB_UPSTREAM_DIR:-}
    # the checkout's motionbricks/ folder; given the checkout itself, take its motionbricks/
    if [ -n "$upstream" ] && [ ! -d "$upstream/motionbricks/motion_backbone" ] &&
        [ -d "$upstream/motionbricks/motionbricks/motion_backbone" ]; then
        upstream=$upstream/motionbricks
    fi
    if [ -n "$upstream" ] && time_for 60 "upstream PyTorch same-run comparison"; then
        MOTIONBRICKS_LIBRARY=$(find "$build/src/capi" -name 'libmotionbricks.so' | head -1) PYTHONUNBUFFERED=1 \
            timeout 120 python3 bench/upstream-torch.py --upstream "$upstream" --bundle "$full" --seed 1 \
            --case "$shared/fixtures/reference-small/cases/walk_fwd_fixed10_argmax.npz" --iterations 21 \
            --out "$out/upstream.json" > "$log/upstream.log" 2>&1 ||
            echo "upstream comparison failed: $(tail -5 "$log/upstream.log")"
        [ -f "$out/upstream.json" ] && python3 bench/upstream-summary.py "$out/upstream.json"
    fi
    san() {     # name tool seconds program args...
        local name=$1 tool=$2 secs=$3; shift 3
        time_for "$secs" "compute-sanitizer $name $tool" || return 0
        timeout "$secs" compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log/san-$name-$tool.log" 2>&1
        echo "$name $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$log/san-$name-$tool.log" | head -3 | tr '\n' ' ')"
    }
    san tiled memcheck 60 "$build/tests/backend/test-cuda-backend" --gtest_filter='backends.linear_every_path:backends.f32_sums*:backends.reduced_precision*'
    # the GEMV and every SGEMM tile (with the row-count test too it ran past 90 s under racecheck)
    san tiled racecheck 90 "$build/tests/backend/test-cuda-backend" --gtest_filter='backends.f32_sums_follow*'
    san ops memcheck 60 "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
    san ops racecheck 60 "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
else
    mbb cpu16 60 "$mb" bench --model "$full" --device cpu --batch 1 --iterations 21
    mbb cuda-f32 20 "$mb" bench --model "$full" --device cuda --precision f32 --batch 1,8,64
    mbb cuda-f32-big 60 "$mb" bench --model "$full" --device cuda --precision f32 --batch 256,1024,4096 $big
    mbb cuda-f32-cublas 60 MB_CUDA_F32_CUBLAS=1 "$mb" bench --model "$full" --device cuda --precision f32 --batch 256,1024,4096 $big
    mbb cuda-tf32-big 60 "$mb" bench --model "$full" --device cuda --precision tf32 --batch 1024,4096 $big
    mbb cuda-bf16-big 60 "$mb" bench --model "$full" --device cuda --precision bf16 --batch 1024,4096 $big
    mbb cpu16-b8 60 "$mb" bench --model "$full" --device cpu --batch 8
    mbb cuda-f32-nograph 20 MB_CUDA_GRAPHS=0 "$mb" bench --model "$full" --device cuda --precision f32 --batch 1
    mbb cuda-tf32 20 "$mb" bench --model "$full" --device cuda --precision tf32 --batch 1,64
    mbb cuda-bf16 20 "$mb" bench --model "$full" --device cuda --precision bf16 --batch 1,64
    echo "== compute-sanitizer"
    san() {     # name tool program args...
        local name=$1 tool=$2; shift 2
        time_for 120 "compute-sanitizer $name $tool" || return 0
        timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log/san-$name-$tool.log" 2>&1
        echo "$name $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$log/san-$name-$tool.log" | head -3 | tr '\n' ' ')"
    }
    san ops memcheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
    san ops racecheck "$build/tests/backend/test-backend-ops" --gtest_filter='*cuda*'
    san precision memcheck "$build/tests/backend/test-cuda-backend" --gtest_filter='backends.reduced_precision*:backends.f32_sums*'
    MB_TEST_DEVICE=cuda san predict memcheck "$build/tests/motion/test-predict"
    echo "== bench sonic"
    if time_for 60 "bench sonic" && python3 tools/convert.py random-sonic --seed 1 --out /tmp/sonic.gguf > /dev/null 2>&1; then
        for spec in "cpu 1" "cpu 2" "cpu 16" "cuda 1"; do
            set -- $spec
            "$mb" bench sonic --model /tmp/sonic.gguf --device "$1" --threads "$2" --batch 1,64 --iterations 51 2> /dev/null |
                python3 -c "import json,sys; b=json.load(sys.stdin); print('sonic $1 threads $2 floor %.3f ms:' % b['floor']['ms_per_pair'], ', '.join('B=%d %.3f ms (%.3f ms/robot, x%.2f floor)' % (r['batch'], r['ms_per_call_median'], r['ms_per_robot'], r['ratio_to_floor']) for r in b['runs']))"
        done
    fi
fi
nvidia-smi --query-gpu=memory.used --format=csv
echo "== session $(elapsed) s"
tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$log"
