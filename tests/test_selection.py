"""window="auto": AdaHedge over THORS windows and the default threshold (issue 15)."""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import StreamingThors
from thors_stream.river import ThorsClassifier
from thors_stream.selection import WindowSelector


def stream(n, seed, drift_at=None, pos_rate=0.2):
    rng = random.Random(seed)
    for i in range(n):
        y = rng.random() < pos_rate
        shift = 0.25 if drift_at is not None and i >= drift_at else 0.0
        mu = (0.6 if y else 0.4) + (shift if not y else -shift / 2)
        yield min(1.0, max(0.0, rng.gauss(mu, 0.15))), y, rng.choice([1.0, 1.0, 2.5])


@settings(max_examples=25)
@given(seed=st.integers(0, 10**6), drift=st.booleans(), fn=st.sampled_from([1.0, 5.0, 20.0]),
       choose=st.sampled_from(["draw", "leader"]))
def test_regret_bound_holds_against_every_candidate(seed, drift, fn, choose):
    """E[cost of the weights] - cost of candidate k <= Delta_T (1 + ln(1/prior_k) / ln K), for all k."""
    sel = WindowSelector(fn_cost=fn, fp_cost=1, default_threshold=1 / (1 + fn), windows=(20, 80, 300), seed=seed,
                         choose=choose)
    for s, y, w in stream(1200, seed, drift_at=600 if drift else None):
        sel.update(s, y, w)
    for name, c in zip(sel.names, sel.costs):
        assert sel.expected_cost - c <= sel.regret_bound(name) + 1e-9 * (1 + c)
    assert sel.regret_bound("default") <= sel.regret_bound("window 20")  # half the prior mass on the default


def test_candidate_costs_are_each_windows_own_costs():
    """Each candidate is charged exactly what its threshold (before the event) would cost."""
    events = list(stream(700, 3))
    sel = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=0)
    refs = {w: StreamingThors(fn_cost=5, fp_cost=1, window=w) for w in (30, 200)}
    want = {w: 0.0 for w in refs} | {"default": 0.0}
    for s, y, w in events:
        for win, ref in refs.items():
            t = ref.get()
            t = 1 / 6 if t is None else t
            want[win] += (5 * w if y else w) if (s <= t) == y else 0.0
            ref.update(s, y, w)
        want["default"] += (5 * w if y else w) if (s <= 1 / 6) == y else 0.0
        sel.update(s, y, w)
    assert sel.costs == pytest.approx([want[30], want[200], want["default"]], rel=1e-12)


def test_draws_are_distributed_as_the_weights():
    """The lazy draw keeps Hedge's distribution: over seeds, the realised cost averages
    the expected cost of the weights."""
    events = list(stream(1500, 11, drift_at=700))
    gaps = []
    for seed in range(30):
        sel = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=seed)
        for e in events:
            sel.update(*e)
        gaps.append(sel.cost - sel.expected_cost)
    mean = sum(gaps) / len(gaps)
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))
    assert abs(mean) <= 4 * sd / math.sqrt(len(gaps)) + 1e-9


def test_selector_refuses_bad_settings():
    with pytest.raises(ValueError, match="windows"):
        WindowSelector(fn_cost=1, fp_cost=1, default_threshold=0.5, windows=(10, 10))
    with pytest.raises(ValueError, match="prior_default"):
        WindowSelector(fn_cost=1, fp_cost=1, default_threshold=0.5, prior_default=1.0)
    with pytest.raises(ValueError, match="choose"):
        WindowSelector(fn_cost=1, fp_cost=1, default_threshold=0.5, choose="best")
    sel = WindowSelector(fn_cost=1, fp_cost=1, default_threshold=0.5)
    with pytest.raises(ValueError):
        sel.update(float("nan"), 1)
    assert sel.n == 0


def test_thors_classifier_auto_window_in_a_river_loop(tmp_path):
    from river import datasets, evaluate, linear_model, preprocessing

    from thors_stream.metrics import Cost

    model = ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(), fn_cost=10,
                            fp_cost=1, window="auto", warm_up=50)
    metric = evaluate.progressive_val_score(datasets.Phishing(), model, Cost(fn_cost=10, fp_cost=1))
    sel = model.selector
    assert sel is not None and sel.n == 1250 and sel.chosen in sel.names
    plain = evaluate.progressive_val_score(
        datasets.Phishing(), preprocessing.StandardScaler() | linear_model.LogisticRegression(),
        Cost(fn_cost=10, fp_cost=1))
    assert metric.get() < plain.get()
    model.save_thresholding(tmp_path / "auto.ckpt")  # supported since the selector's state is saved too
    back = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=10, fp_cost=1, window="auto", warm_up=50)
    back.load_thresholding(tmp_path / "auto.ckpt")
    assert back.threshold == model.threshold and back._selector.costs == sel.costs
    with pytest.raises(ValueError, match="max_fpr"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=1, window="auto", max_fpr=0.1)
    with pytest.raises(ValueError, match="auto"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=1, window="best")


def test_string_labels_with_pos_label():
    """pos_label: string classes; predict_one answers with the labels."""
    from river import naive_bayes

    model = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=5, fp_cost=1, pos_label="fraud", warm_up=20)
    rng = random.Random(0)
    for _ in range(300):
        fraud = rng.random() < 0.3
        x = {"a": rng.gauss(1.0 if fraud else 0.0, 1.0)}
        model.predict_one(x)
        model.learn_one(x, "fraud" if fraud else "ok")
    assert model.predict_one({"a": 3.0}) == "fraud"
    assert model.predict_one({"a": -3.0}) == "ok"
    proba = model.predict_proba_one({"a": 0.5})
    assert set(proba) == {"fraud", "ok"} and math.isclose(sum(proba.values()), 1.0)
    assert model.thors.result().n1 > 0  # "fraud" counted as the positive class


def test_period_without_window_none_and_moment_feeds_time():
    """period= works without window=None; moment= reads the time from x (as progressive_val_score's)."""
    from river import compose, linear_model

    m = ThorsClassifier(compose.Discard("ts") | linear_model.LogisticRegression(), fn_cost=5, fp_cost=1,
                        period=dt.timedelta(hours=1), moment="ts", warm_up=0)
    assert m.window is None
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(200):
        x = {"a": float(i % 7), "ts": t0 + dt.timedelta(minutes=i)}
        m.learn_one(x, i % 3 == 0)
    assert len(m.thors) == 60  # the last hour: t > newest - 1h
    with pytest.raises(ValueError, match="exclusive"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, period=60, window=500)


def test_selector_pickles_and_continues_identically():
    import pickle

    a = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=4)
    events = list(stream(900, 5))
    for e in events[:400]:
        a.update(*e)
    b = pickle.loads(pickle.dumps(a))
    for e in events[400:]:
        a.update(*e)
        b.update(*e)
    assert (a.costs, a.cost, a.expected_cost, a.gap, a.chosen, a.get()) == (
        b.costs, b.cost, b.expected_cost, b.gap, b.chosen, b.get())


def test_thors_classifier_segments_use_their_own_threshold_or_fall_back():
    """segment=: each segment gets its own THORS threshold once it holds min_per_class of each
    class; a small segment uses the global one (issue 14)."""
    from river import compose, linear_model

    from thors_stream.segments import SegmentedStreamingThors

    m = ThorsClassifier(compose.Discard("country") | linear_model.LogisticRegression(), fn_cost=5, fp_cost=1,
                        window=2000, warm_up=0,
                        segment="country", min_per_class=20)
    ref = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=2000, min_per_class=20)
    rng = random.Random(1)
    for i in range(3000):
        country = "fr" if i % 10 else ("de" if i % 100 else "lu")
        y = rng.random() < (0.3 if country == "fr" else 0.6)
        x = {"a": rng.gauss(1.0 if y else 0.0, 1.0), "country": country}
        score = m.predict_proba_one(x)[True]
        m.learn_one(x, y)
        ref.update(country, score, y)
    for c in ("fr", "de", "lu"):
        x = {"a": 0.3, "country": c}
        thr = ref.get(c)
        assert m.predict_one(x) == (m.predict_proba_one(x)[True] > thr)
    assert ref.get("lu") == ref.global_threshold()  # 30 events: too few of a class -> global
    assert ref.result("fr").threshold == ref.get("fr")
    with pytest.raises(ValueError, match="segment"):
        m.learn_one({"a": 1.0}, True)  # no segment in x
    with pytest.raises(ValueError, match="segment= does not combine with max_fpr"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment="c", max_fpr=0.1)


def test_compiled_step_answers_get_as_the_candidates_do():
    """The compiled step returns get()'s next answer (cached until the next step): after
    every event it equals the chosen candidate's own threshold (the default while that
    holds nothing), and the decisions and costs equal the Python step's."""
    from thors_stream.selection import selector_step

    if selector_step is None:
        pytest.skip("compiled core not built")
    fast = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=2)
    slow = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=2)
    slow._fixed = None  # the Python step
    assert fast._fixed is not None
    for s, y, w in stream(1500, 8, drift_at=600):
        fast.update(s, y, w)
        slow.update(s, y, w)
        i = fast.names.index(fast.chosen)
        own = fast.default_threshold if i == len(fast.experts) else fast.experts[i].get()
        assert fast.get() == (fast.default_threshold if own is None else own) == slow.get()
        assert fast.chosen == slow.chosen
    assert fast.costs == pytest.approx(slow.costs, rel=1e-12)
    assert (fast.cost, fast.gap) == pytest.approx((slow.cost, slow.gap), rel=1e-12)


def test_a_step_that_fails_part_way_leaves_get_reading_the_candidates():
    """A MemoryError inside the compiled step (here in the second window's push, after the
    first window learned the event) must not leave get() serving the threshold cached
    before the step."""
    import pickle

    from thors_stream._ctree import _fail_reserve_after
    from thors_stream.selection import selector_step

    if selector_step is None:
        pytest.skip("compiled core not built")
    sel = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(30, 200), seed=2, choose="leader")
    for e in stream(300, 0):  # a stream whose leader is the short window
        sel.update(*e)
    # an event after which the chosen candidate is the first window and its threshold moved
    for s, y in ((i / 40, lab) for i in range(41) for lab in (0, 1)):
        trial = pickle.loads(pickle.dumps(sel))
        before = trial.get()
        trial.update(s, y)
        if trial.chosen == "window 30" and trial.get() != before:
            break
    else:
        pytest.fail("no such event in the grid")
    _fail_reserve_after(3)  # the first window's push (3 reservations) goes through, the second's fails
    try:
        with pytest.raises(MemoryError):
            sel.update(s, y)
    finally:
        _fail_reserve_after(-1)
    assert sel.chosen == "window 30"
    assert sel.get() == sel.experts[0].get() == trial.get() != before


def test_wrapper_inline_step_equals_the_selector_fed_the_same_events():
    """ThorsClassifier(window="auto") runs the compiled step inline on its lean learn_one
    path and reads the cached threshold in predict_one; the selector must end up exactly
    as a standalone WindowSelector fed the same scores and labels (both steps), and every
    decision must be score > the selector's threshold at that moment."""
    from river import datasets, linear_model, preprocessing

    model = ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(), fn_cost=10,
                            fp_cost=1, window="auto", warm_up=50)
    twins = [WindowSelector(fn_cost=10, fp_cost=1, default_threshold=1 / 11) for _ in range(2)]
    twins[1]._fixed = None  # the Python step
    for x, y in datasets.Phishing():
        before = model.threshold
        assert before == twins[0].get() == twins[1].get()
        decision = model.predict_one(x)
        score = model.predict_proba_one(x)[True]
        assert decision == (score > before)
        model.learn_one(x, y)
        for t in twins:
            t.update(score, y)
    sel = model.selector
    assert sel.n == twins[0].n == twins[1].n == 1250
    assert sel.costs == twins[0].costs == pytest.approx(twins[1].costs, rel=1e-12)
    assert sel.chosen == twins[0].chosen == twins[1].chosen and sel.get() == twins[0].get()
