"""Input checks shared by the batch and streaming entry points.

Every check raises before any state is touched, with a message naming the parameter
and the bad value (and, for arrays, its first bad position). One rule everywhere:
scalars and arrays, batch and stream, :func:`check_score` and :func:`check_scores`
alike.

**Numbers** (scores, weights, costs, cost-matrix entries, ``class_prior``, times):

- a *real number* is a Python ``int`` or ``float``, a ``Fraction``, a ``Decimal``, a numpy
  integer or floating scalar of any width (``float16`` ... ``longdouble``, ``uint64``), a
  0-d numpy array of those, or an array whose dtype is one of those (or an ``object``
  array / list / tuple of such values);
- anything else is a ``TypeError``: strings and bytes, *even numeric ones* such as
  ``"0.5"`` or ``b"1"`` (and arrays of them), ``bool``/``numpy.bool_`` (and bool arrays),
  ``None``, complex numbers, dates and time deltas (except as times, below);
- a real number that is not finite (``nan``, ``inf``), or too large for float64
  (``10**400``, ``Fraction(10**400, 3)``, ``Decimal("1e400")``), is a ``ValueError``
  naming it, never an ``OverflowError``; so is one outside its range (weights and costs
  ``> 0``, ``class_prior`` inside ``(0, 1)``).

**Labels** are categories, not numbers: ``False``/``True`` or a real number equal to 0 or
1 (``1.0``, ``numpy.int8(1)``, ``Fraction(1)``). Anything else, ``"1"`` and ``b"1"``
included, is a ``ValueError`` (as :meth:`StreamingThors.update` has always done).

Parameters inside ``(0, 1)`` other than ``class_prior`` (``confidence``, ``max_fpr``,
``max_fnr``: :func:`check_open_unit`) raise ``ValueError`` for any bad value, as they always
have (a huge number included, never ``OverflowError``).

**Times** (:func:`check_time`, :func:`check_times`): real numbers (seconds), ``datetime``
(its POSIX timestamp; a naive one is read as UTC, so nothing depends on ``TZ``),
``timedelta`` (its seconds), ``numpy.datetime64`` (naive, read as UTC) and
``numpy.timedelta64`` scalars and arrays. Strings and bytes are a ``TypeError``; ``NaT``,
non-finite or too-large values a ``ValueError``.

**Magnitudes**: weights and costs are at most :data:`MAX_WEIGHTED_COST` (2**960), and so
is every event's ``weight * max(fn_cost, fp_cost)`` (:func:`check_weighted_cost`,
:func:`check_weighted_costs`). A sum of up to 2**60 such products stays below 2**1020,
so no total cost is ``inf`` or ``nan``. At the other end, costs and every event's
``weight * min(fn_cost, fp_cost)`` are at least :data:`MIN_WEIGHTED_COST` (2**-960): a
product below the smallest normal float (2**-1022) keeps only the bits above 2**-1074,
and with costs near 5e-324 the threshold picked was up to 29% costlier than the optimum.
A weight alone may be subnormal when the costs lift the products above the limit. The
``class_prior`` rescaling (:func:`~thors_stream.class_coefficients`) refuses, with a
``ValueError``, class totals it cannot turn into finite positive per-unit costs.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

MAX_WEIGHTED_COST = 2.0**960
"""The largest weight, cost, and weight * cost accepted (sums of up to 2**60 such stay finite)."""
MIN_WEIGHTED_COST = 2.0**-960
"""The smallest cost and weight * cost accepted (such products are normal floats, with full precision)."""
MAX_WINDOW = 2**62
"""The largest count window (the compiled core's ring indices are signed 64-bit)."""
MAX_UPDATES = 2**63 - 1
"""The largest ``n_updates`` (the compiled core keeps it in an int64; the count saturates there)."""

__all__ = [
    "MAX_UPDATES",
    "MAX_WEIGHTED_COST",
    "MAX_WINDOW",
    "check_class_prior",
    "check_label",
    "check_labels",
    "check_n_updates",
    "check_score",
    "check_scores",
    "check_time",
    "check_times",
    "check_weight",
    "check_weighted_cost",
    "check_weighted_costs",
    "check_weights",
    "real_number",
]

# ---------------------------------------------------------------- what a number is
_REFUSED, _REAL, _OTHER = 0, 1, 2
_REFUSED_TYPES = (bool, np.bool_, str, bytes, bytearray, memoryview, complex, np.complexfloating,
                  np.datetime64, np.timedelta64, dt.date, dt.time, dt.timedelta)
_KIND: dict[type, int] = {float: _REAL, int: _REAL, Fraction: _REAL, Decimal: _REAL, type(None): _REFUSED}
# list/tuple elements numpy converts to float64 exactly as float() would (the fast path)
_FAST_TYPES = frozenset({float, int, np.float64, np.float32, np.float16, np.int64, np.int32, np.int16,
                         np.int8, np.uint64, np.uint32, np.uint16, np.uint8})


def _kind(cls: type) -> int:
    """Whether values of ``cls`` are real numbers (cached per class)."""
    k = _KIND.get(cls)
    if k is None:
        if issubclass(cls, _REFUSED_TYPES):  # bool before int: bool is an int
            k = _REFUSED
        elif issubclass(cls, (numbers.Real, Decimal)):  # int, float, Fraction, numpy ints and floats
            k = _REAL
        else:  # unknown: a 0-d array, or a foreign type float() may accept
            k = _OTHER
        if len(_KIND) < 1024:
            _KIND[cls] = k
    return k


def _show(value: Any) -> str:
    """``repr(value)``, shortened when huge (10**400 has 401 digits; strings may be long)."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        return text if len(text) <= 40 else f"{text[:10]}...{text[-1:]} ({len(text.lstrip('-'))} digits)"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-10:]} ({len(text)} characters)"


def real_number(value: Any, name: str, where: str = "") -> float:
    """``value`` as a finite float (see the module rule): ``TypeError`` for a non-number
    (strings, bytes, bools included), ``ValueError`` for a non-finite one or one too large
    for float64. ``where`` is appended to messages (e.g. ``" at position 3"``).

    >>> real_number(3, "cost"), real_number(0.5, "cost")
    (3.0, 0.5)
    >>> real_number(10**400, "cost")
    Traceback (most recent call last):
    ...
    ValueError: cost must be finite (a float64), got 1000000000...0 (401 digits) (too large for float64)
    >>> real_number("0.5", "cost")
    Traceback (most recent call last):
    ...
    TypeError: cost must be a real number, got '0.5'
    """
    cls = value.__class__
    if cls is float:
        if value - value == 0.0:
            return value  # type: ignore[no-any-return]
        raise ValueError(f"{name} must be finite, got {value!r}{where}")
    k = _KIND.get(cls)
    if k is None:
        k = _kind(cls)
    if k == _REFUSED:
        raise TypeError(f"{name} must be a real number, got {_show(value)}{where}")
    if k == _OTHER and isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be a real number, got {_show(value)}{where}")
        value = value[()]
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite (a float64), got {_show(value)} (too large for float64){where}") \
            from None
    except (TypeError, ValueError):
        if k == _REAL:  # Decimal("sNaN")
            raise ValueError(f"{name} must be finite, got {_show(value)}{where}") from None
        raise TypeError(f"{name} must be a real number, got {_show(value)}{where}") from None
    if f - f == 0.0:
        return f
    if _finite_in_own_type(value):  # Decimal("1e400"), np.longdouble(1e400)
        raise ValueError(f"{name} must be finite (a float64), got {_show(value)} (too large for float64){where}")
    raise ValueError(f"{name} must be finite, got {_show(value)}{where}")


def _finite_in_own_type(value: Any) -> bool:
    if isinstance(value, Decimal):
        return value.is_finite()
    if isinstance(value, np.floating):
        return bool(np.isfinite(value))
    return False


def check_score(score: Any) -> float:
    """Return ``score`` as a finite float or raise ``TypeError``/``ValueError``. Per event: fast
    for floats.

    >>> check_score(np.float32(0.5)), check_score(1)
    (0.5, 1.0)
    """
    if score.__class__ is float and score - score == 0.0:
        return score
    return real_number(score, "score")


_LABEL_OF: dict[Any, int] = {0: 0, 1: 1}
_LABEL_FAST = frozenset({bool, int, float, np.bool_, np.int64, np.float64})


def check_label(y: Any) -> int:
    """Return ``y`` as 0 or 1: ``False``/``True`` or a real number equal to 0 or 1; anything
    else (``"1"``, ``b"1"``, ``2``, ``nan``, ``None``) is a ``ValueError``. Per event.

    >>> check_label(True), check_label(np.int8(0)), check_label(1.0)
    (1, 0, 1)
    """
    try:
        v = _LABEL_OF.get(y)  # 1, 1.0, True, np.int8(1), Fraction(1), Decimal(1) all hash as 1
    except TypeError:  # unhashable
        v = None
    if v is not None:
        cls = y.__class__
        if cls in _LABEL_FAST or issubclass(cls, np.bool_) or _kind(cls) == _REAL:
            return v
    raise ValueError(f"label must be 0, 1, False or True, got {_show(y)}")


def check_weight(w: Any) -> float:
    """Return ``w`` as a finite float in ``(0, MAX_WEIGHTED_COST]`` (subnormals allowed). Per
    event: fast for floats.

    >>> check_weight(2), check_weight(5e-324)
    (2.0, 5e-324)
    """
    f = w if (w.__class__ is float and w - w == 0.0) else real_number(w, "weight")
    if 0.0 < f <= MAX_WEIGHTED_COST:
        return f
    if f > 0.0:
        raise ValueError(f"weight must be at most 2**960 (MAX_WEIGHTED_COST), got {_show(w)}")
    raise ValueError(f"weight must be finite and > 0, got {_show(w)}")


def check_weighted_cost(w: float, fn_cost: float, fp_cost: float, name: str = "weight") -> float:
    """Return ``w`` if ``w * max(fn_cost, fp_cost) <= MAX_WEIGHTED_COST`` and
    ``w * min(fn_cost, fp_cost) >= MIN_WEIGHTED_COST``, else raise ``ValueError`` naming
    it. ``w`` and the costs already valid floats. Per event: two multiplications.

    >>> check_weighted_cost(2.0**900, 2.0**60, 1.0)
    8.452712498170644e+270
    >>> check_weighted_cost(2.0**900, 2.0**61, 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: weight 8.452712498170644e+270 times the cost 2.305843009213694e+18 exceeds 2**960 ...
    >>> check_weighted_cost(1e-300, 1.0, 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: weight 1e-300 times the cost 1.0 is below 2**-960 ...
    """
    cost = fn_cost if fn_cost > fp_cost else fp_cost
    low = fp_cost if fn_cost > fp_cost else fn_cost
    if w * cost <= MAX_WEIGHTED_COST and w * low >= MIN_WEIGHTED_COST:
        return w
    raise _product_error(name, w, low if w * low < MIN_WEIGHTED_COST else cost, "")


def weight_range(fn_cost: float, fp_cost: float) -> tuple[float, float]:
    """``(wmin, wmax)``: the weights :func:`check_weighted_cost` accepts for these (valid)
    costs lie within them, up to the rounding of the two divisions, so a weight inside
    needs no further check on a per-event fast path and one outside is checked exactly.

    >>> weight_range(4.0, 1.0) == (2.0**-960, 2.0**958)
    True
    """
    return MIN_WEIGHTED_COST / min(fn_cost, fp_cost), MAX_WEIGHTED_COST / max(fn_cost, fp_cost)


def _product_error(name: str, w: float, cost: float, where: str) -> ValueError:
    """The error for a weight ``w`` (``where``: e.g. `` at position 3``) whose product with
    ``cost`` leaves [MIN_WEIGHTED_COST, MAX_WEIGHTED_COST] (below when ``w * cost`` is small)."""
    if w * cost < MIN_WEIGHTED_COST:
        return ValueError(f"{name} {w!r}{where} times the cost {cost!r} is below 2**-960 (MIN_WEIGHTED_COST): the "
                          "product would lose its precision; express the weights or costs in smaller units")
    return ValueError(f"{name} {w!r}{where} times the cost {cost!r} exceeds 2**960 (MAX_WEIGHTED_COST): "
                      "the total cost would not be finite")


def check_weighted_costs(w: Any, fn_cost: float, fp_cost: float, name: str = "weight") -> None:
    """Refuse weights whose product with the larger cost exceeds :data:`MAX_WEIGHTED_COST`
    or whose product with the smaller cost is below :data:`MIN_WEIGHTED_COST` (``w``: a
    valid float or a float64 array of valid weights, as :func:`check_weights` returns).
    The same test as :func:`check_weighted_cost` on each element. O(m).

    >>> check_weighted_costs(np.array([1.0, 1e20]), 1e280, 1.0, "ws")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ws 1e+20 at position 1 times the cost 1e+280 exceeds 2**960 ...
    """
    if w.__class__ is float:
        check_weighted_cost(w, fn_cost, fp_cost, name)
        return
    cost = fn_cost if fn_cost > fp_cost else fp_cost
    if not np.ndim(w):
        check_weighted_cost(float(w), fn_cost, fp_cost, name)
        return
    arr = np.asarray(w, dtype=np.float64)
    if arr.size == 0:
        return
    low = fp_cost if fn_cost > fp_cost else fn_cost
    if float(arr.min()) * low < MIN_WEIGHTED_COST:
        i = int(np.flatnonzero(arr * low < MIN_WEIGHTED_COST)[0])
        raise _product_error(name, arr.flat[i].item(), low, f" at position {i}")
    if float(arr.max()) * cost <= MAX_WEIGHTED_COST:
        return
    with np.errstate(over="ignore"):
        i = int(np.flatnonzero(arr * cost > MAX_WEIGHTED_COST)[0])
    raise _product_error(name, arr.flat[i].item(), cost, f" at position {i}")


def check_n_updates(value: Any) -> int:
    """``value`` as an update count: an int in ``0..MAX_UPDATES`` (bools refused).

    >>> check_n_updates(12)
    12
    >>> check_n_updates(2**63)
    Traceback (most recent call last):
    ...
    ValueError: n_updates must be an integer in 0..2**63 - 1, got 9223372036854775808
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or \
            not 0 <= int(value) <= MAX_UPDATES:
        raise ValueError(f"n_updates must be an integer in 0..2**63 - 1, got {_show(value)}")
    return int(value)


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
        except (TypeError, ValueError, OverflowError):
            f = math.nan
    if math.isnan(f):
        raise ValueError(f"{name} must be a number strictly between 0 and 1{' or None' if optional else ''}, "
                         f"got {_show(value)}")
    if not 0.0 < f < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {_show(value)}")
    return f


def check_class_prior(class_prior: Any) -> float | None:
    """Validate a population prior of the positive class, strictly inside (0, 1): a real
    number (``TypeError`` otherwise, ``"0.5"`` and ``True`` included); ``ValueError`` outside.

    >>> check_class_prior(None), check_class_prior(0.25)
    (None, 0.25)
    """
    if class_prior is None:
        return None
    p = real_number(class_prior, "class_prior")
    if not 0.0 < p < 1.0:
        raise ValueError(f"class_prior must be strictly between 0 and 1, got {_show(class_prior)}")
    return p


# ---------------------------------------------------------------- times
_DT_UNIT_SECONDS = {"W": (604800, 1), "D": (86400, 1), "h": (3600, 1), "m": (60, 1), "s": (1, 1),
                    "ms": (1, 10**3), "us": (1, 10**6), "ns": (1, 10**9), "ps": (1, 10**12),
                    "fs": (1, 10**15), "as": (1, 10**18)}
_UTC = dt.timezone.utc


def _np_time_seconds(arr: np.ndarray, name: str, scalar: bool = False) -> np.ndarray:
    """A ``datetime64`` (naive, read as UTC) or ``timedelta64`` array as float seconds
    (since the epoch for dates). ``NaT`` and month/year units out of range: ``ValueError``."""
    nat = np.isnat(arr)
    if nat.any():
        if scalar:
            raise ValueError(f"{name} must be a time, got {arr[0]!r}")
        i = int(np.flatnonzero(nat.ravel())[0])
        raise ValueError(f"{name} must be times, got NaT at position {i}")
    unit, count = np.datetime_data(arr.dtype)
    if unit in ("Y", "M"):
        if arr.dtype.kind == "m":
            raise ValueError(f"{name}: a timedelta in {unit!r} units has no fixed length in seconds")
        raw = arr.view(np.int64)
        if raw.size and int(np.abs(raw).max()) * count > 10**12:
            raise ValueError(f"{name} must be a date within 10**12 years, got {arr.ravel()[0]!r}")
        arr, (unit, count) = arr.astype("datetime64[D]"), ("D", 1)
    if unit not in _DT_UNIT_SECONDS:
        raise ValueError(f"{name} has a time unit without seconds: {arr.dtype}")
    mul, div = _DT_UNIT_SECONDS[unit]
    out = arr.view(np.int64).astype(np.float64)
    if mul * count != 1:
        out = out * float(mul * count)
    if div != 1:
        out = out / float(div)  # correctly rounded, unlike a multiplication by 1e-9
    return out


def period_cutoff(t: float, period: float) -> float:
    """The largest float ``c`` with ``c <= t - period`` exactly: a time window holds the
    events with time ``x > c`` (``x > t - period`` in exact arithmetic). ``t - period``
    rounded to nearest can exceed the exact value (when ``period`` is below half an ulp of
    ``t``, e.g. 100 s at nanosecond epoch times ~1.7e18, it *is* ``t``, and an event would
    expire as it arrives); the subtraction's exact error (two-sum) says when to step down
    one float. O(1).

    >>> period_cutoff(10.0, 3.0)
    7.0
    >>> t = 1.7e18
    >>> t - 100.0 == t, period_cutoff(t, 100.0) < t
    (True, True)
    """
    c = t - period
    if not math.isfinite(c):
        return c
    bb = c - t
    err = (t - (c - bb)) + (-period - bb)  # t - period == c + err exactly
    return math.nextafter(c, -math.inf) if err < 0 else c


def check_time(t: Any, name: str = "t") -> float:
    """One event time as float seconds (see the module rule): a real number, a ``datetime``
    (naive read as UTC), a ``timedelta``, or a numpy ``datetime64``/``timedelta64``.
    Strings, bytes, bools, ``None``: ``TypeError``; ``NaT``, ``nan``, ``inf``, too large:
    ``ValueError``.

    >>> check_time(dt.datetime(1970, 1, 2)), check_time(np.datetime64("1970-01-01T00:01")), check_time(3)
    (86400.0, 60.0, 3.0)
    """
    if t.__class__ is float and t - t == 0.0:
        return t
    if isinstance(t, dt.datetime):
        try:
            return (t.replace(tzinfo=_UTC) if t.tzinfo is None else t).timestamp()
        except (ValueError, OverflowError, OSError) as exc:  # pandas NaT, out-of-range dates
            raise ValueError(f"{name} must be a valid time, got {_show(t)} ({exc})") from None
    if isinstance(t, dt.timedelta):
        return t.total_seconds()
    if isinstance(t, (np.datetime64, np.timedelta64)):
        return float(_np_time_seconds(np.asarray(t).reshape(1), name, scalar=True)[0])
    try:
        return real_number(t, name)
    except TypeError:
        raise TypeError(f"{name} must be a number of seconds or a datetime, got {_show(t)}") from None


def check_times(ts: Any, n: int, name: str = "ts") -> np.ndarray:
    """Event times as a float64 array of ``n`` seconds, each following :func:`check_time`
    (one rule for scalars and arrays). For ``update_many`` with or without a period: the
    whole batch is checked before anything changes. O(n) (a Python loop only for lists
    or object arrays holding something other than ints and floats).

    >>> check_times(np.array(["1970-01-01T00:00:01", "1970-01-01T00:00:02"], dtype="datetime64[s]"), 2).tolist()
    [1.0, 2.0]
    >>> check_times([0.5, "1"], 2)
    Traceback (most recent call last):
    ...
    TypeError: ts must be a number of seconds or a datetime, got '1' at position 1
    """
    if isinstance(ts, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be an array of times (numbers of seconds or datetimes), got {_show(ts)}")
    if isinstance(ts, (list, tuple)):
        out = _fast_list(ts)
        if out is None:
            out = np.array([_time_element(v, name, i) for i, v in enumerate(ts)], dtype=np.float64)
    else:
        arr = np.asarray(ts)
        kind = arr.dtype.kind
        if kind in "Mm":
            out = _np_time_seconds(arr, name)
        elif kind in "fiu":
            out = _float_array(arr)
        elif kind == "O" and arr.ndim == 1:
            out = np.array([_time_element(v, name, i) for i, v in enumerate(arr.tolist())], dtype=np.float64)
        elif kind == "O" and arr.ndim == 0:
            raise TypeError(f"{name} must be an array of times, got {_show(ts)}")
        elif kind == "O":
            raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
        else:
            raise TypeError(f"{name} must be an array of times (numbers of seconds or datetimes), got dtype "
                            f"{arr.dtype}{_first(arr)}")
    if out.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {out.shape}")
    if out.shape[0] != n:
        raise ValueError(f"{name} has length {out.shape[0]} but scores have length {n}")
    _require_finite(out, ts, name)
    return out


def _time_element(v: Any, name: str, i: int) -> float:
    if isinstance(v, (list, tuple, np.ndarray)) and not (isinstance(v, np.ndarray) and v.ndim == 0):
        raise ValueError(f"{name} must be 1-dimensional, got a sequence at position {i}")
    try:
        return check_time(v, name)
    except TypeError:
        raise TypeError(f"{name} must be a number of seconds or a datetime, got {_show(v)} at position {i}") \
            from None
    except ValueError as exc:
        raise ValueError(f"{exc} at position {i}") from None


# ---------------------------------------------------------------- arrays
def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _first(arr: np.ndarray) -> str:
    return f" (first value {_show(arr.ravel()[0])})" if arr.size else ""


def _fast_list(values: list[Any] | tuple[Any, ...]) -> np.ndarray | None:
    """A list of plain ints/floats (numpy's own conversion is then the scalar rule) as float64,
    else ``None`` (the caller checks element by element)."""
    if not set(map(type, values)) <= _FAST_TYPES:
        return None
    try:
        return np.array(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):  # an int too large: named by the slow path
        return None


def _float_array(arr: np.ndarray) -> np.ndarray:
    """A real-dtype array as float64 (values beyond float64 become inf, then named)."""
    if arr.dtype == np.float64:
        return arr
    with np.errstate(over="ignore"):
        return arr.astype(np.float64)


def _element(v: Any, name: str, i: int) -> float:
    if isinstance(v, (list, tuple, np.ndarray)) and not (isinstance(v, np.ndarray) and v.ndim == 0):
        raise ValueError(f"{name} must be 1-dimensional, got a sequence at position {i}")
    try:
        return real_number(v, name, f" at position {i}")
    except TypeError:
        raise TypeError(f"{name} must be an array of real numbers, got {_show(v)} at position {i}") from None


def _real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as float64 under the scalar rule: strings, bytes, bools, complex numbers,
    dates refused (``TypeError``, naming the first); numbers too large for float64
    ``ValueError`` naming value and position. Float64 arrays pass without a copy."""
    if isinstance(values, np.ndarray):
        arr = values
    elif isinstance(values, (list, tuple)):
        out = _fast_list(values)
        if out is not None:
            return out
        return np.array([_element(v, name, i) for i, v in enumerate(values)], dtype=np.float64)
    elif isinstance(values, (str, bytes, bytearray, memoryview)) and (
            not isinstance(values, memoryview) or values.format in ("c", "b", "B")):
        raise TypeError(f"{name} must be an array of real numbers, got {_show(values)}")
    else:
        arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind in "fiu":
        return _float_array(arr)
    if kind == "O":
        if arr.ndim == 1:
            return np.array([_element(v, name, i) for i, v in enumerate(arr.tolist())], dtype=np.float64)
        if arr.ndim == 0:
            raise TypeError(f"{name} must be an array of real numbers, got {_show(values)}")
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}{_first(arr)}")


def _require_finite(arr: np.ndarray, original: Any, name: str) -> None:
    finite = np.isfinite(arr)
    if not finite.all():
        i = _first_bad(~finite)
        raise ValueError(f"{name} must be finite, got {_original(arr, original, i)} at position {i}")


def _original(arr: np.ndarray, original: Any, i: int) -> str:
    """The caller's value at ``i`` (a longdouble 1e400 rather than the inf it became)."""
    if isinstance(original, np.ndarray) and original.dtype != np.float64 and original.ndim == 1:
        v = original[i]
        if original.dtype.kind == "f" and np.isfinite(v):
            return f"{_show(v)} (too large for float64)"
        return _show(v)
    return repr(arr[i].item())


def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """Return a 1-d float64 array of finite scores (the :func:`check_score` rule per element).

    >>> check_scores([0.5, np.float32(0.25), 1]).tolist()
    [0.5, 0.25, 1.0]
    """
    arr = _real_array(scores, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    _require_finite(arr, scores, name)
    return arr


def check_labels(y: Any, n: int, name: str = "y") -> np.ndarray:
    """Return labels as a bool array of length ``n`` (the :func:`check_label` rule per element:
    ``"1"``, ``b"1"``, 2, ``nan`` are ``ValueError``)."""
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
        ones: np.ndarray = arr == 1
        return ones
    if arr.dtype == object:
        out = np.empty(n, dtype=np.bool_)
        for i, v in enumerate(arr.tolist()):
            try:
                out[i] = check_label(v)
            except ValueError:
                raise ValueError(f"{name} must hold only 0/1/False/True, got {_show(v)} at position {i}") from None
        return out
    raise ValueError(f"{name} must hold only 0/1/False/True, got dtype {arr.dtype}{_first(arr)}")


def check_weights(w: Any, n: int, name: str = "sample_weight") -> np.ndarray | None:
    """Return weights as a float64 array of length ``n``, each in ``(0, MAX_WEIGHTED_COST]``
    (the :func:`check_weight` rule per element), or ``None``."""
    if w is None:
        return None
    arr = _real_array(w, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but scores have length {n}")
    ok = (arr > 0.0) & (arr <= MAX_WEIGHTED_COST)
    if not ok.all():
        i = _first_bad(~ok)
        if arr[i] > MAX_WEIGHTED_COST and np.isfinite(arr[i]):
            raise ValueError(f"{name} must be at most 2**960 (MAX_WEIGHTED_COST), got {arr[i].item()!r} "
                             f"at position {i}")
        raise ValueError(f"{name} must be finite and > 0, got {_original(arr, w, i)} at position {i}")
    return arr
