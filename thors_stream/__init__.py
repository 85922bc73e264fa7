"""thors_stream: exact, online cost-sensitive thresholds for any scoring classifier.

THORS (Tian & Zhang) picks the decision threshold of a scorer as the order statistic
of labelled validation scores that minimises the total misclassification cost.
This package computes it exactly for arrays (:func:`thors_threshold`) and keeps it
up to date as labelled events arrive and expire (:class:`StreamingThors`).
"""

from .batch import class_coefficients, cost_curve, thors_threshold
from .costs import Costs, resolve_costs
from .result import ThresholdResult
from .stream import StreamingThors

__all__ = [
    "CostInterval",
    "Costs",
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
__version__ = "0.1.0"


# Imported on first use: river takes about a second to import, scipy (the bounds) a few tenths.
_LAZY = {
    "ThorsClassifier": (".river", "ThorsClassifier"),
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
