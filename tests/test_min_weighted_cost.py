"""The lower magnitude limit, 2**-960 (MIN_WEIGHTED_COST), on costs and weight * cost.

Costs near the smallest subnormal (k * 5e-324) with fractional weights made the products
a * w round to multiples of 2**-1074: in a simulation against an exact (Fraction) oracle,
30 of 600 thresholds were up to 29% costlier than the optimum, silently. Such costs and
weights are now refused by name, before anything changes; at the limit the answers are
exact again.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends
from thors_stream._validation import MIN_WEIGHTED_COST, check_weighted_cost, check_weighted_costs
from thors_stream.costs import resolve_costs
from thors_stream.metrics import Cost

BACKENDS = available_backends()


def exact_best(s, y, w, fn, fp):
    """The least total cost over all candidate thresholds, in exact arithmetic."""
    cands = [-math.inf, *sorted(set(s))]

    def cost(t):
        return (Fraction(fn) * sum(Fraction(c) for a, b, c in zip(s, y, w) if b and a <= t)
                + Fraction(fp) * sum(Fraction(c) for a, b, c in zip(s, y, w) if not b and a > t))

    return cost, min(cost(t) for t in cands)


def test_the_reported_case_is_refused():
    """Costs of a few units of 2**-1074: refused, naming the cost."""
    for fn, fp in ((3 * 5e-324, 7 * 5e-324), (1.0, 5e-324)):
        with pytest.raises(ValueError, match=r"must be at least 2\*\*-960 \(MIN_WEIGHTED_COST"):
            thors_threshold([0.1, 0.2], [0, 1], fn_cost=fn, fp_cost=fp)
        with pytest.raises(ValueError, match=r"must be at least 2\*\*-960"):
            StreamingThors(fn_cost=fn, fp_cost=fp)
    with pytest.raises(ValueError, match=r"effective costs must be at least 2\*\*-960.*"
                                         r"fp = C\(0,1\) - C\(0,0\) = 5e-324"):
        resolve_costs(cost_matrix=[[0, 5e-324], [1, 0]])
    assert resolve_costs(fn_cost=MIN_WEIGHTED_COST, fp_cost=MIN_WEIGHTED_COST).fn_cost == MIN_WEIGHTED_COST


def test_weight_times_the_smaller_cost_is_checked_alike_in_every_helper():
    below = math.nextafter(MIN_WEIGHTED_COST, 0.0)
    assert check_weighted_cost(1.0, 1.0, MIN_WEIGHTED_COST) == 1.0
    check_weighted_costs(np.array([1.0, 2.0]), 1.0, MIN_WEIGHTED_COST)
    for call in (check_weighted_cost, check_weighted_costs):
        with pytest.raises(ValueError, match=r"times the cost 1\.0 is below 2\*\*-960"):
            call(below, 1.0, 5.0)
    with pytest.raises(ValueError, match=r"ws 1e-300 at position 1 times the cost 1\.0 is below 2\*\*-960"):
        check_weighted_costs(np.array([1.0, 1e-300]), 1.0, 5.0, "ws")
    with pytest.raises(ValueError, match=r"is below 2\*\*-960"):
        Cost(fn_cost=1, fp_cost=1).update(1, 0, w=1e-300)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("window", [None, 3])
def test_stream_refuses_a_tiny_weight_and_keeps_its_state(backend, window):
    """Both update paths (the compiled fast path for float weights, the Python one for
    other types), update_many and revert: a ValueError naming the weight; nothing changes."""
    st_ = StreamingThors(fn_cost=2.0, fp_cost=1.0, window=window, backend=backend)
    st_.update_many([0.1, 0.5, 0.9], [0, 1, 1], [1.0, 2.0, 0.5])
    def state():
        return st_.get(), st_.cost, st_.n_updates, [a.tolist() for a in st_.held()]

    before = state()
    for w in (1e-300, Fraction(1, 10**300), 5e-324):
        with pytest.raises(ValueError, match=r"below 2\*\*-960"):
            st_.update(0.3, 0, w)
    with pytest.raises(ValueError, match=r"1e-300 at position 1 times the cost 1\.0 is below 2\*\*-960"):
        st_.update_many([0.3, 0.4], [0, 1], [1.0, 1e-300])
    assert state() == before
    # at the limit a weight is taken
    st_.update(0.3, 0, MIN_WEIGHTED_COST)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_answers_at_the_limit_are_exact(data):
    """Costs and weights just above the limit (products down to 2**-960): the batch and the
    streaming thresholds are exact optima (Fraction oracle), as the reported case was not."""
    n = data.draw(st.integers(2, 20))
    s = data.draw(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.4, 0.5]), min_size=n, max_size=n))
    y = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    w = [k / 64 for k in data.draw(st.lists(st.integers(64, 640), min_size=n, max_size=n))]  # w in [1, 10]
    fn = MIN_WEIGHTED_COST * data.draw(st.integers(1, 40))
    fp = MIN_WEIGHTED_COST * data.draw(st.integers(1, 40))
    cost, best = exact_best(s, y, w, fn, fp)
    assert cost(thors_threshold(s, y, sample_weight=w, fn_cost=fn, fp_cost=fp).threshold) == best
    for backend in BACKENDS:
        stream = StreamingThors(fn_cost=fn, fp_cost=fp, backend=backend)
        for a, b, c in zip(s, y, w):
            stream.update(a, b, c)
        got = stream.get()
        assert cost(-math.inf if got is None else got) == best
