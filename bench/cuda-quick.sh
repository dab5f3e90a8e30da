#!/usr/bin/env bash
# a short GPU-machine call (a lease with little device time left): runs the CUDA suites that check
# predict end to end, then B = 1 F32 (alternated with a baseline build where one is packed),
# memcheck on a plan, B = 1 BF16 and B = 1,024 TF32, profiled B = 1 runs, racecheck on the motion ops
# and ncu kernel durations of a plan; steps that would start late are skipped. Fixtures from
# .gpu/shared and, when there, the programs from .gpu/build.tgz (bench/cuda-pack.sh; configure that
# build with -DMB_MUJOCO=OFF), else it builds them.
# Switches under test: QUICK_TEST_ENV (assignments, e.g. 'MB_CUDA_GEMV=old MB_CUDA_GRAPHS=0') is set
# for the suites, whose failures are then rerun without it; QUICK_VARIANTS ('label:A=1 B=2;label2:C=0')
# are timed at B = 1 in alternation with the defaults, QUICK_ROUNDS times (default 2), and with
# QUICK_SPEED set the GEMV timings (cuda_speed.gemv_at_batch_one, MB_CUDA_GEMV_SPEED=$QUICK_SPEED) run.
# usage: [QUICK_BUDGET=s] [QUICK_TESTS='backend-ops|predict'] [QUICK_TEST_ENV=..] [QUICK_VARIANTS=..]
#        [QUICK_ROUNDS=n] [QUICK_SPEED=hows] [QUICK_BACKENDS=gtest filter of test-cuda-backend, with
#        QUICK_TEST_ENV; default *concurrent*] [QUICK_AFTER_ENV=switches for the steps after the timings]
#        [QUICK_RACECHECK=gtest filter of test-cuda-backend] [QUICK_TIMELINE=1] [QUICK_TABLE=1]
#        [QUICK_BASE_ENV=switches for the packed baseline's runs] [QUICK_NCU_DETAIL=1]
#        [QUICK_SKIP='upstream memcheck bf16 tf32 profile racecheck ncu': steps to leave out] OUT=DIR bench/cuda-quick.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/nopc
export PKG_CONFIG_LIBDIR=/tmp/nopc MB_SHARED_DIR=$PWD/.gpu/shared
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
skip() { [[ " ${QUICK_SKIP:-} " == *" $1 "* ]]; }     # QUICK_SKIP='bf16 tf32 …': steps left out
T=${QUICK_BUDGET:-170}     # seconds after which no further step starts (a lease cut short keeps $out/quick.log)
exec > >(tee -a "$out/quick.log") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E "Model name"
python3 tools/convert.py random-bundle --preset full --seed 1 --out /tmp/mb-full > /tmp/bundle.log 2>&1 &
bundle_pid=$!
b=""
if [ -f .gpu/build.tgz ]; then     # programs packed by bench/cuda-pack.sh: no compiling here
    tar -xf .gpu/build.tgz; b=$(cat .gpu/build-dir); src=$(cat .gpu/checkout-path)
    if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
    if ldd $b/motionbricks $b/tests/*/test-* 2>/dev/null | grep "not found"; then echo "== packed programs lack libraries: building"; b=""; fi
fi
if [ -z "$b" ]; then
    b=build/g
    cmake -G Ninja -B $b -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_ZMQ=OFF -DMB_MUJOCO=OFF -DMB_PYTHON="$(command -v python3)" \
        -DMB_SHARED_DIR="$MB_SHARED_DIR" > /tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
    cmake --build $b -j16 --target motionbricks cuda-run test-backend-ops test-predict test-predict-batch test-agent test-root-planner \
        test-pose-planner test-vq-decoder > "$out/build.log" 2>&1 ||
        { grep -B2 -A20 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
fi
wait $bundle_pid; echo "== built or unpacked: $b ($(el) s)"     # (a bare wait would wait for the tee too)
tests=${QUICK_TESTS:-backend-ops|predict|predict-batch|agent|root-planner|pose-planner|vq-decoder}
[ -n "${QUICK_TEST_ENV:-}" ] && echo "== suites with $QUICK_TEST_ENV"
(cd $b && env ${QUICK_TEST_ENV:-} timeout 150 ctest -R "cuda\.test-($tests)\$" -j4 --timeout 120 -V) > "$out/ctest.log" 2>&1
grep -E "tests passed|tests failed|\*\*\*Failed|FAILED|Failure|Expected|Which is|lanes vs alone|untraced|motion_finish, " "$out/ctest.log" | grep -v "OK \]\|RUN" | sort | uniq -c | sort -rn | head -40
if [ -n "${QUICK_TEST_ENV:-}" ] && grep -q "tests failed" "$out/ctest.log"; then     # do the failures follow the switches?
    (cd $b && timeout 150 ctest -R "cuda\.test-($tests)\$" --rerun-failed -j4 --timeout 120 -V) > "$out/ctest-rerun.log" 2>&1
    echo "== the failed suites rerun without $QUICK_TEST_ENV: $(grep -E "tests passed|tests failed" "$out/ctest-rerun.log")"
fi
[ -n "${QUICK_SPEED:-}" ] && MB_CUDA_SPEED=1 MB_CUDA_GEMV_SPEED="$QUICK_SPEED" timeout 150 $b/tests/backend/test-cuda-backend \
    --gtest_filter='cuda_speed.gemv*' 2>&1 | grep -E "^gemv|FAIL" | tee "$out/speed.txt"
echo "== tested ($(el) s)"
bench() {   # label precision batch env... motionbricks
    local label=$1 p=$2 batch=$3; shift 3
    local it=""; [ "$batch" != 1 ] && it="--iterations 5 --warmup 1"
    timeout 100 env "$@" bench --model /tmp/mb-full --device cuda --precision $p --batch $batch --tokens 10,0 $it \
        > /tmp/bench.json 2> /tmp/bench.err || { echo "$label failed: $(tail -2 /tmp/bench.err)"; return; }
    python3 - "$label" /tmp/bench.json <<'PY' | tee -a "$out/bench.txt"
import json, sys
b = json.load(open(sys.argv[2]))
for r in b["runs"]:
    s = r["stage_ms_lane0"]
    print(f'{sys.argv[1]:>6} {b["model"]["precision"]:>4} B={r["batch"]:<4} n={str(r["tokens"]):>9}: {r["ms_per_call_median"]:8.3f} ms (p95 {r["ms_per_call_p95"]:.3f}) {r["frames_per_s"]:10.0f} frames/s  root {s["root"]:.3f} pose {s["pose"]:.3f} dec {s["decoder"]:.3f} fin {s["finish"]:.3f}')
m = b.get("device_memory")
if m and (b["model"]["precision"] != "f32" or any(r["batch"] > 1 for r in b["runs"])):
    print(f'{sys.argv[1]:>6} {b["model"]["precision"]:>4} device memory MiB: model {m["model_bytes_after_load"] / 2**20:.1f} after load, '
          f'{m["model_bytes_after_runs"] / 2**20:.1f} after the runs; device used {m["device_used_bytes_after_runs"] / 2**20:.0f} of {m["device_total_bytes"] / 2**20:.0f}')
PY
}
N=$b/motionbricks
# batch one alternated with, where packed (.gpu/base.xz), a baseline build, twice
B0=""; [ -f .gpu/base.xz ] && xz -dc .gpu/base.xz > /tmp/base-mb && chmod +x /tmp/base-mb && B0=/tmp/base-mb
for round in $(seq ${QUICK_ROUNDS:-2}); do
    bench main f32 1 $N; [ -n "$B0" ] && bench base f32 1 ${QUICK_BASE_ENV:-} $B0
    IFS=';' read -ra vs <<< "${QUICK_VARIANTS:-}"
    for v in "${vs[@]}"; do bench "${v%%:*}" f32 1 ${v#*:} $N; done
done
env ${QUICK_TEST_ENV:-} timeout 90 $b/tests/backend/test-cuda-backend --gtest_filter="${QUICK_BACKENDS:-*concurrent*}" 2>&1 |
    grep -E "PASSED|FAILED|Failure|error|Expected|Which is|full bundle" | head -20
# what follows (upstream beside ours, sanitizers, batched runs, profile, ncu) with QUICK_AFTER_ENV's switches
[ -n "${QUICK_AFTER_ENV:-}" ] && { export ${QUICK_AFTER_ENV}; echo "== from here on: $QUICK_AFTER_ENV"; }
# the same-run upstream comparison where an upstream checkout's motionbricks/ folder is at .gpu/upstream
if [ -d .gpu/upstream/motionbricks/motionbricks ] && [ $(el) -lt $((T - 30)) ] && ! skip upstream; then
    MOTIONBRICKS_LIBRARY=$PWD/$b/src/capi/libmotionbricks.so PYTHONUNBUFFERED=1 timeout 150 python3 bench/upstream-torch.py \
        --upstream .gpu/upstream/motionbricks --bundle /tmp/mb-full --seed 1 --iterations 21 \
        --case .gpu/shared/fixtures/reference-small/cases/walk_fwd_fixed10_argmax.npz --out "$out/upstream.json" \
        > "$out/upstream.log" 2>&1 || echo "upstream comparison failed: $(tail -5 "$out/upstream.log")"
    [ -f "$out/upstream.json" ] && python3 bench/upstream-summary.py "$out/upstream.json"
    echo "== upstream ($(el) s)"
fi
ops='*motion_finish*:*root_conditions*:*scatter_rows*'
[ $(el) -lt $((T - 20)) ] && ! skip memcheck && { timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $N bench --model /tmp/mb-full \
    --device cuda --precision f32 --batch 1 --tokens 10 --iterations 2 --warmup 0 > "$out/cs-memcheck.log" 2>&1
    echo "memcheck plan: rc $? $(grep -E 'ERROR SUMMARY' $out/cs-memcheck.log)"; }
[ $(el) -lt $((T - 60)) ] && ! skip bf16 && bench main bf16 1 $N
[ $(el) -lt $((T - 40)) ] && ! skip tf32 && bench main tf32 1024 $N
# QUICK_TABLE=1: frames/s at B = 8 … 4,096 in each precision (the issue's table)
if [ -n "${QUICK_TABLE:-}" ]; then
    for p in f32 tf32 bf16; do [ $(el) -lt $((T - 60)) ] && bench table $p 8,64,256,1024,4096 $N; done
fi
# where batch one's time goes: GPU time by network, the GPU's idle time, host steps
[ $(el) -lt $((T - 5)) ] && ! skip profile && { MB_CUDA_PROFILE=1 MB_PREDICT_PROFILE=1 timeout 30 $N bench --model /tmp/mb-full \
    --device cuda --precision f32 --batch 1 --tokens 10,0 > /dev/null 2> "$out/prof.txt"; echo "-- profile"; tail -n 4 "$out/prof.txt"; }
[ $(el) -lt $T ] && ! skip racecheck && { timeout 30 compute-sanitizer --tool racecheck --error-exitcode 9 $b/tests/backend/test-backend-ops --gtest_filter="$ops" > "$out/cs-racecheck.log" 2>&1; echo "racecheck ops: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $out/cs-racecheck.log)"; }
# QUICK_TIMELINE=1: every recording's GPU span and every host step of twenty 10-token plans at B = 1
# ($out/tl.gpu, $out/tl.host: where the GPU idles between and inside plans)
[ -n "${QUICK_TIMELINE:-}" ] && [ $(el) -lt $T ] && { MB_CUDA_PROFILE=1 MB_PREDICT_PROFILE=1 MB_PROFILE_TIMELINE=$out/tl \
    timeout 30 $N bench --model /tmp/mb-full --device cuda --precision f32 --batch 1 --tokens 10 --iterations 20 --warmup 2 \
    > /dev/null 2> "$out/tl.txt"; tail -n 3 "$out/tl.txt"; }
# QUICK_RACECHECK: a gtest filter of test-cuda-backend to run under racecheck too (new kernels' shared memory)
[ -n "${QUICK_RACECHECK:-}" ] && [ $(el) -lt $T ] && { timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
    $b/tests/backend/test-cuda-backend --gtest_filter="$QUICK_RACECHECK" > "$out/cs-racecheck2.log" 2>&1
    echo "racecheck $QUICK_RACECHECK: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $out/cs-racecheck2.log)"; }
# kernel by kernel (ncu serialises them: durations without overlap), second of two plans
[ $(el) -lt $((T - 20)) ] && ! skip ncu && command -v ncu > /dev/null && { timeout 100 ncu --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,launch__grid_size --csv --page raw $N bench --model /tmp/mb-full --device cuda --precision f32 \
    --batch 1 --tokens 10 --iterations 1 --warmup 1 > "$out/ncu.csv" 2> /tmp/ncu.err || tail -3 /tmp/ncu.err
    python3 bench/ncu-summary.py "$out/ncu.csv" | head -24; }
# QUICK_NCU_DETAIL=1: why a plan's kernels take as long as they do, not only how long: ncu's speed-of-light,
# memory, scheduler, warp-state, instruction and source-counter (where warps stall) sections for 8 kernels
# of a pose layer (GEMVs, LayerNorms, attention) and 2 of the convs' skinny kernel ($out/ncu-detail.txt)
if [ -n "${QUICK_NCU_DETAIL:-}" ] && [ $(el) -lt $((T - 20)) ] && command -v ncu > /dev/null; then
    for sel in "regex:gemv|layer_norm|attention 120 8" "regex:skinny 50 2"; do
        set -- $sel
        timeout 120 ncu --cache-control none --clock-control none -k "$1" --launch-skip $2 --launch-count $3 \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
            --section LaunchStats --section Occupancy --section InstructionStats --section SourceCounters --page details $N bench --model /tmp/mb-full --device cuda \
            --precision f32 --batch 1 --tokens 10 --iterations 1 --warmup 1 >> "$out/ncu-detail.txt" 2>> /tmp/ncu.err ||
            tail -3 /tmp/ncu.err
    done
    grep -E '^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Stall|Issued Warp|No Eligible|Achieved Occupancy' \
        "$out/ncu-detail.txt" | head -60
fi
echo "== done ($(el) s)"
