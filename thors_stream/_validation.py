"""Input checks shared by the batch and streaming entry points.

Every check raises before any state is touched, with a message naming the bad value
(and, for arrays, its first position).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "check_class_prior",
    "check_label",
    "check_labels",
    "check_score",
    "check_scores",
    "check_weight",
    "check_weights",
]


def check_score(score: Any) -> float:
    """Return ``score`` as a finite float or raise ``TypeError``/``ValueError``."""
    if isinstance(score, (bool, str, bytes)) or score is None:
        raise TypeError(f"score must be a real number, got {score!r}")
    try:
        s = float(score)
    except (TypeError, ValueError):
        raise TypeError(f"score must be a real number, got {score!r}") from None
    if not math.isfinite(s):
        raise ValueError(f"score must be finite, got {s!r}")
    return s


def check_label(y: Any) -> int:
    """Return ``y`` as 0 or 1; only bools and the numbers 0 and 1 are labels."""
    if y is True or y is False:
        return int(y)
    if isinstance(y, (int, float, np.integer, np.floating, np.bool_)) and (y == 0 or y == 1):
        return int(y)
    raise ValueError(f"label must be 0, 1, False or True, got {y!r}")


def check_weight(w: Any) -> float:
    """Return ``w`` as a finite float > 0."""
    if isinstance(w, (bool, str, bytes)) or w is None:
        raise TypeError(f"weight must be a real number, got {w!r}")
    try:
        f = float(w)
    except (TypeError, ValueError):
        raise TypeError(f"weight must be a real number, got {w!r}") from None
    if not (f > 0 and math.isfinite(f)):
        raise ValueError(f"weight must be finite and > 0, got {w!r}")
    return f


def check_open_unit(value: Any, name: str, optional: bool = False) -> float | None:
    """Return ``value`` as a float strictly inside (0, 1) (``None`` passes when ``optional``),
    else raise ``ValueError`` naming ``name`` and the value (confidences, error-rate caps)."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, str, bytes)) or value is None:
        f = math.nan
    else:
        try:
            f = float(value)
        except (TypeError, ValueError):
            f = math.nan
    if math.isnan(f):
        raise ValueError(f"{name} must be a number strictly between 0 and 1{' or None' if optional else ''}, "
                         f"got {value!r}")
    if not 0.0 < f < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return f


def check_class_prior(class_prior: Any) -> float | None:
    """Validate a population prior of the positive class, strictly inside (0, 1)."""
    if class_prior is None:
        return None
    try:
        p = float(class_prior)
    except (TypeError, ValueError):
        raise TypeError(f"class_prior must be a number in (0, 1), got {class_prior!r}") from None
    if not 0.0 < p < 1.0:
        raise ValueError(f"class_prior must be strictly between 0 and 1, got {class_prior!r}")
    return p


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """Return a 1-d float64 array of finite scores."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not finite.all():
        i = _first_bad(~finite)
        raise ValueError(f"{name} must be finite, got {arr[i].item()!r} at position {i}")
    return arr


def check_labels(y: Any, n: int, name: str = "y") -> np.ndarray:
    """Return labels as a bool array of length ``n``; only 0/1/False/True allowed."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but scores have length {n}")
    if arr.dtype == np.bool_:
        return arr
    if arr.dtype.kind in "iuf":
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(f"{name} must hold only 0/1/False/True, got {arr[i].item()!r} at position {i}")
        return arr == 1
    if arr.dtype == object:
        out = np.empty(n, dtype=np.bool_)
        for i, v in enumerate(arr):
            try:
                out[i] = check_label(v)
            except ValueError:
                raise ValueError(f"{name} must hold only 0/1/False/True, got {v!r} at position {i}") from None
        return out
    first = arr[0] if n else None
    raise ValueError(f"{name} must hold only 0/1/False/True, got dtype {arr.dtype} (first value {first!r})")


def check_weights(w: Any, n: int, name: str = "sample_weight") -> np.ndarray | None:
    """Return weights as a float64 array of length ``n`` (finite, > 0), or ``None``."""
    if w is None:
        return None
    try:
        arr = np.asarray(w, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but scores have length {n}")
    bad = ~((arr > 0) & np.isfinite(arr))
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"{name} must be finite and > 0, got {arr[i].item()!r} at position {i}")
    return arr
