"""Paired A/B of two builds on the steady state of a window of 10**6: ``update_many`` + ``get``.

``--old DIR`` names a directory holding another build of the package (``DIR/thors_stream`` with
its compiled core, as for ``stream_ab.py``); the new build is this checkout's (or ``--new DIR``'s). Both summaries
are bulk-loaded with the same window of uniform scores and fed the same batches of 10,000; the
two numpy histograms over precomputed score ranks of ``stream_throughput.py`` (class counts, and
the int64 cost histogram) take the same batches in the same loop, so the caches are as cold for
the libraries as in that benchmark's peers table. The four sides alternate batch by batch (the
order reversed at every batch), each side's time is wall time (the batch path's second thread
included), and every side's threshold is checked equal after every batch. Prints each side's
median milliseconds per batch, the median of the per-batch ratios new/old, and new and old
against the cost histogram.

Run: ``python benchmarks/steady_state_ab.py --old DIR`` (about a minute; ``--weighted``: weights
0.5, 1 and 2, the summaries' weighted path).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stream_ab import load
from stream_throughput import FN, FP, POS_RATE, RankHistogram

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, type=Path, help="directory holding the other build's thors_stream")
    ap.add_argument("--new", type=Path, default=ROOT, help="directory holding the new build (default: this checkout)")
    ap.add_argument("--batches", type=int, default=40, help="batches timed (default 40)")
    ap.add_argument("--weighted", action="store_true", help="weights 0.5, 1 and 2")
    args = ap.parse_args()
    big, batch = 1_000_000, 10_000
    tmp = Path(tempfile.mkdtemp())
    old, new = load(args.old, "ts_old", tmp), load(args.new, "ts_new", tmp)
    start = 2 * big
    n = start + args.batches * batch
    rng = np.random.default_rng(7)
    s, y = rng.random(n), rng.random(n) < POS_RATE
    w = np.random.default_rng(3).choice([0.5, 1.0, 2.0], n) if args.weighted else None

    def summary(mod):
        st = mod.StreamingThors(fn_cost=FN, fp_cost=FP, window=big)
        st.update_many(s[start - big : start], y[start - big : start], None if w is None else w[start - big : start])
        st.get()
        return st

    libs = {"old": summary(old), "new": summary(new)}
    keys, ranks = np.unique(s, return_inverse=True)
    peers = {}
    if not args.weighted:
        for name, cost in (("class-count histogram", False), ("cost histogram", True)):
            h = RankHistogram(keys, cost)
            h.add(ranks[start - big : start], y[start - big : start], 1)
            peers[name] = h
    times: dict[str, list[float]] = {name: [] for name in [*libs, *peers]}
    for i, a in enumerate(range(start, n, batch)):
        sides = [*libs, *peers]
        out = {}
        for name in sides if i % 2 else sides[::-1]:
            t0 = time.perf_counter()
            if name in libs:
                libs[name].update_many(s[a : a + batch], y[a : a + batch], None if w is None else w[a : a + batch])
                out[name] = libs[name].get()
            else:
                h = peers[name]
                h.add(ranks[a : a + batch], y[a : a + batch], 1)
                h.add(ranks[a - big : a - big + batch], y[a - big : a - big + batch], -1)
                out[name] = h.threshold()
            times[name].append(time.perf_counter() - t0)
        assert len(set(out.values())) == 1, (i, out)
    med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
    ratio = statistics.median(b / a for a, b in zip(times["old"], times["new"]))
    print(" | ".join(f"{name} {v:.3f} ms" for name, v in med.items()) + f" | new/old {ratio:.3f}", end="")
    if peers:
        c = med["cost histogram"]
        print(f" | new/cost histogram {med['new'] / c:.2f} | old/cost histogram {med['old'] / c:.2f}")
    else:
        print()


if __name__ == "__main__":
    main()
