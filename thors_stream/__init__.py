"""thors_stream: exact, online cost-sensitive thresholds for any scoring classifier.

THORS (Tian & Zhang) picks the decision threshold of a scorer as the order statistic
of labelled validation scores that minimises the total misclassification cost.
This package computes it exactly for arrays (:func:`thors_threshold`) and keeps it
up to date as labelled events arrive and expire (:class:`StreamingThors`).

**How it is built.** Data flows one way: scores -> per-score rows (one representation,
:mod:`thors_stream.rows`: built from arrays by batch and Dask, exported by the stream's
tree) -> a selection on the rows (cost argmin, Neyman-Pearson) -> a
:class:`ThresholdResult` -> bounds. The modules form layers, and a module imports only from
its own layer or below (``tests/test_architecture.py`` checks it, and that no module imports
one that imports it back), lowest first:

1. foundations: validation, costs, version (``_validation``, ``costs`` with
   ``class_coefficients``, the cost margin ``margin``, ``_version``);
2. rows and containers (``rows``, the expiry queue, the numpy prefix structure with its
   blocks and batch part, the weight ledger, checkpoint files, atomic file replacement, typed keys);
3. the tree (compiled or numpy) (``_core``, ``_backend``, the C extension ``_ctree``, whose
   units under ``_ctree_src/`` share one internal header);
4. bounds (``_band``, ``bounds``, ``planner``);
5. the result of a selection (``result``, ``plotting``);
6. selection on rows (``neyman_pearson``);
7. arrays and streams (``batch``; ``stream`` with its parts: the lock, the declared state, windows and late labels,
   the Neyman-Pearson read path, checkpoints and merging);
8. built on them (``selection``, ``segments``, ``event_costs``, ``multiclass``, ``release``,
   ``metrics``, ``margin_stream``, ``store``: pending decisions and state on disk, with its
   SQLite file, ``PendingStore`` and ``DecisionLoop`` parts);
9. integrations and entry points (``river`` with its parts: pending decisions, per-event
   costs, checkpoints; ``sklearn``, ``dask``, ``io``, ``cli`` with one module per command
   (``cli_fit``, ``cli_baseline``, ``cli_replay``, ``cli_monitor``, ``cli_serve``) and what they
   share (``cli_common``); ``demo``, ``money``: progressive evaluation in money, ``service``:
   the HTTP threshold service).
"""

from ._version import __version__ as __version__
from .batch import cost_curve, thors_threshold
from .costs import Costs, class_coefficients, resolve_costs
from .result import ThresholdResult
from .stream import StreamingThors

__all__ = [
    "CostInterval",
    "Costs",
    "MarginThors",
    "NPInfeasibleError",
    "StreamingThors",
    "ThorsClassifier",
    "ThorsThresholdClassifier",
    "ThresholdBounds",
    "ThresholdResult",
    "class_coefficients",
    "cost_curve",
    "metrics",
    "min_class_size",
    "multiclass",
    "required_validation_size",
    "resolve_costs",
    "thors_threshold",
    "threshold_bounds",
]


# Imported on first use: river takes about a second to import, scipy (the bounds) a few tenths.
_LAZY = {
    "ThorsClassifier": (".river", "ThorsClassifier"),
    "MarginThors": (".margin_stream", "MarginThors"),
    "metrics": (".metrics", None),
    "CostInterval": (".bounds", "CostInterval"),
    "ThresholdBounds": (".bounds", "ThresholdBounds"),
    "threshold_bounds": (".bounds", "threshold_bounds"),
    "required_validation_size": (".planner", "required_validation_size"),
    "NPInfeasibleError": (".neyman_pearson", "NPInfeasibleError"),
    "min_class_size": (".neyman_pearson", "min_class_size"),
    "ThorsThresholdClassifier": (".sklearn", "ThorsThresholdClassifier"),
    "multiclass": (".multiclass", None),
}


def __getattr__(name: str) -> object:
    """Import the river and scikit-learn integrations, the bounds and the rest lazily."""
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name, __name__)
    return module if attr is None else getattr(module, attr)
