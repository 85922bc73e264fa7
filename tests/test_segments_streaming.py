"""SegmentedStreamingThors composed: a window chosen online per segment (``window="auto"``),
partial pooling of small segments in the stream (``pool_weight``), weighted events (per-event
costs), time windows, checkpoints, and bad input that changes nothing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream.checkpoint import read_checkpoint_full, write_checkpoint
from thors_stream.segments import SegmentedStreamingThors, _segment_seed
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


@pytest.mark.parametrize("mode", ["auto", "plain"])
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
           ([1], 0.5, 1, 1.0, None)]
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
