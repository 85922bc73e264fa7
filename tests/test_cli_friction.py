"""Issue 14: the CLI friction items (stdin/stdout, pipes, --version, -m, progress bar, durations,
one label rule, Parquet by content, the replay CSV's columns and numbers, the time axis)."""

import csv
import io
import math
import subprocess
import sys

import numpy as np
import pytest

import thors_stream
from thors_stream import StreamingThors
from thors_stream.cli import HeldRates, _progress, main, parse_duration
from thors_stream.io import InputError, read_events

COLS = ["--score-col", "score", "--label-col", "label"]
COSTS = ["--fn-cost", "5", "--fp-cost", "1"]
ENGINES = ["python", "pyarrow"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def thors(*args, stdin=None, **kw):
    """``python -m thors_stream ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "thors_stream", *args], input=stdin, capture_output=True,
                          timeout=120, check=False, **kw)


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(1)
    n = 2000
    y = rng.random(n) < 0.25
    s = np.round(rng.normal(size=n) + 1.3 * y, 3)
    w = np.round(rng.lognormal(1, 1, n), 2)
    p = tmp_path / "v.csv"
    with open(p, "w") as f:
        f.write("score,label,amount,ts\n")
        for i in range(n):
            f.write(f"{s[i]},{int(y[i])},{w[i]},{1_700_000_000 + 60 * i}\n")
    return p, s, y, w


# ----------------------------------------------------------------- stdin, stdout, pipes
def test_dash_reads_standard_input_csv_and_parquet(data, tmp_path, capsys):
    p, *_ = data
    want = run(["fit", str(p), *COLS, *COSTS, "--json"], capsys)[1]
    want_thr = want.split(",")[0]
    for engine in ("python", "auto"):
        proc = thors("fit", "-", *COLS, *COSTS, "--json", "--engine", engine, stdin=p.read_bytes())
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.decode().split(",")[0] == want_thr
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    ev = read_events(p, score_col="score", label_col="label")
    pq.write_table(pa.table({"score": ev.scores, "label": ev.labels}), buf)
    proc = thors("fit", "-", *COLS, *COSTS, "--json", stdin=buf.getvalue())
    assert proc.returncode == 0 and proc.stdout.decode().split(",")[0] == want_thr
    proc = thors("fit", "-", *COLS, *COSTS, stdin=b"score,label\n0.5,maybe\n")
    assert proc.returncode == 2 and b"<stdin> line 2: label must be 0/1/true/false" in proc.stderr


def test_out_dash_writes_the_trajectory_to_standard_output(data, tmp_path, capsys):
    p, *_ = data
    code, out, err = run(["replay", str(p), *COLS, *COSTS, "--window", "100", "--out", "-", "--every", "100"],
                         capsys)
    assert code == 0 and "written to standard output" in err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 20 and rows[-1]["event"] == "2000"
    assert not (tmp_path / "-").exists()
    file_out = tmp_path / "o.csv"
    run(["replay", str(p), *COLS, *COSTS, "--window", "100", "--out", str(file_out), "--every", "100"], capsys)
    assert file_out.read_text() == out


def test_piping_into_head_is_quiet_exit_0(data):
    p, *_ = data
    for argv in (["replay", str(p), *COLS, *COSTS, "--window", "100", "--out", "-"],
                 ["demo", "--limit", "20000", "--every", "1"]):
        proc = subprocess.Popen([sys.executable, "-m", "thors_stream", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        first = proc.stdout.readline()
        proc.stdout.close()  # what `| head -1` does
        err = proc.stderr.read()
        proc.stderr.close()
        assert proc.wait(timeout=120) == 0, err
        assert first and err == b"", err
    proc = subprocess.run(f"{sys.executable} -m thors_stream replay {p} --score-col score --label-col label "
                          "--fn-cost 5 --fp-cost 1 --window 100 --out - | head -3; exit ${PIPESTATUS[0]}",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and proc.stderr == "" and len(proc.stdout.splitlines()) == 3


# ----------------------------------------------------------------- --version, -m
def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"thors {thors_stream.__version__}"
    proc = thors("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == out.strip()


def test_python_dash_m_thors_stream(data):
    p, *_ = data
    proc = thors("fit", str(p), *COLS, *COSTS)
    assert proc.returncode == 0 and b"threshold" in proc.stdout
    proc = thors("fit", str(p), *COLS)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and b"required" in proc.stderr
    proc = thors()
    assert proc.returncode == 2 and b"usage" not in proc.stderr and b"--help" in proc.stderr


# ----------------------------------------------------------------- progress bar
def test_progress_bar_only_when_stderr_is_a_terminal(data, tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    p, *_ = data
    proc = thors("replay", str(p), *COLS, *COSTS, "--window", "100", "--out", str(tmp_path / "o.csv"))
    assert proc.returncode == 0 and proc.stderr.count(b"\n") == 1 and b"\r" not in proc.stderr
    assert b"ev/s" not in proc.stderr

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    bar = _progress(10, True)
    assert bar is not None
    bar.close()
    assert _progress(10, False) is None
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress(10, True) is None


# ----------------------------------------------------------------- durations
def test_time_options_accept_units(data, tmp_path, capsys):
    assert [parse_duration(t) for t in ("1d", "30d", "12h", "90m", "45s", "45", "2w", "1.5H")] == [
        86400.0, 2592000.0, 43200.0, 5400.0, 45.0, 45.0, 1209600.0, 5400.0]
    p, *_ = data
    outs = []
    for period in ("1h", "60m", "3600"):
        out = tmp_path / f"o{period}.csv"
        code, _, err = run(["replay", str(p), *COLS, *COSTS, "--period", period, "--time-col", "ts",
                            "--out", str(out)], capsys)
        assert code == 0, err
        outs.append(out.read_text())
    assert outs[0] == outs[1] == outs[2]
    assert max(int(r["held"]) for r in csv.DictReader(io.StringIO(outs[0]))) == 60
    for bad in ("1x", "0d", "-1h", "d", "inf", "nan", ""):
        code, out, err = run(["replay", str(p), *COLS, *COSTS, "--period", bad, "--time-col", "ts",
                              "--out", str(tmp_path / "o.csv")], capsys)
        assert code == 2 and "--period" in err and err.count("\n") == 1, (bad, err)


# ----------------------------------------------------------------- one label rule
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("label", ["yes", "no", "t", "f", "y", "0.5", "1.5", "1e0", "2", "", "TRUEISH", "-1"])
def test_labels_other_than_0_1_true_false_are_refused(tmp_path, capsys, engine, label):
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    p = tmp_path / "l.csv"
    p.write_text(f"score,label\n0.5,1\n0.2,0\n0.4,{label}\n")
    code, out, err = run(["fit", str(p), *COLS, *COSTS, "--engine", engine], capsys)
    assert code == 2 and out == "" and f"{p} line 4: label must be 0/1/true/false, got {label!r}" in err


@pytest.mark.parametrize("engine", ENGINES)
def test_labels_0_1_true_false_any_case_are_accepted(tmp_path, engine):
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    p = tmp_path / "l.csv"
    p.write_text("score,label\n0.1,0\n0.2,1\n0.3,true\n0.4,FALSE\n0.5,True\n0.6, fAlSe \n")
    ev = read_events(p, score_col="score", label_col="label", engine=engine)
    assert ev.labels.tolist() == [False, True, True, False, True, False]


def test_help_states_the_label_rule(capsys):
    code, out, _ = run(["fit", "--help"], capsys)
    assert code == 0 and "exactly 0, 1, true or false" in " ".join(out.split())


# ----------------------------------------------------------------- Parquet by content
def test_parquet_is_detected_by_its_magic_bytes(data, tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    _, s, y, _ = data
    noext = tmp_path / "export_2024"
    pq.write_table(pa.table({"score": s, "label": y}), noext)
    ev = read_events(noext, score_col="score", label_col="label")
    assert ev.scores.tolist() == s.tolist() and ev.labels.tolist() == y.tolist()
    code, out, _ = run(["fit", str(noext), *COLS, *COSTS], capsys)
    assert code == 0 and "threshold" in out
    fake = tmp_path / "really_csv.parquet"
    fake.write_text("score,label\n0.5,1\n")
    with pytest.raises(InputError, match="not a Parquet file"):
        read_events(fake, score_col="score", label_col="label")
    misnamed = tmp_path / "scores.csv"  # a Parquet file named .csv is still Parquet
    pq.write_table(pa.table({"score": s, "label": y}), misnamed)
    assert read_events(misnamed, score_col="score", label_col="label", engine="python").scores.tolist() == s.tolist()


# ----------------------------------------------------------------- the replay CSV
def test_replay_csv_has_time_fpr_fnr_and_no_float_noise(tmp_path, capsys):
    p = tmp_path / "noise.csv"
    p.write_text("score,label,w,ts\n0.5,1,0.1,2024-01-01T00:00:00\n0.6,1,0.2,2024-01-01T00:01:00\n"
                 "0.1,0,853.12,2024-01-01T00:02:00\n0.7,0,0.3,2024-01-01T00:03:00\n")
    out = tmp_path / "o.csv"
    code, _, err = run(["replay", str(p), *COLS, "--weight-col", "w", "--fn-cost", "1", "--fp-cost", "1",
                        "--period", "1d", "--time-col", "ts", "--out", str(out)], capsys)
    assert code == 0, err
    text = out.read_text()
    assert text.splitlines()[0] == "event,time,threshold,cost,fpr,fnr,held"
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["time"] == "2024-01-01T00:00:00Z" and rows[1]["cost"] == "0.0"
    assert "0.30000000000000004" not in text and "99999999" not in text and "00000001" not in text
    # numbers without noise but exact where exact: the cost is what the library says, shortest form
    st = StreamingThors(fn_cost=1, fp_cost=1, period=86400)
    for i, (s, y, w) in enumerate([(0.5, 1, 0.1), (0.6, 1, 0.2), (0.1, 0, 853.12), (0.7, 0, 0.3)]):
        st.update(s, y, w, t=1704067200 + 60 * i)
        r = st.result()
        assert float(rows[i]["threshold"]) == st.get()
        assert math.isclose(float(rows[i]["cost"]), st.cost, rel_tol=1e-11)
        assert len(rows[i]["cost"]) <= 14
        assert math.isclose(float(rows[i]["fpr"]), r.fpr, abs_tol=1e-12)
        assert math.isclose(float(rows[i]["fnr"]), r.fnr, abs_tol=1e-12)
    # seconds stay seconds; no time column without --time-col
    code, _, _ = run(["replay", str(p), *COLS, *COSTS, "--window", "2", "--out", str(out)], capsys)
    assert out.read_text().splitlines()[0] == "event,threshold,cost,fpr,fnr,held"
    q = tmp_path / "secs.csv"
    q.write_text("score,label,ts\n0.5,1,1700000000.5\n0.2,0,1700000060\n")
    run(["replay", str(q), *COLS, *COSTS, "--period", "1h", "--time-col", "ts", "--out", str(out)], capsys)
    assert [r["time"] for r in csv.DictReader(open(out))] == ["1700000000.5", "1700000060.0"]


@pytest.mark.parametrize("mode", ["window", "period", "late"])
@pytest.mark.parametrize("weighted", [False, True])
def test_replay_rates_equal_the_library_result(tmp_path, capsys, mode, weighted):
    rng = np.random.default_rng(7)
    n = 1500
    y = rng.random(n) < 0.3
    s = np.round(rng.normal(size=n) + y, 2)  # ties
    w = np.round(rng.lognormal(0, 1, n), 2)
    t = np.arange(n) * 10.0
    if mode == "late":  # labels arriving out of order, some already outside the period
        t = t + np.round(rng.exponential(300, n)) * (rng.random(n) < 0.3) * -1
    p = tmp_path / "r.csv"
    with open(p, "w") as f:
        f.write("score,label,w,ts\n")
        for i in range(n):
            f.write(f"{s[i]},{int(y[i])},{w[i]},{t[i]}\n")
    out = tmp_path / "o.csv"
    win = ["--window", "200"] if mode == "window" else ["--period", "2000s", "--time-col", "ts"]
    argv = ["replay", str(p), *COLS, *COSTS, *win, "--out", str(out), "--class-prior", "0.2"]
    code, _, err = run(argv + (["--weight-col", "w"] if weighted else []), capsys)
    assert code == 0, err
    rows = list(csv.DictReader(open(out)))
    st = StreamingThors(fn_cost=5, fp_cost=1, class_prior=0.2, window=200 if mode == "window" else None,
                        period=None if mode == "window" else 2000)
    for i in range(n):
        st.update(float(s[i]), bool(y[i]), float(w[i]) if weighted else 1.0,
                  **({} if mode == "window" else {"t": float(t[i])}))
        r, row = st.result(), rows[i]
        assert float(row["threshold"]) == r.threshold and int(row["held"]) == len(st)
        assert math.isclose(float(row["fpr"]), r.fpr, abs_tol=1e-9)
        assert math.isclose(float(row["fnr"]), r.fnr, abs_tol=1e-9)
        assert math.isclose(float(row["cost"]), st.cost, rel_tol=1e-9, abs_tol=1e-9)


def test_held_rates_mirror_random_sequences():
    rng = np.random.default_rng(11)
    for trial in range(30):
        n = int(rng.integers(1, 300))
        s = rng.integers(0, 15, n).astype(float)
        y = rng.random(n) < rng.random()
        w = rng.integers(1, 5, n).astype(float)
        t = np.cumsum(rng.integers(-3, 6, n)).astype(float)
        kw = {"window": int(rng.integers(1, 40))} if trial % 2 else {"period": float(rng.integers(1, 30))}
        mirror = HeldRates(s, y, w, times=t, **kw)
        st = StreamingThors(fn_cost=3, fp_cost=1, **kw)
        for i in range(n):
            st.update(s[i], bool(y[i]), w[i], t=t[i])
            mirror.add(i)
            assert mirror.held == len(st)
            for thr in (st.get(), -math.inf, 7.0):
                fpr, fnr = mirror.rates(thr)
                held = st.held()  # (score, w1, w0, count1, count0) by score
                n1, n0 = held[1].sum(), held[2].sum()
                k1, k0 = held[1][held[0] <= thr].sum(), held[2][held[0] <= thr].sum()
                assert fpr == pytest.approx((n0 - k0) / n0 if n0 else 0.0)
                assert fnr == pytest.approx(k1 / n1 if n1 else 0.0)


# ----------------------------------------------------------------- the plot's x-axis
def test_replay_plot_x_axis_is_time_in_period_mode(data, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    saved = []
    real = Figure.savefig

    def spy(self, path, *a, **k):
        saved.append(self)
        return real(self, path, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)
    p, *_ = data
    png = tmp_path / "t.png"
    code, _, err = run(["replay", str(p), *COLS, *COSTS, "--period", "1h", "--time-col", "ts", "--out",
                        str(tmp_path / "o.csv"), "--plot", str(png)], capsys)
    assert code == 0, err
    assert png.read_bytes()[:4] == b"\x89PNG"
    ax = saved[-1].axes[-1]
    assert ax.get_xlabel().startswith("time (seconds)")
    x = ax.lines[0].get_xdata()
    assert x[0] == 1_700_000_000 and x[-1] == 1_700_000_000 + 60 * 1999
    # ISO times: a date axis
    q = tmp_path / "iso.csv"
    q.write_text("score,label,ts\n" + "".join(f"{i / 50},{i % 2},2024-05-0{1 + i // 10}T00:00:00\n" for i in range(50)))
    code, _, err = run(["replay", str(q), *COLS, *COSTS, "--period", "2d", "--time-col", "ts", "--out",
                        str(tmp_path / "o.csv"), "--plot", str(png)], capsys)
    assert code == 0, err
    ax = saved[-1].axes[-1]
    assert ax.get_xlabel().startswith("time (UTC)")
    assert str(ax.lines[0].get_xdata()[0]).startswith("2024-05-01")
    # window mode without times: the event index
    code, _, _ = run(["replay", str(p), *COLS, *COSTS, "--window", "50", "--out", str(tmp_path / "o.csv"),
                      "--plot", str(png)], capsys)
    assert saved[-1].axes[-1].get_xlabel() == "events"


def test_interrupt_is_one_line_exit_130(data, capsys, monkeypatch):
    import thors_stream.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_fit", interrupted)
    p, *_ = data
    code, out, err = run(["fit", str(p), *COLS, *COSTS], capsys)
    assert code == 130 and err == "thors: interrupted\n" and out == ""
