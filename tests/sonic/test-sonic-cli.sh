#!/bin/sh
# convert.py random-sonic writes the fixtures' weights (WEIGHTS.md) and `motionbricks sonic-parity`
# passes both fixtures with them; a G1-only file refuses the SMPL samples (exit 1); `bench sonic`
# prints its JSON. usage: test-sonic-cli.sh MOTIONBRICKS PYTHON SOURCE_DIR SHARED_DIR
set -eu
mb=$1 py=$2 src=$3 shared=$4
fx="$shared/fixtures/sonic"
[ -f "$fx/sonic_ref.mbsonic" ] || { echo "skipped: $fx/sonic_ref.mbsonic not found"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$src/tools/convert.py" random-sonic --seed 1 --smpl --teleop --out "$out/all.gguf"
"$mb" sonic-parity "$out/all.gguf" "$fx/sonic_ref.mbsonic" --threads 2 | tee "$out/p.txt"
grep -q "48 samples, 0 failed" "$out/p.txt"
"$mb" sonic-parity "$out/all.gguf" "$fx/teleop/sonic_ref_teleop_mode1.mbsonic" --threads 1 | grep -q "8 samples, 0 failed"
"$py" "$src/tools/convert.py" random-sonic --seed 1 --out "$out/g1.gguf"
if "$mb" sonic-parity "$out/g1.gguf" "$fx/sonic_ref.mbsonic" > "$out/g1.txt" 2>&1; then
    echo "FAIL: a G1-only file passed the SMPL samples"; exit 1
fi
grep -q "no SMPL encoder" "$out/g1.txt"
# another seed: other weights, so the fixture must fail
"$py" "$src/tools/convert.py" random-sonic --seed 2 --smpl --teleop --out "$out/seed2.gguf"
if "$mb" sonic-parity "$out/seed2.gguf" "$fx/sonic_ref.mbsonic" > /dev/null 2>&1; then
    echo "FAIL: seed 2 weights passed the seed 1 fixture"; exit 1
fi
"$mb" bench sonic --model "$out/g1.gguf" --threads 1 --batch 1,4 --iterations 2 > "$out/b.json"
"$py" -c "import json,sys; b=json.load(open(sys.argv[1])); assert [r['batch'] for r in b['runs']] == [1, 4]; assert b['floor']['ms_per_pair'] > 0" "$out/b.json"
# --tame: the decoder's output layer scaled down, so a robot under these weights PD-holds its pose for
# `bench physics`, where the plain random weights throw it about (MuJoCo refuses within ticks)
if "$py" "$src/tools/convert.py" random-sonic --tame 2 --out "$out/bad.gguf" 2> /dev/null; then
    echo "FAIL: --tame 2 accepted"; exit 1
fi
scene="$shared/data/upstream/mjcf/scene_43dof.xml"
if [ -f "$scene" ]; then
    "$py" "$src/tools/convert.py" random-sonic --tame 1e-3 --out "$out/tame.gguf"
    # with 5 paced ticks plain and 5 as a real-time loop (whose setup may be refused without root)
    if "$mb" bench physics --scene "$scene" --sonic "$out/tame.gguf" --threads 1 --ticks 40 --paced 5 --realtime 5 > "$out/t.json" 2> "$out/t.err"; then
        "$py" -c "
import json, sys
b = json.load(open(sys.argv[1]))
assert b['fallen'] == 0 and b['floor']['ms_per_pair'] > 0, b
for k in ('paced_50hz', 'paced_50hz_realtime'):
    r = b[k]
    assert r['ticks'] == 5 and len(r['latest_ticks']) == 5 and 0 <= r['missed_deadlines'] <= 5, r
    assert r['tick_ms']['median'] > 0 and 'run_queue_wait_ms' in r['whole_run'], r
rt = b['paced_50hz_realtime']['realtime']
assert rt['threads'] >= 1 and (rt['sched_fifo_threads'] == rt['threads'] or rt['problems']), rt
" "$out/t.json"
        if "$mb" bench physics --scene "$scene" --sonic "$out/g1.gguf" --threads 1 --ticks 40 --paced 0 > /dev/null 2>&1; then
            echo "FAIL: untamed random weights ran 50 ticks under the policy"; exit 1
        fi
    else
        grep -q "no MuJoCo\|not in this build\|unavailable" "$out/t.err" || { cat "$out/t.err"; exit 1; }
    fi
fi
echo ok
