"""ThresholdResult: a THORS threshold with its cost, error rates and support on the data it was chosen from."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .bounds import ThresholdBounds

__all__ = ["DEFAULT_MIN_PER_CLASS", "ThresholdResult"]

DEFAULT_MIN_PER_CLASS = 30
"""Fewest events per class for a threshold to be called supported (``ThresholdResult.is_supported``).

Justified by the bounds (:mod:`thors_stream.bounds`, hybrid band, confidence 0.95): with ``n``
events in a class and *no* error among them, the valid upper bound on that class's true
error rate is 0.61 at n = 5, 0.48 at n = 8, 0.28 at n = 20, 0.21 at n = 30 and 0.08 at
n = 100. Below about 30 the bound says little more than "better than a coin flip"
whatever the data show, so the threshold is not supported by evidence.
"""


@dataclass(frozen=True)
class ThresholdResult:
    """A THORS threshold and what it does on the data it was chosen from.

    An event is predicted positive iff ``score > threshold``; ``threshold = -inf``
    means "predict every event positive". All weighted quantities use the sample
    weights but not ``class_prior``; only ``cost`` (and the choice of threshold)
    applies the prior reweighting.

    Attributes
    ----------
    threshold
        The smallest observed score (or ``-inf``) minimising the empirical cost.
    cost
        Empirical total cost at ``threshold``: ``fn_cost * k1 + fp_cost * (n0 - k0)``,
        with each class rescaled to the population mix when ``class_prior`` is set.
    n0, n1
        Weighted totals of negatives and positives.
    k0, k1
        Weighted negatives and positives with ``score <= threshold`` (predicted negative).
    count0, count1, count_k0, count_k1
        The same four numbers as plain event counts (equal to the weighted ones
        when every weight is 1); the error-rate bounds use these.
    fn_cost, fp_cost, class_prior
        The costs and prior the threshold was chosen for.
    max_fpr, max_fnr, np_confidence
        The Neyman-Pearson constraints the threshold was chosen under (``None`` when it was
        not; see :mod:`thors_stream.neyman_pearson`).
    decide_on
        ``"score"``: the threshold is on the scores themselves. ``"margin"``: it is on the
        cost margin ``logit(p) + log(fn_i / fp_i)`` of probabilities with per-event costs
        (:mod:`thors_stream.margin`); :meth:`predict` then needs the new events' costs, the
        weighted totals are money (``n1`` the FN cost at stake, ``n0`` the FP cost) and
        ``fn_cost = fp_cost = 1``.

    Examples
    --------
    >>> from thors_stream import thors_threshold
    >>> r = thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], fn_cost=1, fp_cost=1)
    >>> r.threshold, r.cost, r.fpr, r.fnr
    (0.1, 1.0, 0.5, 0.0)
    >>> r.predict([0.05, 0.5]).tolist()
    [False, True]
    """

    threshold: float
    cost: float
    n0: float
    n1: float
    k0: float
    k1: float
    count0: int
    count1: int
    count_k0: int
    count_k1: int
    fn_cost: float
    fp_cost: float
    class_prior: float | None = None
    max_fpr: float | None = None
    max_fnr: float | None = None
    np_confidence: float | None = None
    decide_on: str = "score"

    @property
    def fpr(self) -> float:
        """Empirical false-positive rate ``(n0 - k0) / n0`` (0.0 when there are no negatives)."""
        return (self.n0 - self.k0) / self.n0 if self.n0 > 0 else 0.0

    @property
    def fnr(self) -> float:
        """Empirical false-negative rate ``k1 / n1`` (0.0 when there are no positives)."""
        return self.k1 / self.n1 if self.n1 > 0 else 0.0

    @property
    def n(self) -> float:
        """Weighted number of events, ``n0 + n1``."""
        return self.n0 + self.n1

    def predict(self, scores: Any, *, fn_cost: Any = None, fp_cost: Any = None) -> np.ndarray:
        """Return ``scores > threshold`` as a bool array. O(n).

        For a threshold on the cost margin (``decide_on == "margin"``), ``scores`` are the new
        events' probabilities and ``fn_cost``/``fp_cost`` their costs (numbers, or one per
        event, as at fit time); the answer is ``cost_margins(scores, fn_cost, fp_cost) >
        threshold``. Costs given for a threshold on scores raise ``ValueError`` (they would
        be ignored).

        >>> from thors_stream import thors_threshold
        >>> r = thors_threshold([0.1, 0.2, 0.6, 0.3], [0, 1, 1, 0], fn_cost=[900.0, 300.0, 40.0, 2.0],
        ...                     fp_cost=10.0, decide_on="margin")
        >>> r.predict([0.05, 0.0001], fn_cost=[1000.0, 20.0], fp_cost=10.0).tolist()
        [True, False]
        """
        if self.decide_on == "margin":
            if fn_cost is None or fp_cost is None:
                raise ValueError("this threshold is on the cost margin: predict(probabilities, fn_cost=..., "
                                 "fp_cost=...) needs the new events' costs (numbers or one per event)")
            from .margin import cost_margins

            return cost_margins(scores, fn_cost, fp_cost) > self.threshold
        if fn_cost is not None or fp_cost is not None:
            raise ValueError("this threshold is on the scores (decide_on='score'): per-event costs do not enter "
                             "its decisions; choose it with decide_on='margin' to decide on the cost margin")
        return np.asarray(scores, dtype=np.float64) > self.threshold

    def predict_one(self, score: float, *, fn_cost: Any = None, fp_cost: Any = None) -> bool:
        """Return ``score > threshold`` (on the cost margin of ``score`` with these costs when
        ``decide_on == "margin"``, as :meth:`predict`). O(1).

        >>> from thors_stream import thors_threshold
        >>> thors_threshold([0.2, 0.8], [0, 1], fn_cost=1, fp_cost=1).predict_one(0.5)
        True
        """
        if self.decide_on == "margin" or fn_cost is not None or fp_cost is not None:
            if self.decide_on == "margin" and (fn_cost is None or fp_cost is None):
                raise ValueError("this threshold is on the cost margin: predict_one(probability, fn_cost=..., "
                                 "fp_cost=...) needs the event's costs")
            if self.decide_on != "margin":
                self.predict([score], fn_cost=fn_cost, fp_cost=fp_cost)  # raises the explanatory error
            from .margin import cost_margin

            return cost_margin(score, fn_cost, fp_cost) > self.threshold
        return bool(score > self.threshold)

    def bounds(self, confidence: float = 0.95, n_test: int | None = None, **kw: Any) -> ThresholdBounds:
        """High-probability bounds on the true FPR, FNR and cost at this threshold.

        Valid for this data-dependent threshold (simultaneous band, union bound); the paper's
        pointwise versions come along as ``paper_*``. Keywords ``class_prior`` and ``method``
        are passed on; see :func:`thors_stream.bounds.threshold_bounds`. O(1), plus
        O(sqrt(n_test)) for the exact cost quantile (capped: past ~10**11 events it is the
        Bernstein bound). ``n_test`` is at most 2**53.

        >>> from thors_stream import thors_threshold
        >>> r = thors_threshold([0.1, 0.4, 0.35, 0.8] * 50, [0, 0, 1, 1] * 50, fn_cost=1, fp_cost=1)
        >>> b = r.bounds(0.95, n_test=100)
        >>> b.fpr_lower <= r.fpr <= b.fpr_upper, b.cost_upper_exact <= b.cost_upper
        (True, True)
        """
        from .bounds import threshold_bounds

        return threshold_bounds(self, confidence, n_test, **kw)

    @property
    def min_class_count(self) -> int:
        """Event count of the smaller class, ``min(count0, count1)`` (0 when a class is absent)."""
        return min(int(self.count0), int(self.count1))

    def support_issue(self, min_per_class: int = DEFAULT_MIN_PER_CLASS) -> str | None:
        """Why this threshold is not supported by its data, as one line, or ``None`` when it is.

        Unsupported: a class is absent (e.g. a broken label join: with no positives THORS
        returns the top score at cost 0, a threshold that flags nothing), or has fewer than
        ``min_per_class`` events (see :data:`DEFAULT_MIN_PER_CLASS` for the default). O(1).

        >>> from thors_stream import thors_threshold
        >>> thors_threshold([0.1, 0.9], [0, 0], fn_cost=1, fp_cost=1).support_issue()
        'no positive events (0 positives, 2 negatives): the threshold is not supported'
        >>> thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1).support_issue(min_per_class=1) is None
        True
        """
        if isinstance(min_per_class, bool) or not isinstance(min_per_class, (int, np.integer)) or min_per_class < 1:
            raise ValueError(f"min_per_class must be an integer >= 1, got {min_per_class!r}")
        c0, c1 = int(self.count0), int(self.count1)
        counts = f"({c1:,} positive{'s' if c1 != 1 else ''}, {c0:,} negative{'s' if c0 != 1 else ''})"
        if c1 == 0 or c0 == 0:
            which = "positive" if c1 == 0 else "negative"
            return f"no {which} events {counts}: the threshold is not supported"
        if min(c0, c1) < min_per_class:
            which = "positive" if c1 < c0 or (c1 == c0) else "negative"
            return (f"too few {which} events {counts}: at least {int(min_per_class):,} per class are needed "
                    "for a supported threshold")
        return None

    def is_supported(self, min_per_class: int = DEFAULT_MIN_PER_CLASS) -> bool:
        """Whether both classes are present with at least ``min_per_class`` events each. O(1).

        >>> from thors_stream import thors_threshold
        >>> thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1).is_supported()
        False
        """
        return self.support_issue(min_per_class) is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``-inf`` threshold written as the string ``"-inf"``)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["fpr"], d["fnr"] = self.fpr, self.fnr
        if math.isinf(self.threshold):
            d["threshold"] = "-inf"
        return d
