"""Server-side batching: 64 concurrent clients get answers identical (bitwise) to the same
requests sent one at a time, and the batch-size histogram shows batches of more than one."""

import threading

import numpy as np
import pytest

from service_fixture import Server, env, histogram_counts, simple_inputs

BUNDLE = env("MB_BUNDLE")
pytestmark = pytest.mark.skipif(not BUNDLE, reason="skipped: the C ABI tests' small bundle is absent")
N = 64


def request(i):
    # distinct requests: seed, sampling, position and heading vary
    return simple_inputs(seed=i, sampling="gumbel" if i % 2 else "argmax", x=0.1 * i, heading=0.05 * i, target_z=0.5 + 0.02 * i)


def test_concurrent_equals_serial():
    with Server(BUNDLE, None, ["--batch-window-ms", "5", "--max-batch", "64"]) as s:
        c = s.client()
        serial = [c.infer("motionbricks", request(i), binary_outputs=True)[1] for i in range(N)]
        before = histogram_counts(c.request("GET", "/metrics").body.decode(), "motionbricks_batch_size")
        assert before["1"] == before["+Inf"] == N   # one at a time: batches of one

        results, errors = [None] * N, []
        gate = threading.Barrier(N)

        def run(i):
            cl = s.client()
            try:
                gate.wait()
                results[i] = cl.infer("motionbricks", request(i), binary_inputs=bool(i % 3 == 0), binary_outputs=True)[1]
            except Exception as e:   # noqa: BLE001 -- reported below
                errors.append((i, e))
            finally:
                cl.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        for i in range(N):
            for k in serial[i]:
                assert np.array_equal(serial[i][k], results[i][k]), (i, k)

        after = histogram_counts(c.request("GET", "/metrics").body.decode(), "motionbricks_batch_size")
        calls = after["+Inf"] - before["+Inf"]
        singles = after["1"] - before["1"]
        print("concurrent: %d plans in %d model calls (%d of one plan)" % (N, calls, singles))
        assert calls < N and singles < calls   # some batches held more than one plan
