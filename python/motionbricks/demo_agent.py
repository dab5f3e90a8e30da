"""The upstream demo agent's Python interface (motion_backbone/demo/full_agent.py) as a thin layer over
runtime.Agent: a style library in upstream's CLIPS order, movement / facing / speed commands in the
MuJoCo world frame (x forward, y left, z up), and MuJoCo qpos out.

    styles = StyleLibrary(model, "styles/")
    agent = DemoAgent(model, styles)
    agent.reset()                                   # the idle clip, as upstream
    while True:
        qpos = agent.get_next_frame()               # [36]: show it
        agent.generate_new_frames({"mode": styles.index("walk"),
                                   "movement_direction": [[1, 0, 0]], "facing_direction": [[1, 0, 0]]})

generate_new_frames takes upstream's input dict (mode, movement_direction, facing_direction, target_vel,
random_seed, context_mujoco_qpos; allowed_pred_num_tokens is the style's own) and replans on
upstream's rule (mb_agent_get_replan_due: 16 frames shown or the buffer's end, idle after idle never);
the setters do the same one field at a time. Plans are upstream's demo plans: argmax pose tokens,
side steps for walk and slow_walk when the library has walk_left and walk_right.
"""

import os

import numpy as np

from . import constants as C
from . import runtime


def _mj_to_motion(v):
    """MuJoCo (x forward, y left, z up) → motion space (x left, y up, z forward)."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)[:3]
    return (float(v[1]), float(v[2]), float(v[0]))


class StyleLibrary:
    """Every .mbstyle in a directory, in upstream's CLIPS order (unknown names after, sorted)."""

    def __init__(self, model, directory):
        files = {f[:-len(C.STYLE_SUFFIX)]: os.path.join(directory, f) for f in os.listdir(directory)
                 if f.endswith(C.STYLE_SUFFIX)}
        if not files:
            raise FileNotFoundError("no %s files in %s" % (C.STYLE_SUFFIX, directory))
        release = [name for name, _, _ in C.STYLE_RELEASE]
        self.names = [n for n in release if n in files] + sorted(n for n in files if n not in release)
        self.styles = {}
        for n in self.names:
            s = model.load_style(files[n])
            self.styles[s.name] = s
        self.names = [s.name for s in (self.styles[n] for n in self.names)]

    def index(self, name):
        return self.names.index(name)

    def __getitem__(self, key):
        """A style by name or by CLIPS index (clamped to the last, as upstream's safety check)."""
        if isinstance(key, str):
            return self.styles[key]
        return self.styles[self.names[min(int(key), len(self.names) - 1)]]

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)


class DemoAgent:
    """upstream full_navigation_agent on this runtime: buffer of MuJoCo qpos frames, cursor, replans."""

    def __init__(self, model, styles, mode="idle", seed=None):
        self.model = model
        self.styles = styles if isinstance(styles, StyleLibrary) else StyleLibrary(model, styles)
        self.agent = runtime.Agent(model)
        if "walk_left" in self.styles.styles and "walk_right" in self.styles.styles:
            self.agent.set_sidestep_styles(self.styles["walk_left"], self.styles["walk_right"])
        self.command = runtime.Command(self.styles[mode], sampling_argmax=True)
        self._plan = None
        self._rng = np.random.default_rng(seed)   # the clip-frame draw when the input has none
        self.reset()

    # ---- commands (MuJoCo world frame) ----
    def set_mode(self, mode):
        """A style by name or CLIPS index."""
        self.command.style = self.styles[mode]

    def set_movement_direction(self, v):
        self.command.movement_direction = _mj_to_motion(v)

    def set_facing_direction(self, v):
        self.command.facing_direction = _mj_to_motion(v)

    def set_target_speed(self, metres_per_second):
        """Negative: the style's speed."""
        self.command.target_speed = max(float(metres_per_second), -1.0)

    def set_seed(self, seed):
        self.command.seed = int(seed)

    # ---- upstream's methods ----
    def reset(self, mode="idle"):
        """History = the style's clip (upstream starts from the idle clip); cursor at its frame 0."""
        self.agent.reset(self.styles[mode])
        self._plan = None

    def get_mujoco_qpos(self):
        """The buffer: [F, 36] MuJoCo qpos (root xyz, root quaternion w x y z, 29 hinges) of the last
        plan (a no-copy view), or of the history before the first plan."""
        return (self._plan if self._plan is not None else self.agent.history()).mujoco_qpos

    @property
    def current_frame_index(self):
        return self.agent.cursor

    def get_next_frame(self):
        """The frame at the cursor (a copy), then the cursor moves on by one (clamped to the end)."""
        qpos = np.array(self.get_mujoco_qpos()[self.agent.cursor])
        self.agent.advance(1)
        return qpos

    def get_context_mujoco_qpos(self):
        """[1, 4, 36]: the 4 buffer frames the next plan starts from (clamped to the end)."""
        buf = self.get_mujoco_qpos()
        idx = [min(self.agent.cursor + i, buf.shape[0] - 1) for i in range(4)]
        return buf[idx][None]

    def generate_new_frames(self, input=None, controller_dt=None, force_generation=False):  # noqa: A002
        """Applies upstream's input dict (any subset), then plans when due (or forced). Returns
        (buffer qpos [F, 36], frames) after a plan, else the current buffer and None. controller_dt
        is accepted for upstream's signature; the replan rule is the demo's 16 frames."""
        if input:
            self._apply(input)
        if not force_generation and not self.agent.replan_due(self.command):
            return self.get_mujoco_qpos(), None
        if "seed" not in (input or {}) and "random_seed" not in (input or {}):
            self.command.seed = int(self._rng.integers(0, 10000))   # upstream: torch.randint(0, 10000)
        self._plan = self.agent.plan(self.command)
        return self._plan.mujoco_qpos, self._plan.frame_count

    @property
    def last_plan(self):
        """The runtime.Motion of the last plan (tokens, targets, style name), or None."""
        return self._plan

    def _apply(self, input):
        def one(v):
            return np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v).reshape(-1)
        known = {"mode", "movement_direction", "facing_direction", "target_vel", "random_seed",
                 "context_mujoco_qpos", "allowed_pred_num_tokens"}
        unknown = sorted(set(input) - known)
        if unknown:
            raise ValueError("generate_new_frames: unsupported input keys %s" % ", ".join(unknown))
        if "mode" in input:
            m = input["mode"]
            self.set_mode(m if isinstance(m, str) else int(one(m)[0]))
        if "movement_direction" in input:
            self.set_movement_direction(one(input["movement_direction"]))
        if "facing_direction" in input:
            self.set_facing_direction(one(input["facing_direction"]))
        if "target_vel" in input:
            self.set_target_speed(float(one(input["target_vel"])[0]))
        if "random_seed" in input:
            self.set_seed(int(one(input["random_seed"])[0]))
        # allowed_pred_num_tokens: upstream's controller sends the commanded style's mask, which the
        # runtime's style carries already; it is accepted and not read
        if "context_mujoco_qpos" in input:
            ctx = np.asarray(one(input["context_mujoco_qpos"]), dtype=np.float32).reshape(-1, C.QPOS_DIM)
            # upstream's loop hands back the agent's own context: keep the history then, bit for bit
            if not np.array_equal(ctx, self.get_context_mujoco_qpos()[0]):
                self.agent.set_context_qpos(ctx)
                self._plan = None
