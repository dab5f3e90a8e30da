#!/usr/bin/env bash
# `motionbricks parity`, `compare-reports` and `replay-info` end to end on upstream's recorded
# demo-agent run (../shared/fixtures/agent-small → .mbparity by tools/reference/from_agent_run.py):
# every plan passes both gates with exact durations; 1 thread against 2 gives identical reports
# and traces; a fixture whose expected motion is moved 5 cm fails (exit 1); a corrupt fixture,
# reports of different fixtures and a corrupt replay are refused (exit 2); the session's replay
# (360 frames, root + 29 bodies, 19 plans) reads back.
# Usage: test-parity-agent-small.sh MOTIONBRICKS_BIN SHARED_DIR PYTHON WORK_DIR. Exit 77 when absent.
set -euo pipefail
bin="$1"; shared="$2"; py="$3"; work="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
fx="$shared/fixtures"
[ -f "$fx/agent-small/agent_run.npz" ] || { echo "skipped: ../shared/fixtures/agent-small not found"; exit 77; }
"$py" -c "import numpy" 2>/dev/null || { echo "skipped: $py with numpy not found"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
w="$fx/reference-small/weights"
"$py" "$root/tools/convert.py" bundle --pose "$w/pose.safetensors" --root "$w/root.safetensors" --vqvae "$w/vqvae.safetensors" \
    --stats "$w/stats.safetensors" --out "$work/bundle" --pose-heads 4 --root-heads 4 --dilation-growth 3 --quiet
"$py" "$root/tools/convert.py" styles --clips "$fx/agent-small/G1-clip-synthetic.ckpt" --out "$work/styles" >/dev/null
"$py" "$root/tools/reference/from_agent_run.py" --fixtures "$fx" --out "$work/fx"

for t in 1 2; do
    "$bin" parity "$work/fx/agent-small.mbparity" --model "$work/bundle" --styles "$work/styles" --report "$work/r$t.json" \
        --threads $t --trace-dir "$work/t$t" > "$work/parity$t.log"
done
tail -1 "$work/parity1.log"
"$bin" compare-reports "$work/r1.json" "$work/r2.json" --output "$work/c.json" --left-traces "$work/t1" --right-traces "$work/t2"
"$py" - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def check(cond, what):
    if not cond:
        sys.exit("check failed: " + what)
r = json.load(open(w + "/r1.json"))
check(r["format"] == "motionbricks-open-loop-report-v1" and r["passed"] and r["strict_passed"], "report passes")
check(r["summary"]["duration_matches"] == r["summary"]["duration_total"] == 19, "19/19 durations")
check(r["tolerances"] == {"root_m": 0.01, "rotation_deg": 2.0, "joint_m": 0.02, "target_root_m": 0.002,
                          "target_rotation_deg": 0.2, "target_joint_m": 0.003}, "registry tolerances")
p = r["plans"][3]
for k in ("index", "command_frame", "mode", "style", "seed", "expected_frames", "actual_frames", "duration_exact", "passed",
          "movement", "facing", "metrics", "expected_roots", "native_roots", "native_rotations", "expected_joint_positions",
          "native_joint_positions", "native_target_roots", "native_target_rotations", "expected_target_joint_positions",
          "native_target_joint_positions"):
    check(k in p, "plan key " + k)
check(len(p["native_rotations"]) == p["actual_frames"] and len(p["native_rotations"][0]) == 34, "native_rotations [F][34][4]")
worst = r["summary"]["worst"]
check(worst["root_m"]["max"] < 1e-4 and worst["joint_m"]["max"] < 2e-4 and worst["rotation_deg"]["max"] < 0.1, "maxima")
c = json.load(open(w + "/c.json"))
check(c["format"] == "motionbricks-native-backend-open-loop-comparison-v1" and c["passed"], "comparison passes")
check(c["summary"]["duration_matches"] == 19, "no duration mismatch between 1 and 2 threads")
n = c["neural"]
check(n["duration_token_mismatches"] == 0 and n["pose_token_mismatches"] == 0 and n["pose_token_total"] > 0, "tokens equal")
check(all(v["max_abs"] == 0 for v in n["continuous_maxima"].values()), "threads give identical tensors")
t = json.load(open(w + "/t1/native-plan-000.json"))
check(t["format"] == "motionbricks-native-neural-trace-v1" and "decoder.output" in t["tensors"], "trace")
print("report and comparison as expected; worst", {k: v["max"] for k, v in worst.items()})

PY
"$py" - "$work" "$root" <<'PY'
import sys
sys.path.insert(0, sys.argv[2] + "/tools/reference")
import numpy as np
from mbfixtures import read_mbparity, write_mbparity, write_mbreplay
w = sys.argv[1]
f = read_mbparity(w + "/fx/agent-small.mbparity")
f["plans"][5]["expected_roots"] = f["plans"][5]["expected_roots"] + np.float32([0.05, 0, 0])
write_mbparity(w + "/off.mbparity", f["fps"], f["parents"], f["neutral"], f["plans"][:8])
b = bytearray(open(w + "/fx/agent-small.mbparity", "rb").read())
b[580 + 96 + 12: 580 + 96 + 16] = np.float32(3).tobytes()   # plan 0, context quaternion 0, w = 3
open(w + "/bad.mbparity", "wb").write(bytes(b))
pos = np.zeros((40, 3, 3), np.float32); pos[:, 0, 0] = np.arange(40) * 0.01; pos[-1, 0] = [1.25, 0.75, -2.5]
write_mbreplay(w + "/s.mbreplay", 30, [-1, 0, 1], np.zeros(40), np.r_[[-1] * 4, [0] * 36], np.zeros((40, 7)), pos,
               [4], [2], [28], np.zeros((1, 4, 3, 3)))
open(w + "/cut.mbreplay", "wb").write(open(w + "/s.mbreplay", "rb").read()[:-4])
PY
set +e
"$bin" parity "$work/off.mbparity" --model "$work/bundle" --styles "$work/styles" --report "$work/off.json" > "$work/off.log"; rc=$?
[ $rc -eq 1 ] || { echo "a fixture 5 cm off: exit $rc, expected 1"; exit 1; }
grep -q '^plan   5 .* FAIL$' "$work/off.log" || { echo "plan 5 not reported as failing"; cat "$work/off.log"; exit 1; }
"$py" -c "import json,sys; r=json.load(open('$work/off.json')); sys.exit(0 if not r['passed'] and r['summary']['worst']['root_m']['plan']==5 else 1)" \
    || { echo "off.json does not name plan 5"; exit 1; }
"$bin" parity "$work/bad.mbparity" --model "$work/bundle" --styles "$work/styles" --report "$work/bad.json" 2> "$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q 'plan 0 context local rotations quaternion 0' "$work/bad.log" && [ ! -e "$work/bad.json" ] \
    || { echo "corrupt fixture: exit $rc: $(cat "$work/bad.log")"; exit 1; }
"$bin" compare-reports "$work/r1.json" "$work/off.json" --output "$work/x.json" 2> "$work/x.log"; rc=$?
[ $rc -eq 2 ] && grep -q 'plans' "$work/x.log" || { echo "reports of different fixtures: exit $rc: $(cat "$work/x.log")"; exit 1; }
"$bin" replay-info "$work/s.mbreplay" > "$work/info.txt"; rc=$?
printf 'format: motionbricks-portable-replay-v1\nfps: 30\nframes: 40\njoints: 3\nqpos: 7\nplans: 1\ntarget-frames: 4\nfirst-root: 0 0 0\nlast-root: 1.25 0.75 -2.5\n' \
    | diff - "$work/info.txt" || { echo "replay-info lines differ"; exit 1; }
"$bin" replay-info "$work/fx/agent-small.mbreplay" > "$work/upstream-info.txt"; rc=$?
grep -qx 'frames: 360' "$work/upstream-info.txt" && grep -qx 'joints: 30' "$work/upstream-info.txt" && grep -qx 'plans: 19' "$work/upstream-info.txt" \
    || { echo "upstream session replay: exit $rc: $(cat "$work/upstream-info.txt")"; exit 1; }
"$bin" replay-info "$work/cut.mbreplay" 2> "$work/cut.log"; rc=$?
[ $rc -eq 2 ] && grep -q 'truncated' "$work/cut.log" || { echo "cut replay: exit $rc: $(cat "$work/cut.log")"; exit 1; }
echo "parity, compare-reports and replay-info: all checks passed"
