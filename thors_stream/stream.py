"""StreamingThors: the exact THORS threshold of a changing set of labelled scores.

The class is assembled from small parts, each with its own module and tests: the tree that
answers (:mod:`thors_stream._core`, :mod:`thors_stream._backend`, the compiled
``_ctree``), windows and late labels (:mod:`thors_stream._stream_windows`), the
Neyman-Pearson read path (:mod:`thors_stream._stream_np`), and checkpoints, pickling and
merging (:mod:`thors_stream._stream_store`). This module holds the constructor, the reads
(``get``, ``cost``, ``result``, ``held``) and the binding of the compiled fast paths.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from ._backend import export_rows, make_core, resolve_backend
from ._core import PyCore, queue_of
from ._ledger import WeightLedger
from ._stream_lock import _locked
from ._stream_np import NPReadPart
from ._stream_store import StorePart
from ._stream_windows import WindowsPart
from ._validation import (
    MAX_UPDATES,
    MAX_WINDOW,
    check_class_prior,
    check_n_updates,
    check_score,
    check_time,
    weight_range,
)
from .costs import class_coefficients, resolve_costs
from .neyman_pearson import NPInfeasibleError, check_np_params
from .result import ThresholdResult

__all__ = ["StreamingThors"]

_NEG_INF = float("-inf")

class StreamingThors(WindowsPart, NPReadPart, StorePart):
    """The exact THORS threshold of the labelled scores currently held, kept up to date.

    Holds a multiset of labelled, weighted scores (a sliding window of them, or all)
    and answers at any moment with the threshold that minimises the total
    misclassification cost on them: the same answer as
    :func:`~thors_stream.thors_threshold` on the held events. An event is predicted
    positive iff ``score > threshold``; equal scores fall on the same side; among
    equal-cost thresholds the smallest wins, ``-inf`` (everything positive) first.

    Follows river's statistics protocol (``update``/``revert``/``get``), so it also
    works inside ``river.utils.Rolling`` and ``river.utils.TimeRolling``.

    Parameters
    ----------
    fn_cost, fp_cost
        Cost of a false negative / false positive (> 0), or ``cost_matrix``
        ``[[C00, C01], [C10, C11]]`` indexed ``[y_true][y_pred]``.
    window
        Keep only the last ``window`` labelled events (a count window).
    period
        Keep only events whose time ``t`` is within ``period`` of the newest event's
        time: those with ``t > t_newest - period``. Seconds or a ``timedelta``;
        ``update`` then needs ``t`` (seconds or ``datetime``). Late events (``t``
        before the newest time seen) are held until they fall out of the period.
    class_prior
        Population share of positives; classes are rescaled to it (see
        :func:`~thors_stream.class_coefficients`). Reading the threshold then costs
        O(n) whenever the class totals changed, since every key's value changes.
    default_threshold
        What :meth:`predict_one` uses while nothing is held (else it raises).
    backend
        ``"auto"`` (the compiled B+-tree when built, else numpy blocks), ``"c"`` or
        ``"python"``; both give identical answers (see :mod:`thors_stream._backend`).
    load
        Block size of the numpy backend (tuning only).
    max_fpr, max_fnr, confidence
        Neyman-Pearson mode (see :mod:`thors_stream.neyman_pearson`): every read
        (:meth:`get`, :meth:`result`, :attr:`cost`, :meth:`predict_one`) returns the
        minimum-cost threshold among those whose true FPR (FNR) on the held events'
        population is at most ``max_fpr`` (``max_fnr``) with probability at least
        ``confidence``: the same answer as ``thors_threshold(..., max_fpr=...)`` on the
        held events. While a constrained class has too few events held, :meth:`get`
        raises :class:`~thors_stream.neyman_pearson.NPInfeasibleError` (a ``ValueError``
        naming the count needed) and :meth:`predict_one` uses ``default_threshold``.
        :meth:`get` and :attr:`cost` are O(log n) with the compiled backend (it keeps a
        count index per constrained class); :meth:`result`, and every read with the numpy
        backend, cost O(n) after a change (one export of the held rows), O(1) repeated.

    Complexity
    ----------
    Compiled backend: ``update``/``revert`` O(log n) worst case, ``get``/``cost`` O(1)
    after an update's O(log n) refresh, ``update_many`` O(m log m + m log n),
    ``result`` O(log n); about 50 bytes per distinct score. Numpy backend:
    ``update``/``revert`` O(log n + load), ``get`` O(1) when the optimum provably did
    not move, else O(load + n / load); 48 bytes per distinct score per row-slot. The
    expiry queue adds 17 (window) or 25 (period) bytes per held event.

    Exactness
    ---------
    Sums are exact for integer or dyadic weights and costs (totals below 2**53):
    the threshold is then exactly the brute-force optimum. With arbitrary float
    weights costs carry rounding errors of order ``n * eps * total cost`` and
    candidates closer than that may be interchanged.

    Examples
    --------
    >>> st = StreamingThors(fn_cost=5, fp_cost=1, window=3)
    >>> for score, y in [(0.2, 0), (0.9, 1), (0.4, 0), (0.7, 1)]:
    ...     st.update(score, y)
    >>> st.get(), st.cost, len(st)
    (0.4, 0.0, 3)
    >>> st.predict_one(0.5)
    True
    """

    def __init__(
        self,
        *,
        fn_cost: float | None = None,
        fp_cost: float | None = None,
        cost_matrix: Sequence[Sequence[float]] | None = None,
        window: int | None = None,
        period: float | dt.timedelta | None = None,
        class_prior: float | None = None,
        default_threshold: float | None = None,
        backend: str = "auto",
        load: int = 1024,
        max_fpr: float | None = None,
        max_fnr: float | None = None,
        confidence: float = 0.95,
    ) -> None:
        self.max_fpr, self.max_fnr, self.confidence = check_np_params(max_fpr, max_fnr, confidence)
        self._np_mode = self.max_fpr is not None or self.max_fnr is not None
        self._plain = not self._np_mode and class_prior is None  # reads need no reweighting
        self._np_cache: tuple[Any, Any] | None = None  # (state key, result or error message)
        self._np_constraints: dict[tuple[Any, ...], Any] = {}  # np_constraint by class counts
        costs = resolve_costs(fn_cost, fp_cost, cost_matrix)
        self.fn_cost, self.fp_cost = costs.fn_cost, costs.fp_cost
        if window is not None:
            if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
                raise ValueError(f"window must be a positive integer, got {window!r}")
            if window > MAX_WINDOW:
                raise ValueError(f"window must be at most 2**62 (MAX_WINDOW), got {window!r}")
            window = int(window)
        if isinstance(period, (dt.datetime, np.datetime64)):  # a moment, not a duration
            raise TypeError(f"period must be a duration (seconds or a timedelta), got the moment {period!r}")
        period_s = None if period is None else check_time(period, "period")
        if period_s is not None and period_s <= 0:
            raise ValueError(f"period must be > 0, got {period!r}")
        if window is not None and period is not None:
            raise ValueError("give window or period, not both")
        self.window = window
        self.period = period
        self._period_s = period_s
        self.class_prior = check_class_prior(class_prior)
        self.default_threshold = None if default_threshold is None else check_score(default_threshold)
        if isinstance(load, bool) or not isinstance(load, (int, np.integer)) or not 4 <= load <= 65536:
            raise ValueError(f"load must be an integer in 4..65536, got {load!r}")
        self._load = int(load)
        self.backend = resolve_backend(backend)
        self._ring = 1 if window is not None else (2 if period is not None else 0)
        self._lock = threading.RLock()
        self._wmin, self._wmax = weight_range(self.fn_cost, self.fp_cost)  # weights taken without a check
        self._tree = make_core(self.fn_cost, self.fp_cost, self.backend, load, self._ring)
        self._queue = queue_of(self._tree)
        # without a window: the held events of weight != 1, so that revert can verify
        self._ledger = WeightLedger()
        self._last_t = -math.inf
        # events that arrived with a time earlier than the newest one (late labels),
        # ordered by time: (t, arrival number, score, label, weight)
        self._late: SortedList = SortedList()
        self._arrivals = 0
        self._bind_fast_paths()

    @property
    def n_updates(self) -> int:
        """Update calls accepted so far (events seen, held or not); saturates at
        ``2**63 - 1``. Settable (an int in ``0..2**63 - 1``)."""
        return int(self._tree.n_updates)

    @n_updates.setter
    def n_updates(self, value: int) -> None:
        self._tree.n_updates = check_n_updates(value)

    def _count_updates(self, m: int) -> None:
        """Count ``m`` more accepted events (saturating: never an overflow)."""
        self._tree.n_updates = min(int(self._tree.n_updates) + m, MAX_UPDATES)

    def _bind_fast_paths(self) -> None:
        """Route ``update``/``revert``/``get`` straight to the compiled core when it can
        serve them: its fast paths take the common valid arguments and hand anything else
        to the Python methods below (which validate and raise as documented), so the
        behaviour is the same, minus the interpreter's per-call overhead."""
        for name in ("update", "revert", "get"):
            self.__dict__.pop(name, None)
        core, cls = self._tree, type(self)
        if isinstance(core, PyCore):
            return
        # weights beyond the documented limit take the slow path, which refuses them
        core.bind(StreamingThors.update.__get__(self), StreamingThors.revert.__get__(self),
                  self._np_get_slow, self._ledger._at, self.window or 0, self._wmax, StreamingThors.get.__get__(self),
                  self._wmin)
        # instance attributes shadowing the methods (the same signatures, served in C)
        fast = self.__dict__
        if cls.update is StreamingThors.update and self._period_s is None:
            fast["update"] = core.fast_update
        if cls.revert is StreamingThors.revert and self._queue is None:
            fast["revert"] = core.fast_revert
        if cls.get is StreamingThors.get:
            if self._plain:
                fast["get"] = core.fast_get  # (the locked get() while a method works on the core)
            elif self._np_mode and self.class_prior is None:
                empty = np.zeros(0, np.int64)  # no rank known yet: the first read refills
                core.set_np_tables(int(self.max_fpr is not None), 0, empty, int(self.max_fnr is not None), 0, empty)
                fast["get"] = core.np_get

    # the held events' count and class weights, read from the core (no running sums here:
    # the answer depends only on what is held)
    @property
    def _n(self) -> int:
        return int(self._tree.n_events())

    @_n.setter
    def _n(self, value: int) -> None:  # checkpoints restore the core itself; nothing to keep
        pass

    @property
    def _w1(self) -> float:
        return float(self._tree.totals()[0])

    @_w1.setter
    def _w1(self, value: float) -> None:
        pass

    @property
    def _w0(self) -> float:
        return float(self._tree.totals()[1])

    @_w0.setter
    def _w0(self, value: float) -> None:
        pass

    # ---------------------------------------------------------------- river API
    @_locked
    def get(self) -> float | None:
        """The current THORS threshold (``-inf`` = all positive), ``None`` when empty.

        O(1) when no update moved the optimum, else O(load + n / load). In
        Neyman-Pearson mode O(log n) with the compiled backend (per-class count indexes
        and a range query), O(n) after a change with the numpy one; raises
        :class:`~thors_stream.neyman_pearson.NPInfeasibleError` while no threshold meets
        the constraint (too few events of a constrained class held).
        """
        if self._plain:
            thr: float | None = self._tree.threshold()  # None when nothing is held
            return thr
        if not self._n:
            return None
        if self._np_mode:
            return self._np_best()[1] if self._np_indexed() else self._np_result().threshold
        return self._best()[1]

    def _best(self) -> tuple[float, float]:
        if self.class_prior is not None:
            a, b = class_coefficients(self.fn_cost, self.fp_cost, self._w0, self._w1, self.class_prior)
            self._tree.set_coefs(a, b)
        best: tuple[float, float] = self._tree.best()
        return best

    @property
    @_locked
    def cost(self) -> float | None:
        """Empirical total cost of the held events at :meth:`get` (``None`` when empty)."""
        if self._plain:
            cost: float | None = self._tree.cost()
            return cost
        if self._n == 0:
            return None
        if self._np_mode:
            if not self._np_indexed():
                return self._np_result().cost
            m = self._np_best()[0]
            return float(self._tree._b * self._w0 + m)
        m = self._best()[0]
        return float(self._tree._b * self._w0 + m)

    def predict_one(self, score: float) -> bool:
        """``score > threshold``; uses ``default_threshold`` while nothing is held
        (or, in Neyman-Pearson mode, while no threshold meets the constraint)."""
        try:
            thr = self.get()
        except NPInfeasibleError:
            if self.default_threshold is None:
                raise
            thr = None
        if thr is None:
            thr = self.default_threshold
            if thr is None:
                raise RuntimeError(
                    "no labelled event is held, so there is no threshold yet; "
                    "pass default_threshold=... to StreamingThors to predict before that"
                )
        return bool(score > thr)

    @_locked
    def result(self) -> ThresholdResult | None:
        """A :class:`ThresholdResult` for the held events (``None`` when empty).

        O(log n) with the compiled backend (its inner nodes aggregate the class totals),
        O(n / load + load) with the numpy one. In Neyman-Pearson mode, O(n) after a change,
        O(1) when nothing changed (``get()`` and ``cost`` are O(log n) there with the
        compiled backend).
        """
        if self._n == 0:
            return None
        if self._np_mode:
            return self._np_result()
        _, thr = self._best()
        tree = self._tree
        n1, n0, c1, c0 = tree.totals()
        k1, k0, ck1, ck0 = tree.totals_upto(thr) if thr != _NEG_INF else (0.0, 0.0, 0, 0)
        a, b = class_coefficients(self.fn_cost, self.fp_cost, n0, n1, self.class_prior)
        return ThresholdResult(
            threshold=thr, cost=float(a * k1 + b * (n0 - k0)), n0=float(n0), n1=float(n1),
            k0=float(k0), k1=float(k1), count0=int(c0), count1=int(c1), count_k0=int(ck0),
            count_k1=int(ck1), fn_cost=self.fn_cost, fp_cost=self.fp_cost, class_prior=self.class_prior,
        )

    def __len__(self) -> int:
        """Number of events held."""
        return self._n

    def __repr__(self) -> str:
        win = f", window={self.window}" if self.window else (f", period={self.period!r}" if self.period else "")
        if self._np_mode:
            win += f", max_fpr={self.max_fpr}, max_fnr={self.max_fnr}, confidence={self.confidence}"
        try:
            thr: Any = self.get()
        except NPInfeasibleError:
            thr = "infeasible"
        return (
            f"StreamingThors(fn_cost={self.fn_cost}, fp_cost={self.fp_cost}{win}, "
            f"held={self._n}, threshold={thr})"
        )

    # ---------------------------------------------------------------- inspection
    @_locked
    def held(self) -> tuple[np.ndarray, ...]:
        """The held events aggregated by score: arrays ``(score, w1, w0, count1, count0)``. O(n)."""
        return tuple(export_rows(self._tree))

    def nbytes(self) -> int:
        """Bytes the summary holds outside Python objects: the structure, the expiry queue and,
        for an unwindowed summary with the compiled core, the revert predictor's queue of
        held scores (8 to 16 bytes an event while it records; see the speed page). O(1)."""
        return int(self._tree.nbytes()) + (int(self._queue.nbytes()) if self._queue is not None else 0)
