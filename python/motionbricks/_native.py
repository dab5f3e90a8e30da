"""Finding and binding libmotionbricks (C ABI v1) through ctypes.

The library is looked for, first hit wins: an explicit path given to ``load``; the
MOTIONBRICKS_LIBRARY environment variable; the package's own copy (``motionbricks/lib/``);
the build tree of the checkout this package sits in (``build/*/src/capi/``); the system
search path. An explicit path or the variable is never silently replaced by another copy.

ctypes.CDLL releases the GIL around every foreign call, so inference in one thread lets
other Python threads run (tests/python/bindings/test_threads.py checks it).
"""

import ctypes
import ctypes.util
import glob
import os
import threading

from . import exceptions

ABI_VERSION = 1
ENV_LIBRARY = "MOTIONBRICKS_LIBRARY"
ERROR_CAPACITY = 1024

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_u32, _u64, _i32, _f32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_float
_s = ctypes.c_char_p
_pu32, _pu64, _pi32, _pf32 = (ctypes.POINTER(t) for t in (_u32, _u64, _i32, _f32))
_ps = ctypes.POINTER(ctypes.c_char_p)

# fallible functions: name → argument types before the (error, capacity) pair; they return mb_status.
# Input arrays are passed as plain addresses (c_void_p): cheaper than ctypes pointer objects.
FALLIBLE = {
    "mb_runtime_options_create": [_pp],
    "mb_runtime_options_set_device": [_p, _u32],
    "mb_runtime_options_set_threads": [_p, _u32],
    "mb_command_create": [_pp],
    "mb_command_set_style": [_p, _p],
    "mb_command_get_style": [_p, _pp],
    "mb_command_set_movement_direction": [_p, _f32, _f32, _f32],
    "mb_command_get_movement_direction": [_p, _pf32, _pf32, _pf32],
    "mb_command_set_facing_direction": [_p, _f32, _f32, _f32],
    "mb_command_get_facing_direction": [_p, _pf32, _pf32, _pf32],
    "mb_command_set_target_speed": [_p, _f32],
    "mb_command_get_target_speed": [_p, _pf32],
    "mb_command_set_world_target": [_p, _f32, _f32, _f32, _f32, _u32],
    "mb_command_get_world_target": [_p, _pf32, _pf32, _pf32, _pf32, _pu32],
    "mb_command_set_seed": [_p, _u64],
    "mb_command_get_seed": [_p, _pu64],
    "mb_command_set_sampling_argmax": [_p, _u32],
    "mb_command_get_sampling_argmax": [_p, _pu32],
    "mb_model_load": [_s, _p, _pp],
    "mb_model_get_device": [_p, _pu32],
    "mb_model_get_parameter_count": [_p, _pu64],
    "mb_model_get_joint_count": [_p, _pu32],
    "mb_model_get_joint_name": [_p, _u32, _ps],
    "mb_model_get_joint_parent": [_p, _u32, _pi32],
    "mb_model_get_neutral_joint_position": [_p, _u32, _pf32, _pf32, _pf32],
    "mb_style_load": [_p, _s, _pp],
    "mb_style_get_name": [_p, _ps],
    "mb_style_set_speed": [_p, _f32],
    "mb_style_get_speed": [_p, _pf32],
    "mb_agent_create": [_p, _pp],
    "mb_agent_reset": [_p, _p],
    "mb_agent_set_context": [_p, _p, _p, _u64, _u64],
    "mb_agent_set_context_qpos": [_p, _p, _u64],
    "mb_agent_set_sidestep_styles": [_p, _p, _p],
    "mb_agent_plan": [_p, _p, _pp],
    "mb_agent_plan_batch": [_p, _p, _u64, _p],
    "mb_agent_advance": [_p, _u32],
    "mb_agent_get_cursor": [_p, _pu64],
    "mb_agent_get_history": [_p, _pp],
    "mb_agent_get_facing_direction": [_p, _pf32, _pf32, _pf32],
    "mb_agent_get_replan_due": [_p, _p, _pu32],
    "mb_motion_get_frame_count": [_p, _pu64],
    "mb_motion_get_joint_count": [_p, _pu64],
    "mb_motion_get_target_frame_count": [_p, _pu64],
    "mb_motion_get_token_count": [_p, _pu64],
    "mb_motion_get_style_name": [_p, _ps],
    "mb_motion_get_stage_time_ms": [_p, _u32, _pf32],
    "mb_inference_request_create": [_pp],
    "mb_inference_request_set_features": [_p, _u32, _p, _u64],
    "mb_inference_request_get_features": [_p, _u32, _p, _u64, _pu64],
    "mb_inference_request_set_mask": [_p, _u32, _p, _u64],
    "mb_inference_request_get_mask": [_p, _u32, _p, _u64, _pu64],
    "mb_inference_request_set_seed": [_p, _u64],
    "mb_inference_request_set_sampling_argmax": [_p, _u32],
    "mb_inference_request_set_boundary_poses": [_p, _p, _u32, _p, _u64, _p, _u64],
    "mb_inference_request_set_token_count": [_p, _u32],
    "mb_inference_request_set_inference_steps": [_p, _u32],
    "mb_inference_request_set_gumbel_uniforms": [_p, _p, _u64],
    "mb_inference_request_set_skip_ending_target_cond": [_p, _u32],
    "mb_inference_request_set_allow_out_of_reach": [_p, _u32],
    "mb_model_infer": [_p, _p, _pp],
    "mb_model_infer_batch": [_p, _p, _u64, _p],
}
# motion buffers: (motion, &data, &values)
BUFFERS = ("root_translations", "local_rotations_xyzw", "joint_positions", "mujoco_qpos",
           "target_root_translations", "target_local_rotations_xyzw", "target_joint_positions",
           "tokens", "duration_logits", "global_features")
for _b in BUFFERS:
    FALLIBLE["mb_motion_get_" + _b] = [_p, _pp, _pu64]
# present only in libraries that have them (probed, never required)
OPTIONAL = {"mb_runtime_options_set_precision": [_p, _u32], "mb_model_get_precision": [_p, _pu32]}
FREE = ("mb_runtime_options_free", "mb_command_free", "mb_model_free", "mb_style_free", "mb_agent_free",
        "mb_motion_free", "mb_inference_request_free")


def check_abi(version, path):
    """Refuses a library of another ABI major version, naming both."""
    if version != ABI_VERSION:
        raise exceptions.LibraryError("%s has C ABI version %d; this binding needs version %d"
                                      % (path, version, ABI_VERSION))


def _package_root():
    return os.path.dirname(os.path.abspath(__file__))


def candidates(path=None):
    """Paths to try, in order: (list, whether they were asked for explicitly)."""
    if path:
        return [path], True
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return [env], True
    here = _package_root()
    found = sorted(glob.glob(os.path.join(here, "lib", "libmotionbricks.so*")))
    checkout = os.path.dirname(os.path.dirname(here))
    found += sorted(glob.glob(os.path.join(checkout, "build", "*", "src", "capi", "libmotionbricks.so")))
    system = ctypes.util.find_library("motionbricks")
    if system:
        found.append(system)
    return found, False


class Library:
    """One loaded libmotionbricks: its functions with their prototypes, and call()."""

    def __init__(self, path):
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as e:
            raise exceptions.LibraryError("cannot load libmotionbricks from %s: %s" % (path, e)) from None
        self.path = path
        try:
            self.dll.mb_abi_version.restype = _u32
            self.dll.mb_abi_version.argtypes = []
        except AttributeError:
            raise exceptions.LibraryError("%s is not libmotionbricks (no mb_abi_version)" % path) from None
        check_abi(self.dll.mb_abi_version(), path)
        self.dll.mb_status_string.restype = _s
        self.dll.mb_status_string.argtypes = [_u32]
        self.fn = {}
        for name, args in FALLIBLE.items():
            self.fn[name] = self._declare(name, args)
        for name, args in OPTIONAL.items():
            if hasattr(self.dll, name):
                self.fn[name] = self._declare(name, args)
        for name in FREE:
            f = getattr(self.dll, name)
            f.restype = None
            f.argtypes = [_p]
            self.fn[name] = f
        self._tls = threading.local()

    def _declare(self, name, args):
        try:
            f = getattr(self.dll, name)
        except AttributeError:
            raise exceptions.LibraryError("%s lacks %s" % (self.path, name)) from None
        f.restype = _u32
        f.argtypes = args + [ctypes.c_char_p, _u64]
        return f

    def has(self, name):
        return name in self.fn

    def abi_version(self):
        return int(self.dll.mb_abi_version())

    def status_string(self, status):
        return self.dll.mb_status_string(status).decode()

    def _buffer(self):
        b = getattr(self._tls, "error", None)
        if b is None:
            b = self._tls.error = ctypes.create_string_buffer(ERROR_CAPACITY)
        return b

    def call(self, name, *args):
        """Calls a fallible function; a non-zero status raises its exception with the message."""
        err = self._buffer()
        status = self.fn[name](*args, err, ERROR_CAPACITY)
        if status:
            raise exceptions.from_status(status, err.value.decode("utf-8", "replace"))


_lock = threading.Lock()
_loaded = {}


def load(path=None):
    """The Library for `path` (see the module's search order), loaded once per path."""
    paths, explicit = candidates(path)
    if not paths:
        raise exceptions.LibraryError("libmotionbricks not found: pass its path, set %s, copy it into %s, "
                                      "or build the checkout" % (ENV_LIBRARY, os.path.join(_package_root(), "lib")))
    with _lock:
        failures = []
        for p in paths:
            if p in _loaded:
                return _loaded[p]
            try:
                lib = Library(p)
            except exceptions.LibraryError as e:
                if explicit:
                    raise
                failures.append(str(e))
                continue
            _loaded[p] = lib
            return lib
        raise exceptions.LibraryError("no usable libmotionbricks: " + "; ".join(failures))
