"""The least favourable populations of benchmarks/bounds_least_favourable.py: THORS's pick
is the band's worst case there, so a rate bound covers exactly as often as its band holds."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bounds_least_favourable as lf

STATS = list(lf.STATS)


@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize(("n", "confidence"), [(12, 0.9), (25, 0.95), (60, 0.8)])
def test_thors_picks_a_failing_threshold_whenever_one_exists(n, confidence, stat):
    rng = np.random.default_rng(n)
    s, y, fn, fp = lf.draw(n, confidence, 400, rng, stat=stat)
    held = lf.covered(s, y, fn, fp, confidence, stat)
    b = lf.bound_table(n, confidence, stat)
    if stat == "fnr_upper":  # fails somewhere iff some (k+1)-th smallest positive lies above u(k)
        x = np.sort(s[:, :n], axis=1)
        fails_somewhere = np.any(x > b[:n], axis=1)
    else:  # iff some k-th smallest negative lies below 1 - v(k)
        x = np.sort(s[:, -n:], axis=1)
        fails_somewhere = np.any(x < 1.0 - b[1:], axis=1)
    assert np.array_equal(held, ~fails_somewhere)
    assert 0 < fails_somewhere.sum() < 400  # both cases occur


@pytest.mark.parametrize("stat", STATS)
def test_coverage_there_is_the_bands_computed_simultaneous_coverage(stat):
    reps, n, conf = 4000, 30, 0.90
    exact = lf.band_coverage(n, conf, stat)
    assert conf <= exact <= conf + 0.002  # the band is calibrated to its level
    sim = lf.coverage(n, conf, reps, seed=3, stat=stat)
    assert abs(sim - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps), (sim, exact)


@pytest.mark.parametrize("stat", STATS)
def test_iid_other_class_gives_the_same_coverage(stat):
    reps, n, conf = 2000, 20, 0.90
    exact = lf.band_coverage(n, conf, stat)
    sim = lf.coverage(n, conf, reps, seed=4, iid_m=1000, stat=stat)
    assert abs(sim - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps), (sim, exact)


def test_an_unknown_statement_is_refused():
    with pytest.raises(ValueError, match="risk_upper"):
        lf.bound_table(10, 0.9, "risk_upper")
