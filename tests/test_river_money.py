"""ThorsClassifier with per-event costs: deciding on the cost margin, in money."""

from __future__ import annotations

import collections
import copy
import math
import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force
from river import base, linear_model

from thors_stream import thors_threshold
from thors_stream.margin import cost_margin
from thors_stream.river import ThorsClassifier


class Stub(base.Classifier):
    """P(positive | x) = clip(x["p"] + drift * labels learned): frozen with drift 0. Records
    every learn_one call's keyword arguments."""

    def __init__(self, drift: float = 0.0):
        self.drift = drift
        self.n = 0
        self.calls: list[dict] = []

    def learn_one(self, x, y, w=1.0):
        self.calls.append({"w": w})
        self.n += 1

    def p(self, x):
        p = x["p"] + self.drift * self.n
        return min(1.0, max(0.0, p)) if self.drift else p

    def predict_proba_one(self, x):
        p = self.p(x)
        return {False: 1.0 - p, True: p}


class NoWeight(Stub):
    """A model whose learn_one takes no sample weight."""

    def learn_one(self, x, y):
        self.calls.append({})
        self.n += 1


class AnyKwargs(Stub):
    """A model whose learn_one takes any keyword: records exactly what it is given."""

    def learn_one(self, x, y, **kwargs):
        self.calls.append(dict(kwargs))
        self.n += 1


def fee_of(x):
    """A module-level cost callable (pickles)."""
    return x["fee"]


def held(model):
    """The thresholder's held events as {margin: [w1, w0, count1, count0]}."""
    s, w1, w0, c1, c0 = model.thors.held()
    return {k: [a, b, int(c), int(d)] for k, a, b, c, d in zip(s.tolist(), w1.tolist(), w0.tolist(), c1, c0)}


def expected_held(events):
    """{margin: [w1, w0, count1, count0]} of (margin, y, weight) events."""
    out: dict[float, list] = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for m, y, w in events:
        row = out[m]
        if y:
            row[0] += w
            row[2] += 1
        else:
            row[1] += w
            row[3] += 1
    return dict(out)


def payments(n, seed=0, rate=0.3):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = rng.random() < rate
        p = min(1.0, max(0.0, rng.gauss(0.45 if y else 0.25, 0.2)))
        out.append(({"p": round(p, 3), "amount": float(rng.randint(1, 400)), "fee": float(rng.randint(1, 9)),
                     "seg": rng.choice("ab"), "i": i}, y))
    return out


# ---------------------------------------------------------------- exactness
P_VALUES = st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0])
EVENT = st.tuples(P_VALUES, st.booleans(), st.integers(1, 40).map(float), st.sampled_from([1.0, 2.0, 5.0]))


@settings(max_examples=60)
@given(st.lists(EVENT, min_size=1, max_size=40), st.integers(1, 25),
       st.sampled_from(["features", "callable", "fn only"]))
def test_threshold_is_thors_on_the_windows_margins(events, window, how):
    """After a stream, the threshold is thors_threshold(..., decide_on="margin") of the events
    in the window (and the brute-force optimum on their margins); predict_one is margin > threshold."""
    fn_cost, fp_cost = {"features": ("amount", "fee"), "callable": (lambda x: x["amount"], fee_of),
                        "fn only": ("amount", 2.0)}[how]
    model = ThorsClassifier(Stub(), fn_cost=fn_cost, fp_cost=fp_cost, window=window, warm_up=0, min_model_labels=0)
    rows = []
    for p, y, amount, fee in events:
        fee = 2.0 if how == "fn only" else fee
        x = {"p": p, "amount": amount, "fee": fee}
        m = cost_margin(p, amount, fee)
        assert model.predict_one(x) == (m > model.threshold)
        model.learn_one(x, y)
        rows.append((p, y, amount, fee))
    win = rows[-window:]
    ps, ys, fns, fps = (list(c) for c in zip(*win))
    assert model.decide_on == "margin"
    if 0 < sum(y for _, y, _, _ in rows) < len(rows):
        r = thors_threshold(ps, ys, fn_cost=fns, fp_cost=fps, decide_on="margin")
        assert model.threshold == r.threshold
        margins = [(cost_margin(p, fn, fp), y, fn if y else fp) for p, y, fn, fp in win]
        assert model.threshold == brute_force(margins, 1, 1)[0]
    else:
        assert not model.warmed_up and model.threshold == 0.0
    for p, amount in ((0.02, 300.0), (0.5, 1.0), (1.0, 7.0), (0.0, 40.0)):
        x = {"p": p, "amount": amount, "fee": 2.0}
        assert model.predict_one(x) == (cost_margin(p, amount, 2.0) > model.threshold)


def test_default_is_the_bayes_rule_until_warm_and_a_given_default_is_on_the_margin_scale():
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", warm_up=20, min_model_labels=0)
    data = payments(40)
    for _i, (x, y) in enumerate(data[:19]):
        assert model.threshold == 0.0
        m = cost_margin(x["p"], x["amount"], x["fee"])
        assert model.predict_one(x) == (m > 0.0) == (x["p"] * x["amount"] > (1 - x["p"]) * x["fee"])
        model.learn_one(x, y)
    assert not model.warmed_up
    model.learn_one(*data[19])
    assert model.warmed_up and model.threshold != 0.0
    given_default = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0, default_threshold=1.5, warm_up=20)
    assert given_default.threshold == 1.5
    x = {"p": 0.5, "amount": 5.0 * math.exp(1.4)}  # margin 1.4: below 1.5
    assert given_default.predict_one(x) is False
    assert given_default.predict_one({"p": 0.5, "amount": 5.0 * math.exp(1.6)}) is True


def test_predict_proba_one_passes_probabilities_through():
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0)
    assert model.predict_proba_one({"p": 0.3, "amount": 10.0}) == {False: 0.7, True: 0.3}
    # without a key no cost is needed (nothing is stored)
    assert model.predict_proba_one({"p": 0.3}) == {False: 0.7, True: 0.3}
    assert model.predict_proba_one({"p": 0.3, "amount": 10.0}, key="k") == {False: 0.7, True: 0.3}
    assert model._pending["k"] == (cost_margin(0.3, 10.0, 5.0), 10.0, 5.0, 0)


def test_numbers_for_both_costs_keep_the_score_mode():
    model = ThorsClassifier(Stub(), fn_cost=5, fp_cost=1, warm_up=0)
    assert model.decide_on == "score" and model.threshold == 1 / 6
    for x, y in payments(30):
        model.predict_one(x)
        model.learn_one(x, y)
    assert model.n_cold_skipped == 0 and model.n_model_labels == 0
    assert model.thors.fn_cost == 5.0


# ---------------------------------------------------------------- which margin is learned, cold start
def test_rescored_and_decision_time_margins():
    """Labels 15 events late from a model that drifts: without a key the current model's
    margin (before it learns x) is learned, with a key the decision-time one."""
    data = payments(60, seed=3)
    for keyed in (False, True):
        stub = Stub(drift=0.004)
        model = ThorsClassifier(stub, fn_cost="amount", fp_cost="fee", window=None, warm_up=0, min_model_labels=0)
        expected = []
        waiting = collections.deque()
        for i, (x, y) in enumerate(data + [(None, None)] * 15):
            if x is not None:
                model.predict_one(x, key=i if keyed else None)
                waiting.append((i, x, y, stub.p(x)))
            if len(waiting) > 15 or x is None:
                j, xj, yj, p_decision = waiting.popleft()
                p = p_decision if keyed else stub.p(xj)  # the current model, before it learns xj
                expected.append((cost_margin(p, xj["amount"], xj["fee"]), yj, xj["amount"] if yj else xj["fee"]))
                model.learn_one(xj, yj, key=j if keyed else None)
        assert model.n_pending == 0
        assert held(model) == expected_held(expected)
        assert model.threshold == brute_force(expected, 1, 1)[0]
        if keyed:
            keyed_threshold = model.threshold
        else:
            rescored_threshold = model.threshold
    assert keyed_threshold != rescored_threshold  # the two margins differ on this stream


def test_learn_without_key_rescores_even_when_the_decision_had_a_key():
    stub = Stub(drift=0.01)
    model = ThorsClassifier(stub, fn_cost="amount", fp_cost=5.0, window=None, min_model_labels=0)
    x = {"p": 0.4, "amount": 50.0}
    model.predict_one(x, key="late")
    model.learn_one({"p": 0.2, "amount": 3.0}, False)  # the model changes
    model.learn_one(x, True)  # no key: re-scored by the current model
    assert set(held(model)) == {cost_margin(0.2 + 0.01 * 0, 3.0, 5.0), cost_margin(stub.p(x) - 0.01, 50.0, 5.0)}
    assert model.n_pending == 1


def test_cold_start_margins_are_not_learned():
    data = payments(50, seed=5)
    # re-scored: the first min_model_labels events were scored by a model with fewer labels
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=None, warm_up=0, min_model_labels=10)
    for x, y in data:
        model.predict_one(x)
        model.learn_one(x, y)
    assert model.n_cold_skipped == 10 and model.n_model_labels == 50 and model.classifier.n == 50
    assert len(model.thors) == 40
    assert held(model) == expected_held([(cost_margin(x["p"], x["amount"], x["fee"]), y,
                                          x["amount"] if y else x["fee"]) for x, y in data[10:]])
    # decision time, labels 20 late: every decision made before the 10th label is skipped
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=None, warm_up=0, min_model_labels=10)
    for i, (x, _y) in enumerate(data):
        model.predict_one(x, key=i)
        if i >= 20:
            model.learn_one(*data[i - 20], key=i - 20)
    assert model.n_model_labels == 30
    assert model.n_cold_skipped == 30  # decisions 0..29 were scored by a model with < 10 labels
    assert len(model.thors) == 0 and not model.warmed_up and model.threshold == 0.0
    model.learn_one(*data[30], key=30)  # decided when the model had learned 10 labels
    assert model.n_cold_skipped == 30 and len(model.thors) == 1


def test_the_scalar_cost_path_has_no_cold_start():
    model = ThorsClassifier(Stub(), fn_cost=5, fp_cost=1, warm_up=0, min_model_labels=1000)
    for x, y in payments(20):
        model.learn_one(x, y)
    assert len(model.thors) == 20 and model.n_cold_skipped == 0


# ---------------------------------------------------------------- w and the model
def test_w_is_a_sample_weight_and_a_cost_never_reaches_the_model():
    for cls in (Stub, AnyKwargs, NoWeight):
        stub = cls()
        model = ThorsClassifier(stub, fn_cost="amount", fp_cost="fee", window=None, warm_up=0, min_model_labels=0)
        x = {"p": 0.3, "amount": 120.0, "fee": 3.0}
        model.learn_one(x, True, w=2.0)
        model.learn_one(x, False)
        model.predict_one(x, key="k")
        model.learn_one(x, False, key="k", w=0.5)
        if cls is NoWeight:
            assert stub.calls == [{}, {}, {}]
        elif cls is AnyKwargs:
            assert stub.calls == [{"w": 2.0}, {}, {"w": 0.5}]
        else:
            assert stub.calls == [{"w": 2.0}, {"w": 1.0}, {"w": 0.5}]
        m = cost_margin(0.3, 120.0, 3.0)
        assert held(model) == {m: [240.0, 3.0 + 1.5, 1, 2]}  # fn_i * w, fp_i, fp_i * w


def test_weights_match_the_batch_threshold_with_sample_weights():
    data = payments(80, seed=11)
    ws = [float(1 + i % 3) for i in range(len(data))]
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=50, warm_up=0, min_model_labels=0)
    for (x, y), w in zip(data, ws):
        model.learn_one(x, y, w=w)
    win = list(zip(data, ws))[-50:]
    r = thors_threshold([x["p"] for (x, _), _ in win], [y for (_, y), _ in win],
                        fn_cost=[x["amount"] for (x, _), _ in win], fp_cost=[x["fee"] for (x, _), _ in win],
                        sample_weight=[w for _, w in win], decide_on="margin")
    assert model.threshold == r.threshold


# ---------------------------------------------------------------- bad input changes nothing
def _state(model):
    return (copy.deepcopy(dict(model._pending)), model.n_model_labels, model.n_cold_skipped, len(model.thors),
            held(model), model.classifier.n, len(model.classifier.calls), model._n_learned, model._n_evicted)


BAD_EVENTS = [
    ({"p": 0.5, "fee": 1.0}, ValueError, r"fn_cost: no feature 'amount' in x"),
    ({"p": 0.5, "amount": "12", "fee": 1.0}, TypeError,
     r"fn_cost \(feature 'amount'\) must be a real number, got '12'"),
    ({"p": 0.5, "amount": None, "fee": 1.0}, TypeError, r"fn_cost \(feature 'amount'\) .* got None"),
    ({"p": 0.5, "amount": math.nan, "fee": 1.0}, ValueError, r"fn_cost \(feature 'amount'\) must be finite, got nan"),
    ({"p": 0.5, "amount": math.inf, "fee": 1.0}, ValueError, r"fn_cost \(feature 'amount'\) must be finite, got inf"),
    ({"p": 0.5, "amount": 0.0, "fee": 1.0}, ValueError, r"fn_cost \(feature 'amount'\) must be > 0 .* got 0.0"),
    ({"p": 0.5, "amount": -3, "fee": 1.0}, ValueError, r"fn_cost \(feature 'amount'\) must be > 0 .* got -3"),
    ({"p": 0.5, "amount": 2.0**961, "fee": 1.0}, ValueError, r"fn_cost .* must be > 0 \(between 2\*\*-960"),
    ({"p": 0.5, "amount": 2.0**-961, "fee": 1.0}, ValueError, r"fn_cost .* must be > 0 \(between 2\*\*-960"),
    ({"p": 0.5, "amount": 1.0, "fee": -1.0}, ValueError, r"fp_cost \(from fee_of\) must be > 0 .* got -1.0"),
    ({"p": 0.5, "amount": 1.0, "fee": True}, TypeError, r"fp_cost \(from fee_of\) must be a real number, got True"),
    ({"p": 1.5, "amount": 1.0, "fee": 1.0}, ValueError, r"probability .* is 1.5, not a number in \[0, 1\]"),
    ({"p": -0.1, "amount": 1.0, "fee": 1.0}, ValueError, r"probability .* is -0.1, not a number in \[0, 1\]"),
    ({"p": math.nan, "amount": 1.0, "fee": 1.0}, ValueError, r"probability .* is nan, not a number in \[0, 1\]"),
]


@pytest.mark.parametrize(("x", "error", "message"), BAD_EVENTS, ids=[m for _, _, m in BAD_EVENTS])
def test_bad_event_raises_naming_it_and_changes_nothing(x, error, message):
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=fee_of, window=20, warm_up=0, min_model_labels=2)
    for i, (good, _y) in enumerate(payments(30)):
        model.predict_one(good, key=i)
        if i >= 5:
            model.learn_one(*payments(30)[i - 5], key=i - 5)
    model.predict_one({"p": 0.2, "amount": 5.0, "fee": 1.0}, key="decided")
    before = _state(model)
    with pytest.raises(error, match=message + r".*\(event key 'tx-9'\)"):
        model.predict_one(x, key="tx-9")
    with pytest.raises(error, match=message + r".*\(event key 'decided'\)"):
        model.predict_one(x, key="decided")  # an existing key is neither replaced nor moved
    with pytest.raises(error, match=message + r".*\(event key 'tx-9'\)"):
        model.predict_proba_one(x, key="tx-9")
    with pytest.raises(error, match=message + r".*\(event x=\{'p'"):
        model.learn_one(x, True)
    with pytest.raises(error, match=message + r".*\(event x=\{'p'"):
        model.learn_one(x, False, w=2.0)
    assert _state(model) == before
    assert list(model._pending)[-1] == "decided"


def test_a_bad_weight_key_label_or_product_changes_nothing():
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0, window=20, warm_up=0, min_model_labels=0)
    x = {"p": 0.4, "amount": 2.0**900}
    model.learn_one({"p": 0.4, "amount": 3.0}, True)
    model.predict_one(x, key="big")
    before = _state(model)
    with pytest.raises(ValueError, match=r"w=1e\+100 times its fn_cost .* outside \[2\*\*-960, 2\*\*960\].*"
                                         r"\(event key 'big'\)"):
        model.learn_one(x, True, key="big", w=1e100)
    with pytest.raises(ValueError, match="weight must be finite and > 0, got -1"):
        model.learn_one(x, True, w=-1)
    with pytest.raises(KeyError, match="unknown key 'nope'"):
        model.learn_one(x, True, key="nope")
    with pytest.raises(ValueError, match="label must be 0, 1, False or True, got 2"):
        model.learn_one(x, 2, key="big")
    assert _state(model) == before
    model.learn_one(x, False, key="big", w=1e100)  # fp_cost 5 times 1e100 is fine
    assert model.n_pending == 0


def test_bad_cost_settings():
    with pytest.raises(TypeError, match=r"fn_cost must be a number, the name of a feature .* got '5'"):
        ThorsClassifier(Stub(), fn_cost="5", fp_cost="fee")
    with pytest.raises(ValueError, match=r"fp_cost must be > 0 .* got 0"):
        ThorsClassifier(Stub(), fn_cost="amount", fp_cost=0)
    with pytest.raises(TypeError, match="fp_cost must be a real number, got \\[1\\]"):
        ThorsClassifier(Stub(), fn_cost="amount", fp_cost=[1])
    with pytest.raises(ValueError, match="min_model_labels must be an integer >= 0, got -1"):
        ThorsClassifier(Stub(), fn_cost="amount", fp_cost=1, min_model_labels=-1)


# ---------------------------------------------------------------- composing: segments, auto, NP, period
def _margin(x):
    return cost_margin(x["p"], x["amount"], x["fee"])


def test_segments_threshold_margins_per_segment():
    data = payments(300, seed=2)
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", segment="seg", window=100, warm_up=0,
                            min_per_class=15, min_model_labels=0)
    for x, y in data:
        model.learn_one(x, y)
    glob = [(x, y) for x, y in data][-100:]

    def batch(evs):
        return thors_threshold([x["p"] for x, _ in evs], [y for _, y in evs], fn_cost=[x["amount"] for x, _ in evs],
                               fp_cost=[x["fee"] for x, _ in evs], decide_on="margin")

    assert model.threshold == batch(glob).threshold
    used = set()
    for seg in "ab":
        own = [(x, y) for x, y in data if x["seg"] == seg][-100:]
        r = batch(own)
        thr = r.threshold if r.is_supported(15) else batch(glob).threshold
        used.add(r.is_supported(15))
        assert model._segmented.get(seg) == thr
        for x in ({"p": 0.3, "amount": 40.0, "fee": 2.0, "seg": seg}, {"p": 0.05, "amount": 300.0, "fee": 5.0,
                                                                          "seg": seg}):
            assert model.predict_one(x) == (_margin(x) > thr)
    assert True in used  # a segment's own threshold was checked


def test_window_auto_chooses_among_margin_windows():
    data = payments(700, seed=4)
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window="auto", min_model_labels=0)
    sel = model.selector
    assert sel.default_threshold == 0.0 and (sel.fn_cost, sel.fp_cost) == (1.0, 1.0)
    for x, y in data:
        assert model.predict_one(x) == (_margin(x) > model.threshold)
        model.learn_one(x, y)
    for w, expert in zip(sel.windows, sel.experts):
        evs = data[-w:]
        assert expert.get() == thors_threshold([x["p"] for x, _ in evs], [y for _, y in evs],
                                               fn_cost=[x["amount"] for x, _ in evs],
                                               fp_cost=[x["fee"] for x, _ in evs], decide_on="margin").threshold
    assert sel.n == 700 and model.threshold == sel.get()
    # the candidates were charged money: each event's cost at each threshold
    t0 = [0.0] * len(data)  # the default candidate's threshold
    assert sel.costs[-1] == pytest.approx(sum((x["amount"] if y else x["fee"]) * ((_margin(x) <= t) == y)
                                              for (x, y), t in zip(data, t0)))


def test_neyman_pearson_and_period_on_margins():
    data = payments(200, seed=6)
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=150, warm_up=0, max_fpr=0.2,
                            confidence=0.8, min_model_labels=0)
    for x, y in data:
        model.learn_one(x, y)
    evs = data[-150:]
    r = thors_threshold([x["p"] for x, _ in evs], [y for _, y in evs], fn_cost=[x["amount"] for x, _ in evs],
                        fp_cost=[x["fee"] for x, _ in evs], decide_on="margin", max_fpr=0.2, confidence=0.8)
    assert model.threshold == r.threshold
    timed = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", period=50.0, moment="i", warm_up=0,
                            min_model_labels=0)
    for x, y in data:
        timed.learn_one(x, y)
    evs = [(x, y) for x, y in data if x["i"] > 199 - 50]
    assert len(timed.thors) == len(evs)
    assert timed.threshold == thors_threshold([x["p"] for x, _ in evs], [y for _, y in evs],
                                              fn_cost=[x["amount"] for x, _ in evs],
                                              fp_cost=[x["fee"] for x, _ in evs], decide_on="margin").threshold


# ---------------------------------------------------------------- clone, pickle, a real model
def test_clone_and_pickle():
    model = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=fee_of, window=40, warm_up=5, min_model_labels=3)
    data = payments(60, seed=8)
    for i, (x, _y) in enumerate(data[:50]):
        model.predict_one(x, key=i)
        if i >= 4:
            model.learn_one(*data[i - 4], key=i - 4)
    fresh = model.clone()
    assert fresh.decide_on == "margin" and fresh.n_pending == 0 and fresh.threshold == 0.0
    assert (fresh.fn_cost, fresh.fp_cost, fresh.min_model_labels) == ("amount", fee_of, 3)
    for twin in (pickle.loads(pickle.dumps(model)), model.clone(include_attributes=True), copy.deepcopy(model)):
        assert twin.threshold == model.threshold and twin._pending == model._pending
        assert (twin.n_cold_skipped, twin.n_model_labels) == (model.n_cold_skipped, model.n_model_labels)
        for i in range(46, 50):
            twin.learn_one(*data[i], key=i)
        for x, _ in data[50:]:
            assert twin.predict_one(x) == (_margin(x) > twin.threshold)
    lam = ThorsClassifier(Stub(), fn_cost=lambda x: x["amount"], fp_cost=1.0)
    assert lam.clone().decide_on == "margin"


def test_with_an_online_logistic_regression():
    rng = random.Random(1)
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost="amount", fp_cost=5.0, warm_up=30)
    for _ in range(600):
        y = rng.random() < 0.1
        x = {"risk": rng.gauss(1.0 if y else 0.0, 1.0), "amount": rng.lognormvariate(3, 1)}
        p = model.predict_proba_one(x)[True]
        assert model.predict_one(x) == (cost_margin(p, x["amount"], 5.0) > model.threshold)
        model.learn_one(x, y)
    assert model.n_cold_skipped == 100 and len(model.thors) == 500 and model.warmed_up
    assert np.isfinite(model.threshold)


# ---------------------------------------------------------------- checkpoints
def _money(**kw):
    params = {"fn_cost": "amount", "fp_cost": fee_of, "window": 60, "warm_up": 5, "min_model_labels": 8, **kw}
    return ThorsClassifier(Stub(), **params)


def _fed_money(m, n=80, delay=6, seed=9):
    """``m`` after decisions under keys and labels ``delay`` late, some still pending."""
    data = payments(n, seed=seed)
    for i, (x, _y) in enumerate(data):
        m.predict_one(x, key=("tx", i))
        if i >= delay:
            m.learn_one(*data[i - delay], key=("tx", i - delay))
    return m, data


def _money_state(m):
    return (m.threshold, m.warmed_up, dict(m._pending), list(m._pending), m.n_model_labels, m.n_cold_skipped,
            held(m), m._n_learned, m._n_pos, m._n_evicted)


@pytest.mark.parametrize("kw", [{}, {"segment": "seg", "min_per_class": 3}, {"window": "auto"}],
                         ids=["window", "segment", "auto"])
def test_checkpoint_roundtrip_in_margin_mode(tmp_path, kw):
    m, data = _fed_money(_money(**kw))
    assert m.n_cold_skipped > 0 and m.n_pending == 6
    m.save_thresholding(tmp_path / "m.ckpt")
    m2 = _money(**kw)
    m2.load_thresholding(tmp_path / "m.ckpt")
    assert _money_state(m2) == _money_state(m)
    assert m2._pending[("tx", 79)] == m._pending[("tx", 79)] and len(m2._pending[("tx", 79)]) == 4
    m2.classifier = copy.deepcopy(m.classifier)
    more = payments(40, seed=10)
    for i in range(74, 80):  # the pending decisions' labels, then a new stretch
        m.learn_one(*data[i], key=("tx", i))
        m2.learn_one(*data[i], key=("tx", i))
    for x, y in more:
        assert m.predict_one(x) == m2.predict_one(x)
        m.learn_one(x, y)
        m2.learn_one(x, y)
    assert _money_state(m2) == _money_state(m)


def test_checkpoint_modes_do_not_mix(tmp_path):
    money, _ = _fed_money(_money())
    plain = ThorsClassifier(Stub(), fn_cost=1.0, fp_cost=1.0, window=60, warm_up=5)  # the thresholder's own settings
    for x, y in payments(20):
        plain.predict_one(x, key=x["i"])
        plain.learn_one(x, y)
    money.save_thresholding(tmp_path / "money.ckpt")
    plain.save_thresholding(tmp_path / "plain.ckpt")
    before = plain.threshold, plain.n_pending
    with pytest.raises(ValueError, match=r"deciding on the cost margin .*; this wrapper decides on the score") as info:
        plain.load_thresholding(tmp_path / "money.ckpt")
    assert str(tmp_path / "money.ckpt") in str(info.value) and (plain.threshold, plain.n_pending) == before
    before = _money_state(money)
    with pytest.raises(ValueError, match=r"deciding on the score .*; this wrapper decides on the cost margin") as info:
        money.load_thresholding(tmp_path / "plain.ckpt")
    assert str(tmp_path / "plain.ckpt") in str(info.value) and _money_state(money) == before


@pytest.mark.parametrize("kw", [{"fn_cost": "value"}, {"fp_cost": 3.0}, {"fn_cost": 2.0, "fp_cost": "fee"},
                                {"min_model_labels": 9}])
def test_checkpoint_other_cost_settings_are_refused(tmp_path, kw):
    m, _ = _fed_money(_money())
    m.save_thresholding(tmp_path / "m.ckpt")
    other = _money(**kw)
    with pytest.raises(ValueError, match="per-event cost settings") as info:
        other.load_thresholding(tmp_path / "m.ckpt")
    assert str(tmp_path / "m.ckpt") in str(info.value) and other.n_pending == 0


def test_checkpoint_callables_are_recorded_not_compared(tmp_path):
    m, _ = _fed_money(_money())
    m.save_thresholding(tmp_path / "m.ckpt")
    other = _money(fp_cost=lambda x: x["fee"])  # another callable: accepted (documented)
    other.load_thresholding(tmp_path / "m.ckpt")
    assert other.n_pending == m.n_pending


def _neg_cost(h, a):
    a["pending_fn"][2] = -1.0


@pytest.mark.parametrize("edit, needles", [
    (_neg_cost, ("pending_fn", "-1.0")),
    (lambda h, a: a["pending_fp"].__setitem__(0, np.inf), ("pending_fp", "inf")),
    (lambda h, a: a["pending_labels"].__setitem__(1, 10**6), ("pending_labels", "n_model_labels")),
    (lambda h, a: a["pending_labels"].__setitem__(1, -1), ("pending_labels",)),
    (lambda h, a: a.pop("pending_fp"), ("pending_fp", "no array")),
    (lambda h, a: a.__setitem__("pending_fn", a["pending_fn"][:-1].copy()), ("pending_fn", "shape")),
    (lambda h, a: h["state"].update(n_cold_skipped=10**6), ("n_cold_skipped",)),
    (lambda h, a: h["state"].update(n_model_labels=-1), ("n_model_labels",)),
    (lambda h, a: h["state"].pop("n_model_labels"), ("state must have the fields",)),
])
def test_checkpoint_hostile_margin_files_are_refused(tmp_path, edit, needles):
    from test_checkpoint_hostile import forge, parse

    m, _ = _fed_money(_money())
    m.save_thresholding(tmp_path / "good.ckpt")
    header, arrays, _ = parse(tmp_path / "good.ckpt")
    edit(header, arrays)
    bad = forge(tmp_path / "bad.ckpt", header, arrays)
    fresh = _money()
    with pytest.raises(ValueError) as info:
        fresh.load_thresholding(bad)
    for n in (str(bad), *needles):
        assert n in str(info.value), str(info.value)
    assert fresh.n_pending == 0 and fresh.n_model_labels == 0 and len(fresh.thors) == 0


def test_checkpoint_scalar_file_with_pending_costs_is_refused(tmp_path):
    from test_checkpoint_hostile import forge, parse

    plain = ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0)
    plain.predict_one({"p": 0.5}, key="k")
    plain.save_thresholding(tmp_path / "good.ckpt")
    header, arrays, _ = parse(tmp_path / "good.ckpt")
    arrays["pending_fn"] = np.ones(1)
    bad = forge(tmp_path / "bad.ckpt", header, arrays)
    with pytest.raises(ValueError, match="pending costs without per-event costs"):
        ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0).load_thresholding(bad)


# ---------------------------------------------------------------- river's checks, older pickles
def _any_cost(x):
    """A positive cost from whatever numbers x holds (river's check datasets have no amount)."""
    return 1.0 + sum(abs(v) for v in x.values() if type(v) in (int, float) and math.isfinite(v))


def test_river_check_estimator_in_margin_mode():
    from river import checks

    checks.check_estimator(ThorsClassifier(linear_model.LogisticRegression(), fn_cost=_any_cost, fp_cost=2.0))


def test_a_wrapper_pickled_before_per_event_costs_loads_in_score_mode():
    model = ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0, warm_up=0)
    for x, y in payments(30):
        model.learn_one(x, y)
    for name in ("_margin", "_fn_setting", "_fp_setting", "min_model_labels", "_lean_labels", "_special",
                 "_n_model_labels", "_n_cold_skipped"):
        del model.__dict__[name]  # what an older version pickled
    old = pickle.loads(pickle.dumps(model))
    assert old.decide_on == "score" and old.min_model_labels == 100 and old.n_cold_skipped == 0
    threshold = old.threshold
    x = {"p": 0.99, "amount": 1.0}
    assert old.predict_one(x) == (0.99 > threshold)
    old.learn_one(x, True)
    assert len(old.thors) == 31


# ---------------------------------------------------------------- windows=, segment= x window="auto", pooling
def _ref_segments(**kw):
    from thors_stream.segments import SegmentedStreamingThors

    return SegmentedStreamingThors(**kw)


@pytest.mark.parametrize("money", [False, True], ids=["score", "margin"])
def test_windows_are_the_auto_candidates(money):
    costs = {"fn_cost": "amount", "fp_cost": "fee"} if money else {"fn_cost": 5.0, "fp_cost": 1.0}
    model = ThorsClassifier(Stub(), window="auto", windows=[60, 15, 200], min_model_labels=0, **costs)
    sel = model.selector
    assert sel.windows == (15, 60, 200) and model.thors.window == 200 and model.windows == [60, 15, 200]
    data = payments(250, seed=12)
    for x, y in data:
        score = _margin(x) if money else x["p"]
        assert model.predict_one(x) == (score > model.threshold)
        model.learn_one(x, y)
    for w, expert in zip(sel.windows, sel.experts):
        evs = data[-w:]
        ps, ys = [x["p"] for x, _ in evs], [y for _, y in evs]
        r = (thors_threshold(ps, ys, fn_cost=[x["amount"] for x, _ in evs], fp_cost=[x["fee"] for x, _ in evs],
                             decide_on="margin") if money else thors_threshold(ps, ys, fn_cost=5.0, fp_cost=1.0))
        assert expert.get() == r.threshold


def test_windows_settings_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"windows= .* applies with window='auto' only"):
        ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0, windows=(10, 20))
    for bad in ([], [10, 0], [10, "20"], [10, 10], [True, 5], 7):
        with pytest.raises((ValueError, TypeError), match="windows must be"):
            ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0, window="auto", windows=bad)
    m = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0, window="auto", windows=(10, 40))
    for x, y in payments(50):
        m.learn_one(x, y)
    m.save_thresholding(tmp_path / "w.ckpt")
    other = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0, window="auto", windows=(10, 30, 40))
    with pytest.raises(ValueError, match=r"w\.ckpt"):
        other.load_thresholding(tmp_path / "w.ckpt")
    same = ThorsClassifier(Stub(), fn_cost="amount", fp_cost=5.0, window="auto", windows=(40, 10))
    same.load_thresholding(tmp_path / "w.ckpt")
    assert same.selector.costs == m.selector.costs and same.threshold == m.threshold


@pytest.mark.parametrize("money", [False, True], ids=["score", "margin"])
def test_segments_choose_their_window_online(money, tmp_path):
    """segment= with window="auto": each decision is score (or margin) > the segment's
    selector's choice (the global one while the segment is small), exactly as a
    SegmentedStreamingThors fed the same events; the state round-trips a checkpoint."""
    costs = {"fn_cost": "amount", "fp_cost": "fee"} if money else {"fn_cost": 5.0, "fp_cost": 1.0}

    def make():
        return ThorsClassifier(Stub(), window="auto", windows=(20, 80), segment="seg", min_per_class=4,
                               min_model_labels=0, **costs)

    model = make()
    ref = _ref_segments(fn_cost=1.0 if money else 5.0, fp_cost=1.0, window="auto", windows=(20, 80),
                        default_threshold=0.0 if money else 1 / 6, min_per_class=4)
    data = payments(300, seed=13)
    sources = set()
    for x, y in data:
        score = _margin(x) if money else x["p"]
        assert model.predict_one(x) == (score > ref.get(x["seg"]))
        sources.add(ref.get(x["seg"]) == ref.global_selector.get())
        model.learn_one(x, y)
        ref.update(x["seg"], score, y, (x["amount"] if y else x["fee"]) if money else 1.0)
    assert sources == {True, False}  # both the global choice and a segment's own were used
    assert model.threshold == ref.global_selector.get() and model.selector is model.segmented.global_selector
    for seg in "ab":
        assert model.segmented.get(seg) == ref.get(seg)
        assert model.segmented.selector(seg).costs == ref.selector(seg).costs
    model.save_thresholding(tmp_path / "sa.ckpt")
    back = make()
    back.load_thresholding(tmp_path / "sa.ckpt")
    for x, y in payments(100, seed=14):
        assert back.predict_one(x) == model.predict_one(x)
        back.learn_one(x, y)
        model.learn_one(x, y)
    assert [back.segmented.get(s) for s in "ab"] == [model.segmented.get(s) for s in "ab"]
    assert back.threshold == model.threshold


def test_segments_pool_toward_the_global_threshold(tmp_path):
    def make(**kw):
        return ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=150, segment="seg", min_per_class=5,
                               pool_weight=0.3, pool_every=7, warm_up=0, min_model_labels=0, **kw)

    model = make()
    ref = _ref_segments(fn_cost=1.0, fp_cost=1.0, window=150, min_per_class=5, pool_weight=0.3, pool_every=7)
    rng = random.Random(15)
    data = [({**x, "seg": "small" if rng.random() < 0.05 else "big"}, y) for x, y in payments(400, seed=15)]
    for x, y in data:
        thr = ref.get(x["seg"]) if model.warmed_up else None  # the Bayes rule until both classes came
        assert model.predict_one(x) == (_margin(x) > (0.0 if thr is None else thr))
        model.learn_one(x, y)
        ref.update(x["seg"], _margin(x), y, x["amount"] if y else x["fee"])
    assert ref.source("small") == "pooled" and model.segmented.source("small") == "pooled"
    assert model.segmented.get("small") == ref.get("small") and model.segmented.get("big") == ref.get("big")
    model.save_thresholding(tmp_path / "p.ckpt")
    back = make()
    back.load_thresholding(tmp_path / "p.ckpt")
    assert [back.segmented.get(s) for s in ("small", "big")] == [model.segmented.get(s) for s in ("small", "big")]
    unpooled = ThorsClassifier(Stub(), fn_cost="amount", fp_cost="fee", window=150, segment="seg", min_per_class=5,
                               warm_up=0, min_model_labels=0)
    with pytest.raises(ValueError, match="with pool_weight"):
        unpooled.load_thresholding(tmp_path / "p.ckpt")
    with pytest.raises(ValueError, match="apply with segment= only"):
        ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0, pool_weight=0.5)
    with pytest.raises(ValueError, match="pool_weight does not combine with window='auto'"):
        ThorsClassifier(Stub(), fn_cost=5.0, fp_cost=1.0, window="auto", segment="seg", pool_weight=0.5)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes: Python 3.11+")
def test_a_cost_callable_that_raises_passes_its_error_with_the_event_named():
    from river import linear_model

    def fee(x):
        return x["fee"]

    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost="amount", fp_cost=fee)
    with pytest.raises(KeyError) as info:
        m.learn_one({"a": 1.0, "amount": 5.0}, True)
    assert any("raised by fp_cost (from fee)" in n and "'amount': 5.0" in n for n in info.value.__notes__)
    assert m.threshold == 0.0 and m.classifier.weights == {}


@pytest.mark.parametrize("p", [None, "0.4"])
def test_a_probability_that_is_not_a_number_names_the_event(p):
    class Odd:
        def predict_proba_one(self, x):
            return {True: p}

        def learn_one(self, x, y, **kw):
            pass

    m = ThorsClassifier(Odd(), fn_cost="amount", fp_cost=5.0, warm_up=0)
    with pytest.raises(TypeError, match=r"must be a real number, got .* \(event key 'tx-9'\)"):
        m.predict_one({"amount": 3.0}, key="tx-9")
    with pytest.raises(TypeError, match=r"must be a real number, got .* \(event x=\{'amount': 3.0\}\)"):
        m.learn_one({"amount": 3.0}, True)
    assert m.n_pending == 0 and len(m.thors) == 0
