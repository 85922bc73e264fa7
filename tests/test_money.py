"""progressive_money: money lost by a model and by the Bayes rule, the plain cut and Elkan's cut,
with per-event costs and label delays, against a plain re-implementation."""

from __future__ import annotations

import collections
import importlib.util
import math
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream.money import MoneyReport, RuleMoney, progressive_money

ROOT = Path(__file__).resolve().parents[1]

# probabilities with ties at every cut the rules use (0.5, fp/(fp+fn) for fn=15, fp=5 is 0.25)
probs = st.sampled_from([0.0, 0.05, 0.25, 0.5, 0.75, 1.0]) | st.floats(0.0, 1.0)
amounts = st.sampled_from([1.0, 5.0, 15.0, 20.0, 95.0]) | st.integers(1, 400).map(float)
stream = st.lists(st.tuples(probs, st.booleans(), amounts, st.booleans(), st.sampled_from([1.0, 2.0, 5.0])),
                  min_size=1, max_size=40)


class Scripted:
    """A model that reads its probability and its decision off ``x`` and records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def predict_proba_one(self, x):
        self.calls.append(("proba", x["i"]))
        return {True: x["p"], False: 1.0 - x["p"]}

    def predict_one(self, x, **kw):
        self.calls.append(("predict", x["i"], kw.get("key")))
        return x["flag"]

    def learn_one(self, x, y, **kw):
        self.calls.append(("learn", x["i"], kw.get("key")))


def events(rows):
    return [({"i": i, "p": p, "flag": flag, "amount": a, "fee": fee}, y) for i, (p, y, a, flag, fee) in enumerate(rows)]


def reference(rows, fn_of, fp_of, burn_in, elkan):
    """Money lost per rule, written out plainly."""
    lost = collections.defaultdict(float)
    counts = collections.defaultdict(int)
    for i, (p, y, a, flag, fee) in enumerate(rows):
        if i < burn_in:
            continue
        x = {"amount": a, "fee": fee}
        fn, fp = fn_of(x), fp_of(x)
        rules = {"model": flag, "bayes": p * fn > (1 - p) * fp, "plain": p > 0.5}
        if elkan is not None:
            rules["elkan"] = p > elkan
        for name, flagged in rules.items():
            counts[name, "flagged"] += flagged
            if y and not flagged:
                lost[name] += fn
                counts[name, "missed"] += 1
            if flagged and not y:
                lost[name] += fp
                counts[name, "alarms"] += 1
    return lost, counts


@settings(max_examples=60, deadline=None)
@given(rows=stream, burn_in=st.integers(0, 5), per_event=st.booleans())
def test_money_equals_a_plain_count(rows, burn_in, per_event):
    if per_event:
        fn_cost, fp_cost, elkan = "amount", (lambda x: x["fee"]), None
        fn_of, fp_of = (lambda x: x["amount"]), (lambda x: x["fee"])
    else:
        fn_cost, fp_cost, elkan = 15.0, 5, 0.25
        fn_of, fp_of = (lambda x: 15.0), (lambda x: 5.0)
    report = progressive_money(events(rows), Scripted(), fn_cost=fn_cost, fp_cost=fp_cost, burn_in=burn_in)
    lost, counts = reference(rows, fn_of, fp_of, burn_in, elkan)
    assert list(report.rules) == ["model", "bayes", "plain"] + (["elkan"] if elkan is not None else [])
    for name, r in report.rules.items():
        assert r.lost == pytest.approx(lost[name], rel=1e-12, abs=1e-9), name
        assert (r.flagged, r.missed, r.false_alarms) == (counts[name, "flagged"], counts[name, "missed"],
                                                         counts[name, "alarms"]), name
        assert r.lost == pytest.approx(r.missed_money + r.alarm_money)
    counted = rows[burn_in:]
    assert report.seen == len(rows) and report.events == len(counted)
    assert report.positives == sum(y for _, y, *_ in counted)
    assert report.at_stake == pytest.approx(sum(fn_of({"amount": a, "fee": f}) for _, y, a, _, f in counted if y))


def test_hand_checked_stream():
    # fee 5; Bayes flags iff p * amount > (1 - p) * 5
    rows = [  # p, fraud, amount, the model's flag, fee
        (0.10, True, 20.0, False, 5.0),   # Bayes: 2 < 4.5, not flagged: misses 20; model misses 20
        (0.10, False, 40.0, True, 5.0),   # Bayes: 4 < 4.5, no; model: a false alarm, 5
        (0.10, True, 200.0, True, 5.0),   # Bayes: 20 > 4.5, flagged; model flagged
        (0.60, False, 1.0, False, 5.0),   # Bayes: 0.6 < 2, no; plain flags it: 5
        (0.50, True, 9.0, False, 5.0),    # Bayes: 4.5 > 2.5, flagged; plain: 0.5 is not > 0.5, misses 9
    ]
    report = progressive_money(events(rows), Scripted(), fn_cost="amount", fp_cost=5.0)
    assert report.rules["model"] == RuleMoney(flagged=2, missed=2, missed_money=29.0, false_alarms=1, alarm_money=5.0)
    assert report.rules["bayes"] == RuleMoney(flagged=2, missed=1, missed_money=20.0, false_alarms=0, alarm_money=0.0)
    assert report.rules["plain"] == RuleMoney(flagged=1, missed=3, missed_money=229.0, false_alarms=1,
                                              alarm_money=5.0)
    assert report.lost == 34.0 and report.ratio() == 34.0 / 20.0 and report.ratio("plain") == 234.0 / 20.0
    assert (report.events, report.positives, report.at_stake) == (5, 3, 229.0)
    assert "elkan" not in report.rules
    text = str(report)
    assert "| bayes | 20.00 | 1.000 |" in text and "| model | 34.00 | 1.700 |" in text


def test_ratio_edges():
    zero = RuleMoney(0, 0, 0.0, 0, 0.0)
    report = MoneyReport(seen=1, events=1, positives=0, at_stake=0.0,
                         rules={"model": RuleMoney(1, 0, 0.0, 1, 5.0), "bayes": zero, "plain": zero})
    assert report.ratio() == math.inf and math.isnan(report.ratio("plain"))


def order(delay, n, keys=False):
    model = Scripted()
    rows = [(0.5, bool(i % 2), 10.0, False, 5.0) for i in range(n)]
    progressive_money(events(rows), model, fn_cost="amount", fp_cost=5.0, delay=delay, use_keys=keys)
    return model.calls


@pytest.mark.parametrize("delay", [0, 1, 3, 10])
def test_labels_arrive_delay_events_late(delay):
    n = 7
    calls = [c for c in order(delay, n) if c[0] != "proba"]
    decided = [c[1] for c in calls if c[0] == "predict"]
    learned = [c[1] for c in calls if c[0] == "learn"]
    assert decided == learned == list(range(n))  # every label is learned, in order
    for j in range(n):
        at = calls.index(("learn", j, None))
        later = [c[1] for c in calls[:at] if c[0] == "predict" and c[1] > j]
        # the label of j is learned just before j + delay is decided (delay 0 or 1: before the next)
        assert later == list(range(j + 1, min(j + max(delay, 1), n)))


@pytest.mark.parametrize("delay", [0, 1, 4])
def test_the_order_of_calls_is_river_progressive_val_score(delay):
    from river import base, evaluate, metrics

    n = 9
    ours = [c[:2] for c in order(delay, n) if c[0] != "proba"]

    class Recorder(Scripted, base.Classifier):
        pass

    rec = Recorder()
    rows = [(0.5, bool(i % 2), 10.0, False, 5.0) for i in range(n)]
    evaluate.progressive_val_score(events(rows), rec, metrics.Accuracy(), delay=delay)
    assert ours == [c[:2] for c in rec.calls if c[0] != "proba"]


def test_keys_are_the_positions():
    calls = order(3, 6, keys=True)
    assert [c[2] for c in calls if c[0] == "predict"] == list(range(6))
    assert [c[2] for c in calls if c[0] == "learn"] == list(range(6))


def test_every_records_the_running_money():
    rows = [(0.0, True, float(i + 1), False, 5.0) for i in range(10)]  # every fraud missed: loses its amount
    report = progressive_money(events(rows), Scripted(), fn_cost="amount", fp_cost=5.0, burn_in=2, every=3)
    assert [seen for seen, _ in report.history] == [5, 8]
    assert report.history[0][1]["model"] == 3 + 4 + 5 and report.history[1][1]["bayes"] == sum(range(3, 9))
    assert report.lost == sum(range(3, 11))


def test_string_labels_and_the_models_pos_label():
    class Fraudy(Scripted):
        pos_label = "fraud"

        def predict_proba_one(self, x):
            return {"fraud": x["p"], "ok": 1.0 - x["p"]}

        def predict_one(self, x, **kw):
            return "fraud" if x["flag"] else "ok"

    rows = [(0.9, "fraud", 50.0, True, 5.0), (0.9, "ok", 50.0, True, 5.0), (0.01, "fraud", 50.0, False, 5.0)]
    data = [({"i": i, "p": p, "flag": f}, y) for i, (p, y, a, f, _) in enumerate(rows)]
    report = progressive_money(data, Fraudy(), fn_cost=50.0, fp_cost=5.0)
    assert report.rules["model"] == RuleMoney(2, 1, 50.0, 1, 5.0)
    assert report.rules["elkan"] == report.rules["bayes"] == report.rules["model"]


# ---------------------------------------------------------------- with river and the wrapper
def payments(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        risk = rng.random()
        fraud = rng.random() < 0.02 + 0.4 * risk**6
        out.append(({"amount": round(rng.lognormvariate(3.5, 1.0), 2), "risk": risk}, fraud))
    return out


def lr():
    from river import linear_model, preprocessing

    return preprocessing.StandardScaler() | linear_model.LogisticRegression()


def wrapper(**kw):
    from thors_stream.river import ThorsClassifier

    return ThorsClassifier(lr(), fn_cost="amount", fp_cost=5.0, window=300, warm_up=20, min_model_labels=50, **kw)


def manual(data, model, delay, keys):
    """The prequential loop written out: money lost by the model, the Bayes rule and the plain cut."""
    pending = collections.deque()
    lost = collections.Counter()
    for i, (x, y) in enumerate(data):
        while pending and pending[0][0] <= i:
            _, j, xj, yj = pending.popleft()
            model.learn_one(xj, yj, **({"key": j} if keys else {}))
        p = model.predict_proba_one(x)[True]
        flags = {"model": model.predict_one(x, **({"key": i} if keys else {})),
                 "bayes": p * x["amount"] > (1 - p) * 5.0, "plain": p > 0.5}
        for name, f in flags.items():
            lost[name] += x["amount"] if y and not f else 5.0 if f and not y else 0.0
        pending.append((i + max(delay, 1), i, x, y))
    while pending:
        _, j, xj, yj = pending.popleft()
        model.learn_one(xj, yj, **({"key": j} if keys else {}))
    return lost


@pytest.mark.parametrize("keys", [False, True])
def test_a_thors_classifier_against_the_loop_written_out(keys):
    data = payments(700, 1)
    a, b = wrapper(), wrapper()
    report = progressive_money(data, a, fn_cost="amount", fp_cost=5.0, delay=40, use_keys=keys)
    want = manual(data, b, 40, keys)
    for name in ("model", "bayes", "plain"):
        assert report.rules[name].lost == pytest.approx(want[name], rel=1e-12), name
    assert a.n_pending == 0
    assert a.threshold == b.threshold


def test_the_baselines_use_the_wrapped_models_probability():
    data = payments(500, 2)
    bare = progressive_money(data, lr(), fn_cost="amount", fp_cost=5.0, delay=25)
    wrapped = progressive_money(data, wrapper(), fn_cost="amount", fp_cost=5.0, delay=25)
    assert bare.rules["bayes"] == wrapped.rules["bayes"] and bare.rules["plain"] == wrapped.rules["plain"]


@pytest.mark.parametrize("keys", [False, True])
def test_error_counts_agree_with_river(keys):
    from river import evaluate, metrics

    data = payments(600, 3)
    report = progressive_money(data, wrapper(), fn_cost="amount", fp_cost=5.0, delay=30, use_keys=keys)
    cm = metrics.ConfusionMatrix()
    river_data = [(x, y, {"key": i}) for i, (x, y) in enumerate(data)] if keys else data
    evaluate.progressive_val_score(river_data, wrapper(), metrics.Accuracy(cm=cm), delay=30)
    r = report.rules["model"]
    assert (r.missed, r.false_alarms) == (cm.false_negatives(True), cm.false_positives(True))


# ---------------------------------------------------------------- bad input
def _stream(n=6, **change):
    rows = events([(0.2, bool(i % 2), 10.0, False, 5.0) for i in range(n)])
    for i, (k, v) in change.items():
        rows[int(i)][0][k] = v
    return rows


@pytest.mark.parametrize("change, fn_cost, fp_cost, error, text", [
    ({}, "value", 5.0, ValueError, "fn_cost 'value' is not a feature of x at event 0"),
    ({"3": ("amount", -2.0)}, "amount", 5.0, ValueError, "got -2.0 at event 3"),
    ({"3": ("amount", 0.0)}, "amount", 5.0, ValueError, "got 0.0 at event 3"),
    ({"3": ("amount", math.nan)}, "amount", 5.0, ValueError, "got nan at event 3"),
    ({"3": ("amount", "12")}, "amount", 5.0, TypeError, "at event 3"),
    ({"3": ("fee", math.inf)}, "amount", lambda x: x["fee"], ValueError, "fp_cost must be finite, got inf at event 3"),
    ({"3": ("p", 1.5)}, "amount", 5.0, ValueError, "probability must lie in [0, 1], got 1.5 at event 3"),
    ({"3": ("p", math.nan)}, "amount", 5.0, ValueError, "probability must be finite, got nan at event 3"),
])
def test_a_bad_event_names_itself_and_the_model_never_sees_it(change, fn_cost, fp_cost, error, text):
    change = {k: v for k, v in change.items()}
    rows = _stream()
    for i, (k, v) in change.items():
        rows[int(i)][0][k] = v
    model = Scripted()
    with pytest.raises(error) as exc:
        progressive_money(rows, model, fn_cost=fn_cost, fp_cost=fp_cost, delay=2)
    assert text in str(exc.value)
    bad = int(next(iter(change), 0))
    decided = [c[1] for c in model.calls if c[0] == "predict"]
    learned = [c[1] for c in model.calls if c[0] == "learn"]
    assert decided == list(range(bad))
    if "probability" in text:  # the model scored the event (after learning the labels due), nothing more
        assert model.calls[-1] == ("proba", bad) and learned == list(range(max(bad - 1, 0)))
    else:  # the costs are read first: not even the labels due at the bad event are learned
        assert ("proba", bad) not in model.calls and learned == list(range(max(bad - 2, 0)))


def test_a_bad_label_names_its_event():
    rows = _stream()
    rows[2] = (rows[2][0], 2)
    model = Scripted()
    with pytest.raises(ValueError, match="label must be 0, 1, False or True, got 2 at event 2"):
        progressive_money(rows, model, fn_cost=10.0, fp_cost=5.0)
    assert [c[1] for c in model.calls if c[0] == "predict"] == [0, 1]


@pytest.mark.parametrize("kw, error, text", [
    ({"delay": -1}, ValueError, "delay must be an integer >= 0, got -1"),
    ({"delay": 1.5}, ValueError, "delay must be an integer >= 0, got 1.5"),
    ({"delay": True}, ValueError, "delay must be an integer >= 0, got True"),
    ({"burn_in": -3}, ValueError, "burn_in must be an integer >= 0"),
    ({"every": 0}, ValueError, "every must be an integer >= 1"),
    ({"fn_cost": 0.0}, ValueError, "fn_cost must be > 0"),
    ({"fp_cost": -5}, ValueError, "fp_cost must be > 0"),
    ({"fp_cost": math.nan}, ValueError, "fp_cost must be finite"),
    ({"fn_cost": None}, TypeError, "fn_cost must be a real number"),
    ({"use_keys": 1}, TypeError, "use_keys must be True or False"),
])
def test_bad_settings_are_refused_before_the_model_is_called(kw, error, text):
    model = Scripted()
    args = {"fn_cost": "amount", "fp_cost": 5.0, **kw}
    with pytest.raises(error, match=text.replace("(", r"\(")):
        progressive_money(_stream(), model, **args)
    assert model.calls == []


def test_keys_need_a_model_that_takes_them():
    from river import linear_model

    model = linear_model.LogisticRegression()
    with pytest.raises(TypeError, match="does not take key"):
        progressive_money(payments(10, 0), model, fn_cost="amount", fp_cost=5.0, use_keys=True)
    assert model.predict_proba_one({"amount": 1.0, "risk": 0.5}) == {False: 0.5, True: 0.5}  # nothing learned


def test_a_wrapper_with_a_bad_cost_learns_nothing_of_the_event():
    data = payments(50, 4)
    data[30] = ({"amount": -1.0, "risk": 0.5}, True)
    a = wrapper()
    with pytest.raises(ValueError, match="at event 30"):
        progressive_money(data, a, fn_cost="amount", fp_cost=5.0, delay=5, use_keys=True)
    b = wrapper()
    for i, (x, _) in enumerate(data[:30]):
        b.predict_one(x, key=i)
        if i >= 5:
            b.learn_one(*data[i - 5], key=i - 5)
    assert a.n_pending == b.n_pending == 5
    assert a.threshold == b.threshold
    x = {"amount": 20.0, "risk": 0.3}
    assert a.predict_proba_one(x) == b.predict_proba_one(x)


# ---------------------------------------------------------------- the benchmark
@pytest.fixture(scope="module")
def bench():
    path = ROOT / "benchmarks" / "fraud_money.py"
    spec = importlib.util.spec_from_file_location("_bench_fraud_money_t", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_the_fraud_benchmark_simulation_is_as_documented(bench):
    module = bench
    pay = module.simulate(20_000, 0)
    assert 0.004 < pay.fraud.mean() < 0.012
    assert 0.004 < pay.posterior.mean() < 0.012
    x = pay.x(5)
    assert x["amount"] == pay.amount[5] and sum(v for k, v in x.items() if k.startswith("cat_")) == 1.0
    assert "posterior" not in x
    # the floor is the Bayes rule on the true posterior: it beats flagging nothing and flagging everything
    q, a, y = pay.posterior, pay.amount, pay.fraud
    flag = q * a > (1 - q) * module.FEE
    floor = a[y & ~flag].sum() + module.FEE * (~y & flag).sum()
    assert floor < a[y].sum() and floor < module.FEE * (~y).sum()


def test_the_fraud_benchmark_quick_mode_runs(bench, capsys):
    status = bench.main(["--quick"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "DIFFERENT" not in out and "-> equal" in out  # the simulated rules are the wrapper's
    assert "| model | delay | plain | thors p | rescored | decision-time | hindsight | floor |" in out
    assert "### Targets" in out and "re-scored never above 1.10" in out
