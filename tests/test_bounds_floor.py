"""The floor of benchmarks/bounds_floor.py: no valid upper bound has a mean below it, and a
bound whose mean is below it under-covers; the joint-law risk bound covers."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bounds_floor as bf
from bounds_coverage import COSTS, DISTS, draw_setting

from thors_stream.bounds import bounds_arrays


def test_floor_mean_removes_the_top_share():
    t = np.arange(100.0)
    assert bf.floor_mean(t, 0.05) == pytest.approx(sum(range(95)) / 100)
    assert bf.floor_mean(t, 0.055) == pytest.approx((sum(range(95)) - 0.5 * 94) / 100)  # half of the 95th
    assert bf.floor_mean(np.full(10, 3.0), 0.0) == 3.0 and bf.floor_mean(np.full(10, 3.0), 1.0) == 0.0


def test_any_bound_below_the_floor_under_covers():
    """The floor's argument, checked on draws: the bound 'truth scaled to a mean equal to the
    floor minus a margin' (the tightest shape a bound can take, it follows the truth) covers
    less than 1 - delta, while the library's valid bound lies above the floor."""
    d = draw_setting(DISTS["gauss"], 0.5, 200, 400, seed=7)
    t, delta = d["risk_true"], 0.05
    fl = bf.floor_mean(t, delta)
    # the cheapest bound with coverage 1 - delta: T itself on its lowest 95%, 0 on the top 5%
    cut = np.sort(t)[int(np.ceil((1 - delta) * t.shape[0])) - 1]
    tight = np.where(t <= cut, t, 0.0)
    assert np.mean(tight >= t) >= 1 - delta and tight.mean() == pytest.approx(fl, rel=0.02)
    lower = tight * 0.97
    assert np.mean(lower >= t) < 1 - delta  # any lower mean misses (this one by scaling)
    fn, fp = COSTS[0.5]
    s = d["sel"]
    b = bounds_arrays(s["n0"], s["n1"], s["k0"], s["k1"], fn_cost=fn, fp_cost=fp, confidence=1 - delta)
    assert np.mean(b["risk_upper"] >= t) >= 1 - delta and b["risk_upper"].mean() > fl


@pytest.mark.parametrize(("prior", "n"), [(0.5, 200), (0.02, 400)])
def test_joint_law_risk_bound_covers(prior, n):
    fn, fp = COSTS[prior]
    d = draw_setting(DISTS["cauchy"], prior, n, 600, seed=11)
    s = d["sel"]
    for level in (0.8, 0.95):
        u = bf.pooled_risk_upper(s["n0"], s["n1"], s["k0"], s["k1"], fn, fp, 1 - level)
        cover = np.mean(d["risk_true"] <= u)
        assert cover >= level - 3 * np.sqrt(level * (1 - level) / 600), (level, cover)
