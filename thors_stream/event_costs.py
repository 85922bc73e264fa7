"""Example-dependent costs: per-event FN and FP costs as one weighted THORS.

When a missed positive ``i`` costs ``fn_i`` (say the fraud's amount) and a false alarm on
a negative ``j`` costs ``fp_j`` (say a review fee), the total cost of a threshold ``t`` is

    sum over positives with score <= t of fn_i  +  sum over negatives with score > t of fp_j.

Only a positive's FN cost and a negative's FP cost can ever be paid, so this is exactly
the THORS cost with sample weights ``w_i = fn_i`` (positives), ``w_j = fp_j`` (negatives)
and ``fn_cost = fp_cost = 1``. :func:`event_cost_weights` builds those weights;
:func:`thors_event_costs` runs the search.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_scores, real_number
from .batch import thors_threshold
from .result import ThresholdResult

__all__ = ["event_cost_weights", "thors_event_costs"]


def _costs(values: Any, n: int, name: str) -> np.ndarray:
    """``values`` (a number or one per event) as float64 by the package's number rule
    (Fractions, big ints and numpy scalars are numbers; bools and strings are not)."""
    a = np.full(n, real_number(values, name)) if np.ndim(values) == 0 else check_scores(values, name)
    if a.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have one value per event ({n}), got shape {a.shape}")
    if not (a > 0).all():
        raise ValueError(f"{name} must be finite and > 0")
    return a


def event_cost_weights(y: Any, fn_costs: Any, fp_costs: Any, sample_weight: Any = None) -> np.ndarray:
    """Sample weights turning per-event costs into a THORS with ``fn_cost = fp_cost = 1``.

    ``w_i = fn_costs[i]`` for a positive, ``fp_costs[i]`` for a negative, times
    ``sample_weight[i]`` when given. ``fn_costs``/``fp_costs`` are arrays (one value per
    event, finite, > 0; a negative's FN cost and a positive's FP cost are ignored) or
    scalars. O(n).

    >>> event_cost_weights([1, 0, 1], fn_costs=[120.0, 7.0, 35.5], fp_costs=3.0).tolist()
    [120.0, 3.0, 35.5]
    """
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError("y must be 1-d")
    if labels.dtype != bool:
        if labels.dtype.kind not in "iuf" or not np.isin(labels, (0, 1)).all():
            raise ValueError("labels must be 0/1 or bool")
        labels = labels == 1
    n = labels.shape[0]
    w = np.where(labels, _costs(fn_costs, n, "fn_costs"), _costs(fp_costs, n, "fp_costs"))
    if sample_weight is not None:
        w = w * _costs(sample_weight, n, "sample_weight")
    return w


def thors_event_costs(scores: Any, y: Any, fn_costs: Any, fp_costs: Any, *, sample_weight: Any = None,
                      **kw: Any) -> ThresholdResult:
    """The THORS threshold under per-event costs: the threshold minimising
    ``sum(fn_i over missed positives) + sum(fp_j over false alarms)`` exactly.

    Same as ``thors_threshold(scores, y, fn_cost=1, fp_cost=1,
    sample_weight=event_cost_weights(y, fn_costs, fp_costs, sample_weight))``; further
    keywords (``class_prior``...) are passed on. The result's ``cost`` is that total and its
    ``n1``/``n0`` the total FN / FP cost at stake. O(n log n).

    >>> r = thors_event_costs([0.1, 0.3, 0.6, 0.8], [1, 0, 0, 1], fn_costs=[50, 1, 1, 80], fp_costs=3)
    >>> r.threshold, r.cost
    (-inf, 6.0)
    """
    w = event_cost_weights(y, fn_costs, fp_costs, sample_weight)
    return thors_threshold(scores, y, fn_cost=1.0, fp_cost=1.0, sample_weight=w, **kw)
