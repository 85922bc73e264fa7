"""What ``thors fit`` and ``thors replay`` share: exit codes, the decision rule and its checks, formatting, wall time.

The decision rule of a file's events (:class:`_Rule`: the keys thresholded, the weights and
costs of the search, money or cost), the description of that rule written into release files
and reports (:func:`_decision`), the refusals made before any work (cost options, outputs that
would overwrite the input or each other, costs that would overflow), :class:`Refused` (a
command declines to publish, with its exit code) and the small formatting helpers of
thresholds and times. Imported by :mod:`thors_stream.cli` and its command modules; it
imports none of them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import time
from typing import Any

import numpy as np

from .costs import class_coefficients

# the exit codes of the ``thors`` command (what each means: :mod:`thors_stream.cli`)
EXIT_OK = 0
EXIT_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_UNSUPPORTED = 3
EXIT_SHIFT = 4
_MAX_TOTAL_COST = 1e300  # headroom below the float maximum for the running sums


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name the same existing file (``-`` is never a file)."""
    if a == "-" or b == "-":
        return False
    try:
        return os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _check_outputs(data: str, outputs: list[tuple[str, str | None]]) -> None:
    """Refuse an output path that ends with a slash (a directory), that is the input file
    (it would be overwritten), and two outputs that are one file (``x.csv`` and ``./x.csv``: the
    second would replace the first)."""
    seen: dict[str, str] = {}
    for option, path in outputs:
        if path is None or path == "-":
            continue
        if path.endswith(("/", os.sep)) and not os.path.isdir(path):  # (an existing one is refused later)
            raise ValueError(f"{option} {path} names a directory (it ends with a slash); give a file name")
        if _same_file(data, path):
            raise ValueError(f"{option} {path} is the input file; refusing to overwrite it")
        real = os.path.normcase(os.path.realpath(path))
        if real in seen:
            raise ValueError(f"{seen[real]} and {option} {path} are the same file; give each output its own")
        seen[real] = f"{option} {path}"


def _check_magnitudes(ev: Any, fn_cost: float, fp_cost: float, class_prior: float | None) -> None:
    """Refuse costs and weights whose products would overflow the cost sums (one clear line)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if ev.weights is None:
            w1 = float(np.count_nonzero(ev.labels))
            w0 = float(len(ev)) - w1
        else:
            w1 = float(ev.weights[ev.labels].sum())
            w0 = float(ev.weights[~ev.labels].sum())
    if not (math.isfinite(w0) and math.isfinite(w1)):
        raise ValueError("the weights' total overflows; express the weights in larger units")
    try:
        a, b = class_coefficients(fn_cost, fp_cost, w0, w1, class_prior)
        total = a * w1 + b * w0
    except (OverflowError, ZeroDivisionError):
        total = math.inf
    if not total <= _MAX_TOTAL_COST:
        raise ValueError(f"--fn-cost {fn_cost:g} / --fp-cost {fp_cost:g} are too large for this file: the total "
                         f"cost would overflow (over {_MAX_TOTAL_COST:g}); express the costs in larger units")


def _check_magnitudes_w(ev: Any, weights: np.ndarray | None, fn_cost: float, fp_cost: float,
                        class_prior: float | None, money: bool = False) -> None:
    """:func:`_check_magnitudes` with the weights actually used (per-event costs included;
    ``money``: the weights are the costs, and the message says so)."""

    class _View:
        labels = ev.labels

        def __len__(self) -> int:
            return len(ev)

    v = _View()
    v.weights = weights  # type: ignore[attr-defined]
    try:
        _check_magnitudes(v, fn_cost, fp_cost, class_prior)
    except ValueError:
        if not money:
            raise
        raise ValueError(f"the money at stake would overflow (over {_MAX_TOTAL_COST:g}): express the costs (and "
                         "weights) in larger units") from None


class Refused(Exception):
    """``thors fit`` refuses to publish: one line on stderr and ``code`` as the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[type[Refused], tuple[str, int]]:  # pickles: (message, code)
        return type(self), (str(self), self.code)


def _check_cost_options(args: argparse.Namespace) -> None:
    """Refuse a missing cost, a cost given twice (a number and a column), and options that do not
    compose with costs carried as weights (per-event costs or the cost margin). Before any reading."""
    for a, b in (("fn_cost", "fn_cost_col"), ("fp_cost", "fp_cost_col")):
        flag, col = "--" + a.replace("_", "-"), "--" + b.replace("_", "-")
        if getattr(args, a) is None and getattr(args, b) is None:
            raise ValueError(f"{flag} (or {col}) is required")
        if getattr(args, a) is not None and getattr(args, b) is not None:
            raise ValueError(f"give {flag} or {col}, not both")
    columns = args.fn_cost_col is not None or args.fp_cost_col is not None
    if args.class_prior is not None and columns:
        raise ValueError("--class-prior cannot be combined with --fn-cost-col/--fp-cost-col")
    if args.class_prior is not None and args.decide_on == "margin":
        raise ValueError("--class-prior cannot be combined with --decide-on margin: the margin's probabilities must "
                         "already be the population's (calibrated), and its cost is the money lost")
    if columns and (getattr(args, "max_fpr", None) is not None or getattr(args, "max_fnr", None) is not None):
        raise ValueError("--max-fpr/--max-fnr cannot be combined with --fn-cost-col/--fp-cost-col")


class _Rule:
    """How a command decides and what its cost is, for the events of a file.

    ``keys`` are what the threshold applies to (the scores, or the cost margins with
    ``--decide-on margin``), ``weights`` the search's sample weights and ``fn_cost``/``fp_cost``
    its costs. When the costs are money (per-event cost columns, or the margin mode) every
    event weighs its own cost (a positive its FN cost, a negative its FP cost, times its
    ``--weight-col`` weight) at unit costs, so a cost is the money lost (``money``);
    ``fn``/``fp`` are then the costs as given (a column's array or a number). Otherwise the
    weights are ``--weight-col``'s and the costs the numbers given. O(n).
    """

    def __init__(self, args: argparse.Namespace, ev: Any) -> None:
        fn: Any = ev.fn_costs if args.fn_cost_col is not None else args.fn_cost
        fp: Any = ev.fp_costs if args.fp_cost_col is not None else args.fp_cost
        self.decide_on: str = args.decide_on
        self.fn, self.fp = fn, fp
        self.money = args.decide_on == "margin" or np.ndim(fn) > 0 or np.ndim(fp) > 0
        self.keys: np.ndarray = ev.scores
        self.weights: np.ndarray | None = ev.weights
        self.fn_cost: float = 1.0 if self.money else float(fn)
        self.fp_cost: float = 1.0 if self.money else float(fp)
        if not self.money:
            return
        from .margin import cost_margins, per_event_costs

        n = len(ev)
        if self.decide_on == "margin":  # the scores are probabilities in [0, 1] (checked by the reader)
            self.keys = cost_margins(ev.scores, fn, fp)
        # as thors_threshold(..., fn_cost=fn, fp_cost=fp, sample_weight=w) weighs them
        w = np.where(ev.labels, per_event_costs(fn, n, "fn_cost"), per_event_costs(fp, n, "fp_cost"))
        if ev.weights is not None:
            with np.errstate(over="ignore", under="ignore"):
                w = w * ev.weights
        self.weights = w

    def threshold(self, args: argparse.Namespace, ev: Any, **kw: Any) -> Any:
        """The THORS threshold of the file: ``thors_threshold`` of the scores with the costs as
        given (numbers or arrays) and ``decide_on``. O(n log n)."""
        from .batch import thors_threshold

        return thors_threshold(ev.scores, ev.labels, fn_cost=self.fn, fp_cost=self.fp, sample_weight=ev.weights,
                               class_prior=args.class_prior, decide_on=self.decide_on, **kw)


def _cost_name(col: str | None, value: float | None) -> str:
    """A cost as written in a rule: the column's name, or the number (exact)."""
    return col if col is not None else repr(float(value))  # type: ignore[arg-type]


def _decision(args: argparse.Namespace) -> dict[str, Any]:
    """How to apply the thresholds, for the release file and the reports: ``decide_on``, the score
    column, the costs (``{"column": name}`` or ``{"value": number}``), the clip of the
    probabilities (margin mode), the segment column and the rule in words (``apply``)."""
    from .margin import PROBA_CLIP

    def spec(col: str | None, value: float | None) -> dict[str, Any]:
        return {"column": col} if col is not None else {"value": float(value)}  # type: ignore[arg-type]

    s = args.score_col
    d: dict[str, Any] = {"decide_on": args.decide_on, "score_col": s, "fn_cost": spec(args.fn_cost_col, args.fn_cost),
                         "fp_cost": spec(args.fp_cost_col, args.fp_cost)}
    if args.decide_on == "margin":
        d["proba_clip"] = PROBA_CLIP
        fn, fp = _cost_name(args.fn_cost_col, args.fn_cost), _cost_name(args.fp_cost_col, args.fp_cost)
        k = -math.log2(PROBA_CLIP)
        clip = f"2**-{int(k)}" if k.is_integer() else repr(PROBA_CLIP)  # exact either way
        rule = f"flag iff logit({s}) + log({fn} / {fp}) > threshold, {s} clipped to [{clip}, 1 - {clip}]"
    else:
        rule = f"flag iff {s} > threshold"
    seg = getattr(args, "segment_col", None)
    if seg is not None:
        d["segment_col"] = seg
        rule += f", with the threshold of the event's segment ({seg}; the global one for a segment not listed)"
    d["apply"] = rule
    return d


def _shift(new: float, old: float) -> float:
    """``|new - old|``; infinite when exactly one of them is ``-inf``."""
    if new == old:
        return 0.0
    return abs(new - old) if math.isfinite(new) and math.isfinite(old) else math.inf


def _thr_text(t: float) -> str:
    return "-inf" if math.isinf(t) else repr(float(t))  # shortest exact: 0.99999999999 is not "1"


def _json_thr(t: float) -> float | str:
    return "-inf" if t == -math.inf else t


def _iso(seconds: float) -> str:
    """``seconds`` since the epoch as an ISO 8601 UTC date-time ending in ``Z``."""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat().replace("+00:00", "Z")


_IMPORTED = time.perf_counter()  # when this module was imported: the start, where the process's is unknown


def _wall_seconds() -> float:
    """Seconds since the process started (from ``/proc`` on Linux: interpreter start-up and
    imports included), else since this module was imported."""
    try:
        with open("/proc/self/stat") as f:
            after_name = f.read().rsplit(")", 1)[1].split()
        started = int(after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks since boot
        elapsed = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        elapsed = math.nan
    since_import = time.perf_counter() - _IMPORTED
    return elapsed if since_import <= elapsed < since_import + 3600 else since_import


def _num(x: float | None) -> str:
    """A cost for the trajectory CSV: exact when it is a whole number, else rounded to 12
    significant digits (float noise gone: ``853.1199999999999`` -> ``853.12``); ``None`` -> empty.

    >>> _num(853.1199999999999), _num(0.1 + 0.2), _num(1234567890123.0), _num(float("-inf")), _num(None)
    ('853.12', '0.3', '1234567890123.0', '-inf', '')
    """
    if x is None:
        return ""
    x = float(x)
    if not math.isfinite(x) or x.is_integer():
        return repr(x)
    return repr(float(f"{x:.12g}"))
