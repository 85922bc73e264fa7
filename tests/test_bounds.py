"""Bounds on the THORS threshold: coverage by simulation, exactness of the pieces, edge cases."""

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from thors_stream import StreamingThors, ThresholdResult, thors_threshold
from thors_stream.bounds import (
    CostInterval,
    ThresholdBounds,
    bernstein_quantile,
    bounds_arrays,
    cdf_lower,
    cdf_upper,
    exact_quantile,
    threshold_bounds,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bounds_coverage as bc

LEVEL = 0.90
REPS = 1000


def floor_cov(level: float, reps: int) -> float:
    return level - 3 * math.sqrt(level * (1 - level) / reps)


# ----------------------------------------------------------------- coverage (simulation)
SETTINGS = [
    ("gauss", 0.5, 300, None, 101),
    ("gauss-ties", 0.5, 300, None, 102),  # discrete scores, heavy ties
    ("beta", 0.5, 400, (1.0, 4.0), 103),  # fn_cost < fp_cost
    ("cauchy", 0.02, 1000, None, 104),  # heavy tails, ~20 positives, degenerate draws
]


@pytest.mark.parametrize(("dist", "prior", "n", "costs", "seed"), SETTINGS)
def test_default_bounds_reach_nominal_coverage(dist, prior, n, costs, seed):
    res = bc.simulate(bc.DISTS[dist], prior, n, REPS, seed=seed, levels=(LEVEL,), costs=costs)
    hold = res["hold"][LEVEL]
    low = {k: hold[k] / REPS for k in bc.DEFAULT if hold[k] / REPS < floor_cov(LEVEL, REPS)}
    assert not low, f"undercoverage at nominal {LEVEL}: {low}"


def test_harness_detects_undercoverage_of_the_papers_bounds():
    # the same harness must be able to fail: Theorem 3 treats n_test shared-rate terms as
    # independent, Theorem 2 treats the selected ranks as fixed
    res = bc.simulate(bc.DISTS["gauss"], 0.02, 2000, REPS, seed=7, levels=(LEVEL,))
    hold = res["hold"][LEVEL]
    assert hold["paper_cost_upper"] / REPS < floor_cov(LEVEL, REPS)
    assert hold["paper_fnr_upper"] / REPS < floor_cov(LEVEL, REPS)
    assert min(hold[k] for k in bc.DEFAULT) / REPS >= floor_cov(LEVEL, REPS)


@pytest.mark.parametrize("method", ["hybrid", "dkw", "bonferroni"])
def test_band_is_simultaneous_over_all_ranks(method):
    rng = np.random.default_rng(3)
    n, reps, delta = 60, 4000, 0.1
    u = np.sort(rng.random((reps, n)), axis=1)
    k = np.arange(0, n + 1)
    a = cdf_lower(k, n, delta, method)  # a_k, k = 0..n
    b = cdf_upper(k, n, delta, method)  # b_{k+1}, k = 0..n
    below = np.mean(np.all(u >= a[1:], axis=1))
    above = np.mean(np.all(u <= b[:-1], axis=1))
    assert below >= floor_cov(1 - delta, reps) and above >= floor_cov(1 - delta, reps)
    # the paper's pointwise quantiles are far from simultaneous
    pa = cdf_lower(k, n, delta, "pointwise")
    assert np.mean(np.all(u >= pa[1:], axis=1)) < 0.5


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_thors_matches_library(seed):
    rng = np.random.default_rng(seed)
    y = rng.random((20, 40)) < 0.3
    s = np.round(rng.normal(size=y.shape) + y, 1)  # ties
    got = bc.thors_many(s, y, 7.0, 2.0)
    for i in range(20):
        r = thors_threshold(s[i], y[i], fn_cost=7, fp_cost=2)
        assert (r.threshold, r.count0, r.count1, r.count_k0, r.count_k1) == (
            got["threshold"][i], got["n0"][i], got["n1"][i], got["k0"][i], got["k1"][i])


@given(
    c0=st.integers(0, 300), c1=st.integers(0, 300), f0=st.floats(0, 1), f1=st.floats(0, 1),
    conf=st.floats(0.5, 0.999), n_test=st.integers(0, 3000),
    fn=st.sampled_from([1.0, 5.0, 0.3, math.pi]), fp=st.sampled_from([1.0, 2.0, 10.0]),
    prior=st.sampled_from([None, 0.1, 0.5]),
)
def test_vectorised_engine_equals_public_function_and_exact_never_looser(c0, c1, f0, f1, conf, n_test, fn, fp, prior):
    if c0 + c1 == 0:
        c1 = 1
    k0, k1 = int(f0 * c0), int(f1 * c1)
    r = ThresholdResult(0.0, 0.0, float(c0), float(c1), float(k0), float(k1), c0, c1, k0, k1, fn, fp, None)
    b = threshold_bounds(r, conf, n_test, class_prior=prior)
    arr = bounds_arrays([c0], [c1], [k0], [k1], fn_cost=fn, fp_cost=fp, confidence=conf, n_test=n_test,
                        class_prior=prior)
    for key in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper", "risk_upper", "cost_upper", "cost_upper_exact"):
        assert getattr(b, key) == arr[key][0]
    values = [v for v in dataclasses.astuple(b) if isinstance(v, float)]
    assert all(math.isfinite(v) for v in values)
    assert b.cost_upper_exact <= b.cost_upper <= n_test * max(fn, fp) + 1e-9
    assert 0 <= b.fpr_lower <= b.fpr <= b.fpr_upper <= 1 and 0 <= b.fnr_lower <= b.fnr <= b.fnr_upper <= 1
    assert b.cost_interval.lower <= b.cost_interval.upper
    assert b.expected_cost_upper == n_test * b.risk_upper


# ----------------------------------------------------------------- exact quantile
def brute_quantile(n, a, b, big, small, delta):
    """Enumerate the trinomial: smallest attainable sum s with P(S <= s) >= 1 - delta."""
    vals, probs = [], []
    for x in range(n + 1):
        for y in range(n - x + 1):
            vals.append(big * x + small * y)
            probs.append(stats.multinomial.pmf([x, y, n - x - y], n, [a, b - a, 1 - b]))
    order = np.argsort(vals)
    v, cdf = np.asarray(vals)[order], np.cumsum(np.asarray(probs)[order])
    q = v[np.argmax(cdf >= 1 - delta - 1e-12)]
    tail = np.sum(np.asarray(probs)[np.asarray(vals) > q + 1e-9])
    return q, tail


@pytest.mark.parametrize(("n", "a", "b", "big", "small"), [
    (0, 0.1, 0.3, 5.0, 1.0), (1, 0.1, 0.3, 5.0, 1.0), (12, 0.05, 0.4, 5.0, 1.0), (25, 0.2, 0.3, 3.0, 2.0),
    (25, 0.0, 0.3, 3.0, 2.0), (25, 0.3, 0.3, 3.0, 2.0), (25, 0.1, 0.2, 1.0, 1.0), (20, 0.1, 0.5, math.pi, 1.0),
    (30, 0.3, 0.9, 10.0, 0.5), (30, 0.0, 0.0, 10.0, 0.5), (30, 0.5, 1.0, 2.0, 1.0),
])
@pytest.mark.parametrize("delta", [0.01, 0.1, 0.4])
def test_exact_quantile_matches_enumeration(n, a, b, big, small, delta):
    q, _ = brute_quantile(n, a, b, big, small, delta)
    got = float(exact_quantile(n, a, b, big, small, delta))
    bern = float(bernstein_quantile(n, a, b, big, small, delta))
    assert got <= bern
    if got < bern:  # not capped: it is the exact quantile
        assert got == pytest.approx(q, rel=1e-7, abs=1e-9)
    else:
        assert got >= q - 1e-9
    # Bernstein is a valid tail bound
    vals = [(big * x + small * y, stats.multinomial.pmf([x, y, n - x - y], n, [a, b - a, 1 - b]))
            for x in range(n + 1) for y in range(n - x + 1)]
    assert sum(p for v, p in vals if v > bern + 1e-9) <= delta + 1e-12


def test_exact_quantile_large_n_by_monte_carlo():
    rng = np.random.default_rng(11)
    n, a, b, d = 5000, 0.03, 0.2, 0.02
    q = float(exact_quantile(n, a, b, 7.0, 1.0, d))
    x = rng.multinomial(n, [a, b - a, 1 - b], size=200_000)
    s = 7 * x[:, 0] + x[:, 1]
    over = np.mean(s > q)
    at_or_over = np.mean(s >= q)
    se = math.sqrt(d * (1 - d) / s.size)
    assert over <= d + 4 * se and at_or_over >= d - 4 * se
    assert q < float(bernstein_quantile(n, a, b, 7.0, 1.0, d))


# ----------------------------------------------------------------- the paper's formulas
def test_paper_rate_bounds_are_theorem_2_binomial_sums():
    n0, n1, k0, k1, conf = 80, 30, 55, 6, 0.9
    r = ThresholdResult(0.0, 0.0, n0, n1, k0, k1, n0, n1, k0, k1, 3.0, 1.0)
    b = r.bounds(conf)

    def binsum(lo, n, x):  # sum_{j=lo}^{n} C(n, j) x^j (1 - x)^(n - j)
        return sum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(lo, n + 1))

    # P(y0 <= x) = sum_{j=n0-k0+1}^{n0}; P(z0 <= x) = sum_{j=n0-k0}^{n0}; likewise for class 1
    assert binsum(n0 - k0 + 1, n0, b.paper_fpr_upper) == pytest.approx(conf)
    assert binsum(n0 - k0, n0, b.paper_fpr_lower) == pytest.approx(1 - conf)
    assert binsum(k1 + 1, n1, b.paper_fnr_upper) == pytest.approx(conf)
    assert binsum(k1, n1, b.paper_fnr_lower) == pytest.approx(1 - conf)


def test_paper_cost_bounds_transcribe_theorems_3_and_5():
    n0, n1, k0, k1, fn, fp, n_te, conf = 300, 100, 200, 10, 10.0, 1.0, 500, 0.95
    r = ThresholdResult(0.0, 0.0, n0, n1, k0, k1, n0, n1, k0, k1, fn, fp)
    b = r.bounds(conf, n_test=n_te)
    pi1, pi0, beta, A = n1 / (n0 + n1), n0 / (n0 + n1), fp / fn, fn
    c_star = n_te * A * (beta * pi0 * (n0 - k0 + 1) / (n0 + 1) + pi1 * (k1 + 1) / (n1 + 1))
    M = max(pi1 * A * max((k1 + 1) / (n1 + 1), 1 - (k1 + 1) / (n1 + 1)),
            beta * pi0 * A * max((n0 - k0 + 1) / (n0 + 1), 1 - (n0 - k0 + 1) / (n0 + 1)))
    sigma = math.sqrt(n_te * A**2 * (pi1**2 * (k1 + 1) * (n1 - k1) / ((n1 + 1) ** 2 * (n1 + 2))
                                     + (beta * pi0) ** 2 * k0 * (n0 - k0 + 1) / ((n0 + 1) ** 2 * (n0 + 2))))
    t = optimize.brentq(lambda t: math.exp(-t * t / (2 + 2 * M * t / (3 * sigma))) - (1 - conf), 1e-9, 1e6)
    assert b.paper_cost_upper == pytest.approx(c_star + t * sigma, rel=1e-9)
    # Theorem 5: the stated probability at the solved eps equals the confidence
    c2 = c_star
    eps = (b.paper_cost_interval.upper - c2) / (n_te * A * (pi1 + beta * pi0))
    terms = [((n1 - k1) / (n1 * (n1 + 1)), n1), (k1 / (n1 * (n1 + 1)), n1),
             (k0 / (n0 * (n0 + 1)), n0), ((n0 - k0) / (n0 * (n0 + 1)), n0)]
    prob = 1 - n_te * sum(math.exp(-2 * (eps + o) ** 2 * n) for o, n in terms)
    assert prob == pytest.approx(conf, abs=1e-6)
    c1 = n_te * A * (pi1 * k1 / (n1 + 1) + beta * pi0 * (n0 - k0) / (n0 + 1))
    assert b.paper_cost_interval.lower == pytest.approx(max(c1 - (b.paper_cost_interval.upper - c2), 0.0))


# ----------------------------------------------------------------- semantics and edge cases
def finite_fields(b: ThresholdBounds) -> bool:
    vals = []
    for v in dataclasses.astuple(b):
        vals.extend(v if isinstance(v, tuple) else [v])
    return all(math.isfinite(v) for v in vals if isinstance(v, float))


def test_degenerate_results_give_defined_values():
    # one class empty: no information on that class's rate
    all_pos = thors_threshold([0.1, 0.5, 0.9], [1, 1, 1], fn_cost=1, fp_cost=1)
    b = all_pos.bounds(0.9, n_test=10)
    assert (b.fpr_lower, b.fpr_upper, b.fpr) == (0.0, 1.0, 0.0) and finite_fields(b)
    all_neg = thors_threshold([0.1, 0.5, 0.9], [0, 0, 0], fn_cost=1, fp_cost=1)
    b = all_neg.bounds(0.9, n_test=10)
    assert (b.fnr_lower, b.fnr_upper, b.fnr) == (0.0, 1.0, 0.0) and finite_fields(b)
    assert b.class_prior == 0.0 and b.risk_upper > 0  # the prior's upper bound is > 0
    # k0 = 0 (threshold -inf): every negative is a false positive, FPR upper bound 1
    r = thors_threshold([0.1, 0.2, 0.3, 0.9], [1, 0, 1, 1], fn_cost=10, fp_cost=1)
    assert r.threshold == -math.inf and r.count_k0 == 0
    b = r.bounds(0.9, n_test=5)
    assert b.fpr_upper == 1.0 and b.fpr == 1.0 and 0 < b.fpr_lower < 1 and finite_fields(b)
    # k1 = n1: every positive below the threshold, FNR upper bound 1
    r = ThresholdResult(1.0, 0.0, 5.0, 3.0, 5.0, 3.0, 5, 3, 5, 3, 1.0, 1.0)
    b = r.bounds(0.9, n_test=5)
    assert b.fnr_upper == 1.0 and b.fnr == 1.0 and b.fpr_lower == 0.0 and finite_fields(b)
    # n_test = 0: nothing to pay
    b = thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1).bounds(0.95, n_test=0)
    assert (b.cost_upper, b.cost_upper_exact, b.expected_cost_upper) == (0.0, 0.0, 0.0)
    assert b.cost_interval == CostInterval(0.0, 0.0, 0.95) and b.paper_cost_interval[:2] == (0.0, 0.0)
    assert b.paper_cost_upper == 0.0 and finite_fields(b)
    # n_test None: no cost-of-n_test fields
    b = thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1).bounds()
    assert b.cost_upper is None and b.cost_interval is None and b.paper_cost_upper is None
    assert b.n_test is None and math.isfinite(b.risk_upper)


def test_weighted_and_prior_results_use_counts():
    rng = np.random.default_rng(5)
    y = rng.random(400) < 0.3
    s = rng.normal(size=400) + y
    w = rng.uniform(0.5, 3.0, 400)
    r = thors_threshold(s, y, fn_cost=5, fp_cost=1, sample_weight=w)
    b = r.bounds(0.9, n_test=100)
    assert b.weighted
    unit = dataclasses.replace(r, n0=float(r.count0), n1=float(r.count1), k0=float(r.count_k0), k1=float(r.count_k1))
    assert dataclasses.replace(b, weighted=False) == unit.bounds(0.9, n_test=100)
    assert b.fpr == (r.count0 - r.count_k0) / r.count0
    assert not thors_threshold(s, y, fn_cost=5, fp_cost=1).bounds(0.9).weighted
    # a result computed with a class prior: that prior is taken as known
    rp = thors_threshold(s, y, fn_cost=5, fp_cost=1, class_prior=0.1)
    bp = rp.bounds(0.9, n_test=100)
    assert bp.prior_known and bp.class_prior == 0.1
    assert bp == threshold_bounds(rp, 0.9, 100, class_prior=0.1)


def test_streaming_window_bounds_equal_batch_bounds():
    rng = np.random.default_rng(8)
    y = rng.random(700) < 0.2
    s = np.round(rng.normal(size=700) + 1.2 * y, 2)
    st_ = StreamingThors(fn_cost=8, fp_cost=1, window=500)
    st_.update_many(s, y)
    got = st_.result().bounds(0.95, n_test=250)
    want = thors_threshold(s[-500:], y[-500:], fn_cost=8, fp_cost=1).bounds(0.95, n_test=250)
    assert got == want


def test_bounds_widen_with_confidence_and_tighten_with_data():
    def b(n, conf):
        k0, k1 = int(0.7 * n), int(0.1 * n)
        return ThresholdResult(0.0, 0.0, n, n, k0, k1, n, n, k0, k1, 4.0, 1.0).bounds(conf, n_test=100)

    for lo, hi in [(0.8, 0.9), (0.9, 0.99)]:
        a, c = b(500, lo), b(500, hi)
        assert c.fpr_upper >= a.fpr_upper and c.fnr_upper >= a.fnr_upper and c.fnr_lower <= a.fnr_lower
        assert c.cost_upper_exact >= a.cost_upper_exact and c.risk_upper >= a.risk_upper
    assert b(5000, 0.9).fnr_upper < b(500, 0.9).fnr_upper < b(50, 0.9).fnr_upper


def test_known_prior_drops_the_prior_term():
    r = ThresholdResult(0.0, 0.0, 700, 300, 500, 30, 700, 300, 500, 30, 5.0, 1.0)
    est = r.bounds(0.95)
    known = r.bounds(0.95, class_prior=0.3)
    assert known.prior_known and not est.prior_known and known.risk_upper < est.risk_upper


def test_hybrid_is_the_tighter_part_at_half_the_failure_probability():
    k = np.arange(0, 201)
    assert np.allclose(cdf_lower(k, 200, 0.05, "hybrid"),
                       np.maximum(cdf_lower(k, 200, 0.025, "dkw"), cdf_lower(k, 200, 0.025, "bonferroni")))
    assert np.allclose(cdf_upper(k, 200, 0.05, "hybrid"),
                       np.minimum(cdf_upper(k, 200, 0.025, "dkw"), cdf_upper(k, 200, 0.025, "bonferroni")))
    for method in ("hybrid", "dkw", "bonferroni", "pointwise"):
        assert np.all(cdf_lower(k, 200, 0.05, method) <= k / 200 + 1e-12)
        assert np.all(cdf_upper(k, 200, 0.05, method) >= k / 200 - 1e-12)


BAD = [
    ({"confidence": 0}, "confidence"), ({"confidence": 1}, "confidence"), ({"confidence": -0.1}, "-0.1"),
    ({"confidence": 1.5}, "1.5"), ({"confidence": math.nan}, "nan"), ({"confidence": "0.9"}, "'0.9'"),
    ({"confidence": True}, "True"), ({"n_test": -1}, "-1"), ({"n_test": 2.5}, "2.5"), ({"n_test": "10"}, "'10'"),
    ({"n_test": True}, "True"), ({"n_test": math.inf}, "inf"), ({"method": "exactly"}, "'exactly'"),
    ({"class_prior": 0.0}, "0.0"), ({"class_prior": 1.0}, "1.0"),
]


@pytest.mark.parametrize(("kw", "named"), BAD)
def test_bad_input_raises_naming_the_value(kw, named):
    r = thors_threshold([0.1, 0.9, 0.5], [0, 1, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        r.bounds(**kw)


@pytest.mark.parametrize("counts", [(0, 0, 0, 0), (5, 5, 6, 0), (5, 5, 0, -1)])
def test_result_without_events_or_with_inconsistent_counts_raises(counts):
    c0, c1, k0, k1 = counts
    r = ThresholdResult(0.0, 0.0, c0, c1, k0, k1, c0, c1, k0, k1, 1.0, 1.0)
    with pytest.raises(ValueError, match=f"count0={c0}, count1={c1}"):
        r.bounds()


def test_integral_float_n_test_is_accepted():
    r = thors_threshold([0.1, 0.9, 0.5], [0, 1, 1], fn_cost=1, fp_cost=1)
    assert r.bounds(n_test=10.0) == r.bounds(n_test=10)
    assert r.bounds(n_test=np.int64(10)) == r.bounds(n_test=10)


def test_dkw_band_above_half_failure_probability_is_capped():
    # Massart's one-sided constant needs d <= 1/2: larger d is treated as 1/2
    assert cdf_lower(50, 100, 0.8, "dkw") == cdf_lower(50, 100, 0.5, "dkw")
    r = ThresholdResult(0.0, 0.0, 9, 9, 4, 4, 9, 9, 4, 4, 1.0, 1.0)
    assert finite_fields(r.bounds(0.2, n_test=3, method="dkw"))
