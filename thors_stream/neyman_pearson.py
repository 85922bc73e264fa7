"""Neyman-Pearson mode: THORS thresholds whose true FPR and/or FNR stay below a bound, with high probability.

``thors_threshold(..., max_fpr=alpha, confidence=1 - delta)`` returns the cost-minimising
threshold among those whose *true* false-positive rate ``P(score > t | y = 0)`` is at most
``alpha`` with probability at least ``1 - delta`` over the validation data; ``max_fnr`` does the
same for the false-negative rate ``P(score <= t | y = 1)``. This is the umbrella algorithm of
Tong, Feng & Li (2018, "Neyman-Pearson classification algorithms and NP receiver operating
characteristics", Science Advances), extended to the FNR, to ties, and to a cost-minimising
choice inside the admissible set.

**Order statistics.** As in :mod:`thors_stream.bounds`: write ``G = F(t)`` for one class's
score CDF at ``t`` and ``k`` for the number of that class's ``n`` validation scores ``<= t``.
With ``U_(1) <= ... <= U_(n)`` the uniform order statistics of the class (``X_i = F^{-1}(U_i)``,
any ``F``, ties and atoms included) ``U_(k) <= G < U_(k+1)`` (``U_(0) = 0``, ``U_(n+1) = 1``), and
``P(U_(k) < p) = P(Bin(n, p) >= k)``. Write ``tail(k, n, alpha) = P(Bin(n, 1 - alpha) >= k)``.

* **FPR.** ``FPR(t) = 1 - G0 <= 1 - U_(k0)`` with ``k0 = #{negatives <= t}``. Let ``k*`` be the
  smallest ``k`` with ``tail(k, n0, alpha) = P(U_(k) < 1 - alpha) <= delta`` (the umbrella
  algorithm's rank: ``sum_{j >= k} C(n0, j) (1 - alpha)^j alpha^(n0 - j) <= delta``). On the event
  ``U_(k*) >= 1 - alpha`` (probability ``>= 1 - delta``) *every* threshold with ``k0 >= k*`` has
  ``FPR <= alpha``, because ``U_(k0) >= U_(k*)``. Admissible: ``count0(score <= t) >= k*``, i.e.
  ``t >= `` the ``k*``-th smallest negative score.
* **FNR.** ``FNR(t) = G1 < U_(k1 + 1)`` with ``k1 = #{positives <= t}``. ``P(U_(j) > alpha) =
  P(Bin(n1, alpha) < j) = tail(n1 - j + 1, n1, alpha)`` (swap ``U`` for ``1 - U``). So with ``k*``
  the rank above computed for ``n1``, on the event ``U_(n1 - k* + 1) <= alpha`` (probability
  ``>= 1 - delta``) every threshold with ``k1 <= n1 - k*`` has ``FNR <= alpha``. Admissible: at least
  ``k*`` positives score strictly above ``t``. ``-inf`` (everything positive, FNR 0) is always so.

Because each guarantee is one event that covers the whole admissible half-line at once, it
holds for whichever admissible threshold the data then select: choosing the cheapest one does
not void it (unlike the naive rule "empirical FPR <= alpha", whose true FPR exceeds ``alpha``
about half the time). With equal scores (ties) the counts above include every tied event, which
is exactly THORS's "ties move together" semantics, and the bound only gets more conservative.

**Both constraints.** The failure probability is split equally and in advance (union bound):
each constraint gets ``delta / 2``, so both hold together with probability ``>= confidence``.

**Too few events.** Even the largest order statistic only works when ``tail(n, n, alpha) =
(1 - alpha)^n <= delta``, i.e. ``n >= log(delta) / log(1 - alpha)`` (59 for alpha = delta = 0.05).
With fewer events of the constrained class :class:`NPInfeasibleError` (a ``ValueError``) says how
many are needed; for the FNR the only guaranteed threshold would be ``-inf`` (flag everything),
which is reported as an error rather than returned silently.

**Counts, not weights.** The guarantee is about events, so the constraints use plain event
counts even when ``sample_weight`` is given, and ``class_prior`` does not enter them; the cost
minimised inside the admissible set uses the weights and the prior as usual.

**Assumptions.** The constrained class's validation scores are i.i.d. draws from the
distribution new events of that class come from (for a ``StreamingThors`` window: no drift within
the window). The classifier must not have been trained on them.

Examples
--------
>>> min_class_size(0.05, 0.05)
59
>>> c = np_constraint(count0=100, count1=100, max_fpr=0.1, max_fnr=None, confidence=0.9)
>>> c.min_count0, round(c.fpr_violation, 4)
(95, 0.0576)

Streaming: the same threshold for the held events; ``default_threshold`` until enough are held.

>>> from thors_stream import StreamingThors
>>> st = StreamingThors(fn_cost=1, fp_cost=1, max_fpr=0.1, confidence=0.9, default_threshold=0.5)
>>> st.update(0.3, 0)
>>> st.predict_one(0.6)  # 1 negative held, 22 needed: default_threshold is used
True
>>> st.update_many([i / 40 for i in range(40)], [0] * 25 + [1, 0] * 5 + [1] * 5)
>>> st.get()  # 31 negatives; P(Bin(31, 0.9) >= 30) = 0.17 > 0.1, so all 31 must be at or below t
0.85
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_open_unit
from .costs import class_coefficients
from .result import ThresholdResult

__all__ = [
    "NPConstraint",
    "NPInfeasibleError",
    "check_np_params",
    "fpr_tail",
    "min_class_size",
    "min_rank",
    "np_constraint",
    "np_threshold_from_rows",
]

MAX_CLASS_SIZE = 2**53  # the most events of a class a summary counts exactly


class NPInfeasibleError(ValueError):
    """No threshold meets the Neyman-Pearson constraint(s) on the data held (a ``ValueError``)."""


def check_np_params(max_fpr: Any, max_fnr: Any, confidence: Any) -> tuple[float | None, float | None, float]:
    """Validate the Neyman-Pearson keywords; ``ValueError`` names the bad value. O(1).

    >>> check_np_params(0.1, None, 0.9)
    (0.1, None, 0.9)
    """
    conf = check_open_unit(confidence, "confidence")
    max_fpr = check_open_unit(max_fpr, "max_fpr", optional=True)
    max_fnr = check_open_unit(max_fnr, "max_fnr", optional=True)
    assert conf is not None  # (not optional)
    for name, cap in (("max_fpr", max_fpr), ("max_fnr", max_fnr)):
        if cap is not None and not _class_size_estimate(cap, 1.0 - conf) <= MAX_CLASS_SIZE:
            raise ValueError(f"{name}={cap!r} is too small at confidence={conf!r}: a threshold with that guarantee "
                             "needs more than 2**53 events of the class, more than a summary can count")
    return max_fpr, max_fnr, conf


def _class_size_estimate(alpha: float, delta: float) -> float:
    """``log(delta) / log(1 - alpha)`` (inf when ``alpha`` is too small for it to be finite)."""
    step = math.log1p(-alpha)
    return math.inf if step == 0.0 else math.log(delta) / step


def fpr_tail(k: int, n: int, alpha: float) -> float:
    """``P(Bin(n, 1 - alpha) >= k)``: the chance that the ``k``-th smallest of ``n`` uniforms is below ``1 - alpha``.

    The umbrella algorithm's violation probability for the rank-``k`` threshold. 1.0 for
    ``k <= 0``, 0.0 for ``k > n``. O(1): the regularised incomplete beta ``I_{1-alpha}(k, n-k+1)``;
    below ``alpha = 1e-3`` as ``1 - I_alpha(n-k+1, k)``, evaluated at ``alpha`` itself, since
    ``1 - alpha`` rounded to a float loses ``alpha``'s low digits (relative error up to
    ``2**-53 / alpha``: 1e-4 at ``alpha = 1e-12``). The first form is twice as fast.

    >>> round(fpr_tail(3, 3, 0.1), 6)  # 0.9 ** 3
    0.729
    """
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    from scipy import special  # lazily: importing thors_stream does not load scipy

    if alpha >= 1e-3:
        return float(special.betainc(k, n - k + 1, 1.0 - alpha))
    upper = getattr(special, "betaincc", None)  # SciPy >= 1.11
    if upper is None:  # pragma: no cover - older SciPy
        return float(1.0 - special.betainc(n - k + 1, k, alpha))
    return float(upper(n - k + 1, k, alpha))


def min_class_size(alpha: float, delta: float) -> int:
    """Smallest ``n`` for which a rank with ``fpr_tail(rank, n, alpha) <= delta`` exists.

    That is the smallest ``n`` with ``(1 - alpha)^n <= delta``: ``ceil(log(delta) / log(1 - alpha))``
    (checked against :func:`fpr_tail` so it agrees with :func:`min_rank` exactly). O(1).

    >>> min_class_size(0.1, 0.1), min_class_size(0.05, 0.05), min_class_size(0.01, 0.05)
    (22, 59, 299)
    """
    est = _class_size_estimate(alpha, delta)
    if not est <= MAX_CLASS_SIZE:
        raise ValueError(f"a cap of {alpha!r} at delta={delta!r} needs more than 2**53 events of the class")
    n = max(1, math.ceil(est))
    while fpr_tail(n, n, alpha) > delta:
        n += 1
    while n > 1 and fpr_tail(n - 1, n - 1, alpha) <= delta:
        n -= 1
    return n


def min_rank(n: int, alpha: float, delta: float) -> int | None:
    """Smallest ``k`` in ``1..n`` with ``fpr_tail(k, n, alpha) <= delta``, or ``None`` if there is none.

    O(log n) evaluations of :func:`fpr_tail` (bisection: the tail falls as ``k`` grows).

    >>> min_rank(100, 0.1, 0.1), min_rank(21, 0.1, 0.1), min_rank(22, 0.1, 0.1)
    (95, None, 22)
    """
    if n <= 0 or fpr_tail(n, n, alpha) > delta:
        return None
    lo, hi = 1, n  # invariant: tail(hi) <= delta; answer in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if fpr_tail(mid, n, alpha) <= delta:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class NPConstraint:
    """Which thresholds are admissible: event-count conditions on ``t``.

    ``t`` (``-inf`` or a held score) is admissible iff ``count0(score <= t) >= min_count0`` and
    ``count1(score <= t) <= max_count1``; both counts grow with ``t``, so the admissible set is an
    interval of candidates.

    Attributes
    ----------
    max_fpr, max_fnr, confidence
        The request (``None`` for an unconstrained rate).
    delta_each
        Failure probability given to each constraint: ``1 - confidence``, halved when both are set.
    count0, count1
        Event counts of each class the constraint was computed for.
    min_count0
        The umbrella rank ``k*`` for the negatives (0 without ``max_fpr``).
    max_count1
        ``count1 - k*`` for the positives (``count1`` without ``max_fnr``).
    fpr_violation, fnr_violation
        Bound on ``P(true rate > max_*)`` for every admissible threshold at once (``<= delta_each``;
        0.0 for an unconstrained rate).
    """

    max_fpr: float | None
    max_fnr: float | None
    confidence: float
    delta_each: float
    count0: int
    count1: int
    min_count0: int
    max_count1: int
    fpr_violation: float
    fnr_violation: float

    def admissible(self, ck0: Any, ck1: Any) -> np.ndarray:
        """Boolean mask over candidates with ``ck0``/``ck1`` events of each class at or below them. O(m)."""
        return (np.asarray(ck0) >= self.min_count0) & (np.asarray(ck1) <= self.max_count1)


def _too_few(name: str, cls: str, n: int, alpha: float, delta: float, both: bool) -> NPInfeasibleError:
    need = min_class_size(alpha, delta)
    split = " (1 - confidence, halved because max_fpr and max_fnr are both set)" if both else " (1 - confidence)"
    extra = "; the only threshold with that guarantee is -inf (flag every event)" if name == "max_fnr" else ""
    return NPInfeasibleError(
        f"{name}={alpha:g} needs at least {need} {cls} events for P(true rate > {alpha:g}) <= delta = {delta:g}"
        f"{split}, since n >= log(delta) / log(1 - {name}) = {math.log(delta) / math.log1p(-alpha):.2f}; "
        f"got {n}{extra}. Collect more {cls} events, or raise {name} or lower confidence"
    )


def np_constraint(
    count0: int, count1: int, max_fpr: float | None, max_fnr: float | None, confidence: float
) -> NPConstraint:
    """The admissible count ranges for ``count0`` negatives and ``count1`` positives.

    Raises :class:`NPInfeasibleError` when a constrained class has fewer events than
    :func:`min_class_size` requires (the message names the count needed). Arguments are
    assumed valid (see :func:`check_np_params`). O(log n).

    With 40 positives, FNR <= 0.1 at 90%: ``P(Bin(40, 0.1) <= 1) = 0.080 <= 0.1 < P(<= 2) = 0.223``,
    so at most one positive may fall at or below the threshold.

    >>> c = np_constraint(0, 40, None, 0.1, 0.9)
    >>> c.min_count0, c.max_count1
    (0, 1)
    """
    both = max_fpr is not None and max_fnr is not None
    delta = (1.0 - confidence) / (2.0 if both else 1.0)
    k0, v0 = 0, 0.0
    if max_fpr is not None:
        k = min_rank(count0, max_fpr, delta)
        if k is None:
            raise _too_few("max_fpr", "negative", count0, max_fpr, delta, both)
        k0, v0 = k, fpr_tail(k, count0, max_fpr)
    m1, v1 = count1, 0.0
    if max_fnr is not None:
        k = min_rank(count1, max_fnr, delta)
        if k is None:
            raise _too_few("max_fnr", "positive", count1, max_fnr, delta, both)
        m1, v1 = count1 - k, fpr_tail(k, count1, max_fnr)
    return NPConstraint(max_fpr, max_fnr, confidence, delta, count0, count1, k0, m1, v0, v1)


def np_threshold_from_rows(
    keys: np.ndarray,
    w1: np.ndarray,
    w0: np.ndarray,
    c1: np.ndarray,
    c0: np.ndarray,
    fn_cost: float,
    fp_cost: float,
    class_prior: float | None,
    max_fpr: float | None,
    max_fnr: float | None,
    confidence: float,
) -> ThresholdResult:
    """The cheapest admissible threshold, from per-distinct-score rows in ascending key order.

    The rows are what ``StreamingThors.held()`` returns (weights and event counts of each class
    per distinct score). The candidates are ``-inf`` and every key; among admissible ones the
    minimum-cost one is returned, the smallest on equal costs (THORS's rule). O(m + log n) for
    m distinct scores. Raises :class:`NPInfeasibleError` when too few events or when no
    candidate meets every constraint.
    """
    cw1 = np.concatenate([[0.0], np.cumsum(w1)])
    cw0 = np.concatenate([[0.0], np.cumsum(w0)])
    cc1 = np.concatenate([[0], np.cumsum(np.rint(c1).astype(np.int64))])
    cc0 = np.concatenate([[0], np.cumsum(np.rint(c0).astype(np.int64))])
    count1, count0 = int(cc1[-1]), int(cc0[-1])
    con = np_constraint(count0, count1, max_fpr, max_fnr, confidence)
    n1, n0 = float(cw1[-1]), float(cw0[-1])
    a, b = class_coefficients(fn_cost, fp_cost, n0, n1, class_prior)
    # compared: prefix sums of each score's a * w1 - b * w0 (the tree's quantity; -inf's is
    # 0), not the absolute costs b * n0 + that, which can round where the prefix sums are exact
    prefix = np.concatenate([[0.0], np.cumsum(a * np.asarray(w1, np.float64) - b * np.asarray(w0, np.float64))])
    ok = con.admissible(cc0, cc1)
    if not ok.any():
        lo = int(np.argmax(cc0 >= con.min_count0))
        hi = int(np.flatnonzero(cc1 <= con.max_count1)[-1])
        t_lo, t_hi = float(keys[lo - 1]), (float(keys[hi - 1]) if hi > 0 else -math.inf)
        raise NPInfeasibleError(
            f"no threshold meets both constraints at confidence {confidence:g}: max_fpr={max_fpr:g} needs "
            f"threshold >= {t_lo!r} (at least {con.min_count0} of the {count0} negatives at or below it), "
            f"max_fnr={max_fnr:g} needs threshold <= {t_hi!r} (at least {count1 - con.max_count1} of the "
            f"{count1} positives above it). Relax max_fpr, max_fnr or confidence, or collect more events"
        )
    j = int(np.argmin(np.where(ok, prefix, np.inf)))
    thr = float(keys[j - 1]) if j > 0 else -math.inf
    return ThresholdResult(
        threshold=thr, cost=float(a * cw1[j] + b * (n0 - cw0[j])), n0=n0, n1=n1, k0=float(cw0[j]), k1=float(cw1[j]),
        count0=count0, count1=count1, count_k0=int(cc0[j]), count_k1=int(cc1[j]), fn_cost=fn_cost,
        fp_cost=fp_cost, class_prior=class_prior, max_fpr=max_fpr, max_fnr=max_fnr, np_confidence=confidence,
    )
