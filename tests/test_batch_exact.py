"""thors_threshold against the brute-force oracle."""

import math
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from oracle import brute_force
from strategies import costs, events

from thors_stream import thors_threshold


def _check(events, fn, fp, weighted):
    s = [e[0] for e in events]
    y = [e[1] for e in events]
    w = [e[2] for e in events] if weighted else None
    evs = events if weighted else [(a, b, 1.0) for a, b, _ in events]
    thr, best, _ = brute_force(evs, fn, fp)
    r = thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=w)
    assert r.threshold == thr
    assert Fraction(r.cost) == best
    n1 = sum(Fraction(e[2]) for e in evs if e[1])
    n0 = sum(Fraction(e[2]) for e in evs if not e[1])
    assert (Fraction(r.n1), Fraction(r.n0)) == (n1, n0)
    k1 = sum(Fraction(e[2]) for e in evs if e[1] and e[0] <= thr)
    k0 = sum(Fraction(e[2]) for e in evs if not e[1] and e[0] <= thr)
    assert (Fraction(r.k1), Fraction(r.k0)) == (k1, k0)
    assert r.count1 == sum(1 for e in evs if e[1])
    assert r.count_k1 == sum(1 for e in evs if e[1] and e[0] <= thr)
    assert r.count_k0 == sum(1 for e in evs if not e[1] and e[0] <= thr)
    assert np.array_equal(r.predict(s), np.asarray(s) > thr)


@given(events, costs, costs)
def test_unweighted_equals_oracle(evs, fn, fp):
    _check(evs, fn, fp, weighted=False)


@given(events, costs, costs)
def test_weighted_equals_oracle(evs, fn, fp):
    _check(evs, fn, fp, weighted=True)


@given(events, costs, costs, st.floats(0.01, 0.99))
def test_class_prior_within_rounding_of_oracle(evs, fn, fp, prior):
    s, y, w = zip(*evs)
    r = thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=w, class_prior=prior)
    _, best, all_costs = brute_force(evs, fn, fp, prior)
    tol = Fraction(1e-9) * (abs(best) + max(all_costs.values()))
    assert all_costs[r.threshold] <= best + tol
    # no smaller threshold is clearly cheaper
    assert all(c >= all_costs[r.threshold] - tol for t, c in all_costs.items() if t < r.threshold)
    assert math.isclose(r.cost, float(all_costs[r.threshold]), rel_tol=1e-9, abs_tol=1e-9)


@given(
    st.lists(st.tuples(st.floats(-1, 1), st.booleans(), st.floats(1e-3, 1e3)), min_size=1, max_size=80), costs, costs
)
def test_float_weights_within_stated_rounding_bound(evs, fn, fp):
    """Arbitrary float weights: the returned threshold's exact cost is within the README's
    margin 4 * n * eps * (fn * W1 + fp * W0) of the exact optimum (twice each cost's rounding)."""
    s, y, w = zip(*evs)
    r = thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=w)
    _, best, all_costs = brute_force(evs, fn, fp)
    total = sum(Fraction(fn) * Fraction(x) if lab else Fraction(fp) * Fraction(x) for _, lab, x in evs)
    bound = 4 * len(evs) * Fraction(2.0**-52) * total
    assert all_costs[r.threshold] <= best + bound
    assert all(c >= all_costs[r.threshold] - bound for t, c in all_costs.items() if t < r.threshold)


def test_all_positive_gives_minus_inf_and_ties_move_together():
    r = thors_threshold([0.5, 0.5, 0.5], [1, 0, 1], fn_cost=1, fp_cost=1)
    assert r.threshold == -math.inf and r.cost == 1.0
    # a tie holding 1 positive and 1 negative: the threshold never splits it
    r = thors_threshold([0.1, 0.5, 0.5, 0.9], [0, 1, 0, 1], fn_cost=1, fp_cost=1)
    assert r.threshold in (-math.inf, 0.1, 0.5, 0.9)
    assert r.threshold == 0.1 and r.cost == 1.0


def test_equal_costs_take_the_smallest_threshold():
    # cost is 1 at -inf (one negative predicted positive) and 1 at 0.3 (one positive missed)
    r = thors_threshold([0.3, 0.7], [1, 0], fn_cost=1, fp_cost=1)
    assert r.threshold == -math.inf


def test_cost_matrix_equals_effective_costs():
    rng = np.random.default_rng(1)
    s, y = rng.random(500), rng.random(500) < 0.3
    a = thors_threshold(s, y, cost_matrix=[[2.0, 12.0], [102.0, 2.0]])
    b = thors_threshold(s, y, fn_cost=100, fp_cost=10)
    assert a.threshold == b.threshold and a.cost == b.cost


def test_large_random_agrees_between_sort_and_argsort_paths():
    rng = np.random.default_rng(7)
    s = np.round(rng.normal(size=20000), 2)
    y = rng.random(20000) < 0.1
    a = thors_threshold(s, y, fn_cost=20, fp_cost=1)
    b = thors_threshold(s, y, fn_cost=20, fp_cost=1, sample_weight=np.ones(20000))
    assert a == b
