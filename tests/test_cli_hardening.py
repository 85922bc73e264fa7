"""Issue 13, item 3: hostile files and options get a clear refusal from `thors`, never a wrong answer.

Every test here is a named regression test for one broken promise: exit code 2, one line on
stderr naming the file (and the line or row), no traceback; and both CSV engines agree.
"""

import csv
import datetime as dt
import os
import subprocess
import sys

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream.cli import MAX_N_TEST, main
from thors_stream.io import FIELD_LIMIT, InputError, read_events

COLS = ["--score-col", "score", "--label-col", "label"]
COSTS = ["--fn-cost", "5", "--fp-cost", "1"]
ENGINES = ["python", "pyarrow"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def refused(code, out, err, *needles):
    """Exit 2, one line on stderr holding every needle, nothing on stdout, no traceback."""
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert err.count("\n") == 1, err
    for n in needles:
        assert n in err, (n, err)
    return True


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "v.csv"
    p.write_text("score,label\n0.5,1\n0.2,0\n0.7,1\n0.1,0\n")
    return p


# ----------------------------------------------------------------- Parquet nulls and types
def test_parquet_null_boolean_label_is_refused_not_read_as_negative(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"score": [0.1, 0.2, 0.3], "label": pa.array([True, None, False])}), p)
    code, out, err = run(["fit", str(p), *COLS, *COSTS], capsys)
    assert refused(code, out, err, f"{p} row 2: label is null")
    for typ, vals in [(pa.int64(), [1, None]), (pa.string(), ["1", None])]:
        pq.write_table(pa.table({"score": [0.1, 0.2], "label": pa.array(vals, typ)}), p)
        with pytest.raises(InputError, match="row 2: label is null"):
            read_events(p, score_col="score", label_col="label")
    pq.write_table(pa.table({"score": pa.array([0.1, None]), "label": [1, 0]}), p)
    with pytest.raises(InputError, match="row 2: score is null"):
        read_events(p, score_col="score", label_col="label")


def test_parquet_null_times_name_the_file_and_row(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"score": [0.1, 0.2, 0.3], "label": [1, 0, 1],
                             "ts": pa.array([1, 2, None], pa.timestamp("s"))}), p)
    code, out, err = run(["replay", str(p), *COLS, *COSTS, "--period", "1d", "--time-col", "ts",
                          "--out", str(tmp_path / "o.csv")], capsys)
    assert refused(code, out, err, f"{p} row 3: time is null")


@pytest.mark.parametrize(
    ("columns", "needle"),
    [
        ({"score": ["a", "b"], "label": [1, 0]}, "the score column 'score' has type string; it must be numeric"),
        ({"score": [0.1, 0.2], "label": [1.0, 0.5]}, "row 2: label must be 0/1/true/false, got 0.5"),
        ({"score": [0.1, 0.2], "label": [True, False], "w": ["x", "y"]}, "the weight column 'w' has type string"),
        ({"score": [0.1, 0.2], "label": [1, 2]}, "row 2: label must be 0/1/true/false, got 2"),
        ({"score": [0.1, 0.2], "label": ["1", "yes"]}, "row 2: label must be 0/1/true/false, got 'yes'"),
        ({"score": [0.1, 0.2], "label": [1, 0], "ts": ["2024-01-01", "soon"]}, "row 2: time is neither"),
        ({"score": [0.1, 0.2], "label": [1, 0], "ts": [[1], [2]]}, "the time column 'ts' has type list"),
    ],
)
def test_parquet_dtype_errors_name_the_file(tmp_path, capsys, columns, needle):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "typed.parquet"
    pq.write_table(pa.table(columns), p)
    extra = (["--weight-col", "w"] if "w" in columns else []) + (["--time-col", "ts"] if "ts" in columns else [])
    code, out, err = run(["fit", str(p), *COLS, *COSTS, *extra], capsys) if "ts" not in columns else run(
        ["replay", str(p), *COLS, *COSTS, *extra, "--window", "5", "--out", str(tmp_path / "o.csv")], capsys)
    assert refused(code, out, err, str(p), needle)


def test_corrupt_parquet_names_the_file(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    p = tmp_path / "broken.parquet"
    p.write_bytes(b"PAR1" + b"\x00" * 50)
    code, out, err = run(["fit", str(p), *COLS, *COSTS], capsys)
    assert refused(code, out, err, f"{p}: cannot read it as Parquet")


# ----------------------------------------------------------------- CSV field limit, UTF-8
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ["score", "label", "unused"])
def test_csv_field_over_the_limit_is_exit_2_with_file_and_line_on_both_engines(tmp_path, capsys, engine, where):
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    big = "1" * (FIELD_LIMIT + 1)
    row = {"score": f"{big},1,x", "label": f"0.5,{big},x", "unused": f"0.5,1,{big}"}[where]
    p = tmp_path / "long.csv"
    p.write_text(f"score,label,note\n0.2,0,a\n0.3,1,b\n{row}\n0.4,0,c\n")
    code, out, err = run(["fit", str(p), *COLS, *COSTS, "--engine", engine], capsys)
    assert refused(code, out, err, f"{p} line 4: a field is longer than 131,072 characters")
    assert len(err) < 300
    # at the limit it is a field like any other (an unused one is ignored)
    p.write_text(f"score,label,note\n0.2,0,a\n0.3,1,{'z' * FIELD_LIMIT}\n")
    assert run(["fit", str(p), *COLS, *COSTS, "--engine", engine, "--min-per-class", "1"], capsys)[0] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_non_utf8_input_names_the_file_and_line(tmp_path, capsys, engine):
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    p = tmp_path / "latin1.csv"
    p.write_bytes(b"score,label\n0.5,1\n0.2,0\n0.4,\xe9\n")
    code, out, err = run(["fit", str(p), *COLS, *COSTS, "--engine", engine], capsys)
    assert refused(code, out, err, f"{p} line 4: label is not UTF-8 text: b'\\xe9'")
    p.write_bytes(b"score,label\n0.5,1\n0\xff.2,0\n")
    code, out, err = run(["fit", str(p), *COLS, *COSTS, "--engine", engine], capsys)
    assert refused(code, out, err, f"{p} line 3: score is not UTF-8 text")
    # an unused column may hold anything: same answer on both engines
    p.write_bytes(b"score,label,name\n0.5,1,Ren\xe9\n0.2,0,x\n")
    ev = read_events(p, score_col="score", label_col="label", engine=engine)
    assert ev.scores.tolist() == [0.5, 0.2] and ev.labels.tolist() == [True, False]


# ----------------------------------------------------------------- huge options
@pytest.mark.parametrize("cmd", ["fit", "replay"])
def test_costs_that_would_overflow_are_refused(tmp_path, capsys, small, cmd):
    extra = ["--window", "3", "--out", str(tmp_path / "o.csv")] if cmd == "replay" else ["--min-per-class", "1"]
    code, out, err = run([cmd, str(small), *COLS, "--fn-cost", "1e308", "--fp-cost", "1", *extra], capsys)
    assert refused(code, out, err, "too large", "overflow")
    # the product with the weights overflows even though each number is finite
    w = tmp_path / "w.csv"
    w.write_text("score,label,w\n0.5,1,1e300\n0.2,0,1\n")
    code, out, err = run([cmd, str(w), *COLS, "--weight-col", "w", "--fn-cost", "1e10", "--fp-cost", "1", *extra],
                         capsys)
    assert refused(code, out, err, "too large", "overflow")
    w.write_text("score,label,w\n0.5,1,1e308\n0.2,1,1e308\n0.1,0,1\n")
    code, out, err = run([cmd, str(w), *COLS, "--weight-col", "w", *COSTS, *extra], capsys)
    assert refused(code, out, err, "weights' total overflows")
    # large but representable: fine
    assert run([cmd, str(small), *COLS, "--fn-cost", "1e100", "--fp-cost", "1", *extra], capsys)[0] == 0


def test_cost_bounds_that_would_overflow_are_refused(capsys, small):
    code, out, err = run(["fit", str(small), *COLS, "--fn-cost", "1e290", "--fp-cost", "1",
                          "--n-test", "1000000"], capsys)
    # refused by the CLI's own bound check, or earlier by the library's cost limit (2**960)
    assert code == 2 and out == "" and "Traceback" not in err and err.count("\n") == 1, err
    assert "too large to bound the cost of 1,000,000 new events" in err or "at most 2**960" in err, err
    # costs within the library's limit no longer overflow the bounds (no cost is squared since
    # 2026-11-25): 10**12 events at 1e280 each are bounded by ~9e291, finite
    code, out, err = run(["fit", str(small), *COLS, "--fn-cost", "1e280", "--fp-cost", "1",
                          "--n-test", "1000000000000", "--min-per-class", "1"], capsys)
    assert code == 0 and "inf" not in out and "e+291 (95%)" in out, (out, err)


@pytest.mark.parametrize("value", ["1e21", str(10**21), str(MAX_N_TEST + 1), "1.5", "-1", "x"])
def test_n_test_out_of_range_is_one_line_exit_2(small, value):
    proc = subprocess.run([sys.executable, "-m", "thors_stream", "fit", str(small), *COLS, *COSTS,
                           "--n-test", value], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--n-test" in proc.stderr


def test_n_test_in_scientific_notation(capsys, small):
    code, out, _ = run(["fit", str(small), *COLS, *COSTS, "--n-test", "1e6", "--min-per-class", "1"], capsys)
    assert code == 0 and "1,000,000 new events" in out


# ----------------------------------------------------------------- time zones
def _dst_file(path):
    """Naive ISO times every 37 minutes across the US spring-forward night (2024-03-10)."""
    rng = np.random.default_rng(3)
    t0 = dt.datetime(2024, 3, 9, 12)
    rows = []
    for i in range(300):
        rows.append((round(float(rng.random()), 3), int(rng.random() < 0.3), t0 + dt.timedelta(minutes=37 * i)))
    with open(path, "w") as f:
        f.write("score,label,ts\n")
        for s, y, t in rows:
            f.write(f"{s},{y},{t.isoformat()}\n")
    return rows


def test_naive_iso_times_are_utc_on_both_engines_whatever_TZ(tmp_path):
    pytest.importorskip("pyarrow")
    p = tmp_path / "ts.csv"
    rows = _dst_file(p)
    st = StreamingThors(fn_cost=5, fp_cost=1, period=7200)
    want = []
    for s, y, t in rows:
        st.update(s, y, t=t.replace(tzinfo=dt.timezone.utc).timestamp())
        want.append((repr(st.get()), len(st)))
    outputs = []
    for tz in ("America/New_York", "Asia/Kolkata"):
        for engine in ENGINES:
            out = tmp_path / f"o_{tz.replace('/', '_')}_{engine}.csv"
            proc = subprocess.run(
                [sys.executable, "-m", "thors_stream", "replay", str(p), *COLS, *COSTS, "--period", "2h",
                 "--time-col", "ts", "--out", str(out), "--engine", engine],
                env={**os.environ, "TZ": tz}, capture_output=True, text=True, timeout=120, check=False)
            assert proc.returncode == 0, proc.stderr
            got = list(csv.DictReader(open(out)))
            assert [(r["threshold"], int(r["held"])) for r in got] == want
            assert got[0]["time"] == "2024-03-09T12:00:00Z"
            outputs.append(out.read_text())
    assert len(set(outputs)) == 1
    # the same rule in the library reader, and an explicit offset is honoured
    ev = read_events(p, score_col="score", label_col="label", time_col="ts", engine="python")
    assert ev.times[0] == dt.datetime(2024, 3, 9, 12, tzinfo=dt.timezone.utc).timestamp() and ev.datetimes
    q = tmp_path / "z.csv"
    q.write_text("score,label,ts\n0.1,1,2024-01-01T02:00:00+02:00\n0.2,0,2024-01-01T00:00:00Z\n")
    for engine in ENGINES:
        ev = read_events(q, score_col="score", label_col="label", time_col="ts", engine=engine)
        assert ev.times[0] == ev.times[1] == 1704067200.0


# ----------------------------------------------------------------- outputs and special files
def test_out_equal_to_the_input_is_refused(tmp_path, capsys, small):
    before = small.read_bytes()
    link = tmp_path / "link.csv"
    os.symlink(small, link)
    for out in (str(small), str(tmp_path / "." / "v.csv"), str(link)):
        code, o, err = run(["replay", str(small), *COLS, *COSTS, "--window", "3", "--out", out], capsys)
        assert refused(code, o, err, "is the input file; refusing to overwrite it")
    code, o, err = run(["fit", str(small), *COLS, *COSTS, "--plot", str(small)], capsys)
    assert refused(code, o, err, "--plot")
    assert small.read_bytes() == before


def test_fifo_input_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "thors_stream", "fit", str(fifo), *COLS, *COSTS],
                          capture_output=True, text=True, timeout=30, check=False)  # would block forever if opened
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{fifo}: not a regular file" in proc.stderr and "use - to read standard input" in proc.stderr
    with pytest.raises(InputError, match="not a regular file"):
        read_events(fifo, score_col="score", label_col="label")


def test_directory_input_is_one_line_exit_2(tmp_path, capsys):
    code, out, err = run(["fit", str(tmp_path), *COLS, *COSTS], capsys)
    assert refused(code, out, err, f"{tmp_path}: is a directory, not a file")
    assert "Errno" not in err
    code, out, err = run(["replay", str(tmp_path), *COLS, *COSTS, "--window", "2", "--out", "o.csv"], capsys)
    assert refused(code, out, err, "is a directory")


def test_unwritable_output_is_one_line(tmp_path, capsys, small):
    code, out, err = run(["replay", str(small), *COLS, *COSTS, "--window", "3", "--out", str(tmp_path)], capsys)
    assert refused(code, out, err, f"{tmp_path}: exists and is not a regular file (a directory)")


def test_replay_writes_through_a_device_or_fifo(tmp_path, capsys, small):
    """Outputs are staged beside their targets and renamed on success; a FIFO or a device
    (/dev/null here) has nothing to rename onto, so it is written directly."""
    code, _, err = run(["replay", str(small), *COLS, *COSTS, "--window", "3", "--out", os.devnull], capsys)
    assert code == 0, err
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


# ----------------------------------------------------------------- one reader, two engines
ODD_FILES = {
    "bom_crlf": b"\xef\xbb\xbfscore,label\r\n0.5,1\r\n0.2,0\r\n",
    "spaces": b" score , label \n 0.5 , TRUE \n0.2,\tfalse\n",
    "blank_lines": b"score,label\n\n0.5,1\n\n0.2,0\n\n",
    "ragged_extra": b"score,label\n0.5,1,extra\n0.2,0\n",
    "ragged_short": b"score,label\n0.5,1\n0.2\n",
    "quoted": b'score,label,note\n"0.5","1","a ""quoted"" note"\n0.2,0,"x,y"\n',
    "quoted_newline": b'score,label,note\n0.5,1,"two\nlines"\n0.2,0,z\n',
    "duplicate_header": b"score,label,score\n0.5,1,9\n0.2,0,9\n",
    "empty_score": b"score,label\n0.5,1\n,0\n",
    "inf_score": b"score,label\n0.5,1\ninf,0\n",
    "underscore_number": b"score,label\n1_000,1\n0.2,0\n",
    "mixed_times": b"score,label,ts\n0.5,1,1700000000\n0.2,0,2023-11-14T22:14:00\n0.3,1,2023-11-14T22:15:00Z\n",
    "date_only": b"score,label,ts\n0.5,1,2024-01-02\n0.2,0,2024-01-03\n",
    "bad_time": b"score,label,ts\n0.5,1,2024-01-02\n0.2,0,tomorrow\n",
    "zero_weight": b"score,label,w\n0.5,1,1\n0.2,0,0\n",
    "header_only": b"score,label\n",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(ODD_FILES))
def test_both_engines_give_the_same_answer_or_the_same_error(tmp_path, name):
    pytest.importorskip("pyarrow")
    p = tmp_path / f"{name}.csv"
    content = ODD_FILES[name]
    if name == "quoted_newline":  # many blocks, so pyarrow's chunker meets the quoted newline mid-file
        content = content + b"".join(b'0.%d,%d,"a\nb"\n' % (i % 10, i % 2) for i in range(200_000))
    p.write_bytes(content)
    kw = {"score_col": "score", "label_col": "label"}
    if b",ts" in content[:40]:
        kw["time_col"] = "ts"
    if b",w\n" in content[:40]:
        kw["weight_col"] = "w"
    results = []
    for engine in ENGINES:
        try:
            ev = read_events(p, engine=engine, **kw)
            results.append((ev.scores.tolist(), ev.labels.tolist(), None if ev.times is None else ev.times.tolist(),
                            None if ev.weights is None else ev.weights.tolist(), ev.datetimes))
        except InputError as exc:
            results.append(str(exc))
    assert results[0] == results[1]


@pytest.mark.parametrize("cmd", ["fit", "replay"])
def test_an_output_path_ending_with_a_slash_is_refused_not_written_as_a_file(tmp_path, capsys, small, cmd):
    target = tmp_path / "newdir"
    extra = ["--window", "3"] if cmd == "replay" else []
    code, out, err = run([cmd, str(small), *COLS, *COSTS, *extra, "--out", f"{target}/"], capsys)
    assert refused(code, out, err, f"--out {target}/ names a directory (it ends with a slash)")
    assert not target.exists()


@pytest.mark.parametrize("engine", ["python", "pyarrow"])
def test_an_unclosed_quote_is_named_at_the_line_it_opens(tmp_path, capsys, engine):
    rows = [f"{i / 100},{i % 2}" for i in range(50)]
    rows[4] = '"' + rows[4]  # line 6 of the file opens a quote that never closes
    p = tmp_path / "q.csv"
    p.write_text("score,label\n" + "\n".join(rows) + "\n")
    code, out, err = run(["fit", str(p), *COLS, *COSTS, "--engine", engine], capsys)
    assert refused(code, out, err, f"{p} line 6: a quoted field opened on this line runs to line 51")
