"""Overhead of the Python binding's Agent.plan over the bare C call, median microseconds.

    python3 bench/bindings/plan_overhead.py BUNDLE STYLE [ITERATIONS]

Two measurements, each pairing the binding with the same C function called straight through
ctypes (prepared arguments, no wrapper), in the order bare, binding, binding, bare (cancelling
order effects), the median of the paired differences reported:

- plan: Agent.plan against mb_agent_plan (each after an untimed reset); the difference is tiny
  against a plan's milliseconds, so on a busy machine the noise of the plan shows through;
- motion call: Agent.history against mb_agent_get_history, the same wrapper path as Agent.plan
  (handle check, error buffer, the call, status check, the Motion object) around a C call of
  microseconds: the binding's own cost with little noise.

Both add the cost of one ctypes call itself (mb_agent_get_cursor, a C function of nanoseconds).
Motions are freed outside the timings; the model runs on 1 thread.
"""

import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import motionbricks as mb  # noqa: E402

clock = time.perf_counter_ns


def paired(bare, binding, n):
    """(median bare, median binding, median of paired differences) in µs over n ABBA rounds."""
    raw, wrapped, diff = [], [], []
    for i in range(n + 20):
        r0, w0, w1, r1 = bare(), binding(), binding(), bare()
        if i >= 20:   # warm-up
            raw.append((r0 + r1) / 2)
            wrapped.append((w0 + w1) / 2)
            diff.append((w0 + w1 - r0 - r1) / 2)
    med = statistics.median
    return med(raw) / 1e3, med(wrapped) / 1e3, med(diff) / 1e3


def main(bundle, style_path, n):
    model = mb.Model(bundle, device="cpu", threads=1)
    style = model.load_style(style_path)
    agent = model.agent()
    cmd = mb.Command(style, movement_direction=(0, 0, 1), seed=1)
    lib = model._lib
    fn, free = lib.fn, lib.fn["mb_motion_free"]
    out, cursor = ctypes.c_void_p(), ctypes.c_uint64()
    err = ctypes.create_string_buffer(1024)
    a, c, pout, pcur = agent.handle, cmd.handle, ctypes.byref(out), ctypes.byref(cursor)

    def timed(f, *args):
        t0 = clock()
        r = f(*args)
        return clock() - t0, r

    def bare_plan():
        agent.reset(style)
        t, _ = timed(fn["mb_agent_plan"], a, c, pout, err, 1024)
        free(out.value)
        return t

    def binding_plan():
        agent.reset(style)
        t, m = timed(agent.plan, cmd)
        del m
        return t

    def bare_history():
        t, _ = timed(fn["mb_agent_get_history"], a, pout, err, 1024)
        free(out.value)
        return t

    def binding_history():
        t, m = timed(agent.history)
        del m
        return t

    calls = sorted(timed(fn["mb_agent_get_cursor"], a, pcur, err, 1024)[0] for _ in range(2000))
    one_call = calls[len(calls) // 2] / 1e3
    agent.reset(style)
    agent.plan(cmd)
    r, w, d = paired(bare_history, binding_history, 4 * n)
    print("python motion call: bare mb_agent_get_history %.2f us, Agent.history %.2f us; binding %.2f us "
          "+ one ctypes call %.2f us = overhead %.2f us" % (r, w, d, one_call, d + one_call))
    r, w, d = paired(bare_plan, binding_plan, n)
    print("python plan: bare mb_agent_plan %.1f us, Agent.plan %.1f us (medians of %d x 2); paired difference "
          "%.2f us + one ctypes call %.2f us = overhead %.2f us" % (r, w, n, d, one_call, d + one_call))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 500)
