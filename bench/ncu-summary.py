"""Sums an `ncu --csv --page raw` kernel list (gpu__time_duration.sum, launch__grid_size) by kernel
name over the second half of the kernels (the second of two identical calls: no first-use work)."""
import collections
import csv
import re
import sys

rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
col = {k: i for i, k in enumerate(rows[hdr])}
data = [r for r in rows[hdr + 2:] if len(r) == len(rows[hdr])]
half = data[len(data) // 2:]
agg = collections.defaultdict(lambda: [0, 0.0])
for r in half:
    name = re.sub(r"\(.*", "", r[col["Kernel Name"]]).replace("void ", "").replace("mb::cuda::", "")[:70]
    a = agg[name]
    a[0] += 1
    a[1] += float(r[col["gpu__time_duration.sum"]].replace(",", ""))
total = sum(a[1] for a in agg.values())
print("kernels %d, GPU time %.2f ms" % (len(half), total / 1e6))
for k, a in sorted(agg.items(), key=lambda x: -x[1][1])[:22]:
    print("%9.3f ms %5d x %8.1f us  %s" % (a[1] / 1e6, a[0], a[1] / a[0] / 1e3, k))
