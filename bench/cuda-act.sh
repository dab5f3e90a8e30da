#!/usr/bin/env bash
# activation-epilogue session on the GPU machine (one call): builds this tree for sm_90a only
# (motionbricks, cuda-run and the two backend tests), makes the full random bundle meanwhile,
# runs test-cuda-backend and test-backend-ops through cuda-run, then `motionbricks bench` at
# B = 1,024 for TF32, BF16 and F32, each with the fused epilogues and with MB_CUDA_ACT_EPILOGUE=0,
# alternating. Logs under $OUT; a short table last.
# usage: bench/cuda-act.sh [SHARED_DIR]   (ACT_SECONDS=N: no bench pair starts after N s; default 170)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
shared=${1:-$PWD/../shared}
mkdir -p "$out" /tmp/nopc
export PKG_CONFIG_LIBDIR=/tmp/nopc
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
full=/tmp/mb-full
( [ -d "$full" ] || python3 tools/convert.py random-bundle --preset full --seed 1 --out "$full" > "$out/bundle.log" 2>&1 ) &
bundle=$!
cmake -G Ninja -B build/cuda -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_ZMQ=OFF -DMB_PYTHON="$(command -v python3)" \
    -DMB_SHARED_DIR="$shared" -DCMAKE_CUDA_ARCHITECTURES=90a-real > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build build/cuda -j16 --target motionbricks cuda-run test-cuda-backend test-backend-ops > "$out/build.log" 2>&1 ||
    { grep -B2 -A12 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
echo "== built ($(el) s)"
b=build/cuda
for t in test-cuda-backend test-backend-ops; do
    timeout 90 $b/tests/backend/cuda-run $b/tests/backend/$t > "$out/$t.log" 2>&1
    echo "$t: rc $? $(grep -E '^\[  (PASSED|FAILED)|tests ran' "$out/$t.log" | tr '\n' ' ')"
    grep -E "FAILED|Failure|Expected|Which is|differs" "$out/$t.log" | head -20
done
grep -E "fused vs composed" "$out/test-cuda-backend.log" | head -12
echo "== tested ($(el) s)"
wait $bundle
run() {     # label precision env...
    local label=$1 p=$2; shift 2
    env "$@" timeout 60 $b/motionbricks bench --model "$full" --device cuda --precision "$p" --batch 1024 --tokens 10,0 \
        --iterations 5 --warmup 1 > "$out/b-$label.json" 2> "$out/b-$label.err" || { echo "$label failed: $(tail -2 "$out/b-$label.err")"; return; }
    python3 - "$label" "$out/b-$label.json" <<'PY' | tee -a "$out/table.txt"
import json, sys
b = json.load(open(sys.argv[2]))
print("%-14s %s" % (sys.argv[1], "  ".join("%s %.0f" % ("n10" if r["tokens"] == 10 else "pred", r["frames_per_s"]) for r in b["runs"])))
PY
}
for p in tf32 bf16 f32; do
    if [ "$(el)" -gt "${ACT_SECONDS:-170}" ]; then echo "$p skipped (time)"; continue; fi
    run "$p-fused" $p
    run "$p-apart" $p MB_CUDA_ACT_EPILOGUE=0
done
echo "== done ($(el) s)"
echo "== table (frames/s, B = 1,024)"; cat "$out/table.txt"
