"""Validation of checkpoint contents: every invariant, before any object is built.

A checkpoint's SHA-256 proves only that the file is intact: anybody can write a
consistent-looking file with swapped coefficients, unsorted keys or an expiry queue
that does not match the tree, and recompute the checksum. Everything here runs after
the checksum and before any object is constructed, and raises ``ValueError`` naming
the file, the field and the bad value (never ``KeyError``, ``TypeError``,
``OverflowError``... from a hostile file).

:func:`check_array_table` (called by :mod:`thors_stream.checkpoint` while reading)
checks the array table against the payload's length before a single array is built:
known names only, dtypes exactly as written, one-dimensional shapes, sizes and offsets
back to back inside the payload. So memory stays bounded by the file's length.

:func:`check_stream_parts` checks a :class:`~thors_stream.StreamingThors` state:

- parameters: costs finite and > 0; ``window`` a positive int (or null); the period
  finite and > 0 (or null; not both); ``class_prior``, ``max_fpr``, ``max_fnr``,
  ``confidence`` inside (0, 1); ``default_threshold`` finite (or null); ``load`` an int
  in ``4..65536``;
- per-score rows: keys finite and strictly increasing; counts non-negative integers
  (at most 2**53) with ``c1 + c0 >= 1``; weights finite, ``>= 0``, zero exactly where
  the class count is zero, and at most the count times the per-event limit ``update``
  applies (``w <= 2**960`` and ``w * max(fn_cost, fp_cost) <= 2**960``; every queued,
  late or ledger weight within that limit too); the optional double-double low parts ``w1_lo``/``w0_lo``
  finite, zero where the weight is, at most one unit in the last place of it;
- scalars: ``n`` the sum of the counts; ``w1``/``w0`` the class weight totals (relative
  tolerance :data:`REL_TOL`); the tree's coefficients the costs (or, with a
  ``class_prior``, the costs rescaled by some class totals: ``pi fn / a + (1 - pi) fp / b
  = 1``); ``n_updates``, ``arrivals`` ints in ``0..2**63 - 1``; ``last_t`` ``-inf`` without a
  period, else ``-inf`` or finite;
- windows: the live records of the expiry queue (label 0 or 1; 2 marks a record
  cancelled by ``revert``) plus the late events are exactly the tree's multiset: the
  same per-score counts per class and the same per-score weight sums (``math.fsum``,
  relative tolerance :data:`REL_TOL`); at most ``window`` records queued; in a period,
  queue times non-decreasing, every queued or late time inside the period that ends at
  ``last_t`` and late times before it, late arrival numbers unique in
  ``1..arrivals`` and sorted by (time, arrival);
- without a window: the weight ledger (events of weight != 1, see
  :mod:`thors_stream._ledger`) lies inside the tree and explains each per-score weight
  as its entries plus unit-weight events. Files written before the ledger existed (no
  ``revision`` and no ledger arrays) get a reconstructed ledger: the events at a
  score and label whose weights do not sum to their count are recorded as that many
  events of their mean weight (exact when they all weigh the same; otherwise
  ``revert`` refuses weights it cannot verify).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, NamedTuple

import numpy as np

from ._validation import MAX_UPDATES, MAX_WEIGHTED_COST, MAX_WINDOW, MIN_WEIGHTED_COST, period_cutoff

__all__ = ["REL_TOL", "StreamSpec", "check_array_table", "check_stream_parts"]

REL_TOL = 1e-9  # relative tolerance of weight sums (float rounding, never a different event)
MAX_COUNT = 2**53  # counts are float64 in the core: exact up to here
MAX_INT64 = 2**63 - 1
LOAD_RANGE = (4, 65536)

F8, U1, I8 = np.dtype("<f8"), np.dtype("|u1"), np.dtype("<i8")
STREAM_ARRAYS: dict[str, np.dtype] = {
    "keys": F8, "w1": F8, "w0": F8, "c1": F8, "c0": F8, "w1_lo": F8, "w0_lo": F8,
    "ledger_s": F8, "ledger_y": U1, "ledger_w": F8, "ledger_c": I8,
    "queue_s": F8, "queue_y": U1, "queue_w": F8, "queue_t": F8,
    "late_t": F8, "late_seq": I8, "late_s": F8, "late_y": U1, "late_w": F8,
}
MAX_SELECTOR_WINDOWS = 16  # candidates of window='auto' a file may hold
KIND_ARRAYS: dict[str, dict[str, np.dtype]] = {
    "StreamingThors": STREAM_ARRAYS,
    # with window="auto": the selector's candidates but the longest (under "sel{i}_") and its weights;
    "ThorsClassifier.thresholding": {
        **STREAM_ARRAYS, "pending_scores": F8, "selector_state": F8, "selector_rng": np.dtype("<u8"),
        # with per-event costs: each pending decision's costs and its model's label count
        "pending_fn": F8, "pending_fp": F8, "pending_labels": I8,
        **{f"sel{i}_{name}": d for i in range(MAX_SELECTOR_WINDOWS) for name, d in STREAM_ARRAYS.items()},
        # with segment=: every segment's arrays, concatenated (the lengths are in the state)
        **{f"seg_{name}": d for name, d in STREAM_ARRAYS.items()},
        # with segment= and window="auto": the segments' selectors (concatenated) and the global one
        **{f"seg_{g}sel{i}_{name}": d for g in ("", "global_") for i in range(MAX_SELECTOR_WINDOWS)
           for name, d in STREAM_ARRAYS.items()},
        **{f"seg_{g}selector_{name}": d for g in ("", "global_") for name, d in (("state", F8),
                                                                              ("rng", np.dtype("<u8")))},
    },
}
# other kinds (write_checkpoint is public): plain numeric dtypes only
GENERIC_DTYPES = frozenset(np.dtype(c).newbyteorder("<").str for c in "?bBhHiIlLqQefd")
MAX_NDIM = 32
_DESCR_FIELDS = frozenset(("name", "dtype", "shape", "offset", "nbytes"))
CANCELLED = 2


def _bad(where: str, field: str, problem: str) -> ValueError:
    """The error for an invalid field of the checkpoint at ``where`` (at most 600 characters)."""
    return ValueError(f"{where} is invalid: {field} {problem}"[:600])


def _show(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _is_int(v: Any) -> bool:
    return type(v) is int


def check_array_table(descr: Any, kind: str, payload_len: int, where: str) -> list[tuple[str, np.dtype, tuple[int, ...],
                                                                                       int, int]]:
    """Check the header's array table against the payload; ``[(name, dtype, shape, offset,
    nbytes)]``. Nothing is allocated: every size is checked against ``payload_len`` first."""
    schema = KIND_ARRAYS.get(kind)
    out: list[tuple[str, np.dtype, tuple[int, ...], int, int]] = []
    seen: set[str] = set()
    offset = 0
    for i, d in enumerate(descr):
        field = f"arrays[{i}]"
        if not isinstance(d, dict) or set(d) != _DESCR_FIELDS:
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise _bad(where, field, f"must be an object with fields {sorted(_DESCR_FIELDS)}, got {_show(got)}")
        name, dstr, shape = d["name"], d["dtype"], d["shape"]
        if not isinstance(name, str):
            raise _bad(where, f"{field}.name", f"must be a string, got {_show(name)}")
        field = f"array {name!r}"
        if name in seen:
            raise _bad(where, field, "appears twice")
        seen.add(name)
        if not isinstance(dstr, str):
            raise _bad(where, f"{field} dtype", f"must be a string, got {_show(dstr)}")
        if schema is not None:
            if name not in schema:
                raise _bad(where, field, f"is unknown (a {kind} checkpoint holds only {sorted(schema)})")
            if dstr != schema[name].str:
                raise _bad(where, f"{field} dtype", f"must be {schema[name].str!r}, got {_show(dstr)}")
        elif dstr not in GENERIC_DTYPES:
            raise _bad(where, f"{field} dtype", f"must be one of {sorted(GENERIC_DTYPES)}, got {_show(dstr)}")
        dtype = np.dtype(dstr)
        if not isinstance(shape, list) or not all(_is_int(k) and k >= 0 for k in shape):
            raise _bad(where, f"{field} shape", f"must be a list of non-negative integers, got {_show(shape)}")
        if len(shape) != 1 if schema is not None else len(shape) > MAX_NDIM:
            raise _bad(where, f"{field} shape", f"has {len(shape)} dimensions, got {_show(shape)}")
        size = math.prod(shape) * dtype.itemsize
        lo, nbytes = d["offset"], d["nbytes"]
        if not _is_int(nbytes) or nbytes != size:
            raise _bad(where, f"{field} nbytes", f"must be {size} (shape {shape} of {dstr}), got {_show(nbytes)}")
        if not _is_int(lo) or lo != offset:
            raise _bad(where, f"{field} offset", f"must be {offset} (arrays are back to back), got {_show(lo)}")
        if offset + nbytes > payload_len:
            raise _bad(where, field, f"ends at byte {offset + nbytes}, beyond the {payload_len}-byte payload")
        out.append((name, dtype, tuple(shape), offset, nbytes))
        offset += nbytes
    if offset != payload_len:
        raise _bad(where, "payload", f"has {payload_len - offset} bytes after its last array")
    return out


# ---------------------------------------------------------------- scalars
def _fields(obj: Any, name: str, required: set[str], optional: set[str], where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _bad(where, name, f"must be an object, got {type(obj).__name__}")
    missing = sorted(required - set(obj))
    if missing:
        raise _bad(where, name, f"lacks {missing}")
    unknown = sorted(set(obj) - required - optional)
    if unknown:
        raise _bad(where, name, f"has unknown fields {unknown}")
    return obj


def _float(v: Any, field: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(where, field, f"must be a number, got {_show(v)}")
    try:
        return float(v)
    except OverflowError:
        raise _bad(where, field, f"is out of range: {_show(v)}") from None


def _positive(v: Any, field: str, where: str) -> float:
    f = _float(v, field, where)
    if not (math.isfinite(f) and f > 0):
        raise _bad(where, field, f"must be finite and > 0, got {_show(v)}")
    return f


def _unit(v: Any, field: str, where: str, optional: bool = True) -> float | None:
    if v is None and optional:
        return None
    f = _float(v, field, where)
    if not 0.0 < f < 1.0:
        raise _bad(where, field, f"must be strictly between 0 and 1{' or null' if optional else ''}, got {_show(v)}")
    return f


def _int(v: Any, field: str, where: str, lo: int, hi: int) -> int:
    if not _is_int(v) or not lo <= v <= hi:
        raise _bad(where, field, f"must be an integer in {lo}..{hi}, got {_show(v)}")
    return int(v)


# ---------------------------------------------------------------- arrays
def _arr(arrays: dict[str, Any], name: str, where: str, n: int | None = None) -> np.ndarray:
    a = arrays[name]
    want = STREAM_ARRAYS[name]
    if not isinstance(a, np.ndarray) or a.dtype != want or a.ndim != 1:
        got = f"{a.dtype.str} shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
        raise _bad(where, f"array {name!r}", f"must be 1-dimensional {want.str}, got {got}")
    if n is not None and a.shape[0] != n:
        raise _bad(where, f"array {name!r}", f"has length {a.shape[0]}, expected {n}")
    return a


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _require(ok: np.ndarray, a: np.ndarray, name: str, problem: str, where: str) -> None:
    """Raise naming the first element of ``a`` where ``ok`` is False."""
    if not ok.all():
        i = _first(~ok)
        raise _bad(where, f"array {name!r}", f"{problem}, got {a[i].item()!r} at position {i}")


def _finite(a: np.ndarray, name: str, where: str) -> None:
    _require(np.isfinite(a), a, name, "must be finite", where)


def _counts(a: np.ndarray, name: str, where: str) -> None:
    _require(np.isfinite(a) & (a >= 0) & (a <= MAX_COUNT) & (np.floor(a) == a), a, name,
             f"must hold integers in 0..{MAX_COUNT}", where)


def _weights(a: np.ndarray, name: str, where: str, cost: tuple[float, float]) -> None:
    """One event's weights: finite, > 0, and within the runtime's limits (``w <= 2**960``,
    ``w * high <= 2**960`` and ``w * low >= 2**-960`` for ``cost = (high, low)``, the
    larger and the smaller cost), beyond which costs could overflow or lose precision."""
    _require(np.isfinite(a) & (a > 0), a, name, "must hold finite weights > 0", where)
    high, low = cost
    with np.errstate(over="ignore"):  # an overflow to inf is a refusal
        fits = (a <= MAX_WEIGHTED_COST) & (a * high <= MAX_WEIGHTED_COST) & (a * low >= MIN_WEIGHTED_COST)
    _require(fits, a, name,
             f"must hold weights w with w <= 2**960, w * {high!r} (the larger cost) <= 2**960 "
             f"(MAX_WEIGHTED_COST) and w * {low!r} (the smaller cost) >= 2**-960 (MIN_WEIGHTED_COST), "
             "as update accepts", where)


def _labels(a: np.ndarray, name: str, where: str, cancelled: bool = False) -> None:
    ok = (a <= 1) | (a == CANCELLED) if cancelled else a <= 1
    _require(ok, a, name, "must hold labels 0 or 1" + (" (or 2, cancelled)" if cancelled else ""), where)


class StreamSpec(NamedTuple):
    """A validated :class:`~thors_stream.StreamingThors` checkpoint, ready to build."""

    kwargs: dict[str, Any]  # constructor arguments (without backend)
    period_s: float | None
    coefs: tuple[float, float]
    rows: np.ndarray  # (5, n): keys, w1, w0, c1, c0
    lo: np.ndarray | None  # (2, n) double-double low parts
    queue: tuple[np.ndarray, ...] | None
    ledger: list[tuple[float, int, float, int]]
    late: list[tuple[float, int, float, int, float]]
    last_t: float
    arrivals: int
    n_updates: int
    n: int


_PARAMS = {"fn_cost", "fp_cost", "window", "period_seconds", "period_is_timedelta", "class_prior",
           "default_threshold", "load"}
_PARAMS_OPT = {"max_fpr", "max_fnr", "confidence"}  # absent in files from before Neyman-Pearson mode
_STATE = {"n", "w1", "w0", "last_t", "arrivals", "n_updates", "tree_coefs"}
_ROWS = ("keys", "w1", "w0", "c1", "c0")
_LEDGER = ("ledger_s", "ledger_y", "ledger_w", "ledger_c")
_LATE = ("late_t", "late_seq", "late_s", "late_y", "late_w")


def _check_params(params: Any, where: str) -> tuple[dict[str, Any], float | None]:
    p = _fields(params, "params", _PARAMS, _PARAMS_OPT, where)
    fn = _positive(p["fn_cost"], "params.fn_cost", where)
    fp = _positive(p["fp_cost"], "params.fp_cost", where)
    window = p["window"]
    if window is not None:
        window = _int(window, "params.window", where, 1, MAX_WINDOW)
    period: Any = p["period_seconds"]
    is_td = p["period_is_timedelta"]
    if not isinstance(is_td, bool):
        raise _bad(where, "params.period_is_timedelta", f"must be true or false, got {_show(is_td)}")
    period_s = None
    if period is not None:
        period_s = _positive(period, "params.period_seconds", where)
        if window is not None:
            raise _bad(where, "params", f"give window or period, not both (window={window}, period={period_s!r})")
        if is_td:
            try:
                period = dt.timedelta(seconds=period_s)
            except OverflowError:
                raise _bad(where, "params.period_seconds", f"is too large for a timedelta, got {period_s!r}") from None
            period_s = period.total_seconds()
            if not period_s > 0:
                raise _bad(where, "params.period_seconds", f"rounds to an empty timedelta, got {p['period_seconds']!r}")
        else:
            period = period_s
    elif is_td:
        raise _bad(where, "params.period_is_timedelta", "is true without a period")
    dthr = p["default_threshold"]
    if dthr is not None:
        dthr = _float(dthr, "params.default_threshold", where)
        if not math.isfinite(dthr):
            raise _bad(where, "params.default_threshold", f"must be finite or null, got {dthr!r}")
    kwargs = {
        "fn_cost": fn, "fp_cost": fp, "window": window, "period": period,
        "class_prior": _unit(p["class_prior"], "params.class_prior", where),
        "default_threshold": dthr,
        "load": _int(p["load"], "params.load", where, *LOAD_RANGE),
        "max_fpr": _unit(p.get("max_fpr"), "params.max_fpr", where),
        "max_fnr": _unit(p.get("max_fnr"), "params.max_fnr", where),
        "confidence": _unit(p.get("confidence", 0.95), "params.confidence", where, optional=False),
    }
    return kwargs, period_s


def _check_coefs(v: Any, fn: float, fp: float, prior: float | None, where: str) -> tuple[float, float]:
    if not isinstance(v, list) or len(v) != 2:
        raise _bad(where, "state.tree_coefs", f"must be a list of two numbers, got {_show(v)}")
    a = _positive(v[0], "state.tree_coefs[0]", where)
    b = _positive(v[1], "state.tree_coefs[1]", where)
    if (a, b) == (fn, fp):
        return a, b
    if prior is None:
        raise _bad(where, "state.tree_coefs", f"must equal the costs (fn_cost, fp_cost) = {(fn, fp)!r}, "
                                              f"got {(a, b)!r}")
    # with a prior, a = fn * pi * N / N1 and b = fp * (1 - pi) * N / N0 for some class totals
    if not math.isclose(prior * fn / a + (1.0 - prior) * fp / b, 1.0, rel_tol=REL_TOL):
        raise _bad(where, "state.tree_coefs", f"{(a, b)!r} are not the costs {(fn, fp)!r} rescaled to "
                                              f"class_prior={prior!r} by any class totals")
    return a, b


def _close(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    close: np.ndarray = np.abs(got - want) <= REL_TOL * np.maximum(np.abs(got), np.abs(want))
    return close


def _group_sums(idx: np.ndarray, w: np.ndarray, n: int, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-index counts and weight sums of records ``(idx, w)``. A plain sum of ``m``
    positive weights is within ``m * eps`` of the exact one, far inside :data:`REL_TOL`;
    the groups it puts outside the tolerance of ``want`` are summed again with
    ``math.fsum`` (correctly rounded) before anything is concluded."""
    counts = np.bincount(idx, minlength=n)
    sums = np.bincount(idx, weights=w, minlength=n)
    recheck = np.flatnonzero((counts > 1) & ~_close(sums, want))
    if recheck.shape[0]:
        order = np.argsort(idx, kind="stable")
        ws = w[order].tolist()
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for k in recheck.tolist():
            a = int(starts[k])
            sums[k] = math.fsum(ws[a : a + int(counts[k])])
    return counts, sums


def _check_multiset(keys: np.ndarray, rows_c: tuple[np.ndarray, np.ndarray], rows_w: tuple[np.ndarray, np.ndarray],
                    s: np.ndarray, y: np.ndarray, w: np.ndarray, what: str, where: str) -> None:
    """The records ``(s, y, w)`` hold exactly the tree's events: counts equal, weights up
    to rounding."""
    n = keys.shape[0]
    idx = np.searchsorted(keys, s)
    safe = np.minimum(idx, max(n - 1, 0))
    found = (idx < n) & (keys[safe] == s) if n else np.zeros(s.shape[0], dtype=bool)
    if not found.all():
        i = _first(~found)
        raise _bad(where, what, f"holds an event at score {s[i].item()!r} that the tree does not hold")
    for cls, c, wt in ((1, rows_c[0], rows_w[0]), (0, rows_c[1], rows_w[1])):
        m = y == cls
        counts, sums = _group_sums(idx[m], w[m], n, wt)
        if (counts != c).any():
            k = _first(counts != c)
            raise _bad(where, what, f"holds {int(counts[k])} event(s) of label {cls} at score {keys[k].item()!r}, "
                                    f"the tree {int(c[k])}")
        ok = _close(sums, wt)
        if not ok.all():
            k = _first(~ok)
            raise _bad(where, what, f"holds weight {sums[k].item()!r} of label {cls} at score {keys[k].item()!r}, "
                                    f"the tree {wt[k].item()!r}")


def _check_ledger(arrays: dict[str, Any], keys: np.ndarray, rows_c: tuple[np.ndarray, np.ndarray],
                  rows_w: tuple[np.ndarray, np.ndarray], legacy: bool, cost: tuple[float, float],
                  where: str) -> list[tuple[float, int, float, int]]:
    """The weight ledger of an unwindowed summary (see the module docstring)."""
    n = keys.shape[0]
    if _LEDGER[0] in arrays:
        ls = _arr(arrays, "ledger_s", where)
        m = ls.shape[0]
        ly, lw, lc = (_arr(arrays, k, where, m) for k in _LEDGER[1:])
        _finite(ls, "ledger_s", where)
        _labels(ly, "ledger_y", where)
        _weights(lw, "ledger_w", where, cost)
        _require(lw != 1.0, lw, "ledger_w", "must hold weights other than 1 (unit weights are not recorded)", where)
        _require((lc >= 1) & (lc <= MAX_COUNT), lc, "ledger_c", f"must hold counts in 1..{MAX_COUNT}", where)
        if m > 1:  # written sorted by (score, label, weight): strictly increasing, so unique
            d_s, d_y, d_w = np.diff(ls), np.diff(ly.astype(np.int16)), np.diff(lw)
            inc = (d_s > 0) | ((d_s == 0) & ((d_y > 0) | ((d_y == 0) & (d_w > 0))))
            if not inc.all():
                i = _first(~inc) + 1
                raise _bad(where, "ledger", f"entries must be unique and sorted by (score, label, weight); entry {i} "
                                            f"{(ls[i].item(), int(ly[i]), lw[i].item())!r} is not")
        ledger = list(zip(ls.tolist(), ly.tolist(), lw.tolist(), lc.tolist()))
    else:
        ledger = []
    if legacy and _LEDGER[0] not in arrays:  # from before the ledger: odd (score, label)s as events of mean weight
        for cls, c, wt in ((1, rows_c[0], rows_w[0]), (0, rows_c[1], rows_w[1])):
            odd = np.flatnonzero((c > 0) & ~_close(wt, c))
            for k in odd.tolist():
                mean = wt[k].item() / c[k].item()
                if not mean > 0:
                    raise _bad(where, f"array 'w{cls}'", f"holds weight {wt[k].item()!r} for {int(c[k])} events "
                                                         f"at score {keys[k].item()!r}: a mean weight of 0")
                if mean != 1.0:
                    ledger.append((keys[k].item(), cls, mean, int(c[k])))
        ledger.sort()
    for s, _, w, _ in ledger:
        k = int(np.searchsorted(keys, s))
        if k >= n or keys[k] != s:
            raise _bad(where, "ledger", f"records weight {w!r} at score {s!r}, which the tree does not hold")
    # per (score, label): ledger count <= tree count, ledger weight + unit events = tree weight
    for cls, c, wt in ((1, rows_c[0], rows_w[0]), (0, rows_c[1], rows_w[1])):
        lcount = np.zeros(n)
        lweight: dict[int, list[float]] = {}
        for (s, y, w, cnt) in ledger:
            if y == cls:
                k = int(np.searchsorted(keys, s))
                lcount[k] += cnt
                lweight.setdefault(k, []).append(w * cnt)
        over = lcount > c
        if over.any():
            k = _first(over)
            raise _bad(where, "ledger", f"records {int(lcount[k])} event(s) of label {cls} at score "
                                        f"{keys[k].item()!r}, the tree holds {int(c[k])}")
        expect = c - lcount  # unit-weight events
        for k, parts in lweight.items():
            expect[k] = math.fsum([*parts, expect[k]])
        ok = _close(expect, wt)
        if not ok.all():
            k = _first(~ok)
            raise _bad(where, "ledger", f"explains weight {expect[k].item()!r} of label {cls} at score "
                                        f"{keys[k].item()!r} (recorded weights + unit events), the tree holds "
                                        f"{wt[k].item()!r}")
    return ledger


def check_stream_parts(params: Any, state: Any, arrays: Any, *, where: str = "checkpoint",
                       legacy: bool = False) -> StreamSpec:
    """Validate a StreamingThors checkpoint's ``(params, state, arrays)``; a :class:`StreamSpec`.

    Raises ``ValueError`` naming ``where``, the field and the value at the first broken
    invariant (see the module docstring for the list). ``legacy``: a file without the
    ``revision`` header field (its missing weight ledger is reconstructed).
    """
    kwargs, period_s = _check_params(params, where)
    window = kwargs["window"]
    s = _fields(state, "state", _STATE, set(), where)
    if not isinstance(arrays, dict):
        raise _bad(where, "arrays", f"must be a dict of arrays, got {type(arrays).__name__}")
    unknown = sorted(set(arrays) - set(STREAM_ARRAYS))
    if unknown:
        raise _bad(where, "arrays", f"has unknown arrays {unknown}")
    windowed, timed = window is not None or period_s is not None, period_s is not None
    required = [*_ROWS, *_LATE] + (["queue_s", "queue_y", "queue_w"] if windowed else []) + (["queue_t"] if timed
                                                                                           else [])
    missing = [k for k in required if k not in arrays]
    if missing:
        raise _bad(where, "arrays", f"lack {missing}")
    for group, allowed in ((("w1_lo", "w0_lo"), True), (_LEDGER, not windowed),
                           (("queue_s", "queue_y", "queue_w"), windowed), (("queue_t",), timed)):
        have = [k for k in group if k in arrays]
        if have and not allowed:
            why = "a window or period" if group == _LEDGER else ("no period" if group == ("queue_t",) else "no window")
            raise _bad(where, "arrays", f"hold {have}, not expected with {why}")
        if have and len(have) != len(group):
            raise _bad(where, "arrays", f"hold {have}: all or none of {list(group)} expected")

    # ---- per-score rows
    keys = _arr(arrays, "keys", where)
    n = keys.shape[0]
    w1, w0, c1, c0 = (_arr(arrays, k, where, n) for k in _ROWS[1:])
    _finite(keys, "keys", where)
    if n > 1 and not (keys[1:] > keys[:-1]).all():
        i = _first(~(keys[1:] > keys[:-1])) + 1
        raise _bad(where, "array 'keys'", f"must be strictly increasing (sorted, unique), got {keys[i].item()!r} "
                                          f"after {keys[i - 1].item()!r} at position {i}")
    for name, c in (("c1", c1), ("c0", c0)):
        _counts(c, name, where)
    _require(c1 + c0 >= 1, c1 + c0, "c1 + c0", "must be >= 1 (every held score holds an event)", where)
    for name, w, c in (("w1", w1, c1), ("w0", w0, c0)):
        _require(np.isfinite(w) & (w >= 0), w, name, "must hold finite weights >= 0", where)
        _require((w > 0) == (c > 0), w, name, f"must be > 0 exactly where {'c' + name[1]} > 0", where)
    lo = None
    if "w1_lo" in arrays:
        lo = np.stack([_arr(arrays, "w1_lo", where, n), _arr(arrays, "w0_lo", where, n)]) if n else np.zeros((2, 0))
        for name, part, w in (("w1_lo", lo[0], w1), ("w0_lo", lo[1], w0)):
            _finite(part, name, where)
            _require((np.abs(part) <= np.spacing(w)) & ((w != 0) | (part == 0)), part, name,
                     f"must be a double-double low part (|lo| <= one ulp of {name[:2]}, 0 where it is)", where)
    rough = float(c1.sum()) + float(c0.sum())
    if rough < 2.0**62:  # int64 sums are then exact
        total = int(c1.astype(np.int64).sum()) + int(c0.astype(np.int64).sum())
    else:
        total = sum(int(v) for v in c1.tolist()) + sum(int(v) for v in c0.tolist())
    wt1 = w1 + lo[0] if lo is not None else w1
    wt0 = w0 + lo[1] if lo is not None else w0
    # each event weighs at most what update accepts, so a score's weight is at most its
    # count times that (up to the rounding of the sum)
    cost = max(kwargs["fn_cost"], kwargs["fp_cost"])
    costs = (cost, min(kwargs["fn_cost"], kwargs["fp_cost"]))  # (larger, smaller)
    for name, w, c in (("w1", wt1, c1), ("w0", wt0, c0)):
        cap = c * MAX_WEIGHTED_COST * (1 + REL_TOL)
        with np.errstate(over="ignore"):  # an overflow to inf is a refusal
            fits = (w <= cap) & (w * cost <= cap)
        _require(fits, w, name,
                 f"must be at most its count times the per-event limit (w <= 2**960 and w * {cost!r}, the "
                 "larger cost, <= 2**960: MAX_WEIGHTED_COST, as update accepts)", where)

    # ---- scalars
    n_state = _int(s["n"], "state.n", where, 0, MAX_COUNT)
    if n_state != total:
        raise _bad(where, "state.n", f"must be the sum of the counts ({total}), got {n_state}")
    for i, name, w in ((0, "w1", w1), (1, "w0", w0)):
        got = _float(s[name], f"state.{name}", where)
        want = float(w.sum()) + (float(lo[i].sum()) if lo is not None else 0.0)  # within n * eps
        if not math.isclose(got, want, rel_tol=REL_TOL):
            want = math.fsum([*w.tolist(), *(lo[i].tolist() if lo is not None else [])])
        if not (math.isfinite(got) and got >= 0 and math.isclose(got, want, rel_tol=REL_TOL)):
            raise _bad(where, f"state.{name}", f"must be the class weight total {want!r}, got {got!r}")
    last_t = _float(s["last_t"], "state.last_t", where)
    if math.isnan(last_t) or last_t == math.inf or (period_s is None and last_t != -math.inf):
        raise _bad(where, "state.last_t", f"must be -inf{' or finite' if timed else ' (no period)'}, got {last_t!r}")
    arrivals = _int(s["arrivals"], "state.arrivals", where, 0, MAX_INT64)
    n_updates = _int(s["n_updates"], "state.n_updates", where, 0, MAX_UPDATES)
    coefs = _check_coefs(s["tree_coefs"], kwargs["fn_cost"], kwargs["fp_cost"], kwargs["class_prior"], where)

    # ---- late events (period only)
    lt = _arr(arrays, "late_t", where)
    m_late = lt.shape[0]
    lseq, ls, ly, lw = (_arr(arrays, k, where, m_late) for k in _LATE[1:])
    if m_late and not timed:
        raise _bad(where, "array 'late_t'", f"holds {m_late} late event(s) without a period")
    if m_late:
        _finite(lt, "late_t", where)
        _finite(ls, "late_s", where)
        _labels(ly, "late_y", where)
        _weights(lw, "late_w", where, costs)
        _require(lt < last_t, lt, "late_t", f"must be before state.last_t={last_t!r} (late events)", where)
        assert period_s is not None  # timed
        _require(lt > period_cutoff(last_t, period_s), lt, "late_t",
                 f"must be inside the period (> {period_cutoff(last_t, period_s)!r}; older ones have expired)",
                 where)
        _require((lseq >= 1) & (lseq <= arrivals), lseq, "late_seq", f"must hold arrival numbers in 1..{arrivals}",
                 where)
        if np.unique(lseq).shape[0] != m_late:
            raise _bad(where, "array 'late_seq'", "must hold unique arrival numbers")
        if m_late > 1:
            dt_, ds_ = np.diff(lt), np.diff(lseq)
            inc = (dt_ > 0) | ((dt_ == 0) & (ds_ > 0))
            if not inc.all():
                i = _first(~inc) + 1
                raise _bad(where, "late events", f"must be sorted by (time, arrival); event {i} is not")

    # ---- expiry queue
    queue: tuple[np.ndarray, ...] | None = None
    if windowed:
        qs = _arr(arrays, "queue_s", where)
        mq = qs.shape[0]
        qy, qw = _arr(arrays, "queue_y", where, mq), _arr(arrays, "queue_w", where, mq)
        _finite(qs, "queue_s", where)
        _labels(qy, "queue_y", where, cancelled=True)
        _weights(qw, "queue_w", where, costs)
        queue = (qs, qy, qw)
        if window is not None and mq > window:
            raise _bad(where, "array 'queue_s'", f"queues {mq} records, more than window={window}")
        if timed:
            qt = _arr(arrays, "queue_t", where, mq)
            _finite(qt, "queue_t", where)
            if mq > 1:
                _require(np.diff(qt) >= 0, qt[1:], "queue_t", "must be non-decreasing", where)
            if mq:
                if not qt[-1] <= last_t:
                    raise _bad(where, "array 'queue_t'", f"holds time {qt[-1].item()!r} after state.last_t="
                                                         f"{last_t!r}")
                assert period_s is not None  # timed
                if not qt[0] > period_cutoff(last_t, period_s):
                    raise _bad(where, "array 'queue_t'", f"holds time {qt[0].item()!r}, outside the period "
                                                         f"(> {period_cutoff(last_t, period_s)!r}: it has expired)")
            queue = (qs, qy, qw, qt)
        live = qy != CANCELLED
        _check_multiset(keys, (c1, c0), (wt1, wt0), np.concatenate([qs[live], ls]),
                        np.concatenate([qy[live], ly]), np.concatenate([qw[live], lw]),
                        "the expiry queue" + (" with the late events" if timed else ""), where)
        ledger: list[tuple[float, int, float, int]] = []
    else:
        ledger = _check_ledger(arrays, keys, (c1, c0), (wt1, wt0), legacy, costs, where)

    rows = np.stack([keys, w1, w0, c1, c0]) if n else np.zeros((5, 0))
    late = list(zip(lt.tolist(), lseq.tolist(), ls.tolist(), ly.tolist(), lw.tolist()))
    return StreamSpec(kwargs, period_s, coefs, rows, lo, queue, ledger, late, last_t, arrivals, n_updates, total)
