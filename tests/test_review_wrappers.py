"""Regression tests for what an adversarial review of the river wrapper and of threads found
on 2026-11-25 (afternoon); each failed before its fix: ``clone(include_attributes=True)``
split the shared summary, ``pos_label=1`` answered ``None``, the compiled ``get`` read
half-applied period-mode changes from another thread, a dict refilled in place reused the
old score, a checkpoint forgot the learned negative label, ``predict_one(key=)`` stored the
key before a missing segment raised, labels out of time order were refused, and an explicit
``window=10_000`` was dropped beside ``period=``."""

import datetime as dt
import random
import sys
import threading
import time

import numpy as np
import pytest
from river import compose, evaluate, linear_model, naive_bayes

from thors_stream import StreamingThors, ThorsClassifier
from thors_stream._backend import available_backends
from thors_stream.metrics import Cost


def events(n, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.gauss(0, 1)
        out.append(({"a": a}, a + rng.gauss(0, 1) > 0.5))
    return out


@pytest.mark.parametrize("kw", [dict(window=200, warm_up=10), dict(window="auto", class_prior=0.3),
                                dict(window="auto"), dict(window=None, max_fpr=0.2, warm_up=10)])
def test_clone_with_attributes_keeps_one_summary(kw):
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, **kw)
    for x, y in events(300):
        m.learn_one(x, y)
    c = m.clone(include_attributes=True)
    assert c._thors is (c._selector.experts[-1] if c._selector is not None else c._source)
    assert c._thors is not m._thors
    assert c.threshold == m.threshold
    for x, y in events(400, seed=1):
        c.learn_one(x, y)
    reader = c._selector if c._selector is not None else c._thors
    assert c._source is reader and len(c.thors) == len(c._source.experts[-1] if c._selector else c._source)
    assert c.threshold == (reader.get() if c._selector is not None else c._thors_threshold())
    assert len(m.thors) <= 300  # the original is untouched
    plain = m.clone()
    assert len(plain.thors) == 0


@pytest.mark.parametrize("pos", [1, np.int64(1), np.True_])
def test_pos_label_one_is_the_default(pos):
    data = [({"a": 1.0}, 1)] * 4 + [({"a": float(i % 5)}, i % 2) for i in range(200)]
    ref = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=10)
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=10, pos_label=pos)
    assert m.predict_one({"a": 1.0}) is False
    assert m.predict_proba_one({"a": 1.0}) == {False: 0.5, pos: 0.5}
    metric, ref_metric = Cost(fn_cost=1, fp_cost=10), Cost(fn_cost=1, fp_cost=10)
    evaluate.progressive_val_score(data, m, metric)
    evaluate.progressive_val_score(data, ref, ref_metric)
    assert metric.cm.n_samples == len(data) and metric.get() == ref_metric.get()
    with pytest.raises(ValueError, match="2"):
        m.learn_one({"a": 1.0}, 2)


def test_proba_keeps_the_models_two_classes_before_a_negative_is_learned():
    m = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=5, fp_cost=1, pos_label="fraud")
    m.classifier.learn_one({"a": 1.0}, "fraud")
    m.classifier.learn_one({"a": -1.0}, "ok")  # the model knows both; the wrapper has seen no negative
    p = m.predict_proba_one({"a": 0.0})
    assert set(p) == {"fraud", "ok"}


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("how", ["batch", "update"])
def test_get_from_another_thread_never_sees_a_half_applied_change(backend, how):
    """A period-mode batch with a late label runs event by event, and an update expiring
    many late labels removes them one at a time: a reader thread must see only the state
    before or after the call."""
    n = 20_000
    scores = 0.6 + np.arange(n) * 1e-5
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        st = StreamingThors(fn_cost=1, fp_cost=1, period=100, backend=backend)
        st.update(0.5, 1, t=1000.0)
        if how == "update":  # 20,000 late labels (older than the newest time), held; they
            # leave in arrival order, highest score first, so every removal moves the threshold
            st.update_many(scores[::-1].copy(), np.zeros(n, bool), None, np.full(n, 999.0))
        before = st.get()
        seen, stop, go = [], [False], threading.Event()

        def reader():
            go.set()
            while not stop[0]:
                seen.append(st.get())

        th = threading.Thread(target=reader)
        th.start()
        go.wait()
        time.sleep(0.01)
        k = len(seen)
        if how == "batch":
            ts = np.full(n, 1000.0)
            ts[0] = 999.0  # a late label: the per-event path
            st.update_many(scores, np.zeros(n, bool), None, ts)
        else:
            st.update(0.7, 1, t=2000.0)  # expires the 20,000 held events one by one
        m = len(seen)
        stop[0] = True
        th.join()
        after = st.get()
    finally:
        sys.setswitchinterval(old)
    assert k > 0  # the reader was reading when the call began (it then waits for the lock)
    assert set(seen[k:m]) <= {before, after}


def test_a_dict_refilled_in_place_is_scored_again():
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None, warm_up=0)
    for x, y in events(50):
        m.learn_one(x, y > 0)
    x = {"a": 3.0}
    m.predict_one(x)
    x["a"] = -3.0
    right = m.classifier.predict_proba_one(x)[True]
    held = set(m.thors.held()[0].tolist())
    m.learn_one(x, False)
    assert set(m.thors.held()[0].tolist()) - held == {right}
    # an equal dict (not the same object) still reuses the score: one model call saved
    y = {"a": 0.25}
    m.predict_one(y)
    calls = []
    orig = m.classifier.predict_proba_one
    m.classifier.predict_proba_one = lambda x, **kw: calls.append(1) or orig(x, **kw)
    m.learn_one(dict(y), True)
    assert calls == []


def test_checkpoint_keeps_the_learned_negative_label(tmp_path):
    def make():
        return ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=5, fp_cost=1, pos_label="fraud", warm_up=10)

    m = make()
    rng = np.random.default_rng(0)
    for _ in range(200):
        y = "fraud" if rng.random() < 0.3 else "ok"
        m.learn_one({"a": float(rng.normal(1.0 if y == "fraud" else 0.0))}, y)
    path = tmp_path / "t.ckpt"
    m.save_thresholding(path)
    m2 = make()
    m2.classifier = m.classifier.clone(include_attributes=True)
    m2.load_thresholding(path)
    x = {"a": -3.0}
    assert m2.predict_one(x) == m.predict_one(x) == "ok"
    assert m2.predict_proba_one(x) == m.predict_proba_one(x)


def test_predict_with_key_and_missing_segment_changes_nothing():
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment="region", warm_up=2,
                        max_pending=1)
    m.learn_one({"a": 1.0, "region": 3.0}, True)
    m.learn_one({"a": -1.0, "region": 3.0}, False)
    m.predict_one({"a": 0.3, "region": 3.0}, key="tx-1")
    with pytest.raises(ValueError, match="region"):
        m.predict_one({"a": 0.5}, key="tx-2")
    assert list(m._pending) == ["tx-1"] and m._n_evicted == 0
    m.learn_one({"a": 0.3, "region": 3.0}, True, key="tx-1")


def test_labels_out_of_time_order_are_late_labels():
    rng = random.Random(0)
    t0 = dt.datetime(2024, 1, 1)
    data = []
    for i in range(300):
        a = rng.gauss(0, 1)
        data.append(({"a": a, "t": t0 + dt.timedelta(minutes=i)}, a + rng.gauss(0, 1) > 0.5))
    m = ThorsClassifier(compose.Discard("t") | linear_model.LogisticRegression(), fn_cost=5, fp_cost=1,
                        period=dt.timedelta(days=7), moment="t", warm_up=10)
    evaluate.progressive_val_score(data, m, Cost(fn_cost=5, fp_cost=1), moment="t",
                                   delay=lambda x, y: dt.timedelta(hours=24 + int(abs(x["a"]) * 1000) % 48))
    assert len(m.thors) == 300
    # the wrapper's summary equals a StreamingThors fed the same (score, label, time) in that order
    assert m._last_t == max(x["t"] for x, _ in data).replace(tzinfo=dt.timezone.utc).timestamp()


def test_explicit_window_with_period_is_an_error():
    with pytest.raises(ValueError, match="exclusive"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=10_000, period=60.0)
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, period=60.0)
    assert m.thors.window is None and m.thors.period == 60.0
    assert m.clone().thors.period == 60.0
    d = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1)
    assert d.window == 10_000 and d.thors.window == 10_000
    assert d.clone(include_attributes=True).clone(new_params={"period": 60.0}, include_attributes=False).thors.window \
        is None
