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
Motions are freed outside the timings; the model runs on 1 thread. Every figure is given by the
wall clock and by the calling thread's CPU clock (time.thread_time_ns), which a loaded machine's
preemptions do not inflate: on a busy machine the CPU-clock figures are the ones to read.
"""

import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import motionbricks as mb  # noqa: E402

CLOCKS = (("wall", time.perf_counter_ns), ("cpu", time.thread_time_ns))


def paired(bare, binding, n):
    """{clock: (median bare, median binding, median of paired differences)} in µs over n ABBA rounds;
    bare and binding return {clock: ns}."""
    runs = []
    for i in range(n + 20):
        r0, w0, w1, r1 = bare(), binding(), binding(), bare()
        if i >= 20:   # warm-up
            runs.append((r0, w0, w1, r1))
    med = statistics.median
    out = {}
    for name, _ in CLOCKS:
        raw = [(r0[name] + r1[name]) / 2 for r0, _, _, r1 in runs]
        wrapped = [(w0[name] + w1[name]) / 2 for _, w0, w1, _ in runs]
        out[name] = (med(raw) / 1e3, med(wrapped) / 1e3, med([w - r for w, r in zip(wrapped, raw)]) / 1e3)
    return out


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
        t0 = [c() for _, c in CLOCKS]
        r = f(*args)
        t1 = [c() for _, c in CLOCKS]
        return {name: b - a for (name, _), a, b in zip(CLOCKS, t0, t1)}, r

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

    cursor_raw = fn["mb_agent_get_cursor"]
    calls = []
    for _ in range(2000):   # one ctypes call, by the wall clock (a CPU clock read costs as much)
        t0 = time.perf_counter_ns()
        cursor_raw(a, pcur, err, 1024)
        calls.append(time.perf_counter_ns() - t0)
    one_call = statistics.median(calls) / 1e3
    agent.reset(style)
    agent.plan(cmd)
    for what, figures in (("motion call (Agent.history vs mb_agent_get_history)",
                           paired(bare_history, binding_history, 4 * n)),
                          ("plan (Agent.plan vs mb_agent_plan, %d x 2 plans)" % n, paired(bare_plan, binding_plan, n))):
        for name, (r, w, d) in figures.items():
            print("python %s, %s clock: bare %.1f us, binding %.1f us; paired difference %.2f us + one ctypes "
                  "call %.2f us = overhead %.2f us" % (what, name, r, w, d, one_call, d + one_call))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 500)
