"""Per-event costs of :class:`~thors_stream.river.ThorsClassifier`: each event's costs and cost margin.

With ``fn_cost`` or ``fp_cost`` the name of a feature of ``x`` or a callable of ``x``, the
wrapper decides on each event's cost margin ``m = logit(p) + log(fn_i / fp_i)``
(:func:`~thors_stream.margin.cost_margin`), and its thresholder learns each labelled event's
margin at unit costs, weighing the event's own cost. This part reads and checks an event's
costs, makes its margin entry (what a pending decision holds: the margin, the two costs and
the labels the model had learned), learns a labelled event on the margin (the model always;
the thresholder unless the margin is a cold start's), and records the cost settings a
checkpoint compares.

>>> from river import linear_model
>>> from thors_stream.river import ThorsClassifier
>>> m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost="amount", fp_cost=5.0)
>>> m.decide_on, m._margin_entry(0.5, {"amount": 20.0}, None)[:3]
('margin', (1.3862943611198906, 20.0, 5.0))
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ._river_base import _RESCORE, CostSetting, RiverBase, _event, _same_features
from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _show, check_label, check_weight, real_number
from .margin import cost_margin

__all__ = ["MoneyPart"]


class MoneyPart(RiverBase):
    """The per-event costs of :class:`~thors_stream.river.ThorsClassifier` (see the module docstring)."""

    def _event_cost(self, setting: CostSetting, x: dict[Hashable, Any], name: str, key: Hashable | None) -> float:
        """One cost of the event ``x``: the number, the feature, or the callable's answer,
        checked (a real number in ``[2**-960, 2**960]``); errors name the event."""
        if type(setting) is float:
            return setting  # (checked at construction)
        if isinstance(setting, str):
            try:
                v = x[setting]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"{name}: no feature {setting!r} in x{_event(key, x)}") from None
            label = f"{name} (feature {setting!r})"
        elif callable(setting):
            label = f"{name} (from {getattr(setting, '__name__', 'the callable')})"
            try:
                v = setting(x)
            except Exception as exc:  # the user's own error, as raised; a note names the event (3.11+)
                if hasattr(exc, "add_note"):
                    exc.add_note(f"raised by {label}{_event(key, x)}")
                raise
        else:  # pragma: no cover - a number is a float once checked
            return float(setting)
        if v.__class__ is float and MIN_WEIGHTED_COST <= v <= MAX_WEIGHTED_COST:
            return v
        try:
            c = real_number(v, label)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc}{_event(key, x)}") from None
        if not MIN_WEIGHTED_COST <= c <= MAX_WEIGHTED_COST:
            raise ValueError(f"{label} must be > 0 (between 2**-960 and 2**960), got {_show(v)}{_event(key, x)}")
        return c

    def _margin_entry(self, p: float, x: dict[Hashable, Any], key: Hashable | None) -> tuple[float, float, float, int]:
        """``(margin, fn_i, fp_i, labels the model has learned)`` of the event ``x`` whose
        positive-class probability is ``p``; a bad probability or cost raises naming the event."""
        fn = self._event_cost(self._fn_setting, x, "fn_cost", key)
        fp = self._event_cost(self._fp_setting, x, "fp_cost", key)
        if not 0.0 <= p <= 1.0:  # (nan too)
            raise ValueError(f"the model's probability of the positive class is {p!r}, not a number in [0, 1]"
                             f"{_event(key, x)}")
        return cost_margin(p, fn, fp), fn, fp, self._n_model_labels

    def _learn_margin(self, x: dict[Hashable, Any], y: Any, key: Hashable | None, w: float | None, t: Any,
                      kwargs: dict[str, Any]) -> None:
        """``learn_one`` with per-event costs: every check first, then the model learns and
        (unless the margin is a cold start's) the thresholder learns the margin, weighted
        by the event's cost (``fn_i`` for a positive, ``fp_i`` for a negative) times ``w``."""
        pos = self._positive(y) if not self._plain_labels else check_label(y) == 1
        wt = 1.0 if w is None else check_weight(w)
        tf = self._event_time(x, t)
        if self._db is not None:
            self._learn_stored(x, y, pos, key, w, wt, tf, kwargs)
            return
        unmatched = False
        if key is not None:  # the decision-time margin and costs
            entry = self._lookup(key, "margin")
            if entry is None:  # on_unknown="count": counted, nothing learned
                return
            if entry is _RESCORE:
                unmatched, key = True, None  # "score": learned as a label without a key (x scored now)
            else:
                margin, fn, fp, n_scored = entry
        if key is None:  # re-scored: the current model's probability (reused when predict_one just gave it for this x)
            cached = self._cache_x
            p = self._cache_score if cached is not None and _same_features(cached, x) else self._score_now(x, kwargs)
            margin, fn, fp, n_scored = self._margin_entry(p, x, None)
        weight = (fn if pos else fp) * wt
        if not MIN_WEIGHTED_COST <= weight <= MAX_WEIGHTED_COST:
            raise ValueError(f"the event's weight, w={wt!r} times its {'fn_cost' if pos else 'fp_cost'} "
                             f"{fn if pos else fp!r}, is {weight!r}, outside [2**-960, 2**960]{_event(key, x)}")
        learn = n_scored >= self.min_model_labels
        seg = self._segment_of(x) if self._segmented is not None else None

        self._cache_x = None
        model_kwargs = self._route("learn_one", kwargs) if kwargs else {}
        if w is not None and self._model_takes_w():
            model_kwargs["w"] = w  # the sample weight only: a cost never reaches the model
        self.classifier.learn_one(x, y, **model_kwargs)
        if not pos and self._neg_seen is None:
            self._neg_seen = y  # the first negative label (predict_one returns it), once learned
        self._n_model_labels += 1
        if key is not None:
            del self._pending[key]
            self._n_matched += 1
        elif unmatched:
            self._n_unmatched += 1
        if not learn:  # a cold start's margin: the model had learned too few labels to score it
            self._n_cold_skipped += 1
            return
        self._apply(margin, pos, weight, tf, seg)

    @staticmethod
    def _margin_weight(cost: float, pos: bool, wt: float, key: Hashable | None, x: Any) -> float:
        weight = cost * wt
        if not MIN_WEIGHTED_COST <= weight <= MAX_WEIGHTED_COST:
            raise ValueError(f"the event's weight, w={wt!r} times its {'fn_cost' if pos else 'fp_cost'} "
                             f"{cost!r}, is {weight!r}, outside [2**-960, 2**960]{_event(key, x)}")
        return weight

    def _margin_settings(self) -> dict[str, Any]:
        """The per-event cost settings as a checkpoint records them: a number, a feature's
        name, or only the fact of a callable (callables cannot be compared)."""
        def record(setting: CostSetting) -> list[Any]:
            if isinstance(setting, str):
                return ["feature", setting]
            if callable(setting):
                return ["callable", None]
            return ["number", setting]

        return {"fn_cost": record(self._fn_setting), "fp_cost": record(self._fp_setting),
                "min_model_labels": self.min_model_labels}

