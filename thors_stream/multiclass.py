"""Multiclass THORS: one threshold per class, visited in a fixed order (the paper's Discussion).

The decision rule (the *threshold family*). Each event has one score per class,
``scores[:, c]`` (larger means "more likely class c", e.g. a calibrated probability). An
*order* ``pi = (pi_1, ..., pi_m)`` of the ``m`` classes and thresholds ``t_1, ..., t_{m-1}``
classify an event ``x`` by::

    for k = 1, ..., m-1:
        if scores(x)[pi_k] > t_k: predict pi_k and stop
    predict pi_m                      # the last class is the fallback

``t_k = -inf`` means "every event still undecided at stage k is class ``pi_k``"; a threshold
at or above every score of class ``pi_k`` means "never ``pi_k``". The empirical cost of a rule
on labelled validation events is ``sum_e w_e * C[y_e][pred_e]`` with ``C[i][j]`` the cost of
predicting ``j`` for an event of true class ``i`` (any finite reals: the diagonal may hold a
constant or a benefit, only the total is minimised).

Default order: decreasing *misclassification cost* of the class,
``kappa_i = mean_{j != i} (C[i][j] - C[i][i])`` (ties by class index), so the class cheapest to
miss is the fallback, as the paper suggests.

Two ways to pick the thresholds for a given order:

- :func:`fit_sequential` (the paper's scheme): stage by stage, ``t_k`` is the binary THORS
  threshold (:func:`thors_stream.thors_threshold`) of "``pi_k`` vs the rest" on the events not
  decided by stages ``1..k-1``. Binary costs from the matrix: predicting ``pi_k`` for an event of
  class ``i`` costs ``C[i][pi_k]``; passing it on is assumed to cost what the best remaining
  class would, ``D_i = min_{j in {pi_{k+1},...,pi_m}} C[i][j]`` (later stages are optimistically
  assumed to classify it as well as possible). Each event's stake is ``delta = w * (C[i][pi_k] -
  D_i)``: an event with ``delta < 0`` is a binary positive of weight ``-delta`` (taking it saves
  ``-delta``), one with ``delta > 0`` a negative of weight ``delta``, one with ``delta = 0`` does not
  matter; THORS with ``fn_cost = fp_cost = 1`` on these weights minimises the stage cost exactly.
  For ``m = 2`` this is binary THORS with ``fn = C[1][0] - C[1][1]``, ``fp = C[0][1] - C[0][0]``
  and is exact; for ``m > 2`` the last stage is exact given the earlier ones, the earlier ones
  are greedy. O(m n log n).
- :func:`fit_exact`: the cost-optimal threshold vector of the same family and order (the
  lexicographically smallest among equal-cost optima). The first ``m - 3`` thresholds are
  enumerated over the candidate scores of the events reaching their stage; ``t_{m-2}`` is swept
  upwards through its candidates while a :class:`~thors_stream.StreamingThors` holding the
  released events keeps the last stage's exact binary optimum: O(K^(m-3) * n log n) time with
  ``K <= n + 1`` candidates per threshold -- O(n log n) for ``m = 2`` and ``m = 3``,
  O(n^2 log n) for ``m = 4``, exponential in ``m`` (refused above ``max_evaluations`` enumerated
  prefixes). ``order="all"`` also searches the ``m!`` orders.

Exactness: with integer (or dyadic) costs and weights whose sums stay below 2**53 every cost is
exact and :func:`fit_exact` equals a brute force over all candidate vectors (tested); with
arbitrary floats, optima closer than the rounding error may be interchanged.

Examples
--------
>>> import numpy as np
>>> S = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]])
>>> y = [0, 1, 2, 1]
>>> C = [[0, 1, 1], [5, 0, 5], [1, 1, 0]]
>>> r = fit_exact(S, y, C)
>>> r.order, r.cost, r.predict(S).tolist()
((1, 0, 2), 0.0, [0, 1, 2, 1])
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, check_scores, check_weights
from .batch import thors_threshold
from .stream import StreamingThors

__all__ = [
    "MulticlassThresholds",
    "bayes_predict",
    "check_cost_matrix",
    "default_order",
    "empirical_cost",
    "fit_exact",
    "fit_sequential",
]


# ---------------------------------------------------------------------------- validation
def check_cost_matrix(cost_matrix: Any, m: int | None = None) -> np.ndarray:
    """Return ``cost_matrix`` as a finite float (m, m) array with m >= 2, or raise.

    ``C[i][j]`` is the cost of predicting ``j`` for an event of true class ``i``. Entries may be
    any finite reals (negative = a benefit); an integer entry must be exactly a float64 (every
    integer up to 2**53 is), since costs are differenced. O(m^2).

    >>> check_cost_matrix([[0, 1], [3, 0]]).tolist()
    [[0.0, 1.0], [3.0, 0.0]]
    >>> check_cost_matrix([[0, 1], [2, 0]], m=3)
    Traceback (most recent call last):
    ...
    ValueError: cost_matrix must be 3x3 (one row and column per class), got shape (2, 2)
    """
    c = _real_2d(cost_matrix, "cost_matrix")
    _check_exact_integers(cost_matrix, c)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 2:
        raise ValueError(f"cost_matrix must be a square array with at least 2 classes, got shape {c.shape}")
    if m is not None and c.shape[0] != m:
        raise ValueError(f"cost_matrix must be {m}x{m} (one row and column per class), got shape {c.shape}")
    bad = ~np.isfinite(c)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"cost_matrix entries must be finite, got {c[i, j].item()!r} at [{i}][{j}]")
    return c


def _check_exact_integers(value: Any, c: np.ndarray) -> None:
    """Raise ``ValueError`` naming the first integer entry of ``value`` that ``c`` (its float64
    conversion) does not hold exactly: costs are differenced (``C[i][j] - C[i][k]``), and the
    difference of two rounded integers beyond 2**53 can be wrong by all of its size (2**53 + 1
    and 2**53 would differ by 0). O(m^2)."""
    raw = np.asarray(value)
    if raw.dtype.kind not in "iuO" or raw.shape != c.shape:
        return
    for idx in zip(*np.nonzero(np.abs(c) >= 2.0**53)):
        v = raw[idx]
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and int(c[idx]) != int(v):
            where = "".join(f"[{int(i)}]" for i in idx)
            raise ValueError(f"cost_matrix entry {int(v)} at {where} is not exactly a float64 (it would be rounded "
                             f"to {c[idx].item()!r}, and costs are differenced); give the costs as floats or in larger "
                             "units")


def _real_2d(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array: numeric arrays as they are, anything else element by
    element by the package's number rule (strings and bools refused with ``TypeError``, a
    number beyond float64 with ``ValueError``, each naming the value). O(size)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged rows
        raise TypeError(f"{name} must be an array of real numbers with rows of one length") from None
    if raw.dtype.kind in "iuf":
        return raw.astype(np.float64)
    out: np.ndarray = check_scores(raw.reshape(-1), name).reshape(raw.shape)
    return out


def _check_scores2d(scores: Any) -> np.ndarray:
    s = _real_2d(scores, "scores")
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-dimensional (n events, m classes), got shape {s.shape}")
    if s.shape[0] == 0:
        raise ValueError("scores is empty: no threshold can be chosen from no events")
    if s.shape[1] < 2:
        raise ValueError(f"scores must have at least 2 class columns, got shape {s.shape}")
    bad = ~np.isfinite(s)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"scores must be finite, got {s[i, j].item()!r} at row {i}, column {j}")
    return s


def _check_y(y: Any, n: int, m: int) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"y has length {arr.shape[0]} but scores have {n} rows")
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        first = arr[0] if n else None
        raise ValueError(f"y must hold class indices 0..{m - 1}, got dtype {arr.dtype} (first value {first!r})")
    bad = (arr != np.round(arr)) | (arr < 0) | (arr > m - 1) if arr.dtype.kind == "f" else (arr < 0) | (arr > m - 1)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y must hold class indices 0..{m - 1}, got {arr[i].item()!r} at position {i}")
    return arr.astype(np.int64)


def _check_order(order: Any, m: int) -> tuple[int, ...]:
    try:
        if isinstance(order, (str, bytes)) or any(isinstance(a, (bool, np.bool_)) for a in order):
            raise TypeError
        o = tuple(operator.index(a) for a in order)
    except TypeError:
        raise TypeError(f"order must be a sequence of class indices, got {order!r}") from None
    if sorted(o) != list(range(m)):
        raise ValueError(f"order must be a permutation of 0..{m - 1}, got {order!r}")
    return o


def default_order(cost_matrix: Any) -> tuple[int, ...]:
    """Classes by decreasing misclassification cost ``mean_{j != i}(C[i][j] - C[i][i])``, ties by index.

    O(m^2 + m log m).

    >>> default_order([[0, 1, 1], [5, 0, 5], [2, 2, 0]])
    (1, 2, 0)
    """
    c = check_cost_matrix(cost_matrix)
    m = c.shape[0]
    kappa = (c.sum(axis=1) - m * np.diag(c)) / (m - 1)
    return tuple(int(i) for i in sorted(range(m), key=lambda i: (-kappa[i], i)))


def _prepare(
    scores: Any, y: Any, cost_matrix: Any, order: Any, sample_weight: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], np.ndarray]:
    s = _check_scores2d(scores)
    n, m = s.shape
    c = check_cost_matrix(cost_matrix, m)
    labels = _check_y(y, n, m)
    o = default_order(c) if order is None else _check_order(order, m)
    w = check_weights(sample_weight, n)
    w = np.ones(n) if w is None else w
    _check_event_costs(w, c, labels, np.argmax(np.abs(c), axis=1)[labels])
    return s, labels, c, o, w


def _check_event_costs(w: np.ndarray, c: np.ndarray, y: np.ndarray, pred: np.ndarray) -> None:
    """Raise ``ValueError`` naming the first event whose cost ``w * C[y][pred]`` is beyond
    2**960 (MAX_WEIGHTED_COST): the totals would overflow to ``inf`` (every threshold vector
    then costs the same, and the fit's answer means nothing). O(n)."""
    with np.errstate(over="ignore", invalid="ignore"):
        cost = w * np.abs(c[y, pred])
    bad = ~(cost <= MAX_WEIGHTED_COST)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        yi, pi = int(y[i]), int(pred[i])
        raise ValueError(f"cost_matrix: event {i}'s cost of predicting class {pi} (its weight {float(w[i])!r} times "
                         f"C[{yi}][{pi}] = {float(c[yi, pi])!r}) is beyond 2**960 (MAX_WEIGHTED_COST); express the "
                         "weights or costs in larger units")


# ------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class MulticlassThresholds:
    """A multiclass threshold rule (see the module docstring) and its validation cost.

    Attributes
    ----------
    thresholds
        ``t_1, ..., t_{m-1}``: ``thresholds[k]`` belongs to class ``order[k]``.
    order
        The classes in the order they are checked; ``order[-1]`` is the fallback.
    cost
        Empirical total cost ``sum_e w_e * C[y_e][pred_e]`` on the events it was fitted on.
    method
        ``"sequential"`` or ``"exact"``.

    >>> r = MulticlassThresholds((0.5,), (1, 0), 0.0, "exact")
    >>> r.predict([[0.9, 0.1], [0.2, 0.8]]).tolist()
    [0, 1]
    """

    thresholds: tuple[float, ...]
    order: tuple[int, ...]
    cost: float
    method: str

    def predict(self, scores: Any) -> np.ndarray:
        """Class of every row of ``scores`` (n, m) by the rule. O(n m)."""
        s = _check_scores2d(scores)
        if s.shape[1] != len(self.order):
            raise ValueError(f"scores must have {len(self.order)} columns, got shape {s.shape}")
        return _apply(s, self.order, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``-inf`` thresholds as the string ``"-inf"``)."""
        return {
            "thresholds": [("-inf" if math.isinf(t) else t) for t in self.thresholds],
            "order": list(self.order), "cost": self.cost, "method": self.method,
        }


def _apply(s: np.ndarray, order: Sequence[int], thresholds: Sequence[float]) -> np.ndarray:
    pred = np.full(s.shape[0], order[-1], dtype=np.int64)
    undecided = np.ones(s.shape[0], dtype=bool)
    for c, t in zip(order[:-1], thresholds):
        take = undecided & (s[:, c] > t)
        pred[take] = c
        undecided &= ~take
    return pred


def empirical_cost(pred: Any, y: Any, cost_matrix: Any, sample_weight: Any = None) -> float:
    """``sum_e w_e * C[y_e][pred_e]``; ``ValueError`` when an event's ``w_e * |C[y_e][pred_e]|``
    is beyond 2**960 (the sum could overflow). O(n).

    >>> empirical_cost([0, 1, 1], [0, 0, 1], [[0, 2], [7, 0]])
    2.0
    """
    c = check_cost_matrix(cost_matrix)
    m = c.shape[0]
    p = _check_y(pred, np.asarray(pred).shape[0], m)
    t = _check_y(y, p.shape[0], m)
    w = check_weights(sample_weight, p.shape[0])
    w = np.ones(p.shape[0]) if w is None else w
    _check_event_costs(w, c, t, p)
    return float((c[t, p] * w).sum())


def bayes_predict(proba: Any, cost_matrix: Any) -> np.ndarray:
    """Bayes-optimal decisions ``argmin_j sum_i proba[:, i] * C[i][j]`` (first index on ties). O(n m^2).

    Optimal when ``proba`` are the true class probabilities; the baseline for calibrated ones.

    An expected cost beyond float64's range (scores times costs past ~1.8e308) raises
    ``ValueError`` naming the row and class, rather than deciding between infinities.

    >>> bayes_predict([[0.8, 0.2], [0.95, 0.05]], [[0, 1], [10, 0]]).tolist()
    [1, 0]
    """
    p = _check_scores2d(proba)
    c = check_cost_matrix(cost_matrix, p.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        expected = p @ c
    bad = ~np.isfinite(expected)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"bayes_predict: the expected cost of class {j} at row {i} (its scores times column {j} "
                         "of cost_matrix) overflows float64; express the costs in larger units")
    picks: np.ndarray = np.argmin(expected, axis=1)
    return picks


# ------------------------------------------------------------------------------ fitting
def _stakes(w: np.ndarray, take: np.ndarray, passed: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Each event's stake ``w * (take - passed)``, or ``ValueError`` naming the first event
    (``ids``: the caller's event numbers) whose non-zero stake lies outside
    [2**-960, 2**960] (MIN_WEIGHTED_COST, MAX_WEIGHTED_COST): it becomes a binary THORS weight
    with unit costs, and beyond those limits its products would overflow or lose precision. O(n).
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        delta: np.ndarray = w * (take - passed)
    size = np.abs(delta)
    bad = ~(size <= MAX_WEIGHTED_COST) | ((size < MIN_WEIGHTED_COST) & (take != passed))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = (f"{float(delta[i])!r}, beyond 2**960 (MAX_WEIGHTED_COST); express the costs in larger units"
                if not size[i] <= MAX_WEIGHTED_COST else
                f"{float(delta[i])!r} (weight {float(w[i])!r} times {float(take[i] - passed[i])!r}), below 2**-960 "
                "(MIN_WEIGHTED_COST): it would lose its precision; express the weights or costs in smaller units")
        raise ValueError(f"cost_matrix: event {int(ids[i])}'s stake (its weight times a difference of costs in its "
                         f"row) is {what}")
    return delta


def _binary_stage(
    score: np.ndarray, y: np.ndarray, w: np.ndarray, take_cost: np.ndarray, pass_cost: np.ndarray, ids: np.ndarray
) -> tuple[float, float]:
    """Smallest ``t`` minimising ``sum_{s > t} w*take[y] + sum_{s <= t} w*pass[y]``; returns (t, cost).

    Exact reduction to binary THORS with ``fn = fp = 1`` and weights ``|delta|`` (``ids``: the
    events' numbers, for errors).
    """
    if score.shape[0] == 0:
        return -math.inf, 0.0
    delta = _stakes(w, take_cost[y], pass_cost[y], ids)
    base = float(np.sum(w * pass_cost[y]))
    rel = delta != 0
    if not rel.any():
        return -math.inf, base
    d = delta[rel]
    r = thors_threshold(score[rel], d < 0, fn_cost=1.0, fp_cost=1.0, sample_weight=np.abs(d))
    # thors cost = sum_{s>t, d>0} d - sum_{s<=t, d<0} d = sum_{s>t} d - sum_{d<0} d
    return r.threshold, base + r.cost + float(d[d < 0].sum())


def fit_sequential(
    scores: Any,
    y: Any,
    cost_matrix: Any,
    order: Sequence[int] | None = None,
    sample_weight: Any = None,
) -> MulticlassThresholds:
    """The paper's sequential multiclass THORS: one binary THORS threshold per stage.

    See the module docstring for the rule and for how each stage's binary costs are derived
    from the matrix (``C[i][pi_k]`` to take, ``min`` over the remaining classes to pass on).
    Complexity: O(m n log n) time, O(n) memory.

    Parameters
    ----------
    scores
        (n, m) finite scores, column ``c`` for class ``c``.
    y
        n class indices in ``0..m-1``.
    cost_matrix
        (m, m) finite costs ``C[true][pred]``.
    order
        Permutation of the classes (default: :func:`default_order`).
    sample_weight
        Optional per-event weights (finite, > 0) multiplying the event's costs.

    Raises
    ------
    ValueError, TypeError
        Bad shapes, non-finite values, labels outside ``0..m-1``, an order that is not a
        permutation, bad weights; the message names the bad value.

    >>> S = [[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6], [0.5, 0.1, 0.4]]
    >>> r = fit_sequential(S, [0, 1, 2, 0], [[0, 1, 1], [1, 0, 1], [1, 1, 0]], order=[0, 1, 2])
    >>> r.thresholds, r.cost
    ((0.3, 0.2), 0.0)
    """
    s, labels, c, o, w = _prepare(scores, y, cost_matrix, order, sample_weight)
    m = c.shape[0]
    undecided = np.ones(s.shape[0], dtype=bool)
    thresholds = []
    for k in range(m - 1):
        ck = o[k]
        rest = list(o[k + 1:])
        take_cost = c[:, ck]
        pass_cost = c[:, rest].min(axis=1)
        idx = np.flatnonzero(undecided)
        t, _ = _binary_stage(s[idx, ck], labels[idx], w[idx], take_cost, pass_cost, idx)
        thresholds.append(t)
        undecided[idx[s[idx, ck] > t]] = False
    th = tuple(float(t) for t in thresholds)
    cost = float(np.sum(w * c[labels, _apply(s, o, th)]))
    return MulticlassThresholds(th, o, cost, "sequential")


def fit_exact(
    scores: Any,
    y: Any,
    cost_matrix: Any,
    order: Sequence[int] | str | None = None,
    sample_weight: Any = None,
    max_evaluations: int = 2_000_000,
) -> MulticlassThresholds:
    """The cost-optimal thresholds of the family for a given order (lexicographically smallest optimum).

    Enumerates ``t_1..t_{m-3}`` over ``-inf`` and the distinct scores of the events reaching each
    stage (ascending, so the first optimum found is the lexicographically smallest). For each such
    prefix, ``t_{m-2}`` is swept upwards over its candidates: each step releases the events with that
    score to the last stage, which a :class:`~thors_stream.StreamingThors` (fn = fp = 1, weights
    ``|delta|`` as in :func:`fit_sequential`) keeps solved exactly, O(log n) per event. A threshold
    that is not such a score gives the same partition as the largest such score below it, so
    nothing optimal is missed.

    Complexity: O(K^(m-3) * n log n) time with ``K <= n + 1`` candidates per stage (O(n log n) for
    m = 2 and m = 3, O(n^2 log n) for m = 4); O(n m) memory. Raises ``ValueError`` before any work
    when the number of enumerated prefixes could exceed ``max_evaluations``.

    Parameters are those of :func:`fit_sequential`, and ``order="all"``: also search every one of
    the ``m!`` orders (the first order, in lexicographic order of permutations, among equal-cost
    optima), ``m!`` times the work.

    >>> S = [[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6], [0.5, 0.1, 0.4]]
    >>> fit_exact(S, [0, 1, 2, 0], [[0, 1, 1], [1, 0, 1], [1, 1, 0]], order=[0, 1, 2]).thresholds
    (0.3, 0.2)
    """
    if isinstance(order, str):
        if order != "all":
            raise ValueError(f"order must be None, 'all' or a permutation of the classes, got {order!r}")
        s, labels, c, _, w = _prepare(scores, y, cost_matrix, None, sample_weight)
        m = s.shape[1]
        counts = sorted((int(np.unique(s[:, j]).shape[0]) + 1 for j in range(m)), reverse=True)
        total = math.factorial(m) * math.prod(counts[: max(m - 3, 0)])
        if total > max_evaluations:
            raise ValueError(
                f"fit_exact(order='all') would enumerate up to {total:,} threshold prefixes over "
                f"{math.factorial(m):,} orders, more than max_evaluations={max_evaluations:,}"
            )
        best_r = None
        for o in itertools.permutations(range(m)):
            r = _exact_for_order(s, labels, c, o, w, max_evaluations)
            if best_r is None or r.cost < best_r.cost:
                best_r = r
        assert best_r is not None
        return best_r
    s, labels, c, o, w = _prepare(scores, y, cost_matrix, order, sample_weight)
    return _exact_for_order(s, labels, c, o, w, max_evaluations)


def _prefix_bound(s: np.ndarray, o: tuple[int, ...]) -> int:
    """An upper bound on the threshold prefixes ``fit_exact`` enumerates (then sweeps) for order ``o``."""
    bound = 1
    for k in range(s.shape[1] - 3):
        bound *= int(np.unique(s[:, o[k]]).shape[0]) + 1
    return bound


def _exact_for_order(
    s: np.ndarray, labels: np.ndarray, c: np.ndarray, o: tuple[int, ...], w: np.ndarray, max_evaluations: int
) -> MulticlassThresholds:
    n, m = s.shape
    bound = _prefix_bound(s, o)
    if bound > max_evaluations:
        raise ValueError(
            f"fit_exact would enumerate up to {bound:,} threshold prefixes (m={m}, n={n}), more than "
            f"max_evaluations={max_evaluations:,}; use fit_sequential or raise max_evaluations"
        )
    last_take, last_pass = c[:, o[m - 2]], c[:, o[m - 1]]
    best_cost = math.inf
    best: tuple[float, ...] = ()

    def consider(total: float, vec: tuple[float, ...]) -> None:
        nonlocal best_cost, best
        if total < best_cost:  # strict: the first optimum found (lexicographically smallest) stays
            best_cost, best = total, vec

    def sweep(idx: np.ndarray, prefix: list[float], fixed: float) -> None:
        """Stages m-2 and m-1 given the earlier thresholds: raise t_{m-2} through its candidates,
        adding the events it releases to a StreamingThors that keeps the last stage's optimum."""
        a = o[m - 3]
        col = s[idx, a]
        srt = np.argsort(col, kind="stable")
        col_sorted, ids = col[srt], idx[srt]
        ww, yy = w[ids], labels[ids]
        take_suffix = np.concatenate([np.cumsum((ww * c[yy, a])[::-1])[::-1], [0.0]])
        base_prefix = np.concatenate([[0.0], np.cumsum(ww * last_pass[yy])])
        delta = _stakes(ww, last_take[yy], last_pass[yy], ids)
        neg_prefix = np.concatenate([[0.0], np.cumsum(np.where(delta < 0, delta, 0.0))])
        last_scores = s[ids, o[m - 2]]
        consider(fixed + float(take_suffix[0]), (*prefix, -math.inf, -math.inf))
        st = StreamingThors(fn_cost=1.0, fp_cost=1.0)
        start = 0
        ends = np.flatnonzero(np.append(col_sorted[1:] != col_sorted[:-1], True)) if ids.shape[0] else ids
        for e in ends:
            grp = slice(start, e + 1)
            rel = delta[grp] != 0
            if rel.any():
                d = delta[grp][rel]
                st.update_many(last_scores[grp][rel], d < 0, np.abs(d))
            start = e + 1
            if len(st):
                got, cost = st.get(), st.cost
                assert got is not None and cost is not None  # something is held
                t_last, c_last = got, cost
            else:
                t_last, c_last = -math.inf, 0.0
            # last stage cost = base + thors cost + sum of negative deltas (see _binary_stage)
            total = fixed + float(take_suffix[e + 1]) + float(base_prefix[e + 1]) + c_last + float(neg_prefix[e + 1])
            consider(total, (*prefix, float(col_sorted[e]), float(t_last)))

    def recurse(idx: np.ndarray, k: int, prefix: list[float], fixed: float) -> None:
        if k == m - 2:  # m == 2: the only stage is the binary one
            t, cst = _binary_stage(s[idx, o[k]], labels[idx], w[idx], last_take, last_pass, idx)
            consider(fixed + cst, (*prefix, t))
            return
        if k == m - 3:
            sweep(idx, prefix, fixed)
            return
        col = s[idx, o[k]]
        srt = np.argsort(col, kind="stable")
        col_sorted, idx_sorted = col[srt], idx[srt]
        take_w = w[idx_sorted] * c[labels[idx_sorted], o[k]]
        # suffix sums: cost of taking every event above position p
        suffix = np.concatenate([np.cumsum(take_w[::-1])[::-1], [0.0]])
        ends = np.flatnonzero(np.append(col_sorted[1:] != col_sorted[:-1], True)) if idx.shape[0] else idx
        # candidate -inf: everything here is taken
        recurse(idx_sorted[:0], k + 1, [*prefix, -math.inf], fixed + float(suffix[0]))
        for e in ends:
            recurse(idx_sorted[: e + 1], k + 1, [*prefix, float(col_sorted[e])], fixed + float(suffix[e + 1]))

    recurse(np.arange(n), 0, [], 0.0)
    th = tuple(float(t) for t in best)
    cost = float(np.sum(w * c[labels, _apply(s, o, th)]))
    return MulticlassThresholds(th, o, cost, "exact")
