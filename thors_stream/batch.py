"""Exact THORS threshold for arrays of labelled scores (numpy, O(n log n))."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._validation import (
    MAX_WEIGHTED_COST,
    MIN_WEIGHTED_COST,
    _product_error,
    check_class_prior,
    check_labels,
    check_scores,
    check_weighted_costs,
    check_weights,
)
from .costs import class_coefficients, resolve_costs
from .margin import cost_margins, per_event_costs
from .neyman_pearson import check_np_params, np_threshold_from_rows
from .result import ThresholdResult
from .rows import rows_by_score

__all__ = ["cost_curve", "thors_threshold"]  # class_coefficients, rows_by_score: importable here too


def thors_threshold(
    scores: Any,
    y: Any,
    *,
    fn_cost: float | npt.ArrayLike | None = None,
    fp_cost: float | npt.ArrayLike | None = None,
    cost_matrix: Sequence[Sequence[float]] | None = None,
    sample_weight: Any = None,
    class_prior: float | None = None,
    max_fpr: float | None = None,
    max_fnr: float | None = None,
    confidence: float = 0.95,
    decide_on: str = "score",
) -> ThresholdResult:
    """The THORS threshold: the order statistic of ``scores`` minimising total cost.

    An event is predicted positive iff ``score > threshold``. The candidates are
    every distinct score and ``-inf``; equal scores always fall on the same side;
    among equal-cost candidates the smallest is returned. The empirical cost at
    ``t`` is ``fn_cost * W1(score <= t) + fp_cost * W0(score > t)`` with ``W1``,
    ``W0`` the weighted counts of positives and negatives (classes rescaled to
    ``class_prior`` when given, see :func:`class_coefficients`).

    Exactness: sums are exact when weights and costs are integers or dyadic
    rationals and totals stay below 2**53, so the result is the brute-force
    optimum. With arbitrary float weights each cost carries a rounding error of
    at most ``n * eps * (fn_cost * W1 + fp_cost * W0)``; candidates closer than
    that may be interchanged (no other tolerance is applied).

    Complexity: O(n log n) time (one sort), O(n) memory. Without weights only the
    scores are sorted (``np.sort``) and the positives located by binary search;
    with weights one ``np.argsort`` is used.

    Parameters
    ----------
    scores
        1-d array of finite classifier scores (larger means "more positive").
    y
        Labels, bools or 0/1, same length.
    fn_cost, fp_cost
        Cost of a false negative / false positive (both > 0), each a number or an array
        of one cost per event (e.g. a missed fraud costs its amount: ``fn_cost=amounts``).
        Or ``cost_matrix`` ``[[C00, C01], [C10, C11]]`` indexed ``[y_true][y_pred]``.
        Per-event costs are sample weights: a positive weighs its ``fn_cost``, a negative
        its ``fp_cost``, and the unit costs are 1, so ``cost`` is the money lost.
    sample_weight
        Optional per-event weights (finite, > 0), e.g. example-dependent costs.
    class_prior
        Optional population share of positives, to correct a validation set whose
        class mix differs from the population's.
    max_fpr, max_fnr, confidence
        Neyman-Pearson mode (see :mod:`thors_stream.neyman_pearson`): return the
        minimum-cost threshold among those whose *true* FPR (resp. FNR) is at most
        ``max_fpr`` (``max_fnr``) with probability at least ``confidence`` over the
        validation data (umbrella algorithm of Tong, Feng & Li 2018). The guarantee
        holds for the threshold returned, chosen from the data, because it covers
        every admissible threshold at once. With both set each gets half of
        ``1 - confidence``. The constraints use event counts (not weights or the
        prior); the cost uses weights and prior as usual. O(n log n) as well.
    decide_on
        ``"score"`` (default): threshold the scores. ``"margin"``: ``scores`` are
        probabilities in ``[0, 1]`` and the threshold is chosen on each event's cost margin
        ``logit(p) + log(fn_cost / fp_cost)`` (see :mod:`thors_stream.margin`), where
        ``0`` is the per-event Bayes rule; decide new events with
        ``result.predict(p, fn_cost=..., fp_cost=...)``. With per-event costs the margin
        uses what each event's amount says, which one cut on the probability cannot.

    Raises
    ------
    ValueError
        Empty input, non-finite scores, labels other than 0/1, bad weights or costs,
        mismatched lengths, ``max_fpr``/``max_fnr``/``confidence`` outside (0, 1).
        In Neyman-Pearson mode, :class:`~thors_stream.neyman_pearson.NPInfeasibleError`
        (a ``ValueError``) when a constrained class has too few events (the message
        gives the number needed, ``log(delta) / log(1 - alpha)``) or no threshold
        meets both constraints.

    Examples
    --------
    >>> r = thors_threshold([0.2, 0.9, 0.4, 0.7, 0.4], [0, 1, 0, 1, 1], fn_cost=5, fp_cost=1)
    >>> r.threshold, r.cost
    (0.2, 1.0)
    >>> thors_threshold([0.2, 0.9], [1, 1], fn_cost=1, fp_cost=1).threshold
    -inf

    Neyman-Pearson mode. For FPR <= 10% with 90% confidence, 30 negatives are only just
    enough (22 is the minimum) and the rank needed is 30: every negative at or below the
    threshold (``P(Bin(30, 0.9) >= 29) = 0.18 > 0.1``). Cost is minimised above that.

    >>> s = [i / 40 for i in range(40)]
    >>> y = [0] * 25 + [1, 0] * 5 + [1] * 5
    >>> thors_threshold(s, y, fn_cost=1, fp_cost=1).threshold
    0.6
    >>> r = thors_threshold(s, y, fn_cost=1, fp_cost=1, max_fpr=0.1, confidence=0.9)
    >>> r.threshold, r.cost, r.count_k0
    (0.85, 5.0, 30)

    Per-event costs, decided on the cost margin: a missed fraud costs its amount, a review 5.

    >>> p = [0.02, 0.30, 0.01, 0.60, 0.05]
    >>> r = thors_threshold(p, [1, 0, 0, 1, 0], fn_cost=[900.0, 40.0, 12.0, 80.0, 30.0], fp_cost=5.0,
    ...                     decide_on="margin")
    >>> round(r.threshold, 3), r.cost, r.decide_on
    (1.232, 0.0, 'margin')
    """
    if decide_on not in ("score", "margin"):
        raise ValueError(f"decide_on must be 'score' or 'margin', got {decide_on!r}")
    if decide_on == "margin" or any(c is not None and np.ndim(c) > 0 for c in (fn_cost, fp_cost)):
        return _per_event(scores, y, fn_cost, fp_cost, cost_matrix, sample_weight, decide_on,
                          class_prior=class_prior, max_fpr=max_fpr, max_fnr=max_fnr, confidence=confidence)
    costs = resolve_costs(fn_cost, fp_cost, cost_matrix)  # type: ignore[arg-type]  # (numbers here: ndim 0)
    prior = check_class_prior(class_prior)
    max_fpr, max_fnr, conf = check_np_params(max_fpr, max_fnr, confidence)
    s = check_scores(scores)
    n = s.shape[0]
    if n == 0:
        raise ValueError("scores is empty: no threshold can be chosen from no events")
    labels = check_labels(y, n)
    w = check_weights(sample_weight, n)
    if w is not None:
        check_weighted_costs(w, costs.fn_cost, costs.fp_cost, "sample_weight")
    if max_fpr is not None or max_fnr is not None:
        return _neyman_pearson(s, labels, w, costs.fn_cost, costs.fp_cost, prior, max_fpr, max_fnr, conf)
    if w is None:
        return _unweighted(s, labels, costs.fn_cost, costs.fp_cost, prior)
    return _weighted(s, labels, w, costs.fn_cost, costs.fp_cost, prior)


def _per_event(scores: Any, y: Any, fn_cost: Any, fp_cost: Any, cost_matrix: Any, sample_weight: Any,
               decide_on: str, **kw: Any) -> ThresholdResult:
    """Per-event costs (or the margin mode): one weighted THORS at unit costs, on the scores
    or on the cost margins. Every input is checked before anything is computed."""
    if cost_matrix is not None:
        raise ValueError("per-event costs and decide_on='margin' take fn_cost= and fp_cost=, not cost_matrix=")
    if fn_cost is None or fp_cost is None:
        raise ValueError("give both fn_cost and fp_cost (numbers or one per event)")
    if decide_on == "margin":
        keys = cost_margins(scores, fn_cost, fp_cost)  # checks probabilities and costs
        n = keys.shape[0]
    else:
        keys = check_scores(scores)
        n = keys.shape[0]
    labels = check_labels(y, n)
    fn = per_event_costs(fn_cost, n, "fn_cost")
    fp = per_event_costs(fp_cost, n, "fp_cost")
    w = np.where(labels, fn, fp)
    sw = check_weights(sample_weight, n)
    if sw is not None:
        with np.errstate(over="ignore", under="ignore"):
            prod = w * sw
        bad = ~((prod >= MIN_WEIGHTED_COST) & (prod <= MAX_WEIGHTED_COST))
        if bad.any():  # named by the values given: the weight and the event's own cost
            i = int(np.flatnonzero(bad)[0])
            raise _product_error("sample_weight", float(sw[i]), float(w[i]), f" at position {i}")
        w = prod
        check_weights(w, n, "sample_weight times the event's cost")
    r = thors_threshold(keys, labels, fn_cost=1.0, fp_cost=1.0, sample_weight=w, **kw)
    return dataclasses.replace(r, decide_on=decide_on)


def _pick(gain: np.ndarray) -> int:
    """Index of the first (smallest-threshold) minimum of ``gain`` — each candidate's cost
    less ``b * n0``, i.e. its prefix sum of ``a * w1 - b * w0`` — or -1 for ``-inf``, whose
    gain is 0 (a candidate must be strictly below it). Compared without ``b * n0``: the
    absolute costs can round where these sums are exact (2**54 + 4 vs 2**54 + 2)."""
    j = int(np.argmin(gain)) if gain.shape[0] else -1
    if j < 0 or not gain[j] < 0.0:
        return -1
    return j


def _unweighted(s: np.ndarray, y: np.ndarray, fn: float, fp: float, prior: float | None) -> ThresholdResult:
    # The cost-minimising prefix ends right before a key holding a positive, or at
    # the last key: only those candidates are evaluated (see DESIGN.md §1).
    n = s.shape[0]
    ss = np.sort(s)
    pos = np.sort(s[y])
    n1 = pos.shape[0]
    n0 = n - n1
    a, b = class_coefficients(fn, fp, float(n0), float(n1), prior)
    # number of scores strictly below each positive, and positives strictly below it
    below = np.searchsorted(ss, pos, side="left")
    start = np.ones(n1, dtype=bool)
    start[1:] = pos[1:] != pos[:-1]
    first = np.flatnonzero(start)  # index of a run's first positive = positives below it
    cand_total = np.concatenate([below[first], [n]])
    cand_k1 = np.concatenate([first, [n1]])
    keep = cand_total > 0  # a prefix of length 0 is the -inf candidate itself
    cand_total, cand_k1 = cand_total[keep], cand_k1[keep]
    cand_k0 = cand_total - cand_k1
    j = _pick(a * cand_k1 - b * cand_k0)
    if j < 0:
        thr, k0, k1, c = -np.inf, 0, 0, b * n0
    else:
        k0, k1 = int(cand_k0[j]), int(cand_k1[j])
        thr, c = float(ss[cand_total[j] - 1]), float(a * k1 + b * (n0 - k0))
    return ThresholdResult(
        threshold=thr, cost=c, n0=float(n0), n1=float(n1), k0=float(k0), k1=float(k1),
        count0=n0, count1=n1, count_k0=k0, count_k1=k1, fn_cost=fn, fp_cost=fp, class_prior=prior,
    )


def _weighted(
    s: np.ndarray, y: np.ndarray, w: np.ndarray, fn: float, fp: float, prior: float | None
) -> ThresholdResult:
    order = np.argsort(s)
    ss, yy, ww = s[order], y[order], w[order]
    w1 = np.where(yy, ww, 0.0)
    w0 = ww - w1
    cw1 = np.cumsum(w1)
    cw0 = np.cumsum(w0)
    cc1 = np.cumsum(yy)
    ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))
    W1, W0 = cw1[ends], cw0[ends]
    n1, n0 = float(cw1[-1]), float(cw0[-1])
    a, b = class_coefficients(fn, fp, n0, n1, prior)
    # prefix sums of each score's a * w1 - b * w0 (the tree's quantity; see _pick)
    starts = np.concatenate([[0], ends[:-1] + 1])
    prefix = np.cumsum(a * np.add.reduceat(w1, starts) - b * np.add.reduceat(w0, starts))
    count1 = int(cc1[-1])
    count0 = s.shape[0] - count1
    j = _pick(prefix)
    if j < 0:  # no score beats -inf (flag everything)
        return ThresholdResult(-np.inf, b * n0, n0, n1, 0.0, 0.0, count0, count1, 0, 0, fn, fp, prior)
    e = int(ends[j])
    ck1 = int(cc1[e])
    return ThresholdResult(
        threshold=float(ss[e]), cost=float(a * W1[j] + b * (n0 - W0[j])), n0=n0, n1=n1, k0=float(W0[j]),
        k1=float(W1[j]),
        count0=count0, count1=count1, count_k0=e + 1 - ck1, count_k1=ck1, fn_cost=fn, fp_cost=fp,
        class_prior=prior,
    )


def _neyman_pearson(
    s: np.ndarray, y: np.ndarray, w: np.ndarray | None, fn: float, fp: float, prior: float | None,
    max_fpr: float | None, max_fnr: float | None, conf: float,
) -> ThresholdResult:
    """Aggregate per distinct score, then pick the cheapest admissible candidate (O(n log n))."""
    keys, w1, w0, c1, c0 = rows_by_score(s, y, w)
    return np_threshold_from_rows(keys, w1, w0, c1, c0, fn, fp, prior, max_fpr, max_fnr, conf)


def cost_curve(
    scores: Any,
    y: Any,
    *,
    fn_cost: float | None = None,
    fp_cost: float | None = None,
    cost_matrix: Sequence[Sequence[float]] | None = None,
    sample_weight: Any = None,
    class_prior: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate threshold (``-inf`` then the distinct scores, ascending) and its cost.

    The cost is the one :func:`thors_threshold` minimises; its argmin (first one) is
    the THORS threshold whenever these absolute costs are representable (``thors_threshold``
    itself needs only the prefix sums of ``fn_cost * w1 - fp_cost * w0`` to be). O(n log n).

    Examples
    --------
    >>> t, c = cost_curve([0.2, 0.9, 0.4], [0, 1, 0], fn_cost=5, fp_cost=1)
    >>> t.tolist(), c.tolist()
    ([-inf, 0.2, 0.4, 0.9], [2.0, 1.0, 0.0, 5.0])
    """
    costs = resolve_costs(fn_cost, fp_cost, cost_matrix)
    prior = check_class_prior(class_prior)
    s = check_scores(scores)
    n = s.shape[0]
    if n == 0:
        raise ValueError("scores is empty: there is no cost curve")
    labels = check_labels(y, n)
    w = check_weights(sample_weight, n)
    if w is not None:
        check_weighted_costs(w, costs.fn_cost, costs.fp_cost, "sample_weight")
    w = np.ones(n) if w is None else w
    order = np.argsort(s)
    ss, yy, ww = s[order], labels[order], w[order]
    w1 = np.where(yy, ww, 0.0)
    cw1, cw0 = np.cumsum(w1), np.cumsum(ww - w1)
    ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))
    n1, n0 = float(cw1[-1]), float(cw0[-1])
    a, b = class_coefficients(costs.fn_cost, costs.fp_cost, n0, n1, prior)
    thr = np.concatenate([[-np.inf], ss[ends]])
    cost = np.concatenate([[b * n0], a * cw1[ends] + b * (n0 - cw0[ends])])
    return thr, cost
