"""``thors replay``'s monitoring: the rates of the events a window holds and the ``--jsonl`` log with its alerts.

:class:`HeldRates` mirrors which events a windowed :class:`~thors_stream.StreamingThors` holds
and answers their empirical FPR and FNR at any threshold; :class:`_Monitor` writes the
monitoring log (the published threshold, ``--hysteresis``, the realised cost since
publication and the ``threshold_jump`` and ``cost_over_bound`` alerts).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
from typing import Any

import numpy as np

from ._validation import period_cutoff
from .cli_common import _iso, _json_thr, _Rule, _shift
from .costs import class_coefficients


class HeldRates:
    """Empirical FPR and FNR, at a given threshold, of the events a windowed StreamingThors holds.

    Mirrors which events the window holds, in file order: with ``window=N`` the last N
    events; with ``period=P`` (seconds) the events whose time is > (newest time so far) - P,
    which is exactly what :class:`~thors_stream.StreamingThors` keeps, late events included.
    Keeps the held weight per class and per distinct score (ranks of the file's scores), in
    blocks of about sqrt(m) ranks, and the weight below a reference rank, so adding or
    removing an event is O(1) and a query O(min(|rank move|, sqrt(m))) plus a binary search
    when the threshold moved.
    Rates follow :class:`~thors_stream.ThresholdResult`: ``fpr = (n0 - k0) / n0`` and
    ``fnr = k1 / n1`` on the sample weights (0.0 for an absent class). With non-integer
    weights the sums carry rounding errors of order ``eps`` times the weights added.
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, *,
                 window: int | None = None, period: float | None = None, times: np.ndarray | None = None) -> None:
        if (window is None) == (period is None) or (period is not None and times is None):
            raise ValueError("give window, or period with times")
        self._keys, inv = np.unique(scores, return_inverse=True)
        m = max(len(self._keys), 1)
        self._bs = max(1, math.isqrt(m))
        self._rank: list[int] = inv.reshape(-1).tolist()
        self._lab: list[int] = labels.astype(np.int64).tolist()
        self._wt: list[float] | None = weights.tolist() if weights is not None else None
        self._t: list[float] | None = times.tolist() if times is not None else None
        self._elem = [[0.0] * m, [0.0] * m]
        self._blk = [[0.0] * (m // self._bs + 1), [0.0] * (m // self._bs + 1)]
        self._thr = -math.inf  # the threshold of self._ref
        self._tot = [0.0, 0.0]
        self._cnt = [0, 0]
        self._k = [0.0, 0.0]  # held weight per class with rank < self._ref
        self._ref = 0
        self._window, self._period = window, period
        self._now = -math.inf
        self._heap: list[tuple[float, int]] = []

    @property
    def held(self) -> int:
        """Number of events held."""
        return self._cnt[0] + self._cnt[1]

    def _put(self, i: int, sign: int) -> None:
        r, c = self._rank[i], self._lab[i]
        w = float(sign) if self._wt is None else sign * self._wt[i]
        self._elem[c][r] += w
        self._blk[c][r // self._bs] += w
        self._cnt[c] += sign
        if self._cnt[c] == 0:
            self._tot[c] = self._k[c] = 0.0
            return
        self._tot[c] += w
        if r < self._ref:
            self._k[c] += w

    def add(self, i: int) -> None:
        """The ``i``-th event of the file arrives (events arrive in file order); expire what leaves."""
        if self._period is None:
            self._put(i, 1)
            if i >= self._window:  # type: ignore[operator]
                self._put(i - self._window, -1)  # type: ignore[operator]
            return
        t = self._t[i]  # type: ignore[index]
        if t > self._now:
            self._now = t
        cutoff = period_cutoff(self._now, self._period)
        heap = self._heap
        if t > cutoff:
            self._put(i, 1)
            heapq.heappush(heap, (t, i))
        while heap and heap[0][0] <= cutoff:
            self._put(heapq.heappop(heap)[1], -1)

    def _range(self, c: int, lo: int, hi: int) -> float:
        """Held weight of class ``c`` with rank in ``[lo, hi)``."""
        bs, elem = self._bs, self._elem[c]
        if hi - lo <= 2 * bs:
            return sum(elem[lo:hi])
        b_lo, b_hi = -(-lo // bs), hi // bs
        return sum(elem[lo:b_lo * bs]) + sum(self._blk[c][b_lo:b_hi]) + sum(elem[b_hi * bs:hi])

    def rates(self, threshold: float) -> tuple[float, float]:
        """``(fpr, fnr)`` of the held events when predicting positive iff ``score > threshold``."""
        if threshold != self._thr:
            r = 0 if threshold == -math.inf else int(np.searchsorted(self._keys, threshold, side="right"))
            self._move(r)
            self._thr = threshold
        n0, n1 = self._tot
        fpr = min(max((n0 - self._k[0]) / n0, 0.0), 1.0) if self._cnt[0] and n0 > 0 else 0.0
        fnr = min(max(self._k[1] / n1, 0.0), 1.0) if self._cnt[1] and n1 > 0 else 0.0
        return fpr, fnr

    def _move(self, r: int) -> None:
        """Move the reference rank to ``r``, updating the held weight below it."""
        if r != self._ref:
            lo, hi = min(r, self._ref), max(r, self._ref)
            sign = 1.0 if r > self._ref else -1.0
            for c in (0, 1):
                if self._cnt[c]:
                    self._k[c] += sign * self._range(c, lo, hi)
            self._ref = r


def held_cost(held: HeldRates, thr: float, rule: _Rule, class_prior: float | None) -> tuple[float, float, float]:
    """``(cost, fpr, fnr)`` of the events ``held`` mirrors at ``thr``: the rule's costs times the
    held weight of each class's errors (the money lost when the costs are money), with
    ``class_prior`` the costs reweighted as :class:`~thors_stream.StreamingThors` does. O(sqrt m)."""
    fpr, fnr = held.rates(thr)
    n0, n1 = held._tot
    if class_prior is None:
        a, b = rule.fn_cost, rule.fp_cost
    else:
        a, b = class_coefficients(rule.fn_cost, rule.fp_cost, n0, n1, class_prior)
    return a * fnr * n1 + b * fpr * n0, fpr, fnr


class _Monitor:
    """The ``--jsonl`` monitoring log of ``thors replay``: the published threshold (with
    ``--hysteresis``, replaced only when it costs more than the optimum by that fraction on
    the held events), its cost and rates on the held events, the held counts, the realised
    cost of the events seen since it was published (each decided with it before being
    learned, unit weights: ``fn_cost * #FN + fp_cost * #FP``) and the alerts:

    * ``threshold_jump``: the published threshold moved by more than ``--alert-jump``;
    * ``cost_over_bound``: the realised cost since publication exceeds the bound that came
      with the threshold (``cost_upper_exact`` of ``result.bounds(confidence, n_test=events
      since publication)`` for the window it was chosen from; see :mod:`thors_stream.bounds`).
    """

    def __init__(self, args: argparse.Namespace, held: HeldRates, dates: bool, path: str, rule: _Rule) -> None:
        # path: where the log is written ("-": standard output; else a staged file of --jsonl)
        self.args, self.held, self.dates, self.rule = args, held, dates, rule
        self.f = sys.stdout if path == "-" else open(path, "w")  # closed in close()
        self.pub: float | None = None
        self.pub_result: Any = None
        self.pub_check: Any = None  # RealisedCostCheck of the published result, made when first needed
        self.pub_at = 0  # the event at which the published threshold was published
        self.over = False  # its realised cost went over its bound (the alert is raised once)
        self.pub_cost: float | None = None  # its cost on the held events at the last row
        self.since = 0
        self.fn = self.fp = 0.0
        self.n_alerts = 0

    def see(self, key: float, label: bool, money: float) -> None:
        """An event arrives: decide it with the published threshold (before it is learned).
        ``key`` is its score or cost margin, ``money`` what an error on it costs (its weight,
        when the costs are money; else unused: errors are counted)."""
        if self.pub is None:
            return
        self.since += 1
        flagged = key > self.pub
        if label and not flagged:
            self.fn += money if self.rule.money else 1
        elif not label and flagged:
            self.fp += money if self.rule.money else 1

    def _held_cost(self, thr: float) -> tuple[float, float, float]:
        return held_cost(self.held, thr, self.rule, self.args.class_prior)

    def row(self, event: int, t: float | None, st: Any, thr: float | None, cost: float | None) -> None:
        args = self.args
        if thr is None or cost is None:  # nothing held (only late events so far) or too few for --max-fpr/fnr
            rec0: dict[str, Any] = {"event": event, "decide_on": self.rule.decide_on, "threshold": None,
                                    "held": self.held.held, "alerts": []}
            self.f.write(json.dumps(rec0) + "\n")
            return
        alerts: list[dict[str, Any]] = []
        realised = self.rule.fn_cost * self.fn + self.rule.fp_cost * self.fp
        # money has no distribution-free bound (the next events' amounts are unknown): no cost alert then
        if self.pub_result is not None and self.since and realised > 0 and not self.rule.money and not self.over:
            if self.pub_check is None:
                from .bounds import RealisedCostCheck

                self.pub_check = RealisedCostCheck(self.pub_result, args.confidence)
            # exactly realised > result.bounds(confidence, n_test=since).cost_upper_exact, amortised O(1)
            bound = self.pub_check.exceeds(self.since, realised)
            if bound is not None:
                self.over = True
                alerts.append({"type": "cost_over_bound", "realised_cost": realised, "bound": bound,
                               "events": self.since, "confidence": args.confidence})
        publish = self.pub is None or args.hysteresis is None
        if not publish and thr != self.pub and self.pub is not None:
            pub_cost = self._held_cost(self.pub)[0]
            publish = pub_cost > (1.0 + args.hysteresis) * cost
        since = self.since
        if publish and thr != self.pub:
            if self.pub is not None and args.alert_jump is not None:
                jump = _shift(thr, self.pub)
                if jump > args.alert_jump:
                    alerts.append({"type": "threshold_jump", "from": _json_thr(self.pub), "to": _json_thr(thr),
                                   "jump": "inf" if math.isinf(jump) else jump})
            self.pub, self.pub_result, self.pub_check, self.pub_at, self.over = thr, st.result(), None, event, False
            self.since = 0
            self.fn = self.fp = 0.0
        assert self.pub is not None  # published above when nothing was
        pub_cost, fpr, fnr = self._held_cost(self.pub)
        self.pub_cost = pub_cost
        tv = None if t is None else _iso(t) if self.dates else float(t)
        c0, c1 = self.held._cnt
        vals = (_round12(pub_cost), round(fpr, 12), round(fnr, 12), _round12(cost), _round12(realised))
        if alerts or not all(map(math.isfinite, vals)) or math.inf in (thr, self.pub):  # the general, strict path
            rec: dict[str, Any] = {"event": event, "decide_on": self.rule.decide_on}
            if tv is not None:
                rec["time"] = tv
            rec.update(threshold=_json_thr(self.pub), cost=vals[0], fpr=vals[1], fnr=vals[2],
                       optimal_threshold=_json_thr(thr), optimal_cost=vals[3], held=c0 + c1, held_pos=c1,
                       held_neg=c0, published_at=self.pub_at, events_since_publish=since, realised_cost=vals[4],
                       alerts=alerts)
            self.n_alerts += len(alerts)
            self.f.write(json.dumps(rec, allow_nan=False) + "\n")
            return
        # the same line as json.dumps of that record, formatted directly (a row costs a few microseconds)
        r = float.__repr__
        when = "" if tv is None else f', "time": "{tv}"' if isinstance(tv, str) else f', "time": {r(tv)}'
        self.f.write(f'{{"event": {event}, "decide_on": "{self.rule.decide_on}"{when}, '
                     f'"threshold": {_thr_json_text(self.pub)}, "cost": {r(vals[0])}, "fpr": {r(vals[1])}, '
                     f'"fnr": {r(vals[2])}, "optimal_threshold": {_thr_json_text(thr)}, '
                     f'"optimal_cost": {r(vals[3])}, "held": {c0 + c1}, "held_pos": {c1}, "held_neg": {c0}, '
                     f'"published_at": {self.pub_at}, "events_since_publish": {since}, '
                     f'"realised_cost": {r(vals[4])}, "alerts": []}}\n')

    def close(self) -> None:
        self.f.flush()
        if self.f is not sys.stdout:
            self.f.close()

    def report(self) -> None:
        """Say how many alerts the log holds (once the replay has succeeded)."""
        if self.n_alerts:
            print(f"{self.n_alerts:,} alert(s) written to {self.args.jsonl}", file=sys.stderr)


def _thr_json_text(t: float) -> str:
    """``json.dumps(_json_thr(t))`` for a threshold (finite or ``-inf``)."""
    return '"-inf"' if t == -math.inf else float.__repr__(float(t))


def _round12(x: float) -> float:
    """``float(_num(x))``: ``x`` rounded to 12 significant digits unless whole or not finite.

    >>> _round12(853.1199999999999), _round12(3.0), _round12(0.1 + 0.2)
    (853.12, 3.0, 0.3)
    """
    x = float(x)
    if not math.isfinite(x) or x.is_integer():
        return x
    return float(f"{x:.12g}")
