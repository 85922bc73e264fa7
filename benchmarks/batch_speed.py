"""Batch thresholding speed: thors_threshold against np.argsort and scikit-learn.

For n = 1e6 and 1e7 scores (two Gaussian classes, 5% positives, FN cost 10, FP
cost 1), prints the median wall time of

- ``thors_threshold`` (unweighted: one ``np.sort`` + binary searches; weighted:
  one ``np.argsort``),
- ``np.argsort`` of the same array (the floor the issue compares against),
- scikit-learn's ``TunedThresholdClassifierCV`` (``cv="prefit"``, its default 100
  thresholds, the same cost as a scorer) on the same scores, at n = 1e6 only,

and the empirical cost each threshold reaches (sklearn predicts positive when the
score is ``>=`` its threshold; its cost is computed under its own rule).

Run: ``python benchmarks/batch_speed.py`` (``--quick`` for a smoke run). Needs
the ``bench`` extra (scikit-learn) for the last column.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thors_stream import thors_threshold

FN, FP = 10.0, 1.0


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.05
    return rng.normal(size=n) + 1.5 * y, y


def best_of(f, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def cost_ge(s: np.ndarray, y: np.ndarray, thr: float) -> float:
    pred = s >= thr
    return float(FN * np.sum(y & ~pred) + FP * np.sum(~y & pred))


def sklearn_search(s: np.ndarray, y: np.ndarray) -> float:
    try:
        from sklearn.base import BaseEstimator, ClassifierMixin
        from sklearn.metrics import make_scorer
        from sklearn.model_selection import TunedThresholdClassifierCV
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise SystemExit("scikit-learn is needed for this comparison: pip install 'thors_stream[bench]'") from exc

    class Scores(ClassifierMixin, BaseEstimator):
        """A fitted 'classifier' whose decision function is the given score column."""

        def fit(self, X, y):
            self.classes_ = np.array([False, True])
            return self

        def decision_function(self, X):
            return X[:, 0]

    def neg_cost(y_true, y_pred):
        return -(FN * np.sum(y_true & ~y_pred) + FP * np.sum(~y_true & y_pred))

    est = Scores().fit(None, None)
    tuned = TunedThresholdClassifierCV(
        est, scoring=make_scorer(neg_cost), cv="prefit", refit=False, response_method="decision_function"
    )
    tuned.fit(s[:, None], y)
    return float(tuned.best_threshold_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-sklearn", action="store_true")
    args = ap.parse_args()
    sizes = [100_000] if args.quick else [1_000_000, 10_000_000]
    repeat = 3 if args.quick else 5
    print(f"FN={FN:g} FP={FP:g}; 5% positives; median of {repeat} runs")
    print("| n | thors_threshold s | weighted s | np.argsort s | thors / argsort | sklearn 100-grid s "
          "| sklearn / thors | THORS cost | sklearn cost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        s, y = data(n)
        t_thors, r = best_of(lambda s=s, y=y: thors_threshold(s, y, fn_cost=FN, fp_cost=FP), repeat)
        w = np.ones(n)
        t_w, rw = best_of(lambda s=s, y=y, w=w: thors_threshold(s, y, fn_cost=FN, fp_cost=FP, sample_weight=w), repeat)
        assert rw.threshold == r.threshold and rw.cost == r.cost
        t_sort, _ = best_of(lambda s=s: np.argsort(s), repeat)
        sk_t = sk_c = "-"
        ratio = "-"
        if not args.no_sklearn and n <= 1_000_000:
            t_sk, thr = best_of(lambda s=s, y=y: sklearn_search(s, y), 1)
            sk_c = f"{cost_ge(s, y, thr):,.0f}"
            sk_t = f"{t_sk:.2f}"
            ratio = f"{t_sk / t_thors:,.0f}x"
            assert r.cost <= cost_ge(s, y, thr)
        print(f"| {n:.0e} | {t_thors:.3f} | {t_w:.3f} | {t_sort:.3f} | {t_thors / t_sort:.2f} | {sk_t} | {ratio} "
              f"| {r.cost:,.0f} | {sk_c} |", flush=True)


if __name__ == "__main__":
    main()
