"""Calls from several Python threads at once on separate models: results equal the serial ones,
and the GIL is released while the library computes (another thread's Python code runs during the
call, which a held GIL makes impossible)."""

import os
import threading
import time

import numpy as np

import motionbricks as mb


def session(bundle, style_path, seed, plans=6):
    model = mb.Model(bundle, device="cpu", threads=1)
    style = model.load_style(style_path)
    agent = model.agent()
    agent.reset(style)
    cmd = mb.Command(style, movement_direction=(0, 0, 1), seed=seed)
    out = []
    for _ in range(plans):
        out.append(np.array(agent.plan(cmd).mujoco_qpos))
        agent.advance(16)
    return out


def test_separate_models_in_threads_match_serial(small_bundle, demo_styles):
    walk = os.path.join(demo_styles, "walk.mbstyle")
    serial = [session(small_bundle, walk, s) for s in range(4)]
    results, errors = [None] * 4, []

    def worker(i):
        try:
            results[i] = session(small_bundle, walk, i)
        except Exception as e:  # reported below: a thread's exception is otherwise lost
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(4):
        for a, b in zip(serial[i], results[i]):
            np.testing.assert_array_equal(a, b)


def test_gil_released_during_inference(small_bundle, demo_styles):
    model = mb.Model(small_bundle, device="cpu", threads=1)
    style = model.load_style(os.path.join(demo_styles, "walk.mbstyle"))
    agents = [model.agent() for _ in range(64)]
    for a in agents:
        a.reset(style)
    cmds = [mb.Command(style, seed=i) for i in range(64)]
    spans = []

    def planner():
        for _ in range(3):
            t0 = time.perf_counter()
            model.plan_batch(agents, cmds)   # one long C call (64 plans)
            spans.append((t0, time.perf_counter()))

    ticks = []
    t = threading.Thread(target=planner)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.0005)
    t.join()
    # a held GIL would stop this thread for a whole C call: its longest pause inside every call would
    # be about the call's length; released, it ticks every ~0.5 ms. The best of the 3 calls counts,
    # so a loaded machine that starves this thread for a while does not fail the test.
    assert len(spans) == 3
    ratios = []
    for a, b in spans:
        inside = [a] + [x for x in ticks if a < x < b] + [b]
        ratios.append(max(y - x for x, y in zip(inside, inside[1:])) / (b - a))
    assert min(ratios) < 0.5, "no Python ran for %.0f%% or more of every C call" % (100 * min(ratios))
