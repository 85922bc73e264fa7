"""`thors fit` / `thors replay` deciding in money: per-event cost columns, `--decide-on margin`,
the release file's decision rule, baselines across rules, reports, segments, bad input."""

import csv
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force

from thors_stream import thors_threshold
from thors_stream.cli import EXIT_INPUT, EXIT_SHIFT, main
from thors_stream.margin import cost_margins
from thors_stream.release import read_release, release_decision, release_predict, validate_release

BASE = ["--score-col", "p", "--label-col", "fraud"]
MARGIN = ["--fn-cost-col", "amount", "--fp-cost", 5, "--decide-on", "margin"]


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_csv(path, cols):
    names = list(cols)
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for row in zip(*(cols[k] for k in names)):
            f.write(",".join(str(v) if not isinstance(v, float) else repr(v) for v in row) + "\n")


@pytest.fixture(scope="module")
def pay(tmp_path_factory):
    """Payments: probabilities (a miscalibrated model), integer amounts (exact sums), a fee, two categories."""
    rng = np.random.default_rng(11)
    n = 1500
    y = rng.random(n) < 0.08
    cat = rng.choice(["food", "travel"], n)
    logit = -2.0 + 2.0 * y + 0.8 * (cat == "travel") + rng.normal(0, 1, n)
    p = np.round(1 / (1 + np.exp(-logit)), 4)
    p[:5] = [0.0, 1.0, 0.0, 1.0, 0.5]  # clipped ends and a tie
    amt = rng.integers(1, 400, n).astype(float)
    fee = rng.integers(2, 6, n).astype(float)
    path = tmp_path_factory.mktemp("pay") / "pay.csv"
    write_csv(path, {"p": p.tolist(), "fraud": y.astype(int).tolist(), "amount": amt.tolist(),
                     "fee": fee.tolist(), "cat": cat.tolist()})
    return path, p, y, amt, fee, cat


def money_lost(flag, y, fn, fp):
    fn, fp = np.broadcast_to(fn, y.shape), np.broadcast_to(fp, y.shape)
    return float(fn[y & ~flag].sum() + fp[~y & flag].sum())


# ------------------------------------------------------------------ 1. fit and replay in money
def test_fit_margin_is_thors_threshold_on_the_margin(pay, capsys):
    path, p, y, amt, fee, _ = pay
    code, out, _ = run(["fit", path, *BASE, *MARGIN, "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    r = thors_threshold(p, y, fn_cost=amt, fp_cost=5.0, decide_on="margin")
    assert d["decide_on"] == "margin" and d["threshold"] == r.threshold and d["cost"] == r.cost
    # the cost is the money the rule loses on the file
    flag = cost_margins(p, amt, 5.0) > d["threshold"]
    assert d["cost"] == money_lost(flag, y, amt, 5.0)
    # both costs per event, and the score mode with per-event costs (weights on the raw score)
    _, out, _ = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost-col", "fee", "--decide-on", "margin",
                     "--json"], capsys)
    assert json.loads(out)["threshold"] == thors_threshold(p, y, fn_cost=amt, fp_cost=fee, decide_on="margin").threshold
    _, out, _ = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost", 5, "--json"], capsys)
    d = json.loads(out)
    r = thors_threshold(p, y, fn_cost=amt, fp_cost=5.0)
    assert d["decide_on"] == "score" and d["threshold"] == r.threshold and d["cost"] == r.cost
    assert d["cost"] == money_lost(p > d["threshold"], y, amt, 5.0)


def test_fit_margin_with_scalar_costs(pay, capsys):
    """The cut is on logit(p) + log(fn / fp): the Bayes rule's offset is in the margin, not the threshold."""
    path, p, y, *_ = pay
    code, out, _ = run(["fit", path, *BASE, "--fn-cost", 100, "--fp-cost", 5, "--decide-on", "margin", "--json"],
                       capsys)
    d = json.loads(out)
    r = thors_threshold(p, y, fn_cost=100.0, fp_cost=5.0, decide_on="margin")
    assert code == 0 and d["threshold"] == r.threshold and d["cost"] == r.cost
    flag = cost_margins(p, 100.0, 5.0) > d["threshold"]
    assert d["cost"] == money_lost(flag, y, 100.0, 5.0)
    # the same decisions as the score mode's cut (a monotone map of p), the same money
    _, out, _ = run(["fit", path, *BASE, "--fn-cost", 100, "--fp-cost", 5, "--json"], capsys)
    s = json.loads(out)
    assert s["cost"] == d["cost"] and np.array_equal(p > s["threshold"], flag)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.05, 0.2, 0.5, 0.8, 1.0]), st.booleans(),
                          st.integers(1, 40), st.integers(1, 4)), min_size=2, max_size=30))
def test_fit_margin_equals_the_brute_force_oracle(tmp_path, capsys, events):
    """Ties (repeated probabilities and costs, clipped ends) and per-event weights: the exact money optimum."""
    if len({yy for _, yy, _, _ in events}) < 2:
        events = [*events, (0.5, not events[0][1], 3, 2)]
    p = np.array([e[0] for e in events])
    y = np.array([e[1] for e in events])
    fn = np.array([float(e[2]) for e in events])
    fp = np.array([float(e[3]) for e in events])
    path = tmp_path / "h.csv"
    write_csv(path, {"p": p.tolist(), "fraud": y.astype(int).tolist(), "amount": fn.tolist(), "fee": fp.tolist()})
    code, out, err = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost-col", "fee", "--decide-on",
                          "margin", "--min-per-class", 1, "--json", "--engine", "python"], capsys)
    assert code == 0, err
    d = json.loads(out)
    m = cost_margins(p, fn, fp)
    thr, best, _ = brute_force(list(zip(m.tolist(), y.tolist(), np.where(y, fn, fp).tolist())), 1, 1)
    assert (-math.inf if d["threshold"] == "-inf" else d["threshold"]) == thr and d["cost"] == best


def test_cost_given_twice_or_missing(pay, capsys):
    path, *_ = pay
    for cmd in (["fit"], ["replay", "--window", 100, "--out", "-"]):
        code, _, err = run([cmd[0], path, *BASE, "--fn-cost", 3, "--fn-cost-col", "amount", "--fp-cost", 1, *cmd[1:]],
                           capsys)
        assert code == EXIT_INPUT and "give --fn-cost or --fn-cost-col, not both" in err and err.count("\n") == 1
        code, _, err = run([cmd[0], path, *BASE, "--fn-cost", 3, "--fp-cost-col", "fee", "--fp-cost", 1, *cmd[1:]],
                           capsys)
        assert code == EXIT_INPUT and "give --fp-cost or --fp-cost-col, not both" in err
        code, _, err = run([cmd[0], path, *BASE, "--fn-cost-col", "amount", *cmd[1:]], capsys)
        assert code == EXIT_INPUT and "--fp-cost (or --fp-cost-col) is required" in err
        code, _, err = run([cmd[0], path, *BASE, *MARGIN, "--class-prior", 0.1, *cmd[1:]], capsys)
        assert code == EXIT_INPUT and "--class-prior" in err


BAD_COSTS = [("", "fn cost is not a number: ''"), ("abc", "fn cost is not a number: 'abc'"),
             ("inf", "fn cost must be finite, got 'inf'"), ("nan", "fn cost must be finite, got 'nan'"),
             ("0", "fn cost must be > 0, got '0'"), ("-3", "fn cost must be > 0, got '-3'")]


@pytest.mark.parametrize("engine", ["python", "auto"])
@pytest.mark.parametrize("value,why", BAD_COSTS)
def test_bad_cost_value_names_file_line_and_column(tmp_path, capsys, engine, value, why):
    path = tmp_path / "b.csv"
    path.write_text(f"p,fraud,amount\n0.1,1,5\n0.3,0,7\n\n0.2,0,{value}\n0.9,1,8\n")
    rel, traj = tmp_path / "rel.json", tmp_path / "t.csv"
    traj.write_text("an earlier run\n")
    code, out, err = run(["fit", path, *BASE, *MARGIN, "--min-per-class", 1, "--out", rel, "--engine", engine], capsys)
    assert code == EXIT_INPUT and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"{path} line 5: {why} (column 'amount')" in err and not rel.exists()
    code, _, err = run(["replay", path, *BASE, *MARGIN, "--window", 10, "--out", traj, "--engine", engine], capsys)
    assert code == EXIT_INPUT and f"{path} line 5: {why} (column 'amount')" in err
    assert traj.read_text() == "an earlier run\n"


@pytest.mark.parametrize("value", ["1.5", "-0.1", "-1e-300"])
def test_probability_outside_01_in_margin_mode(tmp_path, capsys, value):
    path = tmp_path / "b.csv"
    path.write_text(f"p,fraud,amount\n0.1,1,5\n{value},0,7\n0.9,1,8\n")
    rel = tmp_path / "rel.json"
    for engine in ("python", "auto"):
        code, out, err = run(["fit", path, *BASE, *MARGIN, "--min-per-class", 1, "--out", rel, "--engine", engine],
                             capsys)
        assert code == EXIT_INPUT and out == "" and err.count("\n") == 1 and not rel.exists()
        assert f"{path} line 3: score must be a probability in [0, 1]" in err and f"'{value}' (column 'p')" in err
    # the score mode thresholds raw scores: the same file is fine
    code, _, _ = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost", 5, "--min-per-class", 1], capsys)
    assert code == 0


def test_bad_values_in_parquet_name_row_and_column(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"p": [0.1, 0.2, 0.9], "fraud": [1, 0, 1], "amount": [5.0, -1.0, 8.0]}), path)
    code, _, err = run(["fit", path, *BASE, *MARGIN, "--min-per-class", 1], capsys)
    assert code == EXIT_INPUT and f"{path} row 2: fn cost must be > 0, got -1.0 (column 'amount')" in err
    pq.write_table(pa.table({"p": [0.1, 2.0, 0.9], "fraud": [1, 0, 1], "amount": [5.0, 1.0, 8.0]}), path)
    code, _, err = run(["fit", path, *BASE, *MARGIN, "--min-per-class", 1], capsys)
    assert code == EXIT_INPUT and f"{path} row 2: score must be a probability in [0, 1]" in err and "'p'" in err
    pq.write_table(pa.table({"p": [0.1, 0.2, 0.9], "fraud": [1, 0, 1], "amount": [5.0, None, 8.0]}), path)
    code, _, err = run(["fit", path, *BASE, *MARGIN, "--min-per-class", 1], capsys)
    assert code == EXIT_INPUT and f"{path} row 2: fn_cost is null (empty) (column 'amount')" in err


def test_replay_margin_learns_margins_weighted_by_money(pay, tmp_path, capsys):
    path, p, y, amt, _, _ = pay
    out = tmp_path / "t.csv"
    code, _, err = run(["replay", path, *BASE, *MARGIN, "--window", 400, "--every", 250, "--out", out], capsys)
    assert code == 0 and "on the cost margin: flag iff logit(p) + log(amount / 5.0) > threshold" in err
    rows = list(csv.DictReader(open(out)))
    assert [int(r["event"]) for r in rows] == list(range(250, 1501, 250))
    for r in rows:
        i = int(r["event"])
        lo = max(0, i - 400)
        want = thors_threshold(p[lo:i], y[lo:i], fn_cost=amt[lo:i], fp_cost=5.0, decide_on="margin")
        assert float(r["threshold"]) == want.threshold and float(r["cost"]) == want.cost
        assert int(r["held"]) == i - lo


def test_replay_monitor_counts_money(pay, tmp_path, capsys):
    """The realised cost of the decisions taken with the published cut is the money they lost; no
    cost-over-bound alert (a money cost has no distribution-free bound)."""
    path, p, y, amt, _, _ = pay
    out, log = tmp_path / "t.csv", tmp_path / "m.jsonl"
    code, _, _ = run(["replay", path, *BASE, *MARGIN, "--window", 300, "--every", 100, "--out", out,
                      "--jsonl", log, "--alert-jump", 0.5], capsys)
    assert code == 0
    recs = [json.loads(line) for line in open(log)]
    m = cost_margins(p, amt, 5.0)
    pub, acc, prev = None, 0.0, 0
    assert sum(rec["realised_cost"] > 0 for rec in recs) >= 5
    for rec in recs:
        for i in range(prev, rec["event"]):
            if pub is not None:
                flag = m[i] > pub
                acc += amt[i] if (y[i] and not flag) else 5.0 if (not y[i] and flag) else 0.0
        prev = rec["event"]
        assert rec["decide_on"] == "margin" and rec["realised_cost"] == pytest.approx(acc, rel=1e-12)
        assert all(a["type"] == "threshold_jump" for a in rec["alerts"])
        if rec["threshold"] != pub:
            pub, acc = rec["threshold"], 0.0


# ------------------------------------------------------------------ 2. the release records the rule
def test_release_records_the_rule_and_applies_it(pay, tmp_path, capsys):
    path, p, y, amt, *_ = pay
    rel = tmp_path / "rel.json"
    assert run(["fit", path, *BASE, *MARGIN, "--out", rel], capsys)[0] == 0
    doc = read_release(str(rel))
    dec = doc["decision"]
    assert dec["decide_on"] == "margin" and dec["score_col"] == "p"
    assert dec["fn_cost"] == {"column": "amount"} and dec["fp_cost"] == {"value": 5.0}
    assert dec["apply"] == "flag iff logit(p) + log(amount / 5.0) > threshold, p clipped to [2**-40, 1 - 2**-40]"
    assert dec["proba_clip"] == 2.0**-40 and doc["parameters"]["decide_on"] == "margin"
    r = thors_threshold(p, y, fn_cost=amt, fp_cost=5.0, decide_on="margin")
    assert doc["global"]["threshold"] == r.threshold and doc["global"]["cost"] == r.cost
    assert doc["global"]["n1"] == amt[y].sum()  # the FN cost at stake
    new_p, new_amt = np.array([0.01, 0.01, 0.3]), np.array([2000.0, 20.0, 50.0])
    got = release_predict(doc, new_p, fn_cost=new_amt)
    assert got.tolist() == r.predict(new_p, fn_cost=new_amt, fp_cost=5.0).tolist()
    with pytest.raises(ValueError, match="give fn_cost="):
        release_predict(doc, new_p)
    with pytest.raises(ValueError, match="another rule"):
        release_predict(doc, new_p, fn_cost=new_amt, fp_cost=9.0)
    other_clip = {**doc, "decision": {**dec, "proba_clip": 1e-6}}
    with pytest.raises(ValueError, match="clips probabilities to 1e-06"):
        release_predict(other_clip, new_p, fn_cost=new_amt)
    # a score release says so and applies as score > threshold
    rel2 = tmp_path / "s.json"
    assert run(["fit", path, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--out", rel2], capsys)[0] == 0
    doc2 = read_release(str(rel2))
    assert doc2["decision"]["decide_on"] == "score" and doc2["decision"]["apply"] == "flag iff p > threshold"
    assert release_predict(doc2, p).tolist() == (p > doc2["global"]["threshold"]).tolist()
    with pytest.raises(ValueError, match="decides on the score"):
        release_predict(doc2, p, fn_cost=amt)
    bad = json.loads(rel.read_text())
    bad["decision"]["decide_on"] = "probability"
    with pytest.raises(ValueError, match="decide_on"):
        validate_release(bad)


def test_release_without_decision_is_a_score_release(pay, tmp_path, capsys):
    """Files written before the decision was recorded load, decide on the score and compare as before."""
    path, p, y, *_ = pay
    rel = tmp_path / "old.json"
    assert run(["fit", path, *BASE, "--fn-cost", 2, "--fp-cost", 1, "--out", rel], capsys)[0] == 0
    doc = json.loads(rel.read_text())
    del doc["decision"]
    for k in ("decide_on",):
        doc["parameters"].pop(k)
    rel.write_text(json.dumps(doc))
    old = read_release(str(rel))
    assert release_decision(old)["decide_on"] == "score"
    assert release_decision(old)["fn_cost"] == {"value": 2.0}
    code, out, _ = run(["fit", path, *BASE, "--fn-cost", 20, "--fp-cost", 1, "--baseline", rel, "--json"], capsys)
    b = json.loads(out)["baseline"]
    new = thors_threshold(p, y, fn_cost=20, fp_cost=1)
    assert code == 0 and b["rule_change"] is None and b["decide_on"] == "score"
    assert b["shift"] == pytest.approx(abs(new.threshold - old["global"]["threshold"]))


def test_baseline_across_modes_is_a_rule_change(pay, tmp_path, capsys):
    path, p, y, amt, *_ = pay
    score_rel, new_rel = tmp_path / "score.json", tmp_path / "new.json"
    assert run(["fit", path, *BASE, "--fn-cost", 30, "--fp-cost", 5, "--out", score_rel], capsys)[0] == 0
    old_thr = read_release(str(score_rel))["global"]["threshold"]
    args = ["fit", path, *BASE, *MARGIN, "--baseline", score_rel, "--out", new_rel]
    code, out, err = run([*args, "--max-shift", 1e9], capsys)  # any limit: a rule change is not a shift
    assert code == EXIT_SHIFT and err.count("\n") == 1 and not new_rel.exists()
    assert "the decision rule changes from score (flag iff p > threshold) to margin" in err and "--force" in err
    code, out, _ = run([*args, "--max-shift", 1e9, "--force"], capsys)
    assert code == 0 and "the decision rule changes from score to margin: not a shift" in out and "forced" in out
    b = read_release(str(new_rel))["baseline"]
    r = thors_threshold(p, y, fn_cost=amt, fp_cost=5.0, decide_on="margin")
    assert b["shift"] is None and b["decide_on"] == "score" and b["forced"] is True
    assert b["rule_change"]["from"] == "score" and b["rule_change"]["to"] == "margin"
    assert b["rule_change"]["was"] == "flag iff p > threshold" and "logit(p)" in b["rule_change"]["now"]
    # the deployed rule's decisions, counted in this run's money
    assert b["cost"] == money_lost(p > old_thr, y, amt, 5.0) and b["new_cost"] == r.cost
    assert b["saving"] == b["cost"] - r.cost
    # and back: a margin release as the baseline of a score run (its cost column read for it)
    code, out, _ = run(["fit", path, *BASE, "--fn-cost", 30, "--fp-cost", 5, "--baseline", new_rel, "--json"],
                       capsys)
    b = json.loads(out)["baseline"]
    deployed = cost_margins(p, amt, 5.0) > r.threshold
    assert code == 0 and b["rule_change"]["from"] == "margin" and b["shift"] is None
    assert b["cost"] == money_lost(deployed, y, 30.0, 5.0)


def test_baseline_margin_to_margin(pay, tmp_path, capsys):
    """Same costs: a shift of the cut. Other costs: another margin scale, a rule change."""
    path, p, y, amt, fee, _ = pay
    rel = tmp_path / "m.json"
    assert run(["fit", path, *BASE, *MARGIN, "--out", rel], capsys)[0] == 0
    code, out, _ = run(["fit", path, *BASE, *MARGIN, "--baseline", rel, "--max-shift", 0, "--json"], capsys)
    b = json.loads(out)["baseline"]
    assert code == 0 and b["rule_change"] is None and b["shift"] == 0.0 and b["saving"] == 0.0
    code, out, err = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost-col", "fee", "--decide-on",
                          "margin", "--baseline", rel, "--max-shift", 100], capsys)
    assert code == EXIT_SHIFT and "log(amount / 5.0)" in err and "log(amount / fee)" in err
    code, out, _ = run(["fit", path, *BASE, "--fn-cost-col", "amount", "--fp-cost-col", "fee", "--decide-on",
                        "margin", "--baseline", rel, "--json"], capsys)
    b = json.loads(out)["baseline"]
    old_thr = read_release(str(rel))["global"]["threshold"]
    assert code == 0 and b["shift"] is None and b["rule_change"]["from"] == b["rule_change"]["to"] == "margin"
    assert b["cost"] == money_lost(cost_margins(p, amt, 5.0) > old_thr, y, amt, fee)


def test_baseline_margin_from_stdin_needs_its_columns(pay, tmp_path, capsys, monkeypatch):
    import io
    import sys

    path, *_ = pay
    rel = tmp_path / "m.json"
    assert run(["fit", path, *BASE, *MARGIN, "--out", rel], capsys)[0] == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    code, _, err = run(["fit", "-", *BASE, "--fn-cost", 3, "--fp-cost", 1, "--baseline", rel], capsys)
    assert code == EXIT_INPUT and "['amount']" in err and "standard input" in err and err.count("\n") == 1


# ------------------------------------------------------------------ 3. the reports say the mode and the money
def test_text_and_json_reports_say_mode_and_money(pay, capsys):
    path, p, y, amt, *_ = pay
    code, out, _ = run(["fit", path, *BASE, *MARGIN], capsys)
    assert code == 0
    assert "decide on     the cost margin (money): flag iff logit(p) + log(amount / 5.0)" in out
    assert "(on the cost margin; 0 is the per-event Bayes rule)" in out
    assert "money lost" in out and "a missed positive costs amount, a false alarm 5 each" in out
    assert f"at stake      {amt[y].sum():,.6g} on the positives" in out and "event rates" in out
    _, out, _ = run(["fit", path, *BASE, *MARGIN, "--json"], capsys)
    d = json.loads(out)
    m = d["money"]
    assert d["cost_unit"] == "money" and d["decision"]["decide_on"] == "margin"
    assert m["lost"] == m["missed_positives"] + m["false_alarms"] == d["cost"]
    assert m["fn_at_stake"] == amt[y].sum() and m["fp_at_stake"] == 5.0 * (~y).sum()
    flag = cost_margins(p, amt, 5.0) > d["threshold"]
    assert m["missed_positives"] == amt[y & ~flag].sum() and m["false_alarms"] == 5.0 * (~y & flag).sum()
    _, out, _ = run(["fit", path, *BASE, "--fn-cost", 10, "--fp-cost", 1], capsys)
    assert "decide on     the score: flag iff p > threshold" in out and "money" not in out
    _, out, _ = run(["fit", path, *BASE, "--fn-cost", 10, "--fp-cost", 1, "--json"], capsys)
    d = json.loads(out)
    assert d["cost_unit"] == "cost" and "money" not in d and d["decision"]["decide_on"] == "score"


# ------------------------------------------------------------------ 4. segments compose
def test_segments_in_margin_mode(pay, tmp_path, capsys):
    path, p, y, amt, _, cat = pay
    rel = tmp_path / "rel.json"
    code, out, _ = run(["fit", path, *BASE, *MARGIN, "--segment-col", "cat", "--out", rel], capsys)
    assert code == 0 and "money lost" in out
    doc = read_release(str(rel))
    assert doc["decision"]["segment_col"] == "cat" and "segment" in doc["decision"]["apply"]
    for k in ("food", "travel"):
        m = cat == k
        r = thors_threshold(p[m], y[m], fn_cost=amt[m], fp_cost=5.0, decide_on="margin")
        assert doc["segments"][k]["source"] == "segment"
        assert doc["segments"][k]["threshold"] == r.threshold and doc["segments"][k]["cost"] == r.cost
    got = release_predict(doc, p, fn_cost=amt, segments=cat)
    thr = np.where(cat == "food", doc["segments"]["food"]["threshold"], doc["segments"]["travel"]["threshold"])
    assert got.tolist() == (cost_margins(p, amt, 5.0) > thr).tolist()
    code, out, _ = run(["fit", path, *BASE, *MARGIN, "--segment-col", "cat", "--pool-weight", 0.1, "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and {v["source"] for v in d["segments"].values()} == {"pooled"}


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda d: d["decision"].update(fp_cost={"value": 0}), "release.decision.fp_cost.value: must be > 0, got 0"),
    (lambda d: d["decision"].update(fn_cost={"column": "nope"}),
     "--baseline {rel} decides with the cost column(s) ['nope']: "),
])
def test_a_hand_edited_baseline_is_named_in_the_error(pay, tmp_path, capsys, edit, needle):
    path, *_ = pay
    rel = tmp_path / "rel.json"
    assert run(["fit", path, *BASE, *MARGIN, "--out", rel], capsys)[0] == 0
    doc = json.loads(rel.read_text())
    edit(doc)
    rel.write_text(json.dumps(doc))
    code, _, err = run(["fit", path, *BASE, *MARGIN, "--baseline", rel], capsys)
    assert code == 2 and needle.format(rel=rel) in err and str(rel) in err


def test_a_release_file_with_a_name_given_twice_is_refused(pay, tmp_path, capsys):
    path, *_ = pay
    rel = tmp_path / "rel.json"
    assert run(["fit", path, *BASE, "--fn-cost", 30, "--fp-cost", 5, "--out", rel], capsys)[0] == 0
    text = rel.read_text()
    rel.write_text(text.replace('"threshold": ', '"threshold": 5.0, "threshold": ', 1))
    code, _, err = run(["fit", path, *BASE, "--fn-cost", 30, "--fp-cost", 5, "--baseline", rel], capsys)
    assert code == 2 and "the name 'threshold' appears twice in one object" in err
