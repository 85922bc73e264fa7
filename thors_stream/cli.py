"""The ``thors`` command line.

- ``thors demo``: the embedded default job (:mod:`thors_stream.demo`).
- ``thors fit DATA ...``: the periodic re-threshold job on a file of labelled scores.
- ``thors replay DATA ...``: stream a file through a windowed StreamingThors and
  write the threshold and cost after each event.

Problems with the input (missing column, bad value on line N, bad option) are
reported in one line on stderr with exit code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from typing import Any

EXIT_INPUT = 2


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be finite and > 0: {text!r}")
    return v


def _int_at_least(low: int) -> Any:
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}: {text!r}")
        return v

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _confidence(text: str) -> float:
    v = _positive_float(text)
    if not v < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1): {text!r}")
    return v


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="CSV file with a header line (or Parquet with pyarrow installed)")
    p.add_argument("--score-col", required=True, help="column holding the classifier's score")
    p.add_argument("--label-col", required=True, help="column holding the label (0/1/true/false)")
    p.add_argument("--weight-col", default=None, help="optional column of per-event weights (> 0)")
    p.add_argument("--fn-cost", type=_positive_float, required=True, help="cost of a false negative")
    p.add_argument("--fp-cost", type=_positive_float, required=True, help="cost of a false positive")
    p.add_argument("--class-prior", type=_confidence, default=None, help="population share of positives")
    p.add_argument("--engine", choices=("auto", "python", "pyarrow"), default="auto", help="file reader")


def build_parser() -> argparse.ArgumentParser:
    """The ``thors`` argument parser: subcommands ``demo``, ``fit`` and ``replay``.

    >>> build_parser().parse_args(["fit", "v.csv", "--score-col", "s", "--label-col", "y",
    ...                            "--fn-cost", "5", "--fp-cost", "1"]).fn_cost
    5.0
    """
    p = argparse.ArgumentParser(prog="thors", description="Exact, online cost-sensitive thresholds (THORS).")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="river model on the Shuttle stream, THORS vs the 0.5 cut")
    d.add_argument("--fn-cost", type=_positive_float, default=100.0, help="cost of a missed anomaly (default 100)")
    d.add_argument("--fp-cost", type=_positive_float, default=1.0, help="cost of a false alarm (default 1)")
    d.add_argument("--window", type=_positive_int, default=5000, help="labelled events THORS keeps (default 5000)")
    d.add_argument("--limit", type=_positive_int, default=None, help="stop after this many events")
    d.add_argument("--every", type=_positive_int, default=5000, help="print a line every this many events")

    f = sub.add_parser("fit", help="the THORS threshold of a file of labelled scores")
    _data_args(f)
    f.add_argument("--confidence", type=_confidence, default=0.95, help="confidence of the bounds (default 0.95)")
    f.add_argument("--max-fpr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FPR <= ALPHA with probability --confidence")
    f.add_argument("--max-fnr", type=_confidence, default=None, metavar="ALPHA",
                   help="Neyman-Pearson: keep the true FNR <= ALPHA with probability --confidence")
    f.add_argument("--n-test", type=_nonneg_int, default=None,
                   help="bound the cost of this many new events (default: as many as the file has rows)")
    f.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    f.add_argument("--plot", default=None, metavar="PNG", help="save the cost curve (needs matplotlib)")

    r = sub.add_parser("replay", help="stream a file through a windowed StreamingThors")
    _data_args(r)
    win = r.add_mutually_exclusive_group(required=True)
    win.add_argument("--window", type=_positive_int, help="keep the last N labelled events")
    win.add_argument("--period", type=_positive_float, help="keep the events of the last SECONDS (needs --time-col)")
    r.add_argument("--time-col", default=None, help="event time column (seconds or ISO 8601)")
    r.add_argument("--out", required=True, help="trajectory CSV to write")
    r.add_argument("--every", type=_positive_int, default=1, help="write a row every k events (default 1)")
    r.add_argument("--plot", default=None, metavar="PNG", help="save threshold and cost over time")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _bounds_dict(b: Any) -> dict[str, Any]:
    """The bounds worth printing. Cost bounds are about unit-weight costs, so a weighted file gets rates only."""
    out: dict[str, Any] = {k: getattr(b, k) for k in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper")}
    if not b.weighted and b.n_test is not None:
        out["n_test"] = b.n_test
        out["cost_interval_lower"], out["cost_interval_upper"] = b.cost_interval.lower, b.cost_interval.upper
        out["cost_upper"], out["cost_upper_exact"] = b.cost_upper, b.cost_upper_exact
    return out


def cmd_fit(args: argparse.Namespace) -> int:
    """``thors fit``: read a file, print (or ``--json``) the threshold, its cost and bounds. O(n log n)."""
    from .batch import cost_curve, thors_threshold
    from .io import read_events

    t0 = time.perf_counter()
    ev = read_events(args.data, score_col=args.score_col, label_col=args.label_col, weight_col=args.weight_col,
                     engine=args.engine)
    t1 = time.perf_counter()
    np_mode = {}
    if args.max_fpr is not None or args.max_fnr is not None:
        np_mode = {"max_fpr": args.max_fpr, "max_fnr": args.max_fnr, "confidence": args.confidence}
    r = thors_threshold(ev.scores, ev.labels, fn_cost=args.fn_cost, fp_cost=args.fp_cost,
                        sample_weight=ev.weights, class_prior=args.class_prior, **np_mode)
    t2 = time.perf_counter()
    bounds = r.bounds(confidence=args.confidence, n_test=len(ev) if args.n_test is None else args.n_test)
    if args.plot:
        from .plotting import plot_cost_curve

        thr, cost = cost_curve(ev.scores, ev.labels, fn_cost=args.fn_cost, fp_cost=args.fp_cost,
                               sample_weight=ev.weights, class_prior=args.class_prior)
        plot_cost_curve(thr, cost, r, args.plot, bounds=bounds)
    if args.json:
        d = r.to_dict()
        d.update(rows=len(ev), parse_seconds=round(t1 - t0, 6), threshold_seconds=round(t2 - t1, 6))
        peak = _peak_rss_mb()
        if peak is not None:
            d["peak_rss_mb"] = peak
        if bounds is not None:
            d["bounds"] = {"confidence": args.confidence, **_bounds_dict(bounds)}
        print(json.dumps(d))
        return 0
    thr_txt = "-inf (predict every event positive)" if math.isinf(r.threshold) else f"{r.threshold:.10g}"
    print(f"rows          {len(ev):,} ({r.count1:,} positive, {r.count0:,} negative)")
    print(f"threshold     {thr_txt}   (predict positive iff score > threshold)")
    print(f"cost          {r.cost:,.6g}   (FN cost {r.fn_cost:g}, FP cost {r.fp_cost:g})")
    if np_mode:
        caps = " and ".join(f"true {k[4:].upper()} <= {v:g}" for k, v in np_mode.items() if k != "confidence" and v)
        print(f"constraint    {caps}, with probability {args.confidence:.0%} (cheapest such threshold)")
    print(f"FPR           {r.fpr:.6f}   FNR {r.fnr:.6f}")
    if bounds is not None:
        c = f"{args.confidence:.0%}"
        print(f"FPR bounds    [{bounds.fpr_lower:.6f}, {bounds.fpr_upper:.6f}]   (each side {c}; valid for this "
              "data-chosen threshold)")
        print(f"FNR bounds    [{bounds.fnr_lower:.6f}, {bounds.fnr_upper:.6f}]")
        if bounds.weighted:
            print("              (weighted file: the bounds are on event rates; no cost bound for per-event costs)")
        else:
            ci = bounds.cost_interval
            print(f"{bounds.n_test:,} new events: expected cost in [{ci.lower:,.6g}, {ci.upper:,.6g}] ({c}), "
                  f"cost paid <= {bounds.cost_upper_exact:,.6g} ({c})")
    peak = _peak_rss_mb()
    print(f"time          parse {t1 - t0:.3f} s, threshold {t2 - t1:.3f} s"
          + (f", peak memory {peak:,.0f} MB" if peak is not None else ""))
    return 0


def _peak_rss_mb() -> float | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="ev", unit_scale=True, file=sys.stderr)


def cmd_replay(args: argparse.Namespace) -> int:
    """``thors replay``: stream a file through a windowed StreamingThors, write the trajectory. O(n log n)."""
    from .io import read_events
    from .stream import StreamingThors

    if args.period is not None and args.time_col is None:
        raise ValueError("--period needs --time-col (the event time)")
    ev = read_events(args.data, score_col=args.score_col, label_col=args.label_col, weight_col=args.weight_col,
                     time_col=args.time_col, engine=args.engine)
    st = StreamingThors(fn_cost=args.fn_cost, fp_cost=args.fp_cost, window=args.window, period=args.period,
                        class_prior=args.class_prior)
    n = len(ev)
    s, y = ev.scores.tolist(), ev.labels.tolist()
    w = ev.weights.tolist() if ev.weights is not None else [1.0] * n
    t = ev.times.tolist() if ev.times is not None else None
    bar = _progress(n, not args.no_progress)
    steps, thrs, costs = [], [], []
    every = args.every
    t0 = time.perf_counter()
    with open(args.out, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["event", "threshold", "cost", "held"])
        for i in range(n):
            if t is None:
                st.update(s[i], y[i], w[i])
            else:
                st.update(s[i], y[i], w[i], t=t[i])
            if (i + 1) % every == 0 or i == n - 1:
                thr, c = st.get(), st.cost
                out.writerow([i + 1, repr(thr), repr(c), len(st)])
                steps.append(i + 1)
                thrs.append(thr)
                costs.append(c)
            if bar is not None and (i + 1) % 1000 == 0:
                bar.update(1000)
        if bar is not None:
            bar.update(n % 1000)
            bar.close()
    secs = time.perf_counter() - t0
    print(f"replayed {n:,} events in {secs:.2f} s; final threshold {st.get()!r}, cost {st.cost!r}; "
          f"trajectory written to {args.out}", file=sys.stderr)
    if args.plot:
        import numpy as np

        from .plotting import plot_trajectory

        plot_trajectory(np.array(steps), np.array(thrs, dtype=float), np.array(costs, dtype=float), args.plot,
                        title=f"replay of {args.data}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``thors`` command line; returns the exit code (2 on bad input, no traceback).

    >>> main(["fit", "/nonexistent.csv", "--score-col", "s", "--label-col", "y", "--fn-cost", "1",
    ...       "--fp-cost", "1"])
    2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import run_demo

            run_demo(fn_cost=args.fn_cost, fp_cost=args.fp_cost, window=args.window, limit=args.limit,
                     every=args.every)
            return 0
        if args.command == "fit":
            return cmd_fit(args)
        return cmd_replay(args)
    except (ValueError, ImportError, OSError) as exc:  # InputError is a ValueError
        print(f"thors {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
