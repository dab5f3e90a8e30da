#!/usr/bin/env python3
"""Prints the lines of one bench/upstream-torch.py result (its --out JSON): upstream, strict-F32 upstream and
ours per request, their ratios, tokens and feature differences.
usage: bench/upstream-summary.py RESULT.json"""
import json
import sys

r = json.load(open(sys.argv[1]))
print("upstream %s (torch %s, matmul precision %s, stand-ins %s, %d tensors copied) vs ours %s:" % (r["gpu"],
      r["torch"], r["upstream_matmul_precision"], ",".join(r["stand_ins"]) or "none", r["tensors_copied"],
      r["precision_ours"]))
for x in r["runs"]:
    print("  %-10s upstream %.3f ms (p95 %.3f), upstream highest %.3f ms, ours %.3f ms (p95 %.3f): x%.1f / x%.1f;"
          " tokens %d/%d; features max %s / vs highest %s" % (
        x["request"], x["upstream"]["median_ms"], x["upstream"]["p95_ms"], x["upstream_f32"]["median_ms"],
        x["ours"]["median_ms"], x["ours"]["p95_ms"], x["speedup"], x["speedup_vs_upstream_f32"],
        x["tokens_upstream"], x["tokens_ours"], x.get("max_abs_feature_diff"),
        x.get("max_abs_feature_diff_vs_upstream_f32")))
