#!/usr/bin/env bash
# fused-batch throughput, eighth session (issue 11), in one GPU-machine call: build, the changed
# tests, then `motionbricks bench` at B = 1,024 over the session's switches, alternated in one
# process tree on one card (MB_CUDA_ATTN, MB_CUDA_PRIORITY (then on by default), MB_BATCH_LANE_DONE, MB_CUDA_PAD_LD,
# MB_CUDA_IM2COL_BF16, MB_CUDA_IM2COL_TILED; "old" = all of them off = the seventh session's
# paths), profiled runs (MB_PREDICT_PROFILE / MB_CUDA_PROFILE, and MB_PROFILE_TIMELINE read by
# bench/timeline.py: where the GPU idles) and ncu of one 256-lane chunk.
# usage: bench/cuda-tput2.sh SHARED_DIR [GRID]   (GRID lines "label|ENV=… ENV=…|precision[|tokens]")
#   TPUT_SECONDS=N: steps that would start after N seconds are skipped (default 225)
set -uo pipefail
out=${OUT:-cuda-out}
mkdir -p "$out" "$out/runs"
shared=${1:?usage: bench/cuda-tput2.sh SHARED_DIR [GRID]}
limit=${TPUT_SECONDS:-225}
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
late() { [ "$(el)" -gt "$1" ]; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
export PKG_CONFIG_LIBDIR=/tmp/nopc
mkdir -p /tmp/nopc
full=/tmp/mb-full
[ -d "$full" ] || { python3 tools/convert.py random-bundle --preset full --seed 1 --out "$full" --quiet > "$out/bundle.log" 2>&1 & }
cmake -G Ninja -B build/cuda -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_ZMQ=OFF -DMB_PYTHON="$(command -v python3)" \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DMB_SHARED_DIR="$shared" > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
ninja -C build/cuda motionbricks test-cuda-backend test-backend-ops test-predict-batch cuda-run >> "$out/build.log" 2>&1 ||
    { grep -B2 -A8 'error' "$out/build.log" | head -60; exit 1; }
wait
echo "[$(el) s] built"
bin=build/cuda/motionbricks
run=build/cuda/tests/backend/cuda-run
wait
{
    MB_CUDA_FULL_BUNDLE=$full timeout 120 "$run" build/cuda/tests/backend/test-cuda-backend
    echo "test-cuda-backend rc $?"
    timeout 60 "$run" build/cuda/tests/backend/test-backend-ops
    echo "test-backend-ops rc $?"
    timeout 60 "$run" build/cuda/tests/motion/test-predict-batch --gtest_filter='-*4096*'
    echo "test-predict-batch rc $?"
} > "$out/tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED) |FAILED|rc [0-9]|max (lane|difference)|differ|durations|tokens [0-9]' "$out/tests.log" | head -40
echo "[$(el) s] tested"

bench() {     # label envs precision [tokens]
    local label=$1 envs=$2 p=$3 tok=${4:-10,0}
    if late "$limit"; then echo "$label skipped (time)"; return; fi
    env $envs timeout 60 "$bin" bench --model "$full" --device cuda --precision "$p" --batch 1024 --tokens "$tok" \
        --iterations 5 --warmup 1 > "$out/runs/$label.json" 2> "$out/runs/$label.err" ||
        { echo "$label failed: $(tail -2 "$out/runs/$label.err")"; return; }
    python3 - "$label" "$out/runs/$label.json" "$out/runs/$label.err" <<'PY' | tee -a "$out/table.txt"
import json, sys
b = json.load(open(sys.argv[2]))
cells = ["%s %.0f (%.1f ms)" % ("n10" if r["tokens"] == 10 else "pred", r["frames_per_s"], r["ms_per_call_median"])
         for r in b["runs"]]
print("%-14s %s" % (sys.argv[1], "  ".join(cells)))
for line in open(sys.argv[3]):
    if "profile" in line: print("    " + line.strip())
PY
}
old="MB_CUDA_ATTN=0 MB_CUDA_PRIORITY=0 MB_BATCH_LANE_DONE=0 MB_CUDA_PAD_LD=0 MB_CUDA_IM2COL_BF16=0 MB_CUDA_IM2COL_TILED=0"
prof="MB_PREDICT_PROFILE=1 MB_CUDA_PROFILE=1"
tl="MB_PREDICT_PROFILE=1 MB_CUDA_PROFILE=1 MB_PROFILE_TIMELINE"
grid1=${2:-"new-tf32||tf32
old-tf32|$old|tf32
new-bf16||bf16
old-bf16|$old|bf16
new-f32||f32
old-f32|$old|f32
tl-new|$tl=$out/runs/tl-new|tf32|10
tl-old|$tl=$out/runs/tl-old $old|tf32|10
new2-tf32||tf32
old2-tf32|$old|tf32
nopri-tf32|MB_CUDA_PRIORITY=0|tf32
new3-tf32||tf32
nopri2-tf32|MB_CUDA_PRIORITY=0|tf32
nolane-tf32|MB_BATCH_LANE_DONE=0|tf32
new2-bf16||bf16
pad0-bf16|MB_CUDA_PAD_LD=0|bf16
tiled0-bf16|MB_CUDA_IM2COL_TILED=0|bf16
tiled0-tf32|MB_CUDA_IM2COL_TILED=0|tf32
old2-bf16|$old|bf16
new4-tf32||tf32
old3-tf32|$old|tf32"}
ncu_run() {   # precision
    local p=$1
    if late 120; then echo "ncu $p skipped (time)"; return; fi
    timeout 45 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \
        --csv --page raw "$bin" bench --model "$full" --device cuda --precision "$p" --batch 256 --tokens 10 \
        --iterations 1 --warmup 1 > "$out/ncu-$p-256.csv" 2> /tmp/ncu.err || tail -3 /tmp/ncu.err
    echo "== [$(el) s] ncu $p B=256 (second of two plans)"
    python3 bench/ncu-summary.py "$out/ncu-$p-256.csv" | head -16
}
ncu_run bf16
while IFS='|' read -r label envs p tok; do
    [ -n "$label" ] && bench "$label" "$envs" "$p" "$tok"
done <<< "$grid1"
for t in tl-new tl-old; do
    [ -f "$out/runs/$t.gpu" ] && { echo "== timeline $t"; python3 bench/timeline.py "$out/runs/$t" 5; }
done
tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs"
echo "[$(el) s] done"
