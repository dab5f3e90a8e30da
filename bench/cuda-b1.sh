#!/usr/bin/env bash
# batch-one GEMV session on the GPU machine: builds this tree (and, given BASE_DIR, the
# motionbricks CLI of a baseline tree beside it, at once), runs the `cuda` CTest label, the
# GEMV timing per variant (cuda_speed.gemv_at_batch_one), B = 1 `motionbricks bench` of the
# baseline and of this tree (default, activations apart, 16-row GEMV tiles) in one call, and, time
# left, ncu kernel durations of a 10-token plan. Logs under $OUT; a short table last.
# usage: bench/cuda-b1.sh [BASE_DIR] [SHARED_DIR]   (MB_B1_STEPS="build test speed bench ncu";
#        MB_B1_BENCH="label:ENV=V,ENV=V …" benches those settings of this tree instead, e.g.
#        "old:MB_CUDA_GEMV=old new:MB_CUDA_GEMV=new")
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
base=${1:-}
shared=${2:-$PWD/../shared}
steps=${MB_B1_STEPS:-build test speed bench ncu}
mkdir -p "$out" /tmp/nopc
export PKG_CONFIG_LIBDIR=/tmp/nopc MB_SHARED_DIR=$shared
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cfg() { cmake -G Ninja -B "$1" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_ZMQ=OFF -DMB_PYTHON="$(command -v python3)" \
        -DMB_SHARED_DIR="$shared" > "$2" 2>&1; }
if [[ " $steps " == *" build "* ]]; then
    if [ -n "$base" ]; then
        (cd "$base" && cfg build/base /tmp/base-cfg.log && cmake --build build/base -j8 --target motionbricks > /tmp/base-build.log 2>&1) &
        bpid=$!
    fi
    cfg build/cuda /tmp/configure.log || { tail -20 /tmp/configure.log; exit 1; }
    cmake --build build/cuda -j16 --target motionbricks cuda-run test-cuda-backend test-backend-ops test-root-planner \
        test-pose-planner test-vq-decoder test-predict test-predict-batch test-agent test-sonic > "$out/build.log" 2>&1 ||
        { grep -B2 -A12 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
    [ -n "$base" ] && { wait "$bpid" || { tail -20 /tmp/base-build.log; }; }
    echo "== built ($(el) s)"
fi
full=/tmp/mb-full
[ -d "$full" ] || python3 tools/convert.py random-bundle --preset full --seed 1 --out "$full" > /tmp/bundle.log 2>&1
b=build/cuda
if [[ " $steps " == *" test "* ]]; then
    (cd $b && ctest -L cuda -j4 --timeout 200 --output-on-failure) > "$out/ctest.log" 2>&1
    grep -E "tests passed|tests failed|Failed|FAILED|Expected|Which is|differ" "$out/ctest.log" | head -30
    echo "== tested ($(el) s)"
fi
if [[ " $steps " == *" speed "* ]]; then
    MB_CUDA_SPEED=1 timeout 120 $b/tests/backend/test-cuda-backend --gtest_filter='cuda_speed.gemv*' > "$out/speed.log" 2>&1
    grep "^gemv" "$out/speed.log"
    echo "== speed ($(el) s)"
fi
bench() {   # label env... -- motionbricks
    local label=$1; shift
    timeout 60 env "$@" bench --model "$full" --device cuda --precision f32 --batch 1 --tokens 10,0 \
        > "/tmp/bench-$label.json" 2> "/tmp/bench-$label.err" || { echo "$label failed: $(tail -2 /tmp/bench-$label.err)"; return; }
    python3 - "$label" "/tmp/bench-$label.json" <<'PY' | tee -a "$out/bench.txt"
import json, sys
b = json.load(open(sys.argv[2]))
print(sys.argv[1].ljust(12), "  ".join("n=%s %.3f ms (p95 %.3f)" % (r["tokens"], r["ms_per_call_median"], r["ms_per_call_p95"])
                                       for r in b["runs"]))
PY
}
if [[ " $steps " == *" bench "* ]]; then
    for round in 1 2; do
        [ -n "$base" ] && bench base "$base/build/base/motionbricks"
        if [ -n "${MB_B1_BENCH:-}" ]; then    # label:ENV=V,ENV=V … instead of the configurations below
            for c in $MB_B1_BENCH; do bench "${c%%:*}" $(echo "${c#*:}" | tr ',' ' ') $b/motionbricks; done
            continue
        fi
        bench new $b/motionbricks
        bench rows16 MB_CUDA_SKINNY_ROWS=16 $b/motionbricks
    done
    echo "== bench ($(el) s)"
fi
if [[ " $steps " == *" ncu "* ]]; then
    for who in new ${MB_B1_NCU_BASE:+${base:+base}}; do
        mb=$b/motionbricks
        [ "$who" = base ] && mb=$base/build/base/motionbricks
        timeout 100 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \
            --csv --page raw "$mb" bench --model "$full" --device cuda --precision f32 --batch 1 --tokens 10 \
            --iterations 1 --warmup 1 > "$out/ncu-$who.csv" 2> /tmp/ncu.err || tail -3 /tmp/ncu.err
        echo "== ncu $who (second of two plans) ($(el) s)"
        python3 bench/ncu-summary.py "$out/ncu-$who.csv" | head -16
    done
fi
echo "== done ($(el) s)"
cat "$out/bench.txt" 2>/dev/null
