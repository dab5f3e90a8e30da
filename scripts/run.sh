#!/usr/bin/env bash
# The main job: builds the release preset and runs `motionbricks serve` (open the printed
# address in a browser). Uses models/g1-f32 + models/styles when present (get them with
# `./build/release/motionbricks download`); otherwise generates, once, a full-size bundle with
# seeded random weights and a few synthetic styles under build/demo (untrained: the motion
# means nothing, and the server and the viewer say so). Extra arguments go to `serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

if [ ! -f models/g1-f32/pose.gguf ]; then
    demo=build/demo
    if [ ! -f "$demo/g1-random-full/manifest.json" ]; then
        echo "run: models/g1-f32 not found; generating a random-weight demo bundle in $demo/g1-random-full (untrained weights)" >&2
        /usr/bin/python3 tools/convert.py random-bundle --preset full --seed 1 --out "$demo/g1-random-full"
    fi
    if [ ! -f "$demo/styles/walk.mbstyle" ]; then
        /usr/bin/python3 tools/convert.py demo-styles --out "$demo/styles"
    fi
fi
exec ./build/release/motionbricks serve "$@"
