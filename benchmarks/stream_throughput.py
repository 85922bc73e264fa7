"""Sliding-window throughput of StreamingThors against a hand-written sort-and-scan.

For each window size N and score kind (uniform floats; uniform rounded to 3
decimals), 5% positives, FN cost 10, FP cost 1:

- ``us/event``: median microseconds per event of ``update`` (insert the new event,
  expire the oldest) followed by ``get`` (read the threshold), per backend;
- ``naive``: the same step done by hand with numpy (overwrite the oldest slot of
  the window arrays, ``np.argsort``, group ties, ``cumsum``, ``argmin``), measured
  in the same run;
- ``ratio``: naive / ours;
- ``update_many``: microseconds per event when the same stream arrives in
  10,000-event batches (insert + expire), followed by one ``get`` per batch;
- ``B/event``: bytes allocated per held event (tracemalloc: tree, queue, everything).

Run: ``python benchmarks/stream_throughput.py`` (``--quick`` for a smoke run,
``--sizes 1e3,1e4`` to choose windows). Timings are medians over chunks of events
so that a stray pause does not move them; the machine's other load still does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

FN, FP, POS_RATE = 10.0, 1.0, 0.05


def make_stream(n: int, rounded: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    if rounded:
        s = np.round(s, 3)
    return s, rng.random(n) < POS_RATE


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


def time_stream(
    s: np.ndarray, y: np.ndarray, n: int, events: int, backend: str, chunk: int = 500
) -> tuple[float, float]:
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend)
    st.update_many(s[:n], y[:n])
    st.get()
    sl, yl = s.tolist(), y.tolist()
    upd, get = st.update, st.get
    per_event = []
    for lo in range(n, n + events, chunk):
        t0 = time.perf_counter()
        for k in range(lo, lo + chunk):
            upd(sl[k], yl[k])
            get()
        per_event.append((time.perf_counter() - t0) / chunk)
    return statistics.median(per_event) * 1e6, st.get()


def time_batches(s: np.ndarray, y: np.ndarray, n: int, events: int, backend: str, batch: int = 10_000) -> float:
    st = StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend)
    st.update_many(s[:n], y[:n])
    st.get()
    per_event = []
    for lo in range(n, n + events, batch):
        t0 = time.perf_counter()
        st.update_many(s[lo : lo + batch], y[lo : lo + batch])
        st.get()
        per_event.append((time.perf_counter() - t0) / batch)
    return statistics.median(per_event) * 1e6


def bytes_per_event(s: np.ndarray, y: np.ndarray, n: int, backend: str) -> float:
    # fill one event at a time, then slide, so that blocks/arenas reach their steady state
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e3,1e4,1e5,1e6")
    ap.add_argument("--quick", action="store_true", help="small windows and few events (smoke test)")
    ap.add_argument("--events", type=int, default=20_000, help="events timed per configuration")
    args = ap.parse_args()
    sizes = [1000, 10_000] if args.quick else [int(float(x)) for x in args.sizes.split(",")]
    events = 2_000 if args.quick else args.events
    backends = available_backends()
    print(f"backends: {', '.join(backends)}; FN={FN:g} FP={FP:g}; {POS_RATE:.0%} positives; "
          f"{events} events timed per row")
    head = ["N", "scores"]
    for b in backends:
        head += [f"{b} us/event"]
    head += ["naive us/event", "ratio (naive/fastest)"] + [f"{b} update_many us/event" for b in backends]
    head += [f"{b} B/event" for b in backends]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in sizes:
        for rounded in (False, True):
            s, y = make_stream(n + max(events, 20_000) + 10, rounded)
            row = [f"{n:.0e}", "3 decimals" if rounded else "uniform"]
            res = {b: time_stream(s, y, n, events, b) for b in backends}
            naive_events = max(5, min(2000, int(2e6 // n)))
            naive_us, naive_thr = time_naive(s, y, n, naive_events)
            # the two must agree on the threshold after the same events
            check = StreamingThors(fn_cost=FN, fp_cost=FP, window=n)
            check.update_many(s[naive_events : n + naive_events], y[naive_events : n + naive_events])
            assert check.get() == naive_thr, (check.get(), naive_thr)
            row += [f"{res[b][0]:.2f}" for b in backends]
            fastest = min(res[b][0] for b in backends)
            row += [f"{naive_us:,.1f}", f"{naive_us / fastest:,.0f}x"]
            row += [f"{time_batches(s, y, n, max(events, 20_000), b):.2f}" for b in backends]
            row += [f"{bytes_per_event(s, y, n, b):.0f}" for b in backends]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
