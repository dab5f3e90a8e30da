"""The scripted session the recorder drives upstream's WASD demo controller with: segments of
held keys and a camera azimuth (linear from start to end over the segment), one controller step
per 30 FPS frame, as upstream's interactive_demo_g1.py steps it. Key meanings are upstream's: any
of w/a/s/d walks (movement = camera angle + atan2(a − d, w − s)), a style key (v slow_walk,
x walk_boxing, z hand_crawling, c walk_stealth, f walk_zombie, ...) selects that style, no key is
idle; the facing follows the camera."""

import json

# upstream's controller snapshot keys (controllers.base_controller.snapshot_keyboard_control)
KEYS = ("w", "a", "s", "d", "left", "right", "up", "down", "shift", "ctrl", "enter",
        "x", "z", "c", "v", "b", "r", "t", "f", "g", "q", "e")
CAMERA = {"elevation_deg": -20.0, "distance": 3.0}

# the default session: 420 frames (14 s) of walks, turns, strafes, style and speed changes, stop/start
DEFAULT = [
    {"first_step": 1, "last_step": 24, "keys": "", "azimuth_start_deg": 0, "azimuth_end_deg": 0},        # stand
    {"first_step": 25, "last_step": 72, "keys": "w", "azimuth_start_deg": 0, "azimuth_end_deg": 0},      # walk
    {"first_step": 73, "last_step": 120, "keys": "w", "azimuth_start_deg": 0, "azimuth_end_deg": 90},    # turn left
    {"first_step": 121, "last_step": 156, "keys": "d", "azimuth_start_deg": 90, "azimuth_end_deg": 90},  # strafe right
    {"first_step": 157, "last_step": 192, "keys": "wv", "azimuth_start_deg": 90, "azimuth_end_deg": 90}, # slow down
    {"first_step": 193, "last_step": 228, "keys": "w", "azimuth_start_deg": 90, "azimuth_end_deg": 30},  # speed up, turn right
    {"first_step": 229, "last_step": 264, "keys": "a", "azimuth_start_deg": 30, "azimuth_end_deg": 30},  # strafe left
    {"first_step": 265, "last_step": 300, "keys": "wf", "azimuth_start_deg": 30, "azimuth_end_deg": 0},  # zombie style
    {"first_step": 301, "last_step": 336, "keys": "", "azimuth_start_deg": 0, "azimuth_end_deg": 0},     # stop
    {"first_step": 337, "last_step": 384, "keys": "wx", "azimuth_start_deg": 0, "azimuth_end_deg": -45}, # start: boxing
    {"first_step": 385, "last_step": 420, "keys": "", "azimuth_start_deg": -45, "azimuth_end_deg": -45}, # stop
]


class ScriptError(ValueError):
    pass


def validate(script):
    """Segments must cover steps 1..N contiguously, with known keys and finite azimuths."""
    if not script:
        raise ScriptError("the session script is empty")
    expect = 1
    for i, seg in enumerate(script):
        missing = {"first_step", "last_step", "keys", "azimuth_start_deg", "azimuth_end_deg"} - set(seg)
        if missing:
            raise ScriptError(f"segment {i} lacks {sorted(missing)}")
        if seg["first_step"] != expect or seg["last_step"] < seg["first_step"]:
            raise ScriptError(f"segment {i} covers steps {seg['first_step']}..{seg['last_step']}, expected to start at {expect}")
        bad = [k for k in seg["keys"] if k not in KEYS]
        if bad:
            raise ScriptError(f"segment {i} has unknown keys {bad}")
        for k in ("azimuth_start_deg", "azimuth_end_deg"):
            if not abs(float(seg[k])) <= 3600:
                raise ScriptError(f"segment {i} {k} = {seg[k]} is not a finite angle within ±3600°")
        expect = seg["last_step"] + 1
    return expect - 1


def commands(script):
    """One command per step (1-based): {step, keys (str), key_pressed {key: bool}, azimuth_deg}."""
    frames = validate(script)
    out = []
    for seg in script:
        a, b = seg["first_step"], seg["last_step"]
        for step in range(a, b + 1):
            u = 0.0 if b == a else (step - a) / (b - a)
            az = float(seg["azimuth_start_deg"]) + u * (float(seg["azimuth_end_deg"]) - float(seg["azimuth_start_deg"]))
            out.append({"step": step, "keys": seg["keys"], "azimuth_deg": az,
                        "key_pressed": {k: k in seg["keys"] for k in KEYS}})
    assert len(out) == frames
    return out


def load(path):
    if path is None:
        return DEFAULT
    with open(path) as f:
        doc = json.load(f)
    return doc["script"] if isinstance(doc, dict) else doc
