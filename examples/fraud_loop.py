"""An online fraud-scoring loop with delayed labels, checkpoints, and a crash.

A simulated card-payment stream (120 days, 800 payments a day, ~2% fraud, amounts
log-normal, fraudsters drifting to smaller amounts). A river model scores each
payment; it learns from the labels of the first 40 days and is then frozen, as a
production model is between offline retrains. A payment is blocked for review when
its score is above the current threshold. A missed fraud costs its amount, a review
of a genuine payment costs a fixed fee. Labels arrive late: a chargeback comes 1-20
days after a fraud, and a payment is known to be genuine once 20 days pass without
one. So every label is final 20 days after its payment, and that is when it is
learned: feeding chargebacks as they arrive, before the genuine labels of the same
days exist, would over-represent fraud in the window and bias the threshold down.
THORS learns the score the decision was made with (the missed-fraud cost as the
event's weight), over the labels of the last 30 days. Losses count from day 60.

The worker checkpoints every 5,000 payments (THORS in its own file format, the
rest with pickle, tied together by a generation number so that a crash between the
writes cannot mix two states). This script starts the worker, kills it with SIGKILL
half-way through, restarts it from the last checkpoint, and checks that the result
equals an uninterrupted run: no label is lost or counted twice.

Four policies decide on the same scores: THORS (re-thresholded at each label),
a fixed 0.5 cut, a nightly batch re-threshold (``thors_threshold`` on the last
30 days of labels, once a day), and the nightly job as it would ship: per segment
(domestic / foreign payments, exact per segment, the global threshold for a segment
with too few labels of a class), per-event costs (a missed fraud costs its amount, a
review the fee: ``event_cost_weights``), guard rails (a night whose labels do not
support a threshold, ``ThresholdResult.is_supported``, keeps the deployed thresholds;
so does a move larger than ``MAX_SHIFT``, which a human would review) and a release
file written each night (``thors_stream.release``; the last one is read back and
validated at the end). The table shows the money each one lost.

A last part decides in money with the river wrapper: ``ThorsClassifier(model,
fn_cost="amount", fp_cost=FEE)`` flags a payment when its cost margin ``logit(p) +
log(amount / FEE)`` is above a THORS cut learned from labelled payments (0, the per-event
Bayes rule ``p * amount > (1 - p) * FEE``, until it has enough), and
``thors_stream.money.progressive_money`` counts the money it lost on the same payments,
labels ``MATURITY_DAYS`` days late, beside the Bayes rule and the plain 0.5 cut computed from
the same probabilities. Both models are logistic regressions, which fit this simulation
well: the cut stays close to the Bayes rule (see ``benchmarks/results/fraud_money.md`` for
the models where it gains more).

Run: ``python examples/fraud_loop.py`` (under a minute).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from thors_stream import StreamingThors, thors_threshold
from thors_stream.event_costs import event_cost_weights
from thors_stream.release import make_release, read_release, release_entry, write_release
from thors_stream.segments import segment_thresholds

DAY = 86_400.0
FEE = 3.0  # cost of reviewing a genuine payment
DAYS = 120
PER_DAY = int(os.environ.get("THORS_FRAUD_PER_DAY", "800"))  # smaller for a quick smoke run
# the release file is written every RELEASE_EVERY-th published night (1: every night, as a job
# would; a smoke run writes fewer, each one computing exact bounds for every segment)
RELEASE_EVERY = int(os.environ.get("THORS_FRAUD_RELEASE_EVERY", "1"))
CHECKPOINT_EVERY = max(500, DAYS * PER_DAY // 20)
MATURITY_DAYS = 20  # chargebacks come within 20 days: every label is final by then
FREEZE_DAYS = 40  # the model learns from labels until then, and is frozen after
WARMUP_DAYS = 60  # losses are counted from then on
MIN_PER_CLASS = 30  # THORS is trusted once its window holds this many labels of each class
MAX_SHIFT = 0.3  # the release job refuses a larger nightly move of the global threshold
RELEASE = "nightly release (segments, guard rails)"


def payments(seed: int = 7):
    """Deterministic stream of (index, time, features, amount, is_fraud, label_delay)."""
    rng = np.random.default_rng(seed)
    n = DAYS * PER_DAY
    times = np.sort(rng.uniform(0, DAYS * DAY, n))
    amount = np.round(rng.lognormal(3.5, 0.9, n), 2)
    night = ((times % DAY) < 6 * 3600).astype(float)
    foreign = (rng.random(n) < 0.08).astype(float)
    velocity = rng.poisson(1.0, n).astype(float)
    drift = times / (DAYS * DAY)  # fraudsters slowly shift to smaller amounts
    logit = -8.2 + 2.5 * night + 3.0 * foreign + 0.9 * velocity + (0.6 - 0.3 * drift) * np.log1p(amount)
    fraud = rng.random(n) < 1 / (1 + np.exp(-logit))
    delay = np.where(fraud, rng.uniform(1, MATURITY_DAYS, n), MATURITY_DAYS) * DAY  # when the label is known
    for i in range(n):
        x = {"log_amount": math.log1p(amount[i]), "night": night[i], "foreign": foreign[i], "velocity": velocity[i]}
        yield i, float(times[i]), x, float(amount[i]), bool(fraud[i]), float(delay[i])


def segment_of(x: dict) -> str:
    return "foreign" if x["foreign"] else "domestic"


class Loop:
    """The worker's whole state: model, THORS, pending labels, counters."""

    def __init__(self) -> None:
        from river import linear_model, preprocessing

        self.model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
        self.thors = StreamingThors(fn_cost=1.0, fp_cost=FEE, period=30 * DAY, default_threshold=0.5)
        self.pending: list = []  # heap of (label time, payment time, index, score, x, amount, fraud)
        self.next_index = 0
        self.labels_learned = 0
        self.nightly_thr = 0.5
        self.nightly_day = -1
        self.window: list = []  # (label time, score, fraud, amount, segment) for the nightly batch jobs
        self.lost = {"THORS (streaming)": 0.0, "fixed 0.5 cut": 0.0, "nightly batch THORS": 0.0, RELEASE: 0.0}
        self.deployed: dict = {"global": 0.5}  # the release job's thresholds: "global" and per segment
        self.nights = {"published": 0, "refused: too few labels": 0, "refused: move > MAX_SHIFT": 0}
        self.release_dir: str | None = None  # where the release job writes (not part of the compared state)
        self._thors_ready: bool | None = None

    def step(self, i: int, t: float, x: dict, amount: float, fraud: bool, delay: float) -> None:
        while self.pending and self.pending[0][0] <= t:  # labels that arrived before this payment
            self.learn(*heapq.heappop(self.pending))
        day = int(t // DAY)
        if day != self.nightly_day:  # the nightly job: batch THORS on the last 30 days of labels
            self.nightly_day = day
            self.window = [e for e in self.window if e[0] > t - 30 * DAY]
            _, s, y, a, _g = zip(*self.window) if self.window else ((), (), (), (), ())
            if min(sum(y), len(y) - sum(y)) >= MIN_PER_CLASS:
                w = [amt if f else 1.0 for f, amt in zip(y, a)]
                self.nightly_thr = thors_threshold(s, y, fn_cost=1.0, fp_cost=FEE, sample_weight=w).threshold
            if self.window:
                self.release_job(day)
        score = self.last_score = self.model.predict_proba_one(x).get(True, 0.0)
        r = self.thors.result() if self.next_index % 200 == 0 or self._thors_ready is None else None
        if r is not None:
            self._thors_ready = min(r.count0, r.count1) >= MIN_PER_CLASS
        thors_thr = self.thors.get() if self._thors_ready else 0.5
        counted = t >= WARMUP_DAYS * DAY
        seg = segment_of(x)
        for name, thr in (("THORS (streaming)", thors_thr), ("fixed 0.5 cut", 0.5),
                          ("nightly batch THORS", self.nightly_thr),
                          (RELEASE, self.deployed.get(seg, self.deployed["global"]))):
            if not counted:
                break
            blocked = score > thr
            if fraud and not blocked:
                self.lost[name] += amount
            elif blocked and not fraud:
                self.lost[name] += FEE
        # a label is learned once final, MATURITY_DAYS after the payment (``delay`` is when it
        # arrives; a chargeback arriving earlier waits in the same queue)
        assert delay <= MATURITY_DAYS * DAY
        heapq.heappush(self.pending, (t + MATURITY_DAYS * DAY, t, i, score, x, amount, fraud))
        self.next_index = i + 1

    def release_job(self, day: int) -> None:
        """The nightly release: per-segment thresholds under per-event costs, guard rails, a release file."""
        _, s, y, a, g = (np.array(c) for c in zip(*self.window))
        w = event_cost_weights(y, fn_costs=a, fp_costs=FEE)  # a missed fraud costs its amount, a review FEE
        plan = segment_thresholds(s, y, g, fn_cost=1.0, fp_cost=1.0, sample_weight=w, min_per_class=MIN_PER_CLASS)
        glob = plan.global_result
        if not glob.is_supported(MIN_PER_CLASS):  # e.g. the first nights: not enough labels yet
            self.nights["refused: too few labels"] += 1
            return
        old = self.deployed["global"]
        if self.nights["published"] and abs(glob.threshold - old) > MAX_SHIFT:  # a human would review it
            self.nights["refused: move > MAX_SHIFT"] += 1
            return
        self.deployed = {"global": glob.threshold, **{k: r.threshold for k, r in plan.results.items()}}
        self.nights["published"] += 1
        if self.release_dir is not None and self.nights["published"] % RELEASE_EVERY == 0:
            segs = {k: {**release_entry(r, min_per_class=MIN_PER_CLASS), "source": plan.sources[k]}
                    for k, r in plan.results.items()}
            digest = hashlib.sha256(np.stack([s, y, a]).tobytes()).hexdigest()
            doc = make_release(release_entry(glob, min_per_class=MIN_PER_CLASS), segments=segs,
                               input_info={"path": f"labels of the 30 days before day {day}", "sha256": digest,
                                           "rows": len(s)},
                               parameters={"score_col": "score", "label_col": "fraud", "fn_cost_col": "amount",
                                           "fp_cost": FEE, "segment_col": "foreign", "min_per_class": MIN_PER_CLASS,
                                           "confidence": 0.95, "max_shift": MAX_SHIFT},
                               baseline=None)
            write_release(doc, os.path.join(self.release_dir, "thresholds.json"))

    def learn(self, t_label: float, t_paid: float, i: int, score: float, x: dict, amount: float, fraud: bool) -> None:
        if t_paid < FREEZE_DAYS * DAY:
            self.model.learn_one(x, fraud)
        else:  # a score of the frozen model: the one the decision was made with
            self.thors.update(score, fraud, amount if fraud else 1.0, t=t_label)  # a missed fraud costs its amount
            self.window.append((t_label, score, fraud, amount, segment_of(x)))
        self.labels_learned += 1

    def save(self, directory: Path) -> None:
        gen = self.next_index
        self.thors.save(directory / f"thors.{gen}.ckpt")
        rest = {k: v for k, v in self.__dict__.items() if k not in ("thors", "release_dir")}
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump({"generation": gen, "state": rest}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, directory / "loop.pkl")  # the commit point
        for old in directory.glob("thors.*.ckpt"):
            if old.name != f"thors.{gen}.ckpt":
                old.unlink()

    @classmethod
    def restore(cls, directory: Path) -> Loop:
        loop = cls()
        if (directory / "loop.pkl").exists():
            blob = pickle.loads((directory / "loop.pkl").read_bytes())
            loop.__dict__.update(blob["state"])
            loop.thors = StreamingThors.load(directory / f"thors.{blob['generation']}.ckpt")
        return loop


def work(directory: Path, slow: float = 0.0) -> dict:
    loop = Loop.restore(directory)
    loop.release_dir = str(directory)
    for i, t, x, amount, fraud, delay in payments():
        if i < loop.next_index:
            continue  # already processed before the checkpoint
        loop.step(i, t, x, amount, fraud, delay)
        if loop.next_index % CHECKPOINT_EVERY == 0:
            loop.save(directory)
            if slow:
                time.sleep(slow)
    end = DAYS * DAY + 31 * DAY  # let every outstanding label arrive
    while loop.pending and loop.pending[0][0] <= end:
        loop.learn(*heapq.heappop(loop.pending))
    release = read_release(str(directory / "thresholds.json"))  # validated against the schema
    return {"lost": loop.lost, "labels": loop.labels_learned, "threshold": loop.thors.get(),
            "payments": loop.next_index, "nights": loop.nights, "deployed": loop.deployed,
            "release_segments": {k: [v["source"], v["threshold"]] for k, v in release["segments"].items()}}


def money_part() -> None:
    """The river wrapper deciding in money, under ``progressive_money``: a frozen and an online model."""
    from river import base, linear_model, preprocessing

    from thors_stream.money import progressive_money
    from thors_stream.river import ThorsClassifier

    class FrozenAfter(base.Classifier):
        """Learns its first ``n`` labels (the payments before FREEZE_DAYS, in order), then nothing."""

        def __init__(self, model: base.Classifier, n: int) -> None:
            self.model, self.n, self.learned = model, n, 0

        def learn_one(self, x: dict, y: bool) -> None:
            if self.learned < self.n:
                self.model.learn_one(x, y)
                self.learned += 1

        def predict_proba_one(self, x: dict) -> dict:
            return self.model.predict_proba_one(x)

    stream = [({**x, "amount": amount}, fraud) for _, _, x, amount, fraud, _ in payments()]
    delay, burn_in = MATURITY_DAYS * PER_DAY, WARMUP_DAYS * PER_DAY  # in payments: 800 a day on average
    lr = lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression()  # noqa: E731
    runs = [("logistic regression frozen after day 40", "decision-time margins (key=)", True,
             FrozenAfter(lr(), FREEZE_DAYS * PER_DAY)),
            ("online logistic regression", "re-scored when the label arrives", False, lr())]
    print()
    print(f"Deciding in money: ThorsClassifier(model, fn_cost='amount', fp_cost={FEE}) under progressive_money "
          f"(labels {delay:,} payments late, money counted from payment {burn_in:,})")
    print()
    print("| model | the cut learns | wrapper (margin cut) | per-event Bayes rule | plain 0.5 cut | wrapper / Bayes |")
    print("|---|---|---|---|---|---|")
    for name, learns, keys, model in runs:
        wrapper = ThorsClassifier(model, fn_cost="amount", fp_cost=FEE)
        r = progressive_money(stream, wrapper, fn_cost="amount", fp_cost=FEE, delay=delay, burn_in=burn_in,
                              use_keys=keys)
        print(f"| {name} | {learns} | {r.lost:,.0f} | {r.rules['bayes'].lost:,.0f} | "
              f"{r.rules['plain'].lost:,.0f} | {r.ratio():.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(work(Path(args.worker), slow=float(os.environ.get("THORS_FRAUD_PAUSE", "0")))))
        return

    total = DAYS * PER_DAY
    with tempfile.TemporaryDirectory() as d:
        ckpt = Path(d)
        cmd = [sys.executable, __file__, "--worker", d]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        while True:  # kill the worker once its checkpoint is past half-way
            time.sleep(0.01)
            state = ckpt / "loop.pkl"
            if state.exists() and pickle.loads(state.read_bytes())["generation"] > total // 2:
                break
            if proc.poll() is not None:
                raise SystemExit("the worker finished before it could be killed")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        at = pickle.loads((ckpt / "loop.pkl").read_bytes())["generation"]
        print(f"worker killed with SIGKILL; last checkpoint at payment {at:,} of {total:,}; restarting")
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
        crashed = json.loads(out)
        secs = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        clean = work(Path(d))  # the same stream without a crash
    same = crashed == json.loads(json.dumps(clean))
    print(f"{crashed['payments']:,} payments, {crashed['labels']:,} labels learned; "
          f"identical to an uninterrupted run: {same} ({secs:.0f} s with the crash)")
    print()
    print("| policy | money lost | vs fixed 0.5 cut |")
    print("|---|---|---|")
    base = crashed["lost"]["fixed 0.5 cut"]
    for name, v in crashed["lost"].items():
        print(f"| {name} | {v:,.0f} | {v / base:.0%} |")
    print()
    print("release job nights: " + ", ".join(f"{k} {v}" for k, v in crashed["nights"].items()))
    print("last release file (schema-valid): " + ", ".join(
        f"{k}: {thr:.4f} ({src})" for k, (src, thr) in crashed["release_segments"].items()))
    if not same:
        raise SystemExit("the restarted run differs from the uninterrupted one")
    money_part()


if __name__ == "__main__":
    main()
