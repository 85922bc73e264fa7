"""``thors replay``: stream a file through a windowed StreamingThors and write the threshold's trajectory.

:func:`cmd_replay` writes the trajectory CSV (threshold, cost, FPR, FNR and held events after
every ``--every`` events), the monitoring log (``--jsonl``, :mod:`thors_stream.cli_monitor`)
and the plot of threshold and cost over time (``--plot``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from ._files import StagedOutputs
from .cli_common import (
    EXIT_OK,
    _check_cost_options,
    _check_magnitudes_w,
    _check_outputs,
    _decision,
    _iso,
    _num,
    _Rule,
    _wall_seconds,
)
from .cli_monitor import HeldRates, _Monitor
from .cli_replay_segments import check_segment_options, replay_segments


def cmd_replay(args: argparse.Namespace) -> int:
    """``thors replay``: stream a file through a windowed StreamingThors, write the trajectory.

    Columns: ``event`` (1-based), ``time`` (with ``--time-col``: the event's time, ISO 8601
    UTC when the file had date-times, else seconds), ``threshold``, ``cost``, ``fpr``, ``fnr``
    (empirical, of the held events at the threshold) and ``held``. With ``--jsonl`` also the
    monitoring log (:class:`_Monitor`: published threshold, alerts, hysteresis). O(n log n).
    """
    if args.period is not None and args.time_col is None:
        raise ValueError("--period needs --time-col (the event time)")
    check_segment_options(args)
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
                     fp_cost_col=args.fp_cost_col, segment_col=args.segment_col,
                     probability=args.decide_on == "margin")
    rule = _Rule(args, ev)  # the stream learns the rule's keys (scores or cost margins) with its weights
    _check_magnitudes_w(ev, rule.weights, rule.fn_cost, rule.fp_cost, args.class_prior, rule.money)
    if args.segment_col is not None:
        return _replay_by_segment(args, ev, rule, out_path, to_stdout)
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
    mon = _Monitor(args, held, ev.datetimes, jsonl_path, rule) if monitor else None
    t0 = time.perf_counter()
    try:
        with _trajectory_file(out_path, to_stdout, n, not args.no_progress) as (f, tick):
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
                tick(i)
    finally:
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


def _replay_by_segment(args: argparse.Namespace, ev: Any, rule: _Rule, out_path: str, to_stdout: bool) -> int:
    """The work of :func:`cmd_replay` with ``--segment-col`` (see :func:`replay_segments`)."""
    n = len(ev)
    t0 = time.perf_counter()
    with _trajectory_file(out_path, to_stdout, n, not args.no_progress) as (f, tick):
        segments, rows = replay_segments(args, ev, rule, f, _iso if ev.datetimes else repr, tick)
    secs = time.perf_counter() - t0
    where = "standard output" if to_stdout else args.out
    print(f"replayed {n:,} events of {segments:,} segments in {secs:.2f} s ({_wall_seconds():.2f} s in all, with "
          f"start-up and reading); {rows:,} rows written to {where}", file=sys.stderr)
    return EXIT_OK


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


@contextlib.contextmanager
def _trajectory_file(path: str, to_stdout: bool, n: int,
                     progress: bool) -> Iterator[tuple[IO[str], Callable[[int], None]]]:
    """The trajectory's file (standard output, or ``path`` opened, closed on the way out) and a
    ``tick(i)`` to call after event ``i`` of ``n`` (it moves the progress bar, if there is one);
    on success the bar is completed and the file flushed."""
    bar = _progress(n, progress)

    def tick(i: int) -> None:
        if bar is not None and (i + 1) % 1000 == 0:
            bar.update(1000)

    f = sys.stdout if to_stdout else open(path, "w", newline="")  # closed below
    try:
        yield f, tick
        if bar is not None:
            bar.update(n % 1000)
        f.flush()
    finally:
        if bar is not None:
            bar.close()
        if not to_stdout:
            f.close()


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
