"""Concept drift: a windowed THORS threshold follows the shift, an unbounded one lags.

The stream is river's synthetic STAGGER generator switching, at event ``position``
(over ~500 events), from classification function 0 (about 12% positives) to
function 2 (about 67% positives): ``river.datasets.synth.ConceptDriftStream``. A
``StandardScaler | LogisticRegression`` pipeline learns online and is evaluated
prequentially with FN cost 10 and FP cost 1 under three decision rules: its plain
``predict_one``, THORS over the last ``window`` labelled events, and THORS over all
of them (``window=None``). The script prints the costs before, during and after the
drift and plots the thresholds and the rolling cost per event over time.

The plot needs matplotlib (``pip install thors_stream[plot]``); without it the
script prints the table and says so. Run: ``python examples/drift.py [out.png]``
(about 5 s; ``--quick`` for a 6,000-event stream); the PNG goes next to this script
by default.
"""

from __future__ import annotations

import argparse
import pathlib
import time
from typing import Any

from river import linear_model, preprocessing, utils
from river.datasets import synth

from thors_stream.metrics import Cost
from thors_stream.river import ThorsClassifier

FN_COST, FP_COST = 10.0, 1.0


def drifting_stream(n: int, position: int) -> list[tuple[dict, int]]:
    before = synth.STAGGER(classification_function=0, seed=1, balance_classes=False)
    after = synth.STAGGER(classification_function=2, seed=2, balance_classes=False)
    return list(synth.ConceptDriftStream(before, after, position=position, width=500, seed=3).take(n))


def pipeline() -> Any:
    return preprocessing.StandardScaler() | linear_model.LogisticRegression()


def run(model: Any, data: list[tuple[dict, int]], phases: list[int], every: int, rolling: int) -> dict:
    """Prequential run: per-phase costs, and (step, threshold, rolling cost per event) samples."""
    phase_costs = [Cost(fn_cost=FN_COST, fp_cost=FP_COST) for _ in phases]
    roll = utils.Rolling(Cost, window_size=rolling, fn_cost=FN_COST, fp_cost=FP_COST, per_event=True)
    steps, thresholds, rolled = [], [], []
    phase = 0
    for i, (x, y) in enumerate(data):
        while phase + 1 < len(phases) and i >= phases[phase + 1]:
            phase += 1
        y_pred = model.predict_one(x)
        phase_costs[phase].update(y, y_pred)
        roll.update(y, y_pred)
        model.learn_one(x, y)
        if (i + 1) % every == 0:
            steps.append(i + 1)
            thresholds.append(model.threshold if isinstance(model, ThorsClassifier) else 0.5)
            rolled.append(roll.get())
    return {"costs": [c.get() for c in phase_costs], "steps": steps, "thresholds": thresholds, "rolling": rolled}


def plot(results: dict, position: int, out: pathlib.Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: skipping the plot (install the extra: pip install 'thors_stream[plot]')")
        return False
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    floor = -0.05  # where a -inf threshold (predict everything positive) is drawn
    for color, (label, r) in zip(["tab:grey", "tab:blue", "tab:orange"], results.items()):
        if label.startswith("THORS"):
            ys = [floor if t == float("-inf") else t for t in r["thresholds"]]
            ax1.plot(r["steps"], ys, label=label, color=color)
        ax2.plot(r["steps"], r["rolling"], label=label, color=color)
    ax1.axhline(FP_COST / (FP_COST + FN_COST), color="grey", ls=":", label="Elkan fp/(fp+fn)")
    for ax in (ax1, ax2):
        ax.axvline(position, color="black", ls="--", lw=1)
        ax.legend(fontsize=8)
    ax1.set_ylabel(f"threshold on P(positive)\n(-inf drawn at {floor})")
    ax2.set_ylabel("cost per event (rolling)")
    ax2.set_xlabel("events")
    ax1.set_title(f"STAGGER drift at event {position:,} (FN cost {FN_COST:g}, FP cost {FP_COST:g})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"\nplot written to {out}")
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=pathlib.Path, help="PNG path (default: drift.png next to this script)")
    parser.add_argument("--quick", action="store_true", help="6,000 events, drift at 3,000")
    parser.add_argument("--window", type=int, default=1_000, help="THORS window (default 1,000)")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    n, position = (6_000, 3_000) if args.quick else (20_000, 10_000)
    out = args.out or pathlib.Path(__file__).with_name("drift.png")

    start = time.perf_counter()
    data = drifting_stream(n, position)
    phases = [0, position, position + 2_000]
    every, rolling = max(n // 200, 1), 500
    models = {
        "plain predict_one": pipeline(),
        f"THORS, window {args.window:,}": ThorsClassifier(
            pipeline(), fn_cost=FN_COST, fp_cost=FP_COST, window=args.window
        ),
        "THORS, unbounded": ThorsClassifier(pipeline(), fn_cost=FN_COST, fp_cost=FP_COST, window=None),
    }
    results = {label: run(model, data, phases, every, rolling) for label, model in models.items()}

    share = [sum(y for _, y in data[a:b]) / (b - a) for a, b in [(0, position), (position + 2_000, n)]]
    print(f"{n:,} events, drift at {position:,}; positives {share[0]:.0%} before, {share[1]:.0%} after")
    heads = [f"0-{position:,}", f"{position:,}-{position + 2_000:,}", f"{position + 2_000:,}-{n:,}", "total"]
    width = max(map(len, results))
    print(f"  {'decision rule':<{width}}" + "".join(f"  {h:>13}" for h in heads))
    for label, r in results.items():
        cells = [*r["costs"], sum(r["costs"])]
        print(f"  {label:<{width}}" + "".join(f"  {c:>13,.0f}" for c in cells))
    thr = {k: r["thresholds"][-1] for k, r in results.items() if k.startswith("THORS")}
    print("  final thresholds: " + ", ".join(f"{k} {v:.3f}" for k, v in thr.items()))
    if not args.no_plot:
        plot(results, position, out)
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
