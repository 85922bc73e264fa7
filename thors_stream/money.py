"""Progressive evaluation in money: what a model's decisions cost, with per-event costs and label delays.

``river.evaluate.progressive_val_score`` hands its metric ``y_true`` and ``y_pred`` only, never
``x`` or a weight, so with per-event costs (a missed fraud costs its amount, a review a fee) it
can only count errors. :func:`progressive_money` runs the same prequential loop — each event is
decided by the model *before* its label is learned, labels arrive ``delay`` events late — and
counts the money each decision lost: a missed positive costs its ``fn_cost``, a false alarm its
``fp_cost``, both read from the event's features at decision time.

Beside the model it scores, from the very same probabilities, the rules a fraud team would
compare it with: the per-event Bayes rule (flag iff ``p * fn > (1 - p) * fp``, the best a
calibrated model can do), the plain ``0.5`` cut, and, when both costs are numbers, Elkan's fixed
cut ``fp / (fp + fn)``. The result is a :class:`MoneyReport`.
"""

from __future__ import annotations

import collections
import inspect
import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from ._validation import _show, check_label
from .margin import _cost, _proba

__all__ = ["MoneyReport", "RuleMoney", "progressive_money"]

CostRule = Callable[[Any, str], float]


@dataclass(frozen=True)
class RuleMoney:
    """What one decision rule lost over the counted events.

    ``missed`` positives were not flagged (each cost its ``fn_cost``: ``missed_money`` in
    all), ``false_alarms`` negatives were flagged (each cost its ``fp_cost``:
    ``alarm_money``); ``flagged`` counts every flagged event. :attr:`lost` is the sum of
    the two sums of money.

    >>> r = RuleMoney(flagged=3, missed=1, missed_money=120.0, false_alarms=2, alarm_money=10.0)
    >>> r.lost
    130.0
    """

    flagged: int
    missed: int
    missed_money: float
    false_alarms: int
    alarm_money: float

    @property
    def lost(self) -> float:
        """Money lost: ``missed_money + alarm_money``."""
        return self.missed_money + self.alarm_money


@dataclass(frozen=True)
class MoneyReport:
    """The result of :func:`progressive_money`.

    Attributes
    ----------
    seen
        Events decided (all of them, the burn-in included).
    events
        Events counted (those at positions ``>= burn_in``).
    positives
        Positives among the counted events.
    at_stake
        The ``fn_cost`` of the counted positives: what flagging nothing would lose.
    rules
        :class:`RuleMoney` per rule, in this order: ``"model"`` (the model's own
        ``predict_one``), ``"bayes"`` (``p * fn > (1 - p) * fp``), ``"plain"`` (``p > 0.5``)
        and, when both costs are numbers, ``"elkan"`` (``p > fp / (fp + fn)``).
    history
        With ``every=k``: after each ``k`` counted events, ``(events seen, {rule: money
        lost so far})``.
    delay, use_keys, burn_in
        The settings of the run.
    """

    seen: int
    events: int
    positives: int
    at_stake: float
    rules: dict[str, RuleMoney]
    history: tuple[tuple[int, dict[str, float]], ...] = ()
    delay: int = 0
    use_keys: bool = False
    burn_in: int = 0

    @property
    def lost(self) -> float:
        """Money the model's decisions lost."""
        return self.rules["model"].lost

    def ratio(self, rule: str = "model", to: str = "bayes") -> float:
        """Money lost by ``rule`` divided by that of ``to`` (``nan`` when both lost nothing,
        ``inf`` when only ``to`` lost nothing).

        >>> report = MoneyReport(seen=4, events=4, positives=1, at_stake=50.0, rules={
        ...     "model": RuleMoney(1, 0, 0.0, 1, 5.0), "bayes": RuleMoney(0, 1, 50.0, 0, 0.0)})
        >>> report.ratio()
        0.1
        """
        a, b = self.rules[rule].lost, self.rules[to].lost
        if b == 0.0:
            return math.nan if a == 0.0 else math.inf
        return a / b

    def table(self) -> str:
        """The rules as a markdown table: money lost, ratio to the Bayes rule, missed
        positives and false alarms (count and money), flagged events."""
        lines = [
            f"{self.events:,} events counted ({self.positives:,} positives, {self.at_stake:,.2f} at stake) "
            f"of {self.seen:,}; labels {self.delay:,} events late"
            + (", learned with decision-time keys" if self.use_keys else ""),
            "",
            "| rule | money lost | vs Bayes rule | missed | missed money | false alarms | alarm money | flagged |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, r in self.rules.items():
            ratio = self.ratio(name) if "bayes" in self.rules else math.nan
            lines.append(f"| {name} | {r.lost:,.2f} | {ratio:.3f} | {r.missed:,} | {r.missed_money:,.2f} | "
                         f"{r.false_alarms:,} | {r.alarm_money:,.2f} | {r.flagged:,} |")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _cost_rule(spec: Any, name: str) -> tuple[CostRule, float | None]:
    """``spec`` (a number, a feature name or a callable of ``x``) as a function ``(x, where)
    -> cost``, and the number itself when it is one. A number is checked now."""
    if isinstance(spec, str):
        def feature(x: Any, where: str) -> float:
            try:
                value = x[spec]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"{name} {spec!r} is not a feature of x{where}") from None
            return _cost(value, name, where)

        return feature, None
    if callable(spec):
        def call(x: Any, where: str) -> float:
            return _cost(spec(x), name, where)

        return call, None
    fixed = _cost(spec, name, "")

    def number(x: Any, where: str) -> float:
        return fixed

    return number, fixed


def _count(name: str, value: Any, lo: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {_show(value)}")
    return value


def _takes_key(model: Any, method: str) -> bool:
    try:
        params = inspect.signature(getattr(model, method)).parameters
    except (TypeError, ValueError, AttributeError):
        return True  # cannot tell: let the call decide
    return "key" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def progressive_money(
    dataset: Iterable[Any],
    model: Any,
    *,
    fn_cost: Any,
    fp_cost: Any,
    delay: int = 0,
    use_keys: bool = False,
    burn_in: int = 0,
    every: int | None = None,
    pos_label: Hashable = None,
) -> MoneyReport:
    """Progressive (prequential) evaluation of ``model`` in money, with per-event costs and label delays.

    Each item of ``dataset`` is ``(x, y)`` or ``(x, y, kwargs)`` (``kwargs`` a dict passed to
    the model's calls, as river does). For event ``i``:

    1. its costs are read from ``x``: ``fn_cost`` (what missing a positive costs, e.g. the
       amount) and ``fp_cost`` (what flagging a negative costs, e.g. a review fee), each a
       number, the name of a feature of ``x`` or a callable of ``x`` — the rule
       :class:`~thors_stream.river.ThorsClassifier` follows;
    2. the labels due are learned: the label of event ``j`` is learned just before event
       ``j + delay`` is decided (``delay=0`` or ``1``: before the next event, as
       ``river.evaluate.progressive_val_score(..., delay=delay)`` does), with
       ``model.learn_one(x, y)`` — a :class:`~thors_stream.river.ThorsClassifier` then
       re-scores ``x`` with the model as it is when the label arrives — or, with
       ``use_keys=True``, ``model.learn_one(x, y, key=j)``, which learns from what was
       stored at decision time by ``model.predict_one(x, key=j)``;
    3. ``p = model.predict_proba_one(x)[pos_label]`` (for a
       :class:`~thors_stream.river.ThorsClassifier`, the wrapped model's probability) and
       ``model.predict_one(x)``: the model flags the event iff it answers ``pos_label``
       (``None``, an untrained river model's answer, flags nothing);
    4. from event ``burn_in`` on, the money is counted for the model and for the rules
       computed from ``p``: ``"bayes"`` flags iff ``p * fn > (1 - p) * fp`` (the per-event
       Bayes rule), ``"plain"`` iff ``p > 0.5``, and ``"elkan"``, when both costs are numbers,
       iff ``p > fp / (fp + fn)``. A missed positive loses its ``fn_cost``, a false alarm
       its ``fp_cost``.

    The labels still pending at the end are learned (the model has then learned every
    event). ``pos_label`` defaults to the model's own ``pos_label`` when it has one, else
    ``True``; with ``True`` (or ``1``) the labels must be 0, 1, ``False`` or ``True``.

    **Bad input.** The settings are checked before the first call to the model. An event
    with a missing cost feature, a cost that is not a finite number in ``[2**-960,
    2**960]`` or a label that is not 0/1/``False``/``True`` (with the default ``pos_label``)
    raises ``ValueError`` (``TypeError`` for a non-number) naming the value and the event's
    position before the model sees anything of the event (the labels due at it are not
    learned either); a probability outside ``[0, 1]`` or not finite raises the same way
    once the model has given it, before ``predict_one``.

    Complexity: per event, the model's ``predict_proba_one`` and ``predict_one`` (a
    :class:`~thors_stream.river.ThorsClassifier` scores the event twice) and one
    ``learn_one``, plus O(1); memory O(delay) for the pending labels.

    Examples
    --------
    A model that says 10% for every payment and flags above 5%: it reviews the 40.0 and
    200.0 payments (fee 5 each; the 200.0 one was a fraud), and misses the 20.0 fraud. The
    Bayes rule flags iff ``0.1 * amount > 0.9 * 5``, i.e. amounts above 45: only the 200.0.

    >>> class TenPercent:
    ...     def predict_proba_one(self, x):
    ...         return {True: 0.1, False: 0.9}
    ...     def predict_one(self, x):
    ...         return x["amount"] > 30
    ...     def learn_one(self, x, y):
    ...         pass
    >>> stream = [({"amount": 20.0}, True), ({"amount": 40.0}, False), ({"amount": 200.0}, True)]
    >>> report = progressive_money(stream, TenPercent(), fn_cost="amount", fp_cost=5.0)
    >>> report.rules["model"].lost, report.rules["bayes"].lost, report.rules["plain"].lost
    (25.0, 20.0, 220.0)
    >>> round(report.ratio("model", to="bayes"), 2)
    1.25
    >>> progressive_money(stream, TenPercent(), fn_cost="value", fp_cost=5.0)
    Traceback (most recent call last):
    ...
    ValueError: fn_cost 'value' is not a feature of x at event 0
    """
    fn_of, fn_fixed = _cost_rule(fn_cost, "fn_cost")
    fp_of, fp_fixed = _cost_rule(fp_cost, "fp_cost")
    d = _count("delay", delay, 0)
    b = _count("burn_in", burn_in, 0)
    k = _count("every", every, 1, allow_none=True)
    if not isinstance(use_keys, bool):
        raise TypeError(f"use_keys must be True or False, got {_show(use_keys)}")
    for method in ("predict_proba_one", "predict_one", "learn_one"):
        if not callable(getattr(model, method, None)):
            raise TypeError(f"model must have {method}(), {type(model).__name__} has not")
    if use_keys and not (_takes_key(model, "predict_one") and _takes_key(model, "learn_one")):
        raise TypeError(f"use_keys=True needs predict_one(x, key=...) and learn_one(x, y, key=...); "
                        f"{type(model).__name__} does not take key (ThorsClassifier does)")
    pos = pos_label if pos_label is not None else getattr(model, "pos_label", True)
    try:
        hash(pos)
    except TypeError:
        raise TypeError(f"pos_label must be hashable, got {_show(pos)}") from None
    plain_labels = pos is True or (type(pos) is int and pos == 1)
    assert d is not None and b is not None

    names = ["model", "bayes", "plain"] + (["elkan"] if fn_fixed is not None and fp_fixed is not None else [])
    elkan = fp_fixed / (fp_fixed + fn_fixed) if fn_fixed is not None and fp_fixed is not None else 0.0
    n_rules = len(names)
    flagged = [0] * n_rules
    missed = [0] * n_rules
    missed_money = [0.0] * n_rules
    alarms = [0] * n_rules
    alarm_money = [0.0] * n_rules
    history: list[tuple[int, dict[str, float]]] = []
    pending: collections.deque[tuple[int, Any, Any, dict[str, Any], int]] = collections.deque()
    seen = counted = positives = 0
    at_stake = 0.0

    def learn(item: tuple[int, Any, Any, dict[str, Any], int]) -> None:
        _, xo, yo, kwo, j = item
        if use_keys:
            model.learn_one(xo, yo, key=j, **kwo)
        else:
            model.learn_one(xo, yo, **kwo)

    for i, item in enumerate(dataset):
        try:
            x, y, *rest = item
        except (TypeError, ValueError):
            raise ValueError(f"each event must be (x, y) or (x, y, kwargs), got {_show(item)} at event {i}") from None
        if len(rest) > 1 or (rest and not isinstance(rest[0], dict)):
            raise ValueError(f"each event must be (x, y) or (x, y, kwargs), got {_show(item)} at event {i}")
        kw: dict[str, Any] = rest[0] if rest else {}
        where = f" at event {i}"
        if use_keys and "key" in kw:
            raise ValueError(f"use_keys=True sets the key itself (the event's position); kwargs hold one{where}")
        # --- the event is checked before the model sees anything of it
        fn = fn_of(x, where)
        fp = fp_of(x, where)
        if plain_labels:
            try:
                is_pos = check_label(y) == 1
            except ValueError as exc:
                raise ValueError(f"{exc}{where}") from None
        else:
            try:
                is_pos = bool(y == pos)
            except Exception:
                raise ValueError(f"label {_show(y)} cannot be compared with pos_label {_show(pos)}{where}") from None
        # --- the labels due
        while pending and pending[0][0] <= i:
            learn(pending.popleft())
        # --- the decisions
        proba = model.predict_proba_one(x, **kw)
        p = _proba(proba.get(pos, 0.0) if proba else 0.0, where)
        decision = model.predict_one(x, key=i, **kw) if use_keys else model.predict_one(x, **kw)
        seen += 1
        if i >= b:
            counted += 1
            if is_pos:
                positives += 1
                at_stake += fn
            flags = (decision is not None and bool(decision == pos), p * fn > (1.0 - p) * fp, p > 0.5, p > elkan)
            for r in range(n_rules):
                if flags[r]:
                    flagged[r] += 1
                    if not is_pos:
                        alarms[r] += 1
                        alarm_money[r] += fp
                elif is_pos:
                    missed[r] += 1
                    missed_money[r] += fn
            if k is not None and counted % k == 0:
                history.append((seen, {names[r]: missed_money[r] + alarm_money[r] for r in range(n_rules)}))
        entry = (i + d, x, y, kw, i)
        if d == 0:
            learn(entry)
        else:
            pending.append(entry)
    while pending:
        learn(pending.popleft())

    rules = {names[r]: RuleMoney(flagged=flagged[r], missed=missed[r], missed_money=missed_money[r],
                                 false_alarms=alarms[r], alarm_money=alarm_money[r]) for r in range(n_rules)}
    return MoneyReport(seen=seen, events=counted, positives=positives, at_stake=at_stake, rules=rules,
                       history=tuple(history), delay=d, use_keys=use_keys, burn_in=b)

