"""SegmentedStreamingThors composed: a window chosen online per segment (``window="auto"``),
partial pooling of small segments in the stream (``pool_weight``), weighted events (per-event
costs), time windows, checkpoints, and bad input that changes nothing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force
from strategies import any_scores, costs, dyadic_weights, labels

from thors_stream import StreamingThors, thors_threshold
from thors_stream.checkpoint import read_checkpoint_full, write_checkpoint
from thors_stream.margin import cost_margin, margin_weight
from thors_stream.segments import SegmentedStreamingThors, _segment_seed, pooled_threshold
from thors_stream.selection import WindowSelector


def _stream(seed, n, segs=("a", "b", "rare"), p=(0.55, 0.4, 0.05), weighted=False):
    """Events ``(segment, score, label, weight)``: segments of different score shifts, a rare
    one, tied scores (rounded), integer weights when ``weighted`` (exact sums)."""
    rng = np.random.default_rng(seed)
    g = rng.choice(list(segs), n, p=list(p))
    y = rng.random(n) < 0.3
    shift = {s: 0.4 * i for i, s in enumerate(segs)}
    s = np.round(rng.normal(size=n) + 1.2 * y + np.array([shift[k] for k in g]), 1)
    w = rng.integers(1, 9, n).astype(float) if weighted else np.ones(n)
    return list(zip(g.tolist(), s.tolist(), y.tolist(), w.tolist()))


AUTO = {"fn_cost": 4, "fp_cost": 1, "window": "auto", "windows": (15, 60), "default_threshold": 0.2}


# ---------------------------------------------------------------- window="auto"
@pytest.mark.parametrize("choose", ["draw", "leader"])
@pytest.mark.parametrize("weighted", [False, True])
def test_auto_each_segment_is_a_window_selector_with_fallback(choose, weighted):
    """Every segment (and the global summary) is exactly a WindowSelector fed its events, seeded
    from the segment's order of appearance; get() is the segment's choice when its longest
    window holds min_per_class of each class, else the global choice; eviction as without auto."""
    st = SegmentedStreamingThors(**AUTO, choose=choose, seed=11, min_per_class=4, max_segments=2)
    kw = {k: AUTO[k] for k in ("fn_cost", "fp_cost", "windows", "default_threshold")}
    ref_global = WindowSelector(**kw, choose=choose, seed=11)
    ref: dict[str, WindowSelector] = {}
    created = 0
    used_segment = used_global = 0
    for g, s, y, w in _stream(1, 500, weighted=weighted):
        if g not in ref:
            ref[g] = WindowSelector(**kw, choose=choose, seed=_segment_seed(11, created))
            created += 1
            if len(ref) > 2:  # the least recently updated segment is evicted
                del ref[next(iter(ref))]
        st.update(g, s, y, w)
        ref[g].update(s, y, w)
        ref[g] = ref.pop(g)  # most recently updated last
        ref_global.update(s, y, w)
        assert st.segments() == list(ref)
        longest = ref[g].experts[-1].result()
        if longest.is_supported(4):
            want, used_segment = ref[g].get(), used_segment + 1
        else:
            want, used_global = ref_global.get(), used_global + 1
        assert st.get(g) == want
        assert st.selector(g).chosen == ref[g].chosen and st.selector(g).costs == ref[g].costs
        assert st.global_threshold() == ref_global.get() == st.get("never seen")
    assert used_segment > 50 and used_global > 5  # both branches taken
    assert st.evicted == created - 2 > 0
    assert st.global_summary is st.global_selector.experts[-1]
    assert st.result("a").count0 + st.result("a").count1 == len(st.selector("a").experts[-1])


def test_auto_segments_draw_independently():
    st = SegmentedStreamingThors(**AUTO, seed=3, min_per_class=1)
    st.update("a", 0.5, 1)
    st.update("b", 0.5, 1)
    assert st.selector("a")._rng[0] != st.selector("b")._rng[0] != st.global_selector._rng[0]
    other = SegmentedStreamingThors(**AUTO, seed=4, min_per_class=1)
    other.update("a", 0.5, 1)
    assert other.selector("a")._rng[0] != st.selector("a")._rng[0]


def test_auto_constructor_refusals_and_int_window_unchanged():
    with pytest.raises(ValueError, match="period"):
        SegmentedStreamingThors(**AUTO, period=60.0)
    with pytest.raises(ValueError, match="default_threshold"):
        SegmentedStreamingThors(fn_cost=1, fp_cost=1, window="auto")
    with pytest.raises(ValueError, match=r"not \['max_fpr'\]"):
        SegmentedStreamingThors(**AUTO, max_fpr=0.1)
    with pytest.raises(ValueError, match="'auto'"):
        SegmentedStreamingThors(fn_cost=1, fp_cost=1, window="automatic")
    for extra in ({"windows": (5, 10)}, {"seed": 1}, {"choose": "leader"}):
        with pytest.raises(ValueError, match=f"{next(iter(extra))} only apply with window='auto'"):
            SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=50, **extra)
    with pytest.raises(ValueError, match="choose"):
        SegmentedStreamingThors(**AUTO, choose="best")
    with pytest.raises(ValueError, match="windows"):
        SegmentedStreamingThors(**{**AUTO, "windows": (10, 10)})
    with pytest.raises(ValueError, match="min_per_class"):
        SegmentedStreamingThors(**AUTO, min_per_class=0)
    with pytest.raises(TypeError, match="seed"):
        SegmentedStreamingThors(**AUTO, seed=1.5)
    # an int window: the same summaries as before (default_threshold and other settings passed on)
    st = SegmentedStreamingThors(fn_cost=3, fp_cost=1, window=50, default_threshold=0.3, class_prior=0.2)
    assert not st.auto and st.global_selector is None and st.selector("a") is None
    made = st._make()
    assert (made.window, made.default_threshold, made.class_prior) == (50, 0.3, 0.2)
    assert st._settings == {"fn_cost": 3, "fp_cost": 1, "window": 50, "period": None, "class_prior": 0.2,
                            "default_threshold": 0.3}


def _snapshot(st):
    return pickle.dumps(st)


@pytest.mark.parametrize("mode", ["auto", "pooled", "plain"])
def test_bad_input_changes_nothing(mode):
    kw = {"auto": AUTO, "pooled": {"fn_cost": 4, "fp_cost": 1, "window": 60, "pool_weight": 0.25},
          "plain": {"fn_cost": 4, "fp_cost": 1, "window": 60}}[mode]
    st = SegmentedStreamingThors(**kw, min_per_class=2)
    for g, s, y, w in _stream(2, 120):
        st.update(g, s, y, w)
    st.get("a")
    before = _snapshot(st)
    bad = [("new", 0.5, 1, -1.0, None), ("new", 0.5, 1, float("nan"), None), ("new", float("nan"), 1, 1.0, None),
           ("new", 0.5, 2, 1.0, None), ("new", 0.5, 1, 1e300, None), ("a", 0.5, 1, 0.0, None),
           ("a", float("inf"), 0, 1.0, None), ("a", 0.5, "yes", 1.0, None), ("new", 0.5, 1, 1.0, "noon"),
           ("a", 0.5, 1, 1e300, None), ([1], 0.5, 1, 1.0, None)]
    for g, s, y, w, t in bad:
        with pytest.raises((ValueError, TypeError)) as err:
            st.update(g, s, y, w, t)
        assert any(repr(v) in str(err.value) or str(v) in str(err.value) for v in (s, y, w, t, g)
                   if v not in (None, 1, 0.5, 1.0)), str(err.value)
        assert _snapshot(st) == before, (g, s, y, w, t)
        assert "new" not in st.segments()


# ---------------------------------------------------------------- checkpoints
def _save(st, path):
    """What ThorsClassifier.save_thresholding writes for the segments: the global summary as
    its own part, the segments' parts beside it."""
    gp, gs, ga = st.global_summary._checkpoint_parts()
    sp, ss, sa, keys = st._checkpoint_parts()
    write_checkpoint(path, "test.segments", {"thors": gp, "segments": sp},
                     {"thors": gs, "segments": ss, "segment_keys": keys}, {**ga, **sa})


def _load(st, path):
    ck = read_checkpoint_full(path, "test.segments")
    own = {k: a for k, a in ck.arrays.items() if not k.startswith("seg_")}
    glob = StreamingThors._from_checkpoint_parts(ck.params["thors"], ck.state["thors"], own, where=ck.where)
    st._restore(ck.params["segments"], ck.state["segments"],
                {k: a for k, a in ck.arrays.items() if k.startswith("seg_")}, ck.state["segment_keys"],
                ck.params["thors"], glob, ck.where)


def _fresh_auto(**kw):
    return SegmentedStreamingThors(**{**AUTO, "seed": 5, "min_per_class": 3, "max_segments": 2, **kw})


def test_auto_checkpoint_roundtrip_continues_identically(tmp_path):
    events = _stream(4, 400, weighted=True)
    st = _fresh_auto()
    for e in events[:250]:
        st.update(*e)
    assert st.evicted > 0
    _save(st, tmp_path / "auto.ckpt")
    back = _fresh_auto()
    _load(back, tmp_path / "auto.ckpt")
    assert back.segments() == st.segments() and back.evicted == st.evicted and back._created == st._created
    assert back.global_summary is back.global_selector.experts[-1]
    for g, s, y, w in events[250:]:  # the same thresholds, draws, evictions and seeds of new segments
        st.update(g, s, y, w)
        back.update(g, s, y, w)
        assert back.get(g) == st.get(g) and back.global_threshold() == st.global_threshold()
        assert back.selector(g).chosen == st.selector(g).chosen
    assert back.segments() == st.segments() and back.evicted == st.evicted


def test_auto_checkpoint_refusals_change_nothing(tmp_path):
    st = _fresh_auto()
    for e in _stream(5, 200):
        st.update(*e)
    _save(st, tmp_path / "auto.ckpt")
    plain = SegmentedStreamingThors(fn_cost=4, fp_cost=1, window=60, min_per_class=3, max_segments=2)
    for e in _stream(5, 50):
        plain.update(*e)
    _save(plain, tmp_path / "plain.ckpt")
    cases = [(_fresh_auto(seed=6), "auto.ckpt", "seed"), (_fresh_auto(windows=(15, 61)), "auto.ckpt", "windows"),
             (_fresh_auto(), "plain.ckpt", "without window='auto'"),
             (SegmentedStreamingThors(fn_cost=4, fp_cost=1, window=60, min_per_class=3, max_segments=2),
              "auto.ckpt", "with window='auto'")]
    for target, name, msg in cases:
        for e in _stream(6, 30):
            target.update(*e)
        before = _snapshot(target)
        with pytest.raises(ValueError, match=msg):
            _load(target, tmp_path / name)
        assert _snapshot(target) == before
    # a selector state that is not AdaHedge's weights for its costs: refused, naming the segment
    ck = read_checkpoint_full(tmp_path / "auto.ckpt", "test.segments")
    arrays = dict(ck.arrays)
    k = len(st.selector(st.segments()[0]).names)
    sv = arrays["seg_selector_state"].copy()
    sv[k] += 1.0  # the first segment's first candidate's cost
    arrays["seg_selector_state"] = sv
    write_checkpoint(tmp_path / "broken.ckpt", "test.segments", ck.params, ck.state, arrays)
    target = _fresh_auto()
    before = _snapshot(target)
    with pytest.raises(ValueError, match=r"segment .*weights"):
        _load(target, tmp_path / "broken.ckpt")
    assert _snapshot(target) == before


# ---------------------------------------------------------------- partial pooling
class _Reference:
    """The events each summary holds, kept by hand: per segment and over all, a count window
    (``window``), a time window (``period``: ``t > t_newest - period``, times increasing) or
    everything."""

    def __init__(self, window=None, period=None):
        self.window, self.period = window, period
        self.seg: dict[str, list] = {}
        self.all: list = []

    def _cut(self, ev):
        if self.window is not None:
            return ev[-self.window:]
        if self.period is not None:
            return [e for e in ev if e[3] > ev[-1][3] - self.period]
        return ev

    def update(self, g, s, y, w, t=None):
        self.seg[g] = self._cut([*self.seg.get(g, []), (s, y, w, t)])
        self.all = self._cut([*self.all, (s, y, w, t)])

    def pooled_events(self, g, lam):
        """``(score, label, weight)``: the segment's held events at their weight, then every
        globally held event at lam times its weight."""
        return [(s, y, w) for s, y, w, _ in self.seg[g]] + [(s, y, lam * w) for s, y, w, _ in self.all]


def _batch(events, **kw):
    s, y, w = (np.array(c) for c in zip(*events))
    return thors_threshold(s, y.astype(bool), sample_weight=w, **kw)


@settings(max_examples=60, deadline=None)
@given(evs=st.lists(st.tuples(st.sampled_from("abc"), any_scores, labels, dyadic_weights), min_size=1, max_size=30),
       lam=st.sampled_from([0.125, 0.25, 0.5, 1.0, 2.0, 3.0]), window=st.sampled_from([None, 4, 9]),
       costs=st.tuples(costs, costs), prior=st.sampled_from([None, None, 0.25]), pool_every=st.sampled_from([1, 3]),
       data=st.data())
def test_pooled_threshold_is_exact_right_after_a_recompute(evs, lam, window, costs, prior, pool_every, data):
    """Right after a recompute, the pooled threshold is THORS on the segment's held events at
    weight w plus the global ones at lam * w: the batch search, pooled_threshold with the
    segment's mask where its events are among the global ones, and the brute-force oracle."""
    fn, fp = costs
    st_ = SegmentedStreamingThors(fn_cost=fn, fp_cost=fp, window=window, pool_weight=lam, pool_every=pool_every,
                                  min_per_class=1, class_prior=prior)
    ref = _Reference(window=window)
    for i, (g, s, y, w) in enumerate(evs):
        st_.update(g, s, y, w)
        ref.update(g, s, y, w)
        if not data.draw(st.booleans(), label=f"read after event {i}") and i < len(evs) - 1:
            continue
        r = st_.pooled_result(g)
        ev = ref.pooled_events(g, lam)
        want = _batch(ev, fn_cost=fn, fp_cost=fp, class_prior=prior)
        assert r.threshold == want.threshold and r.cost == want.cost
        assert (r.n0, r.n1, r.count0, r.count1, r.k0, r.k1, r.count_k0, r.count_k1) == \
            (want.n0, want.n1, want.count0, want.count1, want.k0, want.k1, want.count_k0, want.count_k1)
        if st_.source(g) == "pooled":
            assert st_.get(g) == r.threshold
        else:  # neither the segment nor the global summary holds both classes
            assert st_.get(g) == st_.global_threshold()
        if prior is None:
            assert r.threshold == brute_force(ev, fn, fp)[0]
        if window is None:  # the segment's events are among the global ones: pooled_threshold itself
            mask = [e[0] == g for e in evs[:i + 1]]
            s, y, w = (np.array(c) for c in zip(*[(e[1], e[2], e[3]) for e in evs[:i + 1]]))
            assert r.threshold == pooled_threshold(s, y.astype(bool), mask, lam, fn_cost=fn, fp_cost=fp,
                                                   sample_weight=w, class_prior=prior).threshold


@pytest.mark.parametrize("pool_every", [1, 7, 40])
def test_pooled_staleness_rule_support_rule_and_eviction(pool_every):
    """get() answers the pooled threshold computed at the segment's first read, or at the
    first read once pool_every events were learned since; a segment gets its pooled threshold
    when its window or the global one holds min_per_class of each class, else the global one;
    an evicted segment starts afresh."""
    lam, win, m = 0.5, 40, 3
    st_ = SegmentedStreamingThors(fn_cost=3, fp_cost=1, window=win, pool_weight=lam, pool_every=pool_every,
                                  min_per_class=m, max_segments=2)
    ref, glob = _Reference(window=win), StreamingThors(fn_cost=3, fp_cost=1, window=win)
    cache: dict[str, tuple[float, int]] = {}
    seen = {"pooled": 0, "global": 0, "stale": 0}
    for n, (g, s, y, _) in enumerate(_stream(7, 300), start=1):
        st_.update(g, s, y)
        glob.update(s, y)
        ref.update(g, s, y, 1.0)
        for k in list(ref.seg):
            if k not in st_.segments():  # evicted: forgotten, with its pooled threshold
                del ref.seg[k]
                cache.pop(k, None)
        own = ref.seg[g]
        supported = min(sum(e[1] for e in own), sum(not e[1] for e in own)) >= m or \
            glob.result().is_supported(m)
        got = st_.get(g)
        if not supported:
            assert got == glob.get() and st_.source(g) == "global"
            seen["global"] += 1
            continue
        assert st_.source(g) == "pooled"
        seen["pooled"] += 1
        if g not in cache or n - cache[g][1] >= pool_every:
            cache[g] = (_batch(ref.pooled_events(g, lam), fn_cost=3, fp_cost=1).threshold, n)
        elif cache[g][0] != _batch(ref.pooled_events(g, lam), fn_cost=3, fp_cost=1).threshold:
            seen["stale"] += 1  # a cached threshold that a recompute would change
        assert got == cache[g][0]
    assert seen["pooled"] > 100 and seen["global"] > 0 and st_.evicted > 0
    if pool_every > 1:
        assert seen["stale"] > 0  # the cache was in use


def test_pooled_small_segment_below_min_per_class_gets_pooled_threshold():
    st_ = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=None, pool_weight=0.01, min_per_class=30)
    plain = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=None, min_per_class=30)
    for g, s, y, w in _stream(8, 800, p=(0.6, 0.39, 0.01)):
        st_.update(g, s, y, w)
        plain.update(g, s, y, w)
    r = st_.result("rare")
    assert not r.is_supported(30) and st_.source("rare") == "pooled" and plain.source("rare") == "global"
    assert st_.get("rare") == st_.pooled_result("rare").threshold
    assert plain.get("rare") == plain.global_threshold()
    assert st_.source("a") == "pooled" and plain.source("a") == "segment"
    assert st_.get("never seen") == st_.global_threshold() and st_.pooled_result("never seen") is None
    assert plain.pooled_result("a") is None


def test_pooled_with_per_event_costs_on_margins():
    """The per-event cost mode: scores are cost margins, weights fn_i (positives) / fp_i
    (negatives), unit costs; the pooled threshold is the batch margin mode's on the pooled events."""
    rng = np.random.default_rng(9)
    n = 400
    g = rng.choice(["a", "b"], n, p=[0.9, 0.1])
    y = rng.random(n) < 0.2
    p = np.clip(rng.beta(2, 5, n) + 0.3 * y, 0, 1)
    amount = rng.integers(1, 500, n).astype(float)
    fee = 5.0
    st_ = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=None, pool_weight=0.25, min_per_class=5)
    for k, pi, yi, ai in zip(g.tolist(), p.tolist(), y.tolist(), amount.tolist()):
        st_.update(k, cost_margin(pi, ai, fee), yi, margin_weight(yi, ai, fee))
    for k in ("a", "b"):
        m = g == k
        # the segment's events at weight 1, every event at weight 0.25: pooled_threshold's weights
        want = thors_threshold(p, y, fn_cost=amount, fp_cost=fee, sample_weight=m + 0.25, decide_on="margin")
        assert st_.pooled_result(k).threshold == want.threshold == st_.get(k)
        assert st_.pooled_result(k).cost == want.cost


def test_pooled_with_period():
    period = 30.0
    st_ = SegmentedStreamingThors(fn_cost=2, fp_cost=1, period=period, pool_weight=0.5, min_per_class=2)
    ref = _Reference(period=period)
    for i, (g, s, y, w) in enumerate(_stream(10, 200, weighted=True)):
        st_.update(g, s, y, w, t=float(i))
        ref.update(g, s, y, w, float(i))
        if i % 17 == 0:
            assert st_.pooled_result(g).threshold == _batch(ref.pooled_events(g, 0.5), fn_cost=2, fp_cost=1).threshold
    before = _snapshot(st_)
    for seg in ("a", "new"):  # a missing or bad time: nothing learned, no segment registered
        with pytest.raises(ValueError, match=r"t .*required"):
            st_.update(seg, 0.5, 1)
        with pytest.raises((ValueError, TypeError), match="noon"):
            st_.update(seg, 0.5, 1, t="noon")
        assert _snapshot(st_) == before and "new" not in st_.segments()


def test_pooled_constructor_refusals():
    base = {"fn_cost": 1, "fp_cost": 1, "window": 50}
    for lam in (0, -1.0, float("nan"), float("inf"), 2.0**40, 2.0**-40):
        with pytest.raises(ValueError, match="pool_weight"):
            SegmentedStreamingThors(**base, pool_weight=lam)
    with pytest.raises(TypeError):
        SegmentedStreamingThors(**base, pool_weight="0.5")
    for every in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="pool_every"):
            SegmentedStreamingThors(**base, pool_weight=0.5, pool_every=every)
    with pytest.raises(ValueError, match="pool_every=10 only applies with pool_weight"):
        SegmentedStreamingThors(**base, pool_every=10)
    with pytest.raises(ValueError, match="window='auto'"):
        SegmentedStreamingThors(**AUTO, pool_weight=0.5)
    with pytest.raises(ValueError, match="max_fpr"):
        SegmentedStreamingThors(**base, pool_weight=0.5, max_fpr=0.1)
    with pytest.raises(ValueError, match="min_per_class"):
        SegmentedStreamingThors(**base, pool_weight=0.5, min_per_class=0)
    st_ = SegmentedStreamingThors(**base, pool_weight=0.5)
    assert (st_.pool_weight, st_.pool_every) == (0.5, 500)


def _fresh_pooled(**kw):
    return SegmentedStreamingThors(**{"fn_cost": 4, "fp_cost": 1, "window": 60, "pool_weight": 0.25,
                                      "pool_every": 25, "min_per_class": 3, "max_segments": 2, **kw})


def test_pooled_checkpoint_roundtrip_continues_identically(tmp_path):
    events = _stream(11, 400, weighted=True)
    st_ = _fresh_pooled()
    for g, s, y, w in events[:250]:
        st_.update(g, s, y, w)
        st_.get(g)
    assert st_.evicted > 0 and st_._pool
    _save(st_, tmp_path / "pooled.ckpt")
    back = _fresh_pooled()
    _load(back, tmp_path / "pooled.ckpt")
    assert back._pool == st_._pool and back._learned == st_._learned
    for g, s, y, w in events[250:]:  # the same cached thresholds, recomputed at the same reads
        st_.update(g, s, y, w)
        back.update(g, s, y, w)
        assert back.get(g) == st_.get(g) and back.source(g) == st_.source(g)
    assert back._pool == st_._pool


def test_pooled_checkpoint_refusals_change_nothing(tmp_path):
    st_ = _fresh_pooled()
    for g, s, y, w in _stream(12, 200):
        st_.update(g, s, y, w)
        st_.get(g)
    _save(st_, tmp_path / "pooled.ckpt")
    cases = [(_fresh_pooled(pool_weight=0.5), "pool_weight"), (_fresh_pooled(pool_every=26), "pool_every"),
             (SegmentedStreamingThors(fn_cost=4, fp_cost=1, window=60, min_per_class=3, max_segments=2),
              "with pool_weight")]
    for target, msg in cases:
        before = _snapshot(target)
        with pytest.raises(ValueError, match=msg):
            _load(target, tmp_path / "pooled.ckpt")
        assert _snapshot(target) == before
    ck = read_checkpoint_full(tmp_path / "pooled.ckpt", "test.segments")
    for entry, msg in (([float("nan"), 3], r"pool\[0\]"), ([0.5, 10**6], r"pool\[0\]"), ("x", r"pool\[0\]")):
        state = {**ck.state, "segments": {**ck.state["segments"], "pool": [entry, None]}}
        write_checkpoint(tmp_path / "bad.ckpt", "test.segments", ck.params, state, ck.arrays)
        target = _fresh_pooled()
        before = _snapshot(target)
        with pytest.raises(ValueError, match=msg):
            _load(target, tmp_path / "bad.ckpt")
        assert _snapshot(target) == before


# ---------------------------------------------------------------- composition: per-event costs, times
def test_auto_on_cost_margins_with_times():
    """Per-event costs with window='auto': margins as scores, weights fn_i / fp_i, unit costs,
    the Bayes rule (0) as the default candidate; t is checked and not used (count windows)."""
    rng = np.random.default_rng(13)
    n = 300
    g = rng.choice(["a", "b"], n, p=[0.7, 0.3]).tolist()
    y = (rng.random(n) < 0.2).tolist()
    p = np.clip(rng.beta(2, 5, n) + 0.3 * np.array(y), 0, 1).tolist()
    amount = rng.integers(1, 500, n).astype(float).tolist()
    kw = {"fn_cost": 1, "fp_cost": 1, "windows": (20, 80), "default_threshold": 0.0}
    st_ = SegmentedStreamingThors(**kw, window="auto", seed=2, min_per_class=5)
    untimed = SegmentedStreamingThors(**kw, window="auto", seed=2, min_per_class=5)
    ref = {k: WindowSelector(**kw, seed=_segment_seed(2, i)) for i, k in enumerate(dict.fromkeys(g))}
    ref_global = WindowSelector(**kw, seed=2)
    for i, (k, pi, yi, ai) in enumerate(zip(g, p, y, amount)):
        m, w = cost_margin(pi, ai, 5.0), margin_weight(yi, ai, 5.0)
        st_.update(k, m, yi, w, t=float(i))
        untimed.update(k, m, yi, w)
        ref[k].update(m, yi, w)
        ref_global.update(m, yi, w)
        want = ref[k].get() if ref[k].experts[-1].result().is_supported(5) else ref_global.get()
        assert st_.get(k) == untimed.get(k) == want
    assert st_.source("a") == "segment" and st_.source("c") == "global"


def test_a_segment_below_support_takes_the_global_threshold_under_a_rate_cap():
    # its own summary has no capped threshold (one event): get() raised instead of answering the global one
    rng = np.random.default_rng(0)
    seg = SegmentedStreamingThors(fn_cost=1, fp_cost=1, window=1000, max_fpr=0.05, min_per_class=5)
    for s, y in zip(rng.random(400), rng.random(400) < 0.3):
        seg.update("big", float(s), bool(y))
    seg.update("small", 0.5, True)
    assert seg.source("small") == "global"
    assert seg.get("small") == seg.global_threshold() == seg.get("never seen")
    assert seg.get("big") == seg.result("big").threshold
