"""`thors replay --segment-col`: each segment's threshold over its own window, checked row by row
against a brute force over the held events (count and time windows, per-event costs, pooling),
and the options it refuses."""

import csv
import io
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force

from thors_stream import StreamingThors
from thors_stream.cli import main

INF = float("inf")


def write(path, rows, header=("score", "label", "region")):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(str(int(v) if isinstance(v, bool) else v) for v in r) + "\n")


def replay(path, *extra, capsys=None):
    code = main(["replay", str(path), "--score-col", "score", "--label-col", "label", "--segment-col", "region",
                 "--out", "-", "--no-progress", *map(str, extra)])
    out = capsys.readouterr().out if capsys is not None else ""
    return code, list(csv.DictReader(io.StringIO(out)))


def cost_at(held, thr, fn, fp):
    """Exact cost, FPR and FNR of held (score, y, w) events at thr (flag iff score > thr)."""
    k1 = sum(Fraction(w) for s, y, w in held if y and s <= thr)
    f0 = sum(Fraction(w) for s, y, w in held if not y and s > thr)
    n1 = sum(Fraction(w) for _, y, w in held if y)
    n0 = sum(Fraction(w) for _, y, w in held if not y)
    return Fraction(fn) * k1 + Fraction(fp) * f0, (f0 / n0 if n0 else 0), (k1 / n1 if n1 else 0)


def expected_rows(events, window, every, min_per_class, fn, fp):
    """The rows a segmented replay must write: per written event, per segment seen so far (by
    name), the segment's own brute-force threshold over its last `window` events when each class
    has `min_per_class` of them, else the global one over the last `window` events."""
    out = []
    for i in range(len(events)):
        if (i + 1) % every and i != len(events) - 1:
            continue
        upto = events[: i + 1]
        glob = [(s, y, 1) for s, y, _ in upto[-window:]]
        for name in sorted({g for _, _, g in upto}):
            held = [(s, y, 1) for s, y, g in upto if g == name][-window:]
            n1 = sum(1 for _, y, _ in held if y)
            own = n1 >= min_per_class and len(held) - n1 >= min_per_class
            thr = brute_force(held if own else glob, fn, fp)[0]
            out.append((i + 1, name, thr, "segment" if own else "global", *cost_at(held, thr, fn, fp), len(held)))
    return out


def check(rows, want):
    assert len(rows) == len(want)
    for r, (event, name, thr, source, cost, fpr, fnr, held) in zip(rows, want):
        assert (int(r["event"]), r["segment"], r["source"], int(r["held"])) == (event, name, source, held)
        assert float(r["threshold"]) == thr
        assert float(r["cost"]) == pytest.approx(float(cost), rel=1e-12)
        assert float(r["fpr"]) == pytest.approx(float(fpr), abs=1e-12)
        assert float(r["fnr"]) == pytest.approx(float(fnr), abs=1e-12)


EVENT = st.tuples(st.sampled_from([0.1, 0.2, 0.2, 0.5, 0.7, 0.9]), st.booleans(), st.sampled_from(["a", "b", "c"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(EVENT, min_size=1, max_size=40), window=st.integers(1, 12), every=st.integers(1, 9),
       min_per_class=st.integers(1, 3), fn=st.sampled_from([1, 3, 10]))
def test_rows_equal_the_brute_force_per_segment(tmp_path, capsys, events, window, every, min_per_class, fn):
    p = tmp_path / "e.csv"
    write(p, events)
    code, rows = replay(p, "--fn-cost", fn, "--fp-cost", 2, "--window", window, "--every", every,
                        "--min-per-class", min_per_class, capsys=capsys)
    assert code == 0
    check(rows, expected_rows(events, window, every, min_per_class, fn, 2))


def test_time_windows_are_per_segment(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n, period = 300, 40
    t = np.cumsum(rng.integers(0, 3, n))
    events = [(round(float(s), 1), bool(y), g) for s, y, g in
              zip(rng.random(n), rng.random(n) < 0.3, rng.choice(["x", "y"], n, p=[0.9, 0.1]))]
    write(tmp_path / "t.csv", [(*e, int(ti)) for e, ti in zip(events, t)], header=("score", "label", "region", "ts"))
    code, rows = replay(tmp_path / "t.csv", "--fn-cost", 4, "--fp-cost", 1, "--period", period, "--time-col", "ts",
                        "--every", 50, "--min-per-class", 2, capsys=capsys)
    assert code == 0
    want = []
    for i in range(49, n, 50):
        now = t[i]
        glob = [(s, y, 1) for (s, y, _), tj in zip(events[: i + 1], t) if tj > now - period]
        for name in sorted({g for _, _, g in events[: i + 1]}):
            mine = [(e, tj) for e, tj in zip(events[: i + 1], t) if e[2] == name]
            newest = max(tj for _, tj in mine)  # a segment's window runs from its own newest event
            held = [(s, y, 1) for (s, y, _), tj in mine if tj > newest - period]
            n1 = sum(y for _, y, _ in held)
            own = n1 >= 2 and len(held) - n1 >= 2
            thr = brute_force(held if own else glob, 4, 1)[0]
            want.append((i + 1, name, thr, "segment" if own else "global", *cost_at(held, thr, 4, 1), len(held)))
    assert {r["time"] for r in rows} == {repr(float(t[i])) for i in range(49, n, 50)}
    check(rows, want)


def test_per_event_costs_give_the_money_lost_per_segment(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 400
    amount = np.round(rng.lognormal(3, 1, n), 2)
    events = [(round(float(s), 2), bool(y), g) for s, y, g in
              zip(rng.random(n), rng.random(n) < 0.2, rng.choice(["dom", "for"], n))]
    write(tmp_path / "m.csv", [(*e, a) for e, a in zip(events, amount)], header=("score", "label", "region", "amt"))
    code, rows = replay(tmp_path / "m.csv", "--fn-cost-col", "amt", "--fp-cost", 5, "--window", 150, "--every", 100,
                        "--min-per-class", 5, capsys=capsys)
    assert code == 0 and len(rows) == 8
    for r in rows:
        i, name = int(r["event"]), r["segment"]
        money = [(s, y, float(a) if y else 5.0) for (s, y, _), a in zip(events[:i], amount)]
        held = [m for m, (_, _, g) in zip(money, events[:i]) if g == name][-150:]
        assert r["source"] == "segment"
        thr, lost, _ = brute_force(held, 1, 1)  # every event weighs its own cost
        assert float(r["threshold"]) == thr
        assert float(r["cost"]) == pytest.approx(float(lost), rel=1e-12)


def test_pooled_thresholds_equal_the_brute_force_on_the_pooled_weights(tmp_path, capsys):
    rng = np.random.default_rng(6)
    n, lam = 300, 0.5
    events = [(round(float(s), 2), bool(y), g) for s, y, g in
              zip(rng.random(n), rng.random(n) < 0.3, rng.choice(["a", "b", "c"], n, p=[0.7, 0.25, 0.05]))]
    write(tmp_path / "p.csv", events)
    # one written row per segment, at the end: each pooled threshold computed then (not a cached one)
    code, rows = replay(tmp_path / "p.csv", "--fn-cost", 3, "--fp-cost", 1, "--window", 200, "--every", n,
                        "--pool-weight", lam, capsys=capsys)
    assert code == 0 and [r["segment"] for r in rows] == ["a", "b", "c"]
    glob = [(s, y, Fraction(lam)) for s, y, _ in events[-200:]]
    for r in rows:
        mine = [(s, y, 1) for s, y, g in events if g == r["segment"]][-200:]
        assert r["source"] == "pooled"
        assert float(r["threshold"]) == brute_force(mine + glob, 3, 1)[0]


def test_constrained_rows_follow_each_segments_summary(tmp_path, capsys):
    rng = np.random.default_rng(7)
    n = 600
    events = [(round(float(s), 3), bool(y), g) for s, y, g in
              zip(rng.random(n), rng.random(n) < 0.3, rng.choice(["a", "b"], n))]
    write(tmp_path / "c.csv", events)
    code, rows = replay(tmp_path / "c.csv", "--fn-cost", 3, "--fp-cost", 1, "--window", 100, "--every", 200,
                        "--max-fpr", 0.3, "--min-per-class", 5, capsys=capsys)
    assert code == 0 and len(rows) == 6
    for r in rows:
        i = int(r["event"])
        one = StreamingThors(fn_cost=3, fp_cost=1, window=100, max_fpr=0.3)
        for s, y, g in events[:i]:
            if g == r["segment"]:
                one.update(s, y)
        assert r["source"] == "segment" and float(r["threshold"]) == one.get()


@pytest.mark.parametrize(("extra", "message"), [
    (["--jsonl", "m.jsonl"], "--jsonl: not with --segment-col"),
    (["--plot", "p.png"], "--plot: not with --segment-col"),
    (["--hysteresis", "0.1", "--alert-jump", "0.2"], "--hysteresis, --alert-jump: not with --segment-col"),
    (["--pool-weight", "0.5", "--max-fpr", "0.1"], "--pool-weight does not combine with --max-fpr"),
])
def test_refused_combinations_name_the_options(tmp_path, capsys, extra, message):
    write(tmp_path / "e.csv", [(0.1, 0, "a"), (0.9, 1, "a")])
    out = tmp_path / "o.csv"
    code = main(["replay", str(tmp_path / "e.csv"), "--score-col", "score", "--label-col", "label", "--segment-col",
                 "region", "--fn-cost", "1", "--fp-cost", "1", "--window", "5", "--out", str(out),
                 *[str(tmp_path / a) if a.endswith((".jsonl", ".png")) else a for a in extra]])
    assert code == 2 and message in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--pool-weight", "0.5"], "--pool-weight needs --segment-col"),
    (["--min-per-class", "3"], "--min-per-class needs --segment-col"),
])
def test_segment_options_need_the_segment_column(tmp_path, capsys, extra, message):
    write(tmp_path / "e.csv", [(0.1, 0, "a"), (0.9, 1, "a")])
    code = main(["replay", str(tmp_path / "e.csv"), "--score-col", "score", "--label-col", "label", "--fn-cost", "1",
                 "--fp-cost", "1", "--window", "5", "--out", str(tmp_path / "o.csv"), *extra])
    assert code == 2 and message in capsys.readouterr().err and not (tmp_path / "o.csv").exists()


def test_a_missing_segment_column_is_named_and_nothing_is_written(tmp_path, capsys):
    write(tmp_path / "e.csv", [(0.1, 0, "a"), (0.9, 1, "a")])
    out = tmp_path / "o.csv"
    code = main(["replay", str(tmp_path / "e.csv"), "--score-col", "score", "--label-col", "label", "--segment-col",
                 "merchant", "--fn-cost", "1", "--fp-cost", "1", "--window", "5", "--out", str(out)])
    assert code == 2 and "merchant" in capsys.readouterr().err and not out.exists()


def test_a_segment_below_support_under_a_rate_cap_takes_the_global_threshold(tmp_path, capsys):
    rng = np.random.default_rng(0)
    events = [(round(float(s), 4), bool(y), "big") for s, y in zip(rng.random(400), rng.random(400) < 0.3)]
    events.append((0.5, True, "small"))
    write(tmp_path / "np.csv", events)
    code, rows = replay(tmp_path / "np.csv", "--fn-cost", 1, "--fp-cost", 1, "--window", 1000, "--every", 401,
                        "--max-fpr", 0.05, capsys=capsys)
    assert code == 0
    big, small = rows
    assert small["source"] == "global" and small["threshold"] == big["threshold"] != "None"
    assert small["fnr"] == ("0.0" if float(small["threshold"]) < 0.5 else "1.0")


def test_a_pool_weight_out_of_range_is_refused_before_reading(tmp_path, capsys):
    code = main(["replay", str(tmp_path / "absent.csv"), "--score-col", "score", "--label-col", "label",
                 "--segment-col", "region", "--fn-cost", "1", "--fp-cost", "1", "--window", "5", "--pool-weight",
                 "0", "--out", str(tmp_path / "o.csv")])
    assert code == 2 and "--pool-weight must be in [2**-32, 2**32]" in capsys.readouterr().err


def test_many_segments_each_get_their_rows(tmp_path, capsys):
    rng = np.random.default_rng(8)
    n = 3000
    events = [(round(float(s), 3), bool(y), f"m{g}") for s, y, g in
              zip(rng.random(n), rng.random(n) < 0.3, rng.integers(0, 1500, n))]
    write(tmp_path / "m.csv", events)
    code, rows = replay(tmp_path / "m.csv", "--fn-cost", 2, "--fp-cost", 1, "--window", 50, "--every", n,
                        "--min-per-class", 1, capsys=capsys)
    assert code == 0
    held = {}
    for _, _, g in events:
        held[g] = min(held.get(g, 0) + 1, 50)
    assert {r["segment"]: int(r["held"]) for r in rows} == held
