"""A bounded loopback load test: one serve-infer with 2 compute threads, then 1, 8 and 32
concurrent clients each send a fixed number of plans (binary tensors; it stops by itself, and
each level is also cut at a time limit). Reports plans/s, p50/p99 latency seen by the client
and frames/s per level, printed and written to $MB_WORK/load.json. MB_LOAD_BUNDLE picks another
bundle, MB_LOAD_PLANS the count, MB_LOAD_ARGS extra server options (--device cuda) and
MB_LOAD_REPORT the report's file name."""

import json
import os
import threading
import time

import numpy as np

try:
    import pytest
except ImportError:   # run as a script without pytest
    pytest = None

from service_fixture import Server, env, simple_inputs

BUNDLE = env("MB_LOAD_BUNDLE") or env("MB_BUNDLE")
if pytest:
    pytestmark = pytest.mark.skipif(not BUNDLE, reason="skipped: the C ABI tests' small bundle is absent")
PLANS = int(os.environ.get("MB_LOAD_PLANS", "96"))
LEVEL_SECONDS = 60


def level(server, clients):
    lat, frames, errors = [], [], []
    lock = threading.Lock()
    per = max(1, PLANS // clients)
    stop_at = time.time() + LEVEL_SECONDS
    gate = threading.Barrier(clients)

    def run(i):
        c = server.client()
        gate.wait()
        for k in range(per):
            if time.time() > stop_at:
                break
            t0 = time.perf_counter()
            try:
                _, out = c.infer("motionbricks", simple_inputs(seed=i * 1000 + k, sampling="gumbel"), outputs=["num_frames", "mujoco_qpos"],
                                 binary_inputs=True, binary_outputs=True)
            except Exception as e:   # noqa: BLE001 -- reported below
                with lock:
                    errors.append(e)
                break
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                frames.append(int(out["num_frames"][0]))
        c.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    assert not errors, errors[:3]
    lat_ms = np.array(lat) * 1000.0
    return {"clients": clients, "plans": len(lat), "seconds": round(wall, 3), "plans_per_s": round(len(lat) / wall, 1),
            "p50_ms": round(float(np.percentile(lat_ms, 50)), 2), "p99_ms": round(float(np.percentile(lat_ms, 99)), 2),
            "frames_per_s": round(sum(frames) / wall, 0)}


def test_load_levels():
    extra = os.environ.get("MB_LOAD_ARGS", "").split()   # e.g. --device cuda
    with Server(BUNDLE, None, extra, threads=2) as s:
        s.client().infer("motionbricks", simple_inputs())
        rows = [level(s, n) for n in (1, 8, 32)]
        text = s.client().request("GET", "/metrics").body.decode()
    report = {"bundle": BUNDLE, "threads": 2, "args": extra, "levels": rows}
    with open(os.path.join(os.environ.get("MB_WORK", "."), os.environ.get("MB_LOAD_REPORT", "load.json")), "w") as f:
        json.dump(report, f, indent=1)
    print()
    print("| clients | plans | plans/s | p50 ms | p99 ms | frames/s |")
    for r in rows:
        print("| %d | %d | %.1f | %.2f | %.2f | %.0f |" % (r["clients"], r["plans"], r["plans_per_s"], r["p50_ms"], r["p99_ms"], r["frames_per_s"]))
    for r in rows:
        assert r["plans"] > 0
    assert "motionbricks_batch_size_bucket" in text


if __name__ == "__main__":   # without pytest
    test_load_levels()
