#!/usr/bin/env bash
# fused-batch throughput on the GPU machine, two builds in one call: frames/s of `motionbricks
# bench` for a baseline and a candidate binary (same bundle, same card), the candidate also over
# states in flight (MB_CUDA_BATCH_STATES), chunk sizes (MB_CUDA_BATCH_LANES), pinned copies
# (MB_HOST_PIN=0) and the cuBLASLt bias epilogue (MB_CUDA_LT=0), plus one profiled run per precision
# (MB_PREDICT_PROFILE / MB_CUDA_PROFILE: host step times and GPU time per network, on stderr).
# usage: bench/cuda-tput.sh BASE_MOTIONBRICKS NEW_MOTIONBRICKS [GRID]
#   GRID: lines "label|B or N (binary)|ENV=... ENV=...|precision|batches" (default: the grid below)
#   TPUT_SECONDS=N: runs that would start after N seconds are skipped (default 240)
set -uo pipefail
out=${OUT:-cuda-out}
mkdir -p "$out"
base=$1 new=$2
full=/tmp/mb-full
[ -d "$full" ] || python3 tools/convert.py random-bundle --preset full --seed 1 --out "$full" > "$out/bundle.log" 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
t0=$(date +%s)
run() {     # label binary env precision batches
    local label=$1 bin=$2 envs=$3 p=$4 b=$5
    if [ $(( $(date +%s) - t0 )) -gt "${TPUT_SECONDS:-240}" ]; then echo "$label skipped (time)"; return; fi
    env $envs timeout 120 "$bin" bench --model "$full" --device cuda --precision "$p" --batch "$b" --tokens 10,0 \
        --iterations 5 --warmup 1 > "$out/b-$label.json" 2> "$out/b-$label.err" || { echo "$label failed: $(tail -2 "$out/b-$label.err")"; return; }
    python3 - "$label" "$out/b-$label.json" "$out/b-$label.err" <<'PY' | tee -a "$out/table.txt"
import json, sys
b = json.load(open(sys.argv[2]))
cells = []
for r in b["runs"]:
    cells.append("B=%d %s %.0f" % (r["batch"], "n10" if r["tokens"] == 10 else "pred", r["frames_per_s"]))
print("%-22s %s" % (sys.argv[1], "  ".join(cells)))
for line in open(sys.argv[3]):
    if "profile" in line: print("    " + line.strip())
PY
}
grid=${3:-}
if [ -z "$grid" ]; then
grid="base-f32|B||f32|1024,4096
new-f32|N||f32|1024,4096
base-tf32|B||tf32|1024,4096
new-tf32|N||tf32|1024,4096
base-bf16|B||bf16|1024
new-bf16|N||bf16|1024"
fi
while IFS='|' read -r label which envs p b; do
    [ -n "$label" ] || continue
    bin=$new; [ "$which" = B ] && bin=$base
    run "$label" "$bin" "$envs" "$p" "$b"
done <<< "$grid"
echo "== table"; cat "$out/table.txt"
