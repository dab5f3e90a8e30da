"""Model, Style, Command, Agent, Request and Motion over the C ABI (docs/API.md).

Methods are named after the C functions (plan, plan_batch, advance, reset, set_context, infer,
infer_batch). Every object frees its C handle in close() (safe twice) and in __del__; Python
references mirror the C borrowing rules (a command keeps its style, an agent its model), so
dropping objects in any order is safe. Motion buffers come back as read-only numpy views of the
C memory, each keeping the motion alive (see Motion).
"""

import ctypes
import weakref

import numpy as np

from . import _native

DEVICES = {"auto": 0, "cpu": 1, "vulkan": 2, "cuda": 3}
PRECISIONS = {"f32": 0, "tf32": 1, "bf16": 2}   # MB_PRECISION_*
JOINTS = 34
QPOS = 36
GLOBAL_ROOT, LOCAL_ROOT, POSE, DURATIONS = 0, 1, 2, 3   # MB_INFERENCE_* field selectors
FIELD_SHAPES = {GLOBAL_ROOT: (8, 5), LOCAL_ROOT: (8, 4), POSE: (8, 303)}
STAGES = {"prepare": 0, "root": 1, "pose": 2, "decoder": 3, "finish": 4, "total": 5}
MAX_BATCH = 64


def _floats(a, shape=None, what="array"):
    """A C-contiguous float32 copy-or-view of `a`, checked against `shape` (-1 = any)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if shape is not None and (a.ndim != len(shape) or any(s not in (-1, d) for s, d in zip(shape, a.shape))):
        raise ValueError("%s has shape %s, expected %s" % (what, list(a.shape), ["N" if s < 0 else s for s in shape]))
    return a


class _Handle:
    """A C handle with its free function; close() frees it once."""

    _free = None

    def __init__(self, lib):
        self._lib = lib
        self._h = None

    def _create(self, name, *args):
        out = ctypes.c_void_p()
        self._lib.call(name, *args, ctypes.byref(out))
        self._h = out.value

    @property
    def handle(self):
        if self._h is None:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._h

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            self._lib.fn[self._free](h)

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _get(self, name, ctype, *args):
        v = ctype()
        self._lib.call(name, self.handle, *args, ctypes.byref(v))
        return v.value


class _Owner:
    """Owns one mb_motion: freed when the last Motion or view referring to it goes away."""

    __slots__ = ("lib", "h", "__weakref__")

    def __init__(self, lib, h):
        self.lib, self.h = lib, h

    def __del__(self):
        self.lib.fn["mb_motion_free"](self.h)


class _View:
    """numpy's window onto a C buffer; holding the owner keeps the buffer alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner, address, shape, typestr):
        self.owner = owner
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (address, True), "version": 3}


class Motion:
    """A generated motion (immutable). Array properties are read-only numpy views of the C buffers,
    no copy: they stay valid as long as they exist, after the Motion, model and agent are gone."""

    def __init__(self, lib, h):
        self._owner = _Owner(lib, h)
        self._lib = lib

    @property
    def address(self):
        return self._owner.h

    def _count(self, name):
        v = ctypes.c_uint64()
        self._lib.call(name, self._owner.h, ctypes.byref(v))
        return v.value

    def _view(self, name, tail, typestr="<f4"):
        data, n = ctypes.c_void_p(), ctypes.c_uint64()
        self._lib.call("mb_motion_get_" + name, self._owner.h, ctypes.byref(data), ctypes.byref(n))
        per = int(np.prod(tail)) if tail else 1
        shape = (n.value // per,) + tuple(tail)
        if not data.value:
            return np.empty(shape, dtype=np.dtype(typestr))
        return np.asarray(_View(self._owner, data.value, shape, typestr))

    frame_count = property(lambda self: self._count("mb_motion_get_frame_count"))
    joint_count = property(lambda self: self._count("mb_motion_get_joint_count"))
    target_frame_count = property(lambda self: self._count("mb_motion_get_target_frame_count"))
    token_count = property(lambda self: self._count("mb_motion_get_token_count"))
    root_translations = property(lambda self: self._view("root_translations", (3,)))
    local_rotations_xyzw = property(lambda self: self._view("local_rotations_xyzw", (JOINTS, 4)))
    joint_positions = property(lambda self: self._view("joint_positions", (JOINTS, 3)))
    mujoco_qpos = property(lambda self: self._view("mujoco_qpos", (QPOS,)))
    target_root_translations = property(lambda self: self._view("target_root_translations", (3,)))
    target_local_rotations_xyzw = property(lambda self: self._view("target_local_rotations_xyzw", (JOINTS, 4)))
    target_joint_positions = property(lambda self: self._view("target_joint_positions", (JOINTS, 3)))
    tokens = property(lambda self: self._view("tokens", (8,), "<i4"))
    duration_logits = property(lambda self: self._view("duration_logits", ()))
    global_features = property(lambda self: self._view("global_features", (414,)))

    @property
    def style_name(self):
        s = ctypes.c_char_p()
        self._lib.call("mb_motion_get_style_name", self._owner.h, ctypes.byref(s))
        return s.value.decode()

    def stage_time_ms(self, stage="total"):
        v = ctypes.c_float()
        self._lib.call("mb_motion_get_stage_time_ms", self._owner.h, STAGES.get(stage, stage), ctypes.byref(v))
        return v.value


def _motions(lib, outs):
    return [Motion(lib, h) for h in outs]


class Model(_Handle):
    """A loaded bundle. device: "auto", "cpu", "cuda" or "vulkan"; threads: 0 = one per hardware
    thread; precision: "f32" (others only where the library has mb_runtime_options_set_precision).
    library: path of libmotionbricks (default: the module's search order, see _native)."""

    _free = "mb_model_free"

    def __init__(self, path, device="auto", threads=0, precision="f32", library=None):
        super().__init__(_native.load(library))
        if device not in DEVICES:
            raise ValueError("device must be one of %s, not %r" % (", ".join(DEVICES), device))
        if precision not in PRECISIONS:
            raise ValueError("precision must be one of %s, not %r" % (", ".join(PRECISIONS), precision))
        if precision != "f32" and not self._lib.has("mb_runtime_options_set_precision"):
            raise ValueError("precision %r needs mb_runtime_options_set_precision, which %s lacks; "
                             "only \"f32\" is available" % (precision, self._lib.path))
        if not isinstance(threads, int) or not 0 <= threads < 2 ** 32:
            raise ValueError("threads must be an integer in 0..2^32-1, not %r" % (threads,))
        opts = ctypes.c_void_p()
        self._lib.call("mb_runtime_options_create", ctypes.byref(opts))
        try:
            self._lib.call("mb_runtime_options_set_device", opts, DEVICES[device])
            self._lib.call("mb_runtime_options_set_threads", opts, threads)
            if precision != "f32":
                self._lib.call("mb_runtime_options_set_precision", opts, PRECISIONS[precision])
            self._create("mb_model_load", str(path).encode(), opts)
        finally:
            self._lib.fn["mb_runtime_options_free"](opts)
        self.path = str(path)
        self._agents = weakref.WeakSet()

    def close(self):
        """Frees the model; its agents must be closed first (they borrow it). Motions stay valid."""
        if any(a._h is not None for a in getattr(self, "_agents", ())):
            raise ValueError("close the model's agents before the model")
        super().close()

    parameter_count = property(lambda self: self._get("mb_model_get_parameter_count", ctypes.c_uint64))
    joint_count = property(lambda self: self._get("mb_model_get_joint_count", ctypes.c_uint32))

    @property
    def device(self):
        d = self._get("mb_model_get_device", ctypes.c_uint32)
        return {v: k for k, v in DEVICES.items()}.get(d, d)

    @property
    def precision(self):
        """The precision the model computes in ("f32" where the library cannot say)."""
        if not self._lib.has("mb_model_get_precision"):
            return "f32"
        p = self._get("mb_model_get_precision", ctypes.c_uint32)
        return {v: k for k, v in PRECISIONS.items()}.get(p, p)

    @property
    def joint_names(self):
        return [self._get("mb_model_get_joint_name", ctypes.c_char_p, j).decode() for j in range(self.joint_count)]

    @property
    def joint_parents(self):
        return [self._get("mb_model_get_joint_parent", ctypes.c_int32, j) for j in range(self.joint_count)]

    @property
    def neutral_joint_positions(self):
        out = np.zeros((self.joint_count, 3), dtype=np.float32)
        x, y, z = ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
        for j in range(self.joint_count):
            self._lib.call("mb_model_get_neutral_joint_position", self.handle, j,
                           ctypes.byref(x), ctypes.byref(y), ctypes.byref(z))
            out[j] = (x.value, y.value, z.value)
        return out

    def load_style(self, path):
        return Style(self, path)

    def agent(self):
        return Agent(self)

    def infer(self, request):
        out = ctypes.c_void_p()
        self._lib.call("mb_model_infer", self.handle, request.handle, ctypes.byref(out))
        return Motion(self._lib, out.value)

    def infer_batch(self, requests):
        """One Motion per request (1..64), all or nothing."""
        requests = list(requests)
        n = len(requests)
        handles = (ctypes.c_void_p * max(n, 1))(*[r.handle for r in requests])
        outs = (ctypes.c_void_p * max(n, 1))()
        self._lib.call("mb_model_infer_batch", self.handle, handles, n, outs)
        return _motions(self._lib, outs[:n])

    def plan_batch(self, agents, commands):
        """mb_agent_plan_batch: agents[i] plans commands[i] (1..64 distinct agents of this model)."""
        agents, commands = list(agents), list(commands)
        if len(agents) != len(commands):
            raise ValueError("plan_batch needs one command per agent (%d agents, %d commands)"
                             % (len(agents), len(commands)))
        for a in agents:
            if a.model is not self:
                raise ValueError("plan_batch: every agent must belong to this model")
        n = len(agents)
        ah = (ctypes.c_void_p * max(n, 1))(*[a.handle for a in agents])
        ch = (ctypes.c_void_p * max(n, 1))(*[c.handle for c in commands])
        outs = (ctypes.c_void_p * max(n, 1))()
        self._lib.call("mb_agent_plan_batch", ah, ch, n, outs)
        return _motions(self._lib, outs[:n])


class Style(_Handle):
    """A .mbstyle file loaded for `model` (which is only checked; the style keeps no reference)."""

    _free = "mb_style_free"

    def __init__(self, model, path):
        super().__init__(model._lib)
        self._create("mb_style_load", model.handle, str(path).encode())

    @property
    def name(self):
        return self._get("mb_style_get_name", ctypes.c_char_p).decode()

    @property
    def speed(self):
        return self._get("mb_style_get_speed", ctypes.c_float)

    @speed.setter
    def speed(self, metres_per_second):
        self._lib.call("mb_style_set_speed", self.handle, metres_per_second)


class Command(_Handle):
    """What an agent plan should do. Keyword arguments set the fields at construction; the
    properties read and write them (each write validated by the library)."""

    _free = "mb_command_free"

    def __init__(self, style=None, movement_direction=None, facing_direction=None, target_speed=None,
                 seed=None, sampling_argmax=None, world_target=None, library=None):
        super().__init__(style._lib if style is not None else _native.load(library))
        self._create("mb_command_create")
        self._style = None
        if style is not None:
            self.style = style
        if movement_direction is not None:
            self.movement_direction = movement_direction
        if facing_direction is not None:
            self.facing_direction = facing_direction
        if target_speed is not None:
            self.target_speed = target_speed
        if seed is not None:
            self.seed = seed
        if sampling_argmax is not None:
            self.sampling_argmax = sampling_argmax
        if world_target is not None:
            self.set_world_target(*world_target)

    def _vec(self, name):
        x, y, z = ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
        self._lib.call(name, self.handle, ctypes.byref(x), ctypes.byref(y), ctypes.byref(z))
        return (x.value, y.value, z.value)

    @property
    def style(self):
        return self._style

    @style.setter
    def style(self, style):
        # the C command borrows the style: this reference keeps it alive while the command can plan
        self._lib.call("mb_command_set_style", self.handle, style.handle if style is not None else None)
        self._style = style

    @property
    def movement_direction(self):
        return self._vec("mb_command_get_movement_direction")

    @movement_direction.setter
    def movement_direction(self, v):
        x, y, z = v
        self._lib.call("mb_command_set_movement_direction", self.handle, x, y, z)

    @property
    def facing_direction(self):
        return self._vec("mb_command_get_facing_direction")

    @facing_direction.setter
    def facing_direction(self, v):
        x, y, z = v
        self._lib.call("mb_command_set_facing_direction", self.handle, x, y, z)

    @property
    def target_speed(self):
        return self._get("mb_command_get_target_speed", ctypes.c_float)

    @target_speed.setter
    def target_speed(self, metres_per_second):
        self._lib.call("mb_command_set_target_speed", self.handle, metres_per_second)

    @property
    def seed(self):
        return self._get("mb_command_get_seed", ctypes.c_uint64)

    @seed.setter
    def seed(self, seed):
        self._lib.call("mb_command_set_seed", self.handle, seed)

    @property
    def sampling_argmax(self):
        return bool(self._get("mb_command_get_sampling_argmax", ctypes.c_uint32))

    @sampling_argmax.setter
    def sampling_argmax(self, enabled):
        self._lib.call("mb_command_set_sampling_argmax", self.handle, int(enabled))

    def set_world_target(self, x, y, z, heading=0.0, enabled=True):
        self._lib.call("mb_command_set_world_target", self.handle, x, y, z, heading, int(enabled))

    @property
    def world_target(self):
        v = [ctypes.c_float() for _ in range(4)] + [ctypes.c_uint32()]
        self._lib.call("mb_command_get_world_target", self.handle, *[ctypes.byref(a) for a in v])
        return tuple(a.value for a in v[:4]) + (bool(v[4].value),)


class Agent(_Handle):
    """The upstream demo's animation controller on `model` (kept alive by the agent)."""

    _free = "mb_agent_free"

    def __init__(self, model):
        super().__init__(model._lib)
        self.model = model
        self._create("mb_agent_create", model.handle)
        model._agents.add(self)

    def reset(self, style=None):
        """History = the style's clip (copied); None clears it."""
        self._lib.call("mb_agent_reset", self.handle, style.handle if style is not None else None)

    def set_context(self, roots, local_xyzw):
        """History = poses: roots [F, 3], local_xyzw [F, 34, 4] (F >= 4; the last 4 are used)."""
        r = _floats(roots, (-1, 3), "roots")
        q = _floats(local_xyzw, (r.shape[0], JOINTS, 4), "local_xyzw")
        self._lib.call("mb_agent_set_context", self.handle, r.ctypes.data, q.ctypes.data, r.shape[0], JOINTS)

    def set_context_qpos(self, qpos):
        """History = MuJoCo qpos frames [F, 36] (F >= 4; the last 4 are used)."""
        q = _floats(qpos, (-1, QPOS), "qpos")
        self._lib.call("mb_agent_set_context_qpos", self.handle, q.ctypes.data, q.shape[0])

    def set_sidestep_styles(self, walk_left, walk_right):
        self._lib.call("mb_agent_set_sidestep_styles", self.handle,
                       walk_left.handle if walk_left is not None else None,
                       walk_right.handle if walk_right is not None else None)

    def plan(self, command):
        out = ctypes.c_void_p()
        self._lib.call("mb_agent_plan", self.handle, command.handle, ctypes.byref(out))
        return Motion(self._lib, out.value)

    def advance(self, frames):
        self._lib.call("mb_agent_advance", self.handle, frames)

    @property
    def cursor(self):
        return self._get("mb_agent_get_cursor", ctypes.c_uint64)

    def history(self):
        out = ctypes.c_void_p()
        self._lib.call("mb_agent_get_history", self.handle, ctypes.byref(out))
        return Motion(self._lib, out.value)

    @property
    def facing_direction(self):
        x, y, z = ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
        self._lib.call("mb_agent_get_facing_direction", self.handle, ctypes.byref(x), ctypes.byref(y), ctypes.byref(z))
        return (x.value, y.value, z.value)

    def replan_due(self, command):
        return bool(self._get("mb_agent_get_replan_due", ctypes.c_uint32, command.handle))


class Request(_Handle):
    """A stateless inference request (inference.h): 4 source + 4 target constraint frames."""

    _free = "mb_inference_request_free"

    def __init__(self, library=None):
        super().__init__(_native.load(library))
        self._create("mb_inference_request_create")

    def set_features(self, field, data):
        a = _floats(data, FIELD_SHAPES.get(field, (-1,)), "features")
        self._lib.call("mb_inference_request_set_features", self.handle, field, a.ctypes.data, a.size)

    def get_features(self, field):
        out = np.zeros(FIELD_SHAPES.get(field, (0,)), dtype=np.float32)
        n = ctypes.c_uint64()
        self._lib.call("mb_inference_request_get_features", self.handle, field, out.ctypes.data, out.size,
                       ctypes.byref(n))
        return out

    def set_mask(self, field, mask):
        m = np.ascontiguousarray(np.asarray(mask).astype(np.uint32).reshape(-1))
        self._lib.call("mb_inference_request_set_mask", self.handle, field, m.ctypes.data, m.size)

    def get_mask(self, field):
        out = np.zeros(11 if field == DURATIONS else 8, dtype=np.uint32)
        n = ctypes.c_uint64()
        self._lib.call("mb_inference_request_get_mask", self.handle, field, out.ctypes.data, out.size,
                       ctypes.byref(n))
        return out.astype(bool)

    def set_boundary_poses(self, model, boundary, roots, local_xyzw):
        r = _floats(roots, (4, 3), "roots")
        q = _floats(local_xyzw, (4, JOINTS, 4), "local_xyzw")
        self._lib.call("mb_inference_request_set_boundary_poses", self.handle, model.handle, boundary,
                       r.ctypes.data, r.size, q.ctypes.data, q.size)

    def set_seed(self, seed):
        self._lib.call("mb_inference_request_set_seed", self.handle, seed)

    def set_sampling_argmax(self, enabled):
        self._lib.call("mb_inference_request_set_sampling_argmax", self.handle, int(enabled))

    def set_token_count(self, count):
        self._lib.call("mb_inference_request_set_token_count", self.handle, count)

    def set_inference_steps(self, steps):
        self._lib.call("mb_inference_request_set_inference_steps", self.handle, steps)

    def set_gumbel_uniforms(self, uniforms):
        """[steps, 16, 8, 10] uniforms in [0, 1]; None clears them."""
        if uniforms is None:
            self._lib.call("mb_inference_request_set_gumbel_uniforms", self.handle, None, 0)
            return
        u = _floats(uniforms, (-1, 16, 8, 10), "gumbel uniforms")
        self._lib.call("mb_inference_request_set_gumbel_uniforms", self.handle, u.ctypes.data, u.size)

    def set_skip_ending_target_cond(self, enabled):
        self._lib.call("mb_inference_request_set_skip_ending_target_cond", self.handle, int(enabled))

    def set_allow_out_of_reach(self, enabled):
        self._lib.call("mb_inference_request_set_allow_out_of_reach", self.handle, int(enabled))


def abi_version(library=None):
    return _native.load(library).abi_version()
