"""Segments (exact per segment, fallback, pooling, keyed stream), per-event costs, guard rails."""

from fractions import Fraction

import numpy as np
import pytest
from oracle import brute_force

from thors_stream import StreamingThors, thors_threshold
from thors_stream.bounds import bounds_arrays
from thors_stream.event_costs import event_cost_weights, thors_event_costs
from thors_stream.result import DEFAULT_MIN_PER_CLASS
from thors_stream.segments import SegmentedStreamingThors, pooled_threshold, segment_thresholds, thors_by_segment


def _data(seed, n=300, k=4, ties=True):
    rng = np.random.default_rng(seed)
    seg = rng.choice([f"s{i}" for i in range(k)], n)
    y = rng.random(n) < 0.3
    shift = {f"s{i}": i * 0.5 for i in range(k)}
    s = rng.normal(size=n) + 1.2 * y + np.array([shift[g] for g in seg])
    if ties:
        s = np.round(s, 1)
    w = rng.integers(1, 6, n).astype(float)
    return s, y, seg, w


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_thors_by_segment_matches_brute_force_per_segment(seed, weighted):
    s, y, seg, w = _data(seed, n=120)
    ww = w if weighted else None
    res = thors_by_segment(s, y, seg, fn_cost=4, fp_cost=1, sample_weight=ww)
    assert sorted(res) == sorted(set(seg.tolist()))
    for g, r in res.items():
        m = seg == g
        ev = [(a, b, c) for a, b, c in zip(s[m], y[m], (w[m] if weighted else np.ones(m.sum())))]
        thr, cost, _ = brute_force(ev, 4, 1)
        assert r.threshold == thr
        assert Fraction(r.cost) == cost


def test_segment_fallback_and_unknown_segment():
    s, y, seg, _w = _data(1, n=400, k=3)
    # a tiny segment with a single positive
    s = np.concatenate([s, [5.0, -5.0, 0.3]])
    y = np.concatenate([y, [True, False, False]])
    seg = np.concatenate([seg, ["tiny"] * 3])
    plan = segment_thresholds(s, y, seg, fn_cost=3, fp_cost=1, min_per_class=10)
    g = thors_threshold(s, y, fn_cost=3, fp_cost=1)
    assert plan.global_result.threshold == g.threshold
    assert plan.sources["tiny"] == "global" and plan.threshold("tiny") == g.threshold
    assert plan.results["tiny"].count1 == 1 and plan.results["tiny"].count0 == 2
    own = thors_by_segment(s, y, seg, fn_cost=3, fp_cost=1)
    for k in ("s0", "s1", "s2"):
        assert plan.sources[k] == "segment" and plan.threshold(k) == own[k].threshold
    assert plan.threshold("never-seen") == g.threshold
    pred = plan.predict([0.0, 0.0], ["s0", "tiny"])
    assert pred.tolist() == [0.0 > own["s0"].threshold, 0.0 > g.threshold]


def test_pooled_is_one_weighted_thors_and_interpolates():
    s, y, seg, _ = _data(2, n=600, k=3, ties=False)
    m = seg == "s2"
    for lam in (0.0, 0.25, 1.0):
        r = pooled_threshold(s, y, m, lam, fn_cost=3, fp_cost=1)
        w = m + lam
        keep = w > 0
        ev = [(a, b, Fraction(c)) for a, b, c in zip(s[keep], y[keep], w[keep])]
        thr, _, _ = brute_force(ev, 3, 1)
        assert r.threshold == thr
    assert pooled_threshold(s, y, m, 0.0, fn_cost=3, fp_cost=1).threshold == thors_threshold(
        s[m], y[m], fn_cost=3, fp_cost=1).threshold
    assert pooled_threshold(s, y, m, 1e6, fn_cost=3, fp_cost=1).threshold == thors_threshold(
        s, y, fn_cost=3, fp_cost=1).threshold
    plan = segment_thresholds(s, y, seg, fn_cost=3, fp_cost=1, min_per_class=5, pool_weight=0.25)
    assert plan.sources["s2"] == "pooled"
    assert plan.threshold("s2") == pooled_threshold(s, y, m, 0.25, fn_cost=3, fp_cost=1).threshold
    with pytest.raises(ValueError):
        pooled_threshold(s, y, m, -1.0, fn_cost=3, fp_cost=1)


def test_segmented_stream_matches_per_segment_windows_and_evicts():
    s, y, seg, _ = _data(3, n=500, k=4)
    st = SegmentedStreamingThors(fn_cost=3, fp_cost=1, window=60, max_segments=10, min_per_class=3)
    ref = {g: StreamingThors(fn_cost=3, fp_cost=1, window=60) for g in set(seg.tolist())}
    glob = StreamingThors(fn_cost=3, fp_cost=1, window=60)
    for a, b, g in zip(s, y, seg):
        st.update(g, a, b)
        ref[g].update(a, b)
        glob.update(a, b)
        r = ref[g].result()
        want = r.threshold if r.is_supported(3) else glob.get()
        assert st.get(g) == want
    assert st.global_threshold() == glob.get()
    # eviction: least recently updated first
    small = SegmentedStreamingThors(fn_cost=3, fp_cost=1, window=10, max_segments=2, min_per_class=1)
    for g in ["a", "b", "a", "c"]:
        small.update(g, 0.5, 1)
    assert small.segments() == ["a", "c"] and small.evicted == 1
    assert small.result("b") is None and small.get("b") == small.global_threshold()
    assert small.nbytes() > 0


@pytest.mark.parametrize("seed", range(5))
def test_event_costs_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 80
    y = rng.random(n) < 0.3
    s = np.round(rng.normal(size=n) + y, 1)
    fn = rng.integers(1, 200, n).astype(float)
    fp = rng.integers(1, 5, n).astype(float)
    r = thors_event_costs(s, y, fn, fp)
    # brute force directly on the definition: missed positives cost fn_i, false alarms fp_j
    cands = [-np.inf] + sorted(set(s.tolist()))
    costs = [sum(fn[i] for i in range(n) if y[i] and s[i] <= t) + sum(fp[i] for i in range(n)
                                                                       if not y[i] and s[i] > t) for t in cands]
    best = min(costs)
    assert r.cost == best and r.threshold == cands[costs.index(best)]
    w = event_cost_weights(y, fn, fp)
    assert np.array_equal(w, np.where(y, fn, fp))
    assert np.array_equal(event_cost_weights(y, fn, 2.0, sample_weight=np.full(n, 3.0)), np.where(y, fn, 2.0) * 3)
    with pytest.raises(ValueError):
        event_cost_weights(y, fn, -1.0)
    with pytest.raises(ValueError):
        event_cost_weights(y, fn[:3], 1.0)


def test_support_issue():
    r = thors_threshold([0.1, 0.9, 0.5], [0, 0, 0], fn_cost=1, fp_cost=1)
    assert not r.is_supported() and "no positive events" in r.support_issue()
    r = thors_threshold([0.1, 0.9, 0.5], [1, 1, 1], fn_cost=1, fp_cost=1)
    assert "no negative events" in r.support_issue(min_per_class=1)
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(29, bool), np.zeros(100, bool)]
    r = thors_threshold(rng.random(129), y, fn_cost=1, fp_cost=1)
    assert "too few positive events" in r.support_issue() and r.is_supported(29)
    assert r.min_class_count == 29
    with pytest.raises(ValueError):
        r.is_supported(0)


def test_default_min_per_class_justification():
    """DEFAULT_MIN_PER_CLASS is where the 95% upper bound of an error-free class first drops to about 0.2."""
    def upper(n):
        o = bounds_arrays(n, n, n, 0, fn_cost=1, fp_cost=1, confidence=0.95, n_test=None, class_prior=None,
                          method="hybrid")
        return float(o["fnr_upper"])

    n = DEFAULT_MIN_PER_CLASS
    assert 0.2 < upper(n - 1) and upper(n) < 0.22 and upper(8) < 0.5 < upper(5)
