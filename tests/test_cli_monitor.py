"""`thors replay --jsonl`: the monitoring log, alerts and hysteresis."""

import csv
import itertools
import json

import numpy as np
import pytest

from thors_stream.cli import main


def _write(path, s, y):
    with open(path, "w") as f:
        f.write("score,fraud,ts\n")
        for i, (a, b) in enumerate(zip(s, y)):
            f.write(f"{a},{int(b)},{i * 60}\n")


@pytest.fixture
def drifting(tmp_path):
    rng = np.random.default_rng(1)
    n = 4000
    y = rng.random(n) < 0.1
    drift = np.r_[np.zeros(n // 2), np.full(n // 2, 1.5)]
    s = np.round(rng.normal(1.5 * y + drift * ~y, 1.0), 3)
    p = tmp_path / "r.csv"
    _write(p, s, y)
    return p


def replay(p, tmp_path, *extra):
    out, log = tmp_path / "o.csv", tmp_path / "m.jsonl"
    code = main(["replay", str(p), "--score-col", "score", "--label-col", "fraud", "--fn-cost", "10", "--fp-cost",
                 "1", "--window", "800", "--every", "200", "--out", str(out), "--jsonl", str(log),
                 "--time-col", "ts", *map(str, extra)])
    rows = list(csv.DictReader(open(out)))
    recs = [json.loads(line) for line in open(log)]
    return code, rows, recs


def test_jsonl_log_fields_and_no_hysteresis_publishes_the_optimum(drifting, tmp_path):
    code, rows, recs = replay(drifting, tmp_path)
    assert code == 0 and len(rows) == len(recs) == 20
    for r, rec in zip(rows, recs):
        assert rec["event"] == int(r["event"]) and rec["time"] == float(r["time"])
        assert rec["threshold"] == rec["optimal_threshold"] == float(r["threshold"])
        assert rec["cost"] == rec["optimal_cost"] == float(r["cost"])
        assert rec["fpr"] == float(r["fpr"]) and rec["fnr"] == float(r["fnr"])
        assert rec["held"] == int(r["held"]) == rec["held_pos"] + rec["held_neg"]
        assert rec["alerts"] == []


def test_hysteresis_keeps_the_published_threshold_within_the_fraction(drifting, tmp_path):
    _, _, plain = replay(drifting, tmp_path)
    code, _, recs = replay(drifting, tmp_path, "--hysteresis", 0.1)
    assert code == 0
    changes = sum(a["threshold"] != b["threshold"] for a, b in itertools.pairwise(recs))
    plain_changes = sum(a["threshold"] != b["threshold"] for a, b in itertools.pairwise(plain))
    assert changes < plain_changes
    for rec in recs:
        assert rec["cost"] <= 1.1 * rec["optimal_cost"] + 1e-9


def test_threshold_jump_alert(drifting, tmp_path):
    code, _, recs = replay(drifting, tmp_path, "--alert-jump", 0.5)
    jumps = [a for rec in recs for a in rec["alerts"] if a["type"] == "threshold_jump"]
    assert code == 0 and jumps and all(abs(a["to"] - a["from"]) > 0.5 for a in jumps)
    _, _, recs = replay(drifting, tmp_path, "--alert-jump", 100)
    assert not any(rec["alerts"] for rec in recs)


def test_cost_over_bound_alert(tmp_path):
    """The positives' scores collapse while the published threshold is held: realised cost over its bound."""
    rng = np.random.default_rng(2)
    n = 4000
    y = rng.random(n) < 0.3
    s = np.round(rng.normal(3.0 * y, 1.0), 3)
    s[2000:] -= 6.0 * y[2000:]
    p = tmp_path / "c.csv"
    _write(p, s, y)
    code, _, recs = replay(p, tmp_path, "--hysteresis", 1e9)
    over = [a for rec in recs for a in rec["alerts"] if a["type"] == "cost_over_bound"]
    assert code == 0 and over and all(a["realised_cost"] > a["bound"] for a in over)
    assert all(rec["event"] > 2000 for rec in recs if rec["alerts"])


def test_monitor_options_need_jsonl(drifting, tmp_path, capsys):
    code = main(["replay", str(drifting), "--score-col", "score", "--label-col", "fraud", "--fn-cost", "1",
                 "--fp-cost", "1", "--window", "10", "--out", str(tmp_path / "o.csv"), "--alert-jump", "1"])
    assert code == 2 and "need --jsonl" in capsys.readouterr().err
