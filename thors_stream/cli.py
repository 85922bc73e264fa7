"""The ``thors`` command line (also ``python -m thors_stream``).

- ``thors demo``: the embedded default job (:mod:`thors_stream.demo`).
- ``thors fit DATA ...``: the periodic re-threshold job on a file of labelled scores.
- ``thors replay DATA ...``: stream a file through a windowed StreamingThors and
  write the threshold, cost and error rates after each event.

``DATA`` is a CSV or Parquet file, or ``-`` for standard input; ``--out -`` writes to
standard output. File rules (labels, times, limits) are those of :mod:`thors_stream.io`.

Deciding in money: ``--fn-cost-col``/``--fp-cost-col`` read each event's own costs (a
missed fraud costs its amount); every event then weighs its cost and the cost reported is the
money lost. ``--decide-on margin`` takes the score as a probability ``p`` and thresholds the
cost margin ``logit(p) + log(fn_cost / fp_cost)`` (:mod:`thors_stream.margin`; ``0`` is the
per-event Bayes rule), with per-event or scalar costs. The release file records the rule
(``decision``: the mode, the costs' columns or values, the rule in words).

Exit codes:

- 0: done (also when the reader of standard output closed it early, e.g. ``| head``);
- 2: bad input or usage (missing column, bad value on line N, bad option, unreadable or
  non-regular file, costs that would overflow...): one line on stderr, no traceback;
- 3 (``thors fit``): refused, the data do not support a threshold: a class is absent
  (e.g. a broken label join) or has fewer than ``--min-per-class`` events in the whole
  file (a small *segment* is not refused: it gets the global threshold);
- 4 (``thors fit --baseline``): refused, the new threshold moves further than
  ``--max-shift`` from the deployed one, or the decision rule changes (the score against
  the cost margin, or a margin with other costs: not a shift) (``--force`` to publish anyway);
- 130: interrupted (Ctrl-C);
- 1: an unexpected error, with its traceback (a bug: please report it).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import heapq
import json
import math
import os
import re
import sys
import time
from typing import Any

import numpy as np

from ._files import StagedOutputs
from ._validation import period_cutoff
from .costs import class_coefficients
from .result import DEFAULT_MIN_PER_CLASS

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_UNSUPPORTED = 3
EXIT_SHIFT = 4
MAX_N_TEST = 10**12
"""Largest ``--n-test``: the exact cost quantile takes O(sqrt(n_test)) time and memory."""
_MAX_TOTAL_COST = 1e300  # headroom below the float maximum for the running sums
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"\s*([-+0-9.eE]+|inf|nan)\s*([smhdw]?)\s*", re.IGNORECASE)


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be finite and > 0: {text!r}")
    return v


def _int_in(low: int, high: int | None = None) -> Any:
    """An argparse type: an integer in ``[low, high]``; ``1e6`` is accepted as 1000000."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                f = math.nan
            if not (math.isfinite(f) and f == int(f)):
                raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
            v = int(f)
        if v < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}: {text!r}")
        if high is not None and v > high:
            raise argparse.ArgumentTypeError(f"must be <= {high:,}: {text!r}")
        return v

    return parse


_positive_int = _int_in(1)
_nonneg_int = _int_in(0)


def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (v >= 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0: {text!r}")
    return v


def _confidence(text: str) -> float:
    v = _positive_float(text)
    if not v < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1): {text!r}")
    return v


def parse_duration(text: str) -> float:
    """Seconds in a duration: a number of seconds, or a number with a unit ``s``, ``m``
    (minutes), ``h``, ``d`` or ``w`` (any case). Must be finite and > 0.

    >>> [parse_duration(d) for d in ("30d", "12h", "90m", "45", "1.5s")]
    [2592000.0, 43200.0, 5400.0, 45.0, 1.5]
    """
    m = _DURATION.fullmatch(text)
    why = "use seconds or a number with a unit s, m, h, d or w, e.g. 30d, 12h, 90m"
    if m is None:
        raise ValueError(f"not a duration: {text!r} ({why})")
    try:
        v = float(m.group(1)) * _UNITS[m.group(2).lower()]
    except ValueError:
        raise ValueError(f"not a duration: {text!r} ({why})") from None
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"a duration must be finite and > 0: {text!r}")
    return v


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _version() -> str:
    """The installed distribution's version, else the package's ``__version__``."""
    from ._version import library_version

    return library_version()


class _MissingRequired(Exception):
    """argparse stopped at a missing required argument of a subcommand (``parser``): the whole
    list is worked out and reported at once (:func:`_report_missing`)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> Any:
        if self.prog in ("thors fit", "thors replay") and message.startswith(
                ("the following arguments are required", "one of the arguments")):
            raise _MissingRequired(self)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _missing_options(args: argparse.Namespace) -> list[str]:
    """Every required input of ``thors fit``/``replay`` that ``args`` lacks, in the order of the usage."""
    if args.command not in ("fit", "replay"):
        return []
    missing = ["DATA"] if args.data is None else []
    missing += [f"--{k.replace('_', '-')}" for k in ("score_col", "label_col") if getattr(args, k) is None]
    missing += [f"--{c}-cost (or --{c}-cost-col)" for c in ("fn", "fp")
                if getattr(args, f"{c}_cost") is None and getattr(args, f"{c}_cost_col") is None]
    if args.command == "replay":
        missing += ["--window or --period"] if args.window is None and args.period is None else []
        missing += ["--out"] if args.out is None else []
    return missing


def _missing_text(prog: str, missing: list[str]) -> str:
    """``thors fit: error: --score-col and --fn-cost (or --fn-cost-col) are required (see ...)``."""
    listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    return f"{prog}: error: {listed} {'is' if len(missing) == 1 else 'are'} required (see {prog} --help)"


def _report_missing(parser: argparse.ArgumentParser, sub: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` again with the subcommand's requirements lifted, and report every missing
    required input in one line (exit code 2); another usage error is reported as usual."""
    lifted: list[tuple[Any, str, Any]] = []
    for a in sub._actions:
        if a.required:
            lifted.append((a, "required", True))
            a.required = False
            if not a.option_strings:  # a positional: optional for this parse
                lifted.append((a, "nargs", a.nargs))
                a.nargs = "?"
    for g in sub._mutually_exclusive_groups:
        if g.required:
            lifted.append((g, "required", True))
            g.required = False
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    finally:
        for obj, attr, value in lifted:
            setattr(obj, attr, value)
    print(_missing_text(sub.prog, _missing_options(args) or ["an argument"]), file=sys.stderr)
    return EXIT_INPUT


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="CSV file with a header line or Parquet file (found by content; Parquet needs "
                                "pyarrow), or - for standard input")
    p.add_argument("--score-col", required=True,
                   help="column holding the classifier's score (a probability in [0, 1] with --decide-on margin)")
    p.add_argument("--label-col", required=True,
                   help="column holding the label: exactly 0, 1, true or false (any case); Parquet also boolean")
    p.add_argument("--weight-col", default=None, help="optional column of per-event weights (> 0)")
    p.add_argument("--fn-cost", type=_positive_float, default=None,
                   help="cost of a false negative (or a column of them: --fn-cost-col)")
    p.add_argument("--fp-cost", type=_positive_float, default=None,
                   help="cost of a false positive (or a column of them: --fp-cost-col)")
    p.add_argument("--fn-cost-col", default=None, metavar="COL",
                   help="per-event cost of missing a positive (e.g. its amount), > 0; replaces --fn-cost")
    p.add_argument("--fp-cost-col", default=None, metavar="COL",
                   help="per-event cost of flagging a negative (e.g. a fee), > 0; replaces --fp-cost")
    p.add_argument("--decide-on", choices=("score", "margin"), default="score",
                   help="score (default): flag iff score > threshold; margin: the score is a probability p and an "
                        "event is flagged iff its cost margin logit(p) + log(fn_cost / fp_cost) > threshold (0 is "
                        "the per-event Bayes rule; the cost is the money lost)")
    p.add_argument("--class-prior", type=_confidence, default=None, help="population share of positives")
    p.add_argument("--engine", choices=("auto", "python", "pyarrow"), default="auto",
                   help="CSV reader (same answers; pyarrow is faster)")


def build_parser() -> argparse.ArgumentParser:
    """The ``thors`` argument parser: subcommands ``demo``, ``fit`` and ``replay``, and ``--version``.

    >>> build_parser().parse_args(["fit", "v.csv", "--score-col", "s", "--label-col", "y",
    ...                            "--fn-cost", "5", "--fp-cost", "1"]).fn_cost
    5.0
    """
    p = _Parser(prog="thors", description="Exact, online cost-sensitive thresholds (THORS).",
                epilog="exit codes: 0 done, 2 bad input or usage, 3 fit refused: too few events of a class, "
                       "4 fit refused: threshold moved more than --max-shift (or the decision rule changed), "
                       "130 interrupted, "
                       "1 unexpected error (a bug)")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="river model on the Shuttle stream, THORS vs the 0.5 cut")
    d.add_argument("--fn-cost", type=_positive_float, default=100.0, help="cost of a missed anomaly (default 100)")
    d.add_argument("--fp-cost", type=_positive_float, default=1.0, help="cost of a false alarm (default 1)")
    d.add_argument("--window", type=_positive_int, default=5000, help="labelled events THORS keeps (default 5000)")
    d.add_argument("--limit", type=_positive_int, default=None, help="stop after this many events")
    d.add_argument("--every", type=_positive_int, default=5000, help="print a line every this many events")

    f = sub.add_parser("fit", help="the THORS threshold of a file of labelled scores",
                       epilog="exit codes: 0 done, 2 bad input or usage, 3 refused: a class absent or below "
                              "--min-per-class, 4 refused: a move larger than --max-shift from --baseline, or a change "
                              "of decision rule (--decide-on, the margin's costs) under --max-shift (without --force)")
    _data_args(f)
    f.add_argument("--min-per-class", type=_positive_int, default=DEFAULT_MIN_PER_CLASS,
                   help=f"refuse (exit 3) when a class has fewer events (default {DEFAULT_MIN_PER_CLASS}: below it "
                        "even an error-free class has a 95%% upper bound on its error rate above 0.2); "
                        "segments below it get the global threshold")
    f.add_argument("--segment-col", default=None, metavar="COL",
                   help="one threshold per value of this column (exact per segment)")
    f.add_argument("--pool-weight", type=_nonneg_float, default=None, metavar="LAMBDA",
                   help="with --segment-col: partial pooling, a segment's events at weight 1 plus all events at "
                        "weight LAMBDA (0: separate thresholds; large: the global one)")
    f.add_argument("--out", default=None, metavar="JSON",
                   help="write the release file (versioned JSON; schema thors_stream/schemas/release.schema.json), "
                        "- for standard output")
    f.add_argument("--baseline", default=None, metavar="JSON",
                   help="the deployed release file: report its cost on this data, the new cost and the saving")
    f.add_argument("--max-shift", type=_nonneg_float, default=None,
                   help="with --baseline: refuse (exit 4) a threshold (the global one or a segment's) moving by more "
                        "than this, and any change of decision rule (score against cost margin, or a margin with "
                        "other costs)")
    f.add_argument("--bootstrap", action="store_true",
                   help="with --baseline: a baseline file that does not exist yet means the first release (nothing "
                        "deployed: publish without a comparison); one that exists is compared as usual")
    f.add_argument("--force", action="store_true", help="publish even when the move exceeds --max-shift")
    f.add_argument("--confidence", type=_confidence, default=0.95, help="confidence of the bounds (default 0.95)")
    f.add_argument("--max-fpr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FPR <= ALPHA with probability --confidence")
    f.add_argument("--max-fnr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FNR <= ALPHA with probability --confidence")
    f.add_argument("--n-test", type=_int_in(0, MAX_N_TEST), default=None,
                   help=f"bound the cost of this many new events, at most {MAX_N_TEST:.0e} "
                        "(default: as many as the file has rows)")
    f.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    f.add_argument("--no-bounds", action="store_true",
                   help="skip the bounds (no scipy, a faster start); not with --out, whose release carries them")
    f.add_argument("--plot", default=None, metavar="PNG", help="save the cost curve (needs matplotlib)")

    r = sub.add_parser("replay", help="stream a file through a windowed StreamingThors")
    _data_args(r)
    win = r.add_mutually_exclusive_group(required=True)
    win.add_argument("--window", type=_positive_int, help="keep the last N labelled events")
    win.add_argument("--period", type=_duration, metavar="DURATION",
                     help="keep the events of the last DURATION: seconds or a number with a unit s, m, h, d, w "
                          "(30d, 12h, 90m); needs --time-col")
    r.add_argument("--time-col", default=None,
                   help="event time column: seconds, or ISO 8601 (a date-time without offset is UTC)")
    r.add_argument("--out", required=True, help="trajectory CSV to write, - for standard output")
    r.add_argument("--every", type=_positive_int, default=1, help="write a row every k events (default 1)")
    r.add_argument("--plot", default=None, metavar="PNG", help="save threshold and cost over time")
    r.add_argument("--jsonl", default=None, metavar="FILE",
                   help="monitoring log: one JSON object per written row (published threshold, its cost, FPR, FNR, "
                        "held counts, realised cost since publication, alerts); - for standard output")
    r.add_argument("--alert-jump", type=_nonneg_float, default=None, metavar="D",
                   help="alert when the published threshold moves by more than D")
    r.add_argument("--hysteresis", type=_nonneg_float, default=None, metavar="FRACTION",
                   help="publish a new threshold only when the published one costs more than the optimum by more "
                        "than FRACTION on the held events (checked at every written row)")
    r.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence of the realised-cost bound behind the cost alert, and of --max-fpr/--max-fnr "
                        "(default 0.95)")
    r.add_argument("--max-fpr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FPR <= ALPHA with probability --confidence (no threshold "
                        "while the window holds too few negatives: an empty row)")
    r.add_argument("--max-fnr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FNR <= ALPHA with probability --confidence")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is one only when stderr is a terminal and tqdm is installed)")
    from .cli_serve import add_serve_parser

    add_serve_parser(sub)  # thors serve: the threshold service (thors_stream.cli_serve)
    return p


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


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name the same existing file (``-`` is never a file)."""
    if a == "-" or b == "-":
        return False
    try:
        return os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _check_outputs(data: str, outputs: list[tuple[str, str | None]]) -> None:
    """Refuse an output path that is the input file (it would be overwritten), and two
    outputs that are one file (``x.csv`` and ``./x.csv``: the second would replace the first)."""
    seen: dict[str, str] = {}
    for option, path in outputs:
        if path is None or path == "-":
            continue
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


def _bounds_dict(b: Any) -> dict[str, Any]:
    """The bounds worth printing. Cost bounds are about unit-weight costs, so a weighted file gets rates only.

    ``cost_paid_upper`` bounds the cost paid on ``n_test`` new events (the exact quantile: the one
    to budget with), ``cost_paid_upper_bernstein`` is Bernstein's closed form of the same statement
    (never smaller), ``expected_cost_lower``/``expected_cost_upper`` the interval for the expected
    cost. ``cost_upper_exact``, ``cost_upper`` and ``cost_interval_*`` are the same numbers under
    their earlier names (kept for readers of earlier output)."""
    out: dict[str, Any] = {k: getattr(b, k) for k in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper")}
    if not b.weighted and b.n_test is not None:
        out["n_test"] = b.n_test
        out["cost_paid_upper"], out["cost_paid_upper_bernstein"] = b.cost_upper_exact, b.cost_upper
        out["expected_cost_lower"], out["expected_cost_upper"] = b.cost_interval.lower, b.cost_interval.upper
        out["cost_interval_lower"], out["cost_interval_upper"] = b.cost_interval.lower, b.cost_interval.upper
        out["cost_upper"], out["cost_upper_exact"] = b.cost_upper, b.cost_upper_exact
    return out


def _bounds(r: Any, confidence: float, n_test: int) -> Any:
    """``r.bounds(...)``, refusing (ValueError) costs so large that the cost bounds overflow."""
    too_big = ValueError(f"the costs are too large to bound the cost of {n_test:,} new events (overflow); "
                         "express the costs in larger units or lower --n-test")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            b = r.bounds(confidence=confidence, n_test=n_test)
    except (OverflowError, FloatingPointError):
        raise too_big from None
    values = _bounds_dict(b).values()
    if not all(math.isfinite(v) for v in values if isinstance(v, float)):
        raise too_big
    return b


class Refused(Exception):
    """``thors fit`` refuses to publish: one line on stderr and ``code`` as the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


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


def _money_text(args: argparse.Namespace) -> tuple[str, str]:
    """What a missed positive and a false alarm cost, in words (``amount``, ``5 each``)."""
    def one(col: str | None, value: float | None) -> str:
        return col if col is not None else f"{value:g} each"

    w = f", times {args.weight_col}" if args.weight_col is not None else ""
    return one(args.fn_cost_col, args.fn_cost) + w, one(args.fp_cost_col, args.fp_cost) + w


def _money(r: Any) -> dict[str, float]:
    """The money of a result whose weights are costs: lost (missed positives + false alarms) and at stake."""
    return {"lost": float(r.cost), "missed_positives": float(r.k1), "false_alarms": float(r.n0 - r.k0),
            "fn_at_stake": float(r.n1), "fp_at_stake": float(r.n0)}


def _shift(new: float, old: float) -> float:
    """``|new - old|``; infinite when exactly one of them is ``-inf``."""
    if new == old:
        return 0.0
    return abs(new - old) if math.isfinite(new) and math.isfinite(old) else math.inf


def _thr_text(t: float) -> str:
    return "-inf" if math.isinf(t) else repr(float(t))  # shortest exact: 0.99999999999 is not "1"


def cmd_fit(args: argparse.Namespace) -> int:
    """``thors fit``: read a file, print (or ``--json``) the threshold, its cost and bounds;
    refuse unsupported data (exit 3) or a too large move from ``--baseline`` (exit 4), or a
    change of decision rule from it (``--decide-on`` or the margin's costs) under ``--max-shift``;
    write the release file (``--out``). O(n log n) (times the segments with pooling)."""
    from .batch import cost_curve
    from .io import read_events
    from .release import make_release, read_release, release_entry

    if args.out == "-" and args.json:
        raise ValueError("--out - and --json both write to standard output; choose one")
    if args.pool_weight is not None and args.segment_col is None:
        raise ValueError("--pool-weight needs --segment-col")
    if args.max_shift is not None and args.baseline is None:
        raise ValueError("--max-shift needs --baseline (the deployed release file)")
    if args.bootstrap and args.baseline is None:
        raise ValueError("--bootstrap needs --baseline (the deployed release file, missing on the first night)")
    if args.no_bounds and args.out is not None:
        raise ValueError("--no-bounds cannot be combined with --out: a release file carries its thresholds' bounds")
    _check_cost_options(args)
    _check_outputs(args.data, [("--plot", args.plot), ("--out", args.out)])
    first_release = args.bootstrap and not os.path.lexists(args.baseline)
    baseline = read_release(args.baseline) if args.baseline is not None and not first_release else None
    t0 = time.perf_counter()
    ev = read_events(args.data, score_col=args.score_col, label_col=args.label_col, weight_col=args.weight_col,
                     engine=args.engine, fn_cost_col=args.fn_cost_col, fp_cost_col=args.fp_cost_col,
                     segment_col=args.segment_col, digest=args.out is not None, probability=args.decide_on == "margin")
    t1 = time.perf_counter()
    rule = _Rule(args, ev)
    _check_magnitudes_w(ev, rule.weights, rule.fn_cost, rule.fp_cost, args.class_prior, rule.money)
    np_mode = {}
    if args.max_fpr is not None or args.max_fnr is not None:
        np_mode = {"max_fpr": args.max_fpr, "max_fnr": args.max_fnr, "confidence": args.confidence}
    r = rule.threshold(args, ev, **np_mode)
    t2 = time.perf_counter()
    n_test = len(ev) if args.n_test is None else args.n_test
    bounds = None if args.no_bounds else _bounds(r, args.confidence, n_test)
    issue = r.support_issue(args.min_per_class)
    if issue is not None:
        raise Refused(f"refused: {issue} (--min-per-class {args.min_per_class}); nothing published", EXIT_UNSUPPORTED)
    plan = None
    if args.segment_col is not None:
        from .segments import segment_thresholds

        # on the rule's keys (scores or cost margins) with its weights: per-event costs and the margin compose
        plan = segment_thresholds(rule.keys, ev.labels, ev.segments, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                                  sample_weight=rule.weights, class_prior=args.class_prior,
                                  min_per_class=args.min_per_class, pool_weight=args.pool_weight)
    decision = _decision(args)
    base_info = None
    if baseline is not None:
        base_info = _compare_baseline(args, baseline, ev, rule, r, decision, plan)
    seg_entries = None  # each segment's release entry (threshold, cost, counts, rates, bounds) and source
    if plan is not None:
        seg_entries = {}
        for k, v in plan.results.items():
            e = _entry(args, v, None, release_entry)
            e["source"] = plan.sources[k]
            seg_entries[str(k)] = e
    t3 = time.perf_counter()
    # the plot goes to a temporary file renamed onto --plot once the release is written
    with StagedOutputs() as stage:
        if args.plot:
            from .plotting import plot_cost_curve

            thr, cost = cost_curve(rule.keys, ev.labels, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                                   sample_weight=rule.weights, class_prior=args.class_prior)
            plot_cost_curve(thr, cost, r, stage.path(args.plot), bounds=bounds)
        if args.out is not None:
            _write_release_out(args, ev, r, seg_entries, base_info, n_test, make_release, release_entry, decision)
    report = sys.stderr if args.out == "-" else sys.stdout
    if args.json:
        d = r.to_dict()
        d.update(rows=len(ev), parse_seconds=round(t1 - t0, 6), threshold_seconds=round(t2 - t1, 6),
                 bounds_seconds=round(t3 - t2, 6), total_seconds=round(_wall_seconds(), 6))
        d["decision"] = decision
        d["cost_unit"] = "money" if rule.money else "cost"
        if rule.money:
            d["money"] = _money(r)
        peak = _peak_rss_mb()
        if peak is not None:
            d["peak_rss_mb"] = peak
        if bounds is not None:
            d["bounds"] = {"confidence": args.confidence, **_bounds_dict(bounds)}
        if np_mode:
            d["constraint_notes"] = _np_notes(args, bounds)
        if base_info is not None:
            d["baseline"] = base_info
        if first_release:
            d["first_release"] = True
        if seg_entries is not None:
            d["segments"] = seg_entries
        print(json.dumps(d))
        return EXIT_OK
    thr_txt = "-inf (predict every event positive)" if math.isinf(r.threshold) else _thr_text(r.threshold)

    def say(line: str) -> None:
        print(line, file=report)

    say(f"rows          {len(ev):,} ({r.count1:,} positive, {r.count0:,} negative)")
    if rule.decide_on == "margin":
        say(f"threshold     {thr_txt}   (on the cost margin; 0 is the per-event Bayes rule)")
        say("decide on     the cost margin (money): " + decision["apply"].replace(" > threshold", " > the threshold"))
    else:
        say(f"threshold     {thr_txt}   (predict positive iff score > threshold)")
        say(f"decide on     the score: {decision['apply']}")
    if rule.money:
        fn_txt, fp_txt = _money_text(args)
        m = _money(r)
        say(f"money lost    {m['lost']:,.6g}   (missed positives {m['missed_positives']:,.6g} + false alarms "
            f"{m['false_alarms']:,.6g}; a missed positive costs {fn_txt}, a false alarm {fp_txt})")
        say(f"at stake      {m['fn_at_stake']:,.6g} on the positives (all missed), {m['fp_at_stake']:,.6g} on the "
            "negatives (all flagged)")
    else:
        say(f"cost          {r.cost:,.6g}   (FN cost {r.fn_cost:g}, FP cost {r.fp_cost:g})")
    if np_mode:
        caps = " and ".join(f"true {k[4:].upper()} <= {v:g}" for k, v in np_mode.items() if k != "confidence" and v)
        say(f"constraint    {caps}, with probability {args.confidence:.0%} (cheapest such threshold)")
        for note in _np_notes(args, bounds):
            say(f"note          {note}")
    if rule.money:  # the result's rates are shares of the money at stake; the bounds are on event rates
        say(f"FPR           {r.fpr:.6f}   FNR {r.fnr:.6f}   (shares of the money at stake)")
        fpr_ev = (r.count0 - r.count_k0) / r.count0 if r.count0 else 0.0
        fnr_ev = r.count_k1 / r.count1 if r.count1 else 0.0
        say(f"event rates   FPR {fpr_ev:.6f}   FNR {fnr_ev:.6f}   (shares of the events)")
    else:
        say(f"FPR           {r.fpr:.6f}   FNR {r.fnr:.6f}")
    if bounds is not None:
        c = f"{args.confidence:.0%}"
        say(f"FPR bounds    [{bounds.fpr_lower:.6f}, {bounds.fpr_upper:.6f}]   (each side {c}; valid for this "
            "data-chosen threshold)")
        say(f"FNR bounds    [{bounds.fnr_lower:.6f}, {bounds.fnr_upper:.6f}]")
        if bounds.weighted:
            say("              (weighted events or money: the bounds are on event rates; no cost bound for per-event "
                "costs)")
        else:
            ci = bounds.cost_interval
            say(f"{bounds.n_test:,} new events: expected cost in [{ci.lower:,.6g}, {ci.upper:,.6g}] ({c}), "
                f"cost paid <= {bounds.cost_upper_exact:,.6g} ({c})")
            say(f"              (budget with the cost paid, cost_paid_upper in --json; the expected cost, "
                f"expected_cost_lower/upper, is a mean; Bernstein's looser bound on the cost paid: "
                f"{bounds.cost_upper:,.6g})")
    if first_release:
        say(f"baseline      none yet: {args.baseline} does not exist (--bootstrap): this is the first release")
    if base_info is not None and base_info["changes"]:
        say(f"changes       {'; '.join(base_info['changes'])} (since the deployed release: they move thresholds)")
    if base_info is not None:
        what = "money lost" if rule.money else "costs"
        forced = "   (move larger than --max-shift, forced)" if base_info["forced"] else ""
        change = base_info.get("rule_change")
        if change is None:
            say(f"baseline      deployed threshold {_thr_text(_thr_value(base_info['threshold']))} {what} "
                f"{base_info['cost']:,.6g} on this data; new {r.cost:,.6g}; saving {base_info['saving']:,.6g}"
                + forced)
        else:
            forced = forced.replace("move larger than --max-shift", "rule change under --max-shift")
            say(f"baseline      the decision rule changes from {change['from']} to {change['to']}: not a shift "
                f"(deployed: {change['was']}, threshold {_thr_text(_thr_value(base_info['threshold']))}); "
                f"deployed rule {what} {base_info['cost']:,.6g} on this data; new {r.cost:,.6g}; "
                f"saving {base_info['saving']:,.6g}" + forced)
    if plan is not None:
        say(f"segments      {len(plan.results):,} (own threshold when each class has >= {args.min_per_class} "
            "events, else the global one)")
        moved = base_info.get("segments", {}) if base_info is not None else {}
        for k, v in plan.results.items():
            e = seg_entries[str(k)]
            b = e["bounds"]
            line = (f"  {str(k)[:30]:<30} {_thr_text(v.threshold):>16}  {plan.sources[k]:<7}  "
                    f"{'money lost' if rule.money else 'cost'} {v.cost:,.6g}  ({v.count1:,} pos, {v.count0:,} neg)  "
                    f"FPR <= {b['fpr_upper']:.4f}  FNR <= {b['fnr_upper']:.4f}")
            dep: Any = moved.get(str(k))
            if dep is not None:
                sh: Any = dep["shift"]
                line += f"  deployed {_thr_text(_thr_value(dep['threshold']))}" + (
                    "" if sh is None else f" (shift {sh if sh == 'inf' else f'{sh:.6g}'})")
            say(line)
    if args.out is not None and args.out != "-":
        say(f"release       written to {args.out}")
    peak = _peak_rss_mb()
    total = _wall_seconds()
    say(f"time          {total:.3f} s in all: start-up {max(total - (time.perf_counter() - t0), 0.0):.3f} s, "
        f"parse {t1 - t0:.3f} s, threshold {t2 - t1:.3f} s, bounds and segments {t3 - t2:.3f} s"
        + (f", peak memory {peak:,.0f} MB" if peak is not None else ""))
    return EXIT_OK


def _np_notes(args: argparse.Namespace, bounds: Any) -> list[str]:
    """One sentence per Neyman-Pearson cap whose reported upper bound is above the cap: why both
    hold (the cap's guarantee and the bounds rest on different statements)."""
    notes: list[str] = []
    if bounds is None:
        return notes
    for rate, cap, upper, where in (("FPR", args.max_fpr, bounds.fpr_upper, "the negatives' scores, at or below"),
                                    ("FNR", args.max_fnr, bounds.fnr_upper, "the positives' scores, above")):
        if cap is not None and upper > cap:
            notes.append(f"the {rate} upper bound {upper:.6f} is above the cap {cap:g}, yet the true {rate} is at "
                         f"most {cap:g} with probability {args.confidence:.0%}: the cap rests on a single order "
                         f"statistic (a rank of {where} the threshold, fixed in advance), the {rate} bounds on a band "
                         "that must hold at every threshold at once, which is wider")
    return notes


def _thr_value(v: Any) -> float:
    return -math.inf if v == "-inf" else float(v)


def _same_rule(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two decisions threshold the same quantity: both on the score, or both on the cost
    margin with the same costs (the margin's scale moves with the costs)."""
    if old["decide_on"] != new["decide_on"]:
        return False
    return bool(new["decide_on"] == "score" or (old["fn_cost"] == new["fn_cost"] and old["fp_cost"] == new["fp_cost"]))


def _baseline_keys(args: argparse.Namespace, old: dict[str, Any], ev: Any) -> np.ndarray:
    """What the deployed rule thresholds, on this file's events: the scores, or their cost margins
    with the deployed rule's costs (a cost column this run does not read is read for it)."""
    if old["decide_on"] == "score":
        return np.asarray(ev.scores)
    from .margin import cost_margins

    bad = ~((ev.scores >= 0.0) & (ev.scores <= 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"--baseline {args.baseline} decides on the cost margin of probabilities, but "
                         f"{args.score_col} is {ev.scores[i].item()!r} at data row {i + 1} (outside [0, 1]): the "
                         "deployed rule cannot be evaluated on this file")
    have = {c: a for c, a in ((args.fn_cost_col, ev.fn_costs), (args.fp_cost_col, ev.fp_costs)) if c is not None}
    need = list(dict.fromkeys(s["column"] for s in (old["fn_cost"], old["fp_cost"])
                              if "column" in s and s["column"] not in have))
    if need:
        if args.data == "-":
            raise ValueError(f"--baseline {args.baseline} decides with the cost column(s) {need}, which this run "
                             "does not read, and standard input cannot be read twice: give the data as a file")
        from .io import read_events

        extra = read_events(args.data, score_col=args.score_col, label_col=args.label_col, engine=args.engine,
                            fn_cost_col=need[0], fp_cost_col=need[1] if len(need) > 1 else None)
        have[need[0]] = extra.fn_costs
        if len(need) > 1:
            have[need[1]] = extra.fp_costs

    def cost(spec: dict[str, Any]) -> Any:
        return have[spec["column"]] if "column" in spec else spec["value"]

    return cost_margins(ev.scores, cost(old["fn_cost"]), cost(old["fp_cost"]))


def _costs_text(dec: dict[str, Any]) -> str:
    """A decision's costs in words: ``FN 10/FP 1``, ``FN amount/FP 3`` (a column by its name)."""
    def one(spec: dict[str, Any]) -> str:
        return str(spec["column"]) if "column" in spec else f"{spec['value']:g}"

    return f"FN {one(dec['fn_cost'])}/FP {one(dec['fp_cost'])}"


def _settings(dec: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    """What a run's thresholds depend on besides the data, in words, keyed by setting: the costs,
    the segments (and their pooling), the Neyman-Pearson constraint and the class prior."""
    seg = dec.get("segment_col", params.get("segment_col"))
    pool = params.get("pool_weight")
    caps = [f"true {k[4:].upper()} <= {params[k]:g}" for k in ("max_fpr", "max_fnr") if params.get(k) is not None]
    prior = params.get("class_prior")
    return {"costs": _costs_text(dec),
            "segments": "none" if seg is None else f"{seg}" + ("" if pool is None else f" (pooled, lambda {pool:g})"),
            "mode": "cost-optimal" if not caps else "Neyman-Pearson (" + " and ".join(caps) + ")",
            "class prior": "none" if prior is None else f"{prior:g}"}


def _changes(baseline: dict[str, Any], args: argparse.Namespace, decision: dict[str, Any]) -> list[str]:
    """The settings that differ from the deployed release's, each as ``costs changed from FN 10/FP 1
    to FN 1/FP 1`` (the decision rule itself, score or cost margin, is ``rule_change``'s)."""
    from .release import release_decision

    old = _settings(release_decision(baseline), baseline.get("parameters", {}))
    new = _settings(decision, {k: v for k, v in vars(args).items() if v is not None})
    return [f"{k} changed from {old[k]} to {new[k]}" for k in old if old[k] != new[k]]


def _compare_baseline(args: argparse.Namespace, baseline: dict[str, Any], ev: Any, rule: _Rule, r: Any,
                      decision: dict[str, Any], plan: Any = None) -> dict[str, Any]:
    """The ``baseline`` block: the deployed (global) rule's cost on this data under this run's
    costs, the new cost, the saving, the threshold's shift and, with segments, each segment's
    (against what the deployed release applies to the segment: its own threshold, else the
    global one), or (``rule_change``) that the decision rule changes, when the two thresholds
    are not on the same scale; ``changes`` lists the settings that differ from the deployed
    release's (costs, segments, Neyman-Pearson constraint, class prior), which explain a move.
    Refuses (exit 4) a shift of the global threshold or of any segment's beyond ``--max-shift``,
    and any rule change under ``--max-shift``, without ``--force``."""
    from .release import evaluate_threshold, release_decision, release_threshold

    old_rule = release_decision(baseline)
    old_thr = release_threshold(baseline)
    same = _same_rule(old_rule, decision)
    keys = rule.keys if same else _baseline_keys(args, old_rule, ev)
    old = evaluate_threshold(old_thr, keys, ev.labels, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                             sample_weight=rule.weights, class_prior=args.class_prior)
    shift = _shift(r.threshold, old_thr) if same else None
    changes = _changes(baseline, args, decision)
    info: dict[str, Any] = {
        "path": args.baseline, "threshold": "-inf" if math.isinf(old_thr) else old_thr, "cost": old.cost,
        "new_cost": r.cost, "saving": old.cost - r.cost,
        "shift": None if shift is None else "inf" if math.isinf(shift) else shift, "forced": False,
        "decide_on": old_rule["decide_on"],
        "rule_change": None if same else {"from": old_rule["decide_on"], "to": decision["decide_on"],
                                          "was": old_rule["apply"], "now": decision["apply"]},
        "changes": changes}
    moves: list[tuple[float, str]] = []  # (shift, "name old -> new (shift)") of every threshold compared
    if shift is not None:
        moves.append((shift, f"global {_thr_text(old_thr)} -> {_thr_text(r.threshold)}"))
    if plan is not None:
        listed = baseline.get("segments") or {}
        segs: dict[str, Any] = {}
        for k, v in plan.results.items():
            name = str(k)
            was = release_threshold(baseline, name)
            sh = _shift(v.threshold, was) if same else None
            segs[name] = {"threshold": _json_thr(was), "deployed": "segment" if name in listed else "global",
                          "new_threshold": _json_thr(v.threshold),
                          "shift": None if sh is None else "inf" if math.isinf(sh) else sh}
            if sh is not None:
                moves.append((sh, f"segment {name[:30]} {_thr_text(was)} -> {_thr_text(v.threshold)}"))
        info["segments"] = segs
    if args.max_shift is None:
        return info
    what = "money lost" if rule.money else "cost"
    why = f" ({'; '.join(changes)} since the deployed release)" if changes else ""
    if shift is None:
        if not args.force:
            raise Refused(f"refused: the decision rule changes from {old_rule['decide_on']} ({old_rule['apply']}) to "
                          f"{decision['decide_on']} ({decision['apply']}){why}: thresholds on different scales are "
                          f"not a shift --max-shift {args.max_shift:g} can bound; {what} {old.cost:,.6g} -> "
                          f"{r.cost:,.6g} on this data; use --force to publish it", EXIT_SHIFT)
        info["forced"] = True
        return info
    over = sorted((m for m in moves if m[0] > args.max_shift), key=lambda m: -m[0])
    if over:
        if not args.force:
            def by(x: float) -> str:
                return "an infinite amount" if math.isinf(x) else f"{x:.6g}"

            listed_moves = "; ".join(f"{t} (by {by(x)})" for x, t in over[:3])
            more = f" and {len(over) - 3} more" if len(over) > 3 else ""
            if len(moves) == 1:  # the global threshold alone: as it has always been said
                head = (f"the threshold would move by {by(shift)} (from {_thr_text(old_thr)} to "
                        f"{_thr_text(r.threshold)})")
            else:
                head = f"{len(over)} of {len(moves)} thresholds would move: {listed_moves}{more}"
            raise Refused(f"refused: {head}, more than --max-shift {args.max_shift:g}{why}; {what} "
                          f"{old.cost:,.6g} -> {r.cost:,.6g}; use --force to publish it", EXIT_SHIFT)
        info["forced"] = True
    return info


def _entry(args: argparse.Namespace, res: Any, n: int | None, release_entry: Any) -> dict[str, Any]:
    """A release entry for ``res`` (the cost bound of ``n`` events when it can be computed)."""
    try:
        made: dict[str, Any] = release_entry(res, min_per_class=args.min_per_class, confidence=args.confidence,
                                             n_test=n)
    except (OverflowError, FloatingPointError):
        made = release_entry(res, min_per_class=args.min_per_class, confidence=args.confidence, n_test=None)
    return made


def _write_release_out(args: argparse.Namespace, ev: Any, r: Any, segments: dict[str, Any] | None, base_info: Any,
                       n_test: int, make_release: Any, release_entry: Any, decision: dict[str, Any]) -> None:
    """Build the release document (``segments``: the entries already made) and write it to
    ``--out`` (atomically) or standard output."""
    from .release import dumps_release, write_release

    params = {k: v for k, v in sorted(vars(args).items())
              if k not in ("command", "data", "json", "plot", "out", "force") and v is not None}
    params["n_test"] = n_test
    doc = make_release(_entry(args, r, n_test, release_entry), segments=segments,
                       input_info={"path": args.data, "sha256": ev.sha256, "rows": len(ev)},
                       parameters=params, baseline=base_info, decision=decision)
    if args.out == "-":
        sys.stdout.write(dumps_release(doc))
    else:
        write_release(doc, args.out)


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


def _peak_rss_mb() -> float | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _progress(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr, only when enabled, stderr is a terminal and tqdm is installed."""
    isatty = getattr(sys.stderr, "isatty", None)
    if not enabled or isatty is None or not isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="ev", unit_scale=True, file=sys.stderr)


class HeldRates:
    """Empirical FPR and FNR, at a given threshold, of the events a windowed StreamingThors holds.

    Mirrors which events the window holds, in file order: with ``window=N`` the last N
    events; with ``period=P`` (seconds) the events whose time is > (newest time so far) - P,
    which is exactly what :class:`~thors_stream.StreamingThors` keeps, late events included.
    Keeps the held weight per class and per distinct score (ranks of the file's scores), in
    blocks of about sqrt(m) ranks, and the weight below a reference rank, so adding or
    removing an event is O(1) and a query O(min(|rank move|, sqrt(m))) plus a binary search
    when the threshold moved.
    Rates follow :class:`~thors_stream.ThresholdResult`: ``fpr = (n0 - k0) / n0`` and
    ``fnr = k1 / n1`` on the sample weights (0.0 for an absent class). With non-integer
    weights the sums carry rounding errors of order ``eps`` times the weights added.
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, *,
                 window: int | None = None, period: float | None = None, times: np.ndarray | None = None) -> None:
        if (window is None) == (period is None) or (period is not None and times is None):
            raise ValueError("give window, or period with times")
        self._keys, inv = np.unique(scores, return_inverse=True)
        m = max(len(self._keys), 1)
        self._bs = max(1, math.isqrt(m))
        self._rank: list[int] = inv.reshape(-1).tolist()
        self._lab: list[int] = labels.astype(np.int64).tolist()
        self._wt: list[float] | None = weights.tolist() if weights is not None else None
        self._t: list[float] | None = times.tolist() if times is not None else None
        self._elem = [[0.0] * m, [0.0] * m]
        self._blk = [[0.0] * (m // self._bs + 1), [0.0] * (m // self._bs + 1)]
        self._thr = -math.inf  # the threshold of self._ref
        self._tot = [0.0, 0.0]
        self._cnt = [0, 0]
        self._k = [0.0, 0.0]  # held weight per class with rank < self._ref
        self._ref = 0
        self._window, self._period = window, period
        self._now = -math.inf
        self._heap: list[tuple[float, int]] = []

    @property
    def held(self) -> int:
        """Number of events held."""
        return self._cnt[0] + self._cnt[1]

    def _put(self, i: int, sign: int) -> None:
        r, c = self._rank[i], self._lab[i]
        w = float(sign) if self._wt is None else sign * self._wt[i]
        self._elem[c][r] += w
        self._blk[c][r // self._bs] += w
        self._cnt[c] += sign
        if self._cnt[c] == 0:
            self._tot[c] = self._k[c] = 0.0
            return
        self._tot[c] += w
        if r < self._ref:
            self._k[c] += w

    def add(self, i: int) -> None:
        """The ``i``-th event of the file arrives (events arrive in file order); expire what leaves."""
        if self._period is None:
            self._put(i, 1)
            if i >= self._window:  # type: ignore[operator]
                self._put(i - self._window, -1)  # type: ignore[operator]
            return
        t = self._t[i]  # type: ignore[index]
        if t > self._now:
            self._now = t
        cutoff = period_cutoff(self._now, self._period)
        heap = self._heap
        if t > cutoff:
            self._put(i, 1)
            heapq.heappush(heap, (t, i))
        while heap and heap[0][0] <= cutoff:
            self._put(heapq.heappop(heap)[1], -1)

    def _range(self, c: int, lo: int, hi: int) -> float:
        """Held weight of class ``c`` with rank in ``[lo, hi)``."""
        bs, elem = self._bs, self._elem[c]
        if hi - lo <= 2 * bs:
            return sum(elem[lo:hi])
        b_lo, b_hi = -(-lo // bs), hi // bs
        return sum(elem[lo:b_lo * bs]) + sum(self._blk[c][b_lo:b_hi]) + sum(elem[b_hi * bs:hi])

    def rates(self, threshold: float) -> tuple[float, float]:
        """``(fpr, fnr)`` of the held events when predicting positive iff ``score > threshold``."""
        if threshold != self._thr:
            r = 0 if threshold == -math.inf else int(np.searchsorted(self._keys, threshold, side="right"))
            self._move(r)
            self._thr = threshold
        n0, n1 = self._tot
        fpr = min(max((n0 - self._k[0]) / n0, 0.0), 1.0) if self._cnt[0] and n0 > 0 else 0.0
        fnr = min(max(self._k[1] / n1, 0.0), 1.0) if self._cnt[1] and n1 > 0 else 0.0
        return fpr, fnr

    def _move(self, r: int) -> None:
        """Move the reference rank to ``r``, updating the held weight below it."""
        if r != self._ref:
            lo, hi = min(r, self._ref), max(r, self._ref)
            sign = 1.0 if r > self._ref else -1.0
            for c in (0, 1):
                if self._cnt[c]:
                    self._k[c] += sign * self._range(c, lo, hi)
            self._ref = r


class _Monitor:
    """The ``--jsonl`` monitoring log of ``thors replay``: the published threshold (with
    ``--hysteresis``, replaced only when it costs more than the optimum by that fraction on
    the held events), its cost and rates on the held events, the held counts, the realised
    cost of the events seen since it was published (each decided with it before being
    learned, unit weights: ``fn_cost * #FN + fp_cost * #FP``) and the alerts:

    * ``threshold_jump``: the published threshold moved by more than ``--alert-jump``;
    * ``cost_over_bound``: the realised cost since publication exceeds the bound that came
      with the threshold (``cost_upper_exact`` of ``result.bounds(confidence, n_test=events
      since publication)`` for the window it was chosen from; see :mod:`thors_stream.bounds`).
    """

    def __init__(self, args: argparse.Namespace, held: HeldRates, dates: bool, path: str, rule: _Rule) -> None:
        # path: where the log is written ("-": standard output; else a staged file of --jsonl)
        self.args, self.held, self.dates, self.rule = args, held, dates, rule
        self.f = sys.stdout if path == "-" else open(path, "w")  # closed in close()
        self.pub: float | None = None
        self.pub_result: Any = None
        self.pub_check: Any = None  # RealisedCostCheck of the published result, made when first needed
        self.pub_at = 0  # the event at which the published threshold was published
        self.over = False  # its realised cost went over its bound (the alert is raised once)
        self.pub_cost: float | None = None  # its cost on the held events at the last row
        self.since = 0
        self.fn = self.fp = 0.0
        self.n_alerts = 0

    def see(self, key: float, label: bool, money: float) -> None:
        """An event arrives: decide it with the published threshold (before it is learned).
        ``key`` is its score or cost margin, ``money`` what an error on it costs (its weight,
        when the costs are money; else unused: errors are counted)."""
        if self.pub is None:
            return
        self.since += 1
        flagged = key > self.pub
        if label and not flagged:
            self.fn += money if self.rule.money else 1
        elif not label and flagged:
            self.fp += money if self.rule.money else 1

    def _held_cost(self, thr: float) -> tuple[float, float, float]:
        fpr, fnr = self.held.rates(thr)
        n0, n1 = self.held._tot
        if self.args.class_prior is None:
            a, b = self.rule.fn_cost, self.rule.fp_cost
        else:
            a, b = class_coefficients(self.rule.fn_cost, self.rule.fp_cost, n0, n1, self.args.class_prior)
        return a * fnr * n1 + b * fpr * n0, fpr, fnr

    def row(self, event: int, t: float | None, st: Any, thr: float | None, cost: float | None) -> None:
        args = self.args
        if thr is None or cost is None:  # nothing held (only late events so far) or too few for --max-fpr/fnr
            rec0: dict[str, Any] = {"event": event, "decide_on": self.rule.decide_on, "threshold": None,
                                    "held": self.held.held, "alerts": []}
            self.f.write(json.dumps(rec0) + "\n")
            return
        alerts: list[dict[str, Any]] = []
        realised = self.rule.fn_cost * self.fn + self.rule.fp_cost * self.fp
        # money has no distribution-free bound (the next events' amounts are unknown): no cost alert then
        if self.pub_result is not None and self.since and realised > 0 and not self.rule.money and not self.over:
            if self.pub_check is None:
                from .bounds import RealisedCostCheck

                self.pub_check = RealisedCostCheck(self.pub_result, args.confidence)
            # exactly realised > result.bounds(confidence, n_test=since).cost_upper_exact, amortised O(1)
            bound = self.pub_check.exceeds(self.since, realised)
            if bound is not None:
                self.over = True
                alerts.append({"type": "cost_over_bound", "realised_cost": realised, "bound": bound,
                               "events": self.since, "confidence": args.confidence})
        publish = self.pub is None or args.hysteresis is None
        if not publish and thr != self.pub and self.pub is not None:
            pub_cost = self._held_cost(self.pub)[0]
            publish = pub_cost > (1.0 + args.hysteresis) * cost
        since = self.since
        if publish and thr != self.pub:
            if self.pub is not None and args.alert_jump is not None:
                jump = _shift(thr, self.pub)
                if jump > args.alert_jump:
                    alerts.append({"type": "threshold_jump", "from": _json_thr(self.pub), "to": _json_thr(thr),
                                   "jump": "inf" if math.isinf(jump) else jump})
            self.pub, self.pub_result, self.pub_check, self.pub_at, self.over = thr, st.result(), None, event, False
            self.since = 0
            self.fn = self.fp = 0.0
        assert self.pub is not None  # published above when nothing was
        pub_cost, fpr, fnr = self._held_cost(self.pub)
        self.pub_cost = pub_cost
        tv = None if t is None else _iso(t) if self.dates else float(t)
        c0, c1 = self.held._cnt
        vals = (_round12(pub_cost), round(fpr, 12), round(fnr, 12), _round12(cost), _round12(realised))
        if alerts or not all(map(math.isfinite, vals)) or math.inf in (thr, self.pub):  # the general, strict path
            rec: dict[str, Any] = {"event": event, "decide_on": self.rule.decide_on}
            if tv is not None:
                rec["time"] = tv
            rec.update(threshold=_json_thr(self.pub), cost=vals[0], fpr=vals[1], fnr=vals[2],
                       optimal_threshold=_json_thr(thr), optimal_cost=vals[3], held=c0 + c1, held_pos=c1,
                       held_neg=c0, published_at=self.pub_at, events_since_publish=since, realised_cost=vals[4],
                       alerts=alerts)
            self.n_alerts += len(alerts)
            self.f.write(json.dumps(rec, allow_nan=False) + "\n")
            return
        # the same line as json.dumps of that record, formatted directly (a row costs a few microseconds)
        r = float.__repr__
        when = "" if tv is None else f', "time": "{tv}"' if isinstance(tv, str) else f', "time": {r(tv)}'
        self.f.write(f'{{"event": {event}, "decide_on": "{self.rule.decide_on}"{when}, '
                     f'"threshold": {_thr_json_text(self.pub)}, "cost": {r(vals[0])}, "fpr": {r(vals[1])}, '
                     f'"fnr": {r(vals[2])}, "optimal_threshold": {_thr_json_text(thr)}, '
                     f'"optimal_cost": {r(vals[3])}, "held": {c0 + c1}, "held_pos": {c1}, "held_neg": {c0}, '
                     f'"published_at": {self.pub_at}, "events_since_publish": {since}, '
                     f'"realised_cost": {r(vals[4])}, "alerts": []}}\n')

    def close(self) -> None:
        self.f.flush()
        if self.f is not sys.stdout:
            self.f.close()

    def report(self) -> None:
        """Say how many alerts the log holds (once the replay has succeeded)."""
        if self.n_alerts:
            print(f"{self.n_alerts:,} alert(s) written to {self.args.jsonl}", file=sys.stderr)


def _json_thr(t: float) -> float | str:
    return "-inf" if t == -math.inf else t


def _thr_json_text(t: float) -> str:
    """``json.dumps(_json_thr(t))`` for a threshold (finite or ``-inf``)."""
    return '"-inf"' if t == -math.inf else float.__repr__(float(t))


def _round12(x: float) -> float:
    """``float(_num(x))``: ``x`` rounded to 12 significant digits unless whole or not finite.

    >>> _round12(853.1199999999999), _round12(3.0), _round12(0.1 + 0.2)
    (853.12, 3.0, 0.3)
    """
    x = float(x)
    if not math.isfinite(x) or x.is_integer():
        return x
    return float(f"{x:.12g}")


def _iso(seconds: float) -> str:
    """``seconds`` since the epoch as an ISO 8601 UTC date-time ending in ``Z``."""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _plot_over_time(x: np.ndarray, threshold: np.ndarray, cost: np.ndarray, path: str, *, dates: bool,
                    title: str) -> None:
    """Save a PNG of the threshold and the windowed cost against time (UTC dates or seconds). O(n)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plotting needs matplotlib; install it with: pip install 'thors_stream[plot]'") from None
    fig = Figure(figsize=(8, 5))
    a1, a2 = fig.subplots(2, 1, sharex=True)
    xs: Any = (np.round(x * 1e6).astype(np.int64).astype("datetime64[us]")) if dates else x
    a1.plot(xs, np.where(np.isfinite(threshold), threshold, np.nan), lw=1)
    a1.set_ylabel("threshold")
    a1.set_title(title)
    a2.plot(xs, cost, lw=1, color="C1")
    a2.set_ylabel("cost in window")
    a2.set_xlabel("time (UTC), end of the window" if dates else "time (seconds), end of the window")
    if dates:
        fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cmd_replay(args: argparse.Namespace) -> int:
    """``thors replay``: stream a file through a windowed StreamingThors, write the trajectory.

    Columns: ``event`` (1-based), ``time`` (with ``--time-col``: the event's time, ISO 8601
    UTC when the file had date-times, else seconds), ``threshold``, ``cost``, ``fpr``, ``fnr``
    (empirical, of the held events at the threshold) and ``held``. With ``--jsonl`` also the
    monitoring log (:class:`_Monitor`: published threshold, alerts, hysteresis). O(n log n).
    """
    if args.period is not None and args.time_col is None:
        raise ValueError("--period needs --time-col (the event time)")
    _check_outputs(args.data, [("--out", args.out), ("--plot", args.plot), ("--jsonl", args.jsonl)])
    if args.jsonl is not None and args.jsonl == args.out:
        raise ValueError("--jsonl and --out must be different files")
    if (args.hysteresis is not None or args.alert_jump is not None) and args.jsonl is None:
        raise ValueError("--hysteresis and --alert-jump need --jsonl (where the published thresholds and alerts go)")
    _check_cost_options(args)
    # every output goes to a temporary file renamed onto it only once the replay has succeeded
    with StagedOutputs() as stage:
        return _replay(args, stage)


def _replay(args: argparse.Namespace, stage: StagedOutputs) -> int:
    """The work of :func:`cmd_replay`, its files written through ``stage``."""
    from .io import read_events
    from .stream import StreamingThors

    to_stdout = args.out == "-"
    out_path = args.out if to_stdout else stage.path(args.out)
    jsonl_path = args.jsonl if args.jsonl in (None, "-") else stage.path(args.jsonl)
    plot_path = stage.path(args.plot) if args.plot else None
    monitor = args.jsonl is not None or args.hysteresis is not None or args.alert_jump is not None
    ev = read_events(args.data, score_col=args.score_col, label_col=args.label_col, weight_col=args.weight_col,
                     time_col=args.time_col, engine=args.engine, fn_cost_col=args.fn_cost_col,
                     fp_cost_col=args.fp_cost_col, probability=args.decide_on == "margin")
    rule = _Rule(args, ev)  # the stream learns the rule's keys (scores or cost margins) with its weights
    _check_magnitudes_w(ev, rule.weights, rule.fn_cost, rule.fp_cost, args.class_prior, rule.money)
    st = StreamingThors(fn_cost=rule.fn_cost, fp_cost=rule.fp_cost, window=args.window, period=args.period,
                        class_prior=args.class_prior, max_fpr=args.max_fpr, max_fnr=args.max_fnr,
                        confidence=args.confidence)
    held = HeldRates(rule.keys, ev.labels, rule.weights, window=args.window, period=args.period, times=ev.times)
    n = len(ev)
    s, y = rule.keys.tolist(), ev.labels.tolist()
    w = rule.weights.tolist() if rule.weights is not None else [1.0] * n
    t = ev.times.tolist() if ev.times is not None else None
    show_time = _iso if ev.datetimes else repr
    every = args.every
    xs, thrs, costs, pubs, pub_costs = [], [], [], [], []
    now = -math.inf
    from .neyman_pearson import NPInfeasibleError
    f = sys.stdout if to_stdout else open(out_path, "w", newline="")  # closed below
    mon = _Monitor(args, held, ev.datetimes, jsonl_path, rule) if monitor else None
    bar = _progress(n, not args.no_progress)
    t0 = time.perf_counter()
    try:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["event", *(["time"] if t is not None else []), "threshold", "cost", "fpr", "fnr", "held"])
        for i in range(n):
            if mon is not None:
                mon.see(s[i], y[i], w[i])
            if t is None:
                st.update(s[i], y[i], w[i])
            else:
                st.update(s[i], y[i], w[i], t=t[i])
                if t[i] > now:
                    now = t[i]
            held.add(i)
            if (i + 1) % every == 0 or i == n - 1:
                try:
                    thr, c = st.get(), st.cost
                except NPInfeasibleError:  # too few events of a constrained class held: no threshold yet
                    thr = c = None
                k = len(st)
                if held.held != k:  # pragma: no cover - the mirror is tested against the library
                    raise RuntimeError(f"internal error: {held.held} events mirrored, {k} held")
                fpr, fnr = held.rates(thr) if thr is not None else (math.nan, math.nan)
                row = [i + 1, repr(thr), _num(c), repr(round(fpr, 12)), repr(round(fnr, 12)), k]
                if t is not None:
                    row.insert(1, show_time(t[i]))
                out.writerow(row)
                if mon is not None:
                    mon.row(i + 1, None if t is None else t[i], st, thr, c)
                    pubs.append(mon.pub)
                    pub_costs.append(mon.pub_cost)
                xs.append(i + 1 if t is None else now)
                thrs.append(thr)
                costs.append(c)
            if bar is not None and (i + 1) % 1000 == 0:
                bar.update(1000)
        if bar is not None:
            bar.update(n % 1000)
        f.flush()
    finally:
        if bar is not None:
            bar.close()
        if not to_stdout:
            f.close()
        if mon is not None:
            mon.close()
    secs = time.perf_counter() - t0
    published = args.hysteresis is not None  # the published threshold differs from the optimum: show it
    if plot_path is not None:
        title = f"replay of {'standard input' if args.data == '-' else args.data}"
        if published:
            title += " (published threshold)"
        y_thr = np.array(pubs if published else thrs, dtype=float)
        y_cost = np.array(pub_costs if published else costs, dtype=float)
        if t is None:
            from .plotting import plot_trajectory

            plot_trajectory(np.array(xs), y_thr, y_cost, plot_path, title=title)
        else:
            _plot_over_time(np.array(xs, dtype=float), y_thr, y_cost, plot_path, dates=ev.datetimes, title=title)
    where = "standard output" if to_stdout else args.out
    if rule.decide_on == "margin":
        how = f"on the cost margin: {_decision(args)['apply']}; money lost on the held events"
    else:
        how = "money lost on the held events" if rule.money else "cost"
    final, final_cost = thrs[-1], costs[-1]
    if published and mon is not None:
        final_txt = (f"final published threshold {mon.pub!r} ({how} {_num(mon.pub_cost)}; the optimum {final!r}, "
                     f"{_num(final_cost)})")
    else:
        final_txt = f"final threshold {final!r} ({how} {_num(final_cost)})"
    print(f"replayed {n:,} events in {secs:.2f} s ({_wall_seconds():.2f} s in all, with start-up and reading); "
          f"{final_txt}; trajectory written to {where}", file=sys.stderr)
    if mon is not None:
        mon.report()
    return EXIT_OK


def _error_text(exc: BaseException) -> str:
    """One line for an error: OS errors as ``path: reason``."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _MissingRequired as exc:  # every missing required input in one line
        return _report_missing(parser, exc.parser, argv)
    except SystemExit as exc:  # usage error (2), --help or --version (0): return the code, do not exit
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    missing = _missing_options(args)  # (the costs: a number or a column, which argparse cannot require)
    if missing:
        print(_missing_text(f"thors {args.command}", missing), file=sys.stderr)
        return EXIT_INPUT
    try:
        if args.command == "demo":
            from .demo import run_demo

            run_demo(fn_cost=args.fn_cost, fp_cost=args.fp_cost, window=args.window, limit=args.limit,
                     every=args.every)
            code = EXIT_OK
        elif args.command == "fit":
            code = cmd_fit(args)
        elif args.command == "serve":
            from .cli_serve import run_serve

            code = run_serve(args)
        else:
            code = cmd_replay(args)
        sys.stdout.flush()  # a closed pipe shows here, inside main, not at interpreter exit
        return code
    except BrokenPipeError:
        raise
    except Refused as exc:
        print(f"thors {args.command}: {exc}", file=sys.stderr)
        return exc.code
    except (ValueError, ImportError, OSError) as exc:  # InputError is a ValueError
        print(f"thors {args.command}: error: {_error_text(exc)}", file=sys.stderr)
        return EXIT_INPUT


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (e.g. captured in tests)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the ``thors`` command line; returns the exit code (see the module docstring).

    Bad input is one line on stderr and exit code 2, no traceback. When standard output
    is closed early (``thors ... --out - | head``) the command stops quietly with code 0.

    >>> main(["fit", "/nonexistent.csv", "--score-col", "s", "--label-col", "y", "--fn-cost", "1",
    ...       "--fp-cost", "1"])
    2
    """
    try:
        return _run(argv)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        print("thors: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
