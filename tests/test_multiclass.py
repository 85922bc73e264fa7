"""Multiclass THORS: exact == brute force over all candidate threshold vectors; sequential >= exact."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from thors_stream import thors_threshold
from thors_stream.multiclass import (
    MulticlassThresholds,
    bayes_predict,
    default_order,
    empirical_cost,
    fit_exact,
    fit_sequential,
)

INF = float("inf")
TIED = [0.0, 0.25, 0.5, 0.75, 1.0]  # few values: ties everywhere, exact in float


def rule(row, order, thresholds):
    """The documented decision rule, written plainly for one event."""
    for c, t in zip(order[:-1], thresholds):
        if row[c] > t:
            return c
    return order[-1]


def brute_force(S, y, C, order, w):
    """Every vector of candidates (-inf and each distinct score of the stage's class), exact costs,
    the lexicographically smallest optimum."""
    m = len(order)
    cands = [[-INF, *sorted({row[c] for row in S})] for c in order[:-1]]
    best, best_vec = None, None
    for vec in itertools.product(*cands):  # lexicographic order
        cost = sum(Fraction(wi) * Fraction(C[yi][rule(row, order, vec)]) for row, yi, wi in zip(S, y, w))
        if best is None or cost < best:
            best, best_vec = cost, vec
    assert len(best_vec) == m - 1
    return best_vec, best


@st.composite
def problems(draw, m=None):
    m = draw(st.sampled_from([2, 3, 4])) if m is None else m
    n_max = {2: 20, 3: 12, 4: 7}[m]
    n = draw(st.integers(1, n_max))
    score = st.one_of(st.sampled_from(TIED), st.integers(-8, 8).map(lambda k: k / 8))
    S = [[draw(score) for _ in range(m)] for _ in range(n)]
    y = [draw(st.integers(0, m - 1)) for _ in range(n)]
    C = [[draw(st.integers(-2, 9)) for _ in range(m)] for _ in range(m)]
    w = draw(st.one_of(st.none(), st.lists(st.integers(1, 4), min_size=n, max_size=n)))
    order = draw(st.one_of(st.none(), st.permutations(range(m))))
    return S, y, C, w, order


@given(problems())
def test_exact_equals_brute_force_and_sequential_is_no_better(p):
    S, y, C, w, order = p
    r = fit_exact(S, y, C, order=order, sample_weight=w)
    o = default_order(C) if order is None else tuple(order)
    assert r.order == o
    vec, cost = brute_force(S, y, C, o, [1] * len(y) if w is None else w)
    assert r.thresholds == vec
    assert Fraction(r.cost) == cost
    seq = fit_sequential(S, y, C, order=order, sample_weight=w)
    assert seq.order == o
    assert Fraction(seq.cost) >= cost
    # reported costs are the costs of the rule's own predictions, recomputed plainly
    for res in (r, seq):
        pred = [rule(row, res.order, res.thresholds) for row in S]
        assert res.predict(S).tolist() == pred
        ww = [1] * len(y) if w is None else w
        assert Fraction(res.cost) == sum(Fraction(wi) * C[yi][pi] for yi, pi, wi in zip(y, pred, ww))


@given(problems(m=2))
def test_two_classes_sequential_is_exact_and_is_binary_thors(p):
    S, y, C, w, order = p
    seq = fit_sequential(S, y, C, order=order, sample_weight=w)
    ex = fit_exact(S, y, C, order=order, sample_weight=w)
    assert seq == MulticlassThresholds(ex.thresholds, ex.order, ex.cost, "sequential")
    first, second = seq.order
    fp = C[second][first] - C[second][second]  # an event of the fallback class taken as `first`
    fn = C[first][second] - C[first][first]  # an event of `first` left to the fallback
    if fp > 0 and fn > 0:
        scores = [row[first] for row in S]
        b = thors_threshold(scores, [yi == first for yi in y], fn_cost=fn, fp_cost=fp, sample_weight=w)
        assert seq.thresholds == (b.threshold,)


@given(problems(m=3) | problems(m=4))
def test_sequential_stage_is_the_documented_greedy_step(p):
    """Each stage's threshold is the smallest minimiser of take-cost C[i][pi_k] vs pass-cost
    min over remaining classes, on the events left undecided by the earlier stages."""
    S, y, C, w, order = p
    w = [1] * len(y) if w is None else w
    r = fit_sequential(S, y, C, order=order, sample_weight=w)
    o, th = r.order, r.thresholds
    undecided = list(range(len(y)))
    for k in range(len(o) - 1):
        ck, rest = o[k], o[k + 1:]

        def stage_cost(t, ck=ck, rest=rest, undecided=undecided):
            return sum(Fraction(w[e]) * (C[y[e]][ck] if S[e][ck] > t else min(C[y[e]][j] for j in rest))
                       for e in undecided)

        cands = [-INF, *sorted({S[e][ck] for e in undecided})]
        costs = [stage_cost(t) for t in cands]
        assert th[k] == cands[costs.index(min(costs))]
        undecided = [e for e in undecided if not S[e][ck] > th[k]]


def test_rule_is_strict_and_last_class_is_fallback():
    r = MulticlassThresholds((0.5, 0.2), (2, 0, 1), 0.0, "exact")
    S = [[0.9, 0.0, 0.5], [0.2, 0.0, 0.5], [0.3, 0.0, 0.1], [0.9, 1.0, 0.6]]
    # row 0: s2 = 0.5 is not > 0.5, s0 = 0.9 > 0.2 -> 0; row 1: 0.2 not > 0.2 -> fallback 1
    assert r.predict(S).tolist() == [0, 1, 0, 2]


def test_exact_can_beat_sequential():
    # Sequential stage 1 (class 0) takes event 2 greedily (passing looks expensive), which
    # forces a costly second stage; the exact search leaves it for class 1.
    rng = np.random.default_rng(5)
    C = [[0, 4, 4], [3, 0, 1], [3, 1, 0]]
    found = False
    for _ in range(200):
        S = rng.integers(0, 4, size=(8, 3)) / 4
        y = rng.integers(0, 3, size=8)
        if fit_sequential(S, y, C, order=[0, 1, 2]).cost > fit_exact(S, y, C, order=[0, 1, 2]).cost:
            found = True
            break
    assert found, "the greedy scheme is never worse on 200 random problems: suspicious"


def test_default_order_is_decreasing_misclassification_cost():
    C = [[0, 2, 2], [9, 1, 9], [3, 3, 0], [0, 0, 0]]
    C = [row + [1] for row in C[:3]] + [[1, 1, 1, 0]]
    # kappa = mean off-diagonal minus diagonal: 5/3, 20/3, 7/3, 1
    assert default_order(C) == (1, 2, 0, 3)
    assert default_order([[0, 1], [1, 0]]) == (0, 1)  # ties by index


def test_bayes_predict_and_empirical_cost():
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    C = np.array([[0, 1, 10], [1, 0, 1], [1, 1, 0]])
    exp = [int(np.argmin([sum(P[e, i] * C[i, j] for i in range(3)) for j in range(3)])) for e in range(2)]
    assert bayes_predict(P, C).tolist() == exp
    assert empirical_cost([0, 2, 1], [2, 2, 0], C, sample_weight=[1, 5, 2]) == 1 * 1 + 0 + 2 * 1


def test_exact_refuses_intractable_enumeration():
    rng = np.random.default_rng(0)
    S = rng.random((100, 5))
    y = rng.integers(0, 5, 100)
    C = 1 - np.eye(5)
    with pytest.raises(ValueError, match="max_evaluations=1,000"):
        fit_exact(S, y, C, max_evaluations=1000)
    assert fit_sequential(S, y, C).cost <= 100


GOOD_S = [[0.1, 0.9], [0.8, 0.2]]
GOOD_C = [[0, 1], [1, 0]]


@pytest.mark.parametrize("fit", [fit_sequential, fit_exact])
@pytest.mark.parametrize(
    "kw,exc,match",
    [
        ({"scores": [0.1, 0.2]}, ValueError, r"2-dimensional .* shape \(2,\)"),
        ({"scores": [[0.1, float("nan")], [0.8, 0.2]]}, ValueError, "nan at row 0, column 1"),
        ({"scores": [[0.1], [0.8]]}, ValueError, "at least 2 class columns"),
        ({"scores": np.zeros((0, 2)), "y": []}, ValueError, "empty"),
        ({"scores": [["a", "b"], ["c", "d"]]}, TypeError, "real numbers"),
        ({"y": [0, 2]}, ValueError, r"0\.\.1, got 2 at position 1"),
        ({"y": [0.5, 1]}, ValueError, "got 0.5 at position 0"),
        ({"y": [True, False]}, ValueError, "dtype bool"),
        ({"y": [0]}, ValueError, "length 1"),
        ({"cost_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]}, ValueError, r"2x2 .* shape \(3, 3\)"),
        ({"cost_matrix": [[0, float("inf")], [1, 0]]}, ValueError, r"inf at \[0\]\[1\]"),
        ({"cost_matrix": [[0, "x"], [1, 0]]}, TypeError, "cost_matrix"),
        ({"order": [0, 0]}, ValueError, r"permutation of 0\.\.1, got \[0, 0\]"),
        ({"order": [0.0, 1.0]}, TypeError, "order"),
        ({"order": [True, False]}, TypeError, "order"),
        ({"sample_weight": [1, -1]}, ValueError, "-1.0 at position 1"),
    ],
)
def test_bad_input(fit, kw, exc, match):
    args = {"scores": GOOD_S, "y": [1, 0], "cost_matrix": GOOD_C, **kw}
    with pytest.raises(exc, match=match):
        fit(**args)


@given(problems(m=3))
def test_exact_over_all_orders_equals_brute_force(p):
    S, y, C, w, _ = p
    ww = [1] * len(y) if w is None else w
    r = fit_exact(S, y, C, order="all", sample_weight=w)
    best = None
    for o in itertools.permutations(range(3)):  # lexicographic: the first optimal order wins
        vec, cost = brute_force(S, y, C, o, ww)
        if best is None or cost < best[2]:
            best = (o, vec, cost)
    assert (r.order, r.thresholds) == best[:2]
    assert Fraction(r.cost) == best[2]
    assert r.cost <= fit_exact(S, y, C, sample_weight=w).cost


def test_order_all_bad_values():
    with pytest.raises(ValueError, match="'best'"):
        fit_exact(GOOD_S, [1, 0], GOOD_C, order="best")
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="orders, more than max_evaluations=100"):
        fit_exact(rng.random((30, 4)), rng.integers(0, 4, 30), 1 - np.eye(4), order="all", max_evaluations=100)
