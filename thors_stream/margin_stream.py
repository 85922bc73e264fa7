"""A streaming THORS on cost margins, for loops that decide in money without river."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _product_error, check_label, check_weight
from .margin import cost_margin, cost_margins, per_event_costs
from .stream import StreamingThors

__all__ = ["MarginThors"]


class MarginThors:
    """The THORS cut on cost margins over a sliding window of labelled events.

    Each event has a probability ``p`` (from any model) and its own costs: ``fn_cost`` what
    missing it would cost if it is a positive (a fraud's amount), ``fp_cost`` what flagging
    it costs if it is a negative (a review fee). Its cost margin is ``m = logit(p) +
    log(fn_cost / fp_cost)`` (:func:`~thors_stream.margin.cost_margin`); the event is flagged
    iff ``m > get()``. ``get()`` is the exact THORS threshold of the held margins, where a
    positive weighs its ``fn_cost`` and a negative its ``fp_cost`` (times ``w``): the cut that
    would have lost the least money on the window. With an empty window it is ``0.0``, the
    per-event Bayes rule ``p * fn_cost > (1 - p) * fp_cost``.

    This is the recipe ``StreamingThors(fn_cost=1, fp_cost=1, ...)`` fed
    ``update(cost_margin(p, fn, fp), y, w=fn if y else fp)``, with the checks done first.
    Which margin to learn from: with a model that keeps learning and long label delays,
    score the event again when its label arrives (the margin the model gives it *now*); a
    margin kept from decision time was computed on an older score scale. With a frozen
    model both are the same.

    Parameters
    ----------
    window, period, class_prior, max_fpr, max_fnr, confidence
        As for :class:`~thors_stream.StreamingThors` (the Neyman-Pearson constraints count
        events, not money).

    Attributes
    ----------
    thors
        The underlying :class:`~thors_stream.StreamingThors` on margins (read only).

    Complexity
    ----------
    ``update`` / ``revert``: O(log window) (one logarithm pair for the margin); ``get``:
    O(1) when the optimum did not move; ``update_many``: as ``StreamingThors.update_many``.

    Examples
    --------
    >>> mt = MarginThors(window=1_000)
    >>> mt.get()                                   # no labels yet: the Bayes rule
    0.0
    >>> mt.predict_one(0.02, fn_cost=400.0, fp_cost=5.0)   # 2% of 400 > 98% of 5
    True
    >>> for p, y, amount in [(0.02, 0, 400.0), (0.3, 1, 60.0), (0.01, 0, 20.0), (0.05, 0, 900.0)]:
    ...     mt.update(p, y, fn_cost=amount, fp_cost=5.0)
    >>> round(mt.get(), 3), mt.predict_one(0.02, fn_cost=400.0, fp_cost=5.0)
    (0.49, False)
    """

    def __init__(self, *, window: int | None = 10_000, period: float | dt.timedelta | None = None,
                 class_prior: float | None = None, max_fpr: float | None = None, max_fnr: float | None = None,
                 confidence: float = 0.95) -> None:
        self.thors = StreamingThors(fn_cost=1.0, fp_cost=1.0, window=window, period=period,
                                    class_prior=class_prior, default_threshold=0.0, max_fpr=max_fpr,
                                    max_fnr=max_fnr, confidence=confidence)

    def _event(self, p: Any, y: Any, fn_cost: Any, fp_cost: Any, w: Any) -> tuple[float, bool, float]:
        m = cost_margin(p, fn_cost, fp_cost)  # checks p and both costs
        pos = check_label(y) == 1
        cost = float(fn_cost if pos else fp_cost)
        if w is None:
            return m, pos, cost
        sw = check_weight(w)
        weight = cost * sw
        if not MIN_WEIGHTED_COST <= weight <= MAX_WEIGHTED_COST:  # named as the caller gave it: w and the cost
            raise _product_error("w", sw, cost, "")
        return m, pos, weight

    def update(self, p: Any, y: Any, *, fn_cost: Any, fp_cost: Any, w: Any = None, t: Any = None) -> None:
        """Learn one labelled event: its probability, label, costs, optional sample weight
        ``w`` and time ``t`` (with ``period``). A bad value raises, naming it, and changes
        nothing. O(log window)."""
        m, pos, weight = self._event(p, y, fn_cost, fp_cost, w)
        self.thors.update(m, pos, weight, t)

    def revert(self, p: Any, y: Any, *, fn_cost: Any, fp_cost: Any, w: Any = None) -> None:
        """Forget an event learned by :meth:`update` with the same arguments (river's
        ``revert``); an event that is not held raises ``KeyError`` and changes nothing."""
        m, pos, weight = self._event(p, y, fn_cost, fp_cost, w)
        self.thors.revert(m, pos, weight)

    def update_many(self, ps: Any, ys: Any, *, fn_cost: Any, fp_cost: Any, ws: Any = None, ts: Any = None) -> None:
        """Learn a batch: equal to calling :meth:`update` on each event in order (costs a
        number or one per event). Every value is checked before anything changes.
        O(batch * log window) or better (see ``StreamingThors.update_many``)."""
        from ._validation import check_labels, check_weights

        m = cost_margins(ps, fn_cost, fp_cost)
        n = m.shape[0]
        pos = check_labels(ys, n, "ys")
        fn = per_event_costs(fn_cost, n, "fn_cost")
        fp = per_event_costs(fp_cost, n, "fp_cost")
        weight = fn.copy()
        weight[~pos] = fp[~pos]
        sw = check_weights(ws, n, "ws")
        if sw is not None:
            with np.errstate(over="ignore", under="ignore"):
                product = weight * sw
            bad = ~((product >= MIN_WEIGHTED_COST) & (product <= MAX_WEIGHTED_COST))
            if bad.any():  # named as the caller gave it: the weight and the event's cost
                i = int(np.flatnonzero(bad)[0])
                raise _product_error("ws", float(sw[i]), float(weight[i]), f" at position {i}")
            weight = product
        self.thors.update_many(m, pos, weight, ts)

    def get(self) -> float:
        """The cut on the margin: the THORS threshold of the window, ``0.0`` (the per-event
        Bayes rule) while it holds nothing. O(1) when the optimum did not move."""
        thr = self.thors.get()
        return 0.0 if thr is None else thr

    def margin(self, p: Any, *, fn_cost: Any, fp_cost: Any) -> float:
        """The event's cost margin (:func:`~thors_stream.margin.cost_margin`). O(1)."""
        return cost_margin(p, fn_cost, fp_cost)

    def predict_one(self, p: Any, *, fn_cost: Any, fp_cost: Any) -> bool:
        """Whether to flag the event: ``margin(p) > get()``. O(1)."""
        return cost_margin(p, fn_cost, fp_cost) > self.get()

    def __len__(self) -> int:
        return len(self.thors)

    def __repr__(self) -> str:
        return f"MarginThors(cut={self.get()!r}, held={len(self)})"
