#!/bin/sh
# `motionbricks bench` and the model options of every verb, on the small random bundle:
# the JSON has one run per (batch, tokens) with positive times and the frames the token
# counts imply; bad options and devices this build lacks fail with their exit codes
# usage: test-cmd-bench.sh MOTIONBRICKS BUNDLE PYTHON
set -eu
mb=$1 bundle=$2 py=$3
[ -d "$bundle" ] || { echo "skipped: no bundle at $bundle"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$mb" bench --model "$bundle" --device cpu --threads 1 --tokens 6,0 --batch 1,2 --iterations 2 --warmup 0 \
    --output "$out/b.json" > "$out/stdout.json"
cmp "$out/b.json" "$out/stdout.json"
"$py" - "$out/b.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
assert b["bench"] == "motionbricks-bench-v1", b["bench"]
assert b["model"]["device"] == "cpu" and b["model"]["precision"] == "f32" and b["model"]["threads"] == 1
assert b["floor"]["read_gb_per_s"] > 0 and b["floor"]["ms_per_plan"] > 0
assert "device_memory" not in b, b["device_memory"]    # CUDA only
runs = b["runs"]
assert [(r["batch"], r["tokens"]) for r in runs] == [(1, 6), (1, "predicted"), (2, 6), (2, "predicted")], runs
for r in runs:
    assert 0 < r["ms_per_call_median"] <= r["ms_per_call_p95"], r
    assert r["frames_per_s"] > 0 and r["ratio_to_floor"] > 0
    assert set(r["stage_ms_lane0"]) == {"prepare", "root", "pose", "decoder", "finish"}
    if r["tokens"] == 6:
        assert r["frames_per_call"] == 24 * r["batch"], r
    else:
        assert r["frames_per_call"] % (4 * r["batch"]) == 0 and 24 * r["batch"] <= r["frames_per_call"] <= 64 * r["batch"], r
print("bench json ok")
PY

expect() {    # expected-exit message-regex command...
    want=$1 re=$2
    shift 2
    set +e
    "$@" > "$out/o" 2> "$out/e"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || { echo "FAIL: exit $got (want $want): $*"; cat "$out/e"; exit 1; }
    grep -Eq -e "$re" "$out/e" || { echo "FAIL: stderr lacks /$re/: $*"; cat "$out/e"; exit 1; }
}
expect 2 "--device must be cpu, cuda or auto" "$mb" bench --model "$bundle" --device gpu
expect 2 "--precision must be f32, tf32 or bf16" "$mb" infer --model "$bundle" --request x --output y --precision fp8
expect 2 "--tokens must list" "$mb" bench --model "$bundle" --tokens 5
expect 2 "--batch must list" "$mb" bench --model "$bundle" --batch 0
expect 1 "precision BF16 runs on MB_DEVICE_CUDA only" "$mb" bench --model "$bundle" --device cpu --precision bf16
if ! "$mb" bench --model "$bundle" --device cuda --iterations 1 --warmup 0 > "$out/o" 2> "$out/e"; then
    grep -q "MB_DEVICE_CUDA" "$out/e" || { echo "FAIL: --device cuda failed without naming CUDA"; cat "$out/e"; exit 1; }
    echo "no usable CUDA here: $(cat "$out/e")"
else
    # the device memory: the model's F32 weights at least, the runs' pooled memory on top, used <= total
    "$py" - "$out/o" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
m = b["device_memory"]
assert m["model_bytes_after_load"] >= 4 * b["model"]["parameters"], m
assert m["model_bytes_after_runs"] >= m["model_bytes_after_load"], m
for k in ("after_load", "after_runs"):
    assert 0 < m["device_used_bytes_" + k] <= m["device_total_bytes"], m
print("bench device memory ok")
PY
fi
echo "ok"
