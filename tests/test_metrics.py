"""thors_stream.metrics.Cost against a brute-force sum, inside river's machinery, bad input."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from river import datasets, evaluate, linear_model, metrics, utils

from thors_stream.metrics import Cost

labels = st.sampled_from([0, 1, True, False])
weights = st.integers(1, 64).map(lambda k: k / 8)  # dyadic: sums are exact
costs = st.integers(1, 50).map(float) | st.sampled_from([0.5, 0.25, 1.5])
events = st.lists(st.tuples(labels, labels, weights), max_size=60)


def brute(evs, fn_cost, fp_cost):
    return sum(w * (fn_cost if y and not p else fp_cost if p and not y else 0) for y, p, w in evs)


@given(events, costs, costs)
def test_total_and_mean_match_brute_force(evs, fn_cost, fp_cost):
    metric = Cost(fn_cost=fn_cost, fp_cost=fp_cost)
    per_event = Cost(fn_cost=fn_cost, fp_cost=fp_cost, per_event=True)
    for y, p, w in evs:
        metric.update(y, p, w)
        per_event.update(y, p, w)
    total = brute(evs, fn_cost, fp_cost)
    assert metric.get() == metric.total == total
    expected_mean = total / len(evs) if evs else 0.0
    assert per_event.get() == metric.mean == pytest.approx(expected_mean, rel=1e-12)


@given(events, st.data(), costs, costs)
def test_revert_undoes_update(evs, data, fn_cost, fp_cost):
    metric = Cost(fn_cost=fn_cost, fp_cost=fp_cost)
    for y, p, w in evs:
        metric.update(y, p, w)
    drop = data.draw(st.sets(st.integers(0, max(len(evs) - 1, 0))) if evs else st.just(set()))
    for i in sorted(drop):
        metric.revert(*evs[i])
    kept = [e for i, e in enumerate(evs) if i not in drop]
    assert metric.total == brute(kept, fn_cost, fp_cost)
    assert metric.cm.n_samples == len(kept)


@given(events, st.integers(1, 10))
def test_rolling(evs, window):
    rolling = utils.Rolling(Cost, window_size=window, fn_cost=3, fp_cost=1)
    for i, (y, p, w) in enumerate(evs):
        rolling.update(y, p, w)
        assert rolling.get() == brute(evs[max(0, i + 1 - window) : i + 1], 3, 1)


def test_progressive_val_score_reports_it():
    dataset = datasets.Phishing()
    metric = evaluate.progressive_val_score(dataset, linear_model.LogisticRegression(), Cost(fn_cost=5, fp_cost=1))
    model, total = linear_model.LogisticRegression(), 0.0
    for x, y in dataset:
        p = model.predict_one(x)
        total += 5 * (y and not p) + (not y and p)
        model.learn_one(x, y)
    assert metric.get() == total > 0
    assert not metric.bigger_is_better
    assert metric.works_with(model) and not metric.works_with(linear_model.LinearRegression())

    combined = Cost(fn_cost=5, fp_cost=1) + metrics.Accuracy()
    evaluate.progressive_val_score(dataset, linear_model.LogisticRegression(), combined)
    assert combined[0].get() == total


def test_labels_as_bool_or_int_and_custom_positive_value():
    a, b = Cost(fn_cost=4, fp_cost=1), Cost(fn_cost=4, fp_cost=1)
    for y, p in [(True, False), (False, True), (True, True), (False, False)]:
        a.update(y, p)
        b.update(int(y), int(p))
    assert a.get() == b.get() == 5.0
    named = Cost(fn_cost=4, fp_cost=1, pos_val="fraud")
    for y, p in [("fraud", "ok"), ("ok", "fraud"), ("fraud", "fraud")]:
        named.update(y, p)
    assert named.get() == 5.0


def test_repr_clone_pickle():
    metric = Cost(fn_cost=100, fp_cost=1)
    metric.update(1, 0)
    metric.update(1, 0)
    metric.update(0, 1)
    assert repr(metric) == "Cost: 201.00"
    assert pickle.loads(pickle.dumps(metric)).get() == 201.0
    fresh = metric.clone()
    assert fresh.get() == 0.0 and fresh.fn_cost == 100 and fresh.fp_cost == 1
    assert repr(Cost(fn_cost=1, fp_cost=1, per_event=True)) == "Cost: 0.00"


def snapshot(metric):
    return pickle.dumps(metric)


@pytest.mark.parametrize(
    ("y_true", "y_pred", "w", "message"),
    [
        (2, True, 1.0, "got 2"),
        ("1", True, 1.0, "got '1'"),
        (None, True, 1.0, "got None"),
        (True, 0.5, 1.0, "got 0.5"),
        (True, None, 1.0, "got None"),
        (True, {False: 0.2, True: 0.8}, 1.0, "probabilities"),
        (True, False, 0.0, "got 0.0"),
        (True, False, -1, "got -1"),
        (True, False, math.nan, "got nan"),
    ],
)
@pytest.mark.parametrize("method", ["update", "revert"])
def test_bad_input_changes_nothing(y_true, y_pred, w, message, method):
    metric = Cost(fn_cost=3, fp_cost=1)
    metric.update(1, 0)
    metric.update(0, 1)
    before = snapshot(metric)
    with pytest.raises(ValueError, match=message):
        getattr(metric, method)(y_true, y_pred, w)
    assert snapshot(metric) == before and metric.get() == 4.0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"fn_cost": 0, "fp_cost": 1}, ValueError, "fn_cost .* got 0"),
        ({"fn_cost": 1, "fp_cost": -2}, ValueError, "fp_cost .* got -2"),
        ({"fn_cost": math.inf, "fp_cost": 1}, ValueError, "fn_cost .* got inf"),
        ({"fn_cost": "1", "fp_cost": 1}, TypeError, "fn_cost .* got '1'"),
    ],
)
def test_bad_costs(kwargs, error, message):
    with pytest.raises(error, match=message):
        Cost(**kwargs)
