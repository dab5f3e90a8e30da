"""Every mb_status a call can return becomes its own exception class carrying the library's message;
the library is checked for ABI version 1 and a wrong path fails clearly."""

import os
import shutil
import struct

import numpy as np
import pytest

import motionbricks as mb
from motionbricks import _native, exceptions
from motionbricks.gguf import GGUFFile


def test_one_class_per_status():
    names = {}
    for status in range(1, 10):
        e = exceptions.from_status(status, "msg %d" % status)
        assert isinstance(e, mb.MotionBricksError) and e.status == status and e.message == "msg %d" % status
        assert str(e) == "msg %d" % status
        names[type(e)] = status
    assert len(names) == 9
    assert isinstance(exceptions.from_status(1, ""), ValueError)
    assert isinstance(exceptions.from_status(2, ""), MemoryError)
    assert isinstance(exceptions.from_status(3, ""), OSError)
    odd = exceptions.from_status(42, "future")
    assert type(odd) is mb.MotionBricksError and odd.status == 42 and "future" in str(odd)
    lib = _native.load()
    assert lib.status_string(6) == "backend unavailable"


def test_abi_version_is_checked():
    _native.check_abi(1, "lib")
    with pytest.raises(mb.LibraryError, match="ABI version 2; this binding needs version 1"):
        _native.check_abi(2, "/x/libmotionbricks.so")


def test_library_not_found(tmp_path):
    with pytest.raises(mb.LibraryError, match="cannot load"):
        _native.load(str(tmp_path / "nope.so"))
    with pytest.raises(mb.LibraryError, match="cannot load"):
        mb.Model(str(tmp_path), library=str(tmp_path / "nope.so"))


def test_invalid_argument(model, walk):
    cmd = mb.Command(walk)
    with pytest.raises(mb.InvalidArgumentError, match="target speed"):
        cmd.target_speed = float("nan")
    assert cmd.target_speed == -1.0   # a failing setter changes nothing
    agent = model.agent()
    with pytest.raises(mb.InvalidArgumentError, match="style"):
        agent.plan(mb.Command())
    with pytest.raises(mb.InvalidArgumentError, match="frame"):
        agent.set_context(np.zeros((4, 3)), np.zeros((4, 34, 4)))   # zero quaternions
    with pytest.raises(mb.InvalidArgumentError):
        model.infer_batch([])
    with pytest.raises(ValueError, match="device"):
        mb.Model(model.path, device="tpu")
    with pytest.raises(ValueError, match="precision"):
        mb.Model(model.path, precision="f64")


def test_precision(small_bundle):
    m = mb.Model(small_bundle, device="cpu", threads=1, precision="f32")
    assert m.joint_count == 34 and m.precision == "f32"
    if _native.load().has("mb_runtime_options_set_precision"):
        with pytest.raises(mb.BackendUnavailableError):
            mb.Model(small_bundle, device="cpu", precision="tf32")
    else:
        with pytest.raises(ValueError, match="only \"f32\""):
            mb.Model(small_bundle, device="cpu", precision="tf32")


def test_io_error(tmp_path):
    with pytest.raises(mb.IoError, match="nothing-here") as e:
        mb.Model(str(tmp_path / "nothing-here"))
    assert e.value.status == 3


def test_invalid_format(small_bundle, tmp_path):
    d = str(tmp_path / "bad")
    shutil.copytree(small_bundle, d)
    with open(os.path.join(d, "pose.gguf"), "r+b") as f:
        f.write(b"JUNK")
    with pytest.raises(mb.InvalidFormatError, match="pose.gguf"):
        mb.Model(d)


def test_incompatible_model(small_bundle, tmp_path):
    """A well-formed root.gguf whose one weight has its two dims swapped."""
    d = str(tmp_path / "swapped")
    shutil.copytree(small_bundle, d)
    p = os.path.join(d, "root.gguf")
    name = "_conv_output.external_cond_blocks.0.weight"
    with GGUFFile(p) as g:
        ne = next(t["ne"] for t in g.tensors if t["name"] == name)
    assert len(ne) == 2 and ne[0] != ne[1]
    b = bytearray(open(p, "rb").read())
    at = b.index(name.encode()) + len(name) + 4
    struct.pack_into("<QQ", b, at, ne[1], ne[0])
    open(p, "wb").write(b)
    with pytest.raises(mb.IncompatibleModelError, match="has shape"):
        mb.Model(d)


def test_backend_unavailable(small_bundle):
    with pytest.raises(mb.BackendUnavailableError) as e:
        mb.Model(small_bundle, device="vulkan")
    assert e.value.message


def test_compute_failed(small_bundle, demo_styles, tmp_path):
    """Weights of 1e38 overflow: the plan fails and the agent is unchanged."""
    d = str(tmp_path / "poison")
    shutil.copytree(small_bundle, d)
    p = os.path.join(d, "vq-decoder.gguf")
    with GGUFFile(p) as g:
        t = next(t for t in g.tensors if t["name"] == "decoder.model.6.weight")
        offset = g.data_start + t["offset"]
    with open(p, "r+b") as f:
        f.seek(offset)
        f.write(np.full(t["n_elements"], 1e38, np.float32).tobytes())
    m = mb.Model(d, device="cpu", threads=1)
    s = m.load_style(os.path.join(demo_styles, "walk.mbstyle"))
    a = m.agent()
    a.reset(s)
    with pytest.raises(mb.ComputeFailedError, match="non-finite"):
        a.plan(mb.Command(s))
    assert a.cursor == 0


def test_model_close_needs_its_agents_closed(small_bundle):
    m = mb.Model(small_bundle, device="cpu", threads=1)
    a = m.agent()
    with pytest.raises(ValueError, match="agents"):
        m.close()
    a.close()
    m.close()
    m.close()
