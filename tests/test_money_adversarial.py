"""Deciding in money, attacked: float64 edges of costs and probabilities (clipping ties included)
against a brute-force oracle in money, weight x cost products out of range, and interrupts that
must leave the wrappers as before or as after (never between)."""

from __future__ import annotations

import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from oracle import money_oracle

from thors_stream import MarginThors, thors_threshold
from thors_stream.margin import PROBA_CLIP, cost_margin

# p = 0, 2**-41 and PROBA_CLIP clip to the same margin (ties), as do 1 - 2**-53, 1 - PROBA_CLIP and 1
PROBS = [0.0, 2.0**-41, PROBA_CLIP, 5e-324, 1.0 - 2.0**-53, 1.0 - PROBA_CLIP, 1.0, 0.5, 1 / 3, 2 / 3, 0.2]


@pytest.mark.parametrize("base_fn, base_fp", [(1.0, 1.0), (2.0**-960, 2.0**-960), (2.0**900, 2.0**900),
                                              (2.0**-960, 2.0**-950), (2.0**940, 2.0**930)])
def test_margin_threshold_at_float64_edges_equals_themoney_oracle(base_fn, base_fp):
    rnd = random.Random(hash((base_fn, base_fp)) & 0xFFFF)
    fns = [base_fn * k for k in (1, 2, 3, 4)]
    fps = [base_fp * k for k in (1, 2, 4)]
    for _ in range(60):
        n = rnd.randint(1, 10)
        p = [rnd.choice(PROBS) for _ in range(n)]
        y = [rnd.random() < 0.5 for _ in range(n)]
        fn = [rnd.choice(fns) for _ in range(n)]
        fp = [rnd.choice(fps) for _ in range(n)]
        ws = [rnd.choice([1.0, 2.0, 3.0]) for _ in range(n)]
        m = [cost_margin(*e) for e in zip(p, fn, fp)]
        thr, best = money_oracle(m, y, fn, fp, ws)
        r = thors_threshold(p, y, fn_cost=fn, fp_cost=fp, sample_weight=ws, decide_on="margin")
        assert (r.threshold, Fraction(r.cost)) == (thr, best)
        one, many = MarginThors(window=None), MarginThors(window=None)
        for e in zip(p, y, fn, fp, ws):
            one.update(e[0], e[1], fn_cost=e[2], fp_cost=e[3], w=e[4])
        many.update_many(p, y, fn_cost=fn, fp_cost=fp, ws=ws)
        assert one.get() == many.get() == thr
        flagged = r.predict(p, fn_cost=fn, fp_cost=fp).tolist()
        assert flagged == [r.predict_one(a, fn_cost=b, fp_cost=c) for a, b, c in zip(p, fn, fp)]
        assert flagged == [mm > thr for mm in m]


@pytest.mark.parametrize("fn, ws, match", [
    ([2.0**960, 1.0], [2.0**100, 1.0], r"ws 1\.2676506002282294e\+30 at position 0 times the cost 9\.745.*e\+288 "
                                       r"exceeds 2\*\*960"),
    ([2.0**960, 1.0], [2.0, 1.0], r"ws 2\.0 at position 0 times the cost 9\.745.*e\+288 exceeds 2\*\*960"),
    ([1.0, 2.0**-960], [1.0, 0.5], r"ws 0\.5 at position 1 times the cost 1\.026.*e-289 is below 2\*\*-960"),
])
def test_margin_thors_update_many_names_the_weight_whose_product_with_the_cost_is_out_of_range(fn, ws, match):
    """The product of a valid weight and a valid cost out of range: named as given (not as an
    ``inf`` the caller never passed), no overflow warning, nothing learned."""
    mt = MarginThors(window=10)
    mt.update(0.3, 1, fn_cost=3.0, fp_cost=1.0)
    state = (mt.get(), len(mt), mt.thors.n_updates)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            mt.update_many([0.5, 0.5], [1, 1], fn_cost=fn, fp_cost=1.0, ws=ws)
    assert (mt.get(), len(mt), mt.thors.n_updates) == state


@pytest.mark.parametrize("fn, w, match", [
    (2.0**960, 2.0, r"^w 2\.0 times the cost 9\.745.*e\+288 exceeds 2\*\*960"),
    (2.0**-960, 0.5, r"^w 0\.5 times the cost 1\.026.*e-289 is below 2\*\*-960"),
    (1.0, 5e-324, r"^w 5e-324 times the cost 1\.0 is below 2\*\*-960"),
])
def test_margin_thors_update_names_w_and_the_cost_when_their_product_is_out_of_range(fn, w, match):
    mt = MarginThors(window=10)
    mt.update(0.3, 1, fn_cost=3.0, fp_cost=1.0)
    state = (mt.get(), len(mt), mt.thors.n_updates)
    with pytest.raises(ValueError, match=match):
        mt.update(0.5, 1, fn_cost=fn, fp_cost=1.0, w=w)
    assert (mt.get(), len(mt), mt.thors.n_updates) == state


# ---------------------------------------------------------------- river / scikit-learn (reported, not fixed here)
class _Model:
    """A river-like model whose learn_one can be made to raise."""

    def __init__(self) -> None:
        self.n, self.boom = 0, None

    def predict_proba_one(self, x):
        return {True: x["s"], False: 1.0 - x["s"]}

    def learn_one(self, x, y, **kw):
        if self.boom is not None:
            raise self.boom
        self.n += 1


def test_store_keeps_the_decision_when_the_models_learn_one_is_interrupted(tmp_path):
    pytest.importorskip("river")
    from thors_stream.river import ThorsClassifier

    tc = ThorsClassifier(_Model(), fn_cost="amount", fp_cost=5.0, warm_up=0, min_model_labels=0,
                         store=tmp_path / "pending.sqlite")
    try:
        tc.predict_one({"s": 0.3, "amount": 40.0}, key="tx-1")
        tc.classifier.boom = KeyboardInterrupt()
        with pytest.raises(KeyboardInterrupt):
            tc.learn_one({"s": 0.3}, True, key="tx-1")
        tc.classifier.boom = None
        assert tc.classifier.n == 0
        assert tc.n_pending == 1  # as before: the decision still waits for its label
        tc.learn_one({"s": 0.3}, True, key="tx-1")  # the retry learns it
        assert tc.n_pending == 0 and len(tc.thors) == 1
    finally:
        tc.close()


def test_interrupted_learn_one_does_not_change_the_negative_label_answered():
    pytest.importorskip("river")
    from thors_stream.river import ThorsClassifier

    tc = ThorsClassifier(_Model(), fn_cost="amount", fp_cost=5.0, warm_up=0, min_model_labels=0, pos_label="fraud")
    x = {"s": 0.01, "amount": 3.0}
    assert tc.predict_one(x) is None  # no negative label known yet
    tc.classifier.boom = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        tc.learn_one(x, "ok")
    assert tc.classifier.n == 0 and tc.n_model_labels == 0
    assert tc.predict_one(x) is None  # as before the call: nothing was learned


def test_sklearn_margin_fit_with_number_costs_predicts_with_them():
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    from thors_stream.sklearn import ThorsThresholdClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] + rng.normal(size=200) > 1).astype(int)
    at_fit = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", cv=3).fit(X, y, fn_cost=50.0,
                                                                                          fp_cost=5.0)
    built = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", fn_cost=50.0, fp_cost=5.0,
                                     cv=3).fit(X, y)
    assert at_fit.best_threshold_ == built.best_threshold_
    assert (at_fit.predict(X) == built.predict(X)).all()


@pytest.mark.parametrize("bad", ["0.5", True, None])
def test_a_probability_that_is_not_a_number_is_refused(bad):
    """A model answering a string, a bool or None as its probability is refused, naming it, not converted."""
    from thors_stream import ThorsClassifier

    class Odd:
        def predict_proba_one(self, x):
            return {True: bad, False: 0.5}

        def learn_one(self, x, y):
            pass

    m = ThorsClassifier(Odd(), fn_cost=5, fp_cost=1, warm_up=0)
    with pytest.raises(TypeError, match="the model's probability of the positive class must be a real number"):
        m.predict_one({"a": 1.0})
    with pytest.raises(TypeError, match="the model's probability"):
        m.learn_one({"a": 2.0}, True)
    assert len(m.thors) == 0
