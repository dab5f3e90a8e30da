#!/usr/bin/env bash
# motionbricks inspect and dump end to end: converts ../shared/fixtures/reference-small with the
# Python converter, checks `inspect --json` against the files (counts, sizes, SHA-256,
# hyperparameters), the human output, and that bad bundles exit 2 with one stderr line.
# Usage: test-inspect.sh MOTIONBRICKS_BIN SHARED_DIR PYTHON WORK_DIR
# Exit 77 (skipped) when the fixtures, tools/convert.py or python3 with numpy are missing.
set -euo pipefail
bin="$1"; shared="$2"; py="$3"; work="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
weights="$shared/fixtures/reference-small/weights"
[ -d "$weights" ] || { echo "skipped: ../shared/fixtures/reference-small/weights not found"; exit 77; }
[ -f "$root/tools/convert.py" ] || { echo "skipped: tools/convert.py not found"; exit 77; }
"$py" -c "import numpy" 2>/dev/null || { echo "skipped: $py with numpy not found (apt-get install python3-numpy)"; exit 77; }

rm -rf "$work"
mkdir -p "$work"
b="$work/small"
"$py" "$root/tools/convert.py" bundle --pose "$weights/pose.safetensors" --root "$weights/root.safetensors" \
    --vqvae "$weights/vqvae.safetensors" --stats "$weights/stats.safetensors" --out "$b" \
    --pose-heads 4 --root-heads 4 --dilation-growth 3 >/dev/null

"$bin" inspect --json "$b" > "$work/inspect.json"
"$py" - "$work/inspect.json" "$b" <<'PY'
import hashlib, json, os, sys
j = json.load(open(sys.argv[1])); d = sys.argv[2]
def check(cond, what):
    if not cond:
        sys.exit("inspect --json: " + what)
check(j["format"] == "motionbricks-gguf-bundle-v1", "format")
check(j["skeleton"] == "g1skel34" and j["joint_count"] == 34, "skeleton / joint_count")
check(len(j["upstream_revision"]) == 40, "upstream_revision")
want = {"pose": (41, 1280464), "root": (86, 750849), "vq-decoder": (35, 219533), "support": (4, 972)}
for name, (nt, npar) in want.items():
    c = j["components"][name]
    path = os.path.join(d, name + ".gguf")
    check(c["tensors"] == nt, name + " tensors %d" % c["tensors"])
    check(c["parameters"] == npar, name + " parameters %d" % c["parameters"])
    check(c["bytes"] == os.path.getsize(path), name + " bytes")
    check(c["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest(), name + " sha256")
check(j["inference_parameter_count"] == 1280464 + 750849 + 219533, "inference_parameter_count")
hp = j["hyperparameters"]
check(hp["pose"]["n_head"] == 4 and hp["pose"]["n_embd"] == 128 and hp["pose"]["n_layer"] == 2, "pose hparams")
check(hp["root"]["n_head"] == 4 and hp["root"]["n_embd"] == 64, "root hparams")
check(hp["root"]["conv_decoder"]["depth"] == 2 and hp["root"]["conv_decoder"]["dilation_growth"] == 3, "root conv")
check(hp["vq-decoder"]["decoder"]["depth"] == 2 and hp["vq-decoder"]["code_dim"] == 64, "vq hparams")
check(hp["vq-decoder"]["decoder"]["dilations"] == [3, 1], "vq dilations")
check([x["parent"] for x in j["joints"]][:3] == [-1, 0, 1], "joint parents")
print("inspect --json ok")
PY

"$bin" inspect "$b" > "$work/inspect.txt"
grep -q "^architecture: motionbricks$" "$work/inspect.txt"
grep -q "^skeleton: g1skel34$" "$work/inspect.txt"
grep -q "^joint\[33\]: right_hand_roll_skel parent=" "$work/inspect.txt"

# bad input: exit 2, exactly one line on stderr, nothing on stdout
expect_reject() {
    local what="$1"; shift
    set +e
    "$bin" inspect "$@" > "$work/out.txt" 2> "$work/err.txt"
    local rc=$?
    set -e
    if [ $rc -ne 2 ] || [ "$(wc -l < "$work/err.txt")" -ne 1 ] || [ -s "$work/out.txt" ]; then
        echo "FAIL ($what): rc=$rc"; cat "$work/err.txt"; exit 1
    fi
    echo "rejected ($what): $(cat "$work/err.txt")"
}
expect_reject "missing directory" "$work/absent"
expect_reject "no arguments"
cp -r "$b" "$work/bad"
head -c 1000 "$b/root.gguf" > "$work/bad/root.gguf"
expect_reject "truncated root.gguf" --json "$work/bad"
cp "$b/root.gguf" "$work/bad/root.gguf"
cp "$b/pose.gguf" "$work/bad/vq-decoder.gguf"
expect_reject "pose file in the vq-decoder slot" "$work/bad"
cp "$b/vq-decoder.gguf" "$work/bad/vq-decoder.gguf"

# a NaN learned weight: inspect validates like the loader and names the tensor; dump still lists the file
w="_transformer_model.layers.0.linear1.weight"
"$bin" dump --json "$b/pose.gguf" > "$work/pose-dump.json"
"$py" - "$work/pose-dump.json" "$work/bad/pose.gguf" "$w" <<'PY'
import json, struct, sys
j = json.load(open(sys.argv[1]))
off = [t["offset"] for t in j["tensors"] if t["name"] == sys.argv[3]][0]
with open(sys.argv[2], "r+b") as f:
    f.seek(off + 4 * 5)
    f.write(struct.pack("<f", float("nan")))
PY
expect_reject "NaN pose weight" "$work/bad"
grep -q "pose.gguf: tensor '$w' element 5 is not finite" "$work/err.txt" || { echo "FAIL: NaN not named"; exit 1; }
"$bin" dump "$work/bad/pose.gguf" > "$work/nan-dump.txt" && grep -q "$w" "$work/nan-dump.txt" || { echo "FAIL: dump of a NaN pose.gguf"; exit 1; }
cp "$b/pose.gguf" "$work/bad/pose.gguf"

# dump: every key and tensor of one file
"$bin" dump --json "$b/root.gguf" > "$work/dump.json"
"$py" - "$work/dump.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
keys = [k["key"] for k in j["metadata"]]
assert keys[:3] == ["general.architecture", "general.name", "general.alignment"], keys
assert len(j["tensors"]) == 86 and j["alignment"] == 32
assert all(t["offset"] % 32 == 0 and t["offset"] >= j["data_offset"] for t in j["tensors"])
assert any(t["name"] == "_root_token_transformer_model.layers.0.attn.out_proj.weight" for t in j["tensors"])
print("dump --json ok")
PY
"$bin" dump "$b/support.gguf" | grep -q "^  joint_parents .* I32 \[34\]"
set +e
"$bin" dump "$work/bad/absent.gguf" 2> "$work/err.txt"; rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { echo "FAIL (dump of a missing file): rc=$rc"; exit 1; }
echo "ok"
