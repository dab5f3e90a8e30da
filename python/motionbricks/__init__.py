"""MotionBricks for Python: the runtime's bindings (ctypes over libmotionbricks, numpy out) and the
converter from upstream checkpoints to the GGUF model bundle v1.

Loading this package loads no library; the first Model, Command or Request does (see _native).
"""

from .exceptions import (BackendUnavailableError, ComputeFailedError, FeatureNotImplementedError,  # noqa: F401
                         IncompatibleModelError, InternalError, InvalidArgumentError, InvalidFormatError,
                         IoError, LibraryError, MotionBricksError, OutOfMemoryError)
from .runtime import Agent, Command, Model, Motion, Request, Style, abi_version  # noqa: F401
