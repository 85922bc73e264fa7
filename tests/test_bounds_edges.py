"""Cost bounds at the edges of float64 and of ``n_test`` (found 2026-11-25; each test
failed before its fix): the realised-cost bounds squared the costs (inf/NaN beyond
~1.3e154), the exact cost quantile allocated ``O(sqrt(n_test))`` cells whatever
``n_test`` (10**18 ran for minutes and then out of memory), and ``n_test=10**400`` gave an
``OverflowError`` traceback."""

import math

import numpy as np
import pytest

from thors_stream import bounds as bounds_mod
from thors_stream import thors_threshold
from thors_stream.bounds import bernstein_quantile, exact_quantile

COST_FIELDS = ("risk_upper", "expected_cost_upper", "cost_upper", "cost_upper_exact", "paper_cost_upper")
SCORES = [0.1, 0.4, 0.35, 0.8, 0.5, 0.6, 0.2, 0.9, 0.3]
LABELS = [0, 0, 1, 1, 0, 1, 0, 1, 0]


def cost_values(b):
    out = [getattr(b, f) for f in COST_FIELDS]
    for iv in (b.cost_interval, b.paper_cost_interval):
        out += [iv.lower, iv.upper]
    return out


@pytest.mark.parametrize("k", [0, 200, 500, 900])
def test_cost_bounds_scale_with_the_costs(k):
    """Every cost bound is homogeneous in (fn_cost, fp_cost): scaling both by 2**k scales
    it by 2**k (within rounding), up to costs of 2**900 (~8e270)."""
    base = thors_threshold(SCORES, LABELS, fn_cost=5, fp_cost=1).bounds(0.9, n_test=40)
    big = thors_threshold(SCORES, LABELS, fn_cost=5 * 2.0**k, fp_cost=2.0**k).bounds(0.9, n_test=40)
    for want, got in zip(cost_values(base), cost_values(big)):
        assert math.isfinite(got) and got >= 0
        assert got == pytest.approx(want * 2.0**k, rel=1e-9, abs=0.0)


def test_bernstein_matches_the_textbook_formula():
    """The overflow-safe form (hypot, deviations) equals t = M L/3 + sqrt((M L/3)^2 + 2 n v L)
    with v = E[c^2] - mu^2 at moderate values."""
    rng = np.random.default_rng(5)
    b = rng.random(200)
    a = b * rng.random(200)
    delta = rng.uniform(1e-4, 0.5, 200)
    for n, big, small in ((1, 3.0, 1.0), (50, 10.0, 0.5), (10_000, 1.0, 1.0), (7, 2.0, 0.0)):
        mu = big * a + small * (b - a)
        v = np.maximum(big * big * a + small * small * (b - a) - mu * mu, 0.0)
        m = np.maximum(big - mu, 0.0)
        L = np.log(1 / delta)
        want = np.minimum(n * mu + m * L / 3 + np.sqrt((m * L / 3) ** 2 + 2 * n * v * L), n * big)
        np.testing.assert_allclose(bernstein_quantile(n, a, b, big, small, delta), want, rtol=1e-12)


def test_huge_n_test_falls_back_to_bernstein():
    """Beyond MAX_EXACT_CELLS of support the exact quantile is the Bernstein bound (valid,
    bounded work); below it, it is still computed (and lower)."""
    r = thors_threshold(SCORES, LABELS, fn_cost=5, fp_cost=1)
    far = r.bounds(0.95, n_test=10**15)
    assert far.cost_upper_exact == far.cost_upper
    near = r.bounds(0.95, n_test=10**5)
    assert near.cost_upper_exact < near.cost_upper
    top = r.bounds(0.95, n_test=2**53)
    assert math.isfinite(top.cost_upper_exact) and top.cost_upper_exact == top.cost_upper


@pytest.mark.parametrize("bad", [2**53 + 1, 10**400, 1e300, np.uint64(2**63)])
def test_n_test_beyond_2_53_is_refused(bad):
    r = thors_threshold(SCORES, LABELS, fn_cost=5, fp_cost=1)
    with pytest.raises(ValueError, match="n_test"):
        r.bounds(0.95, n_test=bad)


def test_exact_quantile_in_chunks_equals_one_pass(monkeypatch):
    """Elements are evaluated in chunks of at most MAX_EXACT_CELLS cells; the values do not
    depend on the chunking, and an element wider than the cap keeps the upper end."""
    rng = np.random.default_rng(8)
    b = rng.uniform(0.05, 0.9, 30)
    a = b * rng.uniform(0.1, 0.9, 30)
    whole = exact_quantile(400, a, b, 3.0, 1.0, 0.05)
    monkeypatch.setattr(bounds_mod, "MAX_EXACT_CELLS", 300)  # ~2 elements a chunk at n = 400
    np.testing.assert_array_equal(exact_quantile(400, a, b, 3.0, 1.0, 0.05), whole)
    monkeypatch.setattr(bounds_mod, "MAX_EXACT_CELLS", 20)  # narrower than any support
    np.testing.assert_array_equal(exact_quantile(400, a, b, 3.0, 1.0, 0.05),
                                  bernstein_quantile(400, a, b, 3.0, 1.0, 0.05))
