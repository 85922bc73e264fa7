"""Sliding-window throughput of StreamingThors against a hand-written sort-and-scan.

Two tables, measured in one run.

**Sizes** (window N, uniform scores or rounded to 3 decimals, 5% positives, FN 10, FP 1):

- ``us/event``: microseconds per event of ``update`` (insert the new event, expire the
  oldest) followed by ``get``, per backend, through the public Python API;
- ``naive``: the same step by hand with numpy (overwrite the oldest slot, ``np.argsort``,
  group ties, ``cumsum``, ``argmin``), and ``ratio`` = naive / compiled;
- ``update_many``: microseconds per event when the stream arrives in 10,000-event batches
  (insert + expire), one ``get`` per batch;
- ``tree B/score``: bytes of the compiled tree per distinct score held (allocated arenas,
  slack included); ``B/event``: everything Python allocated per held event (tracemalloc:
  tree, expiry queue, objects).

**Targets** (issue 12): window 1e6 and 1e5 with distinct scores; ``update_many`` in 10k
batches at 1e6 just after a bulk load (and, without a target, once the window has turned
over: its leaves have split and merged since the load and no longer lie in key order in
memory); the ``revert`` path that ``river.utils.Rolling`` drives (an unwindowed
summary: ``update`` + ``revert`` of the event leaving + ``get``) next to the window path,
their passes interleaved so the ratio compares like moments of a shared machine;
Neyman-Pearson mode (``max_fpr=0.1``) next to plain mode at window 1e4 (also interleaved),
on the stream above, where the constraint does not bind (plain mode's threshold meets it,
and the core returns that threshold after a rank lookup), and on a stream of 30% positives,
where it binds (plain mode's threshold is near the lowest score; the admissible one is
read by one descent to the rank the constraint needs, see the speed page). The previous
engine's figures are the recorded run in ``benchmarks/results/stream_throughput.md`` of
the treap engine (commit a867962), quoted, not re-run.

**Peers** (a third table): what a user could write instead of ``update_many`` for the same
stream, measured in the same run and each checked to give the library's threshold after every
pass (thresholds equal, exactly). Each row times five passes of eight batches (two for a
batch of 1e6), the library and the peers alternating batch by batch over the same batches, a
pass's time the median of its batches, and divides the best passes; ``lib/peer`` below 1
means the library is faster.

- *numpy histogram over precomputed score ranks* (window 1e6, uniform scores, 10k batches,
  once the window has turned over): every score of the stream ranked in advance
  (``np.unique`` + ``np.searchsorted`` over the whole stream, not timed); per batch
  ``np.add.at`` of the new events' and the expired events' ranks into per-rank class counts,
  then the cost of every candidate from their cumulative sums and its first minimum. The
  same with one histogram of ``fn_cost * n1 - fp_cost * n0`` per rank (int64: the costs are
  integers) and one cumulative sum (a cost histogram) is the second peer of that row.
- *online numpy histogram over the possible values* (window 1e6, 10k batches): scores
  rounded to 3 decimals (1,001 values) or integer risk points (0 to 1,000); the grid is
  known in advance, each batch's grid indices are computed from its scores
  (``np.rint(s * 1000)``), counted per class with ``np.bincount`` and kept in a ring of
  the window's indices and labels, whose expired part is counted out the same way.
- *recompute*: ``thors_threshold`` on the window's events after each batch, for a batch at
  least as long as the window (it replaces the whole window).
- *sortedcontainers scan*: a ``SortedDict`` from score to class counts, updated event by
  event, and a scan of the prefix costs in key order after each batch (too slow at 1e6
  distinct scores for five passes: one pass of two batches there).

Timings are the median of per-chunk means (500 events a chunk), best of three passes,
so a stray pause does not move them; the machine's other load still does. A ratio takes
five passes of each side, alternated, and divides their best: a pass that a neighbour's
load slowed on one side then no longer decides it.

Run: ``python benchmarks/stream_throughput.py`` (about a minute on two cores; ``--quick`` for a
smoke run; ``--only sizes|core|peers`` for one table).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sortedcontainers import SortedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends

FN, FP, POS_RATE = 10.0, 1.0, 0.05
# the treap engine's recorded figures (benchmarks/results/stream_throughput.md before core v2,
# and issue 12 for the Neyman-Pearson pair)
PREVIOUS = {"window 1e6": 6.25, "window 1e5": 3.41, "update_many 1e6": 1.73, "np 1e4": 16.0, "plain 1e4": 3.0,
            "B/score": 72.0}


def make_stream(n: int, rounded: bool = False, seed: int = 0,
                pos_rate: float = POS_RATE) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    if rounded:
        s = np.round(s, 3)
    return s, rng.random(n) < pos_rate


def naive_threshold(s: np.ndarray, y: np.ndarray) -> float:
    """What a user writes by hand: sort, cumulative costs, first minimum."""
    order = np.argsort(s)
    ss, yy = s[order], y[order]
    last = np.append(ss[1:] != ss[:-1], True)  # last element of each run of ties
    k1 = np.cumsum(yy)[last]
    k0 = np.cumsum(~yy)[last]
    cost = FN * k1 + FP * (k0[-1] - k0)
    j = int(np.argmin(cost))
    return float(ss[last][j]) if cost[j] < FP * k0[-1] else -np.inf


def time_naive(s: np.ndarray, y: np.ndarray, n: int, events: int) -> tuple[float, float]:
    ws, wy = s[:n].copy(), y[:n].copy()
    times, thr = [], 0.0
    for k in range(events):
        t0 = time.perf_counter()
        ws[k % n] = s[n + k]
        wy[k % n] = y[n + k]
        thr = naive_threshold(ws, wy)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6, thr


def chunked(step, lo: int, events: int, chunk: int = 500) -> float:
    """Median over chunks of the mean microseconds per call of ``step(k)``."""
    per = []
    for a in range(lo, lo + events, chunk):
        t0 = time.perf_counter()
        for k in range(a, a + chunk):
            step(k)
        per.append((time.perf_counter() - t0) / chunk)
    return statistics.median(per) * 1e6


def best_of(f, passes: int = 3) -> float:
    return min(f(p) for p in range(passes))


def window_passes(s, y, n, events, backend, **kw) -> tuple[Callable[[int], float], StreamingThors]:
    """A window of ``n`` filled with the first ``n`` events, and ``run(p)``: the timing of
    update + expire + get over the ``p``-th next ``events`` events (passes in order)."""
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend, **kw)
    st.update_many(s[:n], y[:n])
    st.get()
    sl, yl = s.tolist(), y.tolist()
    upd, get = st.update, st.get

    def step(k):
        upd(sl[k], yl[k])
        get()

    return (lambda p: chunked(step, n + p * events, events)), st


def time_window(s, y, n, events, backend, **kw) -> tuple[float, StreamingThors]:
    run, st = window_passes(s, y, n, events, backend, **kw)
    return best_of(run), st


def revert_passes(s, y, n, events, backend) -> Callable[[int], float]:
    """river.utils.Rolling's pattern: an unwindowed summary, update + revert + get
    (passes as in :func:`window_passes`)."""
    st = StreamingThors(fn_cost=FN, fp_cost=FP, backend=backend)
    st.update_many(s[:n], y[:n])
    st.get()
    sl, yl = s.tolist(), y.tolist()
    upd, rev, get = st.update, st.revert, st.get

    def step(k):
        upd(sl[k], yl[k])
        rev(sl[k - n], yl[k - n])
        get()

    return lambda p: chunked(step, n + p * events, events)


def interleaved_ratio(num: Callable[[int], float], den: Callable[[int], float], passes: int = 5) -> float:
    """``num``'s time over ``den``'s, their passes interleaved (den, num, den, ...) so that
    both see the same moments of the machine's other load: best pass of each, divided."""
    d, n = [], []
    for p in range(passes):
        d.append(den(p))
        n.append(num(p))
    return min(n) / min(d)


def time_batches(s, y, n, events, backend, batch: int = 10_000, w=None, warm: int = 0) -> tuple[float, StreamingThors]:
    """A window of ``n`` bulk-loaded with the first ``n`` events, ``warm`` events more in
    untimed batches, then ``events`` events in timed batches (update_many + get)."""
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend)
    st.update_many(s[:n], y[:n], None if w is None else w[:n])
    st.get()
    for lo in range(n, n + warm, batch):
        st.update_many(s[lo : lo + batch], y[lo : lo + batch], None if w is None else w[lo : lo + batch])
    st.get()
    n += warm
    per = []
    for lo in range(n, n + events, batch):
        wb = None if w is None else w[lo : lo + batch]
        t0 = time.perf_counter()
        st.update_many(s[lo : lo + batch], y[lo : lo + batch], wb)
        st.get()
        per.append((time.perf_counter() - t0) / batch)
    us = min(per) * 1e6 if len(per) < 3 else statistics.median(sorted(per)[: max(3, len(per) // 2)]) * 1e6
    return us, st


def tree_bytes_per_score(st: StreamingThors) -> float:
    info = st._tree.stats()
    tree = (info["leaf_slots"] * info["leaf_bytes"] + info["inner_slots"] * info["inner_bytes"]
            + info["lo_slots"] * info["lo_bytes"] + info["weight_slots"] * info["weight_bytes"])
    return tree / max(info["n_keys"], 1)


def bytes_per_event(s, y, n, backend) -> float:
    # fill one event at a time, then slide, so that arenas reach their steady state
    sl, yl = s[: 2 * n].tolist(), y[: 2 * n].tolist()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend)
    upd = st.update
    for k in range(len(sl)):
        upd(sl[k], yl[k])
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / len(st)


def sizes_table(sizes: list[int], events: int, backends: list[str]) -> None:
    head = ["N", "scores"] + [f"{b} us/event" for b in backends] + ["naive us/event", "ratio naive/c"]
    head += [f"{b} update_many us/event" for b in backends] + ["tree B/score", "B/event (all)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in sizes:
        for rounded in (False, True):
            s, y = make_stream(n + 4 * max(events, 20_000) + 10, rounded)
            row = [f"{n:.0e}", "3 decimals" if rounded else "uniform"]
            res = {b: time_window(s, y, n, events if b != "python" else events // 4, b) for b in backends}
            naive_events = max(5, min(2000, int(2e6 // n)))
            naive_us, naive_thr = time_naive(s, y, n, naive_events)
            check = StreamingThors(fn_cost=FN, fp_cost=FP, window=n)  # same answer as the naive one
            check.update_many(s[naive_events : n + naive_events], y[naive_events : n + naive_events])
            assert check.get() == naive_thr, (check.get(), naive_thr)
            row += [f"{res[b][0]:.2f}" for b in backends]
            row += [f"{naive_us:,.1f}", f"{naive_us / res[backends[0]][0]:,.0f}x"]
            row += [f"{time_batches(s, y, n, max(events, 40_000), b)[0]:.3f}" for b in backends]
            c = res[backends[0]][1]
            row += [f"{tree_bytes_per_score(c):.0f}" if backends[0] == "c" else "-"]
            row += [f"{bytes_per_event(s, y, n, backends[0]):.0f}"]
            print("| " + " | ".join(row) + " |", flush=True)


def targets_table(events: int, quick: bool) -> None:
    big, mid, small = (10_000, 2_000, 1_000) if quick else (1_000_000, 100_000, 10_000)
    s, y = make_stream(big + max(6 * events, 160_000) + 10)
    rows = []
    w_big, st_big = time_window(s, y, big, events, "c")
    w_mid, _ = time_window(s, y, mid, events, "c")
    rows.append((f"window {big:.0e}, update + expire + get (us/event)", w_big, 1.5, PREVIOUS["window 1e6"]))
    rows.append((f"window {mid:.0e}, update + expire + get (us/event)", w_mid, 1.0, PREVIOUS["window 1e5"]))
    # 16 batches (the median of the faster half): 4 moved by +-15% between runs on a shared VM
    rows.append((f"update_many, 10k batches at {big:.0e} (us/event)",
                 time_batches(s, y, big, max(events, 160_000), "c")[0], 0.3, PREVIOUS["update_many 1e6"]))
    # the same once the window has turned over (the leaves split and merged since the load,
    # and no longer lie in key order in memory)
    s2, y2 = make_stream(2 * big + max(events, 160_000) + 10)
    rows.append((f"update_many, 10k batches at {big:.0e}, after a window's turnover (us/event)",
                 time_batches(s2, y2, big, max(events, 160_000), "c", warm=big)[0], None, None))
    del s2, y2
    # weighted events (not 1): the core stores class counts beside the weights (see the speed page)
    w = np.random.default_rng(1).uniform(0.5, 2.0, s.size)
    w_us, w_st = time_batches(s, y, big, max(events, 160_000), "c", w=w)
    rows.append((f"update_many, 10k batches at {big:.0e}, weighted events (us/event)", w_us, None, None))
    for n in (big, mid):
        ratio = interleaved_ratio(revert_passes(s, y, n, events, "c"), window_passes(s, y, n, events, "c")[0])
        rows.append((f"revert path at {n:.0e} / window path (ratio, interleaved)", ratio, 1.3, None))
    ratio = interleaved_ratio(window_passes(s, y, small, events, "c", max_fpr=0.1)[0],
                              window_passes(s, y, small, events, "c")[0])
    rows.append((f"Neyman-Pearson max_fpr=0.1 at {small:.0e} / plain (ratio, interleaved)", ratio, 1.5,
                 PREVIOUS["np 1e4"] / PREVIOUS["plain 1e4"]))
    sb, yb = make_stream(small + 6 * events + 10, pos_rate=0.3)
    np_run, np_st = window_passes(sb, yb, small, events, "c", max_fpr=0.1)
    plain_run, plain_st = window_passes(sb, yb, small, events, "c")
    ratio = interleaved_ratio(np_run, plain_run)
    assert np_st.get() != plain_st.get(), "the constraint was meant to bind"
    rows.append((f"Neyman-Pearson max_fpr=0.1 at {small:.0e} / plain, 30% positives: the constraint binds "
                 "(ratio, interleaved)", ratio, 1.5, None))
    rows.append((f"tree bytes per distinct score at {big:.0e}", tree_bytes_per_score(st_big), 64, PREVIOUS["B/score"]))
    rows.append((f"tree bytes per distinct score at {big:.0e}, weighted events", tree_bytes_per_score(w_st), 64, None))
    lock = threading.RLock()

    def locked(_k):
        with lock:
            pass

    rows.append(("RLock acquire + release, numpy backend's per-call lock (us)",
                 best_of(lambda p: chunked(locked, 0, 20_000)), None, None))
    print("| measure | now | target | previous engine (recorded) |")
    print("|---|---|---|---|")
    for name, now, target, prev in rows:
        t = "-" if target is None else f"<= {target:g}"
        pv = "-" if prev is None else f"{prev:g}"
        print(f"| {name} | {now:.2f} | {t} | {pv} |", flush=True)


# ---------------------------------------------------------------- peers

class RankHistogram:
    """A numpy histogram over precomputed score ranks: ``keys`` holds every score the stream
    will bring (sorted, distinct), events arrive as ranks into it. Class counts per rank,
    updated with ``np.add.at``; the threshold from their cumulative sums (``cost=True``: one
    histogram of ``FN * n1 - FP * n0`` per rank and one cumulative sum instead, in int64 as the
    costs are integers: numpy's cumulative sum of int64 runs several times faster than of
    float64)."""

    def __init__(self, keys: np.ndarray, cost: bool = False) -> None:
        self.keys, self.cost = keys, cost
        if cost:
            assert FN == int(FN) and FP == int(FP)
            self.v = np.zeros(keys.size, np.int64)
        else:
            self.h1 = np.zeros(keys.size, np.int64)
            self.h0 = np.zeros(keys.size, np.int64)

    def add(self, r: np.ndarray, y: np.ndarray, sign: int) -> None:
        if self.cost:
            np.add.at(self.v, r, np.where(y, int(FN) * sign, -int(FP) * sign))
        else:
            np.add.at(self.h1, r[y], sign)
            np.add.at(self.h0, r[~y], sign)

    def threshold(self) -> float:
        if self.cost:  # prefix sums of FN * n1 - FP * n0: the cost less that of flagging everything
            gain = np.cumsum(self.v)
            j = int(np.argmin(gain))
            return float(self.keys[j]) if gain[j] < 0 else -np.inf
        k1, k0 = np.cumsum(self.h1), np.cumsum(self.h0)
        cost = FN * k1 + FP * (k0[-1] - k0)  # flag iff score > key
        j = int(np.argmin(cost))
        return float(self.keys[j]) if cost[j] < FP * k0[-1] else -np.inf


class GridHistogram:
    """An online numpy histogram over the possible values ``grid`` (the scores are known to
    be ``grid[index(s)]``), class counts per value with ``np.bincount``, and a ring of the
    window's indices and labels (its size a multiple of the batch)."""

    def __init__(self, grid: np.ndarray, index: Callable[[np.ndarray], np.ndarray], window: int) -> None:
        self.grid, self.index, self.window = grid, index, window
        self.h1 = np.zeros(grid.size, np.int64)
        self.h0 = np.zeros(grid.size, np.int64)
        self.ring_i = np.zeros(window, np.intp)
        self.ring_y = np.zeros(window, bool)
        self.head = self.held = 0

    def update_many(self, s: np.ndarray, y: np.ndarray) -> None:
        i, g, lo = self.index(s), self.grid.size, self.head
        if self.held == self.window:  # the oldest len(s) events leave
            oi, oy = self.ring_i[lo : lo + s.size], self.ring_y[lo : lo + s.size]
            self.h1 -= np.bincount(oi[oy], minlength=g)
            self.h0 -= np.bincount(oi[~oy], minlength=g)
        self.h1 += np.bincount(i[y], minlength=g)
        self.h0 += np.bincount(i[~y], minlength=g)
        self.ring_i[lo : lo + s.size], self.ring_y[lo : lo + s.size] = i, y
        self.head = (lo + s.size) % self.window
        self.held = min(self.window, self.held + s.size)

    def threshold(self) -> float:
        k1, k0 = np.cumsum(self.h1), np.cumsum(self.h0)
        cost = FN * k1 + FP * (k0[-1] - k0)
        j = int(np.argmin(cost))
        return float(self.grid[j]) if cost[j] < FP * k0[-1] else -np.inf


class SortedScan:
    """``sortedcontainers.SortedDict`` from score to ``[n1, n0]``, updated event by event; the
    threshold by a scan of the prefix costs in key order."""

    def __init__(self) -> None:
        self.d: SortedDict = SortedDict()

    def add(self, s: np.ndarray, y: np.ndarray, sign: int) -> None:
        d = self.d
        for k, pos in zip(s.tolist(), y.tolist()):
            c = d.get(k)
            if c is None:
                c = d[k] = [0, 0]
            c[0 if pos else 1] += sign
            if c[0] == c[1] == 0:
                del d[k]

    def threshold(self) -> float:
        best, thr, k1, k0 = 0.0, -np.inf, 0, 0  # gain: the cost less that of flagging everything
        for key, (n1, n0) in self.d.items():
            k1 += n1
            k0 += n0
            gain = FN * k1 - FP * k0
            if gain < best:
                best, thr = gain, key
        return thr


def alternated(steps: dict[str, Callable[[int], float]], start: int, batch: int, per: int,
               passes: int) -> dict[str, float]:
    """Best pass of each side, microseconds per event. ``steps[name](lo)`` takes the batch at
    ``lo`` and returns the threshold after it; pass ``p`` times the ``per`` batches from
    ``start + p * per * batch`` on, the sides alternating batch by batch (their order swapped
    at every batch) so that both see the same moments of the machine's other load, and a
    pass's time is the median of its batches. After each pass every side's threshold must
    equal the first side's."""
    best = {name: np.inf for name in steps}
    names = list(steps)
    for p in range(passes):
        times: dict[str, list[float]] = {name: [] for name in steps}
        thr = {}
        for b in range(per):
            lo = start + (p * per + b) * batch
            for name in names if (p * per + b) % 2 else names[::-1]:
                t0 = time.perf_counter()
                thr[name] = steps[name](lo)
                times[name].append(time.perf_counter() - t0)
        for name in steps:
            best[name] = min(best[name], statistics.median(times[name]) / batch * 1e6)
        first = thr[names[0]]
        assert all(v == first for v in thr.values()), (p, thr)
    return best


def lib_step(s: np.ndarray, y: np.ndarray, window: int, batch: int, start: int) -> Callable[[int], float]:
    """StreamingThors, the window bulk-loaded and filled up to ``start`` in untimed batches;
    a step takes the batch at ``lo`` (``update_many`` + ``get``)."""
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=window)
    lo = max(0, start - window)
    st.update_many(s[lo : lo + window], y[lo : lo + window])
    for a in range(lo + window, start, batch):
        st.update_many(s[a : a + batch], y[a : a + batch])
    st.get()

    def step(a: int) -> float:
        st.update_many(s[a : a + batch], y[a : a + batch])
        return st.get()

    return step


def peers_table(quick: bool) -> None:
    big = 20_000 if quick else 1_000_000
    batch = 2_000 if quick else 10_000
    passes, per = (2, 2) if quick else (5, 8)
    rows = []  # (case, peer, lib us/event, peer us/event)
    start = 2 * big  # after a full turnover of the window
    n = start + passes * per * batch
    rng = np.random.default_rng(7)
    s, y = rng.random(n), rng.random(n) < POS_RATE

    # steady state at `big`, uniform scores: histograms over precomputed ranks
    keys, ranks = np.unique(s, return_inverse=True)
    sides = {"lib": lib_step(s, y, big, batch, start)}
    for name, cost in (("numpy histogram over ranks", False), ("numpy cost histogram over ranks", True)):
        h = RankHistogram(keys, cost)
        h.add(ranks[start - big : start], y[start - big : start], 1)

        def step(a: int, h: RankHistogram = h, r: np.ndarray = ranks) -> float:
            h.add(r[a : a + batch], y[a : a + batch], 1)
            h.add(r[a - big : a - big + batch], y[a - big : a - big + batch], -1)
            return h.threshold()

        sides[name] = step
    best = alternated(sides, start, batch, per, passes)
    case = f"window {big:.0e}, uniform scores, {batch // 1000}k batches after a turnover"
    rows += [(case, name, best["lib"], best[name]) for name in sides if name != "lib"]
    # the sortedcontainers scan: one pass of two batches (a scan of every held score per batch)
    sc = SortedScan()
    sc.add(s[start - big : start], y[start - big : start], 1)

    def sc_step(a: int) -> float:
        sc.add(s[a : a + batch], y[a : a + batch], 1)
        sc.add(s[a - big : a - big + batch], y[a - big : a - big + batch], -1)
        return sc.threshold()

    best = alternated({"lib": lib_step(s, y, big, batch, start), "scan": sc_step}, start, batch, 2, 1)
    rows.append((case, "sortedcontainers scan (one pass of 2 batches)", best["lib"], best["scan"]))

    # few distinct scores, fully online: a histogram over the grid of possible values
    for label, grid, index, scores in (
        ("3 decimals (1,001 values)", np.arange(1001) / 1000, lambda v: np.rint(v * 1000).astype(np.intp),
         np.round(s, 3)),
        ("integer risk points 0-1000", np.arange(1001, dtype=np.float64), lambda v: v.astype(np.intp),
         np.floor(s * 1001)),
    ):
        sides = {"lib": lib_step(scores, y, big, batch, start)}
        g = GridHistogram(grid, index, big)
        for a in range(start - big, start, batch):
            g.update_many(scores[a : a + batch], y[a : a + batch])

        def g_step(a: int, g: GridHistogram = g, sc: np.ndarray = scores) -> float:
            g.update_many(sc[a : a + batch], y[a : a + batch])
            return g.threshold()

        sides["online numpy histogram over the values"] = g_step
        ss = SortedScan()
        ss.add(scores[start - big : start], y[start - big : start], 1)

        def ss_step(a: int, ss: SortedScan = ss, sc: np.ndarray = scores) -> float:
            ss.add(sc[a : a + batch], y[a : a + batch], 1)
            ss.add(sc[a - big : a - big + batch], y[a - big : a - big + batch], -1)
            return ss.threshold()

        sides["sortedcontainers scan"] = ss_step
        best = alternated(sides, start, batch, per, passes)
        case = f"window {big:.0e}, {label}, {batch // 1000}k batches"
        rows += [(case, name, best["lib"], best[name]) for name in sides if name != "lib"]

    # a batch at least as long as the window: recomputing the window's threshold
    sizes = [(1_000, 2_000), (2_000, 2_000)] if quick else [(1_000, 10_000), (10_000, 10_000), (100_000, 100_000),
                                                            (1_000_000, 1_000_000)]
    for window, b in sizes:
        k = per if b <= 100_000 else 2
        m = window + passes * k * b
        s2, y2 = rng.random(m), rng.random(m) < POS_RATE

        def re_step(a: int, s2: np.ndarray = s2, y2: np.ndarray = y2, b: int = b, window: int = window) -> float:
            return thors_threshold(s2[a + b - window : a + b], y2[a + b - window : a + b], fn_cost=FN,
                                   fp_cost=FP).threshold

        best = alternated({"lib": lib_step(s2, y2, window, b, window), "recompute": re_step}, window, b, k, passes)
        rows.append((f"window {window:.0e}, batches of {b:.0e} (each replaces the window)",
                     "recompute with thors_threshold", best["lib"], best["recompute"]))

    print("| case | peer | library us/event | peer us/event | lib/peer |")
    print("|---|---|---|---|---|")
    for case, peer, lib_us, peer_us in rows:
        print(f"| {case} | {peer} | {lib_us:.4f} | {peer_us:.4f} | {lib_us / peer_us:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e3,1e4,1e5,1e6")
    ap.add_argument("--quick", action="store_true", help="small windows and few events (smoke test)")
    ap.add_argument("--events", type=int, default=20_000, help="events timed per configuration")
    ap.add_argument("--only", choices=["sizes", "core", "peers"], help="one table only")
    args = ap.parse_args()
    sizes = [1000, 10_000] if args.quick else [int(float(x)) for x in args.sizes.split(",")]
    events = 2_000 if args.quick else args.events
    backends = available_backends()
    print(f"backends: {', '.join(backends)}; FN={FN:g} FP={FP:g}; {POS_RATE:.0%} positives; "
          f"{events} events timed per row")
    if args.only in (None, "sizes"):
        print()
        sizes_table(sizes, events, backends)
    if "c" in backends and args.only in (None, "core"):
        print()
        targets_table(events, args.quick)
    if args.only in (None, "peers"):
        print()
        peers_table(args.quick)


if __name__ == "__main__":
    main()
