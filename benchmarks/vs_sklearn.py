"""ThorsThresholdClassifier against scikit-learn's TunedThresholdClassifierCV (Adult, MAGIC).

Both meta-estimators wrap the same classifier, get the same cost scorer / costs, the same
train/test split and the same cross-validation splitter (``StratifiedKFold(5, shuffle=True,
random_state=seed)``), and refit on the whole training split:

- ``ThorsThresholdClassifier(clf, fn_cost=FN, fp_cost=FP, cv=cv)``: the exact THORS order
  statistic of the pooled out-of-fold scores;
- ``TunedThresholdClassifierCV(clf, scoring=make_scorer(-cost), cv=cv)`` with its default grid of
  100 thresholds: per-fold cost curves averaged on the grid.

A third setting isolates the threshold search itself: the classifier is fitted once on half of
the training split and both meta-estimators run with ``cv="prefit"`` on the other half (the
same validation set), so their fit times are the search (plus one ``predict_proba``); there
scikit-learn runs with 100 and with 1000 grid thresholds.

Costs are the paper's: Adult FN 100 / FP 10, MAGIC FN 100 / FP 20. The test cost is
``FN * #FN + FP * #FP`` on a stratified 30 % test split; mean ± sd over ``--seeds`` seeds.
Classifiers: logistic regression (one-hot categoricals, standardised numerics) and
HistGradientBoosting (50 iterations, native categoricals; ``--hgb-seeds`` seeds, default 3).

Run: ``python benchmarks/vs_sklearn.py`` (about 3-4 minutes on 2 shared cores; ``--quick``: MAGIC,
logistic regression, 2 seeds). Writes ``benchmarks/results/vs_sklearn.md`` (not in quick mode).
Needs scikit-learn (``pip install -e '.[bench]'``) and the UCI files (see ``benchmarks/paper/data.py``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

try:
    import sklearn
except ImportError:
    raise ImportError("vs_sklearn.py needs scikit-learn: pip install 'thors_stream[bench]'") from None
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import StratifiedKFold, TunedThresholdClassifierCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from thors_stream.sklearn import ThorsThresholdClassifier

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "vs_sklearn.md"
COSTS = {"adult": (100.0, 10.0), "magic": (100.0, 20.0)}


def _load(name: str):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.paper.data import load

    return load(name)


def make_classifier(kind: str, ds) -> object:
    """The base classifier for data set ``ds``: ``"logit"`` or ``"hgb"``."""
    cat = list(ds.categorical)
    num = [j for j in range(ds.X.shape[1]) if j not in cat]
    if kind == "logit":
        if cat:
            pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                                     ("num", StandardScaler(), num)])
        else:
            pre = StandardScaler()
        return make_pipeline(pre, LogisticRegression(max_iter=1000))
    if kind == "hgb":
        mask = np.zeros(ds.X.shape[1], dtype=bool)
        mask[cat] = True
        return HistGradientBoostingClassifier(max_iter=50, categorical_features=mask if cat else None, random_state=0)
    raise ValueError(f"unknown classifier {kind!r}")


def cost_of(y_true: np.ndarray, y_pred: np.ndarray, fn: float, fp: float) -> float:
    """Total test cost ``fn * #false negatives + fp * #false positives`` (labels 0/1)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return float(fn * np.sum((y_true == 1) & (y_pred == 0)) + fp * np.sum((y_true == 0) & (y_pred == 1)))


def run_one(ds, kind: str, seed: int) -> dict[str, tuple[float, float]]:
    """``{method: (test cost, fit wall seconds)}`` for one split."""
    fn, fp = COSTS[ds.name]
    y = ds.y.astype(int)
    X_tr, X_te, y_tr, y_te = train_test_split(ds.X, y, test_size=0.3, stratify=y, random_state=seed)
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    scorer = make_scorer(cost_of, greater_is_better=False, fn=fn, fp=fp)
    base = make_classifier(kind, ds)
    methods = {
        "THORS cv5": lambda: ThorsThresholdClassifier(base, fn_cost=fn, fp_cost=fp, cv=cv),
        "sklearn cv5 (100 thr)": lambda: TunedThresholdClassifierCV(base, scoring=scorer, cv=cv),
    }
    out = {}
    # alternate which method runs first, so bursts of load from other processes hit both alike
    for name, make in (list(methods.items()) if seed % 2 == 0 else list(methods.items())[::-1]):
        t0 = time.perf_counter()
        m = make().fit(X_tr, y_tr)
        out[name] = (cost_of(y_te, m.predict(X_te), fn, fp), time.perf_counter() - t0)
    # prefit: the threshold search alone, on the same validation half
    X_a, X_v, y_a, y_v = train_test_split(X_tr, y_tr, test_size=0.5, stratify=y_tr, random_state=seed)
    fitted = make_classifier(kind, ds).fit(X_a, y_a)
    prefit = {
        "THORS prefit": lambda: ThorsThresholdClassifier(fitted, fn_cost=fn, fp_cost=fp, cv="prefit", refit=False),
        "sklearn prefit (100 thr)": lambda: TunedThresholdClassifierCV(fitted, scoring=scorer, cv="prefit",
                                                                       refit=False),
        "sklearn prefit (1000 thr)": lambda: TunedThresholdClassifierCV(fitted, scoring=scorer, cv="prefit",
                                                                        refit=False, thresholds=1000),
    }
    for name, make in (list(prefit.items()) if seed % 2 == 0 else list(prefit.items())[::-1]):
        t0 = time.perf_counter()
        m = make().fit(X_v, y_v)
        out[name] = (cost_of(y_te, m.predict(X_te), fn, fp), time.perf_counter() - t0)
    return out


def _ms(x: np.ndarray) -> str:
    return f"{x.mean():,.0f} ± {x.std(ddof=1) if x.size > 1 else 0.0:,.0f}"


def table(results: dict[tuple[str, str], list[dict[str, tuple[float, float]]]]) -> str:
    """Markdown table: per data set / classifier / method, cost mean ± sd, ratio to THORS, time, ratio."""
    lines = [
        "| data | classifier | method | test cost (mean ± sd) | cost / THORS | THORS wins / ties / losses "
        "| fit time s (median) | time / THORS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (data, kind), runs in results.items():
        for setting in ("cv5", "prefit"):
            ref = f"THORS {setting}"
            rc = np.array([r[ref][0] for r in runs])
            rt = np.array([r[ref][1] for r in runs])
            for name in [k for k in sorted(runs[0], key=lambda k: (not k.startswith("THORS"), k))
                         if k.split()[1].startswith(setting)]:
                c = np.array([r[name][0] for r in runs])
                t = np.array([r[name][1] for r in runs])
                if name == ref:
                    wtl = ""
                else:
                    wtl = f"{int(np.sum(rc < c))} / {int(np.sum(rc == c))} / {int(np.sum(rc > c))}"
                lines.append(
                    f"| {data} | {kind} | {name} | {_ms(c)} | {c.mean() / rc.mean():.4f} | {wtl} "
                    f"| {np.median(t):.3f} | {np.median(t) / np.median(rt):.2f} |"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the comparison, print the table, write ``benchmarks/results/vs_sklearn.md``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds for logistic regression")
    ap.add_argument("--hgb-seeds", type=int, default=3, help="seeds for HistGradientBoosting (slower)")
    ap.add_argument("--quick", action="store_true", help="MAGIC, logistic regression, 2 seeds; writes nothing")
    args = ap.parse_args(argv)
    datasets = ["magic"] if args.quick else ["adult", "magic"]
    kinds = ["logit"] if args.quick else ["logit", "hgb"]
    t_start = time.perf_counter()
    results = {}
    for name in datasets:
        ds = _load(name)
        for kind in kinds:
            # untimed warm-up: the first fit in a process pays one-off costs (OpenMP pool, imports)
            make_classifier(kind, ds).fit(ds.X[::10], ds.y[::10])
            n_seeds = 2 if args.quick else (args.seeds if kind == "logit" else args.hgb_seeds)
            results[(name, kind)] = [run_one(ds, kind, s) for s in range(n_seeds)]
            print(f"done {name} {kind} ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr)
    tab = table(results)
    wall = time.perf_counter() - t_start
    print(tab)
    print(f"\nwall time {wall:.0f} s")
    if args.quick:
        return
    head = (
        "# ThorsThresholdClassifier vs TunedThresholdClassifierCV\n\n"
        f"`python benchmarks/vs_sklearn.py --seeds {args.seeds} --hgb-seeds {args.hgb_seeds}`; "
        f"scikit-learn {sklearn.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}; total wall time {wall:.0f} s "
        "(shared 2-core machine: times are indicative).\n\n"
        "Same train/test split (70/30, stratified, `random_state` = seed 0, 1, ...), same "
        "`StratifiedKFold(5, shuffle=True, random_state=seed)`, same classifier, refit on the whole training "
        "split. Costs: Adult FN 100 / FP 10, MAGIC FN 100 / FP 20. `prefit` rows: the classifier fitted once on "
        "half of the training split, the threshold searched on the other half (fit time = the search plus one "
        "`predict_proba`). Wins / ties / losses count seeds where THORS's test cost is lower / equal / higher. "
        "Fit times are medians over seeds, after one untimed warm-up fit per classifier; the methods alternate "
        "which runs first.\n\n"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(head + tab + "\n")
    print(f"wrote {RESULTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
