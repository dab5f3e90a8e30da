#!/usr/bin/env bash
# issue 15's benchmarks in one run, one JSON object on stdout: the SONIC pair at B = 1 and 64 against
# its weight-streaming floor (measured in each run) at 1 and 2 threads, the full physics tick
# (observations + SONIC + 4 substeps) unpaced and paced at 50 Hz for 1,000 ticks at 1 and 2 threads,
# each paced run twice: as a plain loop, then as a real-time loop (--realtime: mlockall, pre-faulted
# memory, SCHED_FIFO, 1 ms early wake and spin; needs root, else its "problems" say what failed),
# the load average around each, and a summary against the issue's targets. The policy runs on
# `convert.py random-sonic --tame 1e-3` weights (the decoder's output layer × 1e-3, so actions stay
# near 0 and the robot PD-holds its pose at 8 × the release's kp); the full SONIC pair is computed
# every tick. usage: bench/sonic-physics.sh [MOTIONBRICKS] [SCENE.xml]   (from the source root)
set -euo pipefail
mb=${1:-build/release/motionbricks}
scene=${2:-../shared/data/upstream/mjcf/scene_43dof.xml}
py=${MB_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" tools/convert.py random-sonic --seed 1 --tame 1e-3 --out "$tmp/tame.gguf" 2> /dev/null
for t in 1 2; do
    "$mb" bench sonic --model "$tmp/tame.gguf" --threads "$t" --batch 1,64 --iterations 101 > "$tmp/sonic-$t.json"
done
for t in 1 2; do
    "$mb" bench physics --scene "$scene" --sonic "$tmp/tame.gguf" --threads "$t" --ticks 500 --paced 1000 --realtime 1000 > "$tmp/physics-$t.json"
done
"$py" - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
load = lambda n: json.load(open(os.path.join(d, n)))
sonic = {t: load("sonic-%s.json" % t) for t in ("1", "2")}
phys = {t: load("physics-%s.json" % t) for t in ("1", "2")}
run = lambda b, batch: next(r for r in b["runs"] if r["batch"] == batch)
summary = {}
for t in ("1", "2"):
    summary["sonic_b1_ratio_to_floor_t" + t] = {"value": run(sonic[t], 1)["ratio_to_floor"], "target": "<= 1.1"}
    summary["sonic_b64_ms_per_robot_t" + t] = {"value": run(sonic[t], 64)["ms_per_robot"], "target": "<= 0.5"}
    summary["physics_tick_median_ms_t" + t] = {"value": phys[t]["unpaced"]["tick_ms"]["median"], "target": "<= 4 (1 thread)",
                                               "thread_cpu_ms_median": phys[t]["unpaced"]["tick_thread_cpu_ms"]["median"]}
    for key, name in (("paced_50hz", "paced"), ("paced_50hz_realtime", "paced_realtime")):
        r = phys[t][key]
        summary[name + "_missed_of_1000_t" + t] = {"value": r["missed_deadlines"], "target": "0",
                                                   "with_steal": r["missed_with_steal"],
                                                   "with_run_queue_wait_over_1ms": r["missed_with_run_queue_wait_over_1ms"],
                                                   "completion_ms_max": r["completion_ms_in_slot"]["max"]}
    summary["realtime_setup_t" + t] = phys[t]["paced_50hz_realtime"]["realtime"]
    summary["fallen_t" + t] = phys[t]["fallen"]
out = {"bench": "motionbricks-sonic-physics-v1", "cpus": os.cpu_count(), "weights": "random-sonic --seed 1 --tame 1e-3",
       "summary": summary, "sonic": sonic, "physics": phys}
print(json.dumps(out, indent=2))
PY
