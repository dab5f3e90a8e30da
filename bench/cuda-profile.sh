#!/usr/bin/env bash
# per-kernel GPU time of fused plans on the GPU machine (ncu, one metric: kernel duration; graph
# nodes profiled one by one), summed by kernel name: where a batch's device time goes, and how
# much of the wall time it is. Writes $OUT/ncu-<label>.csv and prints the summaries.
# usage: bench/cuda-profile.sh "PRECISION:BATCH ..." (default "tf32:256 f32:256")
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cuda-out}
mkdir -p "$out"
build=build/cuda
cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON -DMB_PYTHON="$(command -v python3)" > /tmp/cfg.log 2>&1 ||
    { tail -20 /tmp/cfg.log; exit 1; }
cmake --build "$build" -j"$(nproc)" --target motionbricks > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
[ -d /tmp/mb-full ] || python3 tools/convert.py random-bundle --preset full --seed 1 --out /tmp/mb-full --quiet
for spec in ${1:-tf32:256 f32:256}; do
    p=${spec%%:*} b=${spec##*:}
    timeout 240 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \
        --csv --page raw "$build/motionbricks" bench --model /tmp/mb-full --device cuda --precision "$p" --batch "$b" \
        --tokens 10 --iterations 1 --warmup 1 > "$out/ncu-$p-$b.csv" 2> /tmp/ncu.err || tail -3 /tmp/ncu.err
    echo "== $p B=$b (second of two plans)"
    python3 bench/ncu-summary.py "$out/ncu-$p-$b.csv"
done
