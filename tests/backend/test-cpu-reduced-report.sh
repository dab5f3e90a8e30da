#!/usr/bin/env bash
# writes full-size random bundles (seed 1) in F32, BF16 and Q8_0 with tools/convert.py
# (about a minute each, 1.4 GB in all) and runs the motion-level report on them.
# Usage: test-cpu-reduced-report.sh TEST_BIN PYTHON WORK_DIR. Exit 77 without numpy.
set -euo pipefail
bin="$1"; py="$2"; work="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$py" -c "import numpy" 2>/dev/null || { echo "skipped: $py with numpy not found"; exit 77; }
mkdir -p "$work"
for d in f32 bf16 q8_0; do
    [ -f "$work/$d/manifest.json" ] && continue
    "$py" "$root/tools/convert.py" random-bundle --preset full --seed 1 --dtype "$d" --out "$work/$d" --quiet
done
MB_REDUCED_BUNDLES="$work" "$bin"
