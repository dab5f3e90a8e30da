#!/usr/bin/env bash
# The main job: builds the release preset and runs `motionbricks` on a model bundle.
# Uses models/g1-f32 when present (the published weights); otherwise generates, once,
# a full-size bundle with seeded random weights (untrained: its motion means nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

model=models/g1-f32
if [ ! -f "$model/pose.gguf" ]; then
    model=build/demo/g1-random-full
    if [ ! -f "$model/manifest.json" ]; then
        echo "run: models/g1-f32 not found; generating a random-weight demo bundle in $model (untrained weights)" >&2
        /usr/bin/python3 tools/convert.py random-bundle --preset full --seed 1 --out "$model"
    fi
fi
exec ./build/release/motionbricks inspect "$model"
