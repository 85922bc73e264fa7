"""ThorsThresholdClassifier: scikit-learn conformance, exactness of the threshold, routing, bad input."""

from __future__ import annotations

import importlib
import pickle
import sys
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("sklearn")

import sklearn
from oracle import brute_force
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
    cross_val_score,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from thors_stream import thors_threshold
from thors_stream.sklearn import ThorsThresholdClassifier

# The only check that cannot pass, for the same reason scikit-learn lists it as an expected
# failure of its own TunedThresholdClassifierCV / FixedThresholdClassifier: it requires
# predict() to agree with argmax(predict_proba) / decision_function > 0, i.e. a threshold at
# probability 0.5 -- the whole point of the estimator is to move that threshold.
EXPECTED_FAILED = {"check_classifiers_train": "the threshold is not probability 0.5 (cost-chosen on purpose)"}


@parametrize_with_checks(
    [ThorsThresholdClassifier(LogisticRegression())],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def _data(n=300, seed=0, labels=(0, 1)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    z = X[:, 0] - 0.5 * X[:, 1] + rng.normal(scale=1.0, size=n)
    y = np.where(z > 0.8, labels[1], labels[0])
    return X, y


def _oracle_threshold(scores, ybool, fn, fp, w=None):
    w = np.ones(len(scores)) if w is None else w
    events = [(float(s), bool(t), Fraction(float(wi))) for s, t, wi in zip(scores, ybool, w)]
    thr, cost, _ = brute_force(events, fn, fp)
    return thr, cost


def _oof_scores(est, X, y, cv, pos_col=1, fit_kw=None):
    """Out-of-fold predict_proba of the positive column, pooled in fold order (written independently)."""
    s, t, idx = [], [], []
    for train, test in cv.split(X, y):
        m = clone(est).fit(X[train], y[train], **{k: v[train] for k, v in (fit_kw or {}).items()})
        s.append(m.predict_proba(X[test])[:, pos_col])
        t.append(y[test])
        idx.append(test)
    return np.concatenate(s), np.concatenate(t), np.concatenate(idx)


@pytest.mark.parametrize("fn,fp", [(1, 1), (10, 1), (1, 7)])
def test_threshold_is_brute_force_optimum_of_pooled_oof_scores(fn, fp):
    X, y = _data()
    cv = StratifiedKFold(4, shuffle=True, random_state=3)
    clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=fn, fp_cost=fp, cv=cv).fit(X, y)
    s, t, _ = _oof_scores(LogisticRegression(), X, y, cv)
    thr, cost = _oracle_threshold(s, t == 1, fn, fp)
    assert clf.best_threshold_ == thr
    assert clf.result_.cost == float(cost)
    assert clf.result_ == thors_threshold(s, t == 1, fn_cost=fn, fp_cost=fp)
    # refit on everything: the final model is the one fitted on all the data
    full = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(clf.estimator_.coef_, full.coef_)
    p = full.predict_proba(X)[:, 1]
    assert clf.predict(X).tolist() == np.where(p > thr, 1, 0).tolist()


def test_costs_move_the_threshold_the_right_way():
    X, y = _data(600, seed=1)
    thr = [ThorsThresholdClassifier(LogisticRegression(), fn_cost=fn, fp_cost=1, cv=3).fit(X, y).best_threshold_
           for fn in (0.2, 1, 5, 50)]
    assert thr == sorted(thr, reverse=True) and thr[0] > thr[-1]


def test_prefit_uses_estimator_as_is():
    X, y = _data(400, seed=2)
    est = LogisticRegression().fit(X[:200], y[:200])
    clf = ThorsThresholdClassifier(est, fn_cost=3, fp_cost=1, cv="prefit", refit=False).fit(X[200:], y[200:])
    assert clf.estimator_ is est
    s = est.predict_proba(X[200:])[:, 1]
    thr, _ = _oracle_threshold(s, y[200:] == 1, 3, 1)
    assert clf.best_threshold_ == thr
    # strict comparison: the validation event sitting at the threshold is predicted negative
    assert np.isfinite(thr) and (s == thr).sum() >= 1
    assert clf.predict(X[200:]).tolist() == np.where(s > thr, 1, 0).tolist()
    with pytest.raises(ValueError, match="refit=False"):
        ThorsThresholdClassifier(est, cv="prefit").fit(X, y)
    with pytest.raises(NotFittedError, match="prefit"):
        ThorsThresholdClassifier(LogisticRegression(), cv="prefit", refit=False).fit(X, y)


@pytest.mark.parametrize("refit", [True, False])
def test_float_cv_is_one_stratified_holdout(refit):
    X, y = _data(400, seed=4)
    clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=2, fp_cost=1, cv=0.3, refit=refit,
                                   random_state=11).fit(X, y)
    train, test = next(StratifiedShuffleSplit(1, test_size=0.3, random_state=11).split(X, y))
    m = LogisticRegression().fit(X[train], y[train])
    thr, _ = _oracle_threshold(m.predict_proba(X[test])[:, 1], y[test] == 1, 2, 1)
    assert clf.best_threshold_ == thr
    final = LogisticRegression().fit(X, y) if refit else m
    np.testing.assert_allclose(clf.estimator_.coef_, final.coef_)


def test_string_labels_pos_label_and_decision_function():
    X, y = _data(300, seed=5, labels=("no", "yes"))
    # pos_label = the first class: decision_function must be negated
    est = LinearSVC()
    clf = ThorsThresholdClassifier(est, fn_cost=4, fp_cost=1, pos_label="no", cv=3).fit(X, y)
    assert clf.pos_label_ == "no" and list(clf.classes_) == ["no", "yes"]
    cv = StratifiedKFold(3)
    s, t = [], []
    for tr, te in cv.split(X, y):
        s.append(-clone(est).fit(X[tr], y[tr]).decision_function(X[te]))
        t.append(y[te])
    thr, _ = _oracle_threshold(np.concatenate(s), np.concatenate(t) == "no", 4, 1)
    assert clf.best_threshold_ == thr
    d = -clf.estimator_.decision_function(X)
    assert clf.predict(X).tolist() == np.where(d > thr, "no", "yes").tolist()
    assert not hasattr(clf, "predict_proba")  # hidden: LinearSVC has none


def test_response_method_explicit():
    X, y = _data(200, seed=6)
    a = ThorsThresholdClassifier(LogisticRegression(), response_method="decision_function", cv=3).fit(X, y)
    s, t = [], []
    for tr, te in StratifiedKFold(3).split(X, y):
        s.append(LogisticRegression().fit(X[tr], y[tr]).decision_function(X[te]))
        t.append(y[te])
    assert a.best_threshold_ == _oracle_threshold(np.concatenate(s), np.concatenate(t) == 1, 1, 1)[0]
    with pytest.raises(TypeError, match="predict_proba"):
        ThorsThresholdClassifier(LinearSVC(), response_method="predict_proba", cv=3).fit(X, y)


def test_in_pipelines_and_model_selection():
    X, y = _data(300, seed=7)
    X = X * [1.0, 100.0, 0.01]
    inner = ThorsThresholdClassifier(make_pipeline(StandardScaler(), LogisticRegression()), fn_cost=5, cv=3)
    outer = make_pipeline(StandardScaler(), ThorsThresholdClassifier(LogisticRegression(), fn_cost=5, cv=3))
    a, b = inner.fit(X, y), outer.fit(X, y)
    assert a.predict(X).shape == b.predict(X).shape == (300,)
    scores = cross_val_score(clone(inner), X, y, cv=3)
    assert scores.shape == (3,)
    gs = GridSearchCV(inner, {"fn_cost": [1, 5]}, cv=3).fit(X, y)
    assert gs.best_params_["fn_cost"] in (1, 5)


def test_pickle_roundtrip():
    X, y = _data(200, seed=8)
    clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=3, cv=3).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    assert back.best_threshold_ == clf.best_threshold_ and back.result_ == clf.result_
    assert back.predict(X).tolist() == clf.predict(X).tolist()


def test_result_bounds_available():
    X, y = _data(400, seed=9)
    r = ThorsThresholdClassifier(LogisticRegression(), fn_cost=3, cv=3).fit(X, y).result_
    b = r.bounds(0.9, n_test=100)
    assert b.fpr_lower <= r.fpr <= b.fpr_upper and b.fnr_lower <= r.fnr <= b.fnr_upper


class _Recorder(ClassifierMixin, BaseEstimator):
    """Logistic regression that records the sample_weight its fit received (shared log)."""

    log: list = []  # noqa: RUF012

    def fit(self, X, y, sample_weight=None):
        _Recorder.log.append(None if sample_weight is None else np.asarray(sample_weight).copy())
        self.m_ = LogisticRegression().fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.m_.classes_
        return self

    def predict_proba(self, X):
        return self.m_.predict_proba(X)


def test_integer_weights_equal_duplicated_events_prefit():
    X, y = _data(200, seed=10)
    est = LogisticRegression().fit(X, y)
    w = np.random.default_rng(0).integers(1, 4, size=200)
    a = ThorsThresholdClassifier(est, fn_cost=3, cv="prefit", refit=False).fit(X, y, sample_weight=w)
    rep = np.repeat(np.arange(200), w)
    b = ThorsThresholdClassifier(est, fn_cost=3, cv="prefit", refit=False).fit(X[rep], y[rep])
    assert a.best_threshold_ == b.best_threshold_ and a.result_.cost == b.result_.cost
    # zero weight = event absent
    w0 = w.copy()
    w0[:50] = 0
    c = ThorsThresholdClassifier(est, fn_cost=3, cv="prefit", refit=False).fit(X, y, sample_weight=w0)
    d = ThorsThresholdClassifier(est, fn_cost=3, cv="prefit", refit=False).fit(X[50:], y[50:], sample_weight=w[50:])
    assert c.result_ == d.result_


def test_sample_weight_without_routing_goes_to_estimator_and_thors():
    X, y = _data(240, seed=11)
    w = np.random.default_rng(1).integers(1, 5, size=240).astype(float)
    _Recorder.log = []
    cv = StratifiedKFold(3)
    clf = ThorsThresholdClassifier(_Recorder(), fn_cost=2, cv=cv).fit(X, y, sample_weight=w)
    assert len(_Recorder.log) == 4  # 3 folds + refit
    assert all(rec is not None for rec in _Recorder.log)
    np.testing.assert_array_equal(_Recorder.log[-1], w)
    s, t, idx = _oof_scores(LogisticRegression(), X, y, cv, fit_kw={"sample_weight": w})
    assert clf.best_threshold_ == _oracle_threshold(s, t == 1, 2, 1, w[idx])[0]


@pytest.mark.parametrize("request_sw", [True, False])
def test_sample_weight_with_metadata_routing(request_sw):
    X, y = _data(240, seed=12)
    w = np.random.default_rng(2).integers(1, 5, size=240).astype(float)
    cv = StratifiedKFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        _Recorder.log = []
        est = _Recorder().set_fit_request(sample_weight=request_sw)
        clf = ThorsThresholdClassifier(est, fn_cost=2, cv=cv).fit(X, y, sample_weight=w)
    assert len(_Recorder.log) == 4
    assert all((rec is not None) == request_sw for rec in _Recorder.log)
    # THORS uses the weights either way
    s, t, idx = _oof_scores(LogisticRegression(), X, y, cv, fit_kw={"sample_weight": w} if request_sw else None)
    assert clf.best_threshold_ == _oracle_threshold(s, t == 1, 2, 1, w[idx])[0]


def test_groups_routed_to_splitter():
    X, y = _data(240, seed=13)
    groups = np.arange(240) % 6
    with sklearn.config_context(enable_metadata_routing=True):
        clf = ThorsThresholdClassifier(LogisticRegression(), cv=GroupKFold(3)).fit(X, y, groups=groups)
    s, t = [], []
    for tr, te in GroupKFold(3).split(X, y, groups):
        s.append(LogisticRegression().fit(X[tr], y[tr]).predict_proba(X[te])[:, 1])
        t.append(y[te])
    assert clf.best_threshold_ == _oracle_threshold(np.concatenate(s), np.concatenate(t) == 1, 1, 1)[0]


@pytest.mark.parametrize(
    "params,fit_kw,exc,match",
    [
        ({"fn_cost": -1}, {}, ValueError, "fn_cost must be finite and > 0, got -1"),
        ({"fp_cost": "x"}, {}, TypeError, "fp_cost must be a real number, got 'x'"),
        ({"fp_cost": float("nan")}, {}, ValueError, "fp_cost"),
        ({"response_method": "predict"}, {}, ValueError, "'predict'"),
        ({"cv": 1.5}, {}, ValueError, "1.5"),
        ({"cv": "loo"}, {}, ValueError, "'loo'"),
        ({"cv": 3, "refit": False}, {}, ValueError, "refit=False"),
        ({"refit": "yes"}, {}, TypeError, "'yes'"),
        ({"pos_label": 7}, {}, ValueError, "pos_label=7"),
        ({"class_prior": 1.0}, {}, ValueError, "class_prior"),
        ({}, {"sample_weight": -np.ones(120)}, ValueError, "-1.0 at position 0"),
        ({}, {"sample_weight": np.r_[np.ones(119), np.nan]}, ValueError, "nan at position 119"),
        ({}, {"sample_weight": np.ones(5)}, ValueError, "length 120"),
        ({}, {"sample_weight": np.zeros(120)}, ValueError, "zero everywhere"),
    ],
)
def test_bad_input_raises_and_keeps_state(params, fit_kw, exc, match):
    X, y = _data(120, seed=14)
    clf = ThorsThresholdClassifier(LogisticRegression(), cv=3).fit(X, y)
    before = (clf.best_threshold_, clf.result_, clf.estimator_)
    clf.set_params(**params)
    with pytest.raises(exc, match=match):
        clf.fit(X, y, **fit_kw)
    assert (clf.best_threshold_, clf.result_, clf.estimator_) == before


def test_multiclass_y_rejected_with_pointer():
    X, _ = _data(90, seed=15)
    y = np.arange(90) % 3
    with pytest.raises(ValueError, match=r"thors_stream\.multiclass"):
        ThorsThresholdClassifier(LogisticRegression()).fit(X, y)


def test_missing_sklearn_names_the_extra(monkeypatch):
    monkeypatch.delitem(sys.modules, "thors_stream.sklearn")
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=r"pip install 'thors_stream\[sklearn\]'"):
        importlib.import_module("thors_stream.sklearn")


def test_routing_enabled_unset_request_is_an_error():
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y = _data(120, seed=16)
    with sklearn.config_context(enable_metadata_routing=True), pytest.raises(UnsetMetadataPassedError,
                                                                             match="set_fit_request"):
        ThorsThresholdClassifier(LogisticRegression(), cv=3).fit(X, y, sample_weight=np.ones(120))
