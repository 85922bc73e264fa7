"""The paper's competitors of THORS, implemented from their original papers.

All four take a *model factory* ``make_model(seed) -> unfitted scikit-learn classifier``
(the base learner, used as a black box), two-class data with ``y`` bool (True =
positive) and the costs ``fn_cost = C(1,0)``, ``fp_cost = C(0,1)`` (zero diagonal).

- :func:`elkan_predict` -- theoretical threshold (Elkan 2001, "The foundations of
  cost-sensitive learning"): predict positive iff ``P(1|x) >= p*`` with
  ``p* = fp_cost / (fp_cost + fn_cost)``, applied to the base model's own probabilities.
- :class:`EmpiricalThresholding` -- Sheng & Ling (2006), "Thresholding for making
  classifiers cost-sensitive": probabilities for every *training* example are obtained
  by K-fold cross-validation on the training set, the probability threshold with the
  least total cost on them is searched (here on a grid ``0, pc, 2 pc, ..., 1``, the
  form the THORS paper analyses: range / pc candidates), and the model trained on the
  whole training set is cut there.
- :class:`MetaCost` -- Domingos (1999): ``m`` bootstrap resamples of ``n`` examples, a
  model per resample, class probabilities of each training example averaged over the
  models (``p = True``: the learner's own probabilities; ``q = True``: every model is
  used for every example), each training example relabelled to the class of least
  expected cost ``argmin_i sum_j P(j|x) C(i, j)``, and the learner retrained on the
  relabelled set; the final model's plain ``predict`` is the prediction.
- :class:`Costing` -- cost-proportionate rejection sampling with the ensemble of
  Zadrozny, Langford & Abe (2003), "Cost-sensitive learning by cost-proportionate
  example weighting": ``t`` independent rejection samples, each example kept with
  probability ``c / Z`` (``c`` = the cost of misclassifying it, ``Z = max c``), a model
  per sample, and the prediction ``sign(sum_i h_i(x))`` -- a majority vote (a tied vote,
  possible with even ``t``, goes to the positive class).

A resample (or relabelled set) that holds only one class cannot be fitted; the member
then predicts that class with probability 1, which is what the learner would converge
to on such data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .classifiers import proba

__all__ = ["Costing", "EmpiricalThresholding", "MetaCost", "cost_of", "elkan_predict", "elkan_threshold"]

ModelFactory = Callable[[int], Any]


def cost_of(y: np.ndarray, pred: np.ndarray, fn_cost: float, fp_cost: float) -> float:
    """Total misclassification cost ``fn_cost * #FN + fp_cost * #FP`` of ``pred`` against ``y``."""
    y = np.asarray(y, dtype=bool)
    pred = np.asarray(pred, dtype=bool)
    return float(fn_cost * np.count_nonzero(y & ~pred) + fp_cost * np.count_nonzero(~y & pred))


def elkan_threshold(fn_cost: float, fp_cost: float) -> float:
    """Elkan's optimal probability threshold ``p* = C(0,1) / (C(0,1) + C(1,0))`` (zero diagonal)."""
    return fp_cost / (fp_cost + fn_cost)


def elkan_predict(p1: np.ndarray, fn_cost: float, fp_cost: float) -> np.ndarray:
    """Predict positive iff ``P(1|x) >= p*`` (Elkan 2001, Theorem 1 and its corollary)."""
    return np.asarray(p1) >= elkan_threshold(fn_cost, fp_cost)


class _Constant:
    """A fitted stand-in for a learner that saw only one class."""

    def __init__(self, label: bool) -> None:
        self.label = bool(label)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.label)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p = np.full(X.shape[0], float(self.label))
        return np.column_stack([1.0 - p, p])


def _fit(make_model: ModelFactory, seed: int, X: np.ndarray, y: np.ndarray) -> Any:
    if y.shape[0] == 0:
        raise ValueError("cannot fit a model on no examples")
    if y.all() or not y.any():
        return _Constant(bool(y[0]))
    return make_model(seed).fit(X, y)


def _proba(model: Any, X: np.ndarray) -> np.ndarray:
    if isinstance(model, _Constant):
        return model.predict_proba(X)[:, 1]
    return proba(model, X)


def _predict(model: Any, X: np.ndarray) -> np.ndarray:
    return np.asarray(model.predict(X)).astype(bool)


class EmpiricalThresholding:
    """Sheng & Ling (2006) thresholding: CV probabilities on the training set, grid search.

    Parameters
    ----------
    make_model
        Base-learner factory ``seed -> unfitted classifier``.
    fn_cost, fp_cost
        Misclassification costs.
    folds
        Number of stratified cross-validation folds on the training set.
    precision
        Grid step ``pc``; candidates are ``0, pc, ..., 1`` (``range / pc + 1`` of them).
    seed
        Seed of the folds and of the models.

    The threshold minimises ``fn_cost * #(y = 1, p < t) + fp_cost * #(y = 0, p >= t)`` over
    the out-of-fold probabilities ``p``; a tie between grid points is broken by taking the
    middle of the first run of consecutive minimal points (the plateau's centre, the
    least arbitrary point where the training data cannot tell the candidates apart).
    """

    def __init__(self, make_model: ModelFactory, fn_cost: float, fp_cost: float, *, folds: int = 10,
                 precision: float = 0.001, seed: int = 0) -> None:
        self.make_model = make_model
        self.fn_cost, self.fp_cost = float(fn_cost), float(fp_cost)
        self.folds, self.precision, self.seed = folds, precision, seed
        self.threshold_: float | None = None
        self.model_: Any = None

    def grid(self) -> np.ndarray:
        """The candidate thresholds ``0, pc, ..., 1``."""
        k = round(1.0 / self.precision)
        return np.linspace(0.0, 1.0, k + 1)

    def search(self, p: np.ndarray, y: np.ndarray) -> float:
        """The grid threshold of least total cost for probabilities ``p`` and labels ``y``."""
        grid = self.grid()
        p1, p0 = np.sort(p[y]), np.sort(p[~y])
        fn = np.searchsorted(p1, grid, side="left")  # positives with p < t: predicted negative
        fp = p0.shape[0] - np.searchsorted(p0, grid, side="left")  # negatives with p >= t
        cost = self.fn_cost * fn + self.fp_cost * fp
        best = cost.min()
        first = int(np.argmax(cost == best))
        last = first
        while last + 1 < cost.shape[0] and cost[last + 1] == best:
            last += 1
        return float(grid[(first + last) // 2])

    def oof_proba(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Out-of-fold probabilities of every training example (stratified K-fold)."""
        from sklearn.model_selection import StratifiedKFold

        folds = min(self.folds, int(y.sum()), int((~y).sum()))
        if folds < 2:
            raise ValueError("too few examples of one class for cross-validation")
        oof = np.empty(y.shape[0])
        skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=self.seed)
        for k, (tr, te) in enumerate(skf.split(X, y)):
            oof[te] = _proba(_fit(self.make_model, self.seed + 1 + k, X[tr], y[tr]), X[te])
        return oof

    def fit(self, X: np.ndarray, y: np.ndarray, model: Any = None) -> EmpiricalThresholding:
        """Search the threshold by CV on ``(X, y)``; fit (or take the given fitted) final model."""
        y = np.asarray(y, dtype=bool)
        self.threshold_ = self.search(self.oof_proba(X, y), y)
        self.model_ = model if model is not None else _fit(self.make_model, self.seed, X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predict positive iff the final model's ``P(1|x) >= threshold_``."""
        return _proba(self.model_, X) >= self.threshold_


class MetaCost:
    """Domingos (1999) MetaCost for two classes with a zero-diagonal cost matrix.

    Parameters
    ----------
    make_model
        Base-learner factory ``seed -> unfitted classifier``.
    fn_cost, fp_cost
        ``C(1,0)`` and ``C(0,1)``.
    m
        Number of bootstrap resamples.
    n
        Examples per resample (default: the training set's size).
    seed
        Seed of the resamples and models.

    ``relabel_`` holds the relabelled training classes; ``n_changed_`` how many differ.
    """

    def __init__(self, make_model: ModelFactory, fn_cost: float, fp_cost: float, *, m: int = 10,
                 n: int | None = None, seed: int = 0) -> None:
        self.make_model = make_model
        self.fn_cost, self.fp_cost = float(fn_cost), float(fp_cost)
        self.m, self.n, self.seed = m, n, seed
        self.model_: Any = None
        self.relabel_: np.ndarray | None = None
        self.n_changed_ = 0

    def fit(self, X: np.ndarray, y: np.ndarray) -> MetaCost:
        """Bag, relabel every training example to its least-expected-cost class, retrain."""
        y = np.asarray(y, dtype=bool)
        rng = np.random.default_rng(self.seed)
        size = self.n if self.n is not None else y.shape[0]
        p1 = np.zeros(y.shape[0])
        for i in range(self.m):
            idx = rng.integers(0, y.shape[0], size)
            p1 += _proba(_fit(self.make_model, self.seed + 1 + i, X[idx], y[idx]), X)
        p1 /= self.m
        # expected cost of predicting 1 is P(0|x) C(0,1); of predicting 0 is P(1|x) C(1,0);
        # argmin takes class 0 on a tie
        self.relabel_ = p1 * self.fn_cost > (1.0 - p1) * self.fp_cost
        self.n_changed_ = int(np.count_nonzero(self.relabel_ != y))
        self.model_ = _fit(self.make_model, self.seed, X, self.relabel_)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The retrained model's own prediction."""
        return _predict(self.model_, X)


class Costing:
    """Zadrozny, Langford & Abe (2003) costing: rejection samples + majority vote.

    Parameters
    ----------
    make_model
        Base-learner factory ``seed -> unfitted classifier``.
    fn_cost, fp_cost
        Cost of misclassifying a positive / a negative (the example weights ``c``).
    t
        Number of rejection samples (ensemble members).
    seed
        Seed of the samples and models.

    ``sample_sizes_`` records the size of each accepted sample.
    """

    def __init__(self, make_model: ModelFactory, fn_cost: float, fp_cost: float, *, t: int = 10,
                 seed: int = 0) -> None:
        self.make_model = make_model
        self.fn_cost, self.fp_cost = float(fn_cost), float(fp_cost)
        self.t, self.seed = t, seed
        self.members_: list[Any] = []
        self.sample_sizes_: list[int] = []

    def fit(self, X: np.ndarray, y: np.ndarray) -> Costing:
        """Draw ``t`` cost-proportionate rejection samples and fit a model on each."""
        y = np.asarray(y, dtype=bool)
        rng = np.random.default_rng(self.seed)
        c = np.where(y, self.fn_cost, self.fp_cost)
        accept = c / c.max()
        self.members_, self.sample_sizes_ = [], []
        for i in range(self.t):
            keep = rng.random(y.shape[0]) < accept
            if not keep.any():  # cannot happen when some example has c = Z; kept for safety
                keep[int(np.argmax(accept))] = True
            self.sample_sizes_.append(int(keep.sum()))
            self.members_.append(_fit(self.make_model, self.seed + 1 + i, X[keep], y[keep]))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Majority vote of the members (ties go to the positive class)."""
        votes = np.zeros(X.shape[0])
        for h in self.members_:
            votes += np.where(_predict(h, X), 1.0, -1.0)
        return votes >= 0.0
