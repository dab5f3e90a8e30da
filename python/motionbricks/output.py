"""Output directories that change all at once or not at all.

Every file a command writes goes into a fresh staging directory beside the output; only when the
command has succeeded is the staging directory renamed to the output (which did not exist) or its
files renamed over the output's (which did). On any failure the staging directory is removed, so
nothing of the output changes and a directory the command would have created is not left behind.
"""

import contextlib
import os
import shutil
import tempfile

from .errors import ConvertError
from .gguf import fsync_dir


def _missing_ancestors(path):
    out = []
    p = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(p):
        out.append(p)
        p = os.path.dirname(p)
    return out


@contextlib.contextmanager
def staged_output(out_dir):
    """Yields the staging directory; files written there land in out_dir when the block exits
    normally. A name of out_dir that exists as anything but a regular file is refused."""
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise ConvertError("output %s exists and is not a directory" % out_dir)
    existed = os.path.isdir(out_dir)
    created = _missing_ancestors(out_dir)
    parent = os.path.dirname(os.path.abspath(out_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        stage = tempfile.mkdtemp(prefix=".%s.tmp-" % os.path.basename(os.path.abspath(out_dir)), dir=parent)
    except OSError as e:
        for p in created:
            with contextlib.suppress(OSError):
                os.rmdir(p)
        raise ConvertError("cannot create output directory %s: %s" % (out_dir, e.strerror))
    try:
        yield stage
        if existed:
            names = sorted(os.listdir(stage))
            for name in names:
                target = os.path.join(out_dir, name)
                if os.path.lexists(target) and not os.path.isfile(target):
                    raise ConvertError("output %s exists and is not a regular file" % target)
            for name in names:
                os.replace(os.path.join(stage, name), os.path.join(out_dir, name))
            os.rmdir(stage)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(stage, 0o777 & ~umask)
            os.rename(stage, out_dir)
        fsync_dir(out_dir)
        fsync_dir(parent)
    except BaseException as e:
        shutil.rmtree(stage, ignore_errors=True)
        for p in created:
            with contextlib.suppress(OSError):
                os.rmdir(p)
        if isinstance(e, OSError):
            raise ConvertError("writing %s: %s" % (out_dir, e)) from e
        raise
