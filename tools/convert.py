#!/usr/bin/env python3
"""MotionBricks converter entry point: python3 tools/convert.py {bundle,random-bundle,dump,style,styles} ...

Upstream PyTorch Lightning checkpoints (.ckpt, read without executing pickle code)
or .safetensors to the GGUF model bundle v1. Needs only Python 3 and numpy.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from motionbricks.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
