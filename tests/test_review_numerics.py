"""Regression tests for what an adversarial review of the numerics, readers and dask found on
2026-11-25 (afternoon); each failed before its fix."""

import decimal
import math
import re

import numpy as np
import pytest

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends
from thors_stream.bounds import MAX_N_TEST
from thors_stream.cli import main
from thors_stream.metrics import Cost
from thors_stream.multiclass import fit_exact, fit_sequential
from thors_stream.planner import required_validation_size

BACKENDS = available_backends()


# ---------------------------------------------------------------- argmin over prefix sums
def test_unweighted_and_neyman_pearson_are_exact_where_only_prefix_sums_are():
    """fn = 2**53, fp = 2**53 + 2: every per-score sum fn*w1 - fp*w0 and every total is
    representable, the absolute costs b*n0 + prefix are not all; the exact optimum is 1.0
    (cost 2**54 against 2**54 + 2 at 0.0). The unweighted batch path and the Neyman-Pearson
    row path compared absolute costs and returned 0.0."""
    s, y = [0.0, 0.0, 1.0, 1.0], [0, 1, 0, 1]
    fn, fp = 2.0**53, 2.0**53 + 2
    assert thors_threshold(s, y, fn_cost=fn, fp_cost=fp).threshold == 1.0
    assert thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=[1] * 4).threshold == 1.0
    assert thors_threshold(s, y, fn_cost=fn, fp_cost=fp, max_fpr=0.999, confidence=0.5).threshold == 1.0
    for be in BACKENDS:
        st = StreamingThors(fn_cost=fn, fp_cost=fp, max_fpr=0.999, confidence=0.5, backend=be)
        st.update_many(s, y)
        assert st.get() == st.result().threshold == 1.0
        assert st.result().cost == 2.0**54


# ---------------------------------------------------------------- time windows
@pytest.mark.parametrize("backend", BACKENDS)
def test_period_below_an_ulp_of_the_times_still_holds_the_events(backend):
    """t - period rounded to t at nanosecond epoch times (1.7e18, period 100): the event
    expired as it arrived."""
    st = StreamingThors(fn_cost=1, fp_cost=1, period=100, backend=backend)
    st.update(0.5, 1, t=1.7e18)
    st.update(0.7, 0, t=1.7e18)
    assert len(st) == 2
    st.update(0.6, 0, t=1.7e18 - 256)  # a late label 256 s old: outside the period, not held
    assert len(st) == 2
    st.update(0.6, 0, t=1.7e18 + 256)  # the newest moves 256 s on: the first two expire
    assert len(st) == 1
    many = StreamingThors(fn_cost=1, fp_cost=1, period=1, backend=backend)
    many.update_many([0.5, 0.7], [1, 0], ts=[1e17, 1e17])
    assert len(many) == 2


# ---------------------------------------------------------------- multiclass inputs
@pytest.mark.parametrize("fit", [fit_sequential, fit_exact])
@pytest.mark.parametrize("kw,exc,match", [
    # an event's cost beyond 2**960: refused before the fit (its totals would overflow to inf)
    ({"cost_matrix": [[0, 1e300], [1e300, 0]]}, ValueError, r"cost_matrix: event 0's cost of predicting class 1 .*"
                                                            r"C\[0\]\[1\] = 1e\+300\) is beyond 2\*\*960"),
    ({"cost_matrix": [[-1e308, 1e308], [1e308, -1e308]]}, ValueError, "cost_matrix: event 0's cost of predicting"),
    # costs within the limit whose difference is not (opposite signs)
    ({"cost_matrix": [[-9e288, 9e288], [9e288, -9e288]]}, ValueError, r"cost_matrix: event 0's stake .* is "
                                                                      r"-?1\.8e\+289, beyond 2\*\*960"),
    ({"scores": [["0.9", "0.1"], ["0.2", "0.8"], ["0.6", "0.4"]]}, TypeError, "scores must be an array of real"),
    ({"cost_matrix": [["0", "1"], ["1", "0"]]}, TypeError, "cost_matrix must be an array of real"),
    ({"scores": [[10**400, 0.1], [0.2, 0.8], [0.6, 0.4]]}, ValueError, "401 digits"),
])
def test_multiclass_inputs_follow_the_package_rules(fit, kw, exc, match):
    args = {"scores": [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], "y": [0, 1, 0], "cost_matrix": [[0, 1], [1, 0]], **kw}
    with pytest.raises(exc, match=match):
        fit(**args)


S3 = [[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8]]


@pytest.mark.parametrize("fit", [fit_sequential, fit_exact])
@pytest.mark.parametrize("kw,match", [
    # three classes: fit_exact's last stages are swept through a StreamingThors (its own
    # error used to name an internal array, "ws")
    # (class 2's row: predicting 1 gains 9e288, predicting 2 costs 9e288; each within the limit)
    ({"cost_matrix": [[0, 1, 1], [1, 0, 1], [0, -9e288, 9e288]]},
     r"event \d's stake .* beyond 2\*\*960 \(MAX_WEIGHTED_COST\)"),
    # a stake below 2**-960 used to reach binary THORS as a weight and be refused under an
    # internal name, or (fit_exact) not at all
    ({"sample_weight": [1, 2.0**-1000, 1, 1]},
     r"event 1's stake .* \(weight 9\.33\d+e-302 times -?1\.0\), below 2\*\*-960 \(MIN_WEIGHTED_COST\)"),
    ({"sample_weight": [1, 1, 1, 2.0**-1000]},
     r"event 3's stake .* below 2\*\*-960 \(MIN_WEIGHTED_COST\)"),
])
def test_multiclass_stakes_outside_the_limits_name_the_event(fit, kw, match):
    """Both limits, both fits, three classes; the event is numbered as the caller numbered it
    (the third case reaches only later stages, on a subset of the events)."""
    args = {"scores": S3, "y": [0, 1, 2, 2], "cost_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]],
            "order": [0, 1, 2], **kw}
    with pytest.raises(ValueError, match=match):
        fit(**args)


@pytest.mark.parametrize("C,where", [
    ([[2**53 + 1, 2**53], [1, 0]], "[0][0]"),  # both round to 2**53: their difference would be 0, not 1
    (np.array([[0, 1], [-(2**60) - 1, 0]], dtype=np.int64), "[1][0]"),
    (np.array([[0, 2**64 - 1], [1, 0]], dtype=np.uint64), "[0][1]"),
    ([[0, 10**30 + 1], [1, 0]], "[0][1]"),  # a Python int beyond int64
])
def test_multiclass_integer_costs_must_be_exact(C, where):
    """Integer costs are differenced: one that float64 cannot hold exactly is refused, named."""
    for fit in (fit_sequential, fit_exact):
        pattern = rf"cost_matrix entry -?\d+ at {re.escape(where)} is not exactly a float64"
        with pytest.raises(ValueError, match=pattern):
            fit([[0.9, 0.1], [0.2, 0.8]], [0, 1], C)
    # exactly representable integers, however large, are taken
    fit_exact([[0.9, 0.1], [0.2, 0.8]], [0, 1], [[0, 2**60], [2**53, 0]])


@pytest.mark.parametrize("fit", [fit_sequential, fit_exact])
def test_multiclass_event_costs_beyond_the_limit_are_refused(fit):
    """A weight times a cost beyond 2**960 made every total inf: fit_exact returned no
    thresholds at all (an empty tuple for three classes) and cost inf, fit_sequential -inf
    thresholds and cost inf. Now both refuse, naming the event, class and entry."""
    C = [[1e100, 1e100, 1e100]] * 3
    with pytest.raises(ValueError, match=r"event 0's cost of predicting class 0 \(its weight 1e\+280 times "
                                         r"C\[0\]\[0\] = 1e\+100\) is beyond 2\*\*960"):
        fit(S3, [0, 1, 2, 2], C, order=[0, 1, 2], sample_weight=[1e280] * 4)
    # at the limit it is taken, and the fit has one threshold per stage
    r = fit(S3, [0, 1, 2, 2], [[0, 1, 1], [1, 0, 1], [1, 1, 0]], order=[0, 1, 2], sample_weight=[2.0**960] * 4)
    assert len(r.thresholds) == 2 and math.isfinite(r.cost)


def test_empirical_cost_beyond_the_limit_is_refused():
    from thors_stream.multiclass import empirical_cost

    with pytest.raises(ValueError, match=r"event 1's cost of predicting class 0 .* C\[1\]\[0\] = 1e\+300"):
        empirical_cost([1, 0], [1, 1], [[0, 1], [1e300, 0]])
    assert empirical_cost([1, 0], [1, 1], [[0, 1], [2.0**960, 0]]) == 2.0**960


def test_multiclass_stake_limit_is_inclusive():
    """A stake of exactly 2**-960 is taken, the next float below it is refused (both fits)."""
    import math

    C = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    for fit in (fit_sequential, fit_exact):
        fit(S3, [0, 1, 2, 2], C, order=[0, 1, 2], sample_weight=[1, 2.0**-960, 1, 1])
        with pytest.raises(ValueError, match="event 1's stake"):
            fit(S3, [0, 1, 2, 2], C, order=[0, 1, 2], sample_weight=[1, math.nextafter(2.0**-960, 0), 1, 1])


# ---------------------------------------------------------------- Parquet
def test_parquet_duplicate_column_is_a_clear_error(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from thors_stream.io import InputError, read_events

    t = pa.Table.from_arrays([pa.array([0.1, 0.2]), pa.array([1, 0]), pa.array([0.9, 0.8])],
                             names=["score", "label", "score"])
    p = tmp_path / "dup.parquet"
    pq.write_table(t, p)
    with pytest.raises(InputError, match="'score' appears 2 times"):
        read_events(p, score_col="score", label_col="label")
    code = main(["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "1", "--fp-cost", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "appears 2 times" in err


def test_parquet_decimals_read_as_the_csv_reader_reads_them(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from thors_stream.io import read_events

    vals = [f"0.{i:03d}" for i in range(1000)]
    labels = [i % 2 for i in range(1000)]
    (tmp_path / "d.csv").write_text("score,label\n" + "".join(f"{v},{l}\n" for v, l in zip(vals, labels)))
    pq.write_table(pa.table({"score": pa.array([decimal.Decimal(v) for v in vals], pa.decimal128(6, 3)),
                             "label": labels}), tmp_path / "d.parquet")
    csv = read_events(tmp_path / "d.csv", score_col="score", label_col="label").scores
    par = read_events(tmp_path / "d.parquet", score_col="score", label_col="label").scores
    assert par.tolist() == csv.tolist() == [float(v) for v in vals]


# ---------------------------------------------------------------- dask
def test_dask_refuses_weights_times_costs_beyond_the_limit_and_string_segment_scores():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dask

    from thors_stream.dask import thors_threshold as dask_threshold
    from thors_stream.dask import thors_threshold_by_segment

    with dask.config.set(scheduler="synchronous"):
        df = dd.from_pandas(pd.DataFrame({"s": [0.1, 0.9], "y": [0, 1], "w": [1e200, 1.0]}), npartitions=1)
        with pytest.raises(ValueError, match=r"column 'w' \(partition 0\) 1e\+200 .* exceeds 2\*\*960"):
            dask_threshold(df, score_col="s", label_col="y", weight_col="w", fn_cost=1e200, fp_cost=1)
        seg = dd.from_pandas(pd.DataFrame({"s": ["0.1", "0.9"], "y": [0, 1], "g": ["a", "a"]}), npartitions=1)
        with pytest.raises(TypeError, match=r"'0\.1'"):
            thors_threshold_by_segment(seg, score_col="s", label_col="y", segment_col="g", fn_cost=1, fp_cost=1)


# ---------------------------------------------------------------- bounds, planner, metric, CLI
@pytest.mark.parametrize("call,match", [
    (lambda r: r.bounds(1e-17), "at least 2\\*\\*-53"),
    (lambda r: r.bounds(0.95, n_test=10**20), "at most 2\\*\\*53"),
])
def test_bounds_arguments_name_the_bad_value(call, match):
    r = thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], fn_cost=5, fp_cost=1)
    with pytest.raises(ValueError, match=match):
        call(r)


@pytest.mark.parametrize("kw,match", [
    ({"max_size": 10**30}, "max_size must be an integer from 2 to 2\\*\\*53, got 1000"),
    ({"confidence": 1e-300}, "confidence must be at least 2\\*\\*-53"),
    ({"multiple": 10**400}, "multiple must be a number > 1"),
    ({"fn_cost": 5e-324, "fp_cost": 5e-324}, "fn_cost must be at least 2\\*\\*-960"),
])
def test_planner_arguments_name_the_bad_value(kw, match):
    args = {"fpr": 0.2, "fnr": 0.1, "class_prior": 0.3, "fn_cost": 5, "fp_cost": 1, "multiple": 1.2, **kw}
    with pytest.raises(ValueError, match=match):
        required_validation_size(**args)
    assert MAX_N_TEST == 2**53


def test_cost_metric_refuses_weight_times_cost_beyond_the_limit():
    m = Cost(fn_cost=2.0**960, fp_cost=1)
    with pytest.raises(ValueError, match="exceeds 2\\*\\*960"):
        m.update(1, 0, w=2.0**960)
    assert m.total == 0.0


def test_cli_text_prints_the_threshold_exactly(tmp_path, capsys):
    p = tmp_path / "prec.csv"
    p.write_text("score,label\n0.99999999999,0\n0.999999999995,1\n0.5,0\n0.6,0\n")
    code = main(["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "1", "--fp-cost", "1",
                 "--min-per-class", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "threshold     0.99999999999 " in out
    assert not math.isnan(float(out.split("threshold")[1].split()[0]))


# ---------------------------------------------------------------- CSV syntax
ENGINES = ["python", "pyarrow"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("text", ["0_5", "\u0661", "1_000.5"])
def test_csv_numbers_in_python_only_syntax_are_refused_by_both_readers(tmp_path, engine, text):
    pytest.importorskip("pyarrow")
    from thors_stream.io import InputError, read_events

    p = tmp_path / "n.csv"
    p.write_text(f"score,label\n0.5,1\n{text},0\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 3: score is not a number"):
        read_events(p, score_col="score", label_col="label", engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_csv_row_with_fewer_fields_than_the_header_is_refused(tmp_path, engine):
    pytest.importorskip("pyarrow")
    from thors_stream.io import InputError, read_events

    p = tmp_path / "r.csv"
    p.write_text("score,label,x\n0.5,1\n0.2,0,a\n")
    with pytest.raises(InputError, match="line 2"):
        read_events(p, score_col="score", label_col="label", engine=engine)


@pytest.mark.parametrize("backend", BACKENDS)
def test_period_must_be_a_duration_not_a_moment(backend):
    import datetime as dt

    for moment in (dt.datetime(2024, 1, 1), np.datetime64("2024-01-01")):
        with pytest.raises(TypeError, match="period must be a duration"):
            StreamingThors(fn_cost=1, fp_cost=1, period=moment, backend=backend)
    assert StreamingThors(fn_cost=1, fp_cost=1, period=dt.timedelta(hours=1), backend=backend).period is not None


def test_csv_field_limit_does_not_follow_the_process_wide_setting(tmp_path):
    import csv

    from thors_stream.io import read_events

    p = tmp_path / "lim.csv"
    p.write_text("score,label,x\n0.5,1," + "a" * 50 + "\n0.2,0,b\n")
    old = csv.field_size_limit(10)
    try:
        assert read_events(p, score_col="score", label_col="label", engine="python").scores.tolist() == [0.5, 0.2]
        assert csv.field_size_limit() == 10  # put back
    finally:
        csv.field_size_limit(old)


def test_bayes_predict_refuses_expected_costs_beyond_float64():
    """Scores 1e10 and 2e10 against costs 1e300: class 0's expected cost 3e310 and class 1's
    2e310 both overflowed to inf, and argmin picked class 0 (the first inf) instead of 1,
    with only a RuntimeWarning. Now the row and class are named."""
    from thors_stream.multiclass import bayes_predict

    with pytest.raises(ValueError, match=r"expected cost of class 0 at row 1 .* overflows float64"):
        bayes_predict([[0.5, 0.5], [1e10, 2e10]], [[1e300, 2e300], [1e300, 0]])
    with pytest.raises(ValueError, match=r"class 0 at row 0"):  # -inf against a finite cost
        bayes_predict([[1.0, 1.0]], [[-1.7e308, 1e308], [-1.7e308, -1e308]])
    # within range, however large, the decision is the exact one
    assert bayes_predict([[1e7, 2e7]], [[1e300, 2e300], [1e300, 0]]).tolist() == [1]
    assert bayes_predict([[0.5, 0.5]], [[-1e308, 1e308], [1e308, -1.7e308]]).tolist() == [1]
