"""A plain brute-force THORS oracle in exact rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

INF = float("inf")


def brute_force(events, fn_cost, fp_cost, class_prior=None):
    """Return (threshold, exact cost, all costs) for events = [(score, y, w), ...].

    Tries every distinct score and -inf; cost(t) = a * W1(s <= t) + b * W0(s > t);
    the smallest threshold among the exact minima wins.
    """
    fn, fp = Fraction(fn_cost), Fraction(fp_cost)
    n1 = sum(Fraction(w) for _, y, w in events if y)
    n0 = sum(Fraction(w) for _, y, w in events if not y)
    a, b = fn, fp
    if class_prior is not None and n0 > 0 and n1 > 0:
        pi, n = Fraction(class_prior), n0 + n1
        a, b = fn * pi * n / n1, fp * (1 - pi) * n / n0
    candidates = [-INF] + sorted({s for s, _, _ in events})
    costs = {}
    for t in candidates:
        k1 = sum(Fraction(w) for s, y, w in events if y and s <= t)
        fp_w = sum(Fraction(w) for s, y, w in events if not y and s > t)
        costs[t] = a * k1 + b * fp_w
    best = min(costs.values())
    thr = next(t for t in candidates if costs[t] == best)
    return thr, best, costs


def money_oracle(margins, ys, fns, fps, ws):
    """Brute force in money for the cost-margin mode: candidates every distinct margin and -inf;
    the money lost (missed positives' fn * w + flagged negatives' fp * w) in exact arithmetic;
    the smallest cut among the minima. Returns (cut, money)."""
    cands = [-INF] + sorted(set(margins))
    costs = []
    for t in cands:
        c = Fraction(0)
        for m, y, fn, fp, w in zip(margins, ys, fns, fps, ws):
            if y and m <= t:
                c += Fraction(fn) * Fraction(w)
            elif not y and m > t:
                c += Fraction(fp) * Fraction(w)
        costs.append(c)
    best = min(costs)
    return cands[costs.index(best)], best
