"""When ``update_many`` should rebuild the compiled tree rather than change it leaf by leaf.

A batch of ``m`` changes (a window batch of ``b`` events makes ``m = 2b``: ``b`` arrivals
and ``b`` expiries) into a tree of ``n`` keys is either merged into the tree's sorted
export and rebuilt, O(n + m), or applied leaf by leaf (two threads on large trees),
O(m log n) with a cache miss per touched leaf. The core rebuilds when ``n < r * m``.
This script times ``StreamingThors.update_many`` in 10,000-event batches through windows
of 5e4 to 1e6 distinct uniform scores, with both paths forced (``r = 0``: never rebuild;
``r = 2**40``: always) and with the previous (16) and current (``REBUILD_RATIO``) ratios.
The configurations run side by side, batch by batch on the same events (so bursts of
load from other processes hit them alike); each figure is the median over the timed
batches. Compiled backend only.

Run: ``python benchmarks/batch_crossover.py`` (about 2 min); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

BATCH = 10_000
BEFORE = "r = 16 (before)"
NOW = "r = {} (now)"


def current_ratio() -> int:
    from thors_stream import _ctree

    now = _ctree._set_rebuild_ratio(16)  # (the setter returns the previous value)
    _ctree._set_rebuild_ratio(now)
    return now


def run(windows: list[int], batches: int) -> list[dict[str, float]]:
    from thors_stream import _ctree

    now = current_ratio()
    configs = {"leaf by leaf": 0, "rebuild": 2**40, BEFORE: 16, NOW.format(now): now}
    rows = []
    rng = np.random.default_rng(0)
    for n in windows:
        s = rng.random(n + BATCH * batches)
        y = rng.random(s.shape[0]) < 0.05
        objs = {}
        for name in configs:
            st = StreamingThors(fn_cost=10, fp_cost=1, window=n, backend="c")
            for lo in range(0, n, BATCH):
                st.update_many(s[lo : lo + BATCH], y[lo : lo + BATCH])
            st.get()
            objs[name] = st
        times: dict[str, list[float]] = {name: [] for name in configs}
        try:
            for k in range(batches):
                lo = n + k * BATCH
                order = list(configs) if k % 2 == 0 else list(configs)[::-1]
                for name in order:
                    _ctree._set_rebuild_ratio(configs[name])
                    t0 = time.perf_counter()
                    objs[name].update_many(s[lo : lo + BATCH], y[lo : lo + BATCH])
                    objs[name].get()
                    times[name].append((time.perf_counter() - t0) / BATCH * 1e6)
        finally:
            _ctree._set_rebuild_ratio(now)
        answers = {o.get() for o in objs.values()}
        assert len(answers) == 1, answers  # the same events: the same threshold
        rows.append({"n": n, **{name: statistics.median(v) for name, v in times.items()}})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small windows, a few batches (smoke run)")
    args = ap.parse_args(argv)
    if "c" not in available_backends():
        print("batch_crossover: the compiled backend is not built; nothing to time")
        return 0
    windows = [50_000, 100_000] if args.quick else [50_000, 100_000, 200_000, 300_000, 500_000, 1_000_000]
    rows = run(windows, 4 if args.quick else 20)
    names = [k for k in rows[0] if k != "n"]
    now = NOW.format(current_ratio())
    print(f"batch_crossover: update_many in {BATCH:,}-event window batches (m = {2 * BATCH:,} changes), "
          f"us/event, median; Python {platform.python_version()} on {platform.machine()}")
    print()
    print("| window n | n / m | " + " | ".join(names) + " | before / now |")
    print("|---:|---:|" + "---:|" * len(names) + "---:|")
    for r in rows:
        cells = " | ".join(f"{r[k]:.3f}" for k in names)
        print(f"| {r['n']:,} | {r['n'] / (2 * BATCH):.1f} | {cells} | {r[BEFORE] / r[now]:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
