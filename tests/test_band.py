"""The exact simultaneous band (thors_stream._band) and the default bounds built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from thors_stream._band import band_level, constrained_ranks, ell_lower, ell_upper, no_crossing_probability
from thors_stream.bounds import bounds_arrays, cdf_lower, cdf_upper


# ---------------------------------------------------------------- the probability, computed
def test_small_cases_by_hand():
    # n = 1: P(a <= U <= b) = b - a
    assert no_crossing_probability(1, lower=[0.2], upper=[0.7]) == pytest.approx(0.5, abs=1e-15)
    # n = 2: P(U_(1) >= a, U_(2) >= b) = (1 - b)^2 + 2 (b - a)(1 - b) for a <= b
    a, b = 0.1, 0.4
    assert no_crossing_probability(2, lower=[a, b]) == pytest.approx((1 - b) ** 2 + 2 * (b - a) * (1 - b), abs=1e-15)
    # n = 2: P(U_(1) <= c, U_(2) <= d) = d^2 - (d - c)^2 for c <= d
    c, d = 0.3, 0.8
    assert no_crossing_probability(2, upper=[c, d]) == pytest.approx(d**2 - (d - c) ** 2, abs=1e-15)
    assert no_crossing_probability(5) == 1.0 and no_crossing_probability(0) == 1.0


@pytest.mark.parametrize("n, d", [(5, 0.3), (37, 0.12), (400, 0.04)])
def test_equals_the_exact_kolmogorov_smirnov_laws(n, d):
    i = np.arange(1, n + 1)
    one = no_crossing_probability(n, lower=i / n - d)  # D_n^+ <= d
    two = no_crossing_probability(n, lower=i / n - d, upper=(i - 1) / n + d)  # D_n <= d
    assert abs(one - stats.ksone.cdf(d, n)) < 1e-11  # Birnbaum-Tingey: exact for every n
    if n <= 140:  # scipy's kstwo is exact (Durbin's matrix) up to n = 140, approximate above
        assert abs(two - stats.kstwo.cdf(d, n)) < 1e-11


def test_equals_monte_carlo_for_an_arbitrary_band():
    rng = np.random.default_rng(1)
    n, reps = 30, 200_000
    lo = np.sort(rng.uniform(0, 0.8, n)) * np.linspace(0.2, 1, n)
    hi = np.minimum(1.0, np.sort(rng.uniform(0.2, 1.4, n)))
    hi = np.maximum(hi, lo)
    p = no_crossing_probability(n, lower=lo, upper=hi)
    u = np.sort(rng.random((reps, n)), axis=1)
    mc = np.mean(np.all((u >= lo) & (u <= hi), axis=1))
    assert abs(p - mc) < 4 * math.sqrt(p * (1 - p) / reps) + 1e-4


# ---------------------------------------------------------------- the calibrated band
@pytest.mark.parametrize("n", [1, 7, 120, 1700])
@pytest.mark.parametrize("sides", [1, 2])
def test_the_band_is_calibrated_to_the_level_from_below(n, sides):
    delta = 0.1
    alpha = band_level(n, delta, sides)
    r = constrained_ranks(n)
    lo = special.betaincinv(r, n + 1 - r, alpha)
    p = no_crossing_probability(n, lower=lo, upper=(1 - lo[::-1]) if sides == 2 else None, ranks=r)
    assert 1 - delta <= p <= 1 - (1 - 1e-2) * delta + 1e-12 or n == 1


def test_coverage_by_simulation_with_a_known_truth():
    """Normal scores, the true CDF known: the band holds at every threshold at once in about
    1 - delta of the samples (not much more: it is calibrated, not conservative)."""
    rng = np.random.default_rng(7)
    n, delta, reps = 60, 0.2, 20_000
    x = np.sort(rng.standard_normal((reps, n)), axis=1)
    g = stats.norm.cdf(x)  # F at each order statistic
    k = np.arange(1, n + 1)
    a = cdf_lower(k, n, delta)  # F(X_(k)) >= a_k  for every k
    b = cdf_upper(k - 1, n, delta)  # F(X_(k)) <= b_k  for every k
    low_ok = np.mean(np.all(g >= a - 1e-15, axis=1))
    up_ok = np.mean(np.all(g <= b + 1e-15, axis=1))
    se = math.sqrt(delta * (1 - delta) / reps)
    for cov in (low_ok, up_ok):
        assert 1 - delta - 3 * se <= cov <= 1 - 0.99 * delta + 3 * se


def test_ties_and_atoms_keep_the_band_valid():
    """A discrete score law: at every threshold t, with k scores <= t, F(t) lies in [a_k, b_{k+1}]."""
    rng = np.random.default_rng(3)
    n, delta, reps = 40, 0.1, 4000
    support = np.arange(6)
    pmf = np.array([0.05, 0.3, 0.1, 0.3, 0.15, 0.1])
    cdf = np.cumsum(pmf)
    ok = 0
    for _ in range(reps):
        s = rng.choice(support, n, p=pmf)
        k = np.array([(s <= t).sum() for t in support])
        ok += bool(np.all((cdf >= cdf_lower(k, n, delta) - 1e-15) & (cdf <= cdf_upper(k, n, delta) + 1e-15)))
    assert ok / reps >= 1 - 2 * delta  # each side holds w.p. >= 1 - delta


def test_exact_is_tighter_in_the_tails_than_the_union_bound():
    n = 500
    for k in (5, 25, 475, 495):
        assert cdf_lower(k, n, 0.05) > cdf_lower(k, n, 0.05, "hybrid")
        assert cdf_upper(k, n, 0.05) < cdf_upper(k, n, 0.05, "hybrid")


def test_levels_are_cached():
    band_level.cache_clear()
    band_level(321, 0.05, 1)
    band_level(321, 0.05, 1)
    info = band_level.cache_info()
    assert info.hits >= 1 and info.currsize >= 1


def test_edges_of_the_band():
    assert ell_lower([0], 10, 0.01).tolist() == [0.0] and ell_upper([11], 10, 0.01).tolist() == [1.0]
    assert float(cdf_lower(0, 10, 0.05)) == 0.0 and float(cdf_upper(10, 10, 0.05)) == 1.0
    assert float(cdf_lower(3, 0, 0.05)) == 0.0 and float(cdf_upper(0, 0, 0.05)) == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: band_level(0, 0.05), "n must be in"),
    (lambda: band_level(10, 0.0), "delta must be in"),
    (lambda: band_level(10, 1.5), "delta must be in"),
    (lambda: band_level(10, 0.05, 3), "sides must be 1 or 2"),
    (lambda: no_crossing_probability(-1), "n must be >= 0"),
    (lambda: no_crossing_probability(3, lower=[0.3, 0.2, 0.4]), "nondecreasing"),
    (lambda: no_crossing_probability(3, lower=[0.1, math.nan, 0.4]), "NaN"),
    (lambda: no_crossing_probability(3, ranks=[1, 1, 2], lower=[0.1, 0.1, 0.1]), "increasing"),
    (lambda: no_crossing_probability(3, lower=[0.1, 0.2]), "one value per rank"),
])
def test_bad_input_raises_naming_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_joint_accounting_gives_each_statement_its_product_share():
    """With method='exact', risk_upper uses one-sided bands at 1 - (1 - delta)^(1/m) each
    (m statements independent given the labels), never wider than the union bound's delta / m."""
    kw = dict(fn_cost=5, fp_cost=1, confidence=0.9, class_prior=0.3)
    out = bounds_arrays([400], [100], [300], [10], **kw)
    d = -math.expm1(math.log1p(-(1 - 0.9)) / 2)
    assert out["risk_upper"][0] == pytest.approx(
        0.3 * 5 * float(cdf_upper(10, 100, d)) + 0.7 * 1 * (1 - float(cdf_lower(300, 400, d))), rel=1e-12)
    assert d > 0.1 / 2
