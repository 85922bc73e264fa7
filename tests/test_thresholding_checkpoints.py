"""``ThorsClassifier(window="auto")`` and ``ThorsClassifier(segment=...)``:
save_thresholding / load_thresholding (issue 15).

A restored wrapper continues exactly as the saved one (same thresholds, same weights, same
draws, the same segments in the same eviction order); a file that breaks any invariant of
the selector or of the segments is refused with an error naming it, and the wrapper is left
as it was.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_checkpoint_hostile import forge, parse

from thors_stream import ThorsClassifier


def _auto(**kw):
    from river import linear_model

    return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window="auto", **kw)


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        y = bool(rng.random() < 0.3)
        yield {"x": float(rng.normal(1.0 if y else -0.5)), "z": float(rng.normal())}, y


def _fed(m, events, waiting):
    """``m`` after scoring and learning ``events`` under delayed-label keys, with one more
    score (``waiting``) still waiting for its label."""
    for i, (x, y) in enumerate(events):
        m.predict_one(x, key=i)
        m.learn_one(x, y, key=i)
    m.predict_one(waiting, key="waiting")
    return m


def _trained(n=3_000, **kw):
    return _fed(_auto(**kw), _stream(n), {"x": 0.1, "z": 0.0})


def _reloaded(m, fresh, path):
    """A fresh wrapper (``fresh()``) loaded from ``m``'s checkpoint saved at ``path``."""
    m.save_thresholding(path)
    m2 = fresh()
    m2.load_thresholding(path)
    return m2


def _state(m):
    sel = m._selector
    return (m.threshold, m.n_pending, sel.costs, sel.probabilities(), sel.chosen, sel.n,
            [len(e) for e in sel.experts], [e.get() for e in sel.experts])


def test_auto_roundtrip_continues_identically(tmp_path):
    m = _trained()
    m2 = _reloaded(m, _auto, tmp_path / "a.ckpt")
    assert _state(m2) == _state(m)
    for a, b in zip(m._selector.experts, m2._selector.experts):
        assert [r.tolist() for r in a.held()] == [r.tolist() for r in b.held()]
    m2.classifier = copy.deepcopy(m.classifier)
    for i, (x, y) in enumerate(_stream(2_000, seed=1)):
        assert m.predict_one(x, key=("k", i)) == m2.predict_one(x, key=("k", i))
        m.learn_one(x, y, key=("k", i))
        m2.learn_one(x, y, key=("k", i))
    assert _state(m2) == _state(m)  # the draws too: the generator's state was saved


def test_auto_leader_and_short_streams_roundtrip(tmp_path):
    for n in (0, 1, 700):
        m = _trained(n, auto_choose="leader")
        m2 = _reloaded(m, lambda: _auto(auto_choose="leader"), tmp_path / f"{n}.ckpt")
        assert _state(m2) == _state(m)


def _refused_by(m, state, path, needles):
    """Loading ``path`` into the trained wrapper ``m`` raises a ValueError naming the file
    and every needle, and ``state(m)`` is what it was."""
    before = state(m)
    with pytest.raises(ValueError) as info:
        m.load_thresholding(path)
    assert str(path) in str(info.value)
    for n in needles:
        assert n in str(info.value), str(info.value)
    assert state(m) == before


def _tampered(m, tmp_path, edit):
    """``m``'s checkpoint with ``edit(header, arrays)`` applied (and a valid checksum)."""
    m.save_thresholding(tmp_path / "good.ckpt")
    header, arrays, _ = parse(tmp_path / "good.ckpt")
    edit(header, arrays)
    return forge(tmp_path / "bad.ckpt", header, arrays)


def _refused(path, *needles, **kw):
    _refused_by(_trained(500, **kw), _state, path, needles)


def _tamper(tmp_path, edit):
    return _tampered(_trained(), tmp_path, edit)


def _sv(a, k=5):
    """(log prior, costs, weights, scalars) views of the selector's state array."""
    s = a["selector_state"]
    return s[:k], s[k : 2 * k], s[2 * k : 3 * k], s[3 * k :]


def _set_costs_negative(h, a):
    _sv(a)[1][0] = -1.0


def _weights_not_adahedge(h, a):
    p = _sv(a)[2]
    p[:] = p[::-1].copy() if not np.allclose(p, p[::-1]) else np.eye(5)[0]


def _swap_candidate_events(h, a):
    # the shortest window's candidate holds two of its events in the other order: valid on
    # its own, but not the newest events of the longest window
    for name in ("sel0_queue_s", "sel0_queue_y", "sel0_queue_w"):
        a[name][[0, 1]] = a[name][[1, 0]]


def _drop_candidate_event(h, a):
    # the shortest window's candidate (500 events) loses its newest queued event
    for name in ("sel0_queue_s", "sel0_queue_y", "sel0_queue_w"):
        a[name] = a[name][:-1].copy()


@pytest.mark.parametrize(
    "edit, needles",
    [
        (lambda h, a: h["params"]["selector"].update(windows=[500, 2_000, 8_000, 16_000]), ("windows",)),
        (lambda h, a: h["params"]["selector"].update(choose="leader"), ("auto_choose",)),
        (lambda h, a: h["params"]["selector"].update(default_threshold=0.5), ("default threshold",)),
        (lambda h, a: h["params"]["selector"].pop("experts"), ("params.selector",)),
        (lambda h, a: h["state"]["selector"].update(n=-1), ("state.selector.n",)),
        (lambda h, a: h["state"]["selector"].update(n=True), ("state.selector.n",)),
        (lambda h, a: h["state"]["selector"].update(n=10), ("holds", "min(n=10")),
        (lambda h, a: h["state"]["selector"]["experts"].pop(), ("candidates",)),
        (_drop_candidate_event, ("candidate 'window 500'",)),
        (_swap_candidate_events, ("newest events of the longest window",)),
        (lambda h, a: _sv(a)[0].__setitem__(0, 0.0), ("prior",)),
        (_set_costs_negative, (">= 0",)),
        (lambda h, a: _sv(a)[1].__setitem__(1, np.nan), ("non-finite",)),
        (_weights_not_adahedge, ("AdaHedge",)),
        (lambda h, a: _sv(a)[3].__setitem__(3, 5.0), ("choice",)),
        (lambda h, a: _sv(a)[3].__setitem__(3, 1.5), ("choice",)),
        (lambda h, a: a.__setitem__("selector_rng", np.zeros(1, np.uint64)), ("selector_rng",)),
        (lambda h, a: a.__setitem__("selector_state", a["selector_state"][:-1].copy()), ("selector_state",)),
        (lambda h, a: a.pop("selector_rng"), ("selector_rng",)),
        (lambda h, a: h["params"].pop("selector"), ("window=",)),
        # a candidate with other settings than the wrapper's (found in review: it loaded, and
        # the first learn_one raised NPInfeasibleError)
        (lambda h, a: [p.update(max_fpr=0.001) for p in h["params"]["selector"]["experts"]], ("settings",)),
        (lambda h, a: h["params"]["selector"]["experts"][0].update(default_threshold=0.5), ("settings",)),
        (lambda h, a: a.__setitem__("sel9_keys", np.zeros(1)), ("no candidate", "sel9_keys")),
    ],
)
def test_auto_hostile_files_are_refused_and_change_nothing(tmp_path, edit, needles):
    _refused(_tamper(tmp_path, edit), *needles)


def test_auto_and_fixed_windows_do_not_mix(tmp_path):
    from river import linear_model

    fixed = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=32_000, warm_up=0)
    fixed.learn_one({"x": 1.0}, True)
    fixed.save_thresholding(tmp_path / "fixed.ckpt")
    _refused(tmp_path / "fixed.ckpt", "window=")
    auto = _trained(200)
    auto.save_thresholding(tmp_path / "auto.ckpt")
    before = (fixed.threshold, fixed.n_pending)
    with pytest.raises(ValueError, match="window="):
        fixed.load_thresholding(tmp_path / "auto.ckpt")
    assert (fixed.threshold, fixed.n_pending) == before
    # a fixed-window file carrying a selector's arrays is refused too
    header, arrays, _ = parse(tmp_path / "fixed.ckpt")
    arrays["selector_rng"] = np.ones(1, np.uint64)
    p = forge(tmp_path / "mixed.ckpt", header, arrays)
    with pytest.raises(ValueError, match="selector's arrays"):
        fixed.load_thresholding(p)


# ---------------------------------------------------------------- segment=
SEGMENTS = {0: "a", 1: "b", 2: 3, 3: ("t", 1), 4: 2.5, 5: None, 6: b"\x00"}


def _segment(x):
    return SEGMENTS[int(x["c"])]


def _segmented(**kw):
    from river import linear_model

    kw = {"window": 300, "max_segments": 4, "min_per_class": 5, "warm_up": 0, **kw}
    return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment=_segment, **kw)


def _seg_stream(n, seed=0):
    rng = np.random.default_rng(seed)
    for i in range(n):
        y = bool(rng.random() < 0.3)
        yield {"x": float(rng.normal(1.0 if y else -0.5)), "c": float(rng.integers(0, 7) if i % 3 else i % 2)}, y


def _seg_trained(n=3_000, **kw):
    return _fed(_segmented(**kw), _seg_stream(n), {"x": 0.2, "c": 1.0})


def _seg_state(m):
    seg = m._segmented
    return (m.threshold, m.n_pending, seg.segments(), seg.evicted,
            [seg.get(k) for k in seg.segments()], [len(seg._seg[k]) for k in seg.segments()],
            len(seg.global_summary))


def test_segments_roundtrip_continues_identically(tmp_path):
    m = _seg_trained()
    assert m._segmented.evicted > 0 and len(m._segmented.segments()) == 4
    m2 = _reloaded(m, _segmented, tmp_path / "s.ckpt")
    assert _seg_state(m2) == _seg_state(m)
    assert m2._thors is m2._segmented.global_summary
    m2.classifier = copy.deepcopy(m.classifier)
    for x, y in _seg_stream(1_500, seed=1):
        assert m.predict_one(x) == m2.predict_one(x)
        m.learn_one(x, y)
        m2.learn_one(x, y)
    assert _seg_state(m2) == _seg_state(m)


def test_segments_empty_and_unsupported_keys(tmp_path):
    m = _segmented()
    m2 = _reloaded(m, _segmented, tmp_path / "empty.ckpt")
    assert _seg_state(m2) == _seg_state(m)
    m.learn_one({"x": 0.0, "c": 0.0}, True)
    m._segmented._seg[frozenset({1})] = m._segmented._seg.pop("a")  # a segment key no file can hold
    with pytest.raises(TypeError, match="segments that are"):
        m.save_thresholding(tmp_path / "bad.ckpt")
    assert not (tmp_path / "bad.ckpt").exists()


def _seg_refused(path, *needles):
    _refused_by(_seg_trained(400), _seg_state, path, needles)


def _seg_tamper(tmp_path, edit):
    return _tampered(_seg_trained(), tmp_path, edit)


def _shift_lengths(h, a):
    ln = h["state"]["segments"]["lengths"]
    ln[0]["keys"] += 1
    ln[1]["keys"] -= 1


@pytest.mark.parametrize(
    "edit, needles",
    [
        (lambda h, a: h["params"]["segments"].update(max_segments=5), ("max_segments",)),
        (lambda h, a: h["params"]["segments"].update(min_per_class=1), ("min_per_class",)),
        (lambda h, a: h["state"]["segments"].update(evicted=-1), ("evicted",)),
        (lambda h, a: h["state"]["segment_keys"].__setitem__(1, h["state"]["segment_keys"][0]), ("twice",)),
        (lambda h, a: h["state"]["segment_keys"].pop(), ("one state and one lengths",)),
        (lambda h, a: h["state"]["segment_keys"].__setitem__(0, "a"), ("segment_keys[0]", "tagged")),
        (lambda h, a: h["state"]["segments"]["lengths"][0].__setitem__("keys", -1), ("lengths[0]",)),
        (lambda h, a: h["state"]["segments"]["lengths"][0].__setitem__("bogus", 0), ("lengths[0]",)),
        (_shift_lengths, ("segment",)),
        (lambda h, a: a.__setitem__("seg_keys", a["seg_keys"][:-1].copy()), ("seg_keys",)),
        (lambda h, a: h["state"]["segments"]["states"][2].update(n=10**6), ("segment",)),
        (lambda h, a: h["params"].pop("segments"), ("segment=",)),
    ],
)
def test_segments_hostile_files_are_refused_and_change_nothing(tmp_path, edit, needles):
    _seg_refused(_seg_tamper(tmp_path, edit), *needles)


def test_segments_too_many_for_the_wrapper(tmp_path):
    m = _seg_trained(max_segments=6)
    m.save_thresholding(tmp_path / "six.ckpt")
    header, arrays, _ = parse(tmp_path / "six.ckpt")
    header["params"]["segments"]["max_segments"] = 4  # claims the wrapper's setting, holds more
    _seg_refused(forge(tmp_path / "bad.ckpt", header, arrays), "more than max_segments=4")


def test_segmented_and_plain_files_do_not_mix(tmp_path):
    from river import linear_model

    plain = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=300, warm_up=0)
    plain.learn_one({"x": 1.0, "c": 0.0}, True)
    plain.save_thresholding(tmp_path / "plain.ckpt")
    _seg_refused(tmp_path / "plain.ckpt", "segment=")
    _seg_trained(300).save_thresholding(tmp_path / "seg.ckpt")
    with pytest.raises(ValueError, match="segment="):
        plain.load_thresholding(tmp_path / "seg.ckpt")
    header, arrays, _ = parse(tmp_path / "plain.ckpt")
    arrays["seg_keys"] = np.zeros(1)
    with pytest.raises(ValueError, match="segments' arrays"):
        plain.load_thresholding(forge(tmp_path / "mixed.ckpt", header, arrays))


def test_plain_wrapper_learns_into_the_loaded_summary(tmp_path):
    """Found in review (older than the auto/segment checkpoints): after load_thresholding, a
    plain wrapper's fast learn_one path kept feeding the summary it had before the load."""
    from river import linear_model

    def plain():
        return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=200, warm_up=0)

    a = plain()
    for x, y in _stream(300):
        a.predict_one(x)
        a.learn_one(x, y)
    b = _reloaded(a, plain, tmp_path / "p.ckpt")
    b.classifier = copy.deepcopy(a.classifier)
    for x, y in _stream(300, seed=5):
        assert a.predict_one(x) == b.predict_one(x)
        a.learn_one(x, y)
        b.learn_one(x, y)
        assert a.threshold == b.threshold
