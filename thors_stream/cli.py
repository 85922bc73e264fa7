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
import math
import os
import re
import signal
import sys
import threading
from typing import Any

# the commands, each in its own module (imported here: they load numpy only, their heavy
# dependencies on first use): what they share in cli_common, ``thors fit`` in cli_fit (and
# its comparison with the deployed release in cli_baseline), ``thors replay`` in cli_replay
# (and its monitoring log in cli_monitor), ``thors serve`` in cli_serve (imported when run)
from .cli_common import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_SHIFT, EXIT_UNSUPPORTED, Refused
from .cli_fit import cmd_fit
from .cli_monitor import HeldRates
from .cli_replay import _progress as _progress
from .cli_replay import cmd_replay
from .result import DEFAULT_MIN_PER_CLASS

__all__ = [
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SHIFT",
    "EXIT_UNSUPPORTED",
    "MAX_N_TEST",
    "HeldRates",
    "Refused",
    "build_parser",
    "cmd_fit",
    "cmd_replay",
    "main",
    "parse_duration",
]

MAX_N_TEST = 10**12
"""Largest ``--n-test``: the exact cost quantile takes O(sqrt(n_test)) time and memory."""
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
    r.add_argument("--segment-col", default=None, metavar="COL",
                   help="one threshold per value of this column, each segment over its own window (one row per "
                        "segment seen so far at every written row; no --jsonl, --plot, --hysteresis, --alert-jump)")
    r.add_argument("--min-per-class", type=_positive_int, default=None,
                   help=f"with --segment-col: a segment whose window holds fewer events of a class decides with the "
                        f"global threshold (default {DEFAULT_MIN_PER_CLASS})")
    r.add_argument("--pool-weight", type=_nonneg_float, default=None, metavar="LAMBDA",
                   help="with --segment-col: partial pooling, a segment's held events at weight 1 plus all held "
                        "events at weight LAMBDA")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is one only when stderr is a terminal and tqdm is installed)")
    from .cli_serve import add_serve_parser

    add_serve_parser(sub)  # thors serve: the threshold service (thors_stream.cli_serve)
    return p


def _error_text(exc: BaseException) -> str:
    """One line for an error: OS errors as ``path: reason``."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _Stopped(BaseException):
    """SIGTERM or SIGHUP (a ``timeout``, a scheduler's stop, a closed terminal) while a command
    runs: raised like a KeyboardInterrupt, so the staged outputs are removed on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped(signum)


def _catch_stops() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into :class:`_Stopped` where their handler is the default one (main
    thread only); returns the handlers replaced, for :func:`_restore`."""
    old: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return old
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
            old[sig] = signal.signal(sig, _stop)
    return old


def _restore(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


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
    stops = _catch_stops() if args.command != "serve" else {}  # (the service stops gracefully on its own)
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
    except _Stopped as exc:
        print(f"thors: stopped by {signal.Signals(exc.signum).name}", file=sys.stderr)
        return 128 + exc.signum
    finally:
        _restore(stops)


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
