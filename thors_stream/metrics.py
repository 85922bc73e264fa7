"""Cost-sensitive evaluation metrics for river (``river.metrics`` conventions)."""

from __future__ import annotations

from typing import Any

from river import base
from river import metrics as river_metrics

from ._validation import check_label, check_weight, check_weighted_cost
from .costs import resolve_costs

__all__ = ["Cost"]


class Cost(river_metrics.base.BinaryMetric):
    """Total misclassification cost: ``fn_cost * FN + fp_cost * FP`` (weighted).

    A river binary metric, so ``river.evaluate.progressive_val_score`` can report it
    and ``river.utils.Rolling(Cost, window_size=..., fn_cost=..., fp_cost=...)`` gives
    a rolling cost (:meth:`revert` undoes an :meth:`update`). Each event counts with
    its weight ``w`` (an example-dependent cost such as a transaction amount).
    Smaller is better.

    Parameters
    ----------
    fn_cost, fp_cost
        Cost of a false negative (a positive predicted negative) and of a false
        positive; finite and > 0.
    cm
        A ``river.metrics.ConfusionMatrix`` to share with other metrics.
    pos_val
        The positive label. With the default ``True`` (which equals ``1``), labels and
        predictions must be 0, 1, ``False`` or ``True``; anything else raises.
    per_event
        Make :meth:`get` return :attr:`mean` (cost per event) instead of :attr:`total`.

    Complexity
    ----------
    O(1) per update, revert and get.

    Examples
    --------
    >>> metric = Cost(fn_cost=10, fp_cost=1)
    >>> for y_true, y_pred in [(1, 1), (1, 0), (0, 1), (0, 0)]:
    ...     metric.update(y_true, y_pred)
    >>> metric
    Cost: 11.00
    >>> metric.total, metric.mean
    (11.0, 2.75)
    >>> metric.revert(1, 0)
    >>> metric.get()
    1.0

    A rolling cost over the last two events:

    >>> from river import utils
    >>> rolling = utils.Rolling(Cost, window_size=2, fn_cost=10, fp_cost=1)
    >>> for y_true, y_pred in [(1, 0), (0, 1), (0, 0)]:
    ...     rolling.update(y_true, y_pred)
    >>> rolling.get()
    1.0
    """

    _fmt = ",.2f"

    def __init__(
        self,
        fn_cost: float,
        fp_cost: float,
        cm: river_metrics.ConfusionMatrix | None = None,
        pos_val: Any = True,
        per_event: bool = False,
    ) -> None:
        costs = resolve_costs(fn_cost, fp_cost)
        super().__init__(cm=cm, pos_val=pos_val)  # type: ignore[no-untyped-call]  # river leaves it unannotated
        self.fn_cost = fn_cost
        self.fp_cost = fp_cost
        self.per_event = per_event
        self._fn = costs.fn_cost
        self._fp = costs.fp_cost
        self._strict = pos_val is True or (type(pos_val) is int and pos_val == 1)

    def _check(self, y_true: Any, y_pred: Any, w: Any) -> None:
        if self._strict:
            if not (y_true is True or y_true is False):
                check_label(y_true)
            if not (y_pred is True or y_pred is False):
                if isinstance(y_pred, dict):
                    raise ValueError(
                        f"Cost needs a predicted label (0, 1, False or True), got the probabilities {y_pred!r}"
                    )
                try:
                    check_label(y_pred)
                except ValueError:
                    raise ValueError(f"predicted label must be 0, 1, False or True, got {y_pred!r}") from None
        if w != 1.0 or type(w) is not float:
            check_weighted_cost(check_weight(w), self._fn, self._fp, "w")  # (w * cost <= 2**960, as elsewhere)

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        """Add one event: its true label, predicted label and weight (> 0). O(1)."""
        self._check(y_true, y_pred, w)
        super().update(y_true, y_pred, w)

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        """Undo an :meth:`update` with the same arguments. O(1)."""
        self._check(y_true, y_pred, w)
        super().revert(y_true, y_pred, w)

    @property
    def total(self) -> float:
        """``fn_cost * (weighted false negatives) + fp_cost * (weighted false positives)``."""
        cm = self.cm
        return float(self._fn * cm.false_negatives(True) + self._fp * cm.false_positives(True))

    @property
    def mean(self) -> float:
        """Total cost per event (per update not reverted); 0.0 before any event."""
        n = self.cm.n_samples
        return self.total / n if n else 0.0

    def get(self) -> float:
        """:attr:`total`, or :attr:`mean` when ``per_event=True``."""
        return self.mean if self.per_event else self.total

    @property
    def bigger_is_better(self) -> bool:
        return False

    def works_with(self, model: base.Estimator) -> bool:
        return isinstance(model, base.Classifier)

    def __repr__(self) -> str:
        return f"{type(self).__name__}: {self.get():{self._fmt}}"
