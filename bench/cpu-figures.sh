#!/usr/bin/env bash
# every CPU figure of issue 14 in one go, one JSON object per line on stdout:
#   plan     10-token plan per dtype (F32/BF16/Q8_0) and thread count: median/p95 ms, the same run's
#            streaming-read floor and the ratio to it, and each reduced dtype's time over F32's
#   scaling  the F32 plan at every thread count over the one-thread time (speed-up, efficiency)
#   fused    plans/s at batch 8 over batch 1 (10 tokens) per dtype at the fused-batch thread count
#   rss      peak RSS of one inference (examples/inference.c) per dtype
#   machine  CPU model, cores, load average before and after
# The bundles are full-size random weights (tools/convert.py random-bundle --preset full --seed 1,
# about a minute and 0.7 / 0.4 / 0.2 GB each), made in WORK when absent.
#
# usage: bench/cpu-figures.sh [--build DIR] [--work DIR] [--threads 1,2] [--fused-threads 2]
#                             [--iterations 21] [--dtypes f32,bf16,q8_0]
# e.g. on a 16-core host: bench/cpu-figures.sh --threads 1,2,4,8,16 --fused-threads 16
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build/release"
work="${TMPDIR:-/tmp}/mb-cpu-figures"
threads="1,2"
fused_threads="2"
iterations=21
dtypes="f32,bf16,q8_0"
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --fused-threads) fused_threads="$2"; shift 2 ;;
        --iterations) iterations="$2"; shift 2 ;;
        --dtypes) dtypes="$2"; shift 2 ;;
        *) echo "cpu-figures.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mb="$build/motionbricks"
inference="$build/examples/example-inference"
for f in "$mb" "$inference"; do
    [ -x "$f" ] || { echo "cpu-figures.sh: $f not built (cmake --build --preset release --target motionbricks example-inference)" >&2; exit 2; }
done
# a Python with numpy (convert.py needs it): $PYTHON, python3 or the system's
py=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2>/dev/null; then py="$p"; break; fi
done
[ -n "$py" ] || { echo "cpu-figures.sh: no python3 with numpy (set PYTHON)" >&2; exit 2; }

mkdir -p "$work"
IFS=, read -r -a dtype_list <<< "$dtypes"
for d in "${dtype_list[@]}"; do
    [ -f "$work/$d/manifest.json" ] && continue
    echo "cpu-figures.sh: writing the full-size random $d bundle to $work/$d" >&2
    "$py" "$root/tools/convert.py" random-bundle --preset full --seed 1 --dtype "$d" --out "$work/$d" --quiet
done

exec "$py" - "$mb" "$inference" "$work" "$threads" "$fused_threads" "$iterations" "$dtypes" <<'PY'
import json, os, platform, resource, subprocess, sys

mb, inference, work, threads, fused_threads, iterations, dtypes = sys.argv[1:]
threads = [int(t) for t in threads.split(",")]
fused_threads = int(fused_threads)
dtypes = dtypes.split(",")

def emit(obj):
    print(json.dumps(obj), flush=True)

def load():
    return [round(x, 2) for x in os.getloadavg()]

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()

def bench(dtype, n_threads, batches):
    out = subprocess.run([mb, "bench", "--model", os.path.join(work, dtype), "--device", "cpu", "--threads",
                          str(n_threads), "--tokens", "10", "--batch", ",".join(map(str, batches)),
                          "--iterations", iterations, "--warmup", "3"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)

emit({"figure": "machine", "cpu": cpu_model(), "hardware_threads": os.cpu_count(), "load_before": load()})

plan = {}
for t in threads:
    for d in dtypes:
        before = load()
        b = bench(d, t, [1])
        r = b["runs"][0]
        plan[(d, t)] = r["ms_per_plan_median"]
        row = {"figure": "plan", "dtype": d, "threads": t, "tokens": 10,
               "ms_median": r["ms_per_plan_median"], "ms_p95": r["ms_per_call_p95"],
               "floor_ms": b["floor"]["ms_per_plan"], "read_gb_per_s": b["floor"]["read_gb_per_s"],
               "ratio_to_floor": r["ratio_to_floor"], "weight_bytes": b["model"]["weight_bytes_per_plan"],
               "stage_ms": r["stage_ms_lane0"], "load_before": before, "load_after": load()}
        if d != "f32" and ("f32", t) in plan:
            row["over_f32"] = r["ms_per_plan_median"] / plan[("f32", t)]
        emit(row)

if "f32" in dtypes and ("f32", 1) in plan:
    for t in threads:
        s = plan[("f32", 1)] / plan[("f32", t)]
        emit({"figure": "scaling", "dtype": "f32", "threads": t, "ms_median": plan[("f32", t)],
              "speedup_over_1": s, "efficiency": s / t})

for d in dtypes:
    before = load()
    b = bench(d, fused_threads, [1, 8])
    pps = {r["batch"]: r["plans_per_s"] for r in b["runs"]}
    emit({"figure": "fused", "dtype": d, "threads": fused_threads, "tokens": 10, "plans_per_s_b1": pps[1],
          "plans_per_s_b8": pps[8], "b8_over_b1": pps[8] / pps[1], "load_before": before, "load_after": load()})

for d in dtypes:
    # peak RSS of a child that loads the bundle and runs one plan (ru_maxrss of the children so far
    # is a maximum: one child per process keeps it exact)
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    kb = int(subprocess.run([sys.executable, "-c", code, inference, os.path.join(work, d), "2"], check=True,
                            capture_output=True, text=True).stdout)
    emit({"figure": "rss", "dtype": d, "peak_rss_mib": kb / 1024.0, "program": "example-inference, 2 threads"})

emit({"figure": "machine", "load_after": load()})
PY
