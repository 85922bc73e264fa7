"""Input checks shared by the batch and streaming entry points.

Every check raises before any state is touched, with a message naming the bad value
(and, for arrays, its first position). One rule everywhere (scalars and arrays, batch
and stream):

- scores, weights, costs and times are real numbers: Python/numpy ints and floats,
  ``Fraction``/``Decimal``; strings and bytes (even numeric ones like ``"0.5"``), bools and
  ``None`` are refused with ``TypeError``;
- values that are not finite, or too large for float64 (``10**400``), raise ``ValueError``
  (never ``OverflowError``);
- weights and costs are at most :data:`MAX_WEIGHTED_COST` (2**960), and so is every
  event's ``weight * max(fn_cost, fp_cost)``: then sums over up to 2**60 events stay
  finite, and no cost is ever ``inf`` or ``nan``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MAX_WEIGHTED_COST = 2.0**960
"""The largest weight, cost, and weight * cost accepted (sums of up to 2**60 such stay finite)."""

__all__ = [
    "MAX_WEIGHTED_COST",
    "check_class_prior",
    "check_label",
    "check_labels",
    "check_score",
    "check_scores",
    "check_weight",
    "check_weighted_costs",
    "check_weights",
]


_NOT_REAL = (bool, np.bool_, str, bytes, bytearray, np.str_, np.bytes_)


def real_number(value: Any, name: str) -> float:
    """``value`` as a finite float: ``TypeError`` for a non-number (strings and bytes
    included), ``ValueError`` for a non-finite one or one too large for float64.

    >>> real_number(3, "cost"), real_number(10**400, "cost")
    Traceback (most recent call last):
    ...
    ValueError: cost must be finite (a float64), got a number too large: 1000000000...0 (401 digits)
    """
    if isinstance(value, _NOT_REAL) or value is None:
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    except OverflowError:
        raise ValueError(f"{name} must be finite (a float64), got a number too large: {_short(value)}") from None
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return f


def _short(value: Any) -> str:
    """A huge number's repr, shortened (10**400 has 401 digits)."""
    text = str(value)
    return text if len(text) <= 40 else f"{text[:10]}...{text[-1:]} ({len(text)} digits)"


def check_score(score: Any) -> float:
    """Return ``score`` as a finite float or raise ``TypeError``/``ValueError``."""
    return real_number(score, "score")


def check_label(y: Any) -> int:
    """Return ``y`` as 0 or 1; only bools and the numbers 0 and 1 are labels."""
    if y is True or y is False:
        return int(y)
    if isinstance(y, (int, float, np.integer, np.floating, np.bool_)) and (y == 0 or y == 1):
        return int(y)
    raise ValueError(f"label must be 0, 1, False or True, got {y!r}")


def check_weight(w: Any) -> float:
    """Return ``w`` as a finite float in ``(0, MAX_WEIGHTED_COST]``."""
    f = real_number(w, "weight")
    if not f > 0.0:
        raise ValueError(f"weight must be finite and > 0, got {w!r}")
    if f > MAX_WEIGHTED_COST:
        raise ValueError(f"weight must be at most 2**960, got {w!r}")
    return f


def check_weighted_costs(w: Any, fn_cost: float, fp_cost: float, name: str = "weight") -> None:
    """Refuse weights whose product with the larger cost exceeds :data:`MAX_WEIGHTED_COST`
    (``w``: a float or an array of valid weights). O(m).

    >>> check_weighted_costs([1.0, 2.0], 1e300, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: weight 2.0 times the cost 1e+300 exceeds 2**960: the total cost would not be finite
    """
    top = float(np.max(w)) if np.ndim(w) and np.size(w) else (float(w) if not np.ndim(w) else 0.0)
    cost = max(fn_cost, fp_cost)
    if top * cost > MAX_WEIGHTED_COST:
        raise ValueError(f"{name} {top!r} times the cost {cost!r} exceeds 2**960: the total cost would not be finite")


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


def _real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as float64, with the scalar rule: strings, bytes and bools refused
    (``TypeError``), numbers too large for float64 ``ValueError``."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        return values.astype(np.float64, copy=False)
    if isinstance(values, (list, tuple)):  # numpy would turn "0.5" or True into a float
        for i, v in enumerate(values):
            if isinstance(v, _NOT_REAL) or v is None:
                raise TypeError(f"{name} must be an array of real numbers, got {v!r} at position {i}")
    raw = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if raw.dtype.kind in "USVb" or (raw.dtype.kind == "O" and raw.ndim == 1):
        flat = raw.ravel().tolist() if raw.dtype.kind == "O" else [raw.ravel()[0]] if raw.size else []
        for i, v in enumerate(flat):
            if isinstance(v, _NOT_REAL) or v is None:
                raise TypeError(f"{name} must be an array of real numbers, got {v!r} at position {i}")
        if raw.dtype.kind in "USVb" and raw.size:
            raise TypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    except OverflowError:
        raise ValueError(f"{name} must be finite (float64): a value is too large") from None


def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """Return a 1-d float64 array of finite scores."""
    arr = _real_array(scores, name)
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
    arr = _real_array(w, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but scores have length {n}")
    bad = ~((arr > 0) & np.isfinite(arr))
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"{name} must be finite and > 0, got {arr[i].item()!r} at position {i}")
    big = arr > MAX_WEIGHTED_COST
    if big.any():
        i = _first_bad(big)
        raise ValueError(f"{name} must be at most 2**960, got {arr[i].item()!r} at position {i}")
    return arr
