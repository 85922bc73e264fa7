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
    "Costs",
    "StreamingThors",
    "ThresholdResult",
    "class_coefficients",
    "cost_curve",
    "resolve_costs",
    "thors_threshold",
]
__version__ = "0.1.0"
