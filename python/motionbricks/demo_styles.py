"""tools/convert.py demo-styles: a few .mbstyle files made from synthetic G1 motion.

They exist only so `motionbricks serve` and its tests have styles when the released ones
are absent: a sinusoidal gait (hips, knees, ankles, arms) with the root moving along
MuJoCo +x at the style's speed. They are not upstream clips and mean nothing as motion.
"""

import hashlib
import math
import os

import numpy as np

from . import constants as C
from .errors import ConvertError
from .output import staged_output
from .style import style_buffers, write_style

# (name, speed m/s, stride frequency Hz, swing amplitude rad, allowed token counts from 6)
DEMO_STYLES = (
    ("idle", 0.0, 0.0, 0.0, 6),
    ("slow_walk", 0.3, 0.8, 0.25, 6),
    ("walk", 1.0, 1.0, 0.45, 6),
    ("walk_left", 0.2, 0.9, 0.2, 4),
    ("walk_right", 0.2, 0.9, 0.2, 4),
)
DEMO_FRAMES = 90
PELVIS_HEIGHT = 0.793


def _hinge(name):
    for i, h in enumerate(C.G1_HINGES):
        if h[0] == name:
            return i
    raise ConvertError("no hinge %r" % name)


def synthetic_qpos(speed, freq, amp, frames=DEMO_FRAMES, side=0.0):
    """[frames, 36] qpos at 30 fps: a gait with the root moving forward (and `side` m/s left)."""
    t = np.arange(frames) / float(C.STYLE_FPS)
    q = np.zeros((frames, C.QPOS_DIM))
    q[:, 0] = speed * t
    q[:, 1] = side * t
    phase = 2.0 * math.pi * freq * t
    q[:, 2] = PELVIS_HEIGHT - 0.02 * amp * np.abs(np.sin(phase))
    q[:, 3] = 1.0                                     # identity root rotation (facing +x)
    h = 7
    breath = 0.03 * np.sin(2.0 * math.pi * 0.25 * t)  # idle still moves a little
    for s, sign in (("left", 1.0), ("right", -1.0)):
        swing = sign * amp * np.sin(phase)
        q[:, h + _hinge(s + "_hip_pitch_joint")] = -0.1 - swing
        q[:, h + _hinge(s + "_knee_joint")] = 0.3 + amp * np.maximum(0.0, np.sin(phase + sign * 0.5 * math.pi))
        q[:, h + _hinge(s + "_ankle_pitch_joint")] = -0.2 + 0.5 * swing
        q[:, h + _hinge(s + "_shoulder_pitch_joint")] = 0.2 + swing + breath
        q[:, h + _hinge(s + "_elbow_joint")] = 0.9
    return q


def write_demo_styles(out_dir):
    """Writes the demo styles into `out_dir` (created; all or none). Returns summary lines."""
    lines = []
    with staged_output(out_dir) as stage:
        for index, (name, speed, freq, amp, tokens) in enumerate(DEMO_STYLES):
            side = {"walk_left": 0.2, "walk_right": -0.2}.get(name, 0.0)
            forward = 0.0 if side else speed
            q = synthetic_qpos(forward, freq, amp, side=side)
            mask = np.zeros(11, dtype=np.int32)
            mask[:tokens] = 1
            source = hashlib.sha256(("motionbricks demo style " + name).encode()).hexdigest()
            file = name + ".mbstyle"
            size, sha = write_style(os.path.join(stage, file), name, speed, style_buffers(q), mask, source,
                                    index=index)
            lines.append("%s: demo style %r (synthetic, not an upstream clip), %d bytes, sha256 %s"
                         % (os.path.join(out_dir, file), name, size, sha))
    return lines


def add_parser(sub):
    """the `demo-styles` subcommand of tools/convert.py."""
    s = sub.add_parser("demo-styles", help="write a few synthetic .mbstyle files (idle, slow_walk, walk, ...) "
                                           "for the demo server and tests; not upstream clips")
    s.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    return s
