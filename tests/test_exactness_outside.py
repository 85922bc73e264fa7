"""What is bit-identical outside the exactness condition (docs/concepts/exactness.md).

With amounts in cents (weights that are not dyadic, so class sums and prefix sums round), two
histories of one multiset of events — different insertion orders, one-by-one or in batches, with
extra events added and reverted in between — give a summary whose **held rows are bit-identical**,
each per-score class sum the exact sum rounded once to float64. The **cost** is a float sum whose
grouping follows the tree's shape, which depends on the history: the two may differ in the last
places, within the documented margin ``2 n eps (fn W1 + fp W0)`` each. Each history's
**threshold** is the exact optimum or a candidate whose exact cost is within that margin of it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

# the numpy backend with small blocks, so that its sums group differently too
BACKENDS = [{"backend": "python", "load": 4}] + ([{"backend": "c"}] if "c" in available_backends() else [])
EPS = 2.0**-52
CENTS = st.integers(1, 10**7).map(lambda c: c / 100)  # 0.01 to 100,000.00
# enough distinct scores for trees of several levels, where the grouping of sums varies
SCORE = st.integers(-200, 200).map(lambda k: k / 64)
EVENT = st.tuples(SCORE, st.sampled_from([0, 1]), CENTS)


def exact(events, fn, fp):
    """The exact per-score sums and the exact cost of every candidate threshold (-inf first)."""
    per: dict[float, list[Fraction]] = {}
    for s, y, w in events:
        per.setdefault(s, [Fraction(0), Fraction(0)])[0 if y else 1] += Fraction(w)
    keys = sorted(per)
    rows = [keys, [float(per[k][0]) for k in keys], [float(per[k][1]) for k in keys]]
    w1_below, w0_above = Fraction(0), sum(v[1] for v in per.values())
    costs = {float("-inf"): fp * w0_above}
    for k in keys:
        w1_below += per[k][0]
        w0_above -= per[k][1]
        costs[k] = fn * w1_below + fp * w0_above
    return rows, costs


@pytest.mark.parametrize("cfg", BACKENDS, ids=["numpy", "c"][:len(BACKENDS)])
@settings(max_examples=40)
@given(events=st.lists(EVENT, min_size=1, max_size=20), bulk=st.integers(0, 400), seed=st.integers(0, 2**32 - 1),
       extra=st.lists(EVENT, max_size=10), data=st.data())
def test_two_histories_of_one_multiset(cfg, events, bulk, seed, extra, data):
    fn, fp = 5, 1
    rng = np.random.default_rng(seed)  # a bulk of events, for trees of several levels
    events = events + list(zip((rng.integers(-200, 201, bulk) / 64).tolist(), rng.integers(0, 2, bulk).tolist(),
                               (rng.integers(1, 10**7, bulk) / 100).tolist()))
    a = StreamingThors(fn_cost=fn, fp_cost=fp, **cfg)
    for e in events:
        a.update(*e)
    order = data.draw(st.permutations(range(len(events))))
    b = StreamingThors(fn_cost=fn, fp_cost=fp, **cfg)
    cut = data.draw(st.integers(0, len(events)))
    first, rest = [events[i] for i in order[:cut]], [events[i] for i in order[cut:]]
    for e in first + extra:
        b.update(*e)
    for e in extra:  # added, then taken away again
        b.revert(*e)
    if rest:
        s, y, w = zip(*rest)
        b.update_many(np.array(s), np.array(y, dtype=bool), np.array(w))

    rows, costs = exact(events, fn, fp)
    rows_a, rows_b = [r.tolist() for r in a.held()], [r.tolist() for r in b.held()]
    assert rows_a == rows_b                                # bit-identical
    assert rows_a[:3] == rows                              # the exact per-score sums, rounded once

    w1 = sum(w for _, y, w in events if y)
    w0 = sum(w for _, y, w in events if not y)
    margin = 2 * len(events) * EPS * (fn * w1 + fp * w0)
    assert abs(a.cost - b.cost) <= 2 * margin              # the cost: equal up to rounding
    best = min(costs.values())
    for summary in (a, b):
        assert abs(Fraction(summary.cost) - costs[summary.get()]) <= margin
        assert costs[summary.get()] - best <= 2 * margin   # the threshold: optimal up to rounding
