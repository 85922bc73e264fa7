"""ThorsThresholdClassifier deciding in money: per-event costs as fit / predict metadata, the cost
margin (decide_on='margin') against the batch answer and a brute-force oracle, routing through
Pipeline and cross_validate, MoneyLostScorer, bad input leaving a fitted classifier unchanged."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("sklearn")

import sklearn
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracle import money_oracle
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from thors_stream import thors_threshold
from thors_stream.margin import cost_margin, cost_margins
from thors_stream.sklearn import MoneyLostScorer, ThorsThresholdClassifier


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """The fits here are tiny: BLAS threads only cost time (much of it on a busy machine)."""
    with threadpool_limits(limits=1):
        yield


class _ProbaColumn(ClassifierMixin, BaseEstimator):
    """A 'model' whose probability of the greater class is column 0 of X: exact control of the scores."""

    def fit(self, X, y, **kw):
        self.classes_ = np.unique(y)
        self.fit_keys_ = sorted(kw)
        return self

    def predict_proba(self, X):
        p = np.asarray(X, dtype=float)[:, 0]
        return np.column_stack([1.0 - p, p])


def _prefit():
    return _ProbaColumn().fit(np.zeros((2, 1)), [0, 1])


def _data(n=300, seed=0, labels=(0, 1)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    z = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n)
    y = np.where(z > 1.2, labels[1], labels[0])
    amount = np.round(rng.lognormal(3.0, 1.2, size=n), 2)
    fee = rng.choice([2.0, 5.0, 8.0], size=n)
    return X, y, amount, fee


def _oof(X, y, cv, fit_kw=None):
    """Out-of-fold P(class 1) of LogisticRegression, pooled in fold order, with the test indices."""
    p, idx = [], []
    for train, test in cv.split(X, y):
        kw = {k: v[train] for k, v in (fit_kw or {}).items()}
        p.append(LogisticRegression().fit(X[train], y[train], **kw).predict_proba(X[test])[:, 1])
        idx.append(test)
    return np.concatenate(p), np.concatenate(idx)


def _money(y_pos, flagged, fn, fp):
    return float(np.sum(np.where(y_pos & ~flagged, fn, 0.0)) + np.sum(np.where(~y_pos & flagged, fp, 0.0)))




# heavy ties (0 and 1 clip to the same margin), few costs, dyadic weights (0 = absent)
PROBS = st.sampled_from([0.0, 0.01, 0.2, 0.5, 0.8, 1.0])
EVENT = st.tuples(PROBS, st.booleans(), st.sampled_from([1.0, 3.0, 40.0, 400.0]), st.sampled_from([1.0, 5.0]),
                  st.sampled_from([0.0, 0.5, 1.0, 2.0]))


@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, min_size=2, max_size=20), st.booleans())
def test_prefit_margin_threshold_is_the_brute_force_money_optimum(events, weighted):
    p, y, fn, fp, w = (np.array(c) for c in zip(*events))
    ws = w if weighted else np.ones(len(p))
    assume(0 < y.sum() < len(y) and ws.sum() > 0)
    X = p[:, None]
    clf = ThorsThresholdClassifier(_prefit(), decide_on="margin", cv="prefit", refit=False)
    clf.fit(X, y.astype(int), sample_weight=ws if weighted else None, fn_cost=fn, fp_cost=fp)
    m = [cost_margin(*e) for e in zip(p, fn, fp)]
    thr, best = money_oracle(m, y, fn, fp, ws)
    assert clf.best_threshold_ == thr
    assert Fraction(clf.result_.cost) == best
    # deciding the validation events reproduces the money lost (weighted)
    flagged = clf.predict(X, fn_cost=fn, fp_cost=fp) == 1
    assert _money(y, flagged, fn * ws, fp * ws) == clf.result_.cost


@pytest.mark.parametrize("fp_per_event", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_cv_margin_threshold_equals_thors_threshold_on_oof_probabilities(fp_per_event, weighted):
    X, y, amount, fee = _data(seed=1)
    w = np.random.default_rng(5).integers(0, 3, size=len(y)).astype(float) if weighted else None
    cv = StratifiedKFold(3, shuffle=True, random_state=2)
    clf = ThorsThresholdClassifier(LogisticRegression(), fp_cost=5.0, decide_on="margin", cv=cv)
    fit_kw = {"fn_cost": amount, **({"fp_cost": fee} if fp_per_event else {})}
    clf.fit(X, y, sample_weight=w, **fit_kw)
    p, idx = _oof(X, y, cv, None if w is None else {"sample_weight": w})
    keep = np.ones(len(idx), bool) if w is None else w[idx] > 0
    p, idx = p[keep], idx[keep]
    expected = thors_threshold(p, y[idx] == 1, fn_cost=amount[idx], fp_cost=fee[idx] if fp_per_event else 5.0,
                               sample_weight=None if w is None else w[idx], decide_on="margin")
    assert clf.result_ == expected and clf.result_.decide_on == "margin"
    assert clf.best_threshold_ == expected.threshold
    assert clf.fn_cost_ is None and clf.fp_cost_ == (None if fp_per_event else 5.0)
    # predict decides on each new event's own margin; the refitted model gives p
    p_all = LogisticRegression().fit(X, y, sample_weight=w).predict_proba(X)[:, 1]
    fp_new = fee if fp_per_event else 5.0
    margins = cost_margins(p_all, amount, fp_new)
    assert clf.predict(X, fn_cost=amount, fp_cost=fee if fp_per_event else None).tolist() == \
        np.where(margins > expected.threshold, 1, 0).tolist()
    np.testing.assert_array_equal(clf.decision_scores(X, fn_cost=amount, fp_cost=fp_new), margins)


def test_scalar_costs_in_margin_mode_need_no_costs_at_predict_and_may_take_them():
    X, y, amount, _ = _data(seed=2)
    clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=20.0, fp_cost=4.0, decide_on="margin", cv=3)
    clf.fit(X, y)
    p = clf.predict_proba(X)[:, 1]
    assert clf.fn_cost_ == 20.0 and clf.fp_cost_ == 4.0
    assert clf.predict(X).tolist() == np.where(cost_margins(p, 20.0, 4.0) > clf.best_threshold_, 1, 0).tolist()
    assert clf.predict(X, fn_cost=amount).tolist() == \
        np.where(cost_margins(p, amount, 4.0) > clf.best_threshold_, 1, 0).tolist()
    # set_params after fit does not change what predict uses
    clf.set_params(fn_cost=1.0)
    assert clf.predict(X).tolist() == np.where(cost_margins(p, 20.0, 4.0) > clf.best_threshold_, 1, 0).tolist()


def test_pos_label_first_class_uses_its_probability():
    X, y, amount, _ = _data(seed=3, labels=("fraud", "ok"))  # "ok" is the rare class here; flag "fraud"
    cv = StratifiedKFold(3)
    clf = ThorsThresholdClassifier(LogisticRegression(), pos_label="fraud", fp_cost=5.0, decide_on="margin", cv=cv)
    clf.fit(X, y, fn_cost=amount)
    p, idx = [], []
    for tr, te in cv.split(X, y):
        p.append(LogisticRegression().fit(X[tr], y[tr]).predict_proba(X[te])[:, 0])
        idx.append(te)
    p, idx = np.concatenate(p), np.concatenate(idx)
    assert clf.result_ == thors_threshold(p, y[idx] == "fraud", fn_cost=amount[idx], fp_cost=5.0, decide_on="margin")
    q = clf.predict_proba(X)[:, 0]
    assert clf.predict(X, fn_cost=amount).tolist() == \
        np.where(cost_margins(q, amount, 5.0) > clf.best_threshold_, "fraud", "ok").tolist()


def test_score_mode_with_per_event_costs_minimises_money_on_the_score():
    X, y, amount, fee = _data(seed=4)
    cv = StratifiedKFold(3)
    clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=99.0, cv=cv).fit(X, y, fn_cost=amount, fp_cost=fee)
    p, idx = _oof(X, y, cv)
    assert clf.result_ == thors_threshold(p, y[idx] == 1, fn_cost=amount[idx], fp_cost=fee[idx])
    assert clf.result_.decide_on == "score" and clf.fn_cost_ is None and clf.fp_cost_ is None
    assert clf.predict(X).tolist() == np.where(clf.predict_proba(X)[:, 1] > clf.best_threshold_, 1, 0).tolist()
    with pytest.raises(ValueError, match="decide_on='score'"):
        clf.predict(X, fn_cost=amount)
    # the costs choose the threshold only: they never reach the model's fit
    est = ThorsThresholdClassifier(_ProbaColumn(), cv=3).fit(np.clip(X[:, :1], 0, 1), y, fn_cost=amount)
    assert est.estimator_.fit_keys_ == []


def test_money_lost_scorer_counts_money_and_passes_costs_only_to_margin_deciders():
    X, y, amount, fee = _data(seed=5)
    margin = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3).fit(X, y, fn_cost=amount,
                                                                                            fp_cost=fee)
    score = ThorsThresholdClassifier(LogisticRegression(), cv=3).fit(X, y, fn_cost=amount, fp_cost=fee)
    for clf in (margin, score, make_pipeline(StandardScaler(), clone(margin)).fit(
            X, y, thorsthresholdclassifier__fn_cost=amount, thorsthresholdclassifier__fp_cost=fee)):
        kw = {"fn_cost": amount, "fp_cost": fee} if clf is not score else {}
        flagged = clf.predict(X, **kw) == 1
        assert MoneyLostScorer()(clf, X, y, fn_cost=amount, fp_cost=fee) == pytest.approx(
            -_money(y == 1, flagged, amount, fee), rel=1e-12)
    plain = LogisticRegression().fit(X, y)
    assert MoneyLostScorer(7.0, 2.0)(plain, X, y) == pytest.approx(-_money(y == 1, plain.predict(X) == 1, 7.0, 2.0),
                                                                  rel=1e-12)
    with pytest.raises(ValueError, match="fn_cost was given per event at fit"):
        MoneyLostScorer(pass_costs=False)(margin, X, y, fn_cost=amount, fp_cost=fee)
    with pytest.raises(ValueError, match="pass_costs"):
        MoneyLostScorer(pass_costs="yes")


def test_routing_through_a_pipeline():
    X, y, amount, fee = _data(seed=6)
    X = X * [1.0, 100.0, 0.01]
    Xs = StandardScaler().fit_transform(X)
    direct = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3).fit(Xs, y, fn_cost=amount,
                                                                                           fp_cost=fee)
    expected = direct.predict(Xs, fn_cost=amount, fp_cost=fee)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3)
        clf.set_fit_request(fn_cost=True, fp_cost=True).set_predict_request(fn_cost=True, fp_cost=True)
        pipe = make_pipeline(StandardScaler(), clf).fit(X, y, fn_cost=amount, fp_cost=fee)
        assert pipe[-1].result_ == direct.result_
        assert pipe.predict(X, fn_cost=amount, fp_cost=fee).tolist() == expected.tolist()
        with pytest.raises(ValueError, match="predict needs the new events' fn_cost"):
            pipe.predict(X)
        # a cost not requested for predict is refused by scikit-learn, naming set_predict_request
        half = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3)
        half.set_fit_request(fn_cost=True, fp_cost=True).set_predict_request(fn_cost=True)
        pipe2 = make_pipeline(StandardScaler(), half).fit(X, y, fn_cost=amount, fp_cost=fee)
        with pytest.raises(UnsetMetadataPassedError, match="set_predict_request"):
            pipe2.predict(X, fn_cost=amount, fp_cost=fee)
        # the inner model does not request the costs: they never reach its fit
        rec = ThorsThresholdClassifier(_ProbaColumn(), decide_on="margin", cv=3).set_fit_request(fn_cost=True)
        make_pipeline(rec).fit(np.clip(X[:, :1], 0, 1), y, fn_cost=amount)
        assert rec.estimator_.fit_keys_ == []
    # routing disabled: step__param at fit, predict keywords go to the last step
    pipe3 = make_pipeline(StandardScaler(), ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3))
    pipe3.fit(X, y, thorsthresholdclassifier__fn_cost=amount, thorsthresholdclassifier__fp_cost=fee)
    assert pipe3[-1].result_ == direct.result_
    assert pipe3.predict(X, fn_cost=amount, fp_cost=fee).tolist() == expected.tolist()


def test_routing_through_cross_validate_reaches_fit_and_predict():
    X, y, amount, fee = _data(seed=7)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3)
        clf.set_fit_request(fn_cost=True, fp_cost=True)
        out = cross_validate(clf, X, y, cv=cv, scoring=MoneyLostScorer(), params={"fn_cost": amount, "fp_cost": fee},
                             return_estimator=True)
    for (train, test), est, got in zip(cv.split(X, y), out["estimator"], out["test_score"]):
        ref = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3)
        ref.fit(X[train], y[train], fn_cost=amount[train], fp_cost=fee[train])
        assert est.result_ == ref.result_
        flagged = ref.predict(X[test], fn_cost=amount[test], fp_cost=fee[test]) == 1
        assert got == pytest.approx(-_money(y[test] == 1, flagged, amount[test], fee[test]), rel=1e-12)


def _fitted():
    X, y, amount, fee = _data(120, seed=8)
    clf = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3).fit(X, y, fn_cost=amount,
                                                                                         fp_cost=fee)
    return clf, X, y, amount, fee


def _state(clf):
    return (clf.best_threshold_, clf.result_, clf.estimator_, clf.estimator_.coef_.copy(), clf.fn_cost_,
            clf.fp_cost_, clf.pos_label_)


def _same(a, b):
    assert a[:3] == b[:3] and a[4:] == b[4:]
    np.testing.assert_array_equal(a[3], b[3])


def _bad(a, i, v):
    a = np.array(a, dtype=float)
    a[i] = v
    return a


@pytest.mark.parametrize(
    "params,kw,exc,match",
    [
        ({}, {"fn_cost": np.ones(119)}, ValueError, r"fn_cost must be a number or have one value per event \(120\)"),
        ({}, {"fp_cost": "5"}, TypeError, "fp_cost must be a real number, got '5'"),
        ({}, {"fn_cost": lambda a: _bad(a, 7, np.nan)}, ValueError, "fn_cost must be finite, got nan at position 7"),
        ({}, {"fp_cost": lambda a: _bad(a, 3, np.inf)}, ValueError, "fp_cost must be finite, got inf at position 3"),
        ({}, {"fn_cost": lambda a: _bad(a, 0, 0.0)}, ValueError, "fn_cost must be > 0.*got 0.0 at position 0"),
        ({}, {"fp_cost": lambda a: _bad(a, 119, -2.0)}, ValueError, "got -2.0 at position 119"),
        ({}, {"fn_cost": -1.0}, ValueError, "fn_cost must be > 0.*got -1.0"),
        ({"decide_on": "money"}, {}, ValueError, "decide_on must be 'score' or 'margin', got 'money'"),
        ({"response_method": "decision_function"}, {}, ValueError, "response_method='decision_function'"),
        ({"estimator": LinearSVC()}, {}, TypeError, "LinearSVC has no predict_proba"),
    ],
)
def test_bad_fit_input_raises_and_keeps_the_fitted_state(params, kw, exc, match):
    clf, X, y, amount, fee = _fitted()
    before = _state(clf)
    kw = {k: (v(amount if k == "fn_cost" else fee) if callable(v) else v) for k, v in kw.items()}
    clf.set_params(**params)
    with pytest.raises(exc, match=match):
        clf.fit(X, y, **kw)
    _same(_state(clf), before)
    clf.set_params(decide_on="margin", response_method="auto", estimator=LogisticRegression())
    assert clf.predict(X, fn_cost=amount, fp_cost=fee).shape == (120,)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"fp_cost": "fee"}, "fn_cost was given per event at fit"),
        ({"fn_cost": "amount"}, "fp_cost was given per event at fit"),
        ({"fn_cost": "short", "fp_cost": "fee"}, r"fn_cost must be a number or have one value per event \(120\)"),
        ({"fn_cost": "amount", "fp_cost": "nan5"}, "fp_cost must be finite, got nan at position 5"),
        ({"fn_cost": "zero9", "fp_cost": "fee"}, "got 0.0 at position 9"),
    ],
)
def test_bad_predict_costs_name_the_cost_and_position(kw, match):
    clf, X, _, amount, fee = _fitted()
    before = _state(clf)
    named = {"amount": amount, "fee": fee, "short": amount[:-1], "nan5": _bad(fee, 5, np.nan),
             "zero9": _bad(amount, 9, 0.0)}
    with pytest.raises(ValueError, match=match):
        clf.predict(X, **{k: named[v] for k, v in kw.items()})
    with pytest.raises(ValueError, match=match):
        clf.decision_scores(X, **{k: named[v] for k, v in kw.items()})
    _same(_state(clf), before)


def test_margin_mode_corrects_a_miscalibrated_model_where_the_bayes_rule_cannot():
    """A model whose log-odds are off by +3 (it flags far too much under the per-event Bayes rule):
    on the validation events THORS on margins never loses more than the Bayes rule (t = 0 is one
    of its choices); on new events from the same distribution it loses less."""
    rng = np.random.default_rng(11)
    n = 6_000
    X = rng.normal(size=(n, 2))
    logit = 1.5 * X[:, 0] - 4.0
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    amount = rng.lognormal(3.0, 1.0, size=n)
    fee = 5.0
    model = LogisticRegression().fit(X, y)
    model.intercept_ = model.intercept_ + 3.0  # miscalibrated by a constant in log-odds
    val, test = slice(0, n // 2), slice(n // 2, n)
    clf = ThorsThresholdClassifier(model, decide_on="margin", fp_cost=fee, cv="prefit", refit=False)
    clf.fit(X[val], y[val], fn_cost=amount[val])
    p = model.predict_proba(X)[:, 1]
    for part in (val, test):
        bayes = _money(y[part] == 1, cost_margins(p[part], amount[part], fee) > 0, amount[part], fee)
        thors = _money(y[part] == 1, clf.predict(X[part], fn_cost=amount[part]) == 1, amount[part], fee)
        if part is val:
            assert thors == pytest.approx(clf.result_.cost, rel=1e-12) and clf.result_.cost <= bayes
        else:
            assert thors < bayes
    assert clf.best_threshold_ > 0  # it learned to flag less than the Bayes rule on these scores
