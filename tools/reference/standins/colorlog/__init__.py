"""Stand-in for colorlog: plain logging handlers (the colour escapes are dropped)."""

import logging

__version__ = "0-standin"


class ColoredFormatter(logging.Formatter):
    def __init__(self, fmt=None, datefmt=None, reset=True, log_colors=None, **kwargs):
        for name in ("%(white)s", "%(reset)s", "%(log_color)s"):
            fmt = fmt.replace(name, "") if fmt else fmt
        super().__init__(fmt, datefmt)


StreamHandler = logging.StreamHandler
