"""``ThorsClassifier(window="auto")``: save_thresholding / load_thresholding (issue 15).

A restored wrapper continues exactly as the saved one (same thresholds, same weights, same
draws); a file that breaks any of the selector's invariants is refused with an error naming
it, and the wrapper is left as it was.
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


def _trained(n=3_000, **kw):
    m = _auto(**kw)
    for i, (x, y) in enumerate(_stream(n)):
        m.predict_one(x, key=i)
        m.learn_one(x, y, key=i)
    m.predict_one({"x": 0.1, "z": 0.0}, key="waiting")
    return m


def _state(m):
    sel = m._selector
    return (m.threshold, m.n_pending, sel.costs, sel.probabilities(), sel.chosen, sel.n,
            [len(e) for e in sel.experts], [e.get() for e in sel.experts])


def test_auto_roundtrip_continues_identically(tmp_path):
    m = _trained()
    m.save_thresholding(tmp_path / "a.ckpt")
    m2 = _auto()
    m2.load_thresholding(tmp_path / "a.ckpt")
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
        m.save_thresholding(tmp_path / f"{n}.ckpt")
        m2 = _auto(auto_choose="leader")
        m2.load_thresholding(tmp_path / f"{n}.ckpt")
        assert _state(m2) == _state(m)


def test_segments_still_refused(tmp_path):
    from river import linear_model

    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment="c")
    with pytest.raises(NotImplementedError, match="segment="):
        m.save_thresholding(tmp_path / "s.ckpt")
    assert not (tmp_path / "s.ckpt").exists()


def _refused(path, *needles, **kw):
    m = _trained(500, **kw)
    before = _state(m)
    with pytest.raises(ValueError) as info:
        m.load_thresholding(path)
    assert str(path) in str(info.value)
    for n in needles:
        assert n in str(info.value), str(info.value)
    assert _state(m) == before


def _tamper(tmp_path, edit):
    m = _trained()
    m.save_thresholding(tmp_path / "good.ckpt")
    header, arrays, _ = parse(tmp_path / "good.ckpt")
    edit(header, arrays)
    return forge(tmp_path / "bad.ckpt", header, arrays)


def _sv(a, k=5):
    """(log prior, costs, weights, scalars) views of the selector's state array."""
    s = a["selector_state"]
    return s[:k], s[k : 2 * k], s[2 * k : 3 * k], s[3 * k :]


def _set_costs_negative(h, a):
    _sv(a)[1][0] = -1.0


def _weights_not_adahedge(h, a):
    p = _sv(a)[2]
    p[:] = p[::-1].copy() if not np.allclose(p, p[::-1]) else np.eye(5)[0]


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
