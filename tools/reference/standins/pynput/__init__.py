"""Stand-in for pynput, import only: the recorder passes scripted keys as
control_info['key_pressed'], so the keyboard listener is never started."""

from . import keyboard  # noqa: F401

__version__ = "0-standin"
