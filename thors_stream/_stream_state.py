"""The state every part of :class:`~thors_stream.StreamingThors` reads, declared once.

``StreamingThors.__init__`` (and ``__setstate__``) set these attributes; the parts
(:mod:`~thors_stream._stream_windows`, :mod:`~thors_stream._stream_np`,
:mod:`~thors_stream._stream_store`) inherit the declarations so that a type checker knows
them. Annotations only: the class adds no attribute and no behaviour.

>>> from thors_stream import StreamingThors
>>> issubclass(StreamingThors, StreamState), StreamState.__annotations__["window"]
(True, 'int | None')
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamState"]


class StreamState:
    """Declarations of the attributes a ``StreamingThors`` holds (see the module docstring)."""

    # the core and what it cannot hold
    _tree: Any  # the compiled CTree or the numpy PyCore (see thors_stream._backend)
    _queue: Any  # the expiry queue view, None without a window
    _ledger: Any  # WeightLedger: held events of weight != 1 (unwindowed revert)
    _late: Any  # SortedList of late events (t, arrival, score, label, weight)
    _last_t: float
    _arrivals: int
    _lock: Any
    _load: int
    _ring: int
    _wmax: float
    _wmin: float
    # settings
    window: int | None
    period: Any
    _period_s: float | None
    backend: str
    fn_cost: float
    fp_cost: float
    class_prior: float | None
    default_threshold: float | None
    max_fpr: float | None
    max_fnr: float | None
    confidence: float
    _np_mode: bool
    _plain: bool
    # Neyman-Pearson caches
    _np_cache: tuple[Any, Any] | None
    _np_constraints: dict[tuple[Any, ...], Any]
    # read from the core
    n_updates: int
    _n: int

    def _bind_fast_paths(self) -> None:  # pragma: no cover - StreamingThors defines it
        raise NotImplementedError

    def _count_updates(self, m: int) -> None:  # pragma: no cover - StreamingThors defines it
        raise NotImplementedError
