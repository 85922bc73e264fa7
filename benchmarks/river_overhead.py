"""Per-event cost of ThorsClassifier on top of a river pipeline (Shuttle stream).

Times the prequential loop ``predict_one(x)`` then ``learn_one(x, y)`` over river's
bundled Shuttle stream (49,097 events, preloaded in memory) for a
``StandardScaler | LogisticRegression`` pipeline alone and wrapped by
``ThorsClassifier`` (window 10,000, FN cost 100, FP cost 1), in both placements:
``ThorsClassifier(pipeline)`` and ``StandardScaler() | ThorsClassifier(LogisticRegression())``,
and ``ThorsClassifier(pipeline)`` in Neyman-Pearson mode (``max_fpr=0.05``) and with
``window="auto"`` (four windows and the default threshold scored on every event).
The configurations run side by side, interleaved every 1,000 events (so bursts of
load from other processes hit them alike), timed in process CPU time; the whole pass
is repeated ``--repeat`` times and each configuration's fastest pass counts.
The wrapper's overhead is (wrapped - plain) per event; the budget is 25% of the
plain pipeline's own cost per event. A last row times the wrapper with its
StreamingThors replaced by a no-op, to split the overhead into the wrapper's own
Python and the threshold structure's update/get.

Run: ``python benchmarks/river_overhead.py`` (about a minute); ``--quick`` times the first
5,000 events twice (a smoke run; its numbers are noisy). ``--check`` exits with status
1 when the ``ThorsClassifier(pipeline)`` overhead is over budget.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from river import datasets, linear_model, preprocessing

from thors_stream.river import ThorsClassifier

BUDGET = 0.25
WINDOW = 10_000


class _NoThors:
    """Stands in for StreamingThors to time the wrapper's own Python (answers are meaningless)."""

    def update(self, score: float, y: Any, w: float = 1.0, t: Any = None) -> None:
        pass

    def get(self) -> float:
        return 0.5


def configurations() -> dict[str, Callable[[], Any]]:
    def plain() -> Any:
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()

    def wrapped() -> ThorsClassifier:
        return ThorsClassifier(plain(), fn_cost=100, fp_cost=1, window=WINDOW)

    def wrapper_only() -> ThorsClassifier:
        model = wrapped()
        model._thors = model._source = _NoThors()  # type: ignore[assignment]
        return model

    return {
        "StandardScaler | LogisticRegression": plain,
        "ThorsClassifier(StandardScaler | LogisticRegression)": wrapped,
        "StandardScaler | ThorsClassifier(LogisticRegression)": lambda: preprocessing.StandardScaler()
        | ThorsClassifier(linear_model.LogisticRegression(), fn_cost=100, fp_cost=1, window=WINDOW),
        "  same as row 2, StreamingThors stubbed out": wrapper_only,
        "ThorsClassifier(pipeline, max_fpr=0.05) (Neyman-Pearson)": lambda: ThorsClassifier(
            plain(), fn_cost=100, fp_cost=1, window=WINDOW, max_fpr=0.05),
        "ThorsClassifier(pipeline, window='auto')": lambda: ThorsClassifier(
            plain(), fn_cost=100, fp_cost=1, window="auto"),
    }


def time_interleaved(configs: dict[str, Callable[[], Any]], data: list[tuple[dict, Any]], block: int) -> dict:
    """One pass over ``data`` by a fresh model of each configuration, interleaved block by block.

    Every ``block`` events, each model processes the same block in turn (the order
    rotating from block to block) and its CPU time is added up, so a burst of load
    from other processes hits every configuration alike. Returns seconds per event.
    """
    models = {name: make() for name, make in configs.items()}
    loops = {name: (m.predict_one, m.learn_one) for name, m in models.items()}
    names = list(configs)
    total = dict.fromkeys(names, 0.0)
    clock = time.process_time
    gc.collect()
    for b, lo in enumerate(range(0, len(data), block)):
        chunk = data[lo : lo + block]
        k = b % len(names)
        for name in names[k:] + names[:k]:
            predict, learn = loops[name]
            start = clock()
            for x, y in chunk:
                predict(x)
                learn(x, y)
            total[name] += clock() - start
    return {name: t / len(data) for name, t in total.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 5,000 events, 2 repeats")
    parser.add_argument("--repeat", type=int, default=None, help="runs per configuration (default 7; 2 with --quick)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the overhead is over budget")
    args = parser.parse_args(argv)
    limit = 5_000 if args.quick else None
    repeat = args.repeat or (2 if args.quick else 7)

    data = list(itertools.islice(datasets.Shuttle(), limit))
    configs = configurations()
    best = dict.fromkeys(configs, float("inf"))
    for _ in range(repeat):
        for name, t in time_interleaved(configs, data, block=1_000).items():
            best[name] = min(best[name], t)

    backend = configs["ThorsClassifier(StandardScaler | LogisticRegression)"]().thors.backend
    print(
        f"Shuttle, {len(data):,} events, best of {repeat}; window {WINDOW:,}; StreamingThors backend {backend!r}; "
        f"Python {platform.python_version()} on {platform.machine()}"
    )
    names = list(configs)
    base = best[names[0]]
    width = max(map(len, names))
    print(f"  {'model':<{width}}  {'us/event':>8}  {'events/s':>9}  {'overhead us':>11}  {'overhead':>8}")
    for name in names:
        t = best[name]
        extra = "" if name == names[0] else f"{(t - base) * 1e6:>11.2f}  {(t - base) / base:>8.1%}"
        print(f"  {name:<{width}}  {t * 1e6:>8.2f}  {1 / t:>9,.0f}  {extra}".rstrip())
    ratio = (best[names[1]] - base) / base
    verdict = "within" if ratio < BUDGET else "OVER"
    print(
        f"overhead of ThorsClassifier(pipeline) / pipeline's own cost = {ratio:.3f} "
        f"({verdict} the {BUDGET:.0%} budget)"
    )
    return 1 if args.check and ratio >= BUDGET else 0


if __name__ == "__main__":
    sys.exit(main())
