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

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ._checkpoint_check import _bad
from ._validation import check_labels, check_scores, check_weights, real_number
from .batch import thors_threshold
from .result import DEFAULT_MIN_PER_CLASS, ThresholdResult

if TYPE_CHECKING:
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

    >>> st = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=100, max_segments=2, min_per_class=1)
    >>> for seg, s, y in [("a", 0.2, 0), ("a", 0.8, 1), ("b", 0.4, 1), ("c", 0.6, 0), ("c", 0.9, 1)]:
    ...     st.update(seg, s, y)
    >>> sorted(st.segments()), st.get("a") == st.global_threshold(), st.get("c")
    (['b', 'c'], True, 0.6)
    """

    def __init__(self, *, fn_cost: float, fp_cost: float, window: int | None = None, period: float | None = None,
                 max_segments: int = 10_000, min_per_class: int = DEFAULT_MIN_PER_CLASS, **kw: Any) -> None:
        if isinstance(max_segments, bool) or not isinstance(max_segments, int) or max_segments < 1:
            raise ValueError(f"max_segments must be an integer >= 1, got {max_segments!r}")
        # the settings every segment's summary is made with (kept as data, not a closure, so
        # that the object pickles)
        self._settings: dict[str, Any] = dict(fn_cost=fn_cost, fp_cost=fp_cost, window=window, period=period, **kw)
        self.max_segments = max_segments
        self.min_per_class = min_per_class
        self.global_summary = self._make()
        self._seg: OrderedDict[Hashable, Any] = OrderedDict()
        self.evicted = 0

    def _make(self) -> StreamingThors:
        """A new summary with this object's settings."""
        from .stream import StreamingThors

        return StreamingThors(**self._settings)

    def update(self, segment: Hashable, score: float, y: Any, w: float = 1.0, t: Any = None) -> None:
        """Learn one labelled event of ``segment`` (and of the global summary)."""
        st = self._seg.get(segment)
        if st is None:
            st = self._make()
            st.update(score, y, w, t)  # validates before the segment is registered
            self._seg[segment] = st
            if len(self._seg) > self.max_segments:
                self._seg.popitem(last=False)
                self.evicted += 1
        else:
            st.update(score, y, w, t)
            self._seg.move_to_end(segment)
        self.global_summary.update(score, y, w, t)

    def global_threshold(self) -> float | None:
        """The threshold over all events (``None`` before any)."""
        return self.global_summary.get()

    def result(self, segment: Hashable) -> ThresholdResult | None:
        """The segment's own result (``None`` when it is not held)."""
        st = self._seg.get(segment)
        return None if st is None else st.result()

    def get(self, segment: Hashable) -> float | None:
        """The segment's threshold if supported (``min_per_class`` per class in its window), else the global one."""
        r = self.result(segment)
        if r is not None and r.is_supported(self.min_per_class):
            return r.threshold
        return self.global_threshold()

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
        caller encodes them). O(held events)."""
        states: list[dict[str, Any]] = []
        lengths: list[dict[str, int]] = []
        parts: dict[str, list[np.ndarray]] = {}
        for st in self._seg.values():
            _, state, arrays = st._checkpoint_parts()
            states.append(state)
            lengths.append({name: int(a.shape[0]) for name, a in arrays.items()})
            for name, a in arrays.items():
                parts.setdefault(name, []).append(a)
        params = {"max_segments": self.max_segments, "min_per_class": self.min_per_class}
        state = {"evicted": self.evicted, "states": states, "lengths": lengths}
        arrays = {f"seg_{name}": np.concatenate(chunks) for name, chunks in parts.items()}
        return params, state, arrays, list(self._seg)

    def _restore(self, params: Any, state: Any, arrays: dict[str, np.ndarray], keys: list[Hashable],
                 summary_params: dict[str, Any], global_summary: Any, where: str) -> None:
        """Take what :meth:`_checkpoint_parts` wrote (``keys`` decoded, ``global_summary``
        restored, ``summary_params`` the settings every summary shares), after checking it:
        the same ``max_segments`` and ``min_per_class``, at most ``max_segments`` distinct
        segments, lengths that split every concatenated array exactly, and each segment's
        summary valid on its own (:meth:`StreamingThors.load <thors_stream.StreamingThors.load>`'s
        checks). ``ValueError`` naming ``where``; nothing changes unless everything holds."""
        from .stream import StreamingThors

        bad = partial(_bad, where)

        if not isinstance(params, dict) or set(params) != {"max_segments", "min_per_class"}:
            raise bad("params.segments", "must be an object with the fields max_segments, min_per_class")
        if not isinstance(state, dict) or set(state) != {"evicted", "states", "lengths"}:
            raise bad("state.segments", "must be an object with the fields evicted, lengths, states")
        theirs = (params["max_segments"], params["min_per_class"])
        if theirs != (self.max_segments, self.min_per_class):
            raise ValueError(f"{where} was written with (max_segments, min_per_class) = {theirs!r}, this wrapper "
                             f"has {(self.max_segments, self.min_per_class)!r}"[:600])
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
        names = [k[len("seg_"):] for k in arrays]
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
            held[key] = StreamingThors._from_checkpoint_parts(summary_params, st, own,
                                                              where=f"{where} (segment {key!r})"[:300])
        for name, at in offsets.items():
            if at != arrays["seg_" + name].shape[0]:
                raise bad(f"array 'seg_{name}'", f"holds {arrays['seg_' + name].shape[0]} values, the segments' "
                          f"lengths add up to {at}")
        # everything holds: take it
        self._seg = held
        self.global_summary = global_summary
        self.evicted = evicted

    def nbytes(self) -> int:
        """Bytes held in numpy arrays by all the summaries."""
        return self.global_summary.nbytes() + sum(int(st.nbytes()) for st in self._seg.values())
