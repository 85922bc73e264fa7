"""The paper's Fig. 2/4 on the Adult data: validation size needed against the cost bound.

Protocol of the paper's income case study (section 4.2): FN cost 100, FP cost 10; 13,025
training / 13,024 validation / 6,512 test events; ten predictors by ANOVA F-value (here
chosen among the one-hot-encoded attributes); classifiers Logit (cost-weighted), LDA,
Gaussian NB, random forest. THORS picks the threshold on the validation scores; its FPR and
FNR and the validation class mix feed ``required_validation_size`` for a range of allowed
bounds (multiples of ``C2``), with the valid bounds and with the paper's equation (cost.ub1).

    python benchmarks/planner_adult.py [--data PATH] [--seed 0]

Needs scikit-learn and matplotlib (``pip install -e '.[bench,plot]'``). Prints a table and
writes ``benchmarks/results/planner_adult.png``. The data path defaults to
``../shared/datasets/adult.data.gz`` relative to the repository, or ``$THORS_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

from thors_stream import thors_threshold
from thors_stream.planner import required_validation_size
from thors_stream.plotting import plot_validation_size

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FN, FP = 100.0, 10.0
N_TRAIN, N_VAL, N_TEST = 13_025, 13_024, 6_512
NUMERIC = {0, 2, 4, 10, 11, 12}


def default_data() -> Path:
    base = Path(os.environ.get("THORS_DATA_DIR", ROOT.parent / "shared" / "datasets"))
    return base / "adult.data.gz"


def load_adult(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One-hot design matrix (numeric columns as is) and labels (``>50K`` = 1)."""
    if not path.exists():
        sys.exit(f"Adult data not found at {path} (set --data or THORS_DATA_DIR)")
    with gzip.open(path, "rt") as fh:
        rows = [[f.strip() for f in r] for r in csv.reader(io.StringIO(fh.read())) if len(r) == 15]
    y = np.array([r[14] == ">50K" for r in rows])
    cols = []
    for j in range(14):
        vals = [r[j] for r in rows]
        if j in NUMERIC:
            cols.append(np.array(vals, dtype=np.float64)[:, None])
        else:
            levels = sorted(set(vals))
            idx = {v: i for i, v in enumerate(levels)}
            codes = np.array([idx[v] for v in vals])
            cols.append((codes[:, None] == np.arange(len(levels))[None, :]).astype(np.float64))
    return np.hstack(cols), y


def classifiers(seed: int) -> dict:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "Logit": make_pipeline(StandardScaler(), LogisticRegression(class_weight={0: FP, 1: FN}, max_iter=2000)),
        "LDA": LinearDiscriminantAnalysis(),
        "NB": GaussianNB(),
        "RF": RandomForestClassifier(n_estimators=200, min_samples_leaf=5, n_jobs=2, random_state=seed),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "planner_adult.png")
    args = ap.parse_args(argv)
    try:
        from sklearn.feature_selection import SelectKBest, f_classif
    except ImportError:
        sys.exit("needs scikit-learn: pip install -e '.[bench]'")
    t0 = time.perf_counter()
    X, y = load_adult(args.data)
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(y))
    tr, va, te = perm[:N_TRAIN], perm[N_TRAIN:N_TRAIN + N_VAL], perm[N_TRAIN + N_VAL:N_TRAIN + N_VAL + N_TEST]
    sel = SelectKBest(f_classif, k=10).fit(X[tr], y[tr])
    Xs = sel.transform(X)
    multiples = np.round(np.linspace(1.05, 3.5, 50), 3)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    print(f"Adult, FN {FN:g} / FP {FP:g}, {N_TRAIN:,} / {N_VAL:,} / {N_TEST:,}, seed {args.seed}; "
          "bounds at 95%, n_test = 6,512")
    head = (f"{'clf':6s} {'FPR':>6s} {'FNR':>6s} {'test cost':>10s} {'E-cost up':>10s} {'cost up':>9s} "
            f"{'exact':>8s} {'paper T3':>9s} {'bound/C2':>9s} {'n_v@1.3 valid':>14s} {'n_v@1.3 paper':>14s}")
    print(head)
    for i, (name, clf) in enumerate(classifiers(args.seed).items()):
        clf.fit(Xs[tr], y[tr])
        sv, st = clf.predict_proba(Xs[va])[:, 1], clf.predict_proba(Xs[te])[:, 1]
        r = thors_threshold(sv, y[va], fn_cost=FN, fp_cost=FP)
        b = r.bounds(0.95, n_test=N_TEST)
        pred = r.predict(st)
        test_cost = FN * np.sum(~pred & y[te]) + FP * np.sum(pred & ~y[te])
        pi1 = r.count1 / (r.count0 + r.count1)
        c2 = N_TEST * (pi1 * FN * r.fnr + (1 - pi1) * FP * r.fpr)
        kw = dict(fn_cost=FN, fp_cost=FP, n_test=N_TEST)
        nv = required_validation_size(r.fpr, r.fnr, pi1, multiple=1.3, **kw)
        nv_paper = required_validation_size(r.fpr, r.fnr, pi1, multiple=1.3, method="paper", **kw)
        print(f"{name:6s} {r.fpr:6.3f} {r.fnr:6.3f} {test_cost:10,.0f} {b.expected_cost_upper:10,.0f} "
              f"{b.cost_upper:9,.0f} {b.cost_upper_exact:8,.0f} {b.paper_cost_upper:9,.0f} "
              f"{b.expected_cost_upper / c2:9.3f} {nv:14,} {nv_paper:14,}")
        start = len(ax.lines)
        plot_validation_size(r.fpr, r.fnr, pi1, multiples=multiples, label=name, ax=ax, **kw)
        for line in ax.lines[start:]:
            line.set_color(colors[i % len(colors)])
    ax.axhline(np.log10(N_VAL), color="grey", lw=0.8, ls=":")
    ax.text(3.45, np.log10(N_VAL) + 0.03, f"n_v = {N_VAL:,}", ha="right", fontsize="small", color="grey")
    ax.set_title("Adult: validation size for a 95% bound on the expected cost (cf. paper Fig. 2/4)")
    ax.legend(fontsize="x-small", ncol=2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
