"""THORS as a cost-sensitive post-processor for a river pipeline.

On river's bundled Phishing and Shuttle streams, a ``StandardScaler | LogisticRegression``
pipeline is evaluated prequentially (``river.evaluate.progressive_val_score``) with
the total misclassification cost as the metric, under five decision rules:

- the model's plain ``predict_one`` (the most probable class, a 0.5 cut);
- a fixed Elkan threshold ``fp_cost / (fp_cost + fn_cost)`` on its probability;
- ``ThorsClassifier``: the THORS threshold of the model's out-of-sample scores over
  a sliding window, labels available right after each decision;
- the same with labels that arrive ``delay`` events late, thresholding the score
  each decision was made with (``key=``), or re-scoring the event when its label
  arrives (no key).

Run: ``python examples/river_pipeline.py`` (about 15 s); ``--quick`` uses the first
5,000 events of each stream.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

from river import base, datasets, evaluate, linear_model, preprocessing

from thors_stream.metrics import Cost
from thors_stream.river import ThorsClassifier


class FixedThreshold(base.Wrapper, base.Classifier):
    """Predict positive iff the wrapped model's probability of the positive class > ``threshold``."""

    def __init__(self, classifier: base.Classifier, threshold: float = 0.5) -> None:
        self.classifier = classifier
        self.threshold = threshold

    @property
    def _wrapped_model(self) -> base.Classifier:
        return self.classifier

    @property
    def _multiclass(self) -> bool:
        return False

    def learn_one(self, x: dict, y: Any, **kwargs: Any) -> None:
        self.classifier.learn_one(x, y)

    def predict_proba_one(self, x: dict, **kwargs: Any) -> dict:
        return self.classifier.predict_proba_one(x)

    def predict_one(self, x: dict, **kwargs: Any) -> bool:
        return self.classifier.predict_proba_one(x).get(True, 0.0) > self.threshold


def pipeline() -> Any:
    return preprocessing.StandardScaler() | linear_model.LogisticRegression()


def keyed(stream: Any) -> Any:
    """Attach a key to every event: river passes ``{"key": i}`` to predict_one and learn_one."""
    return ((x, y, {"key": i}) for i, (x, y) in enumerate(stream))


def evaluate_all(stream_factory: Any, fn_cost: float, fp_cost: float, window: int, delay: int) -> dict:
    elkan = fp_cost / (fp_cost + fn_cost)

    def thors() -> ThorsClassifier:
        return ThorsClassifier(pipeline(), fn_cost=fn_cost, fp_cost=fp_cost, window=window)

    runs = [
        ("plain predict_one (0.5 cut)", pipeline(), lambda: stream_factory(), None),
        (f"fixed Elkan threshold {elkan:.4g}", FixedThreshold(pipeline(), elkan), lambda: stream_factory(), None),
        (f"THORS, window {window:,}", thors(), lambda: stream_factory(), None),
        (f"THORS, labels {delay} late, decision score (key)", thors(), lambda: keyed(stream_factory()), delay),
        (f"THORS, labels {delay} late, re-scored (no key)", thors(), lambda: stream_factory(), delay),
    ]
    costs = {}
    for label, model, data, d in runs:
        metric = Cost(fn_cost=fn_cost, fp_cost=fp_cost)
        evaluate.progressive_val_score(data(), model, metric, moment=None, delay=d)
        costs[label] = metric.get()
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 5,000 events of each stream")
    args = parser.parse_args(argv)
    limit = 5_000 if args.quick else None

    setups = [
        # name, stream, fn_cost, fp_cost, window, delay
        ("Phishing", datasets.Phishing, 10.0, 1.0, 500, 50),
        ("Shuttle", datasets.Shuttle, 100.0, 1.0, 10_000, 1_000),
    ]
    start = time.perf_counter()
    for name, dataset, fn_cost, fp_cost, window, delay in setups:

        def factory(dataset: Any = dataset) -> Any:
            return itertools.islice(dataset(), limit)

        n = sum(1 for _ in factory())
        n_pos = sum(bool(y) for _, y in factory())
        costs = evaluate_all(factory, fn_cost, fp_cost, window, delay)
        print(f"\n{name}: {n:,} events, {n_pos:,} positives; FN cost {fn_cost:g}, FP cost {fp_cost:g}")
        width = max(map(len, costs))
        print(f"  {'decision rule':<{width}}  {'total cost':>11}  {'per event':>9}")
        for label, cost in costs.items():
            print(f"  {label:<{width}}  {cost:>11,.0f}  {cost / n:>9.4f}")
        thors = costs[next(k for k in costs if k.startswith("THORS, window"))]
        best_baseline = min(list(costs.values())[:2])
        print(f"  THORS / best baseline: {thors / best_baseline:.3f}")
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
