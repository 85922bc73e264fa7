"""The `thors` command line: fit, replay, demo, and its input errors."""

import csv
import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from thors_stream import StreamingThors, thors_threshold
from thors_stream.cli import main
from thors_stream.io import InputError, read_events


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.random(n) < 0.2
    s = np.round(rng.normal(size=n) + 1.2 * y, 3)
    w = np.round(rng.lognormal(2, 1, n), 2)
    p = tmp_path / "v.csv"
    with open(p, "w") as f:
        f.write("id,score,label,amount,ts\n")
        for i in range(n):
            lab = ["0", "1", "false", "True"][int(y[i]) + 2 * (i % 2)]
            f.write(f"{i},{s[i]},{lab},{w[i]},{i // 3}\n")
    return p, s, y, w


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_fit_json_matches_library(data, capsys):
    p, s, y, w = data
    code, out, _ = run(["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "7",
                        "--fp-cost", "2", "--json", "--engine", "python"], capsys)
    assert code == 0
    d = json.loads(out)
    r = thors_threshold(s, y, fn_cost=7, fp_cost=2)
    assert d["threshold"] == r.threshold and d["cost"] == r.cost and d["rows"] == len(s)
    code, out, _ = run(["fit", str(p), "--score-col", "score", "--label-col", "label", "--weight-col", "amount",
                        "--fn-cost", "7", "--fp-cost", "2", "--json"], capsys)
    d = json.loads(out)
    r = thors_threshold(s, y, fn_cost=7, fp_cost=2, sample_weight=w)
    assert d["threshold"] == r.threshold and math.isclose(d["cost"], r.cost)


def test_fit_reports_the_library_bounds(data, capsys):
    p, s, y, _ = data
    base = ["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "7", "--fp-cost", "2"]
    code, out, _ = run([*base, "--json", "--confidence", "0.9", "--n-test", "250"], capsys)
    assert code == 0
    got = json.loads(out)["bounds"]
    b = thors_threshold(s, y, fn_cost=7, fp_cost=2).bounds(confidence=0.9, n_test=250)
    assert got["confidence"] == 0.9 and got["n_test"] == 250
    for k in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper", "cost_upper", "cost_upper_exact"):
        assert got[k] == getattr(b, k)
    assert (got["cost_interval_lower"], got["cost_interval_upper"]) == b.cost_interval[:2]
    code, out, _ = run([*base, "--json"], capsys)  # default n_test: the file's rows
    assert json.loads(out)["bounds"]["n_test"] == len(s)
    # weighted: rate bounds only, the cost bounds would be about unit costs
    code, out, _ = run([*base, "--weight-col", "amount", "--json"], capsys)
    got = json.loads(out)["bounds"]
    assert "fpr_upper" in got and "cost_upper" not in got
    code, out, _ = run([*base, "--weight-col", "amount"], capsys)
    assert "FNR bounds" in out and "no cost bound" in out
    code, out, _ = run(base, capsys)
    assert "FPR bounds" in out and f"{len(s):,} new events: expected cost in" in out


def test_fit_neyman_pearson(data, capsys):
    from thors_stream.neyman_pearson import min_class_size

    p, s, y, _ = data
    base = ["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "7", "--fp-cost", "2"]
    code, out, _ = run([*base, "--max-fpr", "0.05", "--confidence", "0.9", "--json"], capsys)
    assert code == 0
    want = thors_threshold(s, y, fn_cost=7, fp_cost=2, max_fpr=0.05, confidence=0.9)
    got = json.loads(out)
    assert got["threshold"] == want.threshold and got["max_fpr"] == 0.05
    assert want.threshold != thors_threshold(s, y, fn_cost=7, fp_cost=2).threshold  # the cap binds here
    code, out, _ = run([*base, "--max-fnr", "0.1"], capsys)
    assert code == 0 and "true FNR <= 0.1, with probability 95%" in out
    # too few positives for the guarantee: exit 2, the needed count in the message
    small = p.parent / "small.csv"
    small.write_text("score,label\n" + "".join(f"{i / 10},{int(i % 2)}\n" for i in range(20)))
    code, _, err = run(["fit", str(small), "--score-col", "score", "--label-col", "label", "--fn-cost", "1",
                        "--fp-cost", "1", "--max-fnr", "0.05"], capsys)
    assert code == 2 and str(min_class_size(0.05, 0.05)) in err


def test_fit_text_and_plot(data, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    p, *_ = data
    png = tmp_path / "cost.png"
    code, out, _ = run(["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "7",
                        "--fp-cost", "2", "--plot", str(png)], capsys)
    assert code == 0 and "threshold" in out and "FPR" in out
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_replay_trajectory_equals_streaming(data, capsys, tmp_path):
    p, s, y, _ = data
    out_csv = tmp_path / "traj.csv"
    code, _, err = run(["replay", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "7",
                        "--fp-cost", "2", "--window", "500", "--out", str(out_csv), "--every", "250",
                        "--no-progress"], capsys)
    assert code == 0 and "replayed 3,000 events" in err
    rows = list(csv.DictReader(open(out_csv)))
    assert [int(r["event"]) for r in rows] == list(range(250, 3001, 250))
    st = StreamingThors(fn_cost=7, fp_cost=2, window=500)
    for i in range(3000):
        st.update(float(s[i]), bool(y[i]))
        if (i + 1) % 250 == 0:
            r = rows[(i + 1) // 250 - 1]
            assert float(r["threshold"]) == st.get() and float(r["cost"]) == st.cost
            assert int(r["held"]) == min(i + 1, 500)


def test_replay_period_needs_time(data, capsys, tmp_path):
    p, *_ = data
    code, _, err = run(["replay", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "1",
                        "--fp-cost", "1", "--period", "60", "--out", str(tmp_path / "o.csv")], capsys)
    assert code == 2 and "--time-col" in err
    code, _, err = run(["replay", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "1",
                        "--fp-cost", "1", "--period", "60", "--time-col", "ts", "--out", str(tmp_path / "o.csv"),
                        "--no-progress"], capsys)
    assert code == 0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("score,label\n0.5,1\n0.3,x\n", "line 3: label must be 0/1/true/false, got 'x'"),
        ("score,label\n0.5,1\nabc,0\n", "line 3: score is not a number: 'abc'"),
        ("score,label\n0.5,1\n0.2,0\nnan,1\n", "line 4: score must be finite, got 'nan'"),
        ("score,label\n0.5,1\n0.2\n", "line 3: expected at least 2 fields, got 1"),
        ("score,label\n", "no data rows"),
        ("", "the file is empty"),
        ("scor,label\n0.5,1\n", "no column 'score'"),
    ],
)
@pytest.mark.parametrize("engine", ["python", "auto"])
def test_input_errors_name_the_line_exit_2_no_traceback(tmp_path, capsys, content, needle, engine):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    code, out, err = run(["fit", str(p), "--score-col", "score", "--label-col", "label", "--fn-cost", "1",
                          "--fp-cost", "1", "--engine", engine], capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err and out == ""


def test_weight_errors_and_missing_file(tmp_path, capsys):
    p = tmp_path / "w.csv"
    p.write_text("score,label,w\n0.5,1,2\n0.4,0,-1\n")
    with pytest.raises(InputError, match="line 3: weight must be > 0"):
        read_events(p, score_col="score", label_col="label", weight_col="w", engine="python")
    code, _, err = run(["fit", str(tmp_path / "nope.csv"), "--score-col", "s", "--label-col", "l",
                        "--fn-cost", "1", "--fp-cost", "1"], capsys)
    assert code == 2 and "no such file" in err


def test_console_script_runs_in_a_subprocess(data):
    p, *_ = data
    proc = subprocess.run(
        [sys.executable, "-m", "thors_stream.cli", "fit", str(p), "--score-col", "score", "--label-col", "nope",
         "--fn-cost", "1", "--fp-cost", "1"], capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 2 and "no column 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "thors_stream.cli", "fit", str(p), "--score-col", "score"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "required" in proc.stderr


def test_demo_short_run(capsys):
    code, out, _ = run(["demo", "--limit", "3000", "--every", "1000"], capsys)
    assert code == 0 and "THORS saved" in out and "over Elkan's cut 0.0099" in out
    from thors_stream.demo import run_demo

    totals = run_demo(limit=2000, every=1000, out=io.StringIO(), fn_cost=10.0, fp_cost=1.0)
    assert set(totals) >= {"thors", "cut_0.5", "elkan"} and totals["elkan"] != totals["cut_0.5"]


def test_parquet_and_pyarrow_csv(data, tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p, s, y, w = data
    table = pa.table({"score": s, "label": y, "amount": w})
    pq.write_table(table, tmp_path / "v.parquet")
    ev = read_events(tmp_path / "v.parquet", score_col="score", label_col="label", weight_col="amount")
    assert ev.scores.tolist() == s.tolist() and ev.labels.tolist() == y.tolist()
    ev2 = read_events(p, score_col="score", label_col="label", engine="pyarrow")
    assert ev2.scores.tolist() == s.tolist() and ev2.labels.tolist() == y.tolist()
    bad = pa.table({"score": np.array([0.1, np.nan]), "label": np.array([0, 1])})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="row 2: score must be finite"):
        read_events(tmp_path / "bad.parquet", score_col="score", label_col="label")
    pq.write_table(pa.table({"score": [0.1, 0.2], "label": [0, 3]}), tmp_path / "bad2.parquet")
    with pytest.raises(InputError, match="row 2: label"):
        read_events(tmp_path / "bad2.parquet", score_col="score", label_col="label")
