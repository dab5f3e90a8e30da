"""The runtime's errors: one exception class per mb_status, each carrying the library's message.

Every class derives from MotionBricksError (``.status``, ``.message``); where a builtin means the
same thing it is a second base, so ``except ValueError`` also catches an invalid argument.
"""


class MotionBricksError(Exception):
    """A failed call into libmotionbricks (or a library that cannot be used)."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class LibraryError(MotionBricksError, OSError):
    """libmotionbricks was not found, could not be loaded, or has another ABI version."""


class InvalidArgumentError(MotionBricksError, ValueError):
    status = 1


class OutOfMemoryError(MotionBricksError, MemoryError):
    status = 2


class IoError(MotionBricksError, OSError):
    status = 3


class InvalidFormatError(MotionBricksError, ValueError):
    status = 4


class IncompatibleModelError(MotionBricksError):
    status = 5


class BackendUnavailableError(MotionBricksError):
    status = 6


class ComputeFailedError(MotionBricksError, RuntimeError):
    status = 7


class FeatureNotImplementedError(MotionBricksError):
    status = 8


class InternalError(MotionBricksError, RuntimeError):
    status = 9


BY_STATUS = {c.status: c for c in (InvalidArgumentError, OutOfMemoryError, IoError, InvalidFormatError,
                                   IncompatibleModelError, BackendUnavailableError, ComputeFailedError,
                                   FeatureNotImplementedError, InternalError)}


def from_status(status, message):
    """The exception for a non-zero mb_status; a status this binding does not know keeps its number."""
    cls = BY_STATUS.get(status)
    if cls is None:
        return MotionBricksError("status %d: %s" % (status, message), status)
    return cls(message)
