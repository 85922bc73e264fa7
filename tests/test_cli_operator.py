"""The ``thors`` command as an operator runs it: a monitoring log that keeps up (exact bounds,
computed incrementally), input as files really come, a nightly job cron can run, honest timing,
all missing options at once, Neyman-Pearson output that explains itself."""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import bounds as bounds_mod
from thors_stream.bounds import RealisedCostCheck, threshold_bounds
from thors_stream.cli import main
from thors_stream.result import ThresholdResult


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_rows(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")


# ------------------------------------------------------------------ 1. monitoring that keeps up
@pytest.fixture(scope="module")
def collapse(tmp_path_factory):
    """A stream whose classes swap sides half way: the realised cost runs over its bound."""
    rng = np.random.default_rng(2)
    n = 1200
    y = rng.random(n) < 0.3
    s = np.round(rng.normal(3.0 * y, 1.0), 3)
    s[600:] += np.where(y[600:], -6.0, 4.0)
    path = tmp_path_factory.mktemp("mon") / "c.csv"
    write_rows(path, ["score", "fraud"], zip(s.tolist(), y.astype(int).tolist()))
    return path, s, y


def replay_log(path, tmp_path, *extra, window=200, fn=10, fp=1, confidence=0.95):
    log = tmp_path / "m.jsonl"
    code = main([str(a) for a in ["replay", path, "--score-col", "score", "--label-col", "fraud", "--fn-cost", fn,
                                  "--fp-cost", fp, "--window", window, "--out", tmp_path / "o.csv", "--jsonl", log,
                                  "--confidence", confidence, *extra]])
    assert code == 0
    lines = log.read_text().splitlines()
    return lines, [json.loads(line) for line in lines]


@pytest.mark.parametrize("extra", [[], ["--every", 200, "--hysteresis", "1e9"]], ids=["optimum", "held"])
def test_alert_bound_is_what_thors_fit_reports_on_the_publication_window(collapse, tmp_path, capsys, extra):
    """Every cost_over_bound alert's bound equals `thors fit --n-test events` on the window the
    published threshold was chosen from (found from published_at), to the bit."""
    path, s, y = collapse
    window = 200
    _, recs = replay_log(path, tmp_path, *extra, window=window)
    checked = 0
    for prev, rec in itertools.pairwise(recs):
        for alert in rec["alerts"]:
            if alert["type"] != "cost_over_bound":
                continue
            # the alert is about the threshold live before this row: the previous record's
            at = prev["published_at"]
            lo = max(0, at - window)
            win = tmp_path / "win.csv"
            write_rows(win, ["score", "fraud"], zip(s[lo:at].tolist(), y[lo:at].astype(int).tolist()))
            code, out, _ = run(["fit", win, "--score-col", "score", "--label-col", "fraud", "--fn-cost", 10,
                                "--fp-cost", 1, "--min-per-class", 1, "--n-test", alert["events"], "--json"],
                               capsys)
            d = json.loads(out)
            assert code == 0 and d["threshold"] == prev["threshold"]
            assert d["bounds"]["cost_upper_exact"] == alert["bound"] < alert["realised_cost"]
            checked += 1
    assert checked >= 1


def test_alert_is_raised_once_per_publication_and_log_lines_are_canonical_json(collapse, tmp_path):
    path, _, _ = collapse
    lines, recs = replay_log(path, tmp_path, "--every", 200, "--hysteresis", "1e9")
    over = [r for r in recs if any(a["type"] == "cost_over_bound" for a in r["alerts"])]
    assert len(over) == 1 and over[0]["event"] > 600
    assert len({r["published_at"] for r in recs}) == 1
    # the directly formatted lines are exactly json.dumps of their records
    assert all(json.dumps(json.loads(line)) == line for line in lines)


def _brute_exceeds(self, n_test, realised):
    b = self.bound(n_test)  # the exact bound, computed at every row (equal to threshold_bounds': tested below)
    return b if realised > b else None


@pytest.mark.parametrize(("fn", "fp", "window", "extra"), [(10, 1, 200, ["--every", 5]),
                                                           (0.3, 1.7, 150, ["--every", 10, "--hysteresis", 0.2])])
def test_monitor_log_equals_the_bound_recomputed_from_scratch_at_every_row(collapse, tmp_path, monkeypatch, fn, fp,
                                                                           window, extra):
    """The incremental check changes nothing: the same log as computing the bound at every row
    (whole-number costs, costs with no common unit, with alerts)."""
    path, _, _ = collapse
    fast, _ = replay_log(path, tmp_path, *extra, window=window, fn=fn, fp=fp)
    monkeypatch.setattr(bounds_mod.RealisedCostCheck, "exceeds", _brute_exceeds)
    slow, _ = replay_log(path, tmp_path, *extra, window=window, fn=fn, fp=fp)
    assert any("cost_over_bound" in line for line in fast)  # (the comparison covers an alert)
    assert fast == slow


@settings(max_examples=12, deadline=None)
@given(c0=st.integers(0, 300), c1=st.integers(1, 120), f0=st.floats(0, 1), f1=st.floats(0, 1),
       costs=st.sampled_from([(10.0, 1.0), (1.0, 1.0), (1.0, 50.0), (2.5, 0.7), (1e6, 1.0)]),
       prior=st.sampled_from([None, 0.05]), p_err=st.floats(0.0, 0.8), seed=st.integers(0, 2**16))
def test_realised_cost_check_answers_as_the_bound_does(c0, c1, f0, f1, costs, prior, p_err, seed):
    """RealisedCostCheck.exceeds(n, realised) is `realised > cost_upper_exact(n)` and returns that
    bound, for realised costs that grow as errors arrive (the monitor's pattern)."""
    k0, k1 = round(f0 * c0), round(f1 * c1)
    fn, fp = costs
    r = ThresholdResult(threshold=0.0, cost=0.0, n0=c0, n1=c1, k0=k0, k1=k1, count0=c0, count1=c1, count_k0=k0,
                        count_k1=k1, fn_cost=fn, fp_cost=fp, class_prior=prior)
    check, brute = RealisedCostCheck(r, 0.9), RealisedCostCheck(r, 0.9)
    rng = np.random.default_rng(seed)
    realised = 0.0
    for n in range(1, 40):
        if rng.random() < p_err:
            realised += fn if rng.random() < 0.3 else fp
        want = brute.bound(n)
        if n == 39:  # the bound itself is threshold_bounds' (as at every n: the same function of the counts)
            assert want == threshold_bounds(r, 0.9, n_test=n).cost_upper_exact
        got = check.exceeds(n, realised)
        assert got == (want if realised > want else None), (n, realised)


def test_realised_cost_check_computes_the_bound_rarely():
    """Well below the bound a run of checks is answered by certificates, not by the exact quantile."""
    r = ThresholdResult(threshold=0.0, cost=0.0, n0=950, n1=50, k0=840, k1=13, count0=950, count1=50,
                        count_k0=840, count_k1=13, fn_cost=10.0, fp_cost=1.0)
    check = RealisedCostCheck(r, 0.95)
    rate = 0.5 * threshold_bounds(r, 0.95).risk_upper  # half the bound's rate
    for n in range(1, 3000):
        assert check.exceeds(n, math.floor(rate * n)) is None
    assert check.n_exact == 0


# ------------------------------------------------------------------ 2. input as files really come
ENGINES = ["python", "pyarrow"]
FIT = ["--score-col", "score", "--label-col", "label", "--fn-cost", 5, "--fp-cost", 1, "--min-per-class", 1,
       "--json"]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    rng = np.random.default_rng(4)
    y = rng.random(400) < 0.3
    s = np.round(rng.normal(1.5 * y, 1.0), 4)
    text = "score,label\n" + "".join(f"{a},{int(b)}\n" for a, b in zip(s.tolist(), y.tolist()))
    path = tmp_path_factory.mktemp("in") / "plain.csv"
    path.write_text(text)
    return path, text.encode()


def fit_json(path, capsys, *extra):
    code, out, err = run(["fit", path, *FIT, *extra], capsys)
    assert code == 0, err
    d = json.loads(out)
    return d["threshold"], d["cost"], d["rows"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["d.csv.gz", "d.csv", "d.txt"])
def test_gzip_is_read_by_its_magic_bytes_whatever_the_name(plain, tmp_path, capsys, engine, name):
    import gzip

    path, data = plain
    want = fit_json(path, capsys, "--engine", engine)
    gz = tmp_path / name
    gz.write_bytes(gzip.compress(data))
    assert fit_json(gz, capsys, "--engine", engine) == want


@pytest.mark.parametrize("engine", ENGINES)
def test_zstd_and_gzip_on_standard_input_and_gzipped_parquet(plain, tmp_path, capsys, monkeypatch, engine):
    import gzip
    import io

    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path, data = plain
    want = fit_json(path, capsys, "--engine", engine)
    zst = tmp_path / "d.zst"
    with pa.output_stream(str(zst), compression="zstd") as f:
        f.write(data)
    assert fit_json(zst, capsys, "--engine", engine) == want
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data))))
    assert fit_json("-", capsys, "--engine", engine) == want
    cut = data.index(b"\n", len(data) // 2) + 1  # two gzip members, as `cat a.gz b.gz` makes
    (tmp_path / "m.gz").write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    assert fit_json(tmp_path / "m.gz", capsys, "--engine", engine) == want
    pq.write_table(pa.table({"score": np.loadtxt(path, delimiter=",", skiprows=1)[:, 0],
                             "label": np.loadtxt(path, delimiter=",", skiprows=1)[:, 1].astype(int)}), tmp_path / "p")
    (tmp_path / "p.gz").write_bytes(gzip.compress((tmp_path / "p").read_bytes()))
    assert fit_json(tmp_path / "p.gz", capsys) == want


@pytest.mark.parametrize("engine", ENGINES)
def test_corrupt_or_truncated_compressed_input_is_one_line_naming_the_file(plain, tmp_path, capsys, engine):
    import gzip

    _, data = plain
    for name, blob in (("t.csv.gz", gzip.compress(data)[:-40]), ("c.gz", b"\x1f\x8b\x08\x00" + b"\xff" * 200)):
        p = tmp_path / name
        p.write_bytes(blob)
        code, out, err = run(["fit", p, *FIT, "--engine", engine], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert f"{p}: gzip-compressed, but the compressed data is corrupt or truncated" in err


@pytest.mark.parametrize(("blob", "what"), [
    (b"BZh91AY&SY" + bytes(range(200)), "bzip2-compressed data"),
    (b"\xfd7zXZ\x00\x00\x04" + bytes(100), "xz-compressed data"),
    (b"PK\x03\x04\x14\x00\x06\x00" + bytes(100), "a ZIP archive (an .xlsx workbook is one)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "an OLE2 document"),
    (b"SQLite format 3\x00" + bytes(100), "an SQLite database"),
    ("score,label\n0.1,1\n".encode("utf-16"), "UTF-16 text"),
    (b"score,label\n0.1,1\n\x00\x01\x02\x03garbage", "binary data (NUL bytes"),
    (bytes(range(1, 32)) * 40, "binary data (control bytes"),
])
def test_other_binary_or_compressed_files_are_refused_naming_what_they_look_like(tmp_path, capsys, blob, what):
    import gzip

    for name, data, inside in (("x.csv", blob, ""), ("x.csv.gz", gzip.compress(blob), "gzip-compressed, and the "
                                                                                      "content ")):
        p = tmp_path / name
        p.write_bytes(data)
        code, out, err = run(["fit", p, *FIT], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and len(err) < 400, err
        assert f"{p}: not CSV or Parquet: {inside}looks like {what}" in err


@pytest.mark.parametrize("engine", ENGINES)
def test_labels_written_as_floats_are_accepted_exactly_other_floats_refused(tmp_path, capsys, engine):
    p = tmp_path / "f.csv"
    p.write_text("score,label\n0.9,1.0\n0.2,0.0\n0.4,1.00\n0.3,0\n")
    ev_labels = [True, False, True, False]
    from thors_stream.io import read_events

    assert read_events(p, score_col="score", label_col="label", engine=engine).labels.tolist() == ev_labels
    p.write_text("score,label\n0.9,1.0\n0.2,0.0\n0.4,0.5\n")
    code, _out, err = run(["fit", p, *FIT, "--engine", engine], capsys)
    assert code == 2 and f"{p} line 4: label must be 0/1/true/false, got '0.5'" in err


def test_parquet_float_labels_are_accepted_when_0_or_1(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from thors_stream.io import InputError, read_events

    p = tmp_path / "f.parquet"
    pq.write_table(pa.table({"score": [0.9, 0.2, 0.4], "label": [1.0, 0.0, 1.0]}), p)
    assert read_events(p, score_col="score", label_col="label").labels.tolist() == [True, False, True]
    pq.write_table(pa.table({"score": [0.9, 0.2, 0.4], "label": [1.0, float("nan"), 1.0]}), p)
    with pytest.raises(InputError, match=r"row 2: label must be 0/1/true/false, got nan"):
        read_events(p, score_col="score", label_col="label")
    pq.write_table(pa.table({"score": [0.9, 0.2], "label": ["1.0", "1.00"]}), p)
    assert read_events(p, score_col="score", label_col="label").labels.tolist() == [True, True]


@pytest.mark.parametrize("engine", ENGINES)
def test_times_beyond_what_the_outputs_write_are_refused_when_read(tmp_path, capsys, engine):
    p = tmp_path / "t.csv"
    ok = "9999-12-31T23:59:59Z"
    p.write_text(f"score,label,ts\n0.9,1,2024-01-01\n0.2,0,{ok}\n0.3,0,9999-12-31T23:00:00-05:00\n")
    rep = ["replay", p, "--score-col", "score", "--label-col", "label", "--fn-cost", 5, "--fp-cost", 1,
           "--window", 10, "--time-col", "ts", "--out", tmp_path / "o.csv", "--engine", engine]
    code, out, err = run(rep, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{p} line 4: time '9999-12-31T23:00:00-05:00' is outside the years 1 to 9999" in err
    assert "(column 'ts')" in err and not (tmp_path / "o.csv").exists()
    p.write_text("score,label,ts\n0.9,1,2024-01-01\n0.2,0,1e12\n")  # seconds beside date-times
    code, _, err = run(rep, capsys)
    assert code == 2 and f"{p} line 3: time '1e12' is outside the years 1 to 9999 in UTC" in err
    p.write_text(f"score,label,ts\n0.9,1,0001-01-01T00:00:00Z\n0.2,0,{ok}\n")  # the two ends are written
    code, _out, err = run(rep, capsys)
    rows = list(csv_rows(tmp_path / "o.csv"))
    assert code == 0 and [r["time"] for r in rows] == ["0001-01-01T00:00:00Z", ok]


def csv_rows(path):
    import csv

    with open(path) as f:
        yield from csv.DictReader(f)


def test_parquet_timestamp_and_date_extremes_are_refused_naming_row_and_column(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    rep = ["replay", p, "--score-col", "score", "--label-col", "label", "--fn-cost", 5, "--fp-cost", 1,
           "--window", 10, "--time-col", "ts", "--out", tmp_path / "o.csv"]
    for ts in (pa.array([0, 2**52], pa.timestamp("s")), pa.array([0, -(2**31)], pa.date32()),
               pa.array(["2024-01-01", "9999-12-31T23:30:00-01:00"])):
        pq.write_table(pa.table({"score": [0.1, 0.2], "label": [1, 0], "ts": ts}), p)
        code, _out, err = run(rep, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"{p} row 2: time " in err and "outside the years 1 to 9999" in err and "(column 'ts')" in err


# ------------------------------------------------------------------ 3. a job cron can run
PAGE = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "integrations" / "cli.md"


def nightly_script() -> str:
    """The nightly script exactly as the CLI page shows it (its first bash block under 'A nightly job')."""
    import re

    text = PAGE.read_text()
    section = text[text.index("## A nightly job"):]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def _thors_on_path(tmp_path):
    """A PATH where `thors` is this interpreter's (the console script beside it, else a shim)."""
    import os
    import shutil
    import sys

    bindir = os.path.dirname(sys.executable)
    if shutil.which("thors", path=bindir) is None:
        bindir = str(tmp_path / "bin")
        os.makedirs(bindir, exist_ok=True)
        shim = os.path.join(bindir, "thors")
        with open(shim, "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" -m thors_stream "$@"\n')
        os.chmod(shim, 0o755)
    return bindir + os.pathsep + os.environ.get("PATH", "")


def _today(path, shift=0.0, seed=8):
    rng = np.random.default_rng(seed)
    n = 400
    y = rng.random(n) < 0.2
    s = np.round(rng.normal(2.0 * y, 1.0) + shift, 3)
    amt = rng.integers(5, 500, n)
    country = rng.choice(["DE", "FR", "ES"], n)
    write_rows(path, ["score", "fraud", "amount", "country"], zip(s.tolist(), y.astype(int).tolist(),
                                                                    amt.tolist(), country.tolist()))


def test_the_documented_nightly_script_runs_twice_on_a_fresh_directory_and_exit_codes_reach_cron(tmp_path):
    import os
    import subprocess

    job = tmp_path / "job"
    job.mkdir()
    script = job / "nightly.sh"
    script.write_text(nightly_script())
    script.chmod(0o755)
    env = {**os.environ, "PATH": _thors_on_path(tmp_path)}

    def night():
        p = subprocess.run(["sh", str(script)], cwd=job, env=env, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    _today(job / "today.csv")
    code, out, err = night()  # first night: nothing deployed yet
    assert code == 0, err
    assert "baseline      none yet: deployed.json does not exist (--bootstrap)" in out
    first = json.loads((job / "deployed.json").read_text())
    assert first["baseline"] is None and not (job / "candidate.json").exists()
    code, out, err = night()  # second night, same data: compared with the deployed release, no move
    assert code == 0, err
    second = json.loads((job / "deployed.json").read_text())
    assert second["baseline"]["shift"] == 0.0 and second["baseline"]["changes"] == []
    assert all(v["shift"] == 0.0 for v in second["baseline"]["segments"].values())
    (job / "today.csv").write_text("score,fraud,country\n0.5,1,FR\n")  # the amount column went missing
    code, out, err = night()  # cron sees the failure, nothing is published
    assert code == 2 and "no column 'amount'" in err and "nightly: bad input or a bug (exit 2)" in err
    assert json.loads((job / "deployed.json").read_text()) == second and not (job / "candidate.json").exists()


@pytest.fixture(scope="module")
def segmented(tmp_path_factory):
    """Two countries: FR's scores later drift (its threshold moves), DE's and the global one barely."""
    rng = np.random.default_rng(9)
    n = 1200
    y = rng.random(n) < 0.2
    c = np.where(rng.random(n) < 0.15, "FR", "DE")
    s = np.round(rng.normal(2.0 * y, 1.0), 3)
    d = tmp_path_factory.mktemp("seg")
    write_rows(d / "a.csv", ["score", "label", "country"], zip(s.tolist(), y.astype(int).tolist(), c.tolist()))
    s2 = np.where(c == "FR", s + 1.5, s)
    write_rows(d / "b.csv", ["score", "label", "country"], zip(s2.tolist(), y.astype(int).tolist(), c.tolist()))
    return d


SEG = ["--score-col", "score", "--label-col", "label", "--segment-col", "country"]


def test_max_shift_guards_every_segment_and_reports_each(segmented, capsys):
    d = segmented
    assert run(["fit", d / "a.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1, "--out", d / "dep.json"], capsys)[0] == 0
    dep = json.loads((d / "dep.json").read_text())
    code, out, err = run(["fit", d / "b.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1, "--baseline", d / "dep.json",
                          "--max-shift", 0.5, "--json"], capsys)
    assert code == 4 and out == "" and err.count("\n") == 1
    assert "thresholds would move: segment FR " in err and "more than --max-shift 0.5" in err
    code, out, err = run(["fit", d / "b.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1, "--baseline", d / "dep.json",
                          "--json"], capsys)
    b = json.loads(out)["baseline"]
    fr, de = b["segments"]["FR"], b["segments"]["DE"]
    assert fr["threshold"] == dep["segments"]["FR"]["threshold"] and fr["deployed"] == "segment"
    assert fr["shift"] == pytest.approx(abs(fr["new_threshold"] - fr["threshold"])) and fr["shift"] > 0.5
    assert de["shift"] <= 0.5 and b["shift"] <= 0.5 and b["changes"] == []
    code, out, _ = run(["fit", d / "b.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1, "--baseline", d / "dep.json"],
                       capsys)
    line = next(x for x in out.splitlines() if x.strip().startswith("FR "))
    assert f"deployed {fr['threshold']!r} (shift " in line


def test_other_settings_are_reported_as_such_not_as_a_mere_shift(segmented, tmp_path, capsys):
    d = segmented
    rel = tmp_path / "dep.json"
    base = ["--score-col", "score", "--label-col", "label"]
    assert run(["fit", d / "a.csv", *base, "--fn-cost", 10, "--fp-cost", 1, "--out", rel], capsys)[0] == 0
    code, out, err = run(["fit", d / "a.csv", *SEG, "--fn-cost", 1, "--fp-cost", 1, "--baseline", rel,
                          "--max-shift", 0.01], capsys)
    assert code == 4 and "costs changed from FN 10/FP 1 to FN 1/FP 1; segments changed from none to country" in err
    code, out, _ = run(["fit", d / "a.csv", *base, "--fn-cost", 10, "--fp-cost", 1, "--max-fpr", 0.2,
                        "--baseline", rel], capsys)
    assert code == 0 and "changes       mode changed from cost-optimal to Neyman-Pearson (true FPR <= 0.2)" in out
    code, out, _ = run(["fit", d / "a.csv", *base, "--fn-cost", 10, "--fp-cost", 1, "--baseline", rel], capsys)
    assert code == 0 and "changes " not in out


def test_json_segments_carry_cost_and_bounds_and_cost_bounds_say_which_to_use(segmented, tmp_path, capsys):
    d = segmented
    code, out, _ = run(["fit", d / "a.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1, "--json", "--out",
                        tmp_path / "r.json"], capsys)
    assert code == 0
    j = json.loads(out)
    rel = json.loads((tmp_path / "r.json").read_text())
    assert j["segments"] == rel["segments"]  # the same entries as the release file
    for e in j["segments"].values():
        assert {"cost", "source", "count0", "count1"} <= set(e) and e["bounds"]["fpr_upper"] >= e["fpr"]
    b = j["bounds"]
    assert b["cost_paid_upper"] == b["cost_upper_exact"] == rel["global"]["bounds"]["cost_paid_upper"]
    assert b["cost_paid_upper_bernstein"] == b["cost_upper"] >= b["cost_paid_upper"]
    assert (b["expected_cost_lower"], b["expected_cost_upper"]) == (b["cost_interval_lower"], b["cost_interval_upper"])
    _, out, _ = run(["fit", d / "a.csv", *SEG, "--fn-cost", 5, "--fp-cost", 1], capsys)
    assert f"cost paid <= {b['cost_paid_upper']:,.6g}" in out and "budget with the cost paid, cost_paid_upper" in out


def test_bootstrap_needs_baseline_and_a_missing_baseline_is_an_error_without_it(segmented, tmp_path, capsys):
    d = segmented
    base = ["--score-col", "score", "--label-col", "label", "--fn-cost", 5, "--fp-cost", 1]
    code, _, err = run(["fit", d / "a.csv", *base, "--bootstrap"], capsys)
    assert code == 2 and "--bootstrap needs --baseline" in err
    code, _, err = run(["fit", d / "a.csv", *base, "--baseline", tmp_path / "none.json"], capsys)
    assert code == 2 and "no such file" in err
    code, out, _ = run(["fit", d / "a.csv", *base, "--baseline", tmp_path / "none.json", "--bootstrap", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["first_release"] is True and "baseline" not in json.loads(out)


# ------------------------------------------------------------------ 4. start-up and the time it took
def test_the_cli_imports_no_heavy_module_until_needed(tmp_path):
    """`import thors_stream.cli`, `thors fit --help` and a small fit without bounds load neither
    scipy.stats nor pyarrow nor river (a module check in a fresh interpreter, not a timing)."""
    import subprocess
    import sys

    p = tmp_path / "s.csv"
    p.write_text("score,label\n" + "".join(f"{i / 50},{int(i % 3 == 0)}\n" for i in range(100)))
    code = f"""
import contextlib, io, sys
heavy = ("scipy.stats", "pyarrow", "river", "pandas", "sklearn")
loaded = lambda: sorted(m for m in heavy if m in sys.modules)
import thors_stream.cli as c
print(loaded())
with contextlib.redirect_stdout(io.StringIO()):
    assert c.main(["fit", "--help"]) == 0
print(loaded())
with contextlib.redirect_stdout(io.StringIO()):
    assert c.main(["fit", {str(p)!r}, "--score-col", "score", "--label-col", "label", "--fn-cost", "5",
                   "--fp-cost", "1", "--no-bounds"]) == 0
print(loaded())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["[]", "[]", "[]"], out


def test_time_line_reports_the_whole_wall_time(segmented, capsys):
    import re

    code, out, _ = run(["fit", segmented / "a.csv", "--score-col", "score", "--label-col", "label", "--fn-cost", 5,
                        "--fp-cost", 1], capsys)
    m = re.search(r"time +([\d.]+) s in all: start-up ([\d.]+) s, parse ([\d.]+) s, threshold ([\d.]+) s, "
                  r"bounds and segments ([\d.]+) s", out)
    assert code == 0 and m is not None, out
    total, *parts = map(float, m.groups())
    assert total >= sum(parts) - 0.004  # (each part rounded to the millisecond)
    code, out, _ = run(["fit", segmented / "a.csv", "--score-col", "score", "--label-col", "label", "--fn-cost", 5,
                        "--fp-cost", 1, "--json"], capsys)
    d = json.loads(out)
    assert d["total_seconds"] >= d["parse_seconds"] + d["threshold_seconds"] + d["bounds_seconds"]
    code, _, err = run(["fit", segmented / "a.csv", "--score-col", "score", "--label-col", "label", "--fn-cost", 5,
                        "--fp-cost", 1, "--no-bounds", "--out", "x.json"], capsys)
    assert code == 2 and "--no-bounds cannot be combined with --out" in err


# ------------------------------------------------------------------ 5. missing options, all at once
@pytest.mark.parametrize(("argv", "listed"), [
    (["replay"], "DATA, --score-col, --label-col, --fn-cost (or --fn-cost-col), --fp-cost (or --fp-cost-col), "
                 "--window or --period and --out are required"),
    (["replay", "x.csv", "--window", 5, "--label-col", "y"], "--score-col, --fn-cost (or --fn-cost-col), --fp-cost "
                                                             "(or --fp-cost-col) and --out are required"),
    (["fit", "x.csv", "--score-col", "s"], "--label-col, --fn-cost (or --fn-cost-col) and --fp-cost (or "
                                           "--fp-cost-col) are required"),
    (["fit", "x.csv", "--score-col", "s", "--label-col", "y", "--fp-cost-col", "fee"],
     "--fn-cost (or --fn-cost-col) is required"),
])
def test_missing_required_options_are_reported_all_at_once(capsys, argv, listed):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err == f"thors {argv[0]}: error: {listed} (see thors {argv[0]} --help)\n"


def test_other_usage_errors_and_help_are_unchanged(capsys):
    code, _, err = run(["replay", "x.csv", "--window", 5, "--period", "3d"], capsys)
    assert code == 2 and "not allowed with argument --window" in err
    assert run(["fit", "--help"], capsys)[0] == 0
    code, out, _ = run(["replay", "--help"], capsys)
    assert code == 0 and "--score-col SCORE_COL" in out and "[--score-col" not in out  # still shown as required


# ------------------------------------------------------------------ 6. Neyman-Pearson output explains itself
def test_neyman_pearson_says_why_the_bound_may_exceed_the_cap(tmp_path, capsys):
    rng = np.random.default_rng(3)
    y = rng.random(1200) < 0.06
    s = np.round(rng.normal(1.5 * y, 1.0), 4)
    p = tmp_path / "np.csv"
    write_rows(p, ["score", "label"], zip(s.tolist(), y.astype(int).tolist()))
    base = ["fit", p, "--score-col", "score", "--label-col", "label", "--fn-cost", 10, "--fp-cost", 1]
    code, out, _ = run([*base, "--max-fpr", 0.1, "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["bounds"]["fpr_upper"] > 0.1 >= d["fpr"]  # the case: the cap holds, the bound is above it
    (note,) = d["constraint_notes"]
    assert note.startswith(f"the FPR upper bound {d['bounds']['fpr_upper']:.6f} is above the cap 0.1, yet the true "
                           "FPR is at most 0.1 with probability 95%: the cap rests on a single order statistic")
    code, out, _ = run([*base, "--max-fpr", 0.1], capsys)
    assert f"note          {note}" in out and note.count(". ") == 0  # one sentence
    code, out, _ = run([*base, "--max-fpr", 0.5, "--json"], capsys)  # a cap the bound stays under: nothing to explain
    assert json.loads(out)["constraint_notes"] == []


def test_max_shift_at_exactly_the_measured_shift_publishes_and_a_hair_below_refuses(segmented, tmp_path, capsys):
    d = segmented
    base = [*SEG, "--fn-cost", 5, "--fp-cost", 1]
    rel = tmp_path / "dep.json"
    assert run(["fit", d / "a.csv", *base, "--out", rel], capsys)[0] == 0
    code, out, _ = run(["fit", d / "b.csv", *base, "--baseline", rel, "--json"], capsys)
    b = json.loads(out)["baseline"]
    shift = max([b["shift"], *(v["shift"] for v in b["segments"].values())])  # the largest move (FR's)
    assert code == 0 and shift > 0
    at = ["fit", d / "b.csv", *base, "--baseline", rel, "--max-shift"]
    assert run([*at, repr(shift)], capsys)[0] == 0  # a move of exactly the limit is allowed
    code, _, err = run([*at, repr(float(np.nextafter(shift, 0.0)))], capsys)
    assert code == 4 and "more than --max-shift" in err


# ------------------------------------------------------------------ replay takes what fit takes
def test_replay_neyman_pearson_equals_the_batch_threshold_on_the_window(collapse, tmp_path, capsys):
    from thors_stream import thors_threshold

    path, s, y = collapse
    out = tmp_path / "o.csv"
    code, _, _ = run(["replay", path, "--score-col", "score", "--label-col", "fraud", "--fn-cost", 10, "--fp-cost", 1,
                      "--window", 300, "--every", 10, "--max-fpr", 0.1, "--confidence", 0.9, "--out", out,
                      "--jsonl", tmp_path / "m.jsonl"], capsys)
    rows = list(csv_rows(out))
    recs = [json.loads(line) for line in open(tmp_path / "m.jsonl")]
    assert code == 0 and rows[0]["threshold"] == "None" and recs[0]["threshold"] is None  # too few negatives held
    assert recs[0]["held"] == 10 and rows[-1]["threshold"] != "None"
    for r in rows[::7]:
        e = int(r["event"])
        lo = max(0, e - 300)
        if r["threshold"] == "None":
            with pytest.raises(ValueError, match="needs at least"):
                thors_threshold(s[lo:e], y[lo:e], fn_cost=10, fp_cost=1, max_fpr=0.1, confidence=0.9)
            continue
        want = thors_threshold(s[lo:e], y[lo:e], fn_cost=10, fp_cost=1, max_fpr=0.1, confidence=0.9)
        assert float(r["threshold"]) == want.threshold and float(r["cost"]) == want.cost


def test_replay_with_hysteresis_reports_and_plots_the_published_threshold(collapse, tmp_path, capsys, monkeypatch):
    import thors_stream.plotting as plotting

    seen = {}
    monkeypatch.setattr(plotting, "plot_trajectory", lambda x, thr, cost, path, title: seen.update(thr=thr, t=title))
    path, _, _ = collapse
    code, _, err = run(["replay", path, "--score-col", "score", "--label-col", "fraud", "--fn-cost", 10, "--fp-cost",
                        1, "--window", 200, "--every", 50, "--hysteresis", 1e9, "--jsonl", tmp_path / "m.jsonl",
                        "--out", tmp_path / "o.csv", "--plot", tmp_path / "p.png"], capsys)
    recs = [json.loads(line) for line in open(tmp_path / "m.jsonl")]
    assert code == 0 and f"final published threshold {recs[-1]['threshold']!r} (cost {recs[-1]['cost']}" in err
    opt = recs[-1]["optimal_threshold"]
    assert f"the optimum {opt if opt == '-inf' else repr(opt)}" in err and recs[-1]["threshold"] != opt
    assert seen["thr"].tolist() == [r["threshold"] for r in recs] and "published threshold" in seen["t"]
