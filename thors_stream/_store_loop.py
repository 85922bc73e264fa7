"""DecisionLoop: decide now, learn the label later, with the pending decisions in a PendingStore.

The thresholder (a StreamingThors, a WindowSelector with ``window="auto"``, or a
SegmentedStreamingThors), its checkpoint in the store and its resumption on reopening, the
decisions (on scores or cost margins, one by one or in batches) and the labels matched to them.
Users import it from :mod:`thors_stream.store`.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import time
from collections.abc import Callable, Hashable, Sequence
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ._keys import db_key, decode_key, encode_key
from ._store_pending import (
    _NAN,
    _NO_SEGMENT,
    DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_COMMIT_EVERY,
    DEFAULT_COMMIT_INTERVAL,
    PendingStore,
)
from ._store_sqlite import _extra
from ._validation import (
    MAX_WEIGHTED_COST,
    MIN_WEIGHTED_COST,
    _show,
    check_label,
    check_time,
    check_weight,
    check_weighted_costs,
    real_number,
)
from .checkpoint import checkpoint_bytes, parse_checkpoint
from .margin import cost_margin
from .neyman_pearson import NPInfeasibleError
from .segments import SegmentedStreamingThors
from .selection import WindowSelector
from .stream import StreamingThors

_F = TypeVar("_F", bound=Callable[..., Any])


def _whole(method: _F) -> _F:
    """A :class:`DecisionLoop` operation as a whole (``PendingStore._as_whole``): a
    KeyboardInterrupt part-way leaves the store refusing further operations and makes ``close()``
    roll back to the last commit (as after a crash) rather than write a half-done operation."""

    @functools.wraps(method)
    def run(self: DecisionLoop, *args: Any, **kwargs: Any) -> Any:
        return self.store._as_whole(method, self, *args, **kwargs)

    return run  # type: ignore[return-value]


_KIND = "DecisionLoop"


class Decisions(NamedTuple):
    """What :meth:`DecisionLoop.decide_many` returns."""

    flags: np.ndarray
    """One bool per event: flag it (``score > threshold``, or ``margin > threshold``)."""
    thresholds: np.ndarray
    """The threshold each event was decided against (its segment's, with segments)."""
    scores: np.ndarray
    """The decision scores stored: the scores, or the cost margins."""


Decisions.__module__ = "thors_stream.store"  # its public home (pickles and reprs name it there)


class DecisionLoop:
    """A decide-now, label-later loop on disk: THORS thresholds with pending decisions in a
    :class:`PendingStore`, so that no dictionary of pending keys lives in your process.

    ``decide(key, score)`` answers whether to flag the event (its score above the threshold,
    or, with ``decide_on="margin"``, its cost margin ``logit(p) + log(fn_i / fp_i)`` above the
    cut) and stores the decision under ``key``. ``label(key, y)`` finds it and teaches the
    threshold with the decision-time score (and the decision's costs): ``True`` when matched;
    an unknown or evicted key follows ``on_unknown`` (``"count"``: ``False`` and counted).
    Batches (``decide_many``, ``label_many``) give the same answers as the calls one by one.
    The thresholds equal a :class:`~thors_stream.StreamingThors` (``decide_on="score"``) or a
    :class:`~thors_stream.MarginThors` (``"margin"``) fed the matched labels' decision scores
    in the order the labels came, exactly; segments and ``window="auto"`` as
    :class:`~thors_stream.segments.SegmentedStreamingThors` and
    :class:`~thors_stream.selection.WindowSelector` do.

    Everything is committed in batches and survives a restart (see :mod:`thors_stream.store`):
    ``DecisionLoop(path, ...)`` on an existing store resumes where its last commit left off,
    and refuses a store written with other settings. Close it (or use ``with``) to commit the
    tail and write a checkpoint. Threads: one at a time (as river's models); the service
    (:mod:`thors_stream.service`) serialises its requests on one event loop.

    Parameters
    ----------
    path
        The store's SQLite file.
    fn_cost, fp_cost
        Costs of a false negative and a false positive (numbers > 0). With
        ``decide_on="margin"`` they are the defaults of the per-event costs.
    window
        The labelled events the threshold is learned on: the last ``window`` (default 10,000),
        all (``None``), or ``"auto"`` (windows of 500 to 32,000 events and the default
        threshold, chosen online; see :class:`~thors_stream.selection.WindowSelector`).
    decide_on
        ``"score"`` (flag iff ``score > threshold``; scores any finite numbers) or
        ``"margin"`` (probabilities in ``[0, 1]`` and per-event costs; flag iff the cost
        margin exceeds the cut, learned at unit costs with each event weighing its cost).
    segmented
        One threshold per segment (``decide(..., segment=s)``), falling back to the global
        one while a segment holds fewer than ``min_per_class`` events of a class (at most
        ``max_segments`` segments, the least recently updated evicted).
    warm_up
        Labelled events (both classes among them) to learn before the THORS threshold
        replaces the default (not with ``window="auto"``, whose default is a candidate).
    default_threshold
        The threshold until then: by default ``fp_cost / (fp_cost + fn_cost)`` on scores,
        ``0.0`` (the per-event Bayes rule) on margins.
    min_model_labels
        With margins: a decision whose model had learned fewer labels (``model_labels=`` at
        :meth:`decide`) is matched but not learned (:attr:`n_cold_skipped`). Default 0.
    max_pending_age, on_unknown, commit_every, commit_interval, checkpoint_every, synchronous, cache_mb
        The store's (see :class:`PendingStore`); they may change between openings.

    Complexity
    ----------
    ``decide``: a threshold read (O(1) when it did not move) plus :meth:`PendingStore.put`;
    ``label``: :meth:`PendingStore.take` (O(log n) on disk) plus one update (O(log window));
    reopening: the checkpoint plus at most ``checkpoint_every`` replayed updates. Memory: the
    thresholder (``window`` events) plus the store's uncommitted batch and page cache.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "fraud.sqlite")
    >>> loop = DecisionLoop(path, fn_cost=50, fp_cost=1, window=1_000, warm_up=0)
    >>> loop.decide("tx-1", 0.9), loop.decide("tx-2", 0.01), loop.decide("tx-3", 0.3)
    (True, False, True)
    >>> loop.label("tx-1", True), loop.label("tx-2", False), loop.label("tx-404", True)
    (True, True, False)
    >>> loop.threshold, loop.matched, loop.unmatched, loop.pending
    (0.01, 2, 1, 1)
    >>> loop.close()
    >>> with DecisionLoop(path, fn_cost=50, fp_cost=1, window=1_000, warm_up=0) as again:
    ...     again.threshold, again.pending, again.label("tx-3", False)
    (0.01, 1, True)
    """

    def __init__(self, path: str | os.PathLike[str], *, fn_cost: float, fp_cost: float,
                 window: int | str | None = 10_000, decide_on: str = "score", segmented: bool = False,
                 warm_up: int = 100, default_threshold: float | None = None, min_per_class: int = 30,
                 max_segments: int = 10_000, min_model_labels: int = 0,
                 max_pending_age: int | dt.timedelta | None = None, on_unknown: str = "count",
                 commit_every: int = DEFAULT_COMMIT_EVERY, commit_interval: float = DEFAULT_COMMIT_INTERVAL,
                 checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY, synchronous: str = "NORMAL",
                 cache_mb: int = 32) -> None:
        if decide_on not in ("score", "margin"):
            raise ValueError(f"decide_on must be 'score' or 'margin', got {decide_on!r}")
        if isinstance(warm_up, bool) or not isinstance(warm_up, int) or warm_up < 0:
            raise ValueError(f"warm_up must be an integer >= 0, got {warm_up!r}")
        if isinstance(min_model_labels, bool) or not isinstance(min_model_labels, int) or min_model_labels < 0:
            raise ValueError(f"min_model_labels must be an integer >= 0, got {min_model_labels!r}")
        if not isinstance(segmented, bool):
            raise TypeError(f"segmented must be True or False, got {segmented!r}")
        auto = isinstance(window, str)
        if auto and window != "auto":
            raise ValueError(f"window must be a positive integer, None or 'auto', got {window!r}")
        margin = decide_on == "margin"
        base = StreamingThors(fn_cost=fn_cost, fp_cost=fp_cost)  # checks the costs
        self.fn_cost, self.fp_cost = base.fn_cost, base.fp_cost
        unit = (1.0, 1.0) if margin else (self.fn_cost, self.fp_cost)
        default = (real_number(default_threshold, "default_threshold") if default_threshold is not None else
                   0.0 if margin else self.fp_cost / (self.fp_cost + self.fn_cost))
        self.window = window
        self.decide_on = decide_on
        self.segmented = segmented
        self.warm_up = warm_up
        self.default_threshold = default
        self.min_per_class = min_per_class
        self.max_segments = max_segments
        self.min_model_labels = min_model_labels
        self._margin = margin
        self._auto = auto
        self._selector: WindowSelector | None = None
        self._segments: SegmentedStreamingThors | None = None
        if segmented:
            self._segments = SegmentedStreamingThors(
                fn_cost=unit[0], fp_cost=unit[1], window=window, max_segments=max_segments,
                min_per_class=min_per_class, default_threshold=default if auto else None)
            self._thors = self._segments.global_summary
        elif auto:
            self._selector = WindowSelector(fn_cost=unit[0], fp_cost=unit[1], default_threshold=default)
            self._thors = self._selector.experts[-1]
        else:
            self._thors = StreamingThors(fn_cost=unit[0], fp_cost=unit[1], window=window)  # type: ignore[arg-type]
        self._n_learned = 0
        self._n_pos = 0
        self._ready = False
        self._n_cold_skipped = 0
        self.n_flagged = 0
        """Decisions flagged by this process (not persisted)."""
        self.n_positive_labels = 0
        """Matched positive labels learned by this process (not persisted)."""
        settings = {"kind": _KIND, "decide_on": decide_on, "fn_cost": self.fn_cost, "fp_cost": self.fp_cost,
                    "window": window, "segmented": segmented, "warm_up": warm_up, "default_threshold": default,
                    "min_per_class": min_per_class, "max_segments": max_segments,
                    "min_model_labels": min_model_labels}
        self.store = PendingStore(path, owner=_KIND, settings=settings, max_pending_age=max_pending_age,
                                  on_unknown=on_unknown, commit_every=commit_every, commit_interval=commit_interval,
                                  checkpoint_every=checkpoint_every, synchronous=synchronous, cache_mb=cache_mb)
        try:
            self._resume()
        except BaseException:
            self.store.abandon()
            raise
        self.store.state_fn = self._state_bytes

    # ---------------------------------------------------------------- state
    def _state_bytes(self) -> bytes:
        params, state, arrays = self._thors._checkpoint_parts()
        params = {"thors": params}
        state = {"thors": state, "n_learned": self._n_learned, "n_pos": self._n_pos, "ready": self._ready,
                 "n_cold_skipped": self._n_cold_skipped}
        if self._selector is not None:
            sp, ss, sa = self._selector._checkpoint_parts()
            params["selector"], state["selector"] = sp, ss
            arrays = {**arrays, **sa}
        if self._segments is not None:
            gp, gs, ga, keys = self._segments._checkpoint_parts()
            params["segments"], state["segments"] = gp, gs
            state["segment_keys"] = [encode_key(k) for k in keys]
            arrays = {**arrays, **ga}
        return checkpoint_bytes(_KIND, params, state, arrays)

    def _resume(self) -> None:
        data, events = self.store.restore()
        if data is not None:
            self._restore_state(data)
        for s, y, w, _t, seg, nm in events:
            self._learn(s, bool(y), w, seg, nm)

    def _restore_state(self, data: bytes) -> None:
        where = f"{self.store._where} (checkpoint {self.store.n_checkpoints})"
        ck = parse_checkpoint(data, _KIND, where)
        params, state, arrays = ck.params, ck.state, ck.arrays
        want_p = {"thors"} | ({"selector"} if self._selector is not None else set()) | \
            ({"segments"} if self._segments is not None else set())
        want_s = {"thors", "n_learned", "n_pos", "ready", "n_cold_skipped"} | (want_p - {"thors"}) | \
            ({"segment_keys"} if self._segments is not None else set())
        if set(params) != want_p or set(state) != want_s:
            raise ValueError(f"{where} is invalid: params {sorted(params)} and state {sorted(state)}, expected "
                             f"{sorted(want_p)} and {sorted(want_s)}")
        own = {k: a for k, a in arrays.items() if not k.startswith(("sel", "seg_"))}
        thors = StreamingThors._from_checkpoint_parts(params["thors"], state["thors"], own, where=where)
        mine = (self._thors.fn_cost, self._thors.fp_cost, self._thors.window, self._thors._period_s,
                self._thors.class_prior, self._thors.default_threshold)
        theirs = (thors.fn_cost, thors.fp_cost, thors.window, thors._period_s, thors.class_prior,
                  thors.default_threshold)
        if mine != theirs:
            raise ValueError(f"{where} holds a summary with (fn_cost, fp_cost, window, period, class_prior, "
                             f"default_threshold) = {theirs}, this loop's is {mine}")
        counts = []
        for name in ("n_learned", "n_pos", "n_cold_skipped"):
            v = state[name]
            if type(v) is not int or not 0 <= v < 2**63:
                raise ValueError(f"{where} is invalid: state.{name} must be an integer >= 0, got {v!r}"[:300])
            counts.append(v)
        n_learned, n_pos, n_cold = counts
        ready = state["ready"]
        if n_pos > n_learned or ready is not (n_learned >= self.warm_up and 0 < n_pos < n_learned):
            raise ValueError(f"{where} is invalid: state.ready={ready!r} does not follow from n_learned="
                             f"{n_learned}, n_pos={n_pos} and warm_up={self.warm_up}")
        if self._selector is not None:
            self._selector._restore(params["selector"], state["selector"], arrays, thors, where)
        if self._segments is not None:
            raw = state["segment_keys"]
            if not isinstance(raw, list):
                raise ValueError(f"{where} is invalid: state.segment_keys must be a list")
            keys = [decode_key(k, f"state.segment_keys[{i}]", where) for i, k in enumerate(raw)]
            self._segments._restore(params["segments"], state["segments"],
                                    {k: a for k, a in arrays.items() if k.startswith("seg_")}, keys,
                                    params["thors"], thors, where)
        self._thors = thors
        self._n_learned, self._n_pos, self._ready, self._n_cold_skipped = n_learned, n_pos, ready, n_cold

    # ---------------------------------------------------------------- reads
    def threshold_of(self, segment: Any = None) -> float:
        """The threshold a decision of ``segment`` is made against now (without segments, the
        one threshold). ``-inf`` flags every event. O(1) when it did not move."""
        if self._segments is not None:
            thr = self._segments.get(segment) if (self._ready or self._auto) else None
        elif self._selector is not None:
            thr = self._selector.get()
        elif self._ready:
            try:
                thr = self._thors.get()
            except NPInfeasibleError:  # pragma: no cover - no Neyman-Pearson mode here
                thr = None
        else:
            thr = None
        return self.default_threshold if thr is None else thr

    @property
    def threshold(self) -> float:
        """The threshold now (with segments, the one over all events). O(1) when it did not move."""
        if self._segments is not None:
            if not (self._ready or self._auto):
                return self.default_threshold
            thr = self._segments.global_threshold()
            return self.default_threshold if thr is None else thr
        return self.threshold_of(None)

    @property
    def thors(self) -> StreamingThors:
        """The :class:`~thors_stream.StreamingThors` over all events (with ``window="auto"`` the
        longest window; read only)."""
        return self._thors

    @property
    def selector(self) -> WindowSelector | None:
        """With ``window="auto"`` (no segments): the :class:`~thors_stream.selection.WindowSelector`."""
        return self._selector

    @property
    def segments(self) -> SegmentedStreamingThors | None:
        """With ``segmented=True``: the :class:`~thors_stream.segments.SegmentedStreamingThors` (read only)."""
        return self._segments

    @property
    def warmed_up(self) -> bool:
        """Whether the THORS threshold replaced the default (``warm_up`` events, both classes)."""
        return self._ready

    @property
    def n_learned(self) -> int:
        """Labelled events the threshold learned (matched, not cold)."""
        return self._n_learned

    @property
    def n_cold_skipped(self) -> int:
        """Matched labels not learned: their model had learned fewer than ``min_model_labels``."""
        return self._n_cold_skipped

    @property
    def matched(self) -> int:
        """Labels that found their decision (:attr:`PendingStore.matched`)."""
        return self.store.matched

    @property
    def unmatched(self) -> int:
        """Labels that found none: unknown, already labelled or evicted (:attr:`PendingStore.unmatched`)."""
        return self.store.unmatched

    @property
    def evicted(self) -> int:
        """Decisions dropped by the horizon (:attr:`PendingStore.evicted`)."""
        return self.store.evicted

    @property
    def pending(self) -> int:
        """Decisions waiting for their label (:attr:`PendingStore.pending`)."""
        return self.store.pending

    # ---------------------------------------------------------------- deciding
    def _costs(self, fn_cost: Any, fp_cost: Any, where: str) -> tuple[float, float]:
        if not self._margin:
            if fn_cost is not None or fp_cost is not None:
                raise ValueError(f"per-event fn_cost/fp_cost{where} need decide_on='margin' (this loop decides on "
                                 "the score with the costs it was made with)")
            return self.fn_cost, self.fp_cost
        fn = self.fn_cost if fn_cost is None else real_number(fn_cost, "fn_cost", where)
        fp = self.fp_cost if fp_cost is None else real_number(fp_cost, "fp_cost", where)
        for name, c in (("fn_cost", fn), ("fp_cost", fp)):
            if not MIN_WEIGHTED_COST <= c <= MAX_WEIGHTED_COST:
                raise ValueError(f"{name} must be > 0 (between 2**-960 and 2**960), got {c!r}{where}")
        return fn, fp

    def _score(self, score: Any, fn: float, fp: float, where: str) -> float:
        if self._margin:
            return cost_margin(score, fn, fp, where=where)
        return real_number(score, "score", where)

    def _segment(self, segment: Any, where: str) -> Any:
        if self._segments is None:
            if segment is not None:
                raise ValueError(f"segment={_show(segment)}{where}: this loop has no segments (segmented=False)")
            return _NO_SEGMENT
        self.store._segment_text(segment)  # hashable and storable, or raises
        return segment

    @_whole
    def decide(self, key: Hashable, score: float, *, fn_cost: float | None = None, fp_cost: float | None = None,
               segment: Any = None, t: Any = None, model_labels: int = 0) -> bool:
        """Whether to flag the event, and store the decision under ``key`` for its label.

        ``score``: the model's score (with ``decide_on="margin"``, its probability of the
        positive class, with ``fn_cost``/``fp_cost`` the event's costs, defaulting to the
        loop's); ``segment`` with ``segmented=True``; ``t`` the decision time (seconds or a
        ``datetime``; default now; the time horizon is measured on it); ``model_labels`` the
        labels the model had learned (see ``min_model_labels``). A bad value raises naming it,
        and nothing changes. O(1) + the store's put.
        """
        where = f" (event key {_show(key)})"
        fn, fp = self._costs(fn_cost, fp_cost, where)
        s = self._score(score, fn, fp, where)
        seg = self._segment(segment, where)
        store = self.store
        try:
            v, kt = db_key(key)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc}{where}") from None
        tf = time.time() if t is None else check_time(t)
        if (model_labels.__class__ is not int and (isinstance(model_labels, bool) or
                                                  not isinstance(model_labels, (int, np.integer)))) or \
                not 0 <= model_labels < 2**63:
            raise ValueError(f"model_labels must be an integer >= 0, got {_show(model_labels)}{where}")
        thr = self.threshold_of(None if seg is _NO_SEGMENT else seg)
        store._check_open()
        if not self._margin and seg is _NO_SEGMENT and model_labels == 0:
            store._put(v, kt, s, tf, None)
        else:
            store._put(v, kt, s, tf, _extra(fn if self._margin else 1.0, fp if self._margin else 1.0,
                                            int(model_labels), store._segment_text(seg)))
        flag = s > thr
        if flag:
            self.n_flagged += 1
        self.store.tick()
        return flag

    @_whole
    def decide_many(self, keys: Sequence[Hashable], scores: Any, *, fn_cost: Any = None, fp_cost: Any = None,
                    segments: Sequence[Any] | None = None, t: Any = None, model_labels: int = 0) -> Decisions:
        """:meth:`decide` for a batch, with the same answers: every value is checked first
        (a bad one raises naming its position, and nothing changes), then each event is
        decided against the threshold of now (a decision does not move it) and stored.
        ``fn_cost``/``fp_cost``: a number or one per event; ``t``: one time for the batch
        (default now) or one per event. O(m) + the store's puts."""
        n = len(keys)
        ps = np.asarray(scores, dtype=object) if not isinstance(scores, np.ndarray) else scores
        if ps.shape != (n,):
            raise ValueError(f"scores must have one value per key ({n}), got shape {ps.shape}")
        fns = self._per_event(fn_cost, n, "fn_cost")
        fps = self._per_event(fp_cost, n, "fp_cost")
        if segments is not None and len(segments) != n:
            raise ValueError(f"segments must have one value per key ({n}), got {len(segments)}")
        if t is None or np.ndim(t) == 0:
            ts = [time.time() if t is None else check_time(t)] * n
        else:
            if len(t) != n:
                raise ValueError(f"t must be one time or one per key ({n}), got {len(t)}")
            ts = [check_time(x, f"t at position {i}") for i, x in enumerate(t)]
        if isinstance(model_labels, bool) or not isinstance(model_labels, (int, np.integer)) or \
                not 0 <= model_labels < 2**63:
            raise ValueError(f"model_labels must be an integer >= 0, got {_show(model_labels)}")
        out_s = np.empty(n)
        out_fn = np.empty(n)
        out_fp = np.empty(n)
        segs: list[Any] = []
        encoded = []
        store = self.store
        for i in range(n):
            where = f" at position {i}"
            fn, fp = self._costs(None if fns is None else fns[i], None if fps is None else fps[i], where)
            out_s[i] = self._score(ps[i], fn, fp, where)
            out_fn[i], out_fp[i] = fn, fp
            seg = self._segment(None if segments is None else segments[i], where)
            segs.append(seg)
            try:
                encoded.append(db_key(keys[i]))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (key at position {i})") from None
        thr = np.empty(n)
        cache: dict[Any, float] = {}
        for i, seg in enumerate(segs):
            try:
                thr[i] = cache[seg]
            except KeyError:
                thr[i] = cache[seg] = self.threshold_of(None if seg is _NO_SEGMENT else seg)
        flags = out_s > thr
        seg_text = store._segment_text
        put = store._put
        nm = int(model_labels)
        store._check_open()
        if not self._margin and self._segments is None and nm == 0:
            for (v, kt), s_i, t_i in zip(encoded, out_s.tolist(), ts):
                put(v, kt, s_i, t_i, None)
        else:
            margin = self._margin
            for i, (v, kt) in enumerate(encoded):
                put(v, kt, float(out_s[i]), ts[i], _extra(float(out_fn[i]) if margin else 1.0,
                                                          float(out_fp[i]) if margin else 1.0, nm, seg_text(segs[i])))
        self.n_flagged += int(flags.sum())
        store.tick()
        return Decisions(flags, thr, out_s)

    @staticmethod
    def _per_event(value: Any, n: int, name: str) -> list[Any] | None:
        if value is None:
            return None
        if np.ndim(value) == 0:
            return [value] * n
        if len(value) != n:
            raise ValueError(f"{name} must be a number or one value per key ({n}), got {len(value)}")
        return list(value)

    # ---------------------------------------------------------------- labels
    def _learn(self, s: float, pos: bool, weight: float, seg: Any, nm: int) -> None:
        """Teach the thresholder one matched event (also the replay of a logged one)."""
        if self._margin and nm < self.min_model_labels:
            self._n_cold_skipped += 1
            return
        if self._segments is not None:
            self._segments.update(seg, s, pos, weight)
        elif self._selector is not None:
            self._selector.update(s, pos, weight)
        else:
            self._thors.update(s, pos, weight)
        if not self._ready:
            self._n_learned += 1
            self._n_pos += pos
            self._ready = self._n_learned >= self.warm_up and 0 < self._n_pos < self._n_learned
        else:
            self._n_learned += 1
            self._n_pos += pos

    def _weight(self, fn: float, fp: float, pos: bool, wt: float | None, where: str) -> float:
        if not self._margin:
            return 1.0 if wt is None else wt
        c = fn if pos else fp
        weight = c if wt is None else c * wt
        if not MIN_WEIGHTED_COST <= weight <= MAX_WEIGHTED_COST:
            raise ValueError(f"the event's weight, w={wt!r} times its {'fn_cost' if pos else 'fp_cost'} {c!r}, is "
                             f"{weight!r}, outside [2**-960, 2**960]{where}")
        return weight

    def _check_w(self, w: Any) -> float | None:
        if w is None:
            return None
        wt = check_weight(w)
        if not self._margin:
            check_weighted_costs(wt, self.fn_cost, self.fp_cost)
        return wt

    @_whole
    def label(self, key: Hashable, y: Any, *, w: float | None = None) -> bool:
        """Learn the label ``y`` (0/1, ``False``/``True``) of the decision stored under ``key``,
        with its decision-time score (and costs); ``True`` when it was found. ``w`` (> 0): a
        sample weight (multiplying the event's cost). An unknown or evicted key: ``False``
        and counted (``on_unknown="count"``), or ``KeyError`` (``"raise"``). A bad label or
        weight raises before anything changes. O(log n) + O(log window)."""
        pos = (y is True or y == 1) if (y.__class__ is bool or y.__class__ is int) and (y == 0 or y == 1) else \
            check_label(y) == 1
        wt = None if w is None else self._check_w(w)
        store = self.store
        store._check_open()
        v = db_key(key)[0]
        if wt is not None and self._margin:  # the weight times the decision's cost must be in range
            e0 = store.peek(key)
            if e0 is not None:
                self._weight(e0.fn_cost, e0.fp_cost, pos, wt, f" (event key {_show(key)})")
        e = store._take(v, key)
        if e is None:
            store.tick()
            return False
        self._take_in(e, pos, wt)
        store.tick()
        return True

    def _take_in(self, e: tuple[int, float, float, Any], pos: bool, wt: float | None) -> None:
        """Learn a matched decision ``(seq, score, t, packed fields)`` with its label, and log it."""
        store = self.store
        s, x = e[1], e[3]
        fn, fp, nm, seg_text = (1.0, 1.0, 0, None) if x is None else store._fields(x)
        weight = (1.0 if wt is None else wt) if not self._margin else self._weight(fn, fp, pos, wt, "")
        if self._segments is not None:
            self._learn(s, pos, weight, store._segment_of(seg_text), nm)
        else:
            self._learn(s, pos, weight, None, nm)
            seg_text = None
        store._logbuf.append((s, 1 if pos else 0, weight, _NAN, nm, seg_text))
        store._n_logged += 1
        self.n_positive_labels += pos

    @_whole
    def label_many(self, keys: Sequence[Hashable], ys: Any, *, w: Any = None) -> np.ndarray:
        """:meth:`label` for a batch, in order, with the same results (one bool per key:
        matched); every label and weight is checked first (a bad one raises naming its
        position, and nothing changes). O(m log n)."""
        n = len(keys)
        if len(ys) != n:
            raise ValueError(f"ys must have one label per key ({n}), got {len(ys)}")
        pos = []
        for i, y in enumerate(ys):
            try:
                pos.append(check_label(y) == 1)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (label at position {i})") from None
        wts: list[float | None] = [None] * n
        if w is not None:
            raw = [w] * n if np.ndim(w) == 0 else list(w)
            if len(raw) != n:
                raise ValueError(f"w must be one weight or one per key ({n}), got {len(raw)}")
            for i, x in enumerate(raw):
                try:
                    wts[i] = self._check_w(x)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"{exc} (weight at position {i})") from None
        store = self.store
        store._check_open()
        vs = []
        for i, k in enumerate(keys):
            try:
                vs.append(db_key(k)[0])
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (key at position {i})") from None
        if w is not None and self._margin:
            for i, k in enumerate(keys):
                e0 = store.peek(k)
                if e0 is not None:
                    self._weight(e0.fn_cost, e0.fp_cost, pos[i], wts[i], f" (position {i})")
        found = store._take_many(vs, keys)
        out = np.zeros(n, dtype=bool)
        take_in = self._take_in
        for i, e in enumerate(found):
            if e is not None:
                take_in(e, pos[i], wts[i])
                out[i] = True
        store.tick()
        return out

    # ---------------------------------------------------------------- lifecycle
    @_whole
    def commit(self, *, checkpoint: bool = False) -> None:
        """Commit now (see :meth:`PendingStore.commit`)."""
        self.store.commit(checkpoint=checkpoint)

    @_whole
    def tick(self) -> bool:
        """Commit if one is due (for an idle loop: the tail of a burst; see :meth:`PendingStore.tick`)."""
        return self.store.tick()

    def close(self) -> None:
        """Commit, write a checkpoint, release the store. Idempotent. After an operation or a
        commit that was interrupted (a KeyboardInterrupt) or failed part-way, nothing more is
        written: the store is released at its last commit, as after a crash."""
        self.store.close()

    def __enter__(self) -> DecisionLoop:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"DecisionLoop({self.store.path!r}, decide_on={self.decide_on!r}, window={self.window!r}, "
                f"threshold={self.threshold!r}, pending={self.pending}, matched={self.matched})")


DecisionLoop.__module__ = "thors_stream.store"  # its public home (reprs and doctests name it there)
