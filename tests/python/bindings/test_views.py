"""Motion buffers are numpy views of the C memory, no copy: the same address the C getter returns,
read-only, and still valid (same bytes) after the Motion, agent, command, style and model are gone;
the motion is freed when its last view goes."""

import ctypes
import gc
import os
import weakref

import numpy as np
import pytest

import motionbricks as mb

BUFFERS = {"root_translations": (3,), "local_rotations_xyzw": (34, 4), "joint_positions": (34, 3),
           "mujoco_qpos": (36,), "target_root_translations": (3,), "target_local_rotations_xyzw": (34, 4),
           "target_joint_positions": (34, 3), "tokens": (8,)}


def c_buffer(motion, name):
    """(address, values) straight from mb_motion_get_<name>."""
    data, n = ctypes.c_void_p(), ctypes.c_uint64()
    motion._lib.call("mb_motion_get_" + name, motion.address, ctypes.byref(data), ctypes.byref(n))
    return data.value, n.value


def plan_once(bundle, style_path):
    model = mb.Model(bundle, device="cpu", threads=1)
    style = model.load_style(style_path)
    agent = model.agent()
    agent.reset(style)
    cmd = mb.Command(style, movement_direction=(0, 0, 1), seed=7)
    return model, style, agent, cmd, agent.plan(cmd)


def test_views_are_the_c_buffers(small_bundle, demo_styles):
    *_, motion = plan_once(small_bundle, os.path.join(demo_styles, "walk.mbstyle"))
    frames = motion.frame_count
    for name, tail in BUFFERS.items():
        view = getattr(motion, name)
        address, values = c_buffer(motion, name)
        assert view.__array_interface__["data"][0] == address, name
        assert view.size == values and view.shape[1:] == tail, name
        assert not view.flags.writeable and not view.flags.owndata, name
        with pytest.raises(ValueError):
            view.flat[0] = 0
    assert motion.root_translations.shape == (frames, 3)
    assert motion.tokens.dtype == np.int32 and motion.tokens.shape == (frames // 4, 8)
    assert motion.target_frame_count == 4 and motion.target_root_translations.shape == (4, 3)
    # stateless buffers are empty for agent plans
    assert motion.global_features.shape == (0, 414) and motion.duration_logits.shape == (0,)


def test_views_outlive_their_owners(small_bundle, demo_styles):
    model, style, agent, cmd, motion = plan_once(small_bundle, os.path.join(demo_styles, "walk.mbstyle"))
    qpos, roots = motion.mujoco_qpos, motion.root_translations
    want_q, want_r = qpos.copy(), roots.copy()
    owner = weakref.ref(motion._owner)
    address = qpos.__array_interface__["data"][0]
    del model, style, agent, cmd, motion
    gc.collect()
    # churn the allocator so freed memory would be reused
    junk = [mb.Model(small_bundle, device="cpu", threads=1) for _ in range(2)]
    del junk
    gc.collect()
    assert owner() is not None, "the motion was freed while views exist"
    assert qpos.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(qpos, want_q)
    np.testing.assert_array_equal(roots, want_r)
    sliced = qpos[3:5, 7:]   # views of views keep it alive too
    del qpos, roots
    gc.collect()
    assert owner() is not None
    np.testing.assert_array_equal(sliced, want_q[3:5, 7:])
    del sliced
    gc.collect()
    assert owner() is None, "the motion was not freed after its last view"


def test_stateless_views(small_bundle):
    model = mb.Model(small_bundle, device="cpu", threads=1)
    req = mb.Request()
    roots = np.tile([0.0, 0.787, 0.0], (4, 1))
    rest = np.tile([0.0, 0.0, 0.0, 1.0], (4, 34, 1))
    req.set_boundary_poses(model, 0, roots, rest)
    req.set_boundary_poses(model, 1, roots + [0, 0, 0.5], rest)
    req.set_sampling_argmax(True)
    m = model.infer(req)
    f = m.frame_count
    assert m.global_features.shape == (f, 414) and m.duration_logits.shape == (12,)
    assert m.global_features.__array_interface__["data"][0] == c_buffer(m, "global_features")[0]
    assert m.target_frame_count == 0 and m.target_root_translations.shape == (0, 3)
    assert m.stage_time_ms("total") >= m.stage_time_ms("pose") >= 0
    b = model.infer_batch([req, req])
    assert len(b) == 2 and (b[0].mujoco_qpos == m.mujoco_qpos).all()
    assert req.get_features(mb.runtime.GLOBAL_ROOT).shape == (8, 5)
    assert req.get_mask(mb.runtime.DURATIONS).all()


def test_model_getters_and_close(small_bundle, demo_styles):
    model = mb.Model(small_bundle, device="cpu", threads=1)
    assert model.joint_count == 34 and model.joint_names[0] == "pelvis_skel" and model.joint_parents[0] == -1
    assert model.neutral_joint_positions.shape == (34, 3) and model.parameter_count > 0
    assert mb.abi_version() == 1
    style = model.load_style(os.path.join(demo_styles, "walk.mbstyle"))
    style.speed = 0.5
    assert style.speed == 0.5 and style.name == "walk"
    cmd = mb.Command(style, facing_direction=(1, 0, 0), target_speed=0.3, seed=2**64 - 1, sampling_argmax=True,
                     world_target=(1, 0, 2, 0.5))
    assert cmd.seed == 2**64 - 1 and cmd.sampling_argmax and cmd.world_target == (1.0, 0.0, 2.0, 0.5, True)
    for obj in (cmd, style, model):
        obj.close()
        obj.close()   # twice is safe
        with pytest.raises(ValueError, match="closed"):
            obj.handle


def test_plan_batch_and_set_context(model, walk):
    """plan_batch equals one plan per agent; set_context from a plan's frames; mismatched lists refused."""
    first = model.agent()
    first.reset(walk)
    seed = first.plan(mb.Command(walk, seed=9))
    roots, rots = seed.root_translations[-4:], seed.local_rotations_xyzw[-4:]
    agents = [model.agent() for _ in range(3)]
    cmds = [mb.Command(walk, movement_direction=(i, 0, 1), seed=i) for i in range(3)]
    for a in agents:
        a.set_context(roots, rots)
    batch = model.plan_batch(agents, cmds)
    for a, c, b in zip(agents, cmds, batch):
        a.set_context(roots, rots)
        assert a.cursor == 0
        np.testing.assert_array_equal(a.plan(c).mujoco_qpos, b.mujoco_qpos)
    with pytest.raises(ValueError, match="one command per agent"):
        model.plan_batch(agents, cmds[:2])
    with pytest.raises(mb.InvalidArgumentError):
        model.plan_batch([agents[0], agents[0]], cmds[:2])   # a repeated agent
    with pytest.raises(ValueError, match="local_xyzw"):
        agents[0].set_context(roots, rots[:3])
