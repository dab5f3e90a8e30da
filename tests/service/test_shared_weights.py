"""Shared weights: two serve-infer processes on one bundle map the same GGUF files, so the page
cache holds one copy. Read from /proc/PID/smaps (the mappings of *.gguf; smaps_rollup has the
process totals only): the two processes' Pss of the weight files sums to about one copy (their
Rss), within 10 %, and each process's share is about half."""

import os
import re
import shutil

import pytest

from service_fixture import Server, env, metric_lines, simple_inputs

BUNDLE = env("MB_BUNDLE")
pytestmark = pytest.mark.skipif(not BUNDLE, reason="skipped: the C ABI tests' small bundle is absent")


def gguf_bytes(pid):
    rss = pss = 0
    inside = False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line)
            if head:
                inside = line.rstrip().endswith(".gguf")
                continue
            if inside:
                m = re.match(r"^(Rss|Pss):\s+(\d+) kB", line)
                if m:
                    if m.group(1) == "Rss":
                        rss += int(m.group(2)) * 1024
                    else:
                        pss += int(m.group(2)) * 1024
    return rss, pss


def rollup_pss(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        return int(re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024


def test_two_processes_share_one_copy(tmp_path):
    # a private copy: no other test's process maps these files
    bundle = str(tmp_path / "bundle")
    shutil.copytree(BUNDLE, bundle)
    files = sum(os.path.getsize(os.path.join(bundle, n)) for n in os.listdir(bundle) if n.endswith(".gguf"))
    with Server(bundle) as a, Server(bundle) as b:
        for s in (a, b):
            s.client().infer("motionbricks", simple_inputs())
        (rss_a, pss_a), (rss_b, pss_b) = gguf_bytes(a.proc.pid), gguf_bytes(b.proc.pid)
        one = max(rss_a, rss_b)
        print("weights: files %d B; rss %d / %d B; pss %d + %d = %d B (one copy %d B); process Pss %d / %d B"
              % (files, rss_a, rss_b, pss_a, pss_b, pss_a + pss_b, one, rollup_pss(a.proc.pid), rollup_pss(b.proc.pid)))
        assert rss_a > files // 2 and rss_b > files // 2   # the weights are resident (mapped, touched)
        assert abs((pss_a + pss_b) - one) <= 0.1 * one
        assert abs(pss_a - one / 2) <= 0.1 * one and abs(pss_b - one / 2) <= 0.1 * one
        # the service reports the same from inside
        text = a.client().request("GET", "/metrics").body.decode()
        reported = int(metric_lines(text, "motionbricks_weights_proportional_bytes")[-1].split()[-1])
        assert abs(reported - pss_a) <= 0.1 * one
