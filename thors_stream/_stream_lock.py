"""The lock protocol of :class:`~thors_stream.StreamingThors`: methods hold its RLock, the compiled core told.

Every Python method that reads or changes a summary's state runs holding the object's
``RLock``, with the compiled core told so (``enter``/``exit``): while the flag is up, the
core's fast paths hand their calls to the locked Python methods, so no thread sees a
half-done batch. One concept, shared by the stream's parts.

>>> import threading
>>> class Core:
...     busy = 0
...     def enter(self): self.busy += 1
...     def exit(self): self.busy -= 1
>>> class Obj:
...     def __init__(self): self._lock, self._tree = threading.RLock(), Core()
...     @_locked
...     def busy_now(self): return self._tree.busy
>>> o = Obj()
>>> o.busy_now(), o._tree.busy
(1, 0)
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["_locked", "holding"]

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def holding(obj: Any) -> Iterator[None]:
    """Hold ``obj``'s lock with its compiled core told so, for the body of a ``with``: what
    every locked method does, for code that reads another object's state (a snapshot for
    a pickle or a merge), so that no fast-path update lands between its reads. O(1)."""
    with obj._lock:
        core = obj._tree
        core.enter()
        try:
            yield
        finally:
            core.exit()


def _locked(method: F) -> F:
    """Run ``method`` holding the object's lock, with the compiled core told so (its fast
    paths then queue behind the lock instead of running beside a half-done change). O(1)."""

    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with holding(self):
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]  # same signature: functools.wraps
