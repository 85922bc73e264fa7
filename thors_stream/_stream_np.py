"""The Neyman-Pearson read path of :class:`~thors_stream.StreamingThors`.

In Neyman-Pearson mode a read returns the minimum-cost threshold among those whose true FPR
(FNR) is at most ``max_fpr`` (``max_fnr``) with probability ``confidence`` (see
:mod:`thors_stream.neyman_pearson`). The admissible thresholds are a key range fixed by
ranks: at least ``min_count0`` negatives at or below the threshold (at most ``max_count1``
positives), so with the compiled core a read is two rank queries and one range-minimum
query, O(log n); the core keeps tables of those ranks for class counts near the current
ones (:func:`_rank_table`) and asks this part to refill them when the counts move beyond.
Otherwise (numpy backend, :meth:`~NPReadPart._np_result`) the held rows are exported and
selected exactly, O(n), cached until the held events change.

>>> _rank_table(20, 4, 0.1, 0.1).tolist()   # no rank for 20 or 21 negatives, then 22 and 23 need all
[-1, -1, 22, 23]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._backend import export_rows
from ._core import PyCore
from ._stream_lock import _locked
from ._stream_state import StreamState
from .costs import class_coefficients
from .neyman_pearson import NPInfeasibleError, fpr_tail, min_rank, np_constraint, np_threshold_from_rows
from .result import ThresholdResult

__all__ = ["NPReadPart"]

_NP_SPAN = 64  # the compiled Neyman-Pearson path keeps rank tables for counts within this of the current ones


def _rank_table(base: int, length: int, alpha: float, delta: float) -> np.ndarray:
    """``min_rank(n, alpha, delta)`` for ``n`` in ``base .. base + length - 1`` (-1: too few).

    The umbrella rank grows by 0 or 1 when ``n`` grows by one (``Bin(n + 1, p)`` is
    ``Bin(n, p)`` plus one Bernoulli), so after the first feasible ``n`` each entry costs
    one tail evaluation.
    """
    out = np.full(length, -1, dtype=np.int64)
    k = None
    for i in range(length):
        n = base + i
        if k is None:
            k = min_rank(n, alpha, delta)
        elif fpr_tail(k, n, alpha) > delta:
            k += 1
        if k is not None:
            out[i] = k
    return out


class NPReadPart(StreamState):
    """The Neyman-Pearson reads of :class:`~thors_stream.StreamingThors` (see the module
    docstring)."""

    def _np_indexed(self) -> bool:
        """Whether the core answers rank and range queries in O(log n) (the compiled one)."""
        return not isinstance(self._tree, PyCore)

    def _np_best(self) -> tuple[float, float]:
        """Neyman-Pearson ``(min prefix, threshold)`` for the held events in O(log n): the
        class counts give the admissible ranks, and the core chooses among the keys they
        admit (``np_best``: plain mode's threshold when admissible, else a descent by rank or
        a range walk). Compiled backend only (see :meth:`_np_indexed`)."""
        tree = self._tree
        w1, w0, c1, c0 = tree.totals()
        con = self._np_constraint(int(c0), int(c1))
        if self.class_prior is not None:
            a, b = class_coefficients(self.fn_cost, self.fp_cost, w0, w1, self.class_prior)
            tree.set_coefs(a, b)
        # the compiled fast path (np_get) chooses with the same function: the two agree to the bit
        fnr = self.max_fnr is not None
        best, key = tree.np_best(int(con.min_count0), fnr, int(con.max_count1) if fnr else 0)
        if best == math.inf:  # nothing admissible: the exact path raises with the full message
            self._np_result()
        return best, key

    @_locked
    def _np_get_slow(self) -> float | None:
        """Neyman-Pearson ``get`` when the compiled fast path cannot answer: refill its rank
        tables around the current class counts, then answer (or raise) exactly."""
        if not self._n:
            return None
        _, _, c1, c0 = self._tree.totals()
        delta = (1.0 - self.confidence) / (2.0 if self.max_fpr is not None and self.max_fnr is not None else 1.0)
        b0, b1 = max(0, int(c0) - _NP_SPAN), max(0, int(c1) - _NP_SPAN)
        k0 = m1 = np.zeros(0, np.int64)
        if self.max_fpr is not None:
            k0 = _rank_table(b0, 2 * _NP_SPAN + 1, self.max_fpr, delta)
        if self.max_fnr is not None:
            k1 = _rank_table(b1, 2 * _NP_SPAN + 1, self.max_fnr, delta)
            m1 = np.where(k1 < 0, -1, np.arange(b1, b1 + k1.shape[0]) - k1)
        self._tree.set_np_tables(int(self.max_fpr is not None), b0, k0, int(self.max_fnr is not None), b1, m1)
        return self._np_best()[1]

    def _np_constraint(self, count0: int, count1: int) -> Any:
        """The admissible count ranges, cached by the class counts (they move by one at a time)."""
        key = (count0, count1, self.max_fpr, self.max_fnr, self.confidence)
        cache = self._np_constraints
        con = cache.get(key)
        if con is None:
            if len(cache) > 4096:
                cache.clear()
            con = cache[key] = np_constraint(count0, count1, self.max_fpr, self.max_fnr, self.confidence)
        return con

    def _np_result(self) -> ThresholdResult:
        """The Neyman-Pearson result for the held events, cached until they change. O(n)."""
        # the core's version rises with every change of the held events
        key = (self._tree.version, self.max_fpr, self.max_fnr, self.confidence)
        cache = self._np_cache
        if cache is None or cache[0] != key:
            try:
                keys, w1, w0, c1, c0 = export_rows(self._tree)
                val: Any = np_threshold_from_rows(
                    keys, w1, w0, c1, c0, self.fn_cost, self.fp_cost, self.class_prior,
                    self.max_fpr, self.max_fnr, self.confidence,
                )
            except NPInfeasibleError as exc:
                val = str(exc)
            self._np_cache = cache = (key, val)
        if isinstance(cache[1], str):
            raise NPInfeasibleError(cache[1])
        result: ThresholdResult = cache[1]
        return result

