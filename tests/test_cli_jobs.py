"""`thors fit` as a nightly job: guard rails (exit 3), baseline and --max-shift (exit 4), release
files, per-event cost columns and segments."""

import hashlib
import json
import math

import numpy as np
import pytest

from thors_stream import thors_threshold
from thors_stream.cli import EXIT_SHIFT, EXIT_UNSUPPORTED, main
from thors_stream.event_costs import thors_event_costs
from thors_stream.io import read_events
from thors_stream.release import read_release, validate_release
from thors_stream.segments import segment_thresholds


@pytest.fixture
def job(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    y = rng.random(n) < 0.1
    seg = rng.choice(["de", "fr", "uk", "tiny"], n, p=[0.4, 0.3, 0.295, 0.005])
    s = np.round(rng.normal(size=n) + 1.5 * y + (seg == "fr") * 0.7, 3)
    amt = np.round(rng.lognormal(3, 1, n), 2)
    fee = rng.integers(1, 4, n).astype(float)
    p = tmp_path / "train.csv"
    with open(p, "w") as f:
        f.write("score,fraud,amount,fee,country\n")
        for i in range(n):
            f.write(f"{s[i]},{int(y[i])},{amt[i]},{fee[i]},{seg[i]}\n")
    return p, s, y, amt, fee, seg


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["--score-col", "score", "--label-col", "fraud"]


def test_refuses_absent_class_exit_3(tmp_path, capsys):
    p = tmp_path / "nopos.csv"
    p.write_text("score,fraud\n" + "".join(f"{i / 100},0\n" for i in range(200)))
    out_json = tmp_path / "rel.json"
    code, out, err = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--out", out_json], capsys)
    assert code == EXIT_UNSUPPORTED == 3
    assert err.count("\n") == 1 and "refused: no positive events" in err and "Traceback" not in err
    assert out == "" and not out_json.exists()


def test_refuses_below_min_per_class(tmp_path, capsys):
    p = tmp_path / "few.csv"
    p.write_text("score,fraud\n" + "".join(f"{i / 100},{int(i % 20 == 0)}\n" for i in range(200)))  # 10 positives
    code, _, err = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1], capsys)
    assert code == 3 and "too few positive events" in err and "--min-per-class 30" in err
    code, out, _ = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--min-per-class", 10], capsys)
    assert code == 0 and "threshold" in out


def test_release_file_contents(job, tmp_path, capsys):
    p, s, y, *_ = job
    rel = tmp_path / "rel.json"
    code, out, _ = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--out", rel], capsys)
    assert code == 0 and f"written to {rel}" in out
    doc = read_release(str(rel))
    r = thors_threshold(s, y, fn_cost=10, fp_cost=1)
    g = doc["global"]
    assert g["threshold"] == r.threshold and g["cost"] == r.cost and g["count1"] == r.count1
    assert g["supported"] is True and g["bounds"]["fpr_lower"] <= g["fpr"] <= g["bounds"]["fpr_upper"]
    assert doc["input"]["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert doc["input"]["rows"] == len(s) and doc["segments"] is None and doc["baseline"] is None
    assert doc["parameters"]["fn_cost"] == 10 and doc["parameters"]["min_per_class"] == 30
    assert doc["library"]["name"] == "thors_stream"


def test_release_to_stdout(job, capsys):
    p, _s, _y, *_ = job
    code, out, err = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--out", "-"], capsys)
    assert code == 0
    doc = json.loads(out)
    validate_release(doc)
    assert "threshold" in err  # the report goes to stderr


def test_baseline_shift_refused_and_forced(job, tmp_path, capsys):
    p, s, y, *_ = job
    rel = tmp_path / "deployed.json"
    assert run(["fit", p, *BASE, "--fn-cost", 2, "--fp-cost", 1, "--out", rel], capsys)[0] == 0
    old = thors_threshold(s, y, fn_cost=2, fp_cost=1)
    new = thors_threshold(s, y, fn_cost=20, fp_cost=1)
    shift = abs(new.threshold - old.threshold)
    assert shift > 0.1
    rel2 = tmp_path / "new.json"
    args = ["fit", p, *BASE, "--fn-cost", 20, "--fp-cost", 1, "--baseline", rel, "--out", rel2]
    code, out, err = run([*args, "--max-shift", 0.1], capsys)
    assert code == EXIT_SHIFT == 4 and "more than --max-shift 0.1" in err and "--force" in err
    assert err.count("\n") == 1 and not rel2.exists()
    code, out, err = run([*args, "--max-shift", 0.1, "--force"], capsys)
    assert code == 0 and "forced" in out
    b = read_release(str(rel2))["baseline"]
    old_cost = 20 * np.sum(y & (s <= old.threshold)) + np.sum(~y & (s > old.threshold))
    assert b["cost"] == old_cost and b["new_cost"] == new.cost and b["saving"] == old_cost - new.cost > 0
    assert b["shift"] == pytest.approx(shift) and b["forced"] is True
    code, out, _ = run([*args, "--max-shift", 10], capsys)  # within the limit
    assert code == 0 and "saving" in out
    code, _, err = run(["fit", p, *BASE, "--fn-cost", 2, "--fp-cost", 1, "--max-shift", 1], capsys)
    assert code == 2 and "--max-shift needs --baseline" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, _, err = run(["fit", p, *BASE, "--fn-cost", 2, "--fp-cost", 1, "--baseline", bad], capsys)
    assert code == 2 and "not a valid release file" in err


def test_cost_columns(job, capsys):
    p, s, y, amt, fee, _ = job
    code, out, _ = run(["fit", p, *BASE, "--fn-cost-col", "amount", "--fp-cost-col", "fee", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    r = thors_event_costs(s, y, amt, fee)
    assert d["threshold"] == r.threshold and d["cost"] == pytest.approx(r.cost, rel=1e-12)
    code, out, _ = run(["fit", p, *BASE, "--fn-cost-col", "amount", "--fp-cost", 3, "--json"], capsys)
    assert json.loads(out)["threshold"] == thors_event_costs(s, y, amt, 3.0).threshold
    code, _, err = run(["fit", p, *BASE, "--fp-cost", 3], capsys)
    assert code == 2 and "--fn-cost (or --fn-cost-col) is required" in err
    code, _, err = run(["fit", p, *BASE, "--fn-cost-col", "amount", "--fp-cost", 1, "--class-prior", 0.1], capsys)
    assert code == 2 and "--class-prior" in err
    code, _, err = run(["fit", p, *BASE, "--fn-cost-col", "nope", "--fp-cost", 1], capsys)
    assert code == 2 and "no column 'nope'" in err


def test_segments_in_release(job, tmp_path, capsys):
    p, s, y, _, _, seg = job
    rel = tmp_path / "rel.json"
    code, out, _ = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--segment-col", "country",
                        "--out", rel], capsys)
    assert code == 0 and "tiny" in out
    doc = read_release(str(rel))
    plan = segment_thresholds(s, y, seg, fn_cost=10, fp_cost=1, min_per_class=30)
    assert doc["segments"]["tiny"]["source"] == "global"
    assert doc["segments"]["tiny"]["threshold"] == doc["global"]["threshold"]
    for k in ("de", "fr", "uk"):
        assert doc["segments"][k]["source"] == "segment"
        assert doc["segments"][k]["threshold"] == plan.threshold(k)
        m = seg == k
        assert doc["segments"][k]["threshold"] == thors_threshold(s[m], y[m], fn_cost=10, fp_cost=1).threshold
    code, out, _ = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--segment-col", "country",
                        "--pool-weight", 0.2, "--json"], capsys)
    assert code == 0 and json.loads(out)["segments"]["de"]["source"] == "pooled"


@pytest.mark.parametrize("engine", ["python", "pyarrow"])
def test_reader_extra_columns(job, engine):
    pytest.importorskip("pyarrow") if engine == "pyarrow" else None
    p, _s, _y, amt, fee, seg = job
    ev = read_events(p, score_col="score", label_col="fraud", fn_cost_col="amount", fp_cost_col="fee",
                     segment_col="country", engine=engine, digest=True)
    assert np.array_equal(ev.fn_costs, amt) and np.array_equal(ev.fp_costs, fee)
    assert ev.segments.tolist() == seg.tolist() and ev.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_reader_extra_columns_parquet(job, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    _, s, y, amt, fee, seg = job
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"score": s, "fraud": y, "amount": amt, "fee": fee, "country": seg}), p)
    ev = read_events(p, score_col="score", label_col="fraud", fn_cost_col="amount", fp_cost_col="fee",
                     segment_col="country")
    assert np.array_equal(ev.fn_costs, amt) and ev.segments.tolist() == seg.tolist()


def test_reader_refuses_bad_cost(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("score,fraud,amount\n0.1,1,5\n0.2,0,0\n")
    for engine in ("python", "auto"):
        with pytest.raises(ValueError, match="line 3: fn cost must be > 0"):
            read_events(p, score_col="score", label_col="fraud", fn_cost_col="amount", engine=engine)


def test_not_infinite_shift_in_json(job, tmp_path, capsys):
    """A deployed -inf threshold: the shift is "inf" and any --max-shift refuses."""
    p, *_ = job
    rel = tmp_path / "d.json"
    assert run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--out", rel], capsys)[0] == 0
    doc = json.loads(rel.read_text())
    doc["global"]["threshold"] = "-inf"
    rel.write_text(json.dumps(doc))
    code, _, err = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--baseline", rel, "--max-shift", 1e9],
                       capsys)
    assert code == 4 and "move by an infinite amount (from -inf" in err
    assert math.isinf(json.loads(json.dumps(float("inf"))))


def test_help_documents_exit_codes(capsys):
    assert main(["fit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "3 refused: a class absent or below --min-per-class" in out and "4 refused" in out
    assert "--min-per-class" in out and "error rate above 0.2" in out


def test_baseline_and_out_may_be_the_same_file(job, tmp_path, capsys):
    p, s, y, *_ = job
    rel = tmp_path / "deployed.json"
    assert run(["fit", p, *BASE, "--fn-cost", 2, "--fp-cost", 1, "--out", rel], capsys)[0] == 0
    code, _, _ = run(["fit", p, *BASE, "--fn-cost", 20, "--fp-cost", 1, "--baseline", rel, "--out", rel], capsys)
    assert code == 0
    doc = read_release(str(rel))
    assert doc["global"]["threshold"] == thors_threshold(s, y, fn_cost=20, fp_cost=1).threshold
    assert doc["baseline"]["threshold"] == thors_threshold(s, y, fn_cost=2, fp_cost=1).threshold


def test_segments_do_not_rescue_an_unsupported_file(tmp_path, capsys):
    p = tmp_path / "s.csv"
    p.write_text("score,fraud,g\n" + "".join(f"{i / 100},{int(i % 50 == 0)},{'ab'[i % 2]}\n" for i in range(500)))
    code, out, err = run(["fit", p, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--segment-col", "g"], capsys)
    assert code == 3 and "too few positive events (10 positives" in err and out == ""
