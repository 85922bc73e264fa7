"""StreamingThors: the exact THORS threshold of a changing set of labelled scores."""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from ._backend import export_lo, export_rows, load_rows, make_core, resolve_backend
from ._core import PyCore, queue_of
from ._ledger import WeightLedger
from ._queue import CANCELLED
from ._validation import (
    MAX_WEIGHTED_COST,
    check_class_prior,
    check_labels,
    check_score,
    check_scores,
    check_weight,
    check_weighted_costs,
    check_weights,
)
from .costs import class_coefficients, resolve_costs
from .neyman_pearson import (
    NPInfeasibleError,
    check_np_params,
    fpr_tail,
    min_rank,
    np_constraint,
    np_threshold_from_rows,
)
from .result import ThresholdResult

__all__ = ["StreamingThors"]

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

_LABELS: dict[Any, bool] = {0: False, 1: True}
_NEG_INF = float("-inf")


def _locked(method: Any) -> Any:
    """Run ``method`` holding the object's lock, with the compiled core told so (its fast
    paths then queue behind the lock instead of running beside a half-done change)."""

    @functools.wraps(method)
    def locked(self: StreamingThors, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            core = self._tree
            core.enter()
            try:
                return method(self, *args, **kwargs)
            finally:
                core.exit()

    return locked


def _label(y: Any) -> bool:
    try:
        pos = _LABELS.get(y) if not isinstance(y, str) else None
    except TypeError:  # unhashable
        pos = None
    if pos is None:
        raise ValueError(f"label must be 0, 1, False or True, got {y!r}")
    return pos


def _seconds(value: Any, name: str) -> float:
    """A time as seconds: a number, a ``datetime`` (its POSIX timestamp; a naive one is
    taken as UTC, as the CLI does, so the answer never depends on ``TZ``) or a ``timedelta``.
    Strings and bytes are refused (one rule with the scores and weights)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.timestamp()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bool, str, bytes, bytearray, np.str_, np.bytes_)) or value is None:
        raise TypeError(f"{name} must be a number of seconds or a datetime, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number of seconds or a datetime, got {value!r}") from None
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {value!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return f


class StreamingThors:
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
        ``"auto"`` (compiled treap when built, else numpy blocks), ``"c"`` or
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
    Compiled backend: ``update``/``revert`` O(log n) expected, ``get``/``cost`` O(1),
    ``update_many`` O(m log m + m log n), ``result`` O(n); 72 bytes per distinct
    score. Numpy backend: ``update``/``revert`` O(log n + load), ``get`` O(1) when
    the optimum provably did not move, else O(load + n / load); 48 bytes per
    distinct score per row-slot. The expiry queue adds 17 (window) or 25 (period)
    bytes per held event.

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
            window = int(window)
        if period is not None:
            p = _seconds(period, "period")
            if p <= 0:
                raise ValueError(f"period must be > 0, got {period!r}")
        if window is not None and period is not None:
            raise ValueError("give window or period, not both")
        self.window = window
        self.period = period
        self._period_s = _seconds(period, "period") if period is not None else None
        self.class_prior = check_class_prior(class_prior)
        self.default_threshold = None if default_threshold is None else check_score(default_threshold)
        if isinstance(load, bool) or not isinstance(load, (int, np.integer)) or not 4 <= load <= 65536:
            raise ValueError(f"load must be an integer in 4..65536, got {load!r}")
        self._load = int(load)
        self.backend = resolve_backend(backend)
        self._ring = 1 if window is not None else (2 if period is not None else 0)
        self._lock = threading.RLock()
        self._wmax = MAX_WEIGHTED_COST / max(self.fn_cost, self.fp_cost)  # largest weight accepted
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
        """Update calls accepted so far (events seen, held or not)."""
        return self._tree.n_updates

    @n_updates.setter
    def n_updates(self, value: int) -> None:
        self._tree.n_updates = value

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
        wmax = self._wmax
        core.bind(StreamingThors.update.__get__(self), StreamingThors.revert.__get__(self),
                  self._np_get_slow, self._ledger._at, self.window or 0, wmax)
        if cls.update is StreamingThors.update and self._period_s is None:
            self.update = core.fast_update
        if cls.revert is StreamingThors.revert and self._queue is None:
            self.revert = core.fast_revert
        if cls.get is StreamingThors.get:
            if self._plain:
                self.get = core.threshold
            elif self._np_mode and self.class_prior is None:
                empty = np.zeros(0, np.int64)  # no rank known yet: the first read refills
                core.set_np_tables(int(self.max_fpr is not None), 0, empty, int(self.max_fnr is not None), 0, empty)
                self.get = core.np_get

    # the held events' count and class weights, read from the core (no running sums here:
    # the answer depends only on what is held)
    @property
    def _n(self) -> int:
        return self._tree.n_events()

    @_n.setter
    def _n(self, value: int) -> None:  # checkpoints restore the core itself; nothing to keep
        pass

    @property
    def _w1(self) -> float:
        return self._tree.totals()[0]

    @_w1.setter
    def _w1(self, value: float) -> None:
        pass

    @property
    def _w0(self) -> float:
        return self._tree.totals()[1]

    @_w0.setter
    def _w0(self, value: float) -> None:
        pass

    # ---------------------------------------------------------------- river API
    @_locked
    def update(self, score: float, y: Any, w: float = 1.0, t: Any = None) -> None:
        """Add one labelled event; with a window, expire what falls out of it.

        ``y`` is a bool or 0/1, ``w`` > 0 a weight (e.g. the event's own cost), ``t``
        the event time (required with ``period``). With ``period``, an event older
        than the newest one (a late label) is held until it falls out of the period,
        and one already outside it is not held. Invalid input raises and leaves the
        object unchanged. O(log n) compiled, O(log n + load) numpy backend.
        """
        s = score if type(score) is float and score - score == 0.0 else check_score(score)
        try:
            pos = _LABELS[y]
        except (KeyError, TypeError):
            raise ValueError(f"label must be 0, 1, False or True, got {y!r}") from None
        if w != 1.0 or type(w) is not float:
            w = check_weight(w)
            if w > self._wmax:
                check_weighted_costs(w, self.fn_cost, self.fp_cost)
        if self._period_s is None:
            if t is not None:
                _seconds(t, "t")  # validated, not used without a period
            # ---- hot path: one call into the core adds, queues and expires
            if self.window is not None:
                self._tree.window_push(s, pos, w, self.window)
            else:
                self._tree.add(s, pos, w)
                if w != 1.0:
                    self._ledger.add(s, pos, w)
            self.n_updates += 1
            return
        if t is None:
            raise ValueError("t (the event time) is required when period is set")
        tf = _seconds(t, "t")
        if tf < self._last_t:
            self._add_late(s, pos, w, tf)
            self.n_updates += 1
            return
        cutoff = tf - self._period_s
        self._tree.time_push(s, pos, w, tf, cutoff)
        self._last_t = tf
        self.n_updates += 1
        self._expire_late(cutoff)

    def _add_late(self, s: float, pos: bool, w: float, tf: float) -> None:
        """An event older than the newest one: held until it falls out of the period."""
        if tf <= self._last_t - self._period_s:  # type: ignore[operator]
            return  # already outside the window: it would expire at once
        self._tree.add(s, pos, w)
        self._arrivals += 1
        self._late.add((tf, self._arrivals, s, int(pos), w))

    def _expire_late(self, cutoff: float) -> None:
        late = self._late
        while late and late[0][0] <= cutoff:
            _, _, s, y, w = late.pop(0)
            self._tree.remove(s, y == 1, w)

    @_locked
    def revert(self, score: float, y: Any, w: float = 1.0) -> None:
        """Remove one held event with this score, label and weight.

        Raises ``KeyError`` (and changes nothing) when no such event is held; the check
        is exact for the score, the label and the weight. With ``window`` the oldest
        identical event leaves; with ``period`` the identical event with the earliest
        time (a late copy if it is older than every queued one). O(log n) without a
        window; O(n) with one (a scan of the expiry queue).
        """
        s = check_score(score)
        pos = _label(y)
        w = check_weight(w)
        label = int(pos)
        col = self._tree.held_at(s)
        if col is None or col[2 + (not pos)] < 1:
            raise KeyError(f"no held event has score {s!r} and label {label}")
        queue = self._queue
        if queue is None:
            unit_held = col[2 + (not pos)] - self._ledger.count_at(s, label)
            if not (self._ledger.holds(s, label, w) if w != 1.0 else unit_held >= 1):
                raise KeyError(self._not_held(s, label, w, col))
            self._tree.remove(s, pos, w)
            if w != 1.0:
                self._ledger.remove(s, label, w)
            return
        qpos = queue.find(s, label, w)
        lpos = next((i for i, e in enumerate(self._late) if e[2:] == (s, label, w)), -1)
        if qpos < 0 and lpos < 0:
            raise KeyError(self._not_held(s, label, w, col))
        if lpos >= 0 and (qpos < 0 or self._late[lpos][0] < queue.time_at(qpos)):
            qpos = -1  # the late copy is the older one
        self._tree.remove(s, pos, w)
        if qpos >= 0:
            queue.cancel(qpos)
        else:
            del self._late[lpos]

    @staticmethod
    def _not_held(s: float, label: int, w: float, col: tuple[float, ...]) -> str:
        held_w, count = (col[0], col[2]) if label else (col[1], col[3])
        return (f"no held event has score {s!r}, label {label} and weight {w!r} "
                f"(held at this score and label: {int(count)} event(s) of total weight {held_w!r})")

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
            return self._tree.threshold()  # None when nothing is held
        if not self._n:
            return None
        if self._np_mode:
            return self._np_best()[1] if self._np_indexed() else self._np_result().threshold
        return self._best()[1]

    def _np_indexed(self) -> bool:
        """Whether the core answers rank and range queries in O(log n) (the compiled one)."""
        return not isinstance(self._tree, PyCore)

    def _np_best(self) -> tuple[float, float]:
        """Neyman-Pearson ``(min prefix, threshold)`` for the held events in O(log n): the
        class counts aggregated in the tree give the admissible key range (a rank query),
        a range query its cheapest key. Compiled backend only (see :meth:`_np_indexed`)."""
        tree = self._tree
        w1, w0, c1, c0 = tree.totals()
        con = self._np_constraint(int(c0), int(c1))
        lo = tree.kth_key(0, float(con.min_count0)) if con.min_count0 > 0 else -math.inf
        hi = tree.kth_key(1, float(con.max_count1 + 1)) if self.max_fnr is not None else math.inf
        if self.class_prior is not None:
            a, b = class_coefficients(self.fn_cost, self.fp_cost, w0, w1, self.class_prior)
            tree.set_coefs(a, b)
        best, key = (0.0, -math.inf) if con.min_count0 == 0 else (math.inf, math.nan)
        m, k = tree.range_best(lo, hi)
        if m < best:
            best, key = m, k
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
                val: Any = np_threshold_from_rows(
                    *export_rows(self._tree), self.fn_cost, self.fp_cost, self.class_prior,
                    self.max_fpr, self.max_fnr, self.confidence,
                )
            except NPInfeasibleError as exc:
                val = str(exc)
            self._np_cache = cache = (key, val)
        if isinstance(cache[1], str):
            raise NPInfeasibleError(cache[1])
        return cache[1]

    def _best(self) -> tuple[float, float]:
        if self.class_prior is not None:
            a, b = class_coefficients(self.fn_cost, self.fp_cost, self._w0, self._w1, self.class_prior)
            self._tree.set_coefs(a, b)
        return self._tree.best()

    @property
    @_locked
    def cost(self) -> float | None:
        """Empirical total cost of the held events at :meth:`get` (``None`` when empty)."""
        if self._plain:
            return self._tree.cost()
        if self._n == 0:
            return None
        if self._np_mode:
            if not self._np_indexed():
                return self._np_result().cost
            m = self._np_best()[0]
            return self._tree._b * self._w0 + m
        m = self._best()[0]
        return self._tree._b * self._w0 + m

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

    # ---------------------------------------------------------------- batches
    @_locked
    def update_many(self, scores: Any, ys: Any, ws: Any = None, ts: Any = None) -> None:
        """Add a batch of events, in order: the same end state as ``update`` on each.

        Validates the whole batch first (nothing changes on error), then applies the
        net change per distinct score in one pass over the touched blocks.
        O(m log m + touched blocks * load) for a batch of m.
        """
        s = check_scores(scores)
        m = s.shape[0]
        y = check_labels(ys, m, "ys")
        w = check_weights(ws, m, "ws")
        if w is not None:
            check_weighted_costs(w, self.fn_cost, self.fp_cost, "ws")
        w = np.ones(m) if w is None else w
        queue = self._queue
        t = None
        if ts is not None and self._period_s is None:
            for v in ts if not isinstance(ts, np.ndarray) else ts.tolist():
                _seconds(v, "ts")  # validated, not used without a period
            if len(ts) != m:
                raise ValueError(f"ts has length {len(ts)} but scores have length {m}")
        if self._period_s is not None:
            if ts is None:
                raise ValueError("ts (event times) are required when period is set")
            if isinstance(ts, np.ndarray) and ts.dtype.kind in "iuf":
                t = ts.astype(np.float64)
            else:
                t = np.array([_seconds(v, "ts") for v in ts], dtype=np.float64)
            if t.shape != (m,):
                raise ValueError(f"ts has shape {t.shape} but scores have length {m}")
            if not np.isfinite(t).all():
                raise ValueError(f"ts must be finite, got {t[~np.isfinite(t)][0].item()!r}")
            if m and (t[0] < self._last_t or (np.diff(t) < 0).any()):
                # late events among them: the per-event path handles them exactly
                for a, b, c, d in zip(s.tolist(), y.tolist(), w.tolist(), t.tolist()):
                    self.update(a, b, c, t=d)
                return
        if m == 0:
            return
        keys, yy, ww, sign = s, y, w, np.ones(m)
        if queue is not None:
            queue.push_many(s, y.astype(np.uint8), w, t)
            if self.window is not None:
                k = max(0, len(queue) - self.window)
            else:
                self._last_t = float(t[-1])  # type: ignore[index]
                cutoff = self._last_t - self._period_s  # type: ignore[operator]
                k = queue.count_expired(cutoff)
                self._expire_late(cutoff)
            if k:
                out = queue.pop_many(k)
                live = out[1] != CANCELLED
                keys = np.concatenate([s, out[0][live]])
                yy = np.concatenate([y, out[1][live] == 1])
                ww = np.concatenate([w, out[2][live]])
                sign = np.concatenate([sign, -np.ones(int(live.sum()))])
        else:
            self._ledger.add_many(s, y, w)
        # one row per event, sorted by score: the core adds each weight exactly
        order = np.argsort(keys)  # per-event rows: their order within a score does not matter
        keys, yy, sw, sign = keys[order], yy[order], (sign * ww)[order], sign[order]
        zero = np.zeros(keys.shape[0])
        self._tree.apply_sorted(np.ascontiguousarray(keys), np.where(yy, sw, zero), np.where(yy, zero, sw),
                                np.where(yy, sign, zero), np.where(yy, zero, sign))
        self.n_updates += m

    # ---------------------------------------------------------------- inspection
    @_locked
    def held(self) -> tuple[np.ndarray, ...]:
        """The held events aggregated by score: arrays ``(score, w1, w0, count1, count0)``. O(n)."""
        return tuple(export_rows(self._tree))

    def _core_arrays(self) -> dict[str, Any]:
        """What the core holds, as arrays: per-score rows, their double-double low parts
        and the expiry queue's records (oldest first)."""
        return {
            "rows": export_rows(self._tree), "lo": export_lo(self._tree),
            "queue": self._queue.arrays() if self._queue is not None else None,
        }

    def _restore_core(self, a: float, b: float, rows: np.ndarray, lo: np.ndarray | None,
                      queue: tuple[np.ndarray, ...] | None) -> None:
        """Replace the core by one holding ``rows`` (+ ``lo``) and the queue records."""
        old = self.__dict__.get("_tree")
        core = make_core(a, b, self.backend, self._load, self._ring)
        load_rows(core, rows, lo)
        q = queue_of(core)
        if q is not None and queue is not None and queue[0].shape[0]:
            q.push_many(*queue)
        core.n_updates = old.n_updates if old is not None else 0
        self._tree, self._queue = core, q
        self._bind_fast_paths()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return self._getstate()

    def _getstate(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_tree"], state["_queue"], state["_lock"]
        for name in ("update", "revert", "get"):
            state.pop(name, None)
        state["n_updates"] = self.n_updates
        state["_core"] = self._core_arrays()
        state["_tree_coefs"] = (self._tree._a, self._tree._b)
        state["_np_cache"] = None
        state["_np_constraints"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        a, b = state.pop("_tree_coefs")
        core = state.pop("_core", None)
        if core is None:  # a pickle from before the B+-tree core
            queue = state.pop("_queue", None)
            core = {"rows": state.pop("_tree"), "lo": None, "queue": queue.arrays() if queue is not None else None}
            for name in ("_n", "_w1", "_w0"):
                state.pop(name, None)
        for name, default in (("max_fpr", None), ("max_fnr", None), ("confidence", 0.95), ("_np_cache", None),
                              ("_np_constraints", {})):
            state.setdefault(name, default)  # pickles from before Neyman-Pearson mode
        n_updates = state.pop("n_updates", 0)
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._wmax = MAX_WEIGHTED_COST / max(self.fn_cost, self.fp_cost)
        self._np_mode = self.max_fpr is not None or self.max_fnr is not None
        self._plain = not self._np_mode and self.class_prior is None
        self._ring = 1 if self.window is not None else (2 if self._period_s is not None else 0)
        self.__dict__.setdefault("_ledger", WeightLedger())
        self.backend = resolve_backend(self.backend if self.backend != "c" else "auto")
        self._restore_core(a, b, core["rows"], core["lo"], core["queue"])
        self.n_updates = n_updates

    # ---------------------------------------------------------------- merging
    def merge(self, other: StreamingThors) -> None:
        """Add every event ``other`` holds to this summary (a multiset union).

        The basis of sharded loops: each shard keeps its own (windowed) summary and a
        coordinator merges their current contents into an unwindowed one. Costs and
        ``class_prior`` must be equal; ``self`` must have no window (an expiry order
        across shards is not defined). ``other`` is not changed. The Neyman-Pearson
        settings are a read-time choice and need not match: ``self``'s apply to the union. O(m log n) for m
        distinct scores in ``other`` (O(n + m) bulk merge when m is large).

        Examples
        --------
        >>> a = StreamingThors(fn_cost=5, fp_cost=1, window=100)
        >>> b = StreamingThors(fn_cost=5, fp_cost=1, window=100)
        >>> a.update(0.2, 0); a.update(0.7, 1); b.update(0.4, 0)
        >>> hub = StreamingThors.merged([a, b])
        >>> hub.get(), len(hub)
        (0.4, 3)
        """
        if not isinstance(other, StreamingThors):
            raise TypeError(f"can only merge a StreamingThors, got {type(other).__name__}")
        mine = (self.fn_cost, self.fp_cost, self.class_prior)
        theirs = (other.fn_cost, other.fp_cost, other.class_prior)
        if mine != theirs:
            raise ValueError(
                f"cannot merge summaries with different (fn_cost, fp_cost, class_prior): {mine} vs {theirs}"
            )
        if self._queue is not None:
            raise ValueError(
                "merge into a summary without window/period (expiry order across summaries is undefined); "
                "use StreamingThors.merged([...]) to combine windowed shards"
            )
        # a snapshot of the other summary under its own lock, then the union under ours
        # (never both locks at once: two threads merging each way cannot deadlock)
        with other._lock:
            rows, lo = export_rows(other._tree), export_lo(other._tree)
            ledger = WeightLedger()
            if other._queue is None:
                ledger.update(other._ledger)
            else:  # the weights of the events merged in, so that revert can still verify them
                s, y, w = other._queue.arrays()[:3]
                live = y != CANCELLED
                ledger.add_many(s[live], y[live] == 1, w[live])
                for _, _, ls, ly, lw in other._late:
                    if lw != 1.0:
                        ledger.add(ls, ly, lw)
            n_updates = other.n_updates
        self._merge_rows(rows, lo, ledger, n_updates)

    @_locked
    def _merge_rows(self, rows: np.ndarray, lo: np.ndarray, ledger: WeightLedger, n_updates: int) -> None:
        if rows.shape[1]:
            load_rows(self._tree, rows, lo)
        self._ledger.update(ledger)
        self.n_updates += n_updates

    @classmethod
    def merged(cls, summaries: Sequence[StreamingThors], *, backend: str = "auto") -> StreamingThors:
        """A new unwindowed summary holding the union of ``summaries``' held events
        (costs, prior, default threshold and Neyman-Pearson settings of the first)."""
        if not summaries:
            raise ValueError("merged() needs at least one summary")
        first = summaries[0]
        out = cls(fn_cost=first.fn_cost, fp_cost=first.fp_cost, class_prior=first.class_prior,
                  default_threshold=first.default_threshold, backend=backend, max_fpr=first.max_fpr,
                  max_fnr=first.max_fnr, confidence=first.confidence)
        for s in summaries:
            out.merge(s)
        return out

    # ---------------------------------------------------------------- checkpoints
    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> None:
        """Write a checkpoint of the whole state, atomically (see :mod:`thors_stream.checkpoint`).

        A crash at any moment leaves the previous file or the new one, never a broken
        one. With ``key`` (bytes) the file is signed with HMAC-SHA256 and only loads
        with the same key. Per-score weights are written as the exact sums of the held
        events (recomputed from the expiry queue or the weight ledger where the running
        sums drifted, outside the exactness condition), so every checkpoint loads. O(n).

        Examples
        --------
        >>> import os, tempfile
        >>> st = StreamingThors(fn_cost=5, fp_cost=1, window=10)
        >>> st.update_many([0.1, 0.5, 0.9], [0, 0, 1])
        >>> path = os.path.join(tempfile.mkdtemp(), "st.ckpt")
        >>> st.save(path)
        >>> back = StreamingThors.load(path)
        >>> back.get() == st.get(), len(back)
        (True, 3)
        """
        from .checkpoint import write_checkpoint

        write_checkpoint(path, "StreamingThors", *self._checkpoint_parts(), key=key)

    @_locked
    def _checkpoint_parts(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        """``(params, state, arrays)`` describing this object for the checkpoint format."""
        rows = export_rows(self._tree)
        lo = export_lo(self._tree)
        w_tot = self._repair_rows(rows, lo)
        arrays = {name: rows[i] for i, name in enumerate(("keys", "w1", "w0", "c1", "c0"))}
        if lo.any():  # double-double low parts: only when some per-score sum needs them
            arrays["w1_lo"], arrays["w0_lo"] = lo[0], lo[1]
        if len(self._ledger):
            for name, arr in zip("sywc", self._ledger.arrays()):
                arrays[f"ledger_{name}"] = arr
        if self._queue is not None:
            q = self._queue.arrays()
            for name, a in zip(("queue_s", "queue_y", "queue_w", "queue_t"), q):
                arrays[name] = a
        late = list(self._late)
        arrays["late_t"] = np.array([e[0] for e in late], dtype=np.float64)
        arrays["late_seq"] = np.array([e[1] for e in late], dtype=np.int64)
        arrays["late_s"] = np.array([e[2] for e in late], dtype=np.float64)
        arrays["late_y"] = np.array([e[3] for e in late], dtype=np.uint8)
        arrays["late_w"] = np.array([e[4] for e in late], dtype=np.float64)
        params = {
            "fn_cost": self.fn_cost, "fp_cost": self.fp_cost, "window": self.window,
            "period_seconds": self._period_s, "period_is_timedelta": isinstance(self.period, dt.timedelta),
            "class_prior": self.class_prior, "default_threshold": self.default_threshold, "load": self._load,
            "max_fpr": self.max_fpr, "max_fnr": self.max_fnr, "confidence": self.confidence,
        }
        state = {
            "n": self._n, "w1": w_tot[0], "w0": w_tot[1], "last_t": self._last_t, "arrivals": self._arrivals,
            "n_updates": self.n_updates, "tree_coefs": [self._tree._a, self._tree._b],
        }
        return params, state, arrays

    def _repair_rows(self, rows: np.ndarray, lo: np.ndarray) -> tuple[float, float]:
        """Make the per-score weights in ``rows``/``lo`` (in place) the exact sums of the held
        events wherever the running double-double sums drifted (only possible outside the
        exactness condition), and return the class totals. The events are known one by one:
        the expiry queue and late events, or, without a window, the weight ledger plus
        unit-weight events. O(n), plus ``math.fsum`` over the scores that drifted."""
        keys, n = rows[0], rows.shape[1]
        per: list[list[list[float]]] | None = None
        if self._queue is not None:
            s, y, w = self._queue.arrays()[:3]
            live = y != CANCELLED
            s, y, w = s[live], y[live], w[live]
            if self._late:
                s = np.concatenate([s, [e[2] for e in self._late]])
                y = np.concatenate([y, [e[3] for e in self._late]])
                w = np.concatenate([w, [e[4] for e in self._late]])
            idx = np.searchsorted(keys, s)
        else:
            ls, ly, lw, lc = self._ledger.arrays()
            s, y, w = np.repeat(ls, lc), np.repeat(ly, lc), np.repeat(lw, lc)
            idx = np.searchsorted(keys, s)
            recorded = {cls: np.bincount(idx[y == cls], minlength=n) for cls in (0, 1)}
            for cls, row in ((1, 3), (0, 4)):  # unit-weight events: the rest of each class count
                units = rows[row] - recorded[cls]
                k = np.flatnonzero(units > 0)
                s = np.concatenate([s, np.repeat(keys[k], units[k].astype(np.int64))])
                y = np.concatenate([y, np.full(int(units[k].sum()), cls, dtype=y.dtype)])
                w = np.concatenate([w, np.ones(int(units[k].sum()))])
            idx = np.searchsorted(keys, s)
        for cls, row in ((1, 1), (0, 2)):
            m = y == cls
            approx = np.bincount(idx[m], weights=w[m], minlength=n)
            have = rows[row] + lo[row - 1]
            drift = np.flatnonzero(np.abs(approx - have) > 1e-12 * np.maximum(np.abs(approx), np.abs(have)))
            if drift.shape[0]:
                if per is None:
                    per = [[[] for _ in range(n)], [[] for _ in range(n)]]
                    for i, c, v in zip(idx.tolist(), y.tolist(), w.tolist()):
                        per[c][i].append(v)
                for k in drift.tolist():
                    hi = math.fsum(per[cls][k])
                    rows[row][k], lo[row - 1][k] = hi, math.fsum([*per[cls][k], -hi])
        return (math.fsum([*rows[1].tolist(), *lo[0].tolist()]), math.fsum([*rows[2].tolist(), *lo[1].tolist()]))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, backend: str = "auto", key: bytes | None = None) -> StreamingThors:
        """Read a checkpoint written by :meth:`save`. O(n).

        Refuses with ``ValueError`` naming the file and the problem, before building
        anything: a path that is not a regular file (a FIFO, directory or device is not
        read), a corrupt, truncated, foreign or newer-version file, and any state whose
        invariants do not hold (see :mod:`thors_stream._checkpoint_check`: a recomputed
        checksum over an inconsistent state is refused too). ``key``: the HMAC-SHA256
        key the file was written with (see :mod:`thors_stream.checkpoint`); a keyed file
        needs it, and with a key an unkeyed file is refused.
        """
        from .checkpoint import read_checkpoint_full

        resolve_backend(backend)  # a bad argument is the caller's error, not the file's
        ck = read_checkpoint_full(path, "StreamingThors", key=key)
        return cls._from_checkpoint_parts(ck.params, ck.state, ck.arrays, backend=backend, where=ck.where,
                                          legacy=ck.revision < 2)

    @classmethod
    def _from_checkpoint_parts(
        cls, params: dict[str, Any], state: dict[str, Any], arrays: dict[str, np.ndarray], *, backend: str = "auto",
        where: str = "checkpoint", legacy: bool = False,
    ) -> StreamingThors:
        """Build a summary from validated checkpoint parts (``ValueError`` naming ``where``
        for any broken invariant, checked before anything is built). ``legacy``: parts of a
        file without the header ``revision`` field (a missing weight ledger is rebuilt)."""
        from ._checkpoint_check import check_stream_parts

        spec = check_stream_parts(params, state, arrays, where=where, legacy=legacy)
        try:
            st = cls(**spec.kwargs, backend=backend)
            st._restore_core(*spec.coefs, spec.rows, spec.lo, spec.queue)
            for entry in spec.ledger:
                st._ledger.add(*entry)
            st._late.update(spec.late)
            st._last_t, st._arrivals = spec.last_t, spec.arrivals
            st.n_updates = spec.n_updates
        except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} could not be restored: {exc!r}") from None
        if st._tree.n_keys != spec.rows.shape[1] or st._n != spec.n:
            raise ValueError(f"{where} could not be restored: the core holds {st._tree.n_keys} scores and {st._n} "
                             f"events, the file {spec.rows.shape[1]} and {spec.n}")
        return st

    def nbytes(self) -> int:
        """Bytes held in numpy arrays (the structure plus the expiry queue)."""
        return self._tree.nbytes() + (self._queue.nbytes() if self._queue is not None else 0)
