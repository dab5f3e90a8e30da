#!/usr/bin/env bash
# The reference recorder end to end (slow): upstream's own demo agent on the small seeded random
# weights of ../shared/fixtures/reference-small and the agent-small clip library, over the
# built-in 420-frame session, recorded twice (torch 1 and 2 threads: identical fixtures) →
# manifest checks → `motionbricks parity` against a bundle converted from the same weights
# (every plan passes both gates with exact durations; maxima below) → compare-reports of the
# native runs at 1 and 2 threads shows no duration mismatch.
# Needs an upstream checkout (MB_UPSTREAM_DIR: its motionbricks/ folder, with REVISION beside it
# or a git work tree) and torch; CI has neither, so there it exits 77 (skipped).
# Usage: test-recorder-e2e.sh MOTIONBRICKS_BIN SHARED_DIR PYTHON UPSTREAM_DIR WORK_DIR
set -euo pipefail
bin="$1"; shared="$2"; py="$3"; upstream="$4"; work="$5"
root="$(cd "$(dirname "$0")/../.." && pwd)"
fx="$shared/fixtures"
[ -f "$upstream/motionbricks/motion_backbone/demo/full_agent.py" ] \
    || { echo "skipped: no upstream MotionBricks checkout at $upstream (see tools/reference/README.md)"; exit 77; }
"$py" -c "import torch, numpy, yaml" 2>/dev/null || { echo "skipped: $py lacks torch, numpy or yaml"; exit 77; }
[ -f "$fx/reference-small/weights/pose.safetensors" ] && [ -f "$fx/agent-small/G1-clip-synthetic.ckpt" ] \
    || { echo "skipped: ../shared/fixtures/reference-small or agent-small not found"; exit 77; }
rev=()
[ -f "$upstream/../REVISION" ] && rev=(--upstream-revision "$(cat "$upstream/../REVISION")")
rm -rf "$work"; mkdir -p "$work"
w="$fx/reference-small/weights"
for t in 1 2; do
    "$py" "$root/tools/reference/record.py" --upstream "$upstream" --weights "$w" \
        --model-config "$fx/reference-small/model_config.json" --clips "$fx/agent-small/G1-clip-synthetic.ckpt" \
        --threads $t "${rev[@]}" --out "$work/rec$t" > "$work/record$t.log" 2>&1 \
        || { cat "$work/record$t.log"; exit 1; }
done
tail -1 "$work/record1.log"
for f in session.mbparity session.mbreplay root.npz pose.npz decoder.npz; do
    cmp -s "$work/rec1/$f" "$work/rec2/$f" || { echo "upstream at 1 and 2 threads: $f differs"; exit 1; }
done
"$py" "$root/tools/convert.py" bundle --pose "$w/pose.safetensors" --root "$w/root.safetensors" --vqvae "$w/vqvae.safetensors" \
    --stats "$w/stats.safetensors" --out "$work/bundle" --pose-heads 4 --root-heads 4 --dilation-growth 3 --quiet
"$py" "$root/tools/convert.py" styles --clips "$fx/agent-small/G1-clip-synthetic.ckpt" --out "$work/styles" >/dev/null
for t in 1 2; do
    "$bin" parity "$work/rec1/session.mbparity" --model "$work/bundle" --styles "$work/styles" --report "$work/r$t.json" \
        --threads $t --trace-dir "$work/t$t" > "$work/parity$t.log"
done
tail -1 "$work/parity1.log"
"$bin" compare-reports "$work/r1.json" "$work/r2.json" --output "$work/c.json" --left-traces "$work/t1" --right-traces "$work/t2"
"$bin" replay-info "$work/rec1/session.mbreplay" > "$work/info.txt"
"$py" - "$work" "$root" <<'PY'
import hashlib, json, os, sys
w, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root + "/tools/reference")
from mbfixtures import read_mbparity
def check(cond, what):
    if not cond:
        sys.exit("check failed: " + what)
m = json.load(open(w + "/rec1/manifest.json"))
check(m["format"] == "motionbricks-reference-fixture-manifest-v1", "manifest format")
for name, entry in m["files"].items():
    data = open(os.path.join(w, "rec1", name), "rb").read()
    check(hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"], "hash of " + name)
check(set(m["files"]) == {"session.mbparity", "session.mbreplay", "root.npz", "pose.npz", "decoder.npz", "capture.json"},
      "manifest names every file")
check(m["device"] == "cpu" and m["feature_source"] == "cpu_replay" and m["sampling"] == "argmax", "device and sampling")
check(len(m["upstream"]["revision"]) == 40 and len(m["weights"]) >= 4, "revision and weight hashes")
check({"einops", "omegaconf", "hydra", "vector_quantize_pytorch"} <= {s["package"] for s in m["stand_ins"]}
      or not m["stand_ins"], "stand-ins named")
check(m["session"]["frames"] >= 300 and m["session"]["fps"] == 30, "at least 300 frames at 30 FPS")
cap = json.load(open(w + "/rec1/capture.json"))
final = {p["mode_final"] for p in cap["plans"]}
check({0, 1, 2, 13, 14} <= final and len(final - {0, 1, 2, 13, 14}) >= 2,
      f"idle, slow_walk, walk, walk_left, walk_right and two more styles planned (got {sorted(final)})")
fx = read_mbparity(w + "/rec1/session.mbparity")
check(len(fx["plans"]) == m["session"]["plans"], "one .mbparity plan per replan")
r = json.load(open(w + "/r1.json"))
n = len(fx["plans"])
check(r["passed"] and r["strict_passed"], "the report passes both gates")
check(r["summary"]["duration_matches"] == r["summary"]["duration_total"] == n, f"{n}/{n} durations exact")
worst = {k: v["max"] for k, v in r["summary"]["worst"].items()}
bounds = {"root_m": 1e-4, "rotation_deg": 0.1, "joint_m": 5e-4, "target_root_m": 5e-5, "target_rotation_deg": 2e-3,
          "target_joint_m": 5e-5}
check(all(worst[k] < b for k, b in bounds.items()), f"maxima {worst} within {bounds}")
c = json.load(open(w + "/c.json"))
check(c["passed"] and c["summary"]["duration_matches"] == n, "1 against 2 threads: no duration mismatch")
check(c["neural"]["duration_token_mismatches"] == 0 and c["neural"]["pose_token_mismatches"] == 0, "tokens equal")
info = dict(l.split(": ", 1) for l in open(w + "/info.txt").read().splitlines())
check(info["frames"] == str(m["session"]["frames"]) and info["plans"] == str(n) and info["joints"] == "30", "replay-info")
print(f"recorder end to end: {m['session']['frames']} frames, {n} plans, stand-ins "
      f"{[s['package'] for s in m['stand_ins']]}; worst", worst)
PY
