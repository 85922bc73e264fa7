"""One round of a case study: split, preprocess, run every method on every classifier.

Protocol (paper section 4; choices where it is silent are marked *ours*):

- Split sizes: Adult 13,025 / 13,024 / 6,512, MAGIC 7,608 / 7,608 / 3,804 (train /
  validation / test), Shuttle-59:1 40% / 40% / 20%. A round draws one random
  permutation (not stratified; *ours*) from a fixed per-round seed; all classifiers and
  methods of the round share that split.
- Features: categoricals (Adult only) are replaced by the smoothed positive rate of
  their level on the training split (m-estimate, m = 10; *ours* -- "encoded sensibly";
  ``?`` is a level of its own, unseen levels get the training prior), then the 10
  attributes with the largest ANOVA F-value on the training split are kept (the paper
  selects on all samples; selecting on the training split avoids test leakage and picks
  the same 10 of 14 attributes in practice). MAGIC (10) and Shuttle (9) keep all.
- The training split trains every classifier; only THORS uses the validation split
  (to choose its threshold), as in the paper; the test split is used only to score.
- Methods: ``THORS`` (threshold on validation scores, :func:`thors_stream.thors_threshold`),
  ``Null`` (the classifier's own ``predict``), ``Theoretical`` (Elkan's threshold on its
  ``predict_proba``), ``Empirical``, ``MetaCost``, ``CRS`` (see :mod:`.baselines`).
- Test cost: the total ``FN * #false negatives + FP * #false positives`` over the test split.
- Times (wall, ``perf_counter``): each method's full cost from raw training data to test
  predictions; the base model that THORS, Null, Theoretical and Empirical share (the
  same learner, data and seed) is fitted once and its fit time added to each of them.

Extras that the paper does not have (reported separately, not in win/loss tables):
``Empirical-val`` (Sheng & Ling's grid search run on the *validation* probabilities of
the THORS model: same data as THORS, grid instead of order statistics),
``CRS-1`` (cost-proportionate rejection sampling with a single sample instead of the
ensemble of 10), ``Oracle`` (the best threshold on the test scores themselves: a floor
for any threshold on this score), ``All-pos`` and ``All-neg`` (constant predictions).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from thors_stream import thors_threshold

from .baselines import Costing, EmpiricalThresholding, MetaCost, cost_of, elkan_predict
from .classifiers import CLASSIFIERS, RF_TREES, make_classifier, proba, score
from .data import Dataset

__all__ = [
    "CASES", "EXTRA_METHODS", "MAIN_CASES", "METHODS", "QUICK_VARIANTS", "VARIANT_CASES", "Case", "RoundData",
    "Settings", "prepare_round", "round_seed", "run_classifier", "split_sizes",
]

#: The paper's six methods, in its column order.
METHODS = ("THORS", "Null", "Theoretical", "Empirical", "MetaCost", "CRS")
#: Diagnostics beyond the paper.
EXTRA_METHODS = ("Empirical-val", "CRS-1", "Oracle", "All-pos", "All-neg")


@dataclass(frozen=True)
class Case:
    """One experiment: data set, costs, split sizes, classifiers, encoding, paper counterpart.

    ``paper`` names the paper's tables this case is compared with (``trucks``, ``income``,
    ``telescope``, see :mod:`.paper_values`); ``variant_of`` is set for sensitivity runs,
    which reuse their main case's seeds (hence its splits) and change one thing.
    """

    name: str
    dataset: str
    fn_cost: float
    fp_cost: float
    split: tuple[float, float, float] | tuple[int, int, int]
    classifiers: tuple[str, ...]
    paper: str
    encoding: str = "target"
    variant_of: str | None = None
    description: str = ""
    rf_trees: int | None = None
    max_rounds: int | None = None

    def n_rounds(self, rounds: int) -> int:
        """Rounds this case runs when ``rounds`` are asked for (capped by ``max_rounds``)."""
        return rounds if self.max_rounds is None else min(rounds, self.max_rounds)


CASES = {
    "shuttle": Case(
        "shuttle", "shuttle", 500.0, 1.0, (0.4, 0.4, 0.2), CLASSIFIERS["shuttle"], "trucks",
        description="Shuttle 59:1 (stand-in for the paper's Scania trucks data), FN 500, FP 1",
    ),
    "adult": Case(
        "adult", "adult", 100.0, 10.0, (13025, 13024, 6512), CLASSIFIERS["adult"], "income",
        description="Adult (the paper's income data), FN 100, FP 10, categoricals target-encoded",
    ),
    "magic": Case(
        "magic", "magic", 100.0, 20.0, (7608, 7608, 3804), CLASSIFIERS["magic"], "telescope",
        description="MAGIC (the paper's telescope data), FN 100, FP 20 (the costs the paper states)",
    ),
    "adult-ordinal": Case(
        "adult-ordinal", "adult", 100.0, 10.0, (13025, 13024, 6512), CLASSIFIERS["adult"], "income",
        encoding="ordinal", variant_of="adult",
        description="sensitivity: Adult with categoricals as alphabetical integer codes (label encoding)",
    ),
    "magic-fp10": Case(
        "magic-fp10", "magic", 100.0, 10.0, (7608, 7608, 3804), CLASSIFIERS["magic"], "telescope",
        variant_of="magic",
        description="sensitivity: MAGIC with FP cost 10 instead of 20 (the cost the paper's Table 8 implies)",
    ),
    "adult-ordinal-rf100": Case(
        "adult-ordinal-rf100", "adult", 100.0, 10.0, (13025, 13024, 6512), ("RF",), "income",
        encoding="ordinal", variant_of="adult-ordinal", rf_trees=100, max_rounds=4,
        description="sensitivity: adult-ordinal with 100-tree random forests (RF only, 4 rounds)",
    ),
    "magic-fp10-rf100": Case(
        "magic-fp10-rf100", "magic", 100.0, 10.0, (7608, 7608, 3804), ("RF",), "telescope",
        variant_of="magic-fp10", rf_trees=100, max_rounds=4,
        description="sensitivity: magic-fp10 with 100-tree random forests (RF only, 4 rounds)",
    ),
}

#: The main cases (the paper's three case studies) and the sensitivity variants.
MAIN_CASES = ("shuttle", "adult", "magic")
VARIANT_CASES = ("adult-ordinal", "magic-fp10", "adult-ordinal-rf100", "magic-fp10-rf100")
#: Variants run by ``--quick`` (the 100-tree forests are left out to keep it fast).
QUICK_VARIANTS = ("adult-ordinal", "magic-fp10")

#: Seed of round ``r`` of a case on data set ``d``: ``SEED_BASE[d] + r`` (variants share it).
SEED_BASE = {"shuttle": 1000, "adult": 2000, "magic": 3000}


def round_seed(case: Case, r: int) -> int:
    """The seed of round ``r`` (0-based) of ``case``; equal for a case and its variants."""
    return SEED_BASE[case.dataset] + r


@dataclass
class Settings:
    """Method parameters (see :mod:`.baselines`)."""

    cv_folds: int = 10
    grid_precision: float = 0.001
    metacost_m: int = 10
    costing_t: int = 10
    rf_trees: int = RF_TREES
    n_features: int = 10
    te_smoothing: float = 10.0


@dataclass
class RoundData:
    """The preprocessed train / validation / test arrays of one round."""

    X_tr: np.ndarray
    y_tr: np.ndarray
    X_va: np.ndarray
    y_va: np.ndarray
    X_te: np.ndarray
    y_te: np.ndarray
    features: list[str]
    prep_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def split_sizes(case: Case, n: int) -> tuple[int, int, int]:
    """Train / validation / test sizes for ``n`` rows (fractions are rounded, test takes the rest)."""
    a, b, c = case.split
    if isinstance(a, float) or a + b + c != n:
        tot = float(a + b + c)
        n_tr = round(n * a / tot)
        n_va = round(n * b / tot)
        return n_tr, n_va, n - n_tr - n_va
    return int(a), int(b), int(c)


def _target_encode(X: np.ndarray, y: np.ndarray, tr: np.ndarray, cols: list[int], m: float) -> np.ndarray:
    X = X.copy()
    prior = float(y[tr].mean())
    for j in cols:
        codes = X[:, j].astype(np.int64)
        k = int(codes.max()) + 1
        cnt = np.bincount(codes[tr], minlength=k).astype(np.float64)
        pos = np.bincount(codes[tr], weights=y[tr].astype(np.float64), minlength=k)
        X[:, j] = ((pos + m * prior) / (cnt + m))[codes]
    return X


def prepare_round(ds: Dataset, case: Case, seed: int, settings: Settings) -> RoundData:
    """Draw the round's split and build its feature matrices (encoding + ANOVA selection)."""
    from sklearn.feature_selection import f_classif

    t0 = time.perf_counter()
    n_tr, n_va, _ = split_sizes(case, ds.n)
    perm = np.random.default_rng(seed).permutation(ds.n)
    tr, va, te = perm[:n_tr], perm[n_tr:n_tr + n_va], perm[n_tr + n_va:]
    X = ds.X
    if ds.categorical and case.encoding == "target":
        X = _target_encode(X, ds.y, tr, ds.categorical, settings.te_smoothing)
    cols = np.arange(X.shape[1])
    if X.shape[1] > settings.n_features:
        with np.errstate(divide="ignore", invalid="ignore"):
            F, _ = f_classif(X[tr], ds.y[tr])
        F = np.nan_to_num(F, nan=-1.0)
        cols = np.sort(np.argsort(-F, kind="stable")[: settings.n_features])
    X = X[:, cols]
    return RoundData(
        X[tr], ds.y[tr], X[va], ds.y[va], X[te], ds.y[te], [ds.columns[j] for j in cols],
        prep_time=time.perf_counter() - t0,
    )


def _timed(f: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def run_classifier(rd: RoundData, case: Case, clf: str, seed: int, settings: Settings,
                   audit: bool = False) -> dict[str, Any]:
    """Run every method with base classifier ``clf`` on one prepared round.

    Returns ``{"methods": {name: {"cost", "fn", "fp", "time"}}, "thors": {...}, "audit": {...}}``.
    """
    fn_c, fp_c = case.fn_cost, case.fp_cost

    trees = case.rf_trees if case.rf_trees is not None else settings.rf_trees

    def factory(s: int) -> Any:
        return make_classifier(clf, fn_c, fp_c, s, rf_trees=trees)

    y_te = rd.y_te
    out: dict[str, Any] = {"methods": {}}

    def record(name: str, pred: np.ndarray, seconds: float) -> None:
        pred = np.asarray(pred, dtype=bool)
        out["methods"][name] = {
            "cost": cost_of(y_te, pred, fn_c, fp_c),
            "fn": int(np.count_nonzero(y_te & ~pred)),
            "fp": int(np.count_nonzero(~y_te & pred)),
            "time": seconds,
        }

    # the shared base model (THORS, Null, Theoretical, Empirical's final model)
    base, t_fit = _timed(lambda: factory(seed).fit(rd.X_tr, rd.y_tr))

    # THORS: threshold = order statistic of the validation scores
    def thors() -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        s_va = score(base, rd.X_va)
        r = thors_threshold(s_va, rd.y_va, fn_cost=fn_c, fp_cost=fp_c)
        s_te = score(base, rd.X_te)
        return r, r.predict(s_te), s_va, s_te

    (r, pred, s_va, s_te), t = _timed(thors)
    t_thr = _timed(lambda: thors_threshold(s_va, rd.y_va, fn_cost=fn_c, fp_cost=fp_c))[1]
    record("THORS", pred, t_fit + t)
    out["thors"] = {"threshold": r.threshold, "val_cost": r.cost, "threshold_time": t_thr,
                    "val_fpr": r.fpr, "val_fnr": r.fnr}
    if audit:
        out["audit"] = {"val_s": s_va, "val_y": rd.y_va, "test_s": s_te, "test_y": y_te}

    pred, t = _timed(lambda: base.predict(rd.X_te))
    record("Null", pred, t_fit + t)

    p_te, t = _timed(lambda: proba(base, rd.X_te))
    record("Theoretical", elkan_predict(p_te, fn_c, fp_c), t_fit + t)

    def empirical() -> np.ndarray:
        return EmpiricalThresholding(factory, fn_c, fp_c, folds=settings.cv_folds,
                                     precision=settings.grid_precision, seed=seed).fit(
            rd.X_tr, rd.y_tr, model=base).predict(rd.X_te)

    pred, t = _timed(empirical)
    record("Empirical", pred, t_fit + t)

    def metacost() -> np.ndarray:
        return MetaCost(factory, fn_c, fp_c, m=settings.metacost_m, seed=seed).fit(rd.X_tr, rd.y_tr).predict(rd.X_te)

    pred, t = _timed(metacost)
    record("MetaCost", pred, t)

    def crs() -> np.ndarray:
        return Costing(factory, fn_c, fp_c, t=settings.costing_t, seed=seed).fit(rd.X_tr, rd.y_tr).predict(rd.X_te)

    pred, t = _timed(crs)
    record("CRS", pred, t)

    # extras
    emp = EmpiricalThresholding(factory, fn_c, fp_c, precision=settings.grid_precision)
    p_va, t = _timed(lambda: proba(base, rd.X_va))
    thr_val, t2 = _timed(lambda: emp.search(p_va, rd.y_va))
    record("Empirical-val", p_te >= thr_val, t_fit + t + t2)
    pred, t = _timed(lambda: Costing(factory, fn_c, fp_c, t=1, seed=seed).fit(rd.X_tr, rd.y_tr).predict(rd.X_te))
    record("CRS-1", pred, t)
    orc = thors_threshold(s_te, y_te, fn_cost=fn_c, fp_cost=fp_c)
    record("Oracle", orc.predict(s_te), 0.0)
    record("All-pos", np.ones_like(y_te), 0.0)
    record("All-neg", np.zeros_like(y_te), 0.0)
    return out
