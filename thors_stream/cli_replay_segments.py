"""``thors replay --segment-col``: the trajectory of every segment's threshold as a file streams by.

:func:`replay_segments` streams the events through a
:class:`~thors_stream.segments.SegmentedStreamingThors` (one windowed summary per segment plus
the global one, as ``thors serve --segment-field`` keeps them) and writes, after every
``--every`` events, one row per segment seen so far: the threshold the segment decides with, where
it comes from (``segment``, ``pooled`` or ``global``), and its cost, FPR, FNR and held count on
the segment's own held events.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from .cli_common import _num, _Rule
from .cli_monitor import HeldRates, held_cost


def check_segment_options(args: argparse.Namespace) -> None:
    """Refuse the options a segmented replay does not take (before any file is read).

    The monitoring log, its alerts and the plot follow one published threshold; with
    ``--segment-col`` there is one per segment.
    """
    if args.segment_col is None:
        if args.pool_weight is not None:
            raise ValueError("--pool-weight needs --segment-col")
        if args.min_per_class is not None:
            raise ValueError("--min-per-class needs --segment-col (a segment below it decides with the global "
                             "threshold)")
        return
    given = [name for name, v in (("--jsonl", args.jsonl), ("--hysteresis", args.hysteresis),
                                  ("--alert-jump", args.alert_jump), ("--plot", args.plot)) if v is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: not with --segment-col (they follow one published threshold; a "
                         "segmented replay has one per segment): replay without --segment-col for them")
    if args.pool_weight is not None and (args.max_fpr is not None or args.max_fnr is not None):
        raise ValueError("--pool-weight does not combine with --max-fpr/--max-fnr (the pooled threshold is the "
                         "minimum-cost one)")
    if args.pool_weight is not None:
        from .segments import _check_pooling

        try:  # (the streaming summaries' rule, checked before the file is read)
            _check_pooling(args.pool_weight, 500)
        except ValueError:
            raise ValueError(f"--pool-weight must be in [2**-32, 2**32] for a replay, got "
                             f"{args.pool_weight!r}") from None


class _SegmentMirror:
    """Each segment's held events, mirrored for their rates: a :class:`HeldRates` per segment over
    that segment's events (in file order), and each file row's index within its segment.
    O(n log n)."""

    def __init__(self, segments: np.ndarray, rule: _Rule, labels: np.ndarray, args: argparse.Namespace,
                 times: np.ndarray | None) -> None:
        names, inv = np.unique(segments.astype(str), return_inverse=True)
        inv = inv.reshape(-1)
        self.names: list[str] = names.tolist()
        self.segment_of: list[int] = inv.tolist()
        order = np.argsort(inv, kind="stable")  # each segment's rows together, in file order
        ends = np.cumsum(np.bincount(inv, minlength=len(names)))
        starts = ends - np.bincount(inv, minlength=len(names))
        local = np.empty(len(inv), dtype=np.int64)
        local[order] = np.arange(len(inv)) - np.repeat(starts, ends - starts)
        self.local: list[int] = local.tolist()
        self.held: list[HeldRates] = []
        for g in range(len(names)):
            rows = order[starts[g]:ends[g]]
            w = rule.weights[rows] if rule.weights is not None else None
            tg = times[rows] if times is not None else None
            self.held.append(HeldRates(rule.keys[rows], labels[rows], w, window=args.window, period=args.period,
                                       times=tg))


def replay_segments(args: argparse.Namespace, ev: Any, rule: _Rule, f: IO[str],
                    show_time: Callable[[float], str], tick: Callable[[int], None]) -> tuple[int, int]:
    """Stream ``ev`` through a :class:`~thors_stream.segments.SegmentedStreamingThors` and write
    the per-segment trajectory to ``f`` (a CSV writer's file).

    Columns: ``event`` (1-based), ``time`` (with ``--time-col``), ``segment``, ``threshold`` (the
    one :meth:`~thors_stream.segments.SegmentedStreamingThors.get` answers for the segment),
    ``source`` (``segment``: its own window holds ``--min-per-class`` events of each class;
    ``pooled``: with ``--pool-weight``; ``global``: the threshold over every segment's events),
    then ``cost``, ``fpr``, ``fnr`` and ``held`` on the segment's own held events at that
    threshold. After every ``--every`` events (and the last) one row per segment seen so far, in
    the order of the segments' names. Each segment holds its own window (``--window`` events or
    ``--period`` of time, measured from the segment's newest event), as the summaries do.
    Returns ``(segments, rows written)``. O(n log n + rows * sqrt(n)) (a row: one segment at one
    written event).
    """
    from .neyman_pearson import NPInfeasibleError
    from .result import DEFAULT_MIN_PER_CLASS
    from .segments import SegmentedStreamingThors

    mirror = _SegmentMirror(ev.segments, rule, ev.labels, args, ev.times)
    min_per_class = DEFAULT_MIN_PER_CLASS if args.min_per_class is None else args.min_per_class
    seg = SegmentedStreamingThors(fn_cost=rule.fn_cost, fp_cost=rule.fp_cost, window=args.window,
                                  period=args.period, max_segments=max(1, len(mirror.names)),
                                  min_per_class=min_per_class, pool_weight=args.pool_weight,
                                  class_prior=args.class_prior, max_fpr=args.max_fpr, max_fnr=args.max_fnr,
                                  confidence=args.confidence)
    n = len(ev)
    s, y = rule.keys.tolist(), ev.labels.tolist()
    w = rule.weights.tolist() if rule.weights is not None else [1.0] * n
    t = ev.times.tolist() if ev.times is not None else None
    seen: set[int] = set()
    out = csv.writer(f, lineterminator="\n")
    out.writerow(["event", *(["time"] if t is not None else []), "segment", "threshold", "source", "cost", "fpr",
                  "fnr", "held"])
    rows = 0
    for i in range(n):
        g = mirror.segment_of[i]
        name = mirror.names[g]
        seg.update(name, s[i], y[i], w[i], None if t is None else t[i])
        mirror.held[g].add(mirror.local[i])
        seen.add(g)
        if (i + 1) % args.every == 0 or i == n - 1:
            for h in sorted(seen):
                held = mirror.held[h]
                try:
                    thr = seg.get(mirror.names[h])
                except NPInfeasibleError:  # too few events of a constrained class held: no threshold yet
                    thr = None
                if thr is None:
                    c, fpr, fnr = None, math.nan, math.nan
                else:
                    c, fpr, fnr = held_cost(held, thr, rule, args.class_prior)
                row = [i + 1, mirror.names[h], repr(thr), seg.source(mirror.names[h]), _num(c),
                       repr(round(fpr, 12)), repr(round(fnr, 12)), held.held]
                if t is not None:
                    row.insert(1, show_time(t[i]))
                out.writerow(row)
                rows += 1
        tick(i)
    return len(mirror.names), rows
