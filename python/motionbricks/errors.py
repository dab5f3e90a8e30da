"""The converter's one error type: a clear message, no traceback at the CLI."""


class ConvertError(Exception):
    pass
