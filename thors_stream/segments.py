"""Thresholds per segment (merchant, country, channel...): exact, with fallback and pooling.

* :func:`thors_by_segment`: the exact THORS threshold of every segment's events, one
  grouping sort plus one THORS per group (O(n log n) in all).
* :func:`pooled_threshold`: partial pooling as one weighted THORS — the segment's events
  at weight 1 plus *all* events (the global sample) at weight ``pool_weight`` (lambda):
  ``lambda = 0`` is the segment's own threshold, ``lambda -> inf`` the global one.
* :func:`segment_thresholds`: what to deploy per segment: the segment's own (or pooled)
  threshold when both of its classes have at least ``min_per_class`` events, else the
  global threshold (``source = "global"``), so a small segment never gets a wild threshold.
* :class:`SegmentedStreamingThors`: one windowed :class:`~thors_stream.StreamingThors` per
  segment plus one over all events, idle segments evicted (least recently updated first).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ._checkpoint_check import _bad
from ._validation import check_labels, check_scores, check_time, check_weights, real_number
from .batch import thors_threshold
from .result import DEFAULT_MIN_PER_CLASS, ThresholdResult

if TYPE_CHECKING:
    from .selection import WindowSelector
    from .stream import StreamingThors

__all__ = ["SegmentPlan", "SegmentedStreamingThors", "pooled_threshold", "segment_thresholds",
           "thors_by_segment"]


def _groups(segments: Any, n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Distinct segments (sorted) and, for each, the indices of its events (ascending)."""
    g = np.asarray(segments)
    if g.shape != (n,):
        raise ValueError(f"segments must have one value per event ({n}), got shape {g.shape}")
    keys, inv = np.unique(g, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(keys) + 1))
    return keys, [order[bounds[i]:bounds[i + 1]] for i in range(len(keys))]


def _events(scores: Any, y: Any, sample_weight: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Scores, labels and weights checked by the rules of :func:`thors_threshold` (a bad
    value raises naming it, before anything is computed)."""
    s = check_scores(scores)
    n = s.shape[0]
    return s, check_labels(y, n), check_weights(sample_weight, n)


def thors_by_segment(scores: Any, y: Any, segments: Any, *, fn_cost: float, fp_cost: float,
                     sample_weight: Any = None, class_prior: float | None = None) -> dict[Any, ThresholdResult]:
    """The exact THORS threshold of each segment's events: ``{segment: ThresholdResult}``.

    Equal to ``thors_threshold`` on each segment's events separately (same tie rules,
    ``-inf`` for "flag everything"), in sorted segment order. A segment with one class only
    gets the answer THORS gives for it (check ``result.is_supported()``, or use
    :func:`segment_thresholds` which falls back). O(n log n) time, O(n) memory.

    >>> r = thors_by_segment([0.1, 0.9, 0.2, 0.3, 0.7, 0.8], [0, 1, 1, 0, 0, 1], ["a", "a", "a", "b", "b", "b"],
    ...                      fn_cost=1, fp_cost=1)
    >>> {k: v.threshold for k, v in r.items()}
    {'a': 0.1, 'b': 0.7}
    """
    s, lab, w = _events(scores, y, sample_weight)
    keys, idx = _groups(segments, s.shape[0])
    out: dict[Any, ThresholdResult] = {}
    for k, ix in zip(keys.tolist(), idx):
        out[k] = thors_threshold(s[ix], lab[ix], fn_cost=fn_cost, fp_cost=fp_cost,
                                 sample_weight=None if w is None else w[ix], class_prior=class_prior)
    return out


def pooled_threshold(scores: Any, y: Any, in_segment: Any, pool_weight: float, *, fn_cost: float,
                     fp_cost: float, sample_weight: Any = None, class_prior: float | None = None) -> ThresholdResult:
    """Partial pooling: THORS on the segment's events at weight 1 plus all events at weight ``pool_weight``.

    ``in_segment`` is a boolean mask of the segment's events; each event's weight is
    ``sample_weight * (in_segment + pool_weight)`` (events outside the segment are left out
    when ``pool_weight == 0``). This is one weighted THORS (exact, O(n log n)); the returned
    counts are those of every event used, so its bounds are not the segment's.

    >>> s, y = [0.1, 0.9, 0.2, 0.3, 0.7, 0.8], [0, 1, 1, 0, 0, 1]
    >>> seg = [True, True, True, False, False, False]
    >>> pooled_threshold(s, y, seg, 0.0, fn_cost=1, fp_cost=1).threshold
    0.1
    >>> pooled_threshold(s, y, seg, 1000.0, fn_cost=1, fp_cost=1).threshold == thors_threshold(
    ...     s, y, fn_cost=1, fp_cost=1).threshold
    True
    """
    lam = real_number(pool_weight, "pool_weight")
    if not lam >= 0:
        raise ValueError(f"pool_weight must be finite and >= 0, got {pool_weight!r}")
    s, lab, sw = _events(scores, y, sample_weight)
    m = check_labels(in_segment, s.shape[0], "in_segment")
    w = (np.ones(s.shape[0]) if sw is None else sw) * (m + lam)
    keep = w > 0
    if not keep.any():
        raise ValueError("the segment has no events and pool_weight is 0")
    return thors_threshold(s[keep], lab[keep], fn_cost=fn_cost, fp_cost=fp_cost, sample_weight=w[keep],
                           class_prior=class_prior)


@dataclass
class SegmentPlan:
    """What to deploy per segment (made by :func:`segment_thresholds`).

    ``global_result`` is THORS on all events; ``results[seg]`` the result deployed for
    ``seg`` and ``sources[seg]`` where it comes from: ``"segment"`` (its own events),
    ``"pooled"`` (partial pooling) or ``"global"`` (too few events of a class: the global
    threshold, with the statistics of that threshold on the segment's events).
    """

    global_result: ThresholdResult
    results: dict[Any, ThresholdResult] = field(default_factory=dict)
    sources: dict[Any, str] = field(default_factory=dict)

    def threshold(self, segment: Any) -> float:
        """The deployed threshold of ``segment``; the global one for a segment never seen. O(1)."""
        r = self.results.get(segment)
        return (r if r is not None else self.global_result).threshold

    def predict(self, scores: Any, segments: Any) -> np.ndarray:
        """``score > threshold(segment)`` for each event. O(n)."""
        s = check_scores(scores)
        g = np.asarray(segments)
        if g.shape != s.shape:
            raise ValueError(f"segments must have one value per score ({s.shape[0]}), got shape {g.shape}")
        thr = np.array([self.threshold(k) for k in g.tolist()], dtype=np.float64)
        return s > thr


def segment_thresholds(scores: Any, y: Any, segments: Any, *, fn_cost: float, fp_cost: float,
                       sample_weight: Any = None, class_prior: float | None = None,
                       min_per_class: int = DEFAULT_MIN_PER_CLASS, pool_weight: float | None = None) -> SegmentPlan:
    """Per-segment thresholds with a fallback to the global threshold.

    A segment with at least ``min_per_class`` events of each class gets its exact THORS
    threshold (``pool_weight=None``) or its pooled threshold (:func:`pooled_threshold`);
    any other segment gets the global threshold. O(n log n) without pooling; with
    pooling O(n log n) per segment.

    >>> s = [0.1, 0.9, 0.2, 0.3, 0.7, 0.8, 0.5]
    >>> y = [0, 1, 1, 0, 0, 1, 1]
    >>> plan = segment_thresholds(s, y, ["a", "a", "a", "b", "b", "b", "c"], fn_cost=1, fp_cost=1, min_per_class=1)
    >>> plan.sources, plan.threshold("c") == plan.global_result.threshold
    ({'a': 'segment', 'b': 'segment', 'c': 'global'}, True)
    """
    from .release import evaluate_threshold

    s, lab, w = _events(scores, y, sample_weight)
    g = np.asarray(segments)
    glob = thors_threshold(s, lab, fn_cost=fn_cost, fp_cost=fp_cost, sample_weight=w, class_prior=class_prior)
    plan = SegmentPlan(glob)
    own = thors_by_segment(s, lab, g, fn_cost=fn_cost, fp_cost=fp_cost, sample_weight=w, class_prior=class_prior)
    for k, r in own.items():
        if r.is_supported(min_per_class):
            if pool_weight is None:
                plan.results[k], plan.sources[k] = r, "segment"
            else:
                m = g == k
                pr = pooled_threshold(s, lab, m, pool_weight, fn_cost=fn_cost, fp_cost=fp_cost, sample_weight=w,
                                      class_prior=class_prior)
                plan.results[k] = evaluate_threshold(pr.threshold, s[m], lab[m], fn_cost=fn_cost, fp_cost=fp_cost,
                                                     sample_weight=None if w is None else w[m],
                                                     class_prior=class_prior)
                plan.sources[k] = "pooled"
        else:
            m = g == k
            plan.results[k] = evaluate_threshold(glob.threshold, s[m], lab[m], fn_cost=fn_cost, fp_cost=fp_cost,
                                                 sample_weight=None if w is None else w[m], class_prior=class_prior)
            plan.sources[k] = "global"
    return plan


_M64 = 2**64 - 1


def _segment_seed(seed: int, i: int) -> int:
    """The seed of the ``i``-th segment's selector: splitmix64 of ``seed`` and ``i`` (63 bits),
    so that segments draw independently and reproducibly. O(1).

    >>> _segment_seed(0, 0) != _segment_seed(0, 1), _segment_seed(7, 3) == _segment_seed(7, 3)
    (True, True)
    """
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return (z ^ (z >> 31)) >> 1


def _check_min_per_class(min_per_class: Any) -> None:
    """Refuse a ``min_per_class`` that is not an integer >= 1 (as ``ThresholdResult.is_supported`` does)."""
    if isinstance(min_per_class, bool) or not isinstance(min_per_class, (int, np.integer)) or min_per_class < 1:
        raise ValueError(f"min_per_class must be an integer >= 1, got {min_per_class!r}")


def _check_pooling(pool_weight: Any, pool_every: Any) -> tuple[float, int]:
    """``(pool_weight, pool_every)`` checked: a weight in ``[2**-32, 2**32]`` (pooled sums of
    valid weights then stay finite and normal; 0 is no pooling, ``pool_weight=None``) and an
    integer >= 1."""
    lam = real_number(pool_weight, "pool_weight")
    if not 2.0**-32 <= lam <= 2.0**32:
        raise ValueError(f"pool_weight must be in [2**-32, 2**32] (None: no pooling), got {pool_weight!r}")
    if isinstance(pool_every, bool) or not isinstance(pool_every, (int, np.integer)) or pool_every < 1:
        raise ValueError(f"pool_every must be an integer >= 1, got {pool_every!r}")
    return lam, int(pool_every)


def _pooled_rows_result(own: Sequence[np.ndarray], glob: Sequence[np.ndarray], lam: float, fn: float, fp: float,
                        prior: float | None) -> ThresholdResult:
    """THORS on the rows ``own`` (a segment's held events, ``(keys, w1, w0, c1, c0)`` as
    :meth:`StreamingThors.held() <thors_stream.StreamingThors.held>` exports them) at their
    weights plus the rows ``glob`` at ``lam`` times theirs: the rows merged, equal keys
    summed (own keys located among the global ones by binary search when they all are, else
    a stable sort of the two ascending runs, one linear merge), then the prefix
    search of :func:`~thors_stream.thors_threshold` (the same candidates, the same tie rule:
    the smallest threshold among equal costs, ``-inf`` first). Counts are those of every
    event used. O(n_own log n_glob + n_glob) or O(n_own + n_glob).

    >>> rows = lambda *c: tuple(np.array(x, dtype=float) for x in c)
    >>> own = rows([0.2, 0.6], [0, 1], [1, 0], [0, 1], [1, 0])
    >>> glob = rows([0.4, 0.6], [1, 1], [0, 0], [1, 1], [0, 0])
    >>> r = _pooled_rows_result(own, glob, 0.5, 1.0, 1.0, None)
    >>> r.threshold, r.n1, r.count1
    (0.2, 2.0, 3)
    """
    from .batch import _pick
    from .costs import class_coefficients

    gk, ok = glob[0], own[0]
    at = np.searchsorted(gk, ok)
    if at.shape[0] == 0 or (at[-1] < gk.shape[0] and np.array_equal(gk[at], ok)):
        # every own key is a global key (the usual case: the segment's events are global ones)
        k = gk
        w1, w0, c1, c0 = (glob[i] * lam if i < 3 else glob[i].copy() for i in (1, 2, 3, 4))
        for col, i in ((w1, 1), (w0, 2), (c1, 3), (c0, 4)):
            col[at] += own[i]  # (distinct positions)
    else:
        keys = np.concatenate([ok, gk])
        order = np.argsort(keys, kind="stable")
        k = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
        k = k[starts]
        w1, w0, c1, c0 = (np.add.reduceat(np.concatenate([own[i], glob[i] * lam if i < 3 else glob[i]])[order],
                                          starts) for i in (1, 2, 3, 4))
    n1, n0 = float(w1.sum()), float(w0.sum())
    count1, count0 = int(c1.sum()), int(c0.sum())
    a, b = class_coefficients(fn, fp, n0, n1, prior)
    j = _pick(np.cumsum(a * w1 - b * w0))  # (the batch search's quantity and rule)
    if j < 0:
        return ThresholdResult(-np.inf, float(b * n0), n0, n1, 0.0, 0.0, count0, count1, 0, 0, fn, fp, prior)
    k1, k0 = float(w1[:j + 1].sum()), float(w0[:j + 1].sum())
    return ThresholdResult(
        threshold=float(k[j]), cost=float(a * k1 + b * (n0 - k0)), n0=n0, n1=n1, k0=k0, k1=k1, count0=count0,
        count1=count1, count_k0=int(c0[:j + 1].sum()), count_k1=int(c1[:j + 1].sum()), fn_cost=fn, fp_cost=fp,
        class_prior=prior,
    )


def _counts_support(st: StreamingThors, min_per_class: int) -> bool:
    """Whether ``st`` holds at least ``min_per_class`` (>= 1) events of each class. O(1)."""
    _, _, c1, c0 = st._tree.totals()
    return min(int(c1), int(c0)) >= min_per_class


class SegmentedStreamingThors:
    """One windowed :class:`~thors_stream.StreamingThors` per segment, plus one over all events.

    ``update(segment, score, y, w, t)`` feeds the segment's summary and the global one;
    ``get(segment)`` is the segment's threshold when its window holds at least
    ``min_per_class`` events of each class, else the global threshold (also for a segment
    never seen or evicted). Memory: each summary holds at most ``window`` events (or one
    ``period``), O(window) bytes each (``nbytes()``: measured 81 bytes per held event with
    ``window``, 105 with ``period``, continuous scores, compiled backend), so
    at most ``(max_segments + 1)`` windows in all. When a new segment would exceed
    ``max_segments``, the least recently updated segment is evicted (its events stay in the
    global summary). ``update`` is O(log window) plus O(1) for the bookkeeping.

    **Choosing the window per segment** (``window="auto"``): every segment, and the global
    summary, gets its own :class:`~thors_stream.selection.WindowSelector` (THORS over each
    of ``windows`` and the fixed ``default_threshold``, chosen online by AdaHedge) instead of
    one :class:`~thors_stream.StreamingThors`. ``get(segment)`` is the segment's selector's
    choice when the segment's longest window holds ``min_per_class`` events of each class,
    else the global selector's choice. ``choose`` (``"draw"``, the default, or ``"leader"``)
    is the selectors'; ``seed`` seeds the global selector and, mixed with the order in which
    segments first appear, each segment's (runs are reproducible; segments draw
    independently). ``default_threshold`` is required: ``fp_cost / (fp_cost + fn_cost)`` on
    calibrated probabilities, ``0`` on cost margins (:mod:`thors_stream.margin`, the
    per-event Bayes rule). Count windows only: ``period`` is refused, and ``t`` is checked
    but not used; of the summaries' settings only ``class_prior`` is taken. ``update`` is
    then O(K log window) for K windows (two selector steps); memory: the sum of the windows
    per held segment (each candidate holds its own window).
    :attr:`global_summary` is the global selector's longest window.

    **Partial pooling** (``pool_weight=λ``): a held segment's threshold is its *pooled*
    threshold, THORS on its own held events at their weights plus *every* event the global
    summary holds at ``λ`` times its weight (where the segment's events are among the global
    ones — no window, or a window that still holds them — this is exactly
    :func:`pooled_threshold` with the segment's mask). Small segments are pulled toward the
    global threshold, large ones keep their own (``λ · n_global`` is about the segment size
    at which the segment starts to dominate). The rule: a held segment gets its pooled
    threshold as soon as its own window *or* the global one holds ``min_per_class`` events of
    each class — so a segment too small to stand alone gets the pooled threshold, not the
    global one; before that, and for a segment never seen or evicted, the global threshold.
    **Staleness and cost**: a segment's pooled threshold is computed at its first read
    (:meth:`get`, :meth:`predict_one`) and computed again at a read once ``pool_every``
    events (of any segment: each changes the global summary) have been learned since: the
    threshold in use is at most ``pool_every`` events old. A computation exports the held
    rows of the segment and of the global summary and merges them, O(n_segment + n_global)
    time and memory; reads in between are O(1). There is at most one per segment per
    ``pool_every`` events: with k segments read in a stretch of ``pool_every`` events, an
    amortised O(k (n_segment + n_global) / pool_every) per event (raise ``pool_every`` with
    many segments); ``update`` stays O(log window). ``λ`` lies in ``[2**-32, 2**32]``; not with
    ``window="auto"`` or ``max_fpr``/``max_fnr``; count windows, ``period`` and no window all
    work (each summary keeps its own window).

    Weighted events (``w``) work in every mode, e.g. per-event costs at unit costs: weigh a
    positive by its ``fn_i`` and a negative by its ``fp_i`` (``fn_cost=fp_cost=1``; the
    scores are then cost margins, see :mod:`thors_stream.margin`).

    Examples
    --------
    >>> st = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=100, max_segments=2, min_per_class=1)
    >>> for seg, s, y in [("a", 0.2, 0), ("a", 0.8, 1), ("b", 0.4, 1), ("c", 0.6, 0), ("c", 0.9, 1)]:
    ...     st.update(seg, s, y)
    >>> sorted(st.segments()), st.get("a") == st.global_threshold(), st.get("c")
    (['b', 'c'], True, 0.6)

    One selector per segment (``window="auto"``):

    >>> auto = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window="auto", windows=(4, 16),
    ...                                default_threshold=1 / 6, min_per_class=2, seed=1)
    >>> for i in range(40):
    ...     auto.update("a" if i % 4 else "b", (i % 10) / 10, i % 10 >= 6)
    >>> auto.selector("a").names, auto.get("a") == auto.selector("a").get()
    (('window 4', 'window 16', 'default'), True)
    >>> auto.get("never seen") == auto.global_selector.get()
    True

    Partial pooling: the small segment ``"b"`` (one event of each class, fewer than
    ``min_per_class``) gets its pooled threshold, not the global one.

    >>> pooled = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=None, pool_weight=0.25, min_per_class=2)
    >>> for seg, s, y in [("a", 0.1, 0), ("a", 0.3, 0), ("a", 0.4, 1), ("a", 0.6, 1), ("b", 0.5, 0), ("b", 0.7, 1)]:
    ...     pooled.update(seg, s, y)
    >>> pooled.source("b"), pooled.get("b"), pooled.global_threshold()
    ('pooled', 0.5, 0.3)
    """

    def __init__(self, *, fn_cost: float, fp_cost: float, window: int | str | None = None,
                 period: float | None = None, max_segments: int = 10_000,
                 min_per_class: int = DEFAULT_MIN_PER_CLASS, windows: Sequence[int] | None = None,
                 default_threshold: float | None = None, choose: str | None = None, seed: int | None = None,
                 pool_weight: float | None = None, pool_every: int | None = None, **kw: Any) -> None:
        if isinstance(max_segments, bool) or not isinstance(max_segments, int) or max_segments < 1:
            raise ValueError(f"max_segments must be an integer >= 1, got {max_segments!r}")
        auto = isinstance(window, str)
        if auto and window != "auto":
            raise ValueError(f"window must be a positive integer, None or 'auto', got {window!r}")
        self.pool_weight: float | None = None
        self.pool_every: int | None = None
        if pool_weight is None and pool_every is not None:
            raise ValueError(f"pool_every={pool_every!r} only applies with pool_weight=...")
        if pool_weight is not None:
            self.pool_weight, self.pool_every = _check_pooling(pool_weight, 500 if pool_every is None else pool_every)
            _check_min_per_class(min_per_class)
            if auto:
                raise ValueError("pool_weight does not combine with window='auto' (pool over a count window, "
                                 "a time window or all events)")
            if kw.get("max_fpr") is not None or kw.get("max_fnr") is not None:
                raise ValueError("pool_weight does not combine with max_fpr/max_fnr (the pooled threshold is the "
                                 "minimum-cost one)")
        if not auto and (windows is not None or choose is not None or seed is not None):
            given = [n for n, v in (("windows", windows), ("choose", choose), ("seed", seed)) if v is not None]
            raise ValueError(f"{', '.join(given)} only apply with window='auto' (this object has window={window!r})")
        self._auto = auto
        self.windows: tuple[int, ...] | None = None
        self.choose: str | None = None
        self.seed: int | None = None
        self.default_threshold: float | None = None
        if auto:
            from .selection import DEFAULT_WINDOWS

            _check_min_per_class(min_per_class)
            if period is not None:
                raise ValueError(f"window='auto' chooses among count windows; it does not combine with "
                                 f"period={period!r} (use window=None with period= for a time window)")
            other = sorted(set(kw) - {"class_prior"})
            if other:
                raise ValueError(f"window='auto' takes class_prior among the summaries' settings, not {other}")
            if default_threshold is None:
                raise ValueError("window='auto' needs default_threshold=...: the fixed candidate the windows are "
                                 "weighed against (fp_cost / (fp_cost + fn_cost) on calibrated probabilities, "
                                 "0 on cost margins)")
            choose = "draw" if choose is None else choose
            seed = 0 if seed is None else seed
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise TypeError(f"seed must be an integer, got {seed!r}")
            self.choose, self.seed = choose, int(seed)
            self._settings: dict[str, Any] = dict(
                fn_cost=fn_cost, fp_cost=fp_cost, default_threshold=default_threshold,
                windows=DEFAULT_WINDOWS if windows is None else windows, choose=choose,
                class_prior=kw.get("class_prior"))
            self.global_selector: WindowSelector | None = self._make_selector(self.seed)  # checks the settings
            self.windows = self.global_selector.windows
            self.default_threshold = self.global_selector.default_threshold
            self._settings["windows"] = self.windows
            self.global_summary = self.global_selector._experts[-1]
        else:
            # the settings every segment's summary is made with (kept as data, not a closure, so
            # that the object pickles)
            self._settings = dict(fn_cost=fn_cost, fp_cost=fp_cost, window=window, period=period, **kw)
            if default_threshold is not None:
                self._settings["default_threshold"] = default_threshold
            self.global_selector = None
            self.global_summary = self._make()
        self.max_segments = max_segments
        self.min_per_class = min_per_class
        self._seg: OrderedDict[Hashable, Any] = OrderedDict()
        self.evicted = 0
        self._created = 0  # segments registered so far (window='auto': numbers their seeds)
        # partial pooling: events learned (the clock of the pooled thresholds' age), each held
        # segment's pooled threshold with the clock when it was computed, the global rows last
        # exported with their clock
        self._learned = 0
        self._pool: dict[Hashable, tuple[float, int]] = {}
        self._global_rows: tuple[int, tuple[np.ndarray, ...]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_global_rows"] = None  # a cache: exported again when needed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("_learned", 0)  # (objects pickled before pooling existed)
        state.setdefault("_pool", {})
        state.setdefault("_global_rows", None)
        state.setdefault("_created", 0)
        state.setdefault("_auto", False)
        state.setdefault("global_selector", None)
        for name in ("pool_weight", "pool_every", "windows", "choose", "seed", "default_threshold"):
            state.setdefault(name, None)
        self.__dict__.update(state)

    @property
    def auto(self) -> bool:
        """Whether every segment chooses its window online (``window="auto"``)."""
        return self._auto

    def _make(self) -> StreamingThors:
        """A new summary with this object's settings."""
        from .stream import StreamingThors

        return StreamingThors(**self._settings)

    def _make_selector(self, seed: int) -> WindowSelector:
        """A new window selector with this object's settings (``window="auto"``)."""
        from .selection import WindowSelector

        return WindowSelector(seed=seed, **self._settings)

    def update(self, segment: Hashable, score: float, y: Any, w: float = 1.0, t: Any = None) -> None:
        """Learn one labelled event of ``segment`` (and of the global summary).

        Invalid input (score, label, weight, time, an unhashable segment) raises before
        anything changes: a new segment is registered only once its first event is accepted.
        """
        if self._auto:
            self._update_auto(segment, score, y, w, t)
            return
        st = self._held(segment)
        if st is None:
            st = self._make()
            st.update(score, y, w, t)  # validates before the segment is registered
            self._register(segment, st)
        else:
            st.update(score, y, w, t)
            self._seg.move_to_end(segment)
        self.global_summary.update(score, y, w, t)
        self._learned += 1

    def _held(self, segment: Hashable) -> Any:
        """The segment's summary or selector (``None`` when not held); ``TypeError`` naming an
        unhashable segment."""
        try:
            return self._seg.get(segment)
        except TypeError:
            raise TypeError(f"segment must be hashable, got {segment!r}"[:300]) from None

    def _register(self, segment: Hashable, st: Any) -> None:
        """Hold a new segment's summary (it has learned its first event), evicting the least
        recently updated segment beyond ``max_segments``."""
        self._seg[segment] = st
        self._created += 1
        if len(self._seg) > self.max_segments:
            old, _ = self._seg.popitem(last=False)
            self._pool.pop(old, None)
            self.evicted += 1

    def _update_auto(self, segment: Hashable, score: float, y: Any, w: float, t: Any) -> None:
        if t is not None:
            check_time(t, "t")  # checked, not used (count windows)
        sel = self._held(segment)
        if sel is None:
            sel = self._make_selector(_segment_seed(self.seed or 0, self._created))
            sel.update(score, y, w)  # validates before the segment is registered
            self._register(segment, sel)
        else:
            sel.update(score, y, w)
            self._seg.move_to_end(segment)
        self.global_selector.update(score, y, w)  # type: ignore[union-attr]  # (auto: a selector)
        self._learned += 1

    def global_threshold(self) -> float | None:
        """The threshold over all events (``None`` before any; with ``window="auto"`` the
        global selector's choice, ``default_threshold`` before any event)."""
        if self.global_selector is not None:
            return self.global_selector.get()
        return self.global_summary.get()

    def _summary(self, segment: Hashable) -> StreamingThors | None:
        """The segment's summary (with ``window="auto"`` its longest window), ``None`` when not held."""
        st = self._seg.get(segment)
        if st is None or not self._auto:
            return st
        last: StreamingThors = st._experts[-1]
        return last

    def result(self, segment: Hashable) -> ThresholdResult | None:
        """The segment's own result (``None`` when it is not held); with ``window="auto"``
        the result over the segment's longest window (the one its support is judged on)."""
        st = self._summary(segment)
        return None if st is None else st.result()

    def selector(self, segment: Hashable) -> WindowSelector | None:
        """With ``window="auto"``: the segment's :class:`~thors_stream.selection.WindowSelector`
        (read its ``chosen``, ``costs``, ``probabilities()``; do not update it), ``None`` when
        the segment is not held or without ``window="auto"``. O(1).

        >>> st = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window="auto", windows=(2, 8),
        ...                              default_threshold=0.5)
        >>> st.update("a", 0.3, 0)
        >>> st.selector("a").n, st.selector("b")
        (1, None)
        """
        if not self._auto:
            return None
        sel: WindowSelector | None = self._seg.get(segment)
        return sel

    def get(self, segment: Hashable) -> float | None:
        """The segment's threshold if supported (``min_per_class`` per class in its window), else the global one.

        With ``window="auto"``: the segment's selector's choice when its longest window holds
        ``min_per_class`` events of each class, else the global selector's. O(1) (plus a
        threshold read, O(log window))."""
        if self._auto:
            sel = self._seg.get(segment)
            if sel is not None and _counts_support(sel._experts[-1], self.min_per_class):
                thr: float = sel.get()
                return thr
            return self.global_selector.get()  # type: ignore[union-attr]  # (auto: a selector)
        if self.pool_weight is not None:
            st = self._seg.get(segment)
            if st is None or not self._pools(st):
                return self.global_threshold()
            cached = self._pool.get(segment)
            if cached is None or self._learned - cached[1] >= self.pool_every:  # type: ignore[operator]
                return self._refresh(segment, st).threshold
            return cached[0]
        own_st: StreamingThors | None = self._seg.get(segment)
        # support first: a segment below it takes the global threshold even when its own summary has
        # none (too few events of a class for max_fpr/max_fnr: its result would raise)
        if own_st is not None and _counts_support(own_st, self.min_per_class):
            r = own_st.result()
            if r is not None and r.is_supported(self.min_per_class):
                own: float = r.threshold
                return own
        return self.global_threshold()

    # ---- partial pooling
    def _pools(self, st: StreamingThors) -> bool:
        """Whether a held segment gets its pooled threshold: its window or the global one holds
        ``min_per_class`` events of each class. O(1)."""
        return _counts_support(st, self.min_per_class) or _counts_support(self.global_summary, self.min_per_class)

    def _refresh(self, segment: Hashable, st: StreamingThors) -> ThresholdResult:
        """Compute the segment's pooled result on the events held now and keep its threshold
        with the clock. O(n_segment + n_global)."""
        g = self._global_rows
        if g is None or g[0] != self._learned:
            g = self._global_rows = (self._learned, self.global_summary.held())
        r = _pooled_rows_result(st.held(), g[1], self.pool_weight,  # type: ignore[arg-type]  # (pooling on)
                                st.fn_cost, st.fp_cost, st.class_prior)
        self._pool[segment] = (r.threshold, self._learned)
        return r

    def pooled_result(self, segment: Hashable) -> ThresholdResult | None:
        """With ``pool_weight``: the segment's pooled result on the events held now — THORS on
        its held events at their weight plus every globally held event at ``pool_weight`` times
        its weight, the counts and weights those of every event used — computed afresh (the
        threshold :meth:`get` answers from then on); ``None`` for a segment not held or without
        pooling. O(n_segment + n_global).

        >>> st = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=None, pool_weight=0.5, min_per_class=1)
        >>> for seg, s, y in [("a", 0.2, 0), ("a", 0.6, 1), ("b", 0.4, 1), ("b", 0.5, 0), ("b", 0.7, 1)]:
        ...     st.update(seg, s, y)
        >>> r = st.pooled_result("a")
        >>> r.threshold, r.count1, r.count0, r.n1, st.get("a")
        (0.2, 4, 3, 2.5, 0.2)
        """
        st = self._seg.get(segment)
        if self.pool_weight is None or st is None:
            return None
        return self._refresh(segment, st)

    def source(self, segment: Hashable) -> str:
        """Where :meth:`get` takes the segment's threshold from: ``"segment"`` (its own window, or
        its selector with ``window="auto"``), ``"pooled"`` (its pooled threshold) or ``"global"``
        (the global one: the segment is not held or lacks support). O(1).

        >>> st = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=10, min_per_class=1)
        >>> st.update("a", 0.2, 0); st.update("a", 0.6, 1); st.update("b", 0.4, 1)
        >>> st.source("a"), st.source("b"), st.source("never seen")
        ('segment', 'global', 'global')
        """
        st = self._summary(segment)
        if st is None:
            return "global"
        if self.pool_weight is not None:
            return "pooled" if self._pools(st) else "global"
        return "segment" if _counts_support(st, self.min_per_class) else "global"

    def predict_one(self, segment: Hashable, score: float) -> bool:
        """``score > get(segment)`` (False before any threshold)."""
        thr = self.get(segment)
        return thr is not None and score > thr

    def segments(self) -> list[Hashable]:
        """Segments held, least recently updated first."""
        return list(self._seg)

    # ---- checkpoints (ThorsClassifier.save_thresholding / load_thresholding)
    def _checkpoint_parts(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray], list[Hashable]]:
        """``(params, state, arrays, keys)`` of the segments (the global summary is the
        caller's own): each segment's state, its arrays concatenated under ``seg_`` with
        each segment's lengths, and the segment keys least recently updated first (the
        caller encodes them). O(held events).

        With ``window="auto"`` the global summary (the caller's own) is the global selector's
        longest window; the rest of the global selector is written here (``params.selector``,
        ``state.global_selector``, arrays under ``seg_global_``), and each segment's state is
        ``{"thors": its longest window, "selector": the rest of its selector}``, its arrays
        (the longest window's and the selector's) concatenated as above."""
        states: list[dict[str, Any]] = []
        lengths: list[dict[str, int]] = []
        parts: dict[str, list[np.ndarray]] = {}
        for st in self._seg.values():
            if self._auto:
                _, state, arrays = st._experts[-1]._checkpoint_parts()
                _, sel_state, sel_arrays = st._checkpoint_parts()
                state = {"thors": state, "selector": sel_state}
                arrays = {**arrays, **sel_arrays}
            else:
                _, state, arrays = st._checkpoint_parts()
            states.append(state)
            lengths.append({name: int(a.shape[0]) for name, a in arrays.items()})
            for name, a in arrays.items():
                parts.setdefault(name, []).append(a)
        params: dict[str, Any] = {"max_segments": self.max_segments, "min_per_class": self.min_per_class}
        state = {"evicted": self.evicted, "states": states, "lengths": lengths}
        arrays = {f"seg_{name}": np.concatenate(chunks) for name, chunks in parts.items()}
        if self.global_selector is not None:
            sp, ss, sa = self.global_selector._checkpoint_parts()
            params.update(windows=list(self.windows or ()), choose=self.choose,
                          default_threshold=self.default_threshold, seed=self.seed, selector=sp)
            state.update(created=self._created, global_selector=ss)
            arrays.update({f"seg_global_{name}": a for name, a in sa.items()})
        if self.pool_weight is not None:
            params.update(pool_weight=self.pool_weight, pool_every=self.pool_every)
            cache = [self._pool.get(k) for k in self._seg]
            state.update(learned=self._learned, pool=[None if c is None else [c[0], c[1]] for c in cache])
        return params, state, arrays, list(self._seg)

    def _restore(self, params: Any, state: Any, arrays: dict[str, np.ndarray], keys: list[Hashable],
                 summary_params: dict[str, Any], global_summary: Any, where: str) -> None:
        """Take what :meth:`_checkpoint_parts` wrote (``keys`` decoded, ``global_summary``
        restored, ``summary_params`` the settings every summary shares), after checking it:
        the same ``max_segments`` and ``min_per_class``, at most ``max_segments`` distinct
        segments, lengths that split every concatenated array exactly, and each segment's
        summary valid on its own (:meth:`StreamingThors.load <thors_stream.StreamingThors.load>`'s
        checks); with ``window="auto"`` also the same windows, ``choose``, default threshold and
        seed, and every selector valid (the checks of the wrapper's ``window="auto"``
        checkpoints), the global one around ``global_summary``. ``ValueError`` naming
        ``where``; nothing changes unless everything holds."""
        from .stream import StreamingThors

        bad = partial(_bad, where)

        auto_params = {"windows", "choose", "default_threshold", "seed", "selector"}
        pooled = self.pool_weight is not None
        want_params = {"max_segments", "min_per_class"} | (auto_params if self._auto else set()) | \
            ({"pool_weight", "pool_every"} if pooled else set())
        want_state = {"evicted", "states", "lengths"} | ({"created", "global_selector"} if self._auto else set()) | \
            ({"learned", "pool"} if pooled else set())
        if isinstance(params, dict):
            for name, has, mode in (("selector", self._auto, "window='auto'"), ("pool_weight", pooled, "pool_weight")):
                if (name in params) != has:
                    raise ValueError(f"{where} was written {'with' if name in params else 'without'} {mode} for the "
                                     f"segments, this object {'has it' if has else 'has not'}")
        if not isinstance(params, dict) or set(params) != want_params:
            raise bad("params.segments", f"must be an object with the fields {', '.join(sorted(want_params))}")
        if not isinstance(state, dict) or set(state) != want_state:
            raise bad("state.segments", f"must be an object with the fields {', '.join(sorted(want_state))}")
        theirs = (params["max_segments"], params["min_per_class"])
        if theirs != (self.max_segments, self.min_per_class):
            raise ValueError(f"{where} was written with (max_segments, min_per_class) = {theirs!r}, this wrapper "
                             f"has {(self.max_segments, self.min_per_class)!r}"[:600])
        if self._auto:
            mine_a = (list(self.windows or ()), self.choose, self.default_threshold, self.seed)
            theirs_a = (params["windows"], params["choose"], params["default_threshold"], params["seed"])
            if theirs_a != mine_a or type(params["seed"]) is not int:
                raise ValueError(f"{where} was written with the segments' (windows, choose, default_threshold, "
                                 f"seed) = {theirs_a!r}, this object has {mine_a!r}"[:600])
        if pooled and (params["pool_weight"], params["pool_every"]) != (self.pool_weight, self.pool_every):
            raise ValueError(f"{where} was written with the segments' (pool_weight, pool_every) = "
                             f"{(params['pool_weight'], params['pool_every'])!r}, this object has "
                             f"{(self.pool_weight, self.pool_every)!r}"[:600])
        evicted, states, lengths = state["evicted"], state["states"], state["lengths"]
        if type(evicted) is not int or not 0 <= evicted < 2**63:
            raise bad("state.segments.evicted", f"must be an integer >= 0, got {evicted!r}")
        if not isinstance(states, list) or not isinstance(lengths, list) or len(states) != len(keys) or \
                len(lengths) != len(keys):
            raise bad("state.segments", f"must hold one state and one lengths object per segment key ({len(keys)})")
        if len(keys) > self.max_segments:
            raise bad("state.segments", f"holds {len(keys)} segments, more than max_segments={self.max_segments}")
        if len(set(keys)) != len(keys):
            raise bad("state.segment_keys", "holds a segment twice")
        created = len(keys) + evicted
        if self._auto:
            created = state["created"]
            if type(created) is not int or not len(keys) + evicted <= created < 2**63:
                raise bad("state.segments.created", f"must be an integer >= the segments held and evicted "
                          f"({len(keys) + evicted}), got {created!r}")
        learned, pool = self._learned, self._pool
        if pooled:
            learned, raw = state["learned"], state["pool"]
            if type(learned) is not int or not 0 <= learned < 2**63:
                raise bad("state.segments.learned", f"must be an integer >= 0, got {learned!r}")
            if not isinstance(raw, list) or len(raw) != len(keys):
                raise bad("state.segments.pool", f"must be a list of one entry per segment key ({len(keys)})")
            pool = {}
            for i, (key, c) in enumerate(zip(keys, raw)):
                if c is None:
                    continue
                if not isinstance(c, list) or len(c) != 2 or type(c[0]) not in (int, float) or \
                        not -math.inf <= c[0] < math.inf or type(c[1]) is not int or not 0 <= c[1] <= learned:
                    raise bad(f"state.segments.pool[{i}]", f"must be null or [threshold (a number or -inf), the "
                              f"count of events learned when it was computed (<= {learned})], got {c!r}"[:300])
                pool[key] = (float(c[0]), c[1])
        glob_arrays = {k[len("seg_global_"):]: a for k, a in arrays.items() if k.startswith("seg_global_")}
        if glob_arrays and not self._auto:
            raise bad("the file", "holds a global selector's arrays (seg_global_...) without window='auto'")
        names = [k[len("seg_"):] for k in arrays if not k.startswith("seg_global_")]
        offsets = dict.fromkeys(names, 0)
        held: OrderedDict[Hashable, Any] = OrderedDict()
        for i, (key, st, ln) in enumerate(zip(keys, states, lengths)):
            if not isinstance(ln, dict) or not set(ln) <= set(names) or \
                    not all(type(v) is int and v >= 0 for v in ln.values()):
                raise bad(f"state.segments.lengths[{i}]", f"must map array names {sorted(names)} to lengths >= 0")
            own = {}
            for name, count in ln.items():
                a, at = arrays["seg_" + name], offsets[name]
                if at + count > a.shape[0]:
                    raise bad(f"array 'seg_{name}'", f"is shorter than the segments' lengths ({a.shape[0]})")
                own[name], offsets[name] = a[at:at + count], at + count
            seg_where = f"{where} (segment {key!r})"[:300]
            if self._auto:
                if not isinstance(st, dict) or set(st) != {"thors", "selector"}:
                    raise bad(f"state.segments.states[{i}]", "must be an object with the fields selector, thors")
                last = StreamingThors._from_checkpoint_parts(
                    summary_params, st["thors"], {k: a for k, a in own.items() if not k.startswith("sel")},
                    where=seg_where)
                sel = self._make_selector(0)  # (its generator state comes from the file)
                sel._restore(params["selector"], st["selector"], {k: a for k, a in own.items() if k.startswith("sel")},
                             last, seg_where)
                held[key] = sel
            else:
                held[key] = StreamingThors._from_checkpoint_parts(summary_params, st, own, where=seg_where)
        for name, at in offsets.items():
            if at != arrays["seg_" + name].shape[0]:
                raise bad(f"array 'seg_{name}'", f"holds {arrays['seg_' + name].shape[0]} values, the segments' "
                          f"lengths add up to {at}")
        glob_sel = None
        if self._auto:
            glob_sel = self._make_selector(0)
            glob_sel._restore(params["selector"], state["global_selector"], glob_arrays, global_summary,
                              f"{where} (global selector)")
        # everything holds: take it
        self._seg = held
        self.global_summary = global_summary
        self.global_selector = glob_sel
        self.evicted = evicted
        self._created = created
        self._learned, self._pool, self._global_rows = learned, pool, None

    def nbytes(self) -> int:
        """Bytes held in numpy arrays by all the summaries (with ``window="auto"``, every window of every selector)."""
        if self._auto:
            sels = [self.global_selector, *self._seg.values()]
            return sum(int(e.nbytes()) for sel in sels for e in sel._experts)
        return self.global_summary.nbytes() + sum(int(st.nbytes()) for st in self._seg.values())
