"""The state and the shared steps of :class:`~thors_stream.river.ThorsClassifier`'s parts.

``ThorsClassifier`` (:mod:`thors_stream.river`) is assembled from parts, each with its own
module: the pending decisions by key, in memory or in a store
(:mod:`thors_stream._river_pending`), per-event costs and cost margins
(:mod:`thors_stream._river_money`), and checkpoints and pickling
(:mod:`thors_stream._river_state`). This module declares the attributes the class's
``__init__`` sets, so that a type checker knows them in every part, and holds what more than
one part uses: asking the wrapped model for its probability, reading an event's label,
segment and time, and teaching the thresholder one event.

>>> from thors_stream.river import ThorsClassifier
>>> issubclass(ThorsClassifier, RiverBase), RiverBase.__annotations__["window"]
(True, 'int | str | None')
"""

from __future__ import annotations

import collections
import datetime as dt
import inspect
import os
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from river import base

from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _show, check_time, real_number
from .neyman_pearson import NPInfeasibleError
from .selection import WindowSelector  # (imported at run time: typing.get_type_hints resolves the declarations)
from .stream import StreamingThors

if TYPE_CHECKING:
    from .store import PendingStore  # (its module is imported only when a store is used)

__all__ = ["CostSetting", "RiverBase"]


def _accepted_kwargs(model: Any, method: str) -> frozenset[str] | None:
    """Extra keyword arguments ``model.method`` accepts; ``None`` means any (``**kwargs``).

    The same routing rule as ``river.compose.Pipeline``: read off the class so it keeps
    working when instance attribute access is patched.
    """
    try:
        params = inspect.signature(getattr(type(model), method)).parameters
    except (TypeError, ValueError, AttributeError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params) - {"self", "x", "y"}


def _snapshot(x: Any) -> dict[Hashable, Any] | None:
    """A shallow copy of the features ``x`` (``None`` when it cannot be copied): what the
    score reuse compares ``learn_one``'s ``x`` with, so a dict refilled in place between
    ``predict_one`` and ``learn_one`` is scored again. O(len(x))."""
    if type(x) is dict:
        return x.copy()
    try:
        return dict(x)
    except Exception:
        return None


_RESCORE = object()
"""What :meth:`ThorsClassifier._lookup` answers for an unknown key under ``on_unknown="score"``."""


def _probability(value: Any, where: str = "") -> float:
    """A model's probability that is not a ``float`` (a numpy scalar, an ``int``) as one; a
    string, a bool or ``None`` is refused with ``TypeError`` rather than converted (``where``,
    e.g. ``" (event key 'tx-9')"``, appended to the message)."""
    try:
        return real_number(value, "the model's probability of the positive class", where)
    except ValueError:  # nan/inf: the callers refuse non-finite scores with their own message
        return float(value)


def _is_one(label: Any) -> bool:
    """``True``, ``1``, ``np.True_`` or ``np.int64(1)``: the labels the default ``pos_label`` covers."""
    return isinstance(label, (bool, int, np.bool_, np.integer)) and bool(label == 1)


def _event(key: Hashable, x: Any) -> str:
    """How an error names the event: its key when there is one, else its features (shortened)."""
    return f" (event key {_show(key)})" if key is not None else f" (event x={_show(x)})"


CostSetting = float | str | Callable[[dict[Hashable, Any]], Any]
"""A cost as ``ThorsClassifier`` takes it: a number, the name of a feature of ``x``, or a callable of ``x``."""


def _cost_setting(value: Any, name: str) -> CostSetting:
    """A cost setting checked: a feature name (``str``), a callable of ``x``, or a number in
    ``[2**-960, 2**960]`` (returned as a float)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return value
        raise TypeError(f"{name} must be a number, the name of a feature of x or a callable of x, got {value!r}, "
                        f"a number as text (pass the number; for a feature so named use lambda x: x[{value!r}])")
    if callable(value):
        return value  # type: ignore[no-any-return]
    c = real_number(value, name)
    if not MIN_WEIGHTED_COST <= c <= MAX_WEIGHTED_COST:
        raise ValueError(f"{name} must be > 0 (between 2**-960 and 2**960), got {_show(value)}")
    return c


def _same_features(cached: dict[Hashable, Any], x: Any) -> bool:
    try:
        return bool(cached == x)
    except Exception:  # e.g. array-valued features: comparison is ambiguous
        return False


class RiverBase:
    """Declarations of the attributes a ``ThorsClassifier`` holds, and the steps its parts
    share (see the module docstring)."""

    # the settings (river's parameters: ``__init__``'s arguments, read back by ``clone``)
    classifier: base.Classifier
    fn_cost: CostSetting
    fp_cost: CostSetting
    window: int | str | None
    period: float | dt.timedelta | None
    warm_up: int
    default_threshold: float | None
    class_prior: float | None
    max_pending: int
    max_fpr: float | None
    max_fnr: float | None
    confidence: float
    moment: str | Any
    pos_label: Hashable
    neg_label: Hashable
    auto_choose: str
    segment: str | Any
    min_per_class: int
    max_segments: int
    min_model_labels: int
    windows: Sequence[int] | None
    pool_weight: float | None
    pool_every: int | None
    store: str | os.PathLike[str] | None
    max_pending_age: int | dt.timedelta | None
    on_unknown: str | None
    store_options: dict[str, Any] | None
    # per-event costs: the settings checked (1.0 for both with numbers)
    _margin: bool
    _fn_setting: CostSetting
    _fp_setting: CostSetting
    # the thresholder: the window's summary, the selector (window="auto"), the segments (segment=)
    _thors: StreamingThors
    _np: bool
    _default: float
    _segmented: Any
    _seg_auto: bool
    _selector: WindowSelector | None
    _source: WindowSelector | StreamingThors
    # labels, times and the warm-up
    _plain_labels: bool
    _lean_labels: bool
    _special: bool
    _neg_seen: Hashable
    _timed: bool
    _last_t: float
    _n_learned: int
    _n_pos: int
    _ready: bool
    # pending decisions, in memory (_pending) or in the store (_db)
    _pending: collections.OrderedDict[Hashable, Any]
    _n_evicted: int
    _policy: str
    _n_matched: int
    _n_unmatched: int
    if TYPE_CHECKING:  # (for type checkers only: the store's module is not imported at run time)
        _db: PendingStore | None
    # the model: labels it learned through the wrapper, the last score, the keyword routes
    _n_model_labels: int
    _n_cold_skipped: int
    _cache_x: dict[Hashable, Any] | None
    _cache_score: float
    _routes: dict[str, frozenset[str] | None]

    # ---------------------------------------------------------------- defined by the other parts
    @property
    def decide_on(self) -> str:  # pragma: no cover - ThorsClassifier defines it
        raise NotImplementedError

    def _lookup(self, key: Hashable, what: str) -> Any:  # pragma: no cover - PendingPart defines it
        raise NotImplementedError

    def _learn_stored(self, x: dict[Hashable, Any], y: Any, pos: bool, key: Hashable | None, w: float | None,
                      wt: float, tf: float | None, kwargs: dict[str, Any]) -> None:  # pragma: no cover - PendingPart
        raise NotImplementedError

    def _margin_entry(self, p: float, x: dict[Hashable, Any],
                      key: Hashable | None) -> tuple[float, float, float, int]:  # pragma: no cover - MoneyPart
        raise NotImplementedError

    @staticmethod
    def _margin_weight(cost: float, pos: bool, wt: float, key: Hashable | None,
                       x: Any) -> float:  # pragma: no cover - MoneyPart defines it
        raise NotImplementedError

    def _margin_settings(self) -> dict[str, Any]:  # pragma: no cover - MoneyPart defines it
        raise NotImplementedError

    def _thresholding_parts(
        self,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:  # pragma: no cover - StatePart defines it
        raise NotImplementedError

    def _restore_thresholding(self, ck: Any) -> None:  # pragma: no cover - StatePart defines it
        raise NotImplementedError

    # ---------------------------------------------------------------- the wrapped model
    def _route(self, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The subset of ``kwargs`` the wrapped model's ``method`` accepts (as Pipeline does)."""
        if not kwargs:
            return kwargs
        try:
            accepted = self._routes[method]
        except KeyError:
            accepted = self._routes[method] = _accepted_kwargs(self.classifier, method)
        if accepted is None:
            return dict(kwargs)
        return {k: v for k, v in kwargs.items() if k in accepted}

    def _proba(self, x: dict[Hashable, Any], kwargs: dict[str, Any]) -> dict[Any, float]:
        try:
            if kwargs:
                return self.classifier.predict_proba_one(x, **self._route("predict_proba_one", kwargs))
            return self.classifier.predict_proba_one(x)
        except NotImplementedError:
            raise NotImplementedError(
                f"{type(self.classifier).__name__} has no predict_proba_one; ThorsClassifier thresholds "
                "the probability of the positive class, so it needs a model that gives one"
            ) from None

    def _score_now(self, x: dict[Hashable, Any], kwargs: dict[str, Any]) -> float:
        score = self._proba(x, kwargs).get(self.pos_label, 0.0)
        return score if type(score) is float else _probability(score, _event(None, x))

    @staticmethod
    def _reject_score(score: float) -> None:
        raise ValueError(
            f"the model's probability of the positive class is {score!r}, not a finite number; nothing was learned"
        )

    def _model_takes_w(self) -> bool:
        try:
            accepted = self._routes["learn_one"]
        except KeyError:
            accepted = self._routes["learn_one"] = _accepted_kwargs(self.classifier, "learn_one")
        return accepted is None or "w" in accepted

    # ---------------------------------------------------------------- one event
    def _positive(self, y: Any) -> bool:
        """With a ``pos_label``: whether ``y`` is it (a negative label must be hashable: the
        first one is remembered once its event is accepted)."""
        try:
            pos = bool(y == self.pos_label)
        except Exception:
            raise ValueError(f"label {y!r} cannot be compared with pos_label {self.pos_label!r}") from None
        if not pos and self._neg_seen is None:
            try:
                hash(y)
            except TypeError:
                raise ValueError(f"label must be hashable, got {y!r}") from None
        return pos

    def _segment_of(self, x: dict[Hashable, Any]) -> Hashable:
        g = self.segment
        try:
            key: Hashable = g(x) if callable(g) else x[g]
            hash(key)
        except (KeyError, TypeError):
            raise ValueError(f"segment {g!r}: no hashable segment in x") from None
        return key

    def _event_time(self, x: dict[Hashable, Any], t: Any) -> float | None:
        """The event's time with ``period`` (``t``, else ``moment`` of ``x``; one older than the
        newest is a late label, as StreamingThors takes it), checked; ``None`` without ``period``."""
        if not self._timed:
            return None
        if t is None and self.moment is not None:
            t = self._moment_of(x)
        if t is None:
            raise ValueError("t (the event time) is required when period is set: learn_one(x, y, t=...), "
                             "or give ThorsClassifier(..., moment=<feature name or callable>)")
        return check_time(t, "t")

    def _moment_of(self, x: dict[Hashable, Any]) -> Any:
        m = self.moment
        if callable(m):
            return m(x)
        try:
            return x[m]
        except (KeyError, TypeError):
            raise ValueError(f"moment {m!r} is not a feature of x; pass t=... to learn_one") from None

    # ---------------------------------------------------------------- the thresholder
    def _thors_threshold(self) -> float | None:
        """The window's threshold; ``None`` when empty or, in Neyman-Pearson mode, infeasible."""
        try:
            return self._thors.get()
        except NPInfeasibleError:  # only raised in Neyman-Pearson mode
            return None

    def _apply(self, score: float, pos: bool, weight: float, tf: float | None, seg: Any) -> None:
        """Teach the thresholder one event, after the model has learned it (every learn path but the
        lean one, and the store's replay)."""
        if self._selector is not None:
            self._selector.update(score, pos, weight)
        elif self._segmented is not None:
            self._segmented.update(seg, score, pos, weight, tf)
        else:
            self._thors.update(score, pos, weight, tf)
        if tf is not None and tf > self._last_t:
            self._last_t = tf  # the newest time learned
        if not self._ready:
            self._count(pos)

    def _count(self, pos: bool) -> None:
        """Count labelled events until the warm-up is over (then the counts are not needed)."""
        self._n_learned += 1
        if pos:
            self._n_pos += 1
        self._ready = self._n_learned >= self.warm_up and 0 < self._n_pos < self._n_learned
