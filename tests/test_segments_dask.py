"""thors_stream.dask.thors_threshold_by_segment: one shuffle, the single-machine per-segment answer."""

import numpy as np
import pytest

from thors_stream.segments import thors_by_segment

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_thors_by_segment(weighted):
    from thors_stream.dask import thors_threshold_by_segment

    rng = np.random.default_rng(3)
    n = 3000
    g = rng.choice(["a", "b", "c", "d", "e"], n)
    y = rng.random(n) < 0.2
    s = np.round(rng.normal(size=n) + y + (g == "c"), 2)
    w = rng.integers(1, 5, n).astype(float)
    pdf = pd.DataFrame({"s": s, "y": y, "g": g, "w": w})
    got = thors_threshold_by_segment(dd.from_pandas(pdf, npartitions=7), score_col="s", label_col="y",
                                     segment_col="g", weight_col="w" if weighted else None, fn_cost=4, fp_cost=1)
    want = thors_by_segment(s, y, g, fn_cost=4, fp_cost=1, sample_weight=w if weighted else None)
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k] == want[k]
