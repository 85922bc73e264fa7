"""The cost margin: deciding in money when each event has its own costs.

When a missed positive costs ``fn_i`` (a fraud's amount) and a false alarm costs ``fp_i``
(a review fee), both known when the decision is made, the Bayes rule for a calibrated
probability ``p_i`` flags the event iff ``p_i * fn_i > (1 - p_i) * fp_i``, that is iff its
*cost margin*

    m_i = logit(p_i) + log(fn_i / fp_i)

is above ``0``. One cut on ``p`` cannot do this (the cut that is right for a 5,000 payment is
wrong for a 5 one); one cut on ``m`` can. THORS chooses that cut ``t`` from labelled events:
the candidates are the held margins, each positive weighs its ``fn_i``, each negative its
``fp_i``, and the costs are 1, so the cost THORS minimises is the money actually lost on the
labelled events. ``t = 0`` is the per-event Bayes rule (the natural value before any label);
a model whose log-odds are off by a constant (miscalibrated) is corrected exactly by a
``t != 0``. A well-calibrated model gains little over the Bayes rule.

**The clipping rule.** Probabilities are clipped to ``[PROBA_CLIP, 1 - PROBA_CLIP]``
(``PROBA_CLIP = 2**-40``, about ``9.1e-13``; both ends are exact in float64, so the rule is
symmetric) before the logit, so a model that answers exactly 0 or 1 still gives a finite margin:
``|logit(p)| <= 27.73``. Two events whose probabilities are both clipped at the
same end and whose costs are equal have equal margins (a tie).

:func:`cost_margin` and :func:`cost_margins` compute margins, :func:`margin_weight` the
weight of a labelled event, and :class:`MarginThors` runs a streaming loop on them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _show, real_number

__all__ = ["PROBA_CLIP", "cost_margin", "cost_margins", "margin_weight", "per_event_costs"]

PROBA_CLIP = 2.0**-40
"""Probabilities are clipped to ``[PROBA_CLIP, 1 - PROBA_CLIP]`` before the logit of a margin."""

_LO = PROBA_CLIP
_HI = 1.0 - PROBA_CLIP
# the cost ratio's log is taken of the ratio itself when it is a normal float (one rounding, so
# equal ratios give equal margins: 2 / 1 and 200 / 100 tie), else of each cost (a ratio beyond
# 2**±1022: costs lie in [2**-960, 2**960])
_NORMAL_MIN = 2.0**-1022
_NORMAL_MAX = float(np.finfo(np.float64).max)


def _cost(value: Any, name: str, where: str) -> float:
    c = real_number(value, name, where)
    if not MIN_WEIGHTED_COST <= c <= MAX_WEIGHTED_COST:
        raise ValueError(f"{name} must be > 0 (between 2**-960 and 2**960), got {_show(value)}{where}")
    return c


def _proba(value: Any, where: str) -> float:
    p = real_number(value, "probability", where)
    outside = not 0.0 <= p <= 1.0
    if not outside and (p == 0.0 or p == 1.0) and value.__class__ not in (float, int, bool):
        # a Decimal, Fraction or long double just outside [0, 1] rounds onto its ends: compare it as given
        try:
            outside = bool(value < 0 or value > 1)
        except TypeError:
            pass
    if outside:
        raise ValueError(f"probability must lie in [0, 1], got {_show(value)}{where}")
    return p


def cost_margin(p: Any, fn_cost: Any, fp_cost: Any, *, where: str = "") -> float:
    """The cost margin ``logit(p) + log(fn_cost / fp_cost)`` of one event (``p`` clipped to
    ``[PROBA_CLIP, 1 - PROBA_CLIP]``).

    Flagging the event iff its margin is ``> 0`` is the per-event Bayes rule
    ``p * fn_cost > (1 - p) * fp_cost``. ``p`` must be a real number in ``[0, 1]``, the costs
    real numbers in ``[2**-960, 2**960]``; anything else raises ``ValueError`` (``TypeError``
    for a non-number) naming the value, with ``where`` (e.g. ``" (event 'tx-9')"``) appended. O(1).

    >>> round(cost_margin(0.01, fn_cost=500.0, fp_cost=5.0), 4)   # 1% fraud on a 500 payment: flag
    0.0101
    >>> cost_margin(0.5, 1, 1)
    0.0
    >>> cost_margin(1.5, 10, 1)
    Traceback (most recent call last):
    ...
    ValueError: probability must lie in [0, 1], got 1.5
    """
    q = _proba(p, where)
    fn = _cost(fn_cost, "fn_cost", where)
    fp = _cost(fp_cost, "fp_cost", where)
    q = _LO if q < _LO else _HI if q > _HI else q
    r = fn / fp
    ratio_log = math.log(r) if _NORMAL_MIN <= r <= _NORMAL_MAX else math.log(fn) - math.log(fp)
    return math.log(q) - math.log1p(-q) + ratio_log


def margin_weight(y: bool, fn_cost: float, fp_cost: float) -> float:
    """The weight a labelled event carries on the margin scale: ``fn_cost`` for a positive
    (what missing it costs), ``fp_cost`` for a negative (what flagging it costs). O(1).

    >>> margin_weight(True, 250.0, 5.0), margin_weight(False, 250.0, 5.0)
    (250.0, 5.0)
    """
    return fn_cost if y else fp_cost


def per_event_costs(values: Any, n: int, name: str) -> np.ndarray:
    """``values`` (a number, or one per event) as a float64 array of ``n`` costs, each in
    ``[2**-960, 2**960]``; a bad one raises naming its position and value. O(n).

    >>> per_event_costs(5, 3, "fp_cost").tolist()
    [5.0, 5.0, 5.0]
    >>> per_event_costs([2.0, -1.0], 2, "fn_cost")
    Traceback (most recent call last):
    ...
    ValueError: fn_cost must be > 0 (between 2**-960 and 2**960), got -1.0 at position 1
    """
    from ._validation import check_scores

    if np.ndim(values) == 0:
        return np.full(n, _cost(values, name, ""))
    a = check_scores(values, name)
    if a.shape != (n,):
        raise ValueError(f"{name} must be a number or have one value per event ({n}), got shape {a.shape}")
    bad = ~((a >= MIN_WEIGHTED_COST) & (a <= MAX_WEIGHTED_COST))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be > 0 (between 2**-960 and 2**960), got {a[i].item()!r} at position {i}")
    return a


def cost_margins(p: Any, fn_cost: Any, fp_cost: Any) -> np.ndarray:
    """:func:`cost_margin` for arrays: ``p`` one probability per event, each cost a number or
    one per event. A probability outside ``[0, 1]``, a non-finite value or a cost outside
    ``[2**-960, 2**960]`` raises ``ValueError`` naming its position and value. O(n).

    >>> cost_margins([0.01, 0.2, 1.0], fn_cost=[500.0, 5.0, 5.0], fp_cost=5.0).round(3).tolist()
    [0.01, -1.386, 27.726]
    """
    from ._validation import check_scores

    q = check_scores(p, "probabilities")
    bad = ~((q >= 0.0) & (q <= 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"probabilities must lie in [0, 1], got {q[i].item()!r} at position {i}")
    n = q.shape[0]
    fn = per_event_costs(fn_cost, n, "fn_cost")
    fp = per_event_costs(fp_cost, n, "fp_cost")
    q = np.clip(q, _LO, _HI)
    with np.errstate(over="ignore", under="ignore"):
        r = fn / fp
    far = ~((r >= _NORMAL_MIN) & (r <= _NORMAL_MAX))
    if far.any():  # (rare: a ratio beyond 2**±1022)
        r[far] = 1.0
        ratio_log = np.log(r)
        ratio_log[far] = np.log(fn[far]) - np.log(fp[far])
    else:
        ratio_log = np.log(r)
    out: np.ndarray = np.log(q) - np.log1p(-q) + ratio_log
    return out
