"""The least favourable population of benchmarks/bounds_least_favourable.py: THORS's pick
is the band's worst case there, so fnr_upper covers exactly as often as its band holds."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bounds_least_favourable as lf


@pytest.mark.parametrize(("n1", "confidence"), [(12, 0.9), (25, 0.95), (60, 0.8)])
def test_thors_picks_a_failing_threshold_whenever_one_exists(n1, confidence):
    rng = np.random.default_rng(n1)
    s, y, fn = lf.draw(n1, confidence, 400, rng)
    held = lf.covered(s, y, fn, confidence)
    # the band fails somewhere iff some (k+1)-th smallest positive lies above u(k)
    u = lf.fnr_upper_table(n1, confidence)
    x = np.sort(s[:, :n1], axis=1)
    fails_somewhere = np.any(x > u[:n1], axis=1)
    assert np.array_equal(held, ~fails_somewhere)
    assert 0 < fails_somewhere.sum() < 400  # both cases occur


def test_coverage_there_is_the_bands_computed_simultaneous_coverage():
    reps, n1, conf = 4000, 30, 0.90
    exact = lf.band_coverage(n1, conf)
    assert conf <= exact <= conf + 0.002  # the band is calibrated to its level
    sim = lf.coverage(n1, conf, reps, seed=3)
    assert abs(sim - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps), (sim, exact)


def test_iid_negatives_give_the_same_coverage():
    reps, n1, conf = 2000, 20, 0.90
    exact = lf.band_coverage(n1, conf)
    sim = lf.coverage(n1, conf, reps, seed=4, iid_m=1000)
    assert abs(sim - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps), (sim, exact)
