"""The paper's base classifiers (scikit-learn), built with fixed settings.

=========  ==========================================================================
``Logit``  ``StandardScaler`` + ``LogisticRegression(class_weight={0: FP, 1: FN})``
           ("logistic regression with cost weighting"; lbfgs, C=1, max_iter=1000)
``LDA``    ``LinearDiscriminantAnalysis()`` (svd solver)
``NB``     ``GaussianNB()``
``RF``     ``RandomForestClassifier(n_estimators=RF_TREES, n_jobs=1)``
``DT``     ``AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=50)``
           ("decision tree combined with AdaBoosting"; scikit-learn's defaults)
=========  ==========================================================================

Every model is single-threaded and seeded. Only ``Logit`` is cost-aware itself; the
paper uses that cost-weighted model as the base learner of *every* method, so the
wrappers (Theoretical, MetaCost, CRS) apply their own cost correction on top of it.

:func:`score` gives THORS the classifier's finest monotone score: the log-odds
(``decision_function`` or the joint log-likelihood difference for NB) where one
exists, else ``predict_proba[:, 1]`` (RF). A monotone transform does not change
THORS's threshold except where ``predict_proba`` saturates at exactly 0 or 1 (as
GaussianNB's does for many rows), which would merge distinct scores into one tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CLASSIFIERS", "RF_TREES", "make_classifier", "proba", "require_sklearn", "score"]

#: Classifiers per data set, in the paper's row order.
CLASSIFIERS = {
    "shuttle": ("Logit", "DT", "NB", "LDA"),
    "adult": ("Logit", "LDA", "NB", "RF"),
    "magic": ("Logit", "LDA", "NB", "RF"),
}

#: Trees per random forest (see the README of the results for why not 100).
RF_TREES = 10


def require_sklearn() -> Any:
    """Import scikit-learn or exit with a message naming the ``bench`` extra."""
    try:
        import sklearn
    except ImportError:
        raise SystemExit(
            "the paper benchmark needs scikit-learn: pip install -e '.[bench]' (the 'bench' extra)"
        ) from None
    return sklearn


def make_classifier(name: str, fn_cost: float, fp_cost: float, seed: int, rf_trees: int = RF_TREES) -> Any:
    """A fresh, unfitted scikit-learn classifier ``name`` seeded with ``seed``."""
    require_sklearn()
    if name == "Logit":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(
            StandardScaler(), LogisticRegression(class_weight={0: fp_cost, 1: fn_cost}, max_iter=1000)
        )
    if name == "LDA":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        return LinearDiscriminantAnalysis()
    if name == "NB":
        from sklearn.naive_bayes import GaussianNB

        return GaussianNB()
    if name == "RF":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=rf_trees, n_jobs=1, random_state=seed)
    if name == "DT":
        from sklearn.ensemble import AdaBoostClassifier
        from sklearn.tree import DecisionTreeClassifier

        return AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=50, random_state=seed)
    raise ValueError(f"unknown classifier {name!r}")


def _final(model: Any) -> Any:
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _pos_column(model: Any) -> int:
    classes = list(_final(model).classes_)
    return classes.index(1) if 1 in classes else classes.index(True)


def proba(model: Any, X: np.ndarray) -> np.ndarray:
    """Estimated P(y = 1 | x) from ``predict_proba``."""
    return model.predict_proba(X)[:, _pos_column(model)]


def score(model: Any, X: np.ndarray) -> np.ndarray:
    """The finest monotone score of ``model`` on ``X`` (larger = more positive)."""
    final = _final(model)
    if hasattr(final, "predict_joint_log_proba"):  # GaussianNB: log-odds without saturation
        Xt = X
        if hasattr(model, "steps"):
            for _, step in model.steps[:-1]:
                Xt = step.transform(Xt)
        jll = final.predict_joint_log_proba(Xt)
        j = _pos_column(model)
        return jll[:, j] - jll[:, 1 - j]
    if hasattr(model, "decision_function"):
        d = np.asarray(model.decision_function(X), dtype=np.float64)
        return d if _pos_column(model) == 1 else -d
    return proba(model, X)
