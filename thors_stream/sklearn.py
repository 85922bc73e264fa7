"""scikit-learn meta-estimator: a binary classifier whose decision threshold is chosen by THORS.

:class:`ThorsThresholdClassifier` wraps any scikit-learn binary classifier with ``predict_proba``
or ``decision_function``, in the style of :class:`sklearn.model_selection.TunedThresholdClassifierCV`,
but the threshold is the exact THORS order statistic (:func:`thors_stream.thors_threshold`) of
validation scores instead of the best point of a grid of interpolated per-fold scores.

Needs scikit-learn: ``pip install 'thors_stream[sklearn]'``. Multiclass problems are handled by
:mod:`thors_stream.multiclass` (this estimator is binary only).
"""

from __future__ import annotations

import inspect
from numbers import Integral, Real
from typing import Any

import numpy as np

try:
    import sklearn
    from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
    from sklearn.exceptions import NotFittedError
    from sklearn.model_selection import StratifiedShuffleSplit, check_cv
    from sklearn.utils import _safe_indexing, get_tags
    from sklearn.utils.metadata_routing import MetadataRequest, MetadataRouter, MethodMapping, process_routing
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import type_of_target
    from sklearn.utils.validation import check_is_fitted, column_or_1d, indexable
except ImportError as _e:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError(
        f"thors_stream.sklearn needs scikit-learn ({_e}); install it with: pip install 'thors_stream[sklearn]'"
    ) from _e

from thors_stream._validation import check_class_prior
from thors_stream.batch import thors_threshold
from thors_stream.costs import resolve_costs
from thors_stream.margin import cost_margins, per_event_costs

__all__ = ["MoneyLostScorer", "ThorsThresholdClassifier"]

_RESPONSE_METHODS = ("auto", "predict_proba", "decision_function")
_DECIDE_ON = ("score", "margin")


def _estimator_has(attr: str) -> Any:
    """True if the fitted ``estimator_`` (or, before fit, ``estimator``) has ``attr``."""

    def check(self: ThorsThresholdClassifier) -> bool:
        est = getattr(self, "estimator_", None)
        if est is None:
            est = self.estimator
        getattr(est, attr)  # raises AttributeError -> method hidden
        return True

    return check


def _subset_params(params: dict[str, Any], idx: np.ndarray, n: int) -> dict[str, Any]:
    """Index every array-like fit parameter with ``n`` rows by ``idx``; pass others through."""
    out = {}
    for k, v in params.items():
        if v is None or isinstance(v, (str, bytes)) or not (hasattr(v, "__len__") or hasattr(v, "__array__")):
            out[k] = v
            continue
        if not hasattr(v, "__len__"):
            v = np.asarray(v)
        out[k] = _safe_indexing(v, idx) if len(v) == n else v
    return out


def _check_sample_weight(sample_weight: Any, n: int) -> np.ndarray:
    """Weights as a float array of length ``n``: finite, >= 0, not all zero."""
    try:
        sw = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("sample_weight must be an array of real numbers") from None
    if sw.ndim != 1 or sw.shape[0] != n:
        raise ValueError(f"sample_weight must be 1-d of length {n}, got shape {sw.shape}")
    bad = ~((sw >= 0) & np.isfinite(sw))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"sample_weight must be finite and >= 0, got {sw[i].item()!r} at position {i}")
    if not (sw > 0).any():
        raise ValueError("sample_weight is zero everywhere: there is no event to choose a threshold from")
    return sw


class ThorsThresholdClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Binary classifier predicting ``pos_label`` iff its score exceeds the THORS threshold.

    ``fit`` obtains labelled validation scores of ``estimator`` (see ``cv``), picks the
    threshold ``best_threshold_`` by :func:`thors_stream.thors_threshold` -- the smallest
    validation score (or ``-inf``) minimising ``fn_cost * W1(score <= t) + fp_cost * W0(score > t)``,
    ``W`` the (weighted) counts -- and ``predict`` returns ``pos_label`` iff ``score > best_threshold_``
    (strict, as in THORS; scikit-learn's threshold classifiers use ``>=``).

    With ``decide_on="margin"`` the decision is in money, event by event: each event's *cost
    margin* ``logit(p) + log(fn_cost_i / fp_cost_i)`` (``p`` the probability of ``pos_label``,
    see :mod:`thors_stream.margin`) is compared with a THORS cut chosen on the validation
    margins, each positive weighing its ``fn_cost_i`` and each negative its ``fp_cost_i``, so
    the cut minimises the money lost on the validation events. A cut of ``0`` is the per-event
    Bayes rule ``p * fn_cost_i > (1 - p) * fp_cost_i``; a cut away from ``0`` corrects a model
    whose log-odds are off by a constant. The per-event costs (a payment's amount, a review
    fee) are passed to ``fit`` and to ``predict`` as metadata, see below.

    Parameters
    ----------
    estimator
        A binary classifier with ``fit`` and ``predict_proba`` or ``decision_function``.
    fn_cost, fp_cost
        Cost of a false negative (a ``pos_label`` event predicted negative) and of a false
        positive (both finite and > 0), the same for every event. The defaults (1, 1) minimise
        the number of errors. An array of one cost per row passed to ``fit`` replaces the
        number for that fit (see "Per-event costs" below).
    decide_on
        ``"score"`` (default): threshold the score (probability or decision function).
        ``"margin"``: threshold each event's cost margin; needs probabilities
        (``predict_proba``: ``response_method`` ``"auto"`` or ``"predict_proba"``).
    cv
        Where the validation scores come from:

        * ``"prefit"``: ``estimator`` is already fitted; ``X, y`` passed to ``fit`` are the
          validation set and the estimator is used as is (``refit`` must be False, as in
          scikit-learn).
        * a float in (0, 1): one stratified holdout of that fraction (``random_state``);
          the estimator is fitted on the rest and scores the holdout.
        * an int, a CV splitter or an iterable of (train, test) index pairs: every fold's
          model scores its test part, and the out-of-fold scores of all folds are **pooled**
          into one validation multiset for THORS (an index appearing in several test parts
          counts several times). ``TunedThresholdClassifierCV`` instead averages per-fold score
          curves interpolated on a grid of ``thresholds`` points; pooling keeps the threshold an
          exact order statistic and needs scores that are comparable across folds (probabilities
          are; unnormalised margins usually are too for the same model class).
        * ``None``: 5-fold stratified cross-validation.
    response_method
        ``"auto"`` (``predict_proba`` if the estimator has it, else ``decision_function``),
        ``"predict_proba"`` or ``"decision_function"``. With ``predict_proba`` the score is the
        probability of ``pos_label``; with ``decision_function`` the margin, negated when
        ``pos_label`` is the first class.
    refit
        With a CV or holdout, refit ``estimator`` on all of ``X, y`` after choosing the threshold
        (the threshold then applies to the refitted model, as in scikit-learn). ``refit=False``
        is allowed only with a single split (float ``cv`` or a one-split splitter) and keeps the
        model fitted on its training part.
    pos_label
        The positive class (any label in ``y``). ``None``: the greater of the two labels
        (``classes_[1]``), as scikit-learn.
    class_prior
        Optional population share of ``pos_label``, to correct a validation set whose class mix
        differs from the population's (see :func:`thors_stream.thors_threshold`).
    random_state
        Seed of the holdout split when ``cv`` is a float.

    Attributes
    ----------
    estimator_
        The fitted classifier used by ``predict``.
    best_threshold_
        The THORS threshold (a validation score, or ``-inf`` = always ``pos_label``).
    result_
        The :class:`thors_stream.ThresholdResult` of the search (``result_.bounds(...)`` gives
        high-probability bounds on the true FPR/FNR/cost of the threshold).
    classes_, n_features_in_, feature_names_in_
        As the fitted estimator's.
    pos_label_
        The positive class used.
    fn_cost_, fp_cost_
        The number each cost was at fit (the constructor's), or ``None`` where that cost was
        given per event to ``fit``; in margin mode ``predict`` then needs it per event too.

    Sample weights
    --------------
    ``fit(X, y, sample_weight=w)`` uses ``w`` as THORS weights: each event's misclassification
    costs are multiplied by its weight. ``w`` is also passed to ``estimator.fit``: with metadata
    routing disabled (scikit-learn's default) whenever ``estimator.fit`` accepts
    ``sample_weight``; with ``sklearn.set_config(enable_metadata_routing=True)`` only if the
    estimator requests it (``estimator.set_fit_request(sample_weight=True)``; request ``False``
    to weight only the threshold). Other fit parameters are routed to ``estimator.fit`` (and to
    the splitter's ``split``, e.g. ``groups``) in the usual way.

    Per-event costs
    ---------------
    ``fit(X, y, fn_cost=amounts, fp_cost=fees)`` takes one cost per row (or a number); an
    array given to ``fit`` replaces the constructor's number for that cost. The costs choose the
    threshold only: they never reach ``estimator.fit`` (unless, with routing enabled, the
    estimator itself requests them). In score mode the threshold is the cut on the score that
    loses the least money on the validation events, and ``predict`` takes no costs (they would
    not change its decisions: passing them is an error). In margin mode
    ``predict(X, fn_cost=..., fp_cost=...)`` takes the new events' costs: a cost given per event
    at fit must be given at predict; one left to the constructor's number defaults to it.

    Inside a :class:`~sklearn.pipeline.Pipeline` or a model-selection tool with
    ``sklearn.set_config(enable_metadata_routing=True)``, request the costs as for any
    metadata: ``clf.set_fit_request(fn_cost=True, fp_cost=True)`` and (margin mode)
    ``clf.set_predict_request(fn_cost=True, fp_cost=True)``. Scikit-learn's scorers call
    ``predict`` without metadata; :class:`MoneyLostScorer` requests the costs and passes them
    on, so ``cross_validate(..., scoring=MoneyLostScorer(), params={"fn_cost": ..., "fp_cost":
    ...})`` fits and scores with each fold's own costs.

    Complexity: the cost of the folds' fits and predictions plus O(n log n) for THORS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (X[:, 0] + rng.normal(size=400) > 1).astype(int)
    >>> clf = ThorsThresholdClassifier(LogisticRegression(), fn_cost=10, fp_cost=1, cv=5).fit(X, y)
    >>> bool(clf.best_threshold_ < 0.5)  # missed positives cost 10x: lower threshold than 0.5
    True
    >>> clf.predict(X[:3]).tolist() == (clf.predict_proba(X[:3])[:, 1] > clf.best_threshold_).tolist()
    True

    Deciding in money: a missed positive costs its amount, a false alarm a fee of 5.

    >>> from thors_stream.margin import cost_margins
    >>> amount = rng.lognormal(3, 1, size=400)
    >>> clf = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", fp_cost=5, cv=5)
    >>> clf = clf.fit(X, y, fn_cost=amount)
    >>> p = clf.predict_proba(X[:4])[:, 1]
    >>> bool((clf.predict(X[:4], fn_cost=amount[:4])
    ...       == (cost_margins(p, amount[:4], 5.0) > clf.best_threshold_)).all())
    True
    """

    def __init__(
        self,
        estimator: Any,
        *,
        fn_cost: float = 1.0,
        fp_cost: float = 1.0,
        decide_on: str = "score",
        cv: Any = None,
        response_method: str = "auto",
        refit: bool = True,
        pos_label: Any = None,
        class_prior: float | None = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.fn_cost = fn_cost
        self.fp_cost = fp_cost
        self.decide_on = decide_on
        self.cv = cv
        self.response_method = response_method
        self.refit = refit
        self.pos_label = pos_label
        self.class_prior = class_prior
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _response_methods(self, est: Any) -> str:
        if self.response_method == "auto":
            for m in ("predict_proba", "decision_function"):
                if hasattr(est, m):
                    return m
            raise TypeError(
                f"estimator {type(est).__name__} has neither predict_proba nor decision_function"
            )
        if not hasattr(est, self.response_method):
            raise TypeError(f"estimator {type(est).__name__} has no method {self.response_method!r}")
        return self.response_method

    def _scores(self, est: Any, X: Any, pos_label: Any) -> np.ndarray:
        """1-d scores of ``pos_label`` from the fitted ``est``."""
        method = self._response_methods(est)
        classes = np.asarray(est.classes_)
        if classes.shape[0] != 2:
            raise ValueError(f"the fitted estimator has {classes.shape[0]} classes ({classes.tolist()}); need 2")
        pos_idx = int(np.flatnonzero(classes == pos_label)[0])
        out = np.asarray(getattr(est, method)(X))
        if method == "predict_proba":
            return np.asarray(out[:, pos_idx], dtype=np.float64)
        out = np.asarray(out, dtype=np.float64).ravel()
        return out if pos_idx == 1 else -out

    def _check_params(self) -> None:
        if self.response_method not in _RESPONSE_METHODS:
            raise ValueError(f"response_method must be one of {_RESPONSE_METHODS}, got {self.response_method!r}")
        if not isinstance(self.decide_on, str) or self.decide_on not in _DECIDE_ON:
            raise ValueError(f"decide_on must be 'score' or 'margin', got {self.decide_on!r}")
        if self.decide_on == "margin":
            if self.response_method == "decision_function":
                raise ValueError(
                    "decide_on='margin' decides on probabilities (the cost margin is logit(p) + log(fn/fp)): "
                    "response_method='decision_function' cannot be used; use 'predict_proba' or 'auto'"
                )
            if not hasattr(self.estimator, "predict_proba"):
                raise TypeError(
                    f"decide_on='margin' needs probabilities, but estimator {type(self.estimator).__name__} has no "
                    "predict_proba (wrap it in sklearn.calibration.CalibratedClassifierCV, or use decide_on='score')"
                )
        if not isinstance(self.refit, (bool, np.bool_)):
            raise TypeError(f"refit must be a bool, got {self.refit!r}")
        resolve_costs(self.fn_cost, self.fp_cost)
        check_class_prior(self.class_prior)
        cv = self.cv
        if isinstance(cv, str) and cv != "prefit":
            raise ValueError(f"cv must be 'prefit', an int >= 2, a float in (0, 1), a splitter or None, got {cv!r}")
        if isinstance(cv, Real) and not isinstance(cv, Integral) and not 0.0 < float(cv) < 1.0:
            raise ValueError(f"a float cv is a holdout fraction and must lie in (0, 1), got {cv!r}")
        if isinstance(cv, bool):
            raise TypeError(f"cv must not be a bool, got {cv!r}")

    def _fit_params(self, sample_weight: Any, fit_params: dict[str, Any],
                    costs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(estimator fit params, splitter split params) following scikit-learn's routing conventions.

        The per-event ``costs`` are consumed here; with routing enabled they also reach a child
        that requests them (none does unless asked), without routing they never do."""
        if sklearn.get_config().get("enable_metadata_routing", False):
            routed = process_routing(self, "fit", sample_weight=sample_weight, **costs, **fit_params)
            return dict(routed.estimator.fit), dict(routed.splitter.split)
        est_params = dict(fit_params)
        if sample_weight is not None and "sample_weight" in inspect.signature(self.estimator.fit).parameters:
            est_params["sample_weight"] = sample_weight
        return est_params, {}

    # ---------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, fn_cost: Any = None, fp_cost: Any = None,
            **fit_params: Any) -> ThorsThresholdClassifier:
        """Fit the estimator (per ``cv``) and choose the THORS threshold on validation scores.

        Parameters
        ----------
        X
            Training data, as accepted by ``estimator``.
        y
            Binary labels (two distinct values).
        sample_weight
            Optional per-event weights (finite, >= 0, not all zero): THORS weights (a zero
            weight drops the event from the threshold search) and, see the class docstring,
            ``estimator.fit`` weights.
        fn_cost, fp_cost
            Optional per-event costs: one finite value > 0 per row of ``X`` (or a number),
            replacing the constructor's number for this fit. They weigh the validation events
            (a positive its ``fn_cost``, a negative its ``fp_cost``, times ``sample_weight``)
            and, in margin mode, enter each event's margin. Fit metadata: request them with
            ``set_fit_request(fn_cost=True, fp_cost=True)`` when routing is enabled.
        **fit_params
            Routed to ``estimator.fit`` (and the splitter).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Not exactly two classes in ``y``, ``pos_label`` not in ``y``, bad costs (a per-event
            cost of the wrong length, non-finite or <= 0: the message names its position and
            value), bad ``cv``, ``refit=True`` with ``cv="prefit"``, ``refit=False`` with several
            folds, ``decide_on="margin"`` with ``response_method="decision_function"`` or a
            validation probability outside [0, 1].
        TypeError
            ``decide_on="margin"`` with an estimator that has no ``predict_proba``.

        A failed fit changes nothing: a previously fitted classifier keeps its model and threshold.
        """
        self._check_params()
        costs = resolve_costs(self.fn_cost, self.fp_cost)
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        n = y.shape[0]
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(
                f"Only binary classification is supported by ThorsThresholdClassifier; y is {y_type!r} with "
                f"labels {np.unique(y).tolist()[:10]} (use thors_stream.multiclass for several classes)"
            )
        classes = np.unique(y)
        if classes.shape[0] != 2:
            raise ValueError(
                f"y must hold 2 classes to choose a threshold, got {classes.shape[0]} class: {classes.tolist()}"
            )
        pos_label = classes[1] if self.pos_label is None else self.pos_label
        if not np.any(classes == pos_label):
            raise ValueError(f"pos_label={self.pos_label!r} is not a label of y (labels: {classes.tolist()})")
        sw = None if sample_weight is None else _check_sample_weight(sample_weight, n)
        fn = None if fn_cost is None else per_event_costs(fn_cost, n, "fn_cost")
        fp = None if fp_cost is None else per_event_costs(fp_cost, n, "fp_cost")
        given = {k: v for k, v in (("fn_cost", fn_cost), ("fp_cost", fp_cost)) if v is not None}
        est_params, split_params = self._fit_params(sw, fit_params, given)
        # Nothing is stored on self until every step has succeeded.

        if isinstance(self.cv, str):  # "prefit"
            if self.refit:
                raise ValueError("cv='prefit' uses the fitted estimator as is: set refit=False")
            try:
                check_is_fitted(self.estimator, "classes_")
            except NotFittedError as exc:
                raise NotFittedError("with cv='prefit' the estimator must already be fitted") from exc
            if not np.any(np.asarray(self.estimator.classes_) == pos_label):
                raise ValueError(
                    f"pos_label {pos_label!r} is not a class of the prefit estimator "
                    f"({np.asarray(self.estimator.classes_).tolist()})"
                )
            estimator_ = self.estimator
            val_scores = self._scores(estimator_, X, pos_label)
            val_y, val_w, val_idx = y, sw, np.arange(n)
        else:
            if isinstance(self.cv, Real) and not isinstance(self.cv, Integral):
                splitter = StratifiedShuffleSplit(n_splits=1, test_size=float(self.cv), random_state=self.random_state)
            else:
                splitter = check_cv(self.cv if self.cv is not None else 5, y=y, classifier=True)
            if not self.refit and splitter.get_n_splits(X, y, **split_params) > 1:
                raise ValueError("refit=False needs a single split (a float cv); with several folds set refit=True")
            parts_s, parts_y, parts_w, parts_i = [], [], [], []
            last_model = None
            for train, test in splitter.split(X, y, **split_params):
                model = clone(self.estimator)
                model.fit(_safe_indexing(X, train), y[train], **_subset_params(est_params, train, n))
                self._check_model_classes(model, classes)
                parts_s.append(self._scores(model, _safe_indexing(X, test), pos_label))
                parts_y.append(y[test])
                parts_i.append(np.asarray(test))
                if sw is not None:
                    parts_w.append(sw[test])
                last_model = model
            if not parts_s:
                raise ValueError(f"cv={self.cv!r} produced no split")
            val_scores = np.concatenate(parts_s)
            val_y = np.concatenate(parts_y)
            val_w = np.concatenate(parts_w) if sw is not None else None
            val_idx = np.concatenate(parts_i)
            if self.refit:
                estimator_ = clone(self.estimator).fit(X, y, **est_params)
                self._check_model_classes(estimator_, classes)
            else:
                estimator_ = last_model
        if not np.all(np.isfinite(val_scores)):
            i = int(np.flatnonzero(~np.isfinite(val_scores))[0])
            raise ValueError(f"the estimator produced a non-finite validation score {val_scores[i]!r} at position {i}")
        if val_w is not None:  # a zero weight means "not there"
            keep = val_w > 0
            val_scores, val_y, val_w, val_idx = val_scores[keep], val_y[keep], val_w[keep], val_idx[keep]
        result = thors_threshold(
            val_scores, val_y == pos_label,
            fn_cost=costs.fn_cost if fn is None else fn[val_idx],
            fp_cost=costs.fp_cost if fp is None else fp[val_idx],
            sample_weight=val_w, class_prior=self.class_prior, decide_on=self.decide_on,
        )
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self, attr):
                delattr(self, attr)
        self.estimator_, self.pos_label_, self.result_ = estimator_, pos_label, result
        self.best_threshold_ = result.threshold
        # a number given to fit replaces the constructor's for this fit (and is predict's default)
        self.fn_cost_ = costs.fn_cost if fn is None else float(fn[0]) if np.ndim(fn_cost) == 0 else None
        self.fp_cost_ = costs.fp_cost if fp is None else float(fp[0]) if np.ndim(fp_cost) == 0 else None
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        if hasattr(self.estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.estimator_.feature_names_in_
        return self

    @staticmethod
    def _check_model_classes(model: Any, classes: np.ndarray) -> None:
        got = np.asarray(getattr(model, "classes_", classes))
        if got.shape != classes.shape or not np.all(got == classes):
            raise ValueError(
                f"a fold's training part did not contain both classes {classes.tolist()} "
                f"(the model saw {got.tolist()}); use fewer folds or a stratified splitter"
            )

    # ------------------------------------------------------------------ predict
    @property
    def classes_(self) -> np.ndarray:
        """The class labels (of the fitted estimator)."""
        return np.asarray(self.estimator_.classes_)

    def _predict_costs(self, n: int, fn_cost: Any, fp_cost: Any) -> tuple[np.ndarray, np.ndarray]:
        """The ``n`` new events' costs in margin mode: given per event, or the number used at fit."""
        out = []
        for name, value, fitted in (("fn_cost", fn_cost, self.fn_cost_), ("fp_cost", fp_cost, self.fp_cost_)):
            if value is None:
                if fitted is None:
                    raise ValueError(
                        f"{name} was given per event at fit (decide_on='margin'): predict needs the new events' "
                        f"{name}, one per row of X (predict(X, {name}=...); in a Pipeline or with routing "
                        f"enabled, set_predict_request({name}=True))"
                    )
                value = fitted
            out.append(per_event_costs(value, n, name))
        return out[0], out[1]

    def _decision(self, X: Any, fn_cost: Any, fp_cost: Any) -> np.ndarray:
        """Scores, or cost margins in margin mode, of the rows of ``X`` (costs checked first when given)."""
        check_is_fitted(self, "result_")
        s = self._scores(self.estimator_, X, self.pos_label_)
        if self.result_.decide_on == "margin":
            fn, fp = self._predict_costs(s.shape[0], fn_cost, fp_cost)
            return cost_margins(s, fn, fp)
        if fn_cost is not None or fp_cost is not None:
            raise ValueError(
                "this classifier decides on its score (decide_on='score'): per-event costs at predict would not "
                "change its decisions; fit it with decide_on='margin' to decide on each event's cost margin"
            )
        return s

    def decision_scores(self, X: Any, fn_cost: Any = None, fp_cost: Any = None) -> np.ndarray:
        """The values compared with ``best_threshold_``: the scores of ``pos_label_`` or, in margin
        mode, the cost margins ``logit(p) + log(fn_cost / fp_cost)`` (costs as in :meth:`predict`).
        O(estimator) + O(n)."""
        return self._decision(X, fn_cost, fp_cost)

    def predict(self, X: Any, fn_cost: Any = None, fp_cost: Any = None) -> np.ndarray:
        """``pos_label_`` where the score (margin mode: the cost margin) exceeds ``best_threshold_``,
        the other class elsewhere. O(estimator) + O(n).

        Parameters
        ----------
        X
            The events.
        fn_cost, fp_cost
            Margin mode only: the events' costs, one per row (or a number). A cost given per
            event at fit is required; one that was a number at fit defaults to that number.
            Predict metadata: ``set_predict_request(fn_cost=True, fp_cost=True)`` when routing is
            enabled. In score mode giving them raises ``ValueError`` (they would be ignored).
        """
        d = self._decision(X, fn_cost, fp_cost)
        classes = np.asarray(self.classes_)
        neg_label = classes[classes != self.pos_label_][0]
        pos = d > self.best_threshold_
        return np.asarray(np.where(pos, self.pos_label_, neg_label).astype(classes.dtype, copy=False))

    def score(self, X: Any, y: Any, sample_weight: Any = None, *, fn_cost: Any = None, fp_cost: Any = None) -> float:
        """Accuracy of :meth:`predict` (with the events' costs in margin mode) on ``X, y``; for the
        money lost use :class:`MoneyLostScorer`. O(estimator) + O(n)."""
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X, fn_cost=fn_cost, fp_cost=fp_cost), sample_weight=sample_weight))

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """The fitted estimator's ``predict_proba`` (not changed by the threshold)."""
        check_is_fitted(self, "result_")
        return np.asarray(self.estimator_.predict_proba(X))

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """The fitted estimator's ``predict_log_proba`` (not changed by the threshold)."""
        check_is_fitted(self, "result_")
        return np.asarray(self.estimator_.predict_log_proba(X))

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """The fitted estimator's ``decision_function`` (not changed by the threshold)."""
        check_is_fitted(self, "result_")
        return np.asarray(self.estimator_.decision_function(X))

    # -------------------------------------------------------------- sklearn API
    def get_metadata_routing(self) -> MetadataRouter:
        """Routing: ``sample_weight`` consumed here (THORS), fit params to ``estimator.fit``, split params to cv."""
        router = MetadataRouter(owner=self).add_self_request(self).add(
            estimator=self.estimator, method_mapping=MethodMapping().add(caller="fit", callee="fit")
        )
        splitter = self.cv if hasattr(self.cv, "split") else check_cv(5)
        router.add(splitter=splitter, method_mapping=MethodMapping().add(caller="fit", callee="split"))
        return router

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags


def _final_step(estimator: Any) -> Any:
    """The last step of a (possibly nested) Pipeline, or ``estimator`` itself."""
    while hasattr(estimator, "steps"):
        estimator = estimator.steps[-1][1]
    return estimator


class MoneyLostScorer:
    """A scikit-learn scorer: minus the money an estimator's predictions lose, event by event.

    ``scorer(estimator, X, y, fn_cost=..., fp_cost=...)`` predicts ``X`` and returns
    ``-(sum of fn_cost_i over missed positives + sum of fp_cost_i over false alarms)`` (greater
    is better, as for every scikit-learn scorer). Each cost is one value per row of ``X`` or a
    number; a cost not given when called is the scorer's own number (``fn_cost``, ``fp_cost``).

    With ``sklearn.set_config(enable_metadata_routing=True)`` the scorer requests ``fn_cost``
    and ``fp_cost`` for ``score``, so ``cross_validate(..., scoring=MoneyLostScorer(),
    params={"fn_cost": amounts, "fp_cost": fees})`` hands it each test fold's costs (scikit-learn's
    own scorers call ``predict`` without metadata). With routing disabled it uses its numbers.

    Complexity: the estimator's ``predict`` plus O(n).

    Parameters
    ----------
    fn_cost, fp_cost
        The costs used when none are passed (numbers, finite and > 0).
    pass_costs
        Whether the costs are also passed to ``estimator.predict``: ``"auto"`` (default) passes
        them iff the estimator (or a Pipeline's last step) is a :class:`ThorsThresholdClassifier`
        fitted with ``decide_on="margin"``; ``True``/``False`` force it.
    pos_label
        The positive class; ``None``: the final estimator's ``pos_label_`` if it has one, else the
        greater of its ``classes_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    >>> amount = rng.lognormal(3, 1, size=300)
    >>> clf = ThorsThresholdClassifier(LogisticRegression(), decide_on="margin", fp_cost=5, cv=3)
    >>> clf = clf.fit(X, y, fn_cost=amount)
    >>> pred = clf.predict(X, fn_cost=amount)
    >>> lost = amount[(y == 1) & (pred == 0)].sum() + 5.0 * ((y == 0) & (pred == 1)).sum()
    >>> bool(MoneyLostScorer(fp_cost=5)(clf, X, y, fn_cost=amount) == -lost)
    True
    """

    def __init__(self, fn_cost: float = 1.0, fp_cost: float = 1.0, *, pass_costs: Any = "auto",
                 pos_label: Any = None) -> None:
        resolve_costs(fn_cost, fp_cost)
        if pass_costs not in ("auto", True, False):
            raise ValueError(f"pass_costs must be 'auto', True or False, got {pass_costs!r}")
        self.fn_cost = fn_cost
        self.fp_cost = fp_cost
        self.pass_costs = pass_costs
        self.pos_label = pos_label

    def __repr__(self) -> str:
        return f"MoneyLostScorer(fn_cost={self.fn_cost!r}, fp_cost={self.fp_cost!r}, pass_costs={self.pass_costs!r})"

    def get_metadata_routing(self) -> MetadataRequest:
        """Requests ``fn_cost`` and ``fp_cost`` for ``score`` (the call of the scorer)."""
        request = MetadataRequest(owner=self)
        request.score.add_request(param="fn_cost", alias=True)
        request.score.add_request(param="fp_cost", alias=True)
        return request

    def __call__(self, estimator: Any, X: Any, y: Any, fn_cost: Any = None, fp_cost: Any = None) -> float:
        """Minus the money lost by ``estimator.predict`` on ``X`` against the labels ``y``."""
        y = column_or_1d(y)
        n = y.shape[0]
        fn = per_event_costs(self.fn_cost if fn_cost is None else fn_cost, n, "fn_cost")
        fp = per_event_costs(self.fp_cost if fp_cost is None else fp_cost, n, "fp_cost")
        final = _final_step(estimator)
        pass_costs = self.pass_costs
        if pass_costs == "auto":
            result = getattr(final, "result_", None)
            pass_costs = isinstance(final, ThorsThresholdClassifier) and getattr(result, "decide_on", "") == "margin"
        pred = np.asarray(estimator.predict(X, fn_cost=fn, fp_cost=fp) if pass_costs else estimator.predict(X))
        pos_label = self.pos_label
        if pos_label is None:
            pos_label = getattr(final, "pos_label_", None)
        if pos_label is None:
            pos_label = np.asarray(final.classes_)[-1]
        positive = y == pos_label
        flagged = pred == pos_label
        return -float(fn[positive & ~flagged].sum() + fp[~positive & flagged].sum())
