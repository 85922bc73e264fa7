"""window="auto" against every fixed choice: total cost on river streams (issue 15).

For each stream and model family, the model is trained once under progressive
validation (each event is scored by ``predict_proba_one`` *before* the model learns
it) and the same out-of-sample score of the positive class feeds every decision rule
at once. Total cost ``fn_cost * FN + fp_cost * FP`` of:

- ``plain``: the model's own ``predict_one`` (the most probable class, a 0.5 cut);
  as in ``river.evaluate.progressive_val_score``, an event whose prediction is
  ``None`` (an untrained model returning ``{}``) is not counted;
- ``Elkan``: the fixed threshold ``fp_cost / (fp_cost + fn_cost)``;
- ``w500`` ... ``w32000``: ``ThorsClassifier(model, window=w, warm_up=0)`` for each of
  the windows ``window="auto"`` chooses among (``selection.DEFAULT_WINDOWS``);
- ``auto draw`` / ``auto leader``: ``ThorsClassifier(model, window="auto",
  auto_choose=..., warm_up=0)`` (AdaHedge over those windows and the Elkan threshold);
- ``hindsight``: the best constant threshold for the whole stream, chosen after the
  fact (``thors_threshold`` on all the scores and labels), a lower bound no online
  rule is promised to reach.

**Equivalence with ThorsClassifier.** The rules are simulated with ``StreamingThors``
and ``WindowSelector`` objects fed ``(score, label)`` after each decision, exactly what
``ThorsClassifier(model, ..., warm_up=0)`` does inside ``predict_one``/``learn_one``:
its decision is ``score > threshold``, the threshold being Elkan's until both classes
have been learned, then the window's (or the selector's) ``get()`` (Elkan's again when
that is ``None``); in ``learn_one`` it reuses the score of ``predict_one`` (same ``x``,
nothing learned in between), lets the model learn, and updates the window or selector
(``WindowSelector`` with the default seed, prior and windows, as ``window="auto"``
builds it). The script checks this on Bananas (LogisticRegression and GaussianNB)
against ``river.evaluate.progressive_val_score`` with the real ``ThorsClassifier``
(and the plain model): the totals must be equal, to the unit.

**Regret.** ``WindowSelector.regret_bound("default")`` bounds the selector's *expected*
cost minus the Elkan candidate's cost (whose cost is the ``Elkan`` column). With
``auto_choose="draw"`` the decisions are drawn from the weights, so the guarantee is on
their expectation (``E[draw]``, the selector's ``expected_cost``): the realised cost can
exceed it by chance. With ``"leader"`` the guarantee covers ``E[draw]``, not the
leader's decisions. Both checks are printed, realised and expected.

**Overhead.** A last table times the prequential loop ``predict_one`` + ``learn_one``
of ``StandardScaler | LogisticRegression`` bare, wrapped with ``window=10_000`` and with
``window="auto"`` (both ``auto_choose``), over Phishing repeated 16 times (20,000
events), interleaved every 1,000 events, process CPU time, best of 5. The issue's
target: auto's overhead over the bare pipeline within 2x of one window's.

Synthetic streams have 50,000 events (20,000 for ARF; ``--events``/``--arf-events``), so
the 32,000-event window really slides; drifts happen halfway. The bundled sets are used
whole (Phishing 1,250, Bananas 5,300, ImageSegments 2,310 events: on them the longer
windows hold everything and coincide). CreditCard is used only if already downloaded.

Run: ``python benchmarks/river_auto_window.py`` (about 3 min on 2 shared cores; 80 s with
``--events 20000 --arf-events 10000``); ``--quick``: 2,000-event streams, LogisticRegression
and GaussianNB, one timing pass on 5,000 events (a few seconds; a smoke run). Exit status 1
when the simulation does not match ThorsClassifier.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from river import datasets, evaluate, forest, linear_model, naive_bayes, preprocessing, tree
from river.datasets import synth

from thors_stream import StreamingThors, thors_threshold
from thors_stream.metrics import Cost
from thors_stream.river import ThorsClassifier
from thors_stream.selection import DEFAULT_WINDOWS, WindowSelector

WINDOWS = tuple(DEFAULT_WINDOWS)
Event = tuple[dict, bool]


# ---------------------------------------------------------------- streams
@dataclass
class Stream:
    name: str
    kind: str  # stationary / abrupt / gradual / incremental drift, rare positives
    fn_cost: float
    fp_cost: float
    make: Callable[[int], list[Event]]  # n events -> the stream (bundled sets: at most n)


def _binary(it: Iterable[tuple[dict, Any]], pos: Any, n: int) -> list[Event]:
    return [(x, y == pos) for x, y in itertools.islice(it, n)]


def _keep_positives(it: Iterator[tuple[dict, Any]], rate: float, n: int, seed: int) -> list[Event]:
    """Rare positives: keep each positive with probability ``rate``, every negative."""
    rng = random.Random(seed)
    out: list[Event] = []
    for x, y in it:
        pos = y == 1
        if pos and rng.random() >= rate:
            continue
        out.append((x, pos))
        if len(out) == n:
            break
    return out


def _drift(first: Any, second: Any, n: int, width: int) -> Any:
    # width=1 overflows math.exp in river's ConceptDriftStream far from the drift point; a width
    # of n/300 events (at least 100) is abrupt at this scale and stays clear of it
    return synth.ConceptDriftStream(first, second, position=n // 2, width=max(width, 100, n // 300), seed=7)


def streams() -> list[Stream]:
    out = [
        Stream("Phishing", "stationary (bundled)", 10, 1, lambda n: _binary(datasets.Phishing(), True, n)),
        Stream("Bananas", "stationary (bundled)", 10, 1, lambda n: _binary(datasets.Bananas(), True, n)),
        Stream("ImageSegments cement", "stationary (bundled), 14% pos", 10, 1,
               lambda n: _binary(datasets.ImageSegments(), "cement", n)),
    ]
    cc = datasets.CreditCard()
    if cc.is_downloaded:  # a remote dataset: used only when already on disk
        out.append(Stream("CreditCard", "rare (0.17%), bundled", 100, 1, lambda n: _binary(cc, 1, n)))
    out += [
        Stream("Agrawal f1", "stationary", 10, 1,
               lambda n: _binary(synth.Agrawal(classification_function=1, seed=1), 1, n)),
        Stream("Agrawal f1->f4", "abrupt drift (100 wide)", 10, 1,
               lambda n: _binary(_drift(synth.Agrawal(classification_function=1, seed=1),
                                        synth.Agrawal(classification_function=4, seed=2), n, 1), 1, n)),
        Stream("SEA 0->2 abrupt", "abrupt drift (100 wide)", 10, 1,
               lambda n: _binary(_drift(synth.SEA(variant=0, noise=0.1, seed=1),
                                        synth.SEA(variant=2, noise=0.1, seed=2), n, 1), True, n)),
        Stream("SEA 0->3 gradual", "gradual drift (n/4 wide)", 10, 1,
               lambda n: _binary(_drift(synth.SEA(variant=0, noise=0.1, seed=1),
                                        synth.SEA(variant=3, noise=0.1, seed=2), n, n // 4), True, n)),
        Stream("Hyperplane", "incremental drift", 10, 1,
               lambda n: _binary(synth.Hyperplane(seed=1, n_features=10, n_drift_features=5, mag_change=0.001,
                                                  noise_percentage=0.05), 1, n)),
        Stream("Agrawal f7", "rare (2% pos)", 50, 1,
               lambda n: _binary(synth.Agrawal(classification_function=7, seed=1), 1, n)),
        Stream("Hyperplane rare", "rare (5% pos) + drift", 50, 1,
               lambda n: _keep_positives(iter(synth.Hyperplane(seed=3, n_features=10, n_drift_features=5,
                                                               mag_change=0.001, noise_percentage=0.05)),
                                         0.05, n, seed=3)),
    ]
    return out


# ---------------------------------------------------------------- models
def models() -> dict[str, Callable[[], Any]]:
    return {
        "LR": lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression(),
        "GaussianNB": naive_bayes.GaussianNB,
        "HAT": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=1),
        "ARF(5)": lambda: forest.ARFClassifier(n_models=5, seed=1),
    }


# ---------------------------------------------------------------- one run
@dataclass
class Run:
    stream: str
    kind: str
    model: str
    n: int
    pos_rate: float
    fn_cost: float
    fp_cost: float
    costs: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)  # regret bound vs Elkan, per choose
    expected: dict[str, float] = field(default_factory=dict)  # selector's expected cost
    selector_cost: dict[str, float] = field(default_factory=dict)  # the selector's own realised tally
    final: dict[str, str] = field(default_factory=dict)  # the candidate in use at the end
    seconds: float = 0.0

    @property
    def best_window(self) -> str:
        return min((f"w{w}" for w in WINDOWS), key=lambda k: self.costs[k])

    def vs_best_window(self, col: str) -> float:
        b = self.costs[self.best_window]
        return (self.costs[col] - b) / b if b else (0.0 if self.costs[col] == 0 else math.inf)


def simulate(data: list[Event], model: Any, fn_cost: float, fp_cost: float) -> tuple[dict, dict[str, WindowSelector],
                                                                                       np.ndarray, np.ndarray]:
    """Progressive validation of one model; every rule decides on the same score.

    Returns the total costs by rule, the two selectors, and the scores and labels."""
    elkan = fp_cost / (fp_cost + fn_cost)
    windows = [StreamingThors(fn_cost=fn_cost, fp_cost=fp_cost, window=w) for w in WINDOWS]
    sels = {c: WindowSelector(fn_cost=fn_cost, fp_cost=fp_cost, default_threshold=elkan, choose=c)
            for c in ("draw", "leader")}
    sources = [*windows, *sels.values()]
    names = [f"w{w}" for w in WINDOWS] + ["auto draw", "auto leader"]
    cost = dict.fromkeys(["plain", "Elkan", *names], 0.0)
    acc = [0.0] * len(sources)
    scores = np.empty(len(data))
    labels = np.empty(len(data), dtype=bool)
    ready, n_pos = False, 0
    predict, learn = model.predict_proba_one, model.learn_one
    for i, (x, y) in enumerate(data):
        proba = predict(x)
        s = proba.get(True, 0.0)  # ThorsClassifier's score (the key True is also the key 1)
        s = float(s)
        c = fn_cost if y else fp_cost
        if proba:  # river's Classifier.predict_one: the most probable class; None is not scored
            if (max(proba, key=proba.get) == True) != y:  # noqa: E712  (1 == True as well)
                cost["plain"] += c
        if (s > elkan) != y:
            cost["Elkan"] += c
        for k, src in enumerate(sources):
            # fixed windows wait for both classes (warm_up=0: ThorsClassifier's own rule);
            # the selectors decide from the first event (window="auto" has no warm-up:
            # the default threshold is one of its candidates)
            if ready or k >= len(windows):
                t = src.get()
                if (s > (elkan if t is None else t)) != y:
                    acc[k] += c
            elif (s > elkan) != y:
                acc[k] += c
        learn(x, y)
        for src in sources:
            src.update(s, y)
        if not ready:
            n_pos += y
            ready = 0 < n_pos < i + 1
        scores[i], labels[i] = s, y
    for k, name in enumerate(names):
        cost[name] = acc[k]
    cost["hindsight"] = thors_threshold(scores, labels, fn_cost=fn_cost, fp_cost=fp_cost).cost
    return cost, sels, scores, labels


def run_one(stream: Stream, data: list[Event], model_name: str, make: Callable[[], Any]) -> Run:
    start = time.perf_counter()
    cost, sels, _, labels = simulate(data, make(), stream.fn_cost, stream.fp_cost)
    run = Run(stream.name, stream.kind, model_name, len(data), float(labels.mean()), stream.fn_cost,
              stream.fp_cost, cost)
    for c, sel in sels.items():
        run.bound[c] = sel.regret_bound("default")
        run.expected[c] = sel.expected_cost
        run.selector_cost[c] = sel.cost
        run.final[c] = sel.chosen
        # the selector's own tally of the default candidate is Elkan's cost
        assert sel.costs[-1] == cost["Elkan"], (sel.costs[-1], cost["Elkan"])
    run.seconds = time.perf_counter() - start
    return run


# ---------------------------------------------------------------- the check against ThorsClassifier
def check_equivalence(data: list[Event], stream: Stream, model_names: list[str]) -> tuple[list[str], bool]:
    """Total costs of the real ThorsClassifier under progressive_val_score vs the simulation."""
    fn, fp = stream.fn_cost, stream.fp_cost
    lines, ok = [], True
    for name in model_names:
        make = models()[name]
        sim, *_ = simulate(data, make(), fn, fp)
        configs: dict[str, Callable[[], Any]] = {"plain": make}
        for w in WINDOWS:
            configs[f"w{w}"] = lambda w=w, make=make: ThorsClassifier(make(), fn_cost=fn, fp_cost=fp, window=w,
                                                                      warm_up=0)
        for c in ("draw", "leader"):
            configs[f"auto {c}"] = lambda c=c, make=make: ThorsClassifier(
                make(), fn_cost=fn, fp_cost=fp, window="auto", auto_choose=c, warm_up=0)
        bad = []
        for col, build in configs.items():
            metric = Cost(fn_cost=fn, fp_cost=fp)
            evaluate.progressive_val_score(iter(data), build(), metric)
            if metric.total != sim[col]:
                bad.append(f"{col}: ThorsClassifier {metric.total:g} vs simulated {sim[col]:g}")
        verdict = "all equal" if not bad else "MISMATCH: " + "; ".join(bad)
        lines.append(f"{stream.name} ({len(data):,} events), {name}: {len(configs)} rules "
                     f"({', '.join(configs)}) -> {verdict}")
        ok = ok and not bad
    return lines, ok


# ---------------------------------------------------------------- overhead timing
def time_overhead(data: list[Event], repeat: int, block: int = 1_000) -> dict[str, float]:
    """Best-of-``repeat`` seconds per event of predict_one + learn_one, configurations interleaved."""
    def pipe() -> Any:
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()

    configs: dict[str, Callable[[], Any]] = {
        "StandardScaler | LogisticRegression (bare)": pipe,
        "ThorsClassifier(pipeline, window=10_000)": lambda: ThorsClassifier(pipe(), fn_cost=10, fp_cost=1,
                                                                           window=10_000),
        "ThorsClassifier(pipeline, window='auto')": lambda: ThorsClassifier(pipe(), fn_cost=10, fp_cost=1,
                                                                           window="auto"),
        "ThorsClassifier(pipeline, window='auto', auto_choose='leader')": lambda: ThorsClassifier(
            pipe(), fn_cost=10, fp_cost=1, window="auto", auto_choose="leader"),
    }
    names = list(configs)
    best = dict.fromkeys(names, math.inf)
    clock = time.process_time
    for _ in range(repeat):
        ms = {k: make() for k, make in configs.items()}
        total = dict.fromkeys(names, 0.0)
        gc.collect()
        for b, lo in enumerate(range(0, len(data), block)):
            chunk = data[lo : lo + block]
            r = b % len(names)
            for name in names[r:] + names[:r]:
                predict, learn = ms[name].predict_one, ms[name].learn_one
                t0 = clock()
                for x, y in chunk:
                    predict(x)
                    learn(x, y)
                total[name] += clock() - t0
        for name in names:
            best[name] = min(best[name], total[name] / len(data))
    return best


# ---------------------------------------------------------------- report
def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"


def print_tables(runs: list[Run]) -> None:
    cols = ["plain", "Elkan", *[f"w{w}" for w in WINDOWS], "auto draw", "auto leader", "hindsight"]
    print("Total cost under progressive validation (lower is better; **bold** = cheapest fixed window; "
          "hindsight = best constant threshold chosen after the fact)\n")
    print("| stream | drift / class mix | model | events | pos | FN:FP | " + " | ".join(cols) + " |")
    print("|" + "---|" * 6 + "---:|" * len(cols))
    for r in runs:
        cells = []
        for c in cols:
            v = _fmt(r.costs[c])
            cells.append(f"**{v}**" if c == r.best_window else v)
        print(f"| {r.stream} | {r.kind} | {r.model} | {r.n:,} | {r.pos_rate:.1%} | {r.fn_cost:g}:{r.fp_cost:g} | "
              + " | ".join(cells) + " |")

    print("\nAuto against Elkan (its regret bound) and against the best fixed window\n")
    print("| stream | model | Elkan | bound vs Elkan | draw | E[draw] | draw <= Elkan+bound | E[draw] <= Elkan+bound "
          "| leader | leader <= Elkan+bound | draw vs best window | leader vs best window | best window "
          "| draw vs Elkan | final choice (draw / leader) |")
    print("|---|---|" + "---:|" * 12 + "---|")
    for r in runs:
        e, bd = r.costs["Elkan"], r.bound["draw"]
        bl = r.bound["leader"]
        print(f"| {r.stream} | {r.model} | {_fmt(e)} | {bd:,.1f} | {_fmt(r.costs['auto draw'])} | "
              f"{r.expected['draw']:,.1f} | {'yes' if r.costs['auto draw'] <= e + bd else '**NO**'} | "
              f"{'yes' if r.expected['draw'] <= e + bd + 1e-9 else '**NO**'} | {_fmt(r.costs['auto leader'])} | "
              f"{'yes' if r.costs['auto leader'] <= e + bl else '**NO**'} | "
              f"{r.vs_best_window('auto draw'):+.1%} | {r.vs_best_window('auto leader'):+.1%} | {r.best_window} | "
              f"{(r.costs['auto draw'] - e) / e:+.1%} | {r.final['draw']} / {r.final['leader']} |")


def print_summary(runs: list[Run]) -> None:
    n = len(runs)
    print(f"\nSummary over {n} runs (stream x model)\n")
    for c in ("draw", "leader"):
        col = f"auto {c}"
        gaps = [r.vs_best_window(col) for r in runs]
        within3 = sum(g <= 0.03 for g in gaps)
        within5 = sum(g <= 0.05 for g in gaps)
        beats = sum(g < 0 for g in gaps)
        over = sum(r.costs[col] > r.costs["Elkan"] + r.bound[c] for r in runs)
        over_e = sum(r.expected[c] > r.costs["Elkan"] + r.bound[c] + 1e-9 for r in runs)
        cheaper = sum(r.costs[col] < r.costs["Elkan"] for r in runs)
        worse = [r for r in runs if r.costs[col] > r.costs["Elkan"]]
        worst = max(gaps)
        wr = runs[gaps.index(worst)]
        print(f"- auto ({c}): within 3% of the best fixed window on {within3}/{n} runs, within 5% on "
              f"{within5}/{n} (cheaper than every fixed window on {beats}/{n}); median gap "
              f"{statistics.median(gaps):+.1%}, worst {worst:+.1%} ({wr.stream} / {wr.model}).")
        listed = ", ".join(f"{r.stream}/{r.model} {(r.costs[col] - r.costs['Elkan']) / r.costs['Elkan']:+.1%}"
                           for r in worse)
        print(f"  worse than Elkan + regret bound: {over}/{n} runs (realised cost), {over_e}/{n} (expected cost "
              f"E[draw], the quantity the bound covers); cheaper than Elkan on {cheaper}/{n}, costlier on "
              f"{len(worse)}/{n}" + (f" ({listed})" if worse else "") + ".")
    savings = [(r.costs["Elkan"] - r.costs["auto draw"]) / r.costs["Elkan"] for r in runs if r.costs["Elkan"]]
    print(f"- auto (draw) vs Elkan: median saving {statistics.median(savings):+.1%}, "
          f"range {min(savings):+.1%} .. {max(savings):+.1%}.")
    wins = {f"w{w}": sum(r.best_window == f"w{w}" for r in runs) for w in WINDOWS}
    print("- best fixed window per run: " + ", ".join(f"{k} {v}x" for k, v in wins.items())
          + f"; a fixed window beat Elkan on {sum(r.costs[r.best_window] < r.costs['Elkan'] for r in runs)}/{n}.")
    for w in WINDOWS:
        gaps = [(r.costs[f"w{w}"] - r.costs[r.best_window]) / r.costs[r.best_window] for r in runs]
        w3 = sum(g <= 0.03 for g in gaps)
        print(f"  fixed w{w} as a default: within 3% of the best fixed window on {w3}/{n}, median gap "
              f"{statistics.median(gaps):+.1%}, worst {max(gaps):+.1%}; costlier than Elkan on "
              f"{sum(r.costs[f'w{w}'] > r.costs['Elkan'] for r in runs)}/{n}.")
    hs = [(r.costs["auto draw"] - r.costs["hindsight"]) / r.costs["hindsight"] for r in runs if r.costs["hindsight"]]
    print(f"- auto (draw) vs best constant threshold in hindsight: median {statistics.median(hs):+.1%}, "
          f"range {min(hs):+.1%} .. {max(hs):+.1%} (negative: the moving threshold beat every constant one).")
    diffs = [(abs(r.costs[f"auto {c}"] - r.selector_cost[c]), r, c) for r in runs for c in ("draw", "leader")]
    d, r, c = max(diffs, key=lambda t: t[0])
    over_sel = sum(r.selector_cost["draw"] > r.costs["Elkan"] + r.bound["draw"] for r in runs)
    print(f"- window='auto' decides with the selector from the first event (no warm-up), so the selector's own "
          f"realised tally (WindowSelector.cost) and the decisions' cost differ by at most {d:g} "
          f"({r.stream} / {r.model}, {c}); with that tally, draw exceeds Elkan + bound on {over_sel}/{n} runs.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000-event streams, 2 models, one timing pass")
    parser.add_argument("--events", type=int, default=None, help="events per stream (default 50,000; 2,000 quick)")
    parser.add_argument("--arf-events", type=int, default=None, help="events per stream for ARF (default 20,000)")
    parser.add_argument("--repeat", type=int, default=None, help="timing passes (default 5; 1 quick)")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    n_events = args.events or (2_000 if args.quick else 50_000)
    n_arf = args.arf_events or min(n_events, 20_000)
    repeat = args.repeat or (1 if args.quick else 5)
    model_set = models()
    if args.quick:
        model_set = {k: model_set[k] for k in ("LR", "GaussianNB")}

    print(f"river_auto_window: {n_events:,} events per stream ({n_arf:,} for ARF; bundled sets at most their "
          f"length); windows {WINDOWS}; auto = WindowSelector defaults (prior 1/2 on Elkan, seed 0); "
          f"Python {platform.python_version()}, numpy {np.__version__}, river "
          f"{__import__('river').__version__}")
    cc = datasets.CreditCard()
    if not cc.is_downloaded:
        print("CreditCard (remote dataset) is not on disk: skipped, nothing downloaded.")

    all_streams = streams()
    # the check against ThorsClassifier itself
    bananas = next(s for s in all_streams if s.name == "Bananas")
    print("\nSimulation vs ThorsClassifier(warm_up=0) under evaluate.progressive_val_score (total cost):")
    lines, equivalent = check_equivalence(bananas.make(n_events), bananas, ["LR", "GaussianNB"])
    for line in lines:
        print("  " + line)

    runs: list[Run] = []
    cache: dict[tuple[str, int], list[Event]] = {}
    for stream in all_streams:
        for mname, make in model_set.items():
            n = n_arf if mname.startswith("ARF") else n_events
            key = (stream.name, n)
            if key not in cache:
                cache[key] = stream.make(n)
            run = run_one(stream, cache[key], mname, make)
            runs.append(run)
            print(f"  ran {stream.name} / {mname}: {run.n:,} events in {run.seconds:.1f} s", file=sys.stderr)
        cache.clear()
    print()
    print_tables(runs)
    print_summary(runs)

    # overhead
    base = list(datasets.Phishing())
    data = (base * 16)[: 5_000 if args.quick else None]
    best = time_overhead(data, repeat)
    names = list(best)
    bare = best[names[0]]
    print(f"\nPer-event time, predict_one + learn_one, Phishing x16 ({len(data):,} events), best of {repeat}, "
          f"interleaved every 1,000 events (process CPU time)\n")
    print("| configuration | us/event | overhead over bare (us) | overhead / bare |")
    print("|---|---:|---:|---:|")
    for name in names:
        t = best[name]
        extra = "" if name == names[0] else f"{(t - bare) * 1e6:.2f} | {(t - bare) / bare:.1%}"
        cell = name.replace("|", "\\|")
        print(f"| {cell} | {t * 1e6:.2f} | {extra} |" if extra else f"| {cell} | {t * 1e6:.2f} | | |")
    one = best[names[1]] - bare
    for name in names[2:]:
        label = name.split("(pipeline, ", 1)[1][:-1]
        extra = best[name] - bare
        if one > 0:
            ratio = extra / one
            verdict = f"{ratio:.2f}x ({'within' if ratio <= 2 else 'OVER'} the issue's 2x target)"
        else:
            verdict = "n/a (one window's overhead is within the timing noise, <= 0)"
        print(f"\noverhead ratio ({label}) / (window=10_000): {verdict}; {label} costs "
              f"{best[name] / best[names[1]]:.2f}x the per-event time of window=10_000")
    print(f"\ntotal run time {time.perf_counter() - t_start:.0f} s")
    return 0 if equivalent else 1


if __name__ == "__main__":
    sys.exit(main())
