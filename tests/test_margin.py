"""The cost margin: batch per-event costs and decide_on='margin' against a brute-force oracle in money,
MarginThors against the batch answer over its window, and bad input leaving state unchanged."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import money_oracle

from thors_stream import MarginThors, thors_threshold
from thors_stream.event_costs import thors_event_costs
from thors_stream.margin import PROBA_CLIP, cost_margin, cost_margins

# heavy ties: few probabilities (0 and 1 included, which clip) and few costs
PROBS = st.sampled_from([0.0, 0.01, 0.05, 0.2, 0.5, 0.8, 1.0])
FN = st.sampled_from([1.0, 2.0, 5.0, 40.0, 400.0])
FP = st.sampled_from([1.0, 5.0, 8.0])
EVENTS = st.lists(st.tuples(PROBS, st.booleans(), FN, FP, st.sampled_from([1.0, 2.0, 3.0])), min_size=1, max_size=25)




@settings(max_examples=80, deadline=None)
@given(EVENTS, st.booleans())
def test_margin_threshold_is_the_money_optimum(events, weighted):
    p, y, fn, fp, w = (list(c) for c in zip(*events))
    ws = w if weighted else [1.0] * len(p)
    m = [cost_margin(*e) for e in zip(p, fn, fp)]
    r = thors_threshold(p, y, fn_cost=fn, fp_cost=fp, sample_weight=ws if weighted else None, decide_on="margin")
    thr, best = money_oracle(m, y, fn, fp, ws)
    assert r.threshold == thr
    assert Fraction(r.cost) == best
    assert r.decide_on == "margin" and r.fn_cost == r.fp_cost == 1.0
    # deciding the validation events themselves reproduces the cost
    flagged = r.predict(p, fn_cost=fn, fp_cost=fp)
    lost = sum(f * v for f, v, yy, d in zip(fn, ws, y, flagged) if yy and not d)
    lost += sum(f * v for f, v, yy, d in zip(fp, ws, y, flagged) if not yy and d)
    assert lost == r.cost


@settings(max_examples=60, deadline=None)
@given(EVENTS)
def test_per_event_costs_on_scores_equal_event_costs(events):
    p, y, fn, fp, _ = (list(c) for c in zip(*events))
    r = thors_threshold(p, y, fn_cost=fn, fp_cost=fp)
    assert r.decide_on == "score"
    ref = thors_event_costs(p, y, fn_costs=fn, fp_costs=fp)
    assert (r.threshold, r.cost, r.k0, r.k1) == (ref.threshold, ref.cost, ref.k0, ref.k1)


def test_scalar_costs_margin_mode_is_elkan_shifted():
    """With one pair of costs the margin is a monotone map of p: the same events fall on each
    side as with the cut on p, and an empty-evidence cut of 0 is Elkan's threshold."""
    rng = np.random.default_rng(3)
    y = rng.random(400) < 0.3
    p = np.clip(rng.normal(0.3 + 0.3 * y, 0.2), 0.0, 1.0)
    on_p = thors_threshold(p, y, fn_cost=4, fp_cost=1)
    on_m = thors_threshold(p, y, fn_cost=4, fp_cost=1, decide_on="margin")
    assert on_m.cost == on_p.cost
    assert (on_m.predict(p, fn_cost=4, fp_cost=1) == on_p.predict(p)).all()
    assert cost_margin(1 / 5, 4, 1) == pytest.approx(0.0, abs=1e-15)


def test_scalar_and_array_margins_agree_to_the_bit():
    rng = np.random.default_rng(7)
    p = np.concatenate([rng.random(2000), [0.0, 1.0, PROBA_CLIP, 1 - PROBA_CLIP, 0.5]])
    fn = rng.lognormal(3, 2, p.size)
    fp = rng.lognormal(1, 1, p.size)
    arr = cost_margins(p, fn, fp)
    one = np.array([cost_margin(a, b, c) for a, b, c in zip(p.tolist(), fn.tolist(), fp.tolist())])
    assert np.array_equal(arr, one)
    assert np.isfinite(arr).all()
    assert cost_margin(0.0, 1, 1) == cost_margin(PROBA_CLIP / 2, 1, 1) == pytest.approx(-cost_margin(1.0, 1, 1),
                                                                                       rel=1e-15)
    assert cost_margin(1.0, 1, 1) == cost_margin(1 - PROBA_CLIP, 1, 1) == pytest.approx(27.7259, abs=1e-4)


@pytest.mark.parametrize("kw, match", [
    (dict(p=[0.2, 1.5], fn=[1.0, 1.0], fp=1.0), r"probabilities must lie in \[0, 1\], got 1.5 at position 1"),
    (dict(p=[0.2, float("nan")], fn=[1.0, 1.0], fp=1.0), r"nan at position 1"),
    (dict(p=[0.2, 0.3], fn=[1.0, 0.0], fp=1.0), r"fn_cost must be > 0 .*got 0.0 at position 1"),
    (dict(p=[0.2, 0.3], fn=[1.0, -3.0], fp=1.0), r"fn_cost .*-3.0 at position 1"),
    (dict(p=[0.2, 0.3], fn=[1.0, float("inf")], fp=1.0), r"fn_cost must be finite, got inf at position 1"),
    (dict(p=[0.2, 0.3], fn=1.0, fp=[2.0]), r"fp_cost must be a number or have one value per event \(2\)"),
    (dict(p=[0.2, 0.3], fn=1.0, fp=-1), r"fp_cost must be > 0 .*got -1"),
])
def test_bad_input_names_the_value(kw, match):
    with pytest.raises(ValueError, match=match):
        thors_threshold(kw["p"], [0, 1], fn_cost=kw["fn"], fp_cost=kw["fp"], decide_on="margin")


def test_modes_and_predict_refuse_what_they_would_ignore():
    r = thors_threshold([0.1, 0.9], [0, 1], fn_cost=[3.0, 3.0], fp_cost=1.0, decide_on="margin")
    with pytest.raises(ValueError, match="needs the new events' costs"):
        r.predict([0.5])
    with pytest.raises(ValueError, match="needs the event's costs"):
        r.predict_one(0.5)
    plain = thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="do not enter its decisions"):
        plain.predict([0.5], fn_cost=[1.0], fp_cost=1.0)
    with pytest.raises(ValueError, match="decide_on must be"):
        thors_threshold([0.1], [1], fn_cost=1, fp_cost=1, decide_on="money")
    with pytest.raises(ValueError, match="not cost_matrix"):
        thors_threshold([0.1], [1], cost_matrix=[[0, 1], [1, 0]], decide_on="margin")
    assert r.predict_one(0.5, fn_cost=3.0, fp_cost=1.0) == bool(r.predict([0.5], fn_cost=3.0, fp_cost=1.0)[0])


def test_margin_mode_with_neyman_pearson_and_prior():
    rng = np.random.default_rng(11)
    y = rng.random(3000) < 0.2
    p = np.clip(rng.normal(0.3 + 0.3 * y, 0.15), 0.0, 1.0)
    amount = rng.lognormal(4, 1, y.size)
    r = thors_threshold(p, y, fn_cost=amount, fp_cost=5.0, decide_on="margin", max_fpr=0.1, confidence=0.9)
    m = cost_margins(p, amount, 5.0)
    ref = thors_threshold(m, y, fn_cost=1, fp_cost=1, sample_weight=np.where(y, amount, 5.0), max_fpr=0.1,
                          confidence=0.9)
    assert (r.threshold, r.cost, r.decide_on) == (ref.threshold, ref.cost, "margin")


# ---------------------------------------------------------------- streaming
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(PROBS, st.booleans(), FN, FP), min_size=1, max_size=40), st.integers(1, 12))
def test_margin_thors_equals_batch_over_its_window(events, window):
    mt = MarginThors(window=window)
    for i, (p, y, fn, fp) in enumerate(events):
        mt.update(p, y, fn_cost=fn, fp_cost=fp)
        held = events[max(0, i + 1 - window):i + 1]
        hp, hy, hfn, hfp = (list(c) for c in zip(*held))
        thr, _ = money_oracle([cost_margin(*e) for e in zip(hp, hfn, hfp)], hy, hfn, hfp, [1.0] * len(held))
        assert mt.get() == thr


def test_margin_thors_batch_and_revert():
    rng = np.random.default_rng(5)
    n = 500
    y = rng.random(n) < 0.1
    p = np.clip(rng.normal(0.2 + 0.3 * y, 0.2), 0.0, 1.0)
    amount = rng.lognormal(3, 1.5, n)
    one, many = MarginThors(window=200), MarginThors(window=200)
    for a, b, c in zip(p.tolist(), y.tolist(), amount.tolist()):
        one.update(a, b, fn_cost=c, fp_cost=5.0)
    many.update_many(p, y, fn_cost=amount, fp_cost=5.0)
    assert one.get() == many.get() == thors_threshold(p[-200:], y[-200:], fn_cost=amount[-200:], fp_cost=5.0,
                                                      decide_on="margin").threshold
    before = one.get()
    one.update(0.3, True, fn_cost=50.0, fp_cost=5.0)
    one.revert(0.3, True, fn_cost=50.0, fp_cost=5.0)
    assert len(one) == 199 and one.get() == thors_threshold(
        p[-199:], y[-199:], fn_cost=amount[-199:], fp_cost=5.0, decide_on="margin").threshold
    assert isinstance(before, float)


@pytest.mark.parametrize("p, y, fn, fp, w, exc, match, match_many", [
    (1.2, 1, 5.0, 1.0, None, ValueError, r"probability must lie in \[0, 1\], got 1.2",
     r"probabilities must lie in \[0, 1\], got 1.2 at position 1"),
    (float("nan"), 1, 5.0, 1.0, None, ValueError, "probability must be finite, got nan",
     "probabilities must be finite, got nan at position 1"),
    (0.5, 2, 5.0, 1.0, None, ValueError, "label must be 0, 1, False or True, got 2",
     "ys must hold only 0/1/False/True, got 2 at position 1"),
    (0.5, 1, 0.0, 1.0, None, ValueError, "fn_cost must be > 0", "fn_cost must be > 0 .* at position 1"),
    (0.5, 1, "12", 1.0, None, TypeError, "fn_cost must be a real number, got '12'",
     "fn_cost must be an array of real numbers, got '12' at position 1"),
    (0.5, 0, 5.0, float("inf"), None, ValueError, "fp_cost must be finite, got inf",
     "fp_cost must be finite, got inf at position 1"),
    (0.5, 0, 5.0, 1.0, -2.0, ValueError, "weight must be finite and > 0, got -2.0",
     "ws must be finite and > 0, got -2.0 at position 1"),
])
def test_margin_thors_bad_input_changes_nothing(p, y, fn, fp, w, exc, match, match_many):
    mt = MarginThors(window=10)
    mt.update(0.2, 0, fn_cost=3.0, fp_cost=1.0)
    mt.update(0.7, 1, fn_cost=3.0, fp_cost=1.0)
    state = (mt.get(), len(mt), mt.thors.n_updates)
    with pytest.raises(exc, match=match):
        mt.update(p, y, fn_cost=fn, fp_cost=fp, w=w)
    with pytest.raises(exc, match=match_many):
        mt.update_many([0.1, p], [0, y], fn_cost=[3.0, fn], fp_cost=[1.0, fp], ws=None if w is None else [1.0, w])
    assert (mt.get(), len(mt), mt.thors.n_updates) == state


def test_equal_cost_ratios_give_equal_margins_and_tie():
    # log(fn) - log(fp) rounded twice: 2 / 1 and 200 / 100 gave margins ulps apart, and a cut between them
    p, y, fn, fp = [0.5, 0.5], [1, 0], [2.0, 200.0], [1.0, 100.0]
    m = cost_margins(p, fn, fp)
    assert m[0] == m[1] == cost_margin(0.5, 200.0, 100.0) == cost_margin(0.5, 2, 1)
    r = thors_threshold(p, y, fn_cost=fn, fp_cost=fp, decide_on="margin")
    assert r.cost == 2.0  # flag neither (the positive's 2) rather than both (the negative's 100)
    assert r.predict(p, fn_cost=fn, fp_cost=fp).tolist() == [False, False]
    assert cost_margin(0.2, 4.0, 1.0) == cost_margin(0.2, 400.0, 100.0) == 0.0  # exactly on the Bayes boundary


def test_a_ratio_beyond_the_float_range_takes_each_costs_log():
    fn, fp = 2.0**900, 2.0**-900  # the ratio 2**1800 overflows
    m = cost_margin(0.3, fn, fp)
    assert m == cost_margins([0.3], fn, fp)[0]
    assert m == pytest.approx(np.log(0.3 / 0.7) + 1800 * np.log(2.0), rel=1e-15)
    assert cost_margins([0.3], fp, fn)[0] == pytest.approx(np.log(0.3 / 0.7) - 1800 * np.log(2.0), rel=1e-15)


@pytest.mark.parametrize("p", [__import__("decimal").Decimal("1.00000000000000000001"), Fraction(-1, 10**400),
                               np.longdouble(1) + np.longdouble(2) ** -63])
def test_a_probability_just_outside_that_rounds_onto_an_end_is_refused(p):
    if isinstance(p, np.longdouble) and p == 1:  # (no long double wider than float64 here)
        pytest.skip("long double is float64 on this platform")
    with pytest.raises(ValueError, match=r"probability must lie in \[0, 1\]"):
        cost_margin(p, 1.0, 1.0)


def test_weight_times_cost_out_of_range_names_the_values_given():
    with pytest.raises(ValueError, match=r"sample_weight 1e-300 at position 1 times the cost 20.0 is below 2\*\*-960"):
        thors_threshold([0.1, 0.5, 0.9], [0, 1, 1], fn_cost=[10.0, 20.0, 30.0], fp_cost=5.0,
                        sample_weight=[1, 1e-300, 1], decide_on="margin")
    with pytest.raises(ValueError, match=r"sample_weight 1e\+288 at position 0 times the cost 50.0 exceeds 2\*\*960"):
        thors_threshold([0.1, 0.5], [0, 1], fn_cost=[1.0, 2.0], fp_cost=50.0, sample_weight=[1e288, 1.0])
