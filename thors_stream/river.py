"""river integration: a cost-sensitive post-processor for any river classifier.

:class:`ThorsClassifier` wraps a river classifier (or a pipeline ending in one) and
replaces its decision rule by the THORS threshold of its own out-of-sample scores,
kept up to date over a sliding window with :class:`~thors_stream.StreamingThors`.

This module is ``thors_stream.river``; inside it ``import river`` is an absolute
import and resolves to the river package itself.
"""

# The class is assembled from parts, each in its own module: the pending decisions by key, in
# memory or in a store (_river_pending), per-event costs and cost margins (_river_money),
# checkpoints and pickling (_river_state), and the state and steps they share (_river_base).
# This module holds the constructor (river reads the parameters off its signature), river's API
# (predict_one, predict_proba_one, learn_one, clone), the store's commit and close and the
# properties; save_thresholding and load_thresholding are the checkpoint part's.

from __future__ import annotations

import collections
import copy
import datetime as dt
import math
import os
from collections.abc import Hashable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from river import base

from ._river_base import (
    _RESCORE,
    _cost_setting,
    _event,
    _is_one,
    _probability,
    _same_features,
    _snapshot,
)
from ._river_base import CostSetting as CostSetting  # (re-exported: the type of fn_cost and fp_cost)
from ._river_money import MoneyPart
from ._river_pending import PendingPart
from ._river_state import StatePart
from ._river_state import _encode_pending_key as _encode_pending_key  # (re-exported: its old home)
from ._validation import check_label, check_weight, check_weighted_costs
from .selection import DEFAULT_WINDOWS, WindowSelector, selector_step
from .stream import StreamingThors

if TYPE_CHECKING:
    from .store import PendingStore

__all__ = ["ThorsClassifier"]


class _DefaultWindow(int):
    """The default ``window`` (10,000): an ``int`` that gives way to ``period=``, where an
    explicit ``window=10_000`` does not (its type survives ``clone`` and pickling)."""

    __slots__ = ()


_DEFAULT_WINDOW = _DefaultWindow(10_000)


class ThorsClassifier(PendingPart, MoneyPart, StatePart, base.Wrapper[base.Classifier], base.Classifier):
    """Cost-sensitive decisions for any river classifier: the streaming THORS threshold.

    The wrapped model keeps learning as usual; only its decision rule changes. Each
    labelled event is scored by the model *before* the model learns from it (an
    out-of-sample, prequential score), the pair ``(score, y)`` goes into a
    :class:`~thors_stream.StreamingThors` over the last ``window`` labelled events, and
    :meth:`predict_one` answers ``score > threshold`` with the threshold that minimises
    ``fn_cost * #FN + fp_cost * #FP`` on those events. The score is the model's
    ``predict_proba_one(x)`` probability of the positive class (the key ``True``, which
    is also the key ``1``; 0.0 when the dict lacks it).

    Until ``warm_up`` labelled events, among them both classes, have been learned, the
    threshold is ``default_threshold``, by default Elkan's ``fp_cost / (fp_cost +
    fn_cost)`` (the optimum for calibrated probabilities).

    **Delayed labels.** When the label arrives long after the decision (a chargeback
    days after a payment), the score the decision was made with is the one to
    threshold: call ``predict_one(x, key=k)`` (or ``predict_proba_one``) at decision
    time and ``learn_one(x, y, key=k)`` when the label comes. The score is stored under
    ``k`` (at most ``max_pending`` of them; the oldest is dropped when full) and used,
    then forgotten, by ``learn_one``; an unknown key follows ``on_unknown`` (in memory
    by default it raises ``KeyError`` and changes nothing). With
    ``river.evaluate.progressive_val_score`` let the dataset yield ``(x, y, {"key": i})``:
    river passes the dict to both calls. Without a key, ``learn_one`` scores ``x`` with
    the model as it is when the label arrives (still out of sample, but not the
    decision's score); when the features at that time are
    the same as at decision time this may even track a fast-learning model better.

    **Pending decisions on disk.** With ``store="pending.sqlite"`` the decisions waiting for
    their label live in one SQLite file (a :class:`~thors_stream.store.PendingStore`), not in
    memory: tens of millions of them cost disk, not RAM, and a restart loses nothing that was
    committed. The store also holds the thresholding state (checkpoints, plus the events
    learned since the last one), so a wrapper opened on the same file with the same settings
    resumes its thresholds exactly where the last commit left off; the wrapped model is yours
    to save (river models pickle). Commits are batched (every 1,000 operations or 0.25 s,
    checked at each call; ``store_options`` changes them) and :meth:`close` (or ``with``)
    commits the rest: a crash loses at most the uncommitted tail. ``max_pending_age`` (an
    ``int``, decisions, or a ``timedelta``, on the clock at decision time) evicts decisions
    whose label is too late (:attr:`n_evicted`). A label whose key finds nothing (never
    decided, labelled already, or evicted) follows ``on_unknown``: ``"count"`` (the default
    with a store: counted in :attr:`n_unmatched`; neither the model nor the threshold
    learns), ``"score"`` (counted, then learned as a label without a key: ``x`` is scored
    now) or ``"raise"`` (``KeyError``, nothing changes; the default in memory). A store has
    one writer: a second wrapper on the same file raises
    :class:`~thors_stream.store.StoreLockedError`; a wrapper with a store is not pickled (its
    state is the file). See :mod:`thors_stream.store` for durability and the file's checks.

    **Score reuse.** ``learn_one`` without a key reuses the score of the last
    ``predict_one``/``predict_proba_one`` when its ``x`` equals the features that call
    saw (a shallow copy is kept, so a dict refilled in place is scored again) and
    nothing was learned in between: the model has not changed, so it is the number
    ``predict_proba_one`` would give again. This makes the usual
    predict-then-learn loop score each event once. Prefer ``ThorsClassifier(pipeline)``
    to ``preprocessing | ThorsClassifier(model)``: in the latter the pipeline updates
    its preprocessing before ``learn_one`` sees ``x``, so ``x`` differs and is scored
    again.

    **Per-event costs (deciding in money).** When what a mistake costs depends on the
    event (a missed fraud costs its amount, a review a fee, both known when the decision
    is made), give ``fn_cost`` and/or ``fp_cost`` as the name of a feature of ``x`` or a
    callable of ``x``: ``ThorsClassifier(model, fn_cost="amount", fp_cost=5.0)``. Each
    event's decision score is then its *cost margin* ``m = logit(p) + log(fn_i / fp_i)``
    (:func:`~thors_stream.margin.cost_margin`: ``p`` the model's probability of the
    positive class, clipped as documented there), and :meth:`predict_one` answers
    ``m > threshold``. ``0`` is the per-event Bayes rule (flag iff ``p * fn_i > (1 - p) *
    fp_i``) and the threshold until warm; then THORS chooses the cut on the margins of the
    labelled events in the window, each weighing its own cost (``fn_i`` a positive,
    ``fp_i`` a negative, times ``w``) at unit costs, so the cut minimises the money lost
    on them. It corrects a model whose log-odds are off by a constant (miscalibrated); a
    well-calibrated model gains little over the Bayes rule. :attr:`threshold` and a
    ``default_threshold`` given are on the margin scale. :meth:`predict_proba_one`
    passes the probabilities through unchanged. ``segment=``, ``window="auto"``,
    ``period=`` and the Neyman-Pearson mode work on the margins as they do on scores.
    The costs are read from ``x`` by ``predict_one`` (and ``predict_proba_one`` with a
    ``key``) and by ``learn_one`` without a key; a missing feature, a cost that is not a
    number in ``[2**-960, 2**960]`` or a probability outside ``[0, 1]`` raises naming the
    event (its key, else ``x``) and the value, before anything changes. A cost never
    reaches the model's ``learn_one``; ``w`` keeps river's meaning (a sample weight,
    passed to the model when it takes one, and multiplying the event's cost here).

    **Which margin is learned.** ``learn_one(x, y)`` re-scores: the margin the *current*
    model gives ``x`` before it learns ``x``, with the costs read from that ``x``.
    ``learn_one(x, y, key=k)`` learns the margin and the costs ``predict_one(x, key=k)``
    stored at decision time. With a model that does not change (trained before it was
    wrapped and frozen), either. With an online model and labels that arrive long after
    the decision, re-score: a decision-time margin comes from an older model, on a score
    scale that has moved since (early in the stream, from a model that had learned no
    label at all), and a cut learned on such margins misjudges the margins decided now.
    Either way, a margin scored by a model that had learned fewer than
    ``min_model_labels`` labels through this wrapper is not learned by the thresholder
    (the model learns the label; :attr:`n_cold_skipped` counts them), and ``warm_up``
    counts the margins learned.

    Parameters
    ----------
    classifier
        A binary river classifier with ``predict_proba_one`` (a pipeline is fine). The
        wrapper trains this very object (no copy), as river's wrappers do.
    fn_cost, fp_cost
        Cost of a false negative (a positive predicted negative) and of a false
        positive: a number (finite and > 0), or, per event, the name of a feature of
        ``x`` or a callable of ``x`` giving it (then decisions are on the cost margin,
        see above). A string that reads as a number is refused (pass the number).
    window
        Threshold on the last ``window`` labelled events (``None``: on all of them), or
        ``"auto"``: THORS over each of ``windows`` (500, 2,000, 8,000 and 32,000 events by
        default) and the default threshold are all scored on every labelled event, and the
        decision uses the one chosen by exponentially weighted experts (see
        :class:`~thors_stream.selection.WindowSelector`: its expected cost exceeds the best
        candidate's by at most a stated regret term growing like ``sqrt(T log K)``).
    windows
        With ``window="auto"``: the candidate windows (distinct positive integers, in any
        order; used in increasing order, so :attr:`thors` is the longest). ``None``:
        ``DEFAULT_WINDOWS``. Each candidate holds its own window: memory and ``learn_one``
        grow with their number and their sum.
    period
        Instead of ``window``: threshold on the events whose time ``t`` lies within
        ``period`` (seconds or a ``timedelta``) of the newest one. ``learn_one`` then
        needs ``t=...`` (seconds or a ``datetime``), or ``moment``; a time older than
        the newest one is a late label (held while inside the period, as
        :class:`~thors_stream.StreamingThors` does), so ``progressive_val_score`` with a
        varying ``delay`` works. Giving ``period`` replaces the default window; an
        explicit ``window`` with ``period`` is an error.
    moment
        With ``period``: where ``learn_one`` finds the event time when no ``t`` is passed,
        a feature name (as ``river.evaluate.progressive_val_score(..., moment=...)``) or
        a callable of ``x``.
    pos_label
        The class whose probability is thresholded (``True`` by default, which is also
        ``1``: ``pos_label=1`` behaves exactly as the default, labels 0/1/False/True);
        with string labels, e.g. ``"fraud"``. Labels other than ``pos_label`` are
        negatives, and ``predict_one`` returns ``pos_label`` or the negative label
        (``neg_label``, else the first other label learned).
    neg_label
        The label ``predict_one`` returns for a negative decision (default ``False``
        when ``pos_label`` is ``True``).
    segment
        Thresholds per segment (merchant, country, channel): a feature name or a callable
        of ``x`` giving the segment. Each segment keeps its own window (at most
        ``max_segments``, the least recently updated evicted beyond that, ~100 bytes per held
        event); a segment with fewer than ``min_per_class`` events of a class in its window
        uses the threshold over all events (see
        :class:`~thors_stream.segments.SegmentedStreamingThors`). With ``window="auto"``
        each segment chooses among ``windows`` with its own selector (memory: the sum of the
        windows per segment), used as soon as the segment's longest window holds
        ``min_per_class`` events of each class (no warm-up); before that, the choice of the
        selector over all events. Not with the Neyman-Pearson mode.
    min_per_class, max_segments
        See ``segment``.
    pool_weight, pool_every
        With ``segment=`` (not with ``window="auto"``): partial pooling. A segment's
        threshold is THORS on its own events plus every event of the global window at
        ``pool_weight`` times its weight, so a small segment is pulled toward the global
        threshold and a large one keeps its own; it is used once the segment's window or the
        global one holds ``min_per_class`` events of each class, and recomputed at a read once
        ``pool_every`` (500) events were learned since (O(segment + global window) each time).
        See :class:`~thors_stream.segments.SegmentedStreamingThors`.
    auto_choose
        With ``window="auto"``: ``"draw"`` (decisions drawn from the expert weights; the
        regret guarantee holds for them) or ``"leader"`` (the heaviest candidate;
        deterministic). See :class:`~thors_stream.selection.WindowSelector`.
    warm_up
        Labelled events to learn (both classes among them) before the THORS threshold
        replaces ``default_threshold``. Not used with ``window="auto"``, whose expert
        weights already weigh the default threshold against the windows from the first event.
    default_threshold
        Threshold used before that; ``None`` means ``fp_cost / (fp_cost + fn_cost)``, or,
        with per-event costs, ``0.0`` on the margin scale (the per-event Bayes rule); a
        value given is then on the margin scale too.
    class_prior
        Population share of positives when the labelled events are a biased sample
        (see :class:`~thors_stream.StreamingThors`).
    max_pending
        Most scores kept for delayed labels (``key=``) at once, in memory (not used with a store).
    store
        The path of an SQLite file holding the pending decisions and the thresholding state
        (created when missing; resumed when it is this wrapper's with the same settings; see
        above). ``None`` (the default): in memory.
    max_pending_age
        With a store: the horizon, an ``int`` (a decision is evicted once more than that many
        decisions were made after it) or a ``timedelta`` (once a decision more than that much
        newer was made). ``None``: none.
    on_unknown
        ``"count"``, ``"score"`` or ``"raise"``: what a label whose key finds no pending
        decision does (see above). ``None``: ``"count"`` with a store, ``"raise"`` in memory.
    store_options
        With a store: ``commit_every``, ``commit_interval``, ``checkpoint_every``,
        ``synchronous``, ``cache_mb`` (see :class:`~thors_stream.store.PendingStore`).
    max_fpr, max_fnr, confidence
        Neyman-Pearson mode (see :class:`~thors_stream.StreamingThors`): the cheapest
        threshold whose true FPR (FNR) stays at most ``max_fpr`` (``max_fnr``) with
        probability ``confidence`` over the window. While the window holds too few events
        of the constrained class for that guarantee, ``default_threshold`` is used. A
        threshold read then costs O(log window) with the compiled backend, O(window) with
        the numpy one.
    min_model_labels
        With per-event costs: a margin scored by a model that had learned fewer labels
        than this (through the wrapper) is not learned by the thresholder. The default,
        100: the margins of a model that has seen almost nothing say nothing of the scale it
        will score on, while the Bayes rule ``t = 0`` decides meanwhile and 100 events are 1%
        of the default window. ``0`` for a model trained before it is wrapped. Not used with
        numbers for both costs, whose behaviour is unchanged (there the score is a
        probability and the warm-up already covers the first events).

    Attributes
    ----------
    thors
        The underlying :class:`~thors_stream.StreamingThors` (read its ``cost`` or
        ``result()``; do not update it directly).

    Threads: like river's models, a wrapper is for one thread at a time (its pending
    keys and score cache are not locked); share a :class:`~thors_stream.StreamingThors`
    between threads instead, which is.

    Complexity
    ----------
    ``learn_one``: the model's own ``learn_one``, plus one ``predict_proba_one`` unless
    the score is reused, plus one ``StreamingThors.update`` (O(log window)); with
    per-event costs, plus reading the costs and one margin (O(1)).
    ``predict_one``: the model's ``predict_proba_one`` plus a threshold read (O(1)
    when the optimum did not move). Memory: the model plus about 100 bytes per
    windowed event and per pending key.

    Examples
    --------
    >>> from river import datasets, evaluate, linear_model, preprocessing
    >>> from thors_stream.metrics import Cost
    >>> plain = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    >>> evaluate.progressive_val_score(datasets.Phishing(), plain, Cost(fn_cost=10, fp_cost=1))
    Cost: 656.00
    >>> model = ThorsClassifier(
    ...     preprocessing.StandardScaler() | linear_model.LogisticRegression(),
    ...     fn_cost=10, fp_cost=1, window=500, warm_up=50,
    ... )
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, Cost(fn_cost=10, fp_cost=1))
    Cost: 369.00
    >>> round(model.threshold, 3)
    0.186

    Delayed labels: each label arrives 100 events after its decision, and the decision
    score is passed on through ``key``.

    >>> model = model.clone()
    >>> dataset = ((x, y, {"key": i}) for i, (x, y) in enumerate(datasets.Phishing()))
    >>> evaluate.progressive_val_score(dataset, model, Cost(fn_cost=10, fp_cost=1), delay=100)
    Cost: 448.00
    >>> model.n_pending
    0

    Per-event costs: a missed fraud costs its amount, a review 5.

    >>> import random
    >>> from thors_stream.margin import cost_margin
    >>> rng = random.Random(7)
    >>> def payment():
    ...     fraud = rng.random() < 0.05
    ...     return {"risk": rng.gauss(1.5 if fraud else 0.0, 1.0), "amount": rng.lognormvariate(4, 1)}, fraud
    >>> model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost="amount", fp_cost=5.0, warm_up=50)
    >>> for _ in range(3000):
    ...     x, y = payment()
    ...     _ = model.predict_one(x)
    ...     model.learn_one(x, y)
    >>> model.decide_on, model.n_cold_skipped, model.warmed_up
    ('margin', 100, True)
    >>> x = {"risk": 1.0, "amount": 900.0}
    >>> p = model.predict_proba_one(x)[True]
    >>> model.predict_one(x) == (cost_margin(p, 900.0, 5.0) > model.threshold)
    True

    Pending decisions on disk, and a restart:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "pending.sqlite")
    >>> def wrapper():
    ...     return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=10, fp_cost=1, window=500,
    ...                            warm_up=50, store=path)
    >>> stream = list(datasets.Phishing())
    >>> with wrapper() as model:
    ...     for i, (x, y) in enumerate(stream):
    ...         _ = model.predict_one(x, key=i)
    ...         if i >= 100:                                  # each label comes 100 events later
    ...             x_then, y_then = stream[i - 100]
    ...             model.learn_one(x_then, y_then, key=i - 100)
    ...     model.learn_one(x, True, key="no such payment")   # counted, not an error
    ...     before = model.threshold, model.n_pending, model.n_matched, model.n_unmatched
    >>> round(before[0], 3), before[1:]
    (0.263, (100, 1150, 1))
    >>> with wrapper() as again:      # the same file: the same thresholds and pending decisions
    ...     (again.threshold, again.n_pending, again.n_matched, again.n_unmatched) == before
    True
    """

    def __init__(
        self,
        classifier: base.Classifier,
        *,
        fn_cost: CostSetting,
        fp_cost: CostSetting,
        window: int | str | None = _DEFAULT_WINDOW,
        period: float | dt.timedelta | None = None,
        warm_up: int = 100,
        default_threshold: float | None = None,
        class_prior: float | None = None,
        max_pending: int = 100_000,
        max_fpr: float | None = None,
        max_fnr: float | None = None,
        confidence: float = 0.95,
        moment: str | Any = None,
        pos_label: Hashable = True,
        neg_label: Hashable = None,
        auto_choose: str = "draw",
        segment: str | Any = None,
        min_per_class: int = 30,
        max_segments: int = 10_000,
        min_model_labels: int = 100,
        windows: Sequence[int] | None = None,
        pool_weight: float | None = None,
        pool_every: int | None = None,
        store: str | os.PathLike[str] | None = None,
        max_pending_age: int | dt.timedelta | None = None,
        on_unknown: str | None = None,
        store_options: dict[str, Any] | None = None,
    ) -> None:
        if on_unknown not in (None, "count", "raise", "score"):
            raise ValueError(f"on_unknown must be 'count', 'raise' or 'score', got {on_unknown!r}")
        if store is None and (max_pending_age is not None or store_options is not None):
            raise ValueError("max_pending_age and store_options apply to a store (store='pending.sqlite'); in memory, "
                             "max_pending bounds the pending keys")
        if store is not None and not isinstance(store, (str, os.PathLike)):
            raise TypeError(f"store must be the path of an SQLite file, got {store!r}")
        if store_options is not None:
            allowed = {"commit_every", "commit_interval", "checkpoint_every", "synchronous", "cache_mb"}
            if not isinstance(store_options, dict) or not set(store_options) <= allowed:
                raise ValueError(f"store_options must be a dict with keys among {sorted(allowed)}, got "
                                 f"{store_options!r}")
        if period is not None and type(window) is _DefaultWindow:
            window = None  # the default window gives way to the period (an explicit 10_000 does not)
        if period is not None and window is not None:
            raise ValueError(
                f"window={window!r} and period={period!r} are exclusive: pass window=None to use a time window"
            )
        if isinstance(warm_up, bool) or not isinstance(warm_up, int) or warm_up < 0:
            raise ValueError(f"warm_up must be an integer >= 0, got {warm_up!r}")
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a positive integer, got {max_pending!r}")
        auto = isinstance(window, str)
        if auto and window != "auto":
            raise ValueError(f"window must be a positive integer, None or 'auto', got {window!r}")
        if auto_choose not in ("draw", "leader"):
            raise ValueError(f"auto_choose must be 'draw' or 'leader', got {auto_choose!r}")
        if auto and (max_fpr is not None or max_fnr is not None):
            raise ValueError("window='auto' does not combine with max_fpr/max_fnr (choose a window for the guarantee)")
        if segment is not None and not (isinstance(segment, str) or callable(segment)):
            raise TypeError(f"segment must be a feature name or a callable of x, got {segment!r}")
        if segment is not None and (max_fpr is not None or max_fnr is not None):
            raise ValueError("segment= does not combine with max_fpr/max_fnr")
        if windows is not None and not auto:
            raise ValueError(f"windows= (the candidate windows) applies with window='auto' only, got window={window!r}")
        wins: tuple[int, ...] = DEFAULT_WINDOWS
        if windows is not None:
            try:
                wins = tuple(sorted(windows))
            except TypeError:
                raise ValueError(f"windows must be distinct positive integers, got {windows!r}") from None
            if not wins or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in wins):
                raise ValueError(f"windows must be distinct positive integers, got {windows!r}")
        if (pool_weight is not None or pool_every is not None) and segment is None:
            raise ValueError("pool_weight/pool_every pool the segments' thresholds: they apply with segment= only")
        if moment is not None and not (isinstance(moment, str) or callable(moment)):
            raise TypeError(f"moment must be a feature name or a callable of x, got {moment!r}")
        try:
            hash(pos_label)
        except TypeError:
            raise TypeError(f"pos_label must be hashable, got {pos_label!r}") from None
        if isinstance(min_model_labels, bool) or not isinstance(min_model_labels, int) or min_model_labels < 0:
            raise ValueError(f"min_model_labels must be an integer >= 0, got {min_model_labels!r}")
        # per-event costs (a feature name or a callable for either): decisions on the cost margin,
        # thresholders at unit costs, each labelled event weighing its own cost
        margin = isinstance(fn_cost, str) or callable(fn_cost) or isinstance(fp_cost, str) or callable(fp_cost)
        self._fn_setting: CostSetting = _cost_setting(fn_cost, "fn_cost") if margin else 1.0
        self._fp_setting: CostSetting = _cost_setting(fp_cost, "fp_cost") if margin else 1.0
        # StreamingThors validates costs, window, period, class_prior, default_threshold and the NP settings.
        thors = StreamingThors(
            fn_cost=1.0 if margin else fn_cost,  # type: ignore[arg-type]  # (numbers here: margin is False)
            fp_cost=1.0 if margin else fp_cost,  # type: ignore[arg-type]
            window=wins[-1] if isinstance(window, str) else window,
            period=period,
            class_prior=class_prior,
            default_threshold=default_threshold,
            max_fpr=max_fpr,
            max_fnr=max_fnr,
            confidence=confidence,
        )
        self.classifier = classifier
        self.fn_cost = fn_cost
        self.fp_cost = fp_cost
        self.window = window
        self.period = period
        self.warm_up = warm_up
        self.default_threshold = default_threshold
        self.class_prior = class_prior
        self.max_pending = max_pending
        self.max_fpr = max_fpr
        self.max_fnr = max_fnr
        self.confidence = confidence
        self.moment = moment
        self.pos_label = pos_label
        self.neg_label = neg_label
        self.auto_choose = auto_choose
        self.segment = segment
        self.min_per_class = min_per_class
        self.max_segments = max_segments
        self.min_model_labels = min_model_labels
        self.windows = windows
        self.pool_weight = pool_weight
        self.pool_every = pool_every
        self._margin = margin
        self._thors: StreamingThors = thors
        self._np = max_fpr is not None or max_fnr is not None
        self._default = (
            thors.default_threshold
            if thors.default_threshold is not None
            else 0.0 if margin  # the per-event Bayes rule
            else thors.fp_cost / (thors.fp_cost + thors.fn_cost)
        )
        self._segmented: Any = None
        self._seg_auto = segment is not None and auto  # a selector per segment (no warm-up)
        if segment is not None:
            from .segments import SegmentedStreamingThors

            if auto:
                self._segmented = SegmentedStreamingThors(
                    fn_cost=thors.fn_cost, fp_cost=thors.fp_cost, window="auto", windows=wins,
                    default_threshold=self._default, choose=auto_choose, max_segments=max_segments,
                    min_per_class=min_per_class, class_prior=class_prior, pool_weight=pool_weight,
                    pool_every=pool_every)  # (pooling is refused there: not with window='auto')
            else:
                self._segmented = SegmentedStreamingThors(
                    fn_cost=thors.fn_cost, fp_cost=thors.fp_cost, window=thors.window, period=thors._period_s,
                    max_segments=max_segments, min_per_class=min_per_class, class_prior=class_prior,
                    pool_weight=pool_weight, pool_every=pool_every)
            self._thors = self._segmented.global_summary  # what `thors` and `threshold` report
        # the threshold's source: the window's StreamingThors, or the online choice among windows
        self._selector = (
            WindowSelector(fn_cost=thors.fn_cost, fp_cost=thors.fp_cost, default_threshold=self._default,
                           windows=wins, class_prior=class_prior, choose=auto_choose)
            if auto and segment is None else None
        )
        self._source: WindowSelector | StreamingThors = thors
        if self._selector is not None:
            self._source = self._selector
            self._thors = self._selector.experts[-1]
        # pos_label True, 1, np.True_... without a neg_label: labels 0/1/False/True, decisions
        # True/False (with a neg_label, decisions are pos_label or neg_label, whatever pos_label is)
        self._plain_labels = neg_label is None and (pos_label is True or _is_one(pos_label))
        # learn_one's first test: plain labels and scalar costs take the lean path's label check
        self._lean_labels = self._plain_labels and not margin
        # predict_one's: segment= or per-event costs decide in _decide_special
        self._special = margin or self._segmented is not None
        self._neg_seen: Hashable = False if self._plain_labels else neg_label
        self._timed = period is not None
        self._last_t = -math.inf
        self._n_learned = 0
        self._n_pos = 0
        self._ready = False
        # pending decisions: the score (scalar costs) or (margin, fn_i, fp_i, labels the model had learned)
        self._pending: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self._n_evicted = 0
        self._n_model_labels = 0  # labels the model learned through this wrapper (counted with per-event costs)
        self._n_cold_skipped = 0  # margins not learned: scored by a model with < min_model_labels labels
        self._cache_x: dict[Hashable, Any] | None = None
        self._cache_score = 0.0
        self._routes: dict[str, frozenset[str] | None] = {}
        # pending decisions on disk (store=): the PendingStore; None keeps them in self._pending
        self.store = store
        self.max_pending_age = max_pending_age
        self.on_unknown = on_unknown
        self.store_options = store_options
        self._policy = on_unknown if on_unknown is not None else "raise" if store is None else "count"
        self._n_matched = 0  # keyed labels that found their decision (in memory; the store counts its own)
        self._n_unmatched = 0
        self._db: PendingStore | None = None
        if store is not None:
            self._open_store(store)

    # ---------------------------------------------------------------- river plumbing
    def clone(self, new_params: dict[str, Any] | None = None, include_attributes: bool = False) -> ThorsClassifier:
        """river's ``clone``; with ``include_attributes`` the thresholding state is copied
        in one ``deepcopy`` (river copies attribute by attribute, which split the summary
        that ``threshold``, ``predict_one`` and the selector share into separate copies).
        O(state) with ``include_attributes``, else O(parameters)."""
        fresh: ThorsClassifier = super().clone(new_params)
        if not include_attributes:
            return fresh
        params = self._get_params()
        fresh.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in params}))
        return fresh

    @property
    def _wrapped_model(self) -> base.Classifier:
        return self.classifier

    @property
    def _multiclass(self) -> bool:
        return False  # a threshold decides between two classes

    @property
    def _supervised(self) -> bool:
        return True

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        from river import linear_model, naive_bayes, preprocessing, tree

        yield {"classifier": linear_model.LogisticRegression(), "fn_cost": 5.0, "fp_cost": 1.0}
        yield {
            "classifier": naive_bayes.GaussianNB(),  # type: ignore[no-untyped-call]  # river leaves it unannotated
            "fn_cost": 1.0,
            "fp_cost": 3.0,
            "window": 200,
            "warm_up": 20,
        }
        yield {"classifier": tree.HoeffdingTreeClassifier(), "fn_cost": 10.0, "fp_cost": 1.0, "window": None}
        yield {"classifier": linear_model.LogisticRegression(), "fn_cost": 4.0, "fp_cost": 1.0, "window": "auto",
               "warm_up": 10}
        yield {
            "classifier": preprocessing.StandardScaler() | linear_model.LogisticRegression(),
            "fn_cost": 2.0,
            "fp_cost": 1.0,
            "window": 300,
            "warm_up": 0,
        }

    # ---------------------------------------------------------------- scoring
    def predict_proba_one(
        self, x: dict[Hashable, Any], *, key: Hashable | None = None, **kwargs: Any
    ) -> dict[Any, float]:
        """The wrapped model's probabilities, passed through.

        A dict that lacks one of the two classes (a model that has not seen both yet,
        or has not learned at all) is completed to ``{False: 1 - p, True: p}``, ``p``
        the positive-class score (0.0 when absent), the score :meth:`predict_one`
        thresholds. With ``key``, the probability of the positive class is stored for
        a later ``learn_one(x, y, key=key)`` (delayed labels), replacing any score
        stored under that key. Other keyword arguments go to the model when it
        accepts them (routed as ``river.compose.Pipeline`` does).
        """
        proba = self._proba(x, kwargs)
        pos = self.pos_label
        score = proba.get(pos, 0.0) if proba else 0.0
        if type(score) is not float:
            score = _probability(score, _event(key, x))
        if key is not None:
            self._store(key, self._margin_entry(score, x, key) if self._margin else score)
        self._cache_x = _snapshot(x)
        self._cache_score = score
        neg = self._neg_seen
        if len(proba) == 2 and pos in proba and (neg is None or neg in proba):
            return proba  # (with no negative label known yet, the model's other class is it)
        if neg is None:  # no negative label known yet
            return {pos: score}
        return {neg: 1.0 - score, pos: score}

    def predict_one(self, x: dict[Hashable, Any], *, key: Hashable | None = None, **kwargs: Any) -> Any:
        """``True`` iff the model's probability of the positive class exceeds :attr:`threshold`.

        Returns a bool (equal to 1/0, so it compares equal to 0/1 labels). With
        ``key``, the score is stored for a later ``learn_one(x, y, key=key)``. With
        per-event costs: ``True`` iff the event's cost margin exceeds :attr:`threshold`;
        with ``key`` the margin, the two costs and the number of labels the model had
        learned are stored. O(predict_proba_one) plus an O(1) threshold read when the
        optimum did not move.
        """
        if kwargs:
            proba = self._proba(x, kwargs)
        else:
            try:
                proba = self.classifier.predict_proba_one(x)
            except NotImplementedError:
                proba = self._proba(x, kwargs)  # raises the explanatory error
        score = proba.get(self.pos_label, 0.0)
        if type(score) is not float:
            score = _probability(score, _event(key, x))
        if self._special:  # segment= or per-event costs
            decision = self._decide_special(x, score, key)
            if self._plain_labels:
                return decision
            return self.pos_label if decision else self._neg_seen
        if key is not None:
            self._store(key, score)
        self._cache_x = x.copy() if type(x) is dict else _snapshot(x)  # (inline: the common case)
        self._cache_score = score
        if self._ready or self._selector is not None:  # auto: the default is one of its candidates
            sel = self._selector
            thr = (sel._thr if sel is not None and sel._thr is not None else  # the compiled step's answer
                   self._thors_threshold() if self._np else self._source.get())
            decision = score > (self._default if thr is None else thr)
        else:
            decision = score > self._default
        if self._plain_labels:
            return decision
        return self.pos_label if decision else self._neg_seen

    def _decide_special(self, x: dict[Hashable, Any], score: float, key: Hashable | None) -> bool:
        """``predict_one``'s decision with ``segment=`` or per-event costs: the decision score
        (the probability, or the cost margin) against the threshold of the event's segment, or
        of the window (or the selector's choice). Everything that can raise (a cost, the
        probability, the segment) is read before the key is stored."""
        entry: Any = score
        decision_score = score
        if self._margin:
            entry = self._margin_entry(score, x, key)
            decision_score = entry[0]
        segmented = self._segmented is not None and (self._ready or self._seg_auto)  # (auto: no warm-up)
        seg = self._segment_of(x) if segmented else None
        if key is not None:
            self._store(key, entry)
        self._cache_x = _snapshot(x)
        self._cache_score = score
        if self._segmented is not None:
            thr = self._segmented.get(seg) if segmented else None
        elif self._ready or self._selector is not None:  # auto: the default is one of its candidates
            sel = self._selector
            thr = (sel._thr if sel is not None and sel._thr is not None else
                   self._thors_threshold() if self._np else self._source.get())
        else:
            thr = None
        return decision_score > (self._default if thr is None else thr)


    # ---------------------------------------------------------------- learning
    def learn_one(
        self,
        x: dict[Hashable, Any],
        y: Any,
        *,
        key: Hashable | None = None,
        w: float | None = None,
        t: Any = None,
        **kwargs: Any,
    ) -> None:
        """Record the out-of-sample score of ``x`` with label ``y``, then let the model learn.

        ``y`` must be 0, 1, ``False`` or ``True``. ``key``: use the score stored by
        ``predict_one(x, key=key)`` (delayed labels) and forget it. ``w`` (> 0) weights
        the event in the threshold's cost (e.g. its amount) and is passed to the
        model's ``learn_one`` when that accepts ``w``. ``t``: the event time, required
        with ``period`` (ignored otherwise). Other keyword arguments go to the model
        when it accepts them. Invalid input (label, weight, time, unknown key, a
        non-finite score) raises before anything changes. With per-event costs, see the
        class docstring: without ``key`` the margin is re-scored by the current model
        (costs read from ``x``), with ``key`` the decision-time margin and costs are
        learned; the event weighs its ``fn_i`` (positive) or ``fp_i`` (negative) times
        ``w``, and ``w`` alone goes to the model.

        Without ``key``, the score of the last ``predict_one``/``predict_proba_one`` is
        reused when ``x`` is that same dict or an equal one (nothing was learned in
        between, so the model would give the same number); otherwise ``x`` is scored
        now. O(model) + O(log window).
        """
        if not self._lean_labels:
            if self._margin:
                self._learn_margin(x, y, key, w, t, kwargs)
                return
            pos = self._positive(y)
        elif y is True or y is False:
            pos = y
        elif type(y) is int and (y == 1 or y == 0):
            pos = y == 1
        else:
            pos = check_label(y) == 1
        if key is None and w is None and not kwargs and not self._timed and self._segmented is None and \
                self._db is None:  # lean
            cached = self._cache_x
            try:  # (_same_features inline: a Python call less per event)
                same = cached is not None and bool(cached == x)
            except Exception:  # e.g. array-valued features: comparison is ambiguous
                same = False
            score = self._cache_score if same else self._score_now(x, kwargs)
            if score - score != 0.0:
                self._reject_score(score)
            self._cache_x = None
            self.classifier.learn_one(x, y)
            if not pos and self._neg_seen is None:
                self._neg_seen = y  # the first negative label (predict_one returns it), once learned
            sel = self._selector
            if sel is not None and sel._fixed is not None:  # window="auto", compiled: the step inline
                sel._thr = None  # (see WindowSelector.update)
                sel._thr = selector_step(sel._fixed, score, pos, 1.0)  # type: ignore[misc]  # (compiled: not None)
                sel.n += 1
            else:
                self._source.update(score, pos)
            if not self._ready:
                self._count(pos)
            return

        wt = 1.0 if w is None else check_weight(w)
        if w is not None:
            check_weighted_costs(wt, self._thors.fn_cost, self._thors.fp_cost)  # before the model learns
        tf = self._event_time(x, t)
        if self._db is not None:
            self._learn_stored(x, y, pos, key, w, wt, tf, kwargs)
            return
        unmatched = False
        if key is not None:
            entry = self._lookup(key, "score")
            if entry is None:  # on_unknown="count": counted, nothing learned
                return
            if entry is _RESCORE:
                unmatched, key = True, None  # "score": learned as a label without a key (x scored now)
            else:
                score = entry
        if key is None:
            cached = self._cache_x
            if cached is not None and _same_features(cached, x):
                score = self._cache_score
            else:
                score = self._score_now(x, kwargs)
        if score - score != 0.0:  # nan or infinite
            self._reject_score(score)

        seg = self._segment_of(x) if self._segmented is not None else None
        self._cache_x = None
        model_kwargs = self._route("learn_one", kwargs) if kwargs else {}
        if w is not None and self._model_takes_w():
            model_kwargs["w"] = w
        self.classifier.learn_one(x, y, **model_kwargs)
        if not pos and self._neg_seen is None:
            self._neg_seen = y  # the first negative label (predict_one returns it), once learned
        self._apply(score, pos, wt, tf, seg)
        if key is not None:
            del self._pending[key]
            self._n_matched += 1
        elif unmatched:
            self._n_unmatched += 1

    # ---------------------------------------------------------------- the store
    def commit(self, *, checkpoint: bool = False) -> None:
        """With a store: commit the decisions and labels not committed yet now (with
        ``checkpoint``, a checkpoint of the thresholding state too). Commits are otherwise
        batched (see the class docstring); call this when the stream pauses. Without a store:
        nothing to do. O(uncommitted batch)."""
        if self._db is not None:
            self._db._check_whole()  # (refused after an interrupted operation: closing rolls it back)
            self._db.commit(checkpoint=checkpoint)

    def close(self) -> None:
        """With a store: commit, write a checkpoint of the thresholding state, and release the
        file and its lock (then the wrapper can no longer decide with a key or learn). Without
        one: nothing to do. Idempotent."""
        if self._db is not None:
            self._db.close()

    def __enter__(self) -> ThorsClassifier:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---------------------------------------------------------------- inspection
    @property
    def threshold(self) -> float:
        """The threshold :meth:`predict_one` uses now: THORS once warmed up, else the default.

        ``-inf`` means every event is predicted positive. Falls back to the default
        when a time window has emptied. With per-event costs it is the cut on the cost
        margin (``0.0``, the per-event Bayes rule, until warm); with ``segment=``, the
        threshold over all segments.
        """
        if self._selector is not None:
            return self._selector.get()
        if self._seg_auto:
            return float(self._segmented.global_selector.get())
        if self._ready:
            thr = self._thors_threshold()
            if thr is not None:
                return thr
        return self._default

    @property
    def thors(self) -> StreamingThors:
        """The underlying :class:`~thors_stream.StreamingThors` (read only); with
        ``window="auto"``, the one over the longest window; with ``segment=``, the one over
        all segments."""
        return self._thors

    @property
    def selector(self) -> WindowSelector | None:
        """With ``window="auto"``: the :class:`~thors_stream.selection.WindowSelector` (read
        its ``chosen``, ``costs``, ``probabilities()``, ``regret_bound()``); with ``segment=``
        as well, the one over all events (each segment's: ``segmented.selector(segment)``);
        else ``None``."""
        if self._seg_auto:
            sel: WindowSelector = self._segmented.global_selector
            return sel
        return self._selector

    @property
    def segmented(self) -> Any:
        """With ``segment=``: the :class:`~thors_stream.segments.SegmentedStreamingThors` (read
        its ``get(segment)``, ``segments()``, ``source(segment)``, ``selector(segment)``); else
        ``None``. Read only: update it through the wrapper."""
        return self._segmented

    @property
    def warmed_up(self) -> bool:
        """Whether the THORS threshold is in use (``warm_up`` events, both classes, learned)."""
        return self._ready

    @property
    def n_pending(self) -> int:
        """Number of scores (margins, with per-event costs) stored under a key and waiting for their label
        (with a store, the decisions pending in it)."""
        if self._db is not None:
            return self._db.pending
        return len(self._pending)

    @property
    def n_matched(self) -> int:
        """Labels given with a ``key`` that found their pending decision (with a store, over
        the store's whole life; in memory, this wrapper's)."""
        return self._db.matched if self._db is not None else self._n_matched

    @property
    def n_unmatched(self) -> int:
        """Labels given with a ``key`` that found no pending decision (never decided, labelled
        already, or evicted), with ``on_unknown="count"`` or ``"score"``."""
        return self._db.unmatched if self._db is not None else self._n_unmatched

    @property
    def n_evicted(self) -> int:
        """Pending decisions dropped before their label came: by ``max_pending_age`` with a
        store, by ``max_pending`` in memory."""
        return self._db.evicted if self._db is not None else self._n_evicted

    @property
    def pending_store(self) -> PendingStore | None:
        """With ``store=``: the :class:`~thors_stream.store.PendingStore` (read its counters,
        ``keys()``, ``commit()``); else ``None``."""
        return self._db

    @property
    def decide_on(self) -> str:
        """``"margin"`` with per-event costs (``fn_cost`` or ``fp_cost`` a feature name or a
        callable): decisions are ``cost margin > threshold``; else ``"score"``: ``probability > threshold``."""
        return "margin" if self._margin else "score"

    @property
    def n_model_labels(self) -> int:
        """With per-event costs: labels the wrapped model has learned through this wrapper
        (what a margin's cold start is judged by); ``0`` with numbers for both costs (not counted)."""
        return self._n_model_labels

    @property
    def n_cold_skipped(self) -> int:
        """With per-event costs: labelled events whose margin the thresholder did not learn
        because the model that scored it had learned fewer than ``min_model_labels`` labels
        (the model learned them); ``0`` with numbers for both costs."""
        return self._n_cold_skipped
