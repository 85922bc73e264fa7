"""ThorsClassifier: river conformance, prequential semantics, delayed labels, bad input."""

from __future__ import annotations

import copy
import datetime as dt
import importlib.util
import itertools
import math
import pathlib
import pickle
import re
import sys

import pytest
from oracle import brute_force
from river import base, checks, compose, datasets, evaluate, linear_model, naive_bayes, preprocessing, tree

from thors_stream.metrics import Cost
from thors_stream.river import ThorsClassifier

ROOT = pathlib.Path(__file__).resolve().parents[1]
PHISHING = list(datasets.Phishing())  # 1,250 events, bool labels


def p_true(proba):
    return proba.get(True, 0.0) if proba else 0.0


def brute_threshold(window_events, fn_cost, fp_cost):
    thr, _, _ = brute_force([(s, y, w) for s, y, w in window_events], fn_cost, fp_cost)
    return thr


# ---------------------------------------------------------------- conformance
@pytest.mark.parametrize(
    "params",
    list(ThorsClassifier._unit_test_params()),
    ids=lambda p: type(p["classifier"]).__name__,
)
def test_check_estimator(params):
    checks.check_estimator(ThorsClassifier(**params))


def test_unit_test_params_cover_the_three_models():
    wrapped = {type(p["classifier"]) for p in ThorsClassifier._unit_test_params()}
    assert {linear_model.LogisticRegression, naive_bayes.GaussianNB, tree.HoeffdingTreeClassifier} <= wrapped


def test_river_plumbing():
    model = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=2, fp_cost=1)
    assert isinstance(model, base.Wrapper) and isinstance(model, base.Classifier)
    assert model._supervised and not model._multiclass  # GaussianNB itself is multiclass
    assert model._wrapped_model is model.classifier
    assert "GaussianNB" in str(model)
    assert isinstance(model._memory_usage, str) and model._raw_memory_usage > 0


# ---------------------------------------------------------------- prequential semantics
def reference_run(events, fn_cost, fp_cost, window, warm_up, default=None, predict_first=True, make=None):
    """Run the wrapper and, side by side, a plain copy of the model scored by hand."""
    make = make or linear_model.LogisticRegression
    model = ThorsClassifier(make(), fn_cost=fn_cost, fp_cost=fp_cost, window=window, warm_up=warm_up,
                            default_threshold=default)
    ref = make()
    held, seen, n_pos = [], 0, 0
    default = fp_cost / (fp_cost + fn_cost) if default is None else default
    for i, (x, y) in enumerate(events):
        score = p_true(ref.predict_proba_one(x))
        ready = seen >= warm_up and 0 < n_pos < seen
        expected_thr = brute_threshold(held, fn_cost, fp_cost) if ready and i % 7 == 0 else None
        if predict_first:
            decision = model.predict_one(x)
            if expected_thr is not None:
                assert model.threshold == expected_thr
                assert decision == (score > expected_thr)
            elif not ready:
                assert model.threshold == default
                assert decision == (score > default)
        model.learn_one(x, y)
        ref.learn_one(x, y)
        held.append((score, bool(y), 1))
        if window is not None:
            held = held[-window:]
        seen += 1
        n_pos += bool(y)
    return model, held


@pytest.mark.parametrize("predict_first", [True, False])
def test_threshold_is_thors_of_the_out_of_sample_scores(predict_first):
    model, held = reference_run(PHISHING[:400], fn_cost=5, fp_cost=1, window=60, warm_up=30,
                                predict_first=predict_first)
    assert model.warmed_up
    assert model.threshold == brute_threshold(held, 5, 1)
    scores = sorted(s for s, _, _ in held)
    assert sorted(model.thors.held()[0].tolist()) == sorted(set(scores))


def test_unbounded_window_and_other_models():
    model, held = reference_run(PHISHING[:250], fn_cost=1, fp_cost=4, window=None, warm_up=10,
                                make=naive_bayes.GaussianNB)
    assert len(model.thors) == 250
    assert model.threshold == brute_threshold(held, 1, 4)


def test_default_threshold_until_warm_up_and_both_classes():
    negatives = [(x, y) for x, y in PHISHING if not y][:40]
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=3, fp_cost=1, warm_up=10)
    assert model.threshold == 0.25  # Elkan: 1 / (1 + 3)
    for x, y in negatives:
        model.learn_one(x, y)
    assert not model.warmed_up and model.threshold == 0.25  # 40 events but one class only
    x, y = next((x, y) for x, y in PHISHING if y)
    model.learn_one(x, y)
    assert model.warmed_up and model.threshold == model.thors.get()

    custom = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=3, fp_cost=1, warm_up=5,
                             default_threshold=0.7)
    for x, y in PHISHING[:4]:
        custom.learn_one(x, y)
    assert custom.threshold == 0.7
    assert custom.predict_one(PHISHING[5][0]) == (p_true(custom.predict_proba_one(PHISHING[5][0])) > 0.7)


def test_predict_proba_one_passes_probabilities_through():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=3, fp_cost=1)
    ref = linear_model.LogisticRegression()
    for x, y in PHISHING[:50]:
        assert model.predict_proba_one(x) == ref.predict_proba_one(x)
        model.learn_one(x, y)
        ref.learn_one(x, y)
    # a model that has seen nothing gives {}; the wrapper completes it to the two classes
    fresh = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=3, fp_cost=1)
    assert naive_bayes.GaussianNB().predict_proba_one(PHISHING[0][0]) == {}
    assert fresh.predict_proba_one(PHISHING[0][0]) == {False: 1.0, True: 0.0}
    assert fresh.predict_one(PHISHING[0][0]) is False


class ProbaOnly(base.Classifier):
    """A minimal model: learn_one and predict_proba_one only; positive key 1 (an int)."""

    def __init__(self, bias: float = 0.0):
        self.bias = bias
        self.n = 0
        self.pos = 0

    def learn_one(self, x, y):
        self.n += 1
        self.pos += int(y)

    def predict_proba_one(self, x):
        p = min(max(x["a"] + self.bias, 0.0), 1.0)
        return {0: 1.0 - p, 1: p}


def test_model_with_only_predict_proba_one_and_int_keys():
    model = ThorsClassifier(ProbaOnly(), fn_cost=1, fp_cost=1, warm_up=0, window=None)
    events = [({"a": a / 10}, int(a >= 6)) for a in [1, 7, 3, 9, 6, 2, 5, 8]]
    for x, y in events:
        model.learn_one(x, y)
    # separable at 0.5: the smallest zero-cost threshold is the largest negative score
    assert model.threshold == 0.5
    assert model.predict_one({"a": 0.55}) is True
    assert model.predict_one({"a": 0.5}) is False  # strictly greater


class NoProba(base.Classifier):
    def learn_one(self, x, y):
        pass

    def predict_one(self, x):
        return True


def test_model_without_probabilities_is_a_clear_error():
    model = ThorsClassifier(NoProba(), fn_cost=1, fp_cost=1)
    with pytest.raises(NotImplementedError, match="NoProba has no predict_proba_one"):
        model.predict_one({"a": 1})
    with pytest.raises(NotImplementedError, match="NoProba has no predict_proba_one"):
        model.learn_one({"a": 1}, True)


def test_bool_and_int_labels_give_the_same_thresholds():
    as_bool = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=4, fp_cost=1, window=100)
    as_int = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=4, fp_cost=1, window=100)
    for x, y in PHISHING[:300]:
        assert as_bool.predict_one(x) == as_int.predict_one(x)
        as_bool.learn_one(x, y)
        as_int.learn_one(x, int(y))
        assert as_bool.threshold == as_int.threshold


@pytest.mark.parametrize("placement", ["inside", "outside"])
def test_pipelines_on_either_side(placement):
    if placement == "inside":  # the wrapper is the pipeline's last step
        model = preprocessing.StandardScaler() | ThorsClassifier(
            linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=80, warm_up=20
        )
        wrapper = model["ThorsClassifier"]
    else:  # the wrapper wraps the pipeline
        model = ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(),
                                fn_cost=5, fp_cost=1, window=80, warm_up=20)
        wrapper = model
    scaler, ref = preprocessing.StandardScaler(), linear_model.LogisticRegression()
    held = []
    for x, y in PHISHING[:300]:
        decision = model.predict_one(x)
        if placement == "inside":
            scaler.learn_one(x)  # river pipelines update unsupervised steps first in learn_one
            score = p_true(ref.predict_proba_one(scaler.transform_one(x)))
        else:
            score = p_true(ref.predict_proba_one(scaler.transform_one(x)))
            scaler.learn_one(x)
        assert decision == (p_true(model.predict_proba_one(x)) > wrapper.threshold)
        model.learn_one(x, y)
        ref.learn_one(scaler.transform_one(x), y)
        held = [*held, (score, y, 1)][-80:]
        assert wrapper.threshold == (brute_threshold(held, 5, 1) if wrapper.warmed_up else 1 / 6)


def test_score_reuse_needs_an_equal_x():
    """learn_one reuses the last predict's score only for that very x (or an equal dict)."""
    a = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None)
    b = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None)
    for i, (x, y) in enumerate(PHISHING[:200]):
        a.predict_one(PHISHING[i + 1][0])  # predicts another event: must not leak into learn_one
        a.learn_one(x, y)
        b.predict_one(copy.deepcopy(x))  # an equal copy: reuse is fine
        b.learn_one(x, y)
    ref = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None)
    for x, y in PHISHING[:200]:
        ref.learn_one(x, y)
    for m in (a, b):
        assert [v.tolist() for v in m.thors.held()] == [v.tolist() for v in ref.thors.held()]


# ---------------------------------------------------------------- weights, time windows, kwargs
def test_weights_enter_the_cost_and_reach_models_that_take_them():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=3, fp_cost=1, window=50, warm_up=0)
    ref = linear_model.LogisticRegression()
    held = []
    for i, (x, y) in enumerate(PHISHING[:200]):
        w = 1 + i % 4
        score = p_true(ref.predict_proba_one(x))
        model.learn_one(x, y, w=w)
        ref.learn_one(x, y, w=w)
        held = [*held, (score, y, w)][-50:]
    assert model.threshold == brute_threshold(held, 3, 1)
    assert model.classifier.weights == ref.weights  # w reached LogisticRegression.learn_one
    nb = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=3, fp_cost=1)
    nb.learn_one(PHISHING[0][0], PHISHING[0][1], w=2.0)  # GaussianNB.learn_one takes no w: not passed
    assert len(nb.thors) == 1


def test_time_window():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=4, fp_cost=1, window=None,
                            period=dt.timedelta(seconds=30), warm_up=0)
    ref = linear_model.LogisticRegression()
    start = dt.datetime(2024, 1, 1)
    events = []
    for i, (x, y) in enumerate(PHISHING[:150]):
        t = start + dt.timedelta(seconds=i // 2)
        events.append((p_true(ref.predict_proba_one(x)), y, 1, i // 2))
        model.learn_one(x, y, t=t)
        ref.learn_one(x, y)
    last = events[-1][3]
    held = [(s, y, w) for s, y, w, t in events if t > last - 30]
    assert len(model.thors) == len(held) == 60
    assert model.threshold == brute_threshold(held, 4, 1)


def test_extra_kwargs_are_routed_like_a_pipeline():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=4, fp_cost=1)
    x, y = PHISHING[0]
    model.predict_one(x, request_id=3)  # LogisticRegression takes no such argument: dropped
    model.learn_one(x, y, request_id=3)
    assert len(model.thors) == 1


# ---------------------------------------------------------------- delayed labels
def test_delayed_labels_use_the_decision_score():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None)
    decided = {}
    delay = 40
    events = PHISHING[:300]
    for i, (x, _) in enumerate(events):
        model.predict_one(x, key=i)
        decided[i] = model._pending[i]
        if i >= delay:
            xo, yo = events[i - delay]
            model.learn_one(xo, yo, key=i - delay)
    assert model.n_pending == delay
    held = [(decided[i], y, 1) for i, (_, y) in enumerate(events[:-delay])]
    assert sorted(model.thors.held()[0].tolist()) == sorted({s for s, _, _ in held})
    assert model.threshold == brute_threshold(held, 5, 1)

    # without keys, learn_one re-scores with the model as it is when the label arrives: other scores
    rescored = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None)
    for i, (x, _) in enumerate(events):
        rescored.predict_one(x)
        if i >= delay:
            rescored.learn_one(*events[i - delay])
    assert rescored.thors.held()[0].tolist() != model.thors.held()[0].tolist()


def test_delayed_labels_under_progressive_val_score_with_moment_and_delay():
    start = dt.datetime(2024, 1, 1)
    # the event time is a feature for river's moment= and dropped before the model sees it
    data = [({**x, "when": start + dt.timedelta(minutes=i)}, y, {"key": i}) for i, (x, y) in enumerate(PHISHING)]

    class Recording(ThorsClassifier):
        def predict_one(self, x, *, key=None, **kwargs):
            self.decisions[key] = p_true(self.classifier.predict_proba_one(x))
            return super().predict_one(x, key=key, **kwargs)

    thors = Recording(linear_model.LogisticRegression(), fn_cost=10, fp_cost=1, window=None)
    thors.decisions = {}
    model = compose.Discard("when") | preprocessing.StandardScaler() | thors
    metric = evaluate.progressive_val_score(
        data, model, Cost(fn_cost=10, fp_cost=1), moment="when", delay=dt.timedelta(minutes=30)
    )
    assert thors.n_pending == 0 and len(thors.thors) == len(PHISHING)
    held = [(thors.decisions[i], y, 1) for i, (_, y, _) in enumerate(data)]
    assert sorted(thors.thors.held()[0].tolist()) == sorted({s for s, _, _ in held})
    assert thors.threshold == brute_threshold(held, 10, 1)
    assert metric.get() > 0


def test_pending_store_is_bounded_and_keys_are_checked():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, max_pending=3)
    xs = [x for x, _ in PHISHING[:6]]
    for i in range(5):
        model.predict_one(xs[i], key=i)
    assert model.n_pending == 3
    with pytest.raises(KeyError, match=r"unknown key 0\b.*evicted.*max_pending=3.*2 evicted"):
        model.learn_one(xs[0], True, key=0)
    model.predict_proba_one(xs[5], key=2)  # a re-decision replaces the score and refreshes the key
    model.predict_one(xs[5], key="new")  # so the eviction takes key 3, not key 2
    assert list(model._pending) == [4, 2, "new"]
    model.learn_one(xs[5], False, key=2)
    assert model.n_pending == 2 and len(model.thors) == 1
    with pytest.raises(KeyError, match="unknown key 2"):  # used keys are forgotten
        model.learn_one(xs[5], False, key=2)


# ---------------------------------------------------------------- persistence
def test_pickle_and_clone_mid_stream():
    model = ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(),
                            fn_cost=5, fp_cost=1, window=100, warm_up=20)
    for i, (x, y) in enumerate(PHISHING[:300]):
        model.predict_one(x, key=i)
        model.learn_one(x, y, key=i)
    model.predict_one(PHISHING[300][0], key="open")
    copy_ = pickle.loads(pickle.dumps(model))
    assert copy_.threshold == model.threshold and copy_.n_pending == 1
    for x, y in PHISHING[300:400]:
        assert copy_.predict_one(x) == model.predict_one(x)
        copy_.learn_one(x, y)
        model.learn_one(x, y)
    copy_.learn_one(PHISHING[300][0], True, key="open")
    fresh = model.clone()
    assert repr(fresh) == repr(model)
    assert len(fresh.thors) == 0 and fresh.n_pending == 0 and not fresh.warmed_up
    assert fresh.threshold == 1 / 6 and len(model.thors) == 100


def test_memory_is_bounded_by_the_window():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=200)
    for x, y in PHISHING[:400]:
        model.learn_one(x, y)
    at_400 = model._raw_memory_usage
    for x, y in PHISHING[400:1200]:
        model.learn_one(x, y)
    assert len(model.thors) == 200
    assert model._raw_memory_usage < at_400 * 1.5


# ---------------------------------------------------------------- bad input
def state(model):
    return pickle.dumps(model)


@pytest.fixture
def trained():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=50, warm_up=5)
    for i, (x, y) in enumerate(PHISHING[:30]):
        model.predict_one(x, key=i)
        model.learn_one(x, y, key=i)
    model.predict_one(PHISHING[30][0], key="k")
    return model


@pytest.mark.parametrize("label", [2, -1, 0.5, "1", "True", None, [1], 1j])
def test_bad_label(trained, label):
    before = state(trained)
    with pytest.raises(ValueError, match=re.escape(repr(label))):
        trained.learn_one(PHISHING[30][0], label)
    with pytest.raises(ValueError, match=re.escape(repr(label))):
        trained.learn_one(PHISHING[30][0], label, key="k")
    assert state(trained) == before


@pytest.mark.parametrize("w", [0, -1.0, math.nan, math.inf, "2", True])
def test_bad_weight(trained, w):
    before = state(trained)
    with pytest.raises((ValueError, TypeError), match=re.escape(repr(w))):
        trained.learn_one(PHISHING[30][0], True, w=w)
    assert state(trained) == before


def test_unknown_and_unhashable_keys(trained):
    before = state(trained)
    with pytest.raises(KeyError, match="unknown key 'nope'"):
        trained.learn_one(PHISHING[30][0], True, key="nope")
    with pytest.raises(TypeError, match=r"key must be hashable, got \[1\]"):
        trained.learn_one(PHISHING[30][0], True, key=[1])
    with pytest.raises(TypeError, match=r"key must be hashable, got \{\}"):
        trained.predict_one(PHISHING[30][0], key={})
    assert state(trained) == before


def test_bad_event_times():
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, window=None, period=10)
    x, y = PHISHING[0]
    model.learn_one(x, y, t=100)
    before = state(model)
    with pytest.raises(ValueError, match=r"t \(the event time\) is required"):
        model.learn_one(x, y)
    with pytest.raises(TypeError, match="'noon'"):
        model.learn_one(x, y, t="noon")
    with pytest.raises(ValueError, match="nan"):
        model.learn_one(x, y, t=math.nan)
    assert state(model) == before


class NanModel(ProbaOnly):
    def predict_proba_one(self, x):
        return {False: math.nan, True: math.nan}


def test_non_finite_score_is_rejected_before_learning():
    model = ThorsClassifier(NanModel(), fn_cost=5, fp_cost=1)
    before = state(model)
    with pytest.raises(ValueError, match="nan"):
        model.learn_one({"a": 0.3}, True)
    assert state(model) == before and model.classifier.n == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"fn_cost": 0}, ValueError, "fn_cost .* got 0"),
        ({"fp_cost": -1}, ValueError, "fp_cost .* got -1"),
        ({"fn_cost": math.nan}, ValueError, "fn_cost .* got nan"),
        ({"fp_cost": "1"}, TypeError, "fp_cost .* got '1'"),
        ({"window": 0}, ValueError, "window .* got 0"),
        ({"window": 2.5}, ValueError, "window .* got 2.5"),
        ({"window": True}, ValueError, "window .* got True"),
        ({"period": 5, "window": 500}, ValueError, "window=500 and period=5 are exclusive"),
        ({"window": None, "period": -5}, ValueError, "period .* got -5"),
        ({"warm_up": -1}, ValueError, "warm_up .* got -1"),
        ({"warm_up": 2.0}, ValueError, "warm_up .* got 2.0"),
        ({"warm_up": True}, ValueError, "warm_up .* got True"),
        ({"max_pending": 0}, ValueError, "max_pending .* got 0"),
        ({"class_prior": 1.5}, ValueError, "class_prior .* got 1.5"),
        ({"default_threshold": math.nan}, ValueError, "nan"),
    ],
)
def test_bad_parameters(kwargs, error, message):
    params = {"fn_cost": 5, "fp_cost": 1, **kwargs}
    with pytest.raises(error, match=message):
        ThorsClassifier(linear_model.LogisticRegression(), **params)


# ---------------------------------------------------------------- the claim, examples, benchmark
def test_thors_beats_plain_and_elkan_on_shuttle():
    """Shuttle, FN cost 100, FP cost 1: THORS's total cost is below both baselines."""
    fn_cost, fp_cost = 100, 1
    model = ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(),
                            fn_cost=fn_cost, fp_cost=fp_cost)
    costs = {"plain": 0, "elkan": 0, "thors": 0}
    elkan = fp_cost / (fp_cost + fn_cost)
    for x, y in datasets.Shuttle():
        proba = model.classifier.predict_proba_one(x)
        decisions = {"plain": model.classifier.predict_one(x), "elkan": p_true(proba) > elkan,
                     "thors": model.predict_one(x)}
        for k, d in decisions.items():
            costs[k] += fn_cost * (y and not d) + fp_cost * (not y and d)
        model.learn_one(x, y)
    assert costs["thors"] < min(costs["plain"], costs["elkan"])


def load_script(relpath):
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location(path.stem + "_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_river_pipeline_quick(capsys):
    load_script("examples/river_pipeline.py").main(["--quick"])
    out = capsys.readouterr().out
    for name in ("Phishing: 1,250 events", "Shuttle: 5,000 events", "plain predict_one", "fixed Elkan",
                 "THORS, window", "decision score (key)", "THORS / best baseline"):
        assert name in out


def test_example_drift_quick(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "drift.png"
    load_script("examples/drift.py").main(["--quick", str(out_png)])
    out = capsys.readouterr().out
    assert "THORS, unbounded" in out and "plain predict_one" in out
    assert out_png.stat().st_size > 10_000 and out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_example_drift_without_matplotlib(tmp_path, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out_png = tmp_path / "drift.png"
    load_script("examples/drift.py").main(["--quick", str(out_png)])
    out = capsys.readouterr().out
    assert "matplotlib is not installed" in out and "thors_stream[plot]" in out
    assert "THORS, unbounded" in out and not out_png.exists()


def test_benchmark_quick(capsys):
    status = load_script("benchmarks/river_overhead.py").main(["--quick", "--repeat", "1"])
    out = capsys.readouterr().out
    assert status == 0  # without --check the exit status never depends on timings
    assert "ThorsClassifier(StandardScaler | LogisticRegression)" in out and "overhead of" in out
    assert "The thresholding alone" in out and "(replayed, best passes)" in out


def test_cost_of_the_wrapper_in_progressive_val_score_matches_a_manual_loop():
    fn_cost, fp_cost = 7, 2
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=fn_cost, fp_cost=fp_cost, window=100)
    metric = evaluate.progressive_val_score(PHISHING, model.clone(), Cost(fn_cost=fn_cost, fp_cost=fp_cost))
    total = 0
    for x, y in itertools.islice(PHISHING, None):
        d = model.predict_one(x)
        total += fn_cost * (y and not d) + fp_cost * (not y and d)
        model.learn_one(x, y)
    assert metric.get() == total


# ---------------------------------------------------------------- Neyman-Pearson pass-through
def test_neyman_pearson_mode_matches_the_batch_function_on_the_window():
    from thors_stream import thors_threshold
    from thors_stream.neyman_pearson import NPInfeasibleError

    window, alpha, conf = 300, 0.1, 0.9
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=10, fp_cost=1, window=window, warm_up=20,
                            max_fpr=alpha, confidence=conf, default_threshold=0.5)
    shadow = linear_model.LogisticRegression()  # the same model, trained in step, gives the same scores
    events, checked, fell_back = [], 0, 0
    for i, (x, y) in enumerate(PHISHING[:900]):
        events.append((p_true(shadow.predict_proba_one(x)), y))
        model.learn_one(x, y)
        shadow.learn_one(x, y)
        if i >= 20 and i % 37 == 0:
            s, ys = zip(*events[-window:])
            try:
                want = thors_threshold(s, ys, fn_cost=10, fp_cost=1, max_fpr=alpha, confidence=conf).threshold
            except NPInfeasibleError:
                want = 0.5  # too few negatives for the guarantee: the default
                fell_back += 1
            assert model.threshold == want
            assert model.predict_one(x) == (p_true(model.predict_proba_one(x)) > want)
            checked += 1
    assert checked > 15 and fell_back >= 1
    # the constrained threshold differs from the plain one: the mode is really on
    plain = thors_threshold(s, ys, fn_cost=10, fp_cost=1).threshold
    assert model.threshold != plain


def test_neyman_pearson_settings_are_validated_and_cloned():
    with pytest.raises(ValueError, match=r"1\.5"):
        ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=1, max_fpr=1.5)
    model = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=1, fp_cost=1, max_fnr=0.05, confidence=0.8)
    twin = model.clone()
    assert (twin.max_fnr, twin.confidence, twin.thors.max_fnr) == (0.05, 0.8, 0.05)


def test_segment_mode_reports_the_global_summary():
    """With segment=..., `thors` is the global summary (all events) and `threshold` its
    threshold, not an empty object's default."""
    import random

    from river import linear_model

    rng = random.Random(3)
    clf = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment="g", warm_up=10)
    for _ in range(400):
        y = rng.random() < 0.3
        x = {"a": rng.gauss(1.0 if y else 0.0, 1.0), "g": rng.choice((0, 1))}
        clf.predict_one(x)
        clf.learn_one(x, y)
    assert len(clf.thors) == 400
    assert clf.threshold == clf.thors.get()
