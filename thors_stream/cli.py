"""The ``thors`` command line.

``thors demo`` runs the embedded default job (:mod:`thors_stream.demo`).
"""

from __future__ import annotations

import argparse
import sys


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be finite and > 0: {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="thors", description="Exact, online cost-sensitive thresholds (THORS).")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="river model on the Shuttle stream, THORS vs the 0.5 cut")
    d.add_argument("--fn-cost", type=_positive_float, default=100.0, help="cost of a missed anomaly (default 100)")
    d.add_argument("--fp-cost", type=_positive_float, default=1.0, help="cost of a false alarm (default 1)")
    d.add_argument("--window", type=_positive_int, default=5000, help="labelled events THORS keeps (default 5000)")
    d.add_argument("--limit", type=_positive_int, default=None, help="stop after this many events")
    d.add_argument("--every", type=_positive_int, default=5000, help="print a line every this many events")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(fn_cost=args.fn_cost, fp_cost=args.fp_cost, window=args.window, limit=args.limit, every=args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
