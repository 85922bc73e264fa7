"""Test helper: the compiled core's batch threads, set for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """Allow ``n`` threads (1: every batch on the calling thread) inside the block."""
    from thors_stream._ctree import _set_batch_threads

    old = _set_batch_threads(n)
    try:
        yield
    finally:
        _set_batch_threads(old)
