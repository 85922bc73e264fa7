"""Replacing a file atomically without clobbering what is not a regular file.

The checkpoint and release writers write a temporary file beside the target, fsync it and
rename it over the target. A rename replaces whatever the name points at: a FIFO, a device
node (``/dev/stdout``, ``/dev/full``) or the symlink itself. :func:`replace_target` says
where to write instead: a symlink's final target (the link stays a link), and a refusal
for an existing target that is not a regular file.
"""

from __future__ import annotations

import os
import stat

__all__ = ["replace_target"]


def replace_target(path: str | os.PathLike[str]) -> str:
    """The path an atomic write of ``path`` must rename onto: ``path`` with its symlinks
    resolved. ``ValueError`` naming ``path`` if it exists and is not a regular file (a
    directory, FIFO, socket or device). O(length of the symlink chain).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> replace_target(os.path.join(d, "new.json")) == os.path.realpath(os.path.join(d, "new.json"))
    True
    >>> replace_target(d)
    Traceback (most recent call last):
    ...
    ValueError: ...: exists and is not a regular file (a directory); refusing to replace it
    """
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a file")
        raise ValueError(f"{os.fspath(path)}: exists and is not a regular file ({kind}); refusing to replace it")
    return real
