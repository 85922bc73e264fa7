"""Regression tests for the defects two adversarial reviews found on 2026-11-25 (each failed
before its fix): strided arrays refused by the compiled batch path, the segment functions
skipping the package's input rules, a selector with more windows than the compiled step
takes, checkpoint weights above the runtime's weight limit, ``n_updates`` at the int64
limit, and a window too large for the compiled core."""

import math

import numpy as np
import pytest
from test_checkpoint_hostile import forge, parse, refused

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends
from thors_stream.segments import pooled_threshold, segment_thresholds, thors_by_segment
from thors_stream.selection import WindowSelector

BACKENDS = available_backends()


# ---------------------------------------------------------------- strided batches
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("window", [None, 7])
def test_update_many_takes_strided_arrays(backend, window):
    """A strided float64 view (``a[::2]``, ``a[::-1]``, a column) is valid input; both
    backends take it and end where the contiguous copy leads."""
    rng = np.random.default_rng(3)
    base = np.round(rng.random((40, 2)), 2)
    labels = np.tile([0, 1, 1, 0], 5)
    weights = np.arange(1.0, 41.0)[::-2]
    got = StreamingThors(fn_cost=3, fp_cost=1, window=window, backend=backend)
    want = StreamingThors(fn_cost=3, fp_cost=1, window=window, backend=backend)
    for s in (base[::2, 0], base[::-1, 1][:20], base[:20, 1]):
        assert not s.flags.c_contiguous or s.base is not None
        got.update_many(s, labels, weights)
        want.update_many(np.ascontiguousarray(s), labels, np.ascontiguousarray(weights))
    assert (got.get(), got.cost, len(got)) == (want.get(), want.cost, len(want))
    assert [a.tolist() for a in got.held()] == [a.tolist() for a in want.held()]


# ---------------------------------------------------------------- segments: one input rule
BAD_SCORES = [
    (["0.1", "0.9", "0.5"], TypeError),
    ([True, False, True], TypeError),
    ([10**400, 1, 2], ValueError),
    ([0.1, math.nan, 0.3], ValueError),
]


@pytest.mark.parametrize(("scores", "error"), BAD_SCORES)
def test_segment_functions_refuse_what_thors_threshold_refuses(scores, error):
    y, seg = [0, 1, 1], ["a", "a", "a"]
    with pytest.raises(error):
        thors_threshold(scores, y, fn_cost=1, fp_cost=1)
    with pytest.raises(error):
        thors_by_segment(scores, y, seg, fn_cost=1, fp_cost=1)
    with pytest.raises(error):
        pooled_threshold(scores, y, [True, True, False], 0.5, fn_cost=1, fp_cost=1)
    with pytest.raises(error):
        segment_thresholds(scores, y, seg, fn_cost=1, fp_cost=1)


@pytest.mark.parametrize("y", [[0, 2, 1], ["0", "1", "1"], [0.5, 1, 0]])
def test_segment_functions_refuse_bad_labels(y):
    """``segment_thresholds`` used to turn a label 2 into a positive (``astype(bool)``)."""
    s, seg = [0.1, 0.5, 0.9], ["a", "a", "b"]
    for call in (lambda: thors_by_segment(s, y, seg, fn_cost=1, fp_cost=1),
                 lambda: segment_thresholds(s, y, seg, fn_cost=1, fp_cost=1),
                 lambda: pooled_threshold(s, y, [True, True, False], 0.5, fn_cost=1, fp_cost=1)):
        with pytest.raises(ValueError, match="y must hold only 0/1"):
            call()


def test_segment_functions_refuse_bad_weights_mask_and_pool_weight():
    s, y, seg = [0.1, 0.5, 0.9], [0, 1, 1], ["a", "a", "b"]
    for w in ([1.0, -1.0, 1.0], [1.0, math.inf, 1.0], ["1", "1", "1"]):
        with pytest.raises((ValueError, TypeError), match="sample_weight"):
            thors_by_segment(s, y, seg, fn_cost=1, fp_cost=1, sample_weight=w)
        with pytest.raises((ValueError, TypeError), match="sample_weight"):
            segment_thresholds(s, y, seg, fn_cost=1, fp_cost=1, sample_weight=w)
    with pytest.raises(ValueError, match="in_segment"):
        pooled_threshold(s, y, ["yes", "no", "no"], 0.5, fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="in_segment"):
        pooled_threshold(s, y, [2, 0, 1], 0.5, fn_cost=1, fp_cost=1)
    for lam in ("0.5", True, math.nan, -1.0):
        with pytest.raises((ValueError, TypeError), match="pool_weight"):
            pooled_threshold(s, y, [True, True, False], lam, fn_cost=1, fp_cost=1)
    # valid input still gives THORS's answer
    r = thors_by_segment(np.array(s), np.array(y, dtype=bool), seg, fn_cost=1, fp_cost=1)
    assert r["a"].threshold == thors_threshold(s[:2], y[:2], fn_cost=1, fp_cost=1).threshold


# ---------------------------------------------------------------- selector: many windows
def test_selector_with_more_windows_than_the_compiled_step_takes_works():
    """64 windows: the compiled step takes at most 63; the selector uses the Python step
    (it used to refuse every update) and agrees with a 64-window Python selector."""
    sel = WindowSelector(fn_cost=2, fp_cost=1, default_threshold=0.5, windows=list(range(1, 65)))
    ref = WindowSelector(fn_cost=2, fp_cost=1, default_threshold=0.5, windows=list(range(1, 65)))
    ref._fixed = None
    rng = np.random.default_rng(1)
    for s, y in zip(rng.random(200).tolist(), (rng.random(200) < 0.4).tolist()):
        sel.update(s, y)
        ref.update(s, y)
        assert sel.get() == ref.get()
    assert sel.n == 200 and sel.costs == ref.costs


# ---------------------------------------------------------------- checkpoints: weight limit
def test_checkpoint_with_weights_beyond_the_runtime_limit_is_refused(tmp_path):
    """A consistent file whose weights exceed what ``update`` accepts (w * cost > 2**960)
    made every cost infinite and the threshold wrong; it is refused, naming the field."""
    st = StreamingThors(fn_cost=2, fp_cost=2)
    st.update(0.2, 1, 3.0)
    st.update(0.8, 0, 3.0)
    good = tmp_path / "good.ckpt"
    st.save(good)
    header, arrays, _ = parse(good)
    arrays["w1"], arrays["w0"] = np.array([1.5e308, 0.0]), np.array([0.0, 1.6e308])
    arrays["ledger_w"] = np.array([1.5e308, 1.6e308])
    header["state"]["w1"], header["state"]["w0"] = 1.5e308, 1.6e308
    refused(forge(tmp_path / "huge.ckpt", header, arrays), "2**960")
    with pytest.raises(ValueError, match="2\\*\\*960"):
        StreamingThors(fn_cost=2, fp_cost=2).update(0.2, 1, 1.5e308)


def test_checkpoint_row_sums_of_many_large_events_still_load(tmp_path):
    """The limit is per event: a score holding several events at the limit loads."""
    big = 2.0**960 / 4
    st = StreamingThors(fn_cost=4, fp_cost=1)
    for _ in range(3):
        st.update(0.3, 1, big)
    st.update(0.6, 0, big)
    st.save(tmp_path / "big.ckpt")
    back = StreamingThors.load(tmp_path / "big.ckpt")
    assert (back.get(), back.cost) == (st.get(), st.cost) and math.isfinite(back.cost)


@pytest.mark.parametrize("field", ["queue_w", "late_w"])
def test_checkpoint_window_weights_beyond_the_limit_are_refused(tmp_path, field):
    kw = {"window": 10} if field == "queue_w" else {"period": 30.0}
    st = StreamingThors(fn_cost=2, fp_cost=1, **kw)
    for i, (s, y) in enumerate([(0.2, 1), (0.8, 0), (0.5, 1)]):
        st.update(s, y, 1.0, t=float(10 - i) if "period" in kw else None)
    good = tmp_path / "good.ckpt"
    st.save(good)
    header, arrays, _ = parse(good)
    assert arrays[field].size
    scale = 2.0**1000
    arrays[field] = arrays[field] * scale
    arrays["w1"], arrays["w0"] = arrays["w1"] * scale, arrays["w0"] * scale
    header["state"]["w1"] *= scale
    header["state"]["w0"] *= scale
    refused(forge(tmp_path / "huge.ckpt", header, arrays), "2**960")


# ---------------------------------------------------------------- n_updates and window at the limits
@pytest.mark.parametrize("backend", BACKENDS)
def test_n_updates_saturates_at_the_int64_limit(tmp_path, backend):
    """At 2**63 - 1 the count used to overflow: update_many raised after adding its batch,
    update wrapped to a negative count, and the next checkpoint did not load. The count
    now saturates; out-of-range values are refused when set or loaded."""
    top = 2**63 - 1
    st = StreamingThors(fn_cost=1, fp_cost=1, backend=backend)
    st.update(0.2, 1)
    for bad in (2**63, -1, True, 1.0):
        with pytest.raises(ValueError, match="n_updates"):
            st.n_updates = bad
    assert st.n_updates == 1
    st.n_updates = top - 1
    st.update_many([0.5, 0.6], [1, 0])
    assert st.n_updates == top and len(st) == 3
    st.update(0.1, 0)
    other = StreamingThors(fn_cost=1, fp_cost=1, backend=backend)
    other.update(0.9, 1)
    other.n_updates = top
    st.merge(other)
    assert st.n_updates == top and len(st) == 5
    st.save(tmp_path / "top.ckpt")
    back = StreamingThors.load(tmp_path / "top.ckpt")
    assert back.n_updates == top and (back.get(), back.cost) == (st.get(), st.cost)
    header, arrays, _ = parse(tmp_path / "top.ckpt")
    header["state"]["n_updates"] = 2**63
    refused(forge(tmp_path / "over.ckpt", header, arrays), "state.n_updates")


@pytest.mark.parametrize("window", [5, None])
def test_n_updates_saturates_in_the_compiled_fast_paths(window):
    if "c" not in BACKENDS:
        pytest.skip("compiled core not built")
    st = StreamingThors(fn_cost=1, fp_cost=1, window=window, backend="c")
    st.n_updates = 2**63 - 2
    for s in (0.1, 0.2, 0.3):
        st.update(s, 1)
    assert st.n_updates == 2**63 - 1
    sel = WindowSelector(fn_cost=2, fp_cost=1, default_threshold=0.5, windows=(3, 5))
    for e in sel.experts:
        e.n_updates = 2**63 - 1
    sel.update(0.4, 1)
    assert [e.n_updates for e in sel.experts] == [2**63 - 1] * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_window_too_large_is_a_value_error_on_every_backend(backend):
    with pytest.raises(ValueError, match="window"):
        StreamingThors(fn_cost=1, fp_cost=1, window=2**63, backend=backend)
    st = StreamingThors(fn_cost=1, fp_cost=1, window=2**62, backend=backend)
    st.update(0.3, 1)
    assert st.get() == -math.inf


# ================================================================ the edges (second review)
def _cli(argv, capsys):
    from thors_stream.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_exit_2(code, out, err, *needles):
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for n in needles:
        assert n in err, (n, err)


@pytest.fixture
def small_csv(tmp_path):
    p = tmp_path / "v.csv"
    p.write_text("score,label\n0.5,1\n0.2,0\n0.7,1\n0.1,0\n0.3,1\n0.6,0\n")
    return p


FIT = ["--score-col", "score", "--label-col", "label", "--fn-cost", "5", "--fp-cost", "1", "--min-per-class", "1"]


def test_deeply_nested_baseline_is_one_line_exit_2(tmp_path, small_csv, capsys):
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_exit_2(*_cli(["fit", small_csv, *FIT, "--baseline", bad], capsys), str(bad), "nested too deeply")


def test_baseline_with_a_huge_integer_is_one_line_exit_2(tmp_path, small_csv, capsys):
    import json

    rel = tmp_path / "rel.json"
    assert _cli(["fit", small_csv, *FIT, "--out", rel], capsys)[0] == 0
    doc = json.loads(rel.read_text())
    doc["global"]["threshold"] = 10**400
    bad = tmp_path / "huge.json"
    bad.write_text(json.dumps(doc))
    _one_line_exit_2(*_cli(["fit", small_csv, *FIT, "--baseline", bad], capsys), str(bad), "global.threshold",
                     "finite")


@pytest.mark.parametrize("cap", ["1e-320", "1e-16"])
def test_a_cap_too_small_for_any_sample_is_refused_at_once(small_csv, capsys, cap):
    _one_line_exit_2(*_cli(["fit", small_csv, *FIT, "--max-fpr", cap], capsys), "max_fpr", "2**53")
    with pytest.raises(ValueError, match="max_fnr"):
        thors_threshold([0.1, 0.9], [0, 1], fn_cost=1, fp_cost=1, max_fnr=float(cap))
    with pytest.raises(ValueError, match="max_fpr"):
        StreamingThors(fn_cost=1, fp_cost=1, max_fpr=float(cap))


def test_a_tiny_cap_answers_at_once_with_the_count_needed():
    """max_fpr=1e-12 used to loop ~1e8 times (1 - alpha rounded): the count is exact now."""
    from thors_stream import NPInfeasibleError
    from thors_stream.neyman_pearson import fpr_tail, min_class_size

    for alpha in (1e-6, 1e-9, 1e-12, 1e-15):
        n = min_class_size(alpha, 0.05)
        assert fpr_tail(n, n, alpha) <= 0.05 < fpr_tail(n - 1, n - 1, alpha)
        assert abs(n - math.log(0.05) / math.log1p(-alpha)) < 2
    for alpha in (1e-4, 1e-9, 1e-13):  # the tail at small alpha is exact to float precision
        for n in (10, 10**6, 10**9):
            assert fpr_tail(n, n, alpha) == pytest.approx(math.exp(n * math.log1p(-alpha)), rel=1e-12)
    with pytest.raises(NPInfeasibleError, match="2995732273553 negative"):
        thors_threshold([0.1, 0.9, 0.5], [0, 1, 0], fn_cost=1, fp_cost=1, max_fpr=1e-12)


def test_outputs_are_never_written_over_a_fifo_or_device_and_follow_symlinks(tmp_path, small_csv, capsys):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _one_line_exit_2(*_cli(["fit", small_csv, *FIT, "--out", fifo], capsys), str(fifo), "not a regular file")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still the FIFO
    st = StreamingThors(fn_cost=1, fp_cost=1)
    st.update(0.3, 1)
    with pytest.raises(ValueError, match="not a regular file"):
        st.save(fifo)
    with pytest.raises(ValueError, match="a directory"):
        st.save(tmp_path)
    # a symlink stays a link; the file it points to gets the new content
    real = tmp_path / "real.ckpt"
    st.save(real)
    link = tmp_path / "link.ckpt"
    link.symlink_to(real)
    st.update(0.8, 0)
    st.save(link)
    assert link.is_symlink() and len(StreamingThors.load(real)) == 2
    rel_real, rel_link = tmp_path / "rel.json", tmp_path / "rel-link.json"
    rel_real.write_text("{}")
    rel_link.symlink_to(rel_real)
    assert _cli(["fit", small_csv, *FIT, "--out", rel_link], capsys)[0] == 0
    assert rel_link.is_symlink() and '"threshold"' in rel_real.read_text()


def test_pos_label_learn_one_that_raises_changes_nothing():
    from river import naive_bayes

    from thors_stream import ThorsClassifier

    for bad in ({"w": -1.0}, {"w": math.nan}):
        m = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=5, fp_cost=1, pos_label="fraud", warm_up=0)
        assert m.predict_one({"a": 1.0}) is None
        with pytest.raises(ValueError):
            m.learn_one({"a": 1.0}, "legit", **bad)
        assert m.predict_one({"a": 1.0}) is None  # the negative label was not recorded
        m.learn_one({"a": 1.0}, "legit")
        assert m.predict_one({"a": 1.0}) in ("legit", "fraud")
    timed = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=5, fp_cost=1, pos_label="fraud", period=60.0,
                            warm_up=0)
    with pytest.raises(ValueError, match="t"):
        timed.learn_one({"a": 1.0}, "legit")  # no time
    assert timed.predict_one({"a": 1.0}) is None


def test_parquet_integer_scores_beyond_2_53_round_as_in_csv(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    big = 2**63 - 1
    p = tmp_path / "v.parquet"
    pq.write_table(pa.table({"score": pa.array([1, big, 3, 4], pa.int64()), "label": [0, 1, 1, 0]}), p)
    c = tmp_path / "v.csv"
    c.write_text(f"score,label\n1,0\n{big},1\n3,1\n4,0\n")
    outs = []
    for f in (p, c):
        code, out, err = _cli(["fit", f, *FIT], capsys)
        assert code == 0, err
        outs.append([line for line in out.replace(str(f), "FILE").splitlines() if " s, " not in line])  # no timings
    assert outs[0] == outs[1]


# ================================================================ third review: selector and batch
def test_python_selector_step_survives_a_candidate_of_weight_zero():
    """The Python step's mix loss took log(0) ('math domain error') once the best candidate's
    weight had underflowed to 0; both steps now shift by the least loss of positive weight."""
    for prior in (None, 0.5):  # compiled step, Python step
        sel = WindowSelector(fn_cost=1, fp_cost=1, default_threshold=0.5, windows=(1,), class_prior=prior)
        for _ in range(700):  # window 1 is wrong on every negative: its weight underflows to 0
            sel.update(0.9, 1)
            sel.update(0.1, 0)
        assert sel.probabilities()[0] == 0.0
        sel.update(0.3, 1, 1000.0)
        assert sel.costs == [700.0, 1000.0] and math.isfinite(sel.gap)


def test_equal_losses_leave_weights_and_gap_alone_in_both_steps():
    """When every candidate loses alike the compiled step's rounding made the gap 2e-16, so
    eta ~ 1e16 distorted the weights and the draw left the Python step's."""
    kw = dict(fn_cost=1, fp_cost=1, default_threshold=0.5, windows=(10, 20, 30, 40, 50, 60, 70), seed=1)
    fast, slow = WindowSelector(**kw), WindowSelector(**kw)
    slow._fixed = None
    prior = slow.probabilities()
    for e in [(0.9, 0), (0.1, 1)]:
        fast.update(*e)
        slow.update(*e)
    assert fast.gap == slow.gap == 0.0
    assert fast.probabilities() == pytest.approx(prior, rel=1e-12) and slow.probabilities() == pytest.approx(prior)
    assert fast.chosen == slow.chosen and fast.get() == slow.get()
    rng = np.random.default_rng(5)  # and on a long stream the two steps still agree
    for s, y in zip(rng.random(3000).tolist(), (rng.random(3000) < 0.3).tolist()):
        fast.update(s, y)
        slow.update(s, y)
        assert fast.chosen == slow.chosen
    assert fast.costs == pytest.approx(slow.costs, rel=1e-12) and fast.gap == pytest.approx(slow.gap, rel=1e-9)


def test_weighted_batch_is_exact_where_only_the_prefix_sums_are_representable():
    """Costs b * n0 + prefix round (2**53 + 5 is not a float64) although every prefix sum of
    fn * w1 - fp * w0 is exact: the batch path compared the rounded costs and returned 0.11
    (true cost 2**53 + 5) instead of 0.21 (2**53 + 4), which the stream returned."""
    from fractions import Fraction

    big = 2.0**53
    s, y, w = [0.5, 0.5, 0.11, 0.21, 0.21], [1, 0, 0, 1, 0], [big, big, 3.0, 4.0, 5.0]

    def true_cost(t):
        return (sum(Fraction(wi) for si, yi, wi in zip(s, y, w) if yi and si <= t)
                + sum(Fraction(wi) for si, yi, wi in zip(s, y, w) if not yi and si > t))

    r = thors_threshold(s, y, fn_cost=1, fp_cost=1, sample_weight=w)
    st = StreamingThors(fn_cost=1, fp_cost=1)
    st.update_many(s, y, w)
    best = min(true_cost(t) for t in [-math.inf, *s])
    assert r.threshold == st.get() == 0.21 and true_cost(r.threshold) == best


def test_event_costs_take_every_real_number_the_package_takes():
    """fn_costs=[1, Fraction(1, 3)] or a big int raised 'must be numbers, got dtype object'."""
    from fractions import Fraction

    from thors_stream.event_costs import event_cost_weights

    w = event_cost_weights([1, 0, 1], [1, Fraction(1, 3), 2**64], Fraction(3))
    assert w.tolist() == [1.0, 3.0, float(2**64)]
    for bad, err in (([1, "2", 3], TypeError), ([True, 1, 1], TypeError), ([1, math.nan, 1], ValueError),
                     ("x", TypeError), ([1, 2], ValueError)):
        with pytest.raises(err, match="fn_costs"):
            event_cost_weights([1, 0, 1], bad, 1.0)
