"""Replacing a file atomically without clobbering what is not a regular file.

The checkpoint and release writers write a temporary file beside the target, fsync it and
rename it over the target; the command line's other outputs go through
:class:`StagedOutputs`, which renames them only once the whole command has succeeded.
A rename replaces whatever the name points at: a FIFO, a device
node (``/dev/stdout``, ``/dev/full``) or the symlink itself. :func:`replace_target` says
where to write instead: a symlink's final target (the link stays a link), and a refusal
for an existing target that is not a regular file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from types import TracebackType

__all__ = ["StagedOutputs", "replace_target"]


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


class StagedOutputs:
    """Output files written under temporary names beside their targets, renamed onto them
    when the ``with`` block ends without an exception and removed when it raises: a command
    that fails part way leaves every earlier file as it was, and writes none. Each
    temporary name keeps the target's extension (plotting libraries read the format from
    it). O(1) per file, plus the renames.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> target = os.path.join(d, "out.csv")
    >>> with StagedOutputs() as stage:
    ...     with open(stage.path(target), "w") as f:
    ...         _ = f.write("ok")
    >>> open(target).read()
    'ok'
    >>> try:
    ...     with StagedOutputs() as stage:
    ...         with open(stage.path(target), "w") as f:
    ...             _ = f.write("half")
    ...         raise ValueError("failed later")
    ... except ValueError:
    ...     pass
    >>> open(target).read(), sorted(os.listdir(d))
    ('ok', ['out.csv'])
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, str]] = []  # (temporary path, final path)

    def path(self, target: str) -> str:
        """A new temporary file beside ``target`` (its symlinks resolved, see
        :func:`replace_target`), to be renamed onto it; ``target`` itself when it is a FIFO or
        a device (``/dev/stdout``: written as it goes, nothing to rename). ``ValueError`` for
        a directory, ``OSError`` naming ``target`` when its directory cannot take a file."""
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = 0
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            return target
        real = replace_target(target)
        base = os.path.basename(real)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=os.path.splitext(base)[1],
                                       dir=os.path.dirname(real) or ".")
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write {target}: {exc.strerror}") from None
        os.close(fd)
        umask = os.umask(0)  # mkstemp's 0600 would outlive the rename: the umask's mode instead
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        self._staged.append((tmp, real))
        return tmp

    def __enter__(self) -> StagedOutputs:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        staged, self._staged = self._staged, []
        done = 0
        try:
            if kind is None:
                for tmp, real in staged:
                    os.replace(tmp, real)
                    done += 1
        finally:
            for tmp, _ in staged[done:]:  # (a failed block, or a rename that failed)
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
