"""Where the GPU idles during fused batch calls: reads PATH.gpu (recording spans) and PATH.host
(chunk steps and batch calls) written under MB_PREDICT_PROFILE=1 MB_CUDA_PROFILE=1
MB_PROFILE_TIMELINE=PATH, and prints, for the last CALLS batch calls, the GPU's busy share inside
the calls and between them, and the idle time inside calls by what each state's thread was doing.
usage: python3 bench/timeline.py PATH [CALLS]"""
import collections
import sys

path = sys.argv[1]
n_calls = int(sys.argv[2]) if len(sys.argv) > 2 else 5
gpu, calls, steps = [], [], []
for line in open(path + ".gpu"):
    _, a, b = line.split()
    gpu.append((float(a), float(b)))
for line in open(path + ".host"):
    kind, rank, name, a, b = line.split()
    if kind == "call":
        calls.append((float(a), float(b)))
    else:
        steps.append((int(rank), name, float(a), float(b)))
gpu.sort()
merged = []
for a, b in gpu:
    if merged and a <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], b)
    else:
        merged.append([a, b])


def busy_in(a, b):
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in merged)


calls = calls[-n_calls:]
print("last %d batch calls: ms, GPU busy inside, gap to the next call (GPU busy in it)" % len(calls))
for i, (a, b) in enumerate(calls):
    gap = calls[i + 1][0] - b if i + 1 < len(calls) else 0.0
    nb = busy_in(b, calls[i + 1][0]) if i + 1 < len(calls) else 0.0
    print("  %6.1f ms  busy %5.1f ms (%4.1f %%)  gap %5.1f ms (busy %.1f)" % (b - a, busy_in(a, b), 100 * busy_in(a, b) / (b - a), gap, nb))
# idle inside calls, attributed by the steps the states were in (sampled every 0.05 ms)
by_what = collections.Counter()
idle_total = 0.0
dt = 0.05
for a, b in calls:
    t = a
    mi = 0
    while t < b:
        while mi < len(merged) and merged[mi][1] < t:
            mi += 1
        busy = mi < len(merged) and merged[mi][0] <= t <= merged[mi][1]
        if not busy:
            idle_total += dt
            doing = sorted("%d:%s" % (r, n) for r, n, x, y in steps if x <= t < y)
            by_what[" ".join(doing) if doing else "(no chunk step)"] += dt
        t += dt
print("GPU idle inside those calls: %.1f ms; by the states' steps at the time:" % idle_total)
for what, ms in by_what.most_common(14):
    print("  %6.1f ms  %s" % (ms, what))
# per rank: when each state's chunk steps ran in the last call (ms from the call's start)
a, b = calls[-1]
print("last call, each state's steps (start-end ms from the call's start):")
for r in sorted({s[0] for s in steps}):
    row = ["%s %.1f-%.1f" % (n, x - a, y - a) for rr, n, x, y in steps if rr == r and a <= x <= b and y - x > 0.3]
    print("  rank %d: %s" % (r, ", ".join(row)))
print("  GPU busy spans > 0.5 ms: " + ", ".join("%.1f-%.1f" % (x - a, y - a) for x, y in merged if a <= x <= b and y - x > 0.5))
