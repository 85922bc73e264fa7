"""Scaling of the exact dask THORS threshold: 1e6, 1e7 and 1e8 rows on 1 and 2 worker processes.

The rows are generated lazily inside the workers (``dask.dataframe.from_map`` of a seeded
generator per partition: 5% positives, scores ``N(0,1) + 1.5*y`` in float64, so every score
is distinct: the worst case for the aggregation, the shuffle moves one key per row). For
each size and worker count a fresh ``LocalCluster(processes=True, threads_per_worker=1)``
runs

- a *data-only* pass (generate every partition and sum a column): the floor any
  distributed computation over these rows pays;
- ``thors_stream.dask.thors_threshold`` (one pass, one shuffle of the aggregates);

and reports wall time, peak RSS per worker (``resource.getrusage`` in each worker through
``client.run``; the process's peak since the cluster started) and the ratio to the
single-machine ``thors_stream.thors_threshold`` on the same rows materialised in this
process (its time excludes generating the rows). Every dask answer is checked against the
single-machine one (identical threshold and cost: the weights are 1, so sums are exact).

It ends with an on-paper estimate for 1e10 rows on 100 workers from the measured per-row
cost (assumptions printed with it).

Run: ``python benchmarks/dask_scale.py`` (about 2 minutes on 2 cores; ``--quick`` for 1e5 and
1e6 only; ``--sizes 1e6,1e7`` to choose; ``--round 3`` rounds the scores to show memory
following the distinct scores rather than the rows). Needs the dask extra.
"""

from __future__ import annotations

import argparse
import gc
import logging
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from thors_stream import thors_threshold as single_threshold

FN, FP = 10.0, 1.0
SEED = 2026
ROWS_PER_PART = 2_000_000


def make_partition(i: int, m: int, decimals: int | None = None):
    """Partition ``i`` (``m`` rows): the same rows wherever it runs; scores rounded when ``decimals`` is set."""
    import pandas as pd

    rng = np.random.default_rng([SEED, i])
    y = rng.random(m) < 0.05
    s = rng.normal(size=m) + 1.5 * y
    return pd.DataFrame({"score": s if decimals is None else np.round(s, decimals), "label": y})


def layout(n: int) -> list[int]:
    parts = max(8, -(-n // ROWS_PER_PART))
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts)]


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM) since start or the last :func:`reset_peak`, in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB; never reset


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_dask(n: int, workers: int, decimals: int | None) -> dict:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from thors_stream.dask import thors_threshold

    sizes = layout(n)
    meta = pd.DataFrame({"score": pd.Series(dtype="float64"), "label": pd.Series(dtype="bool")})
    ddf = dd.from_map(make_partition, range(len(sizes)), sizes, [decimals] * len(sizes), meta=meta,
                      enforce_metadata=False)
    with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None,
                      memory_limit="10GiB", silence_logs=logging.CRITICAL) as cl, Client(cl) as client:
        # warm-up: imports and code shipping happen here, not in the timed runs
        warm = dd.from_map(make_partition, range(2 * workers), [1000] * (2 * workers), meta=meta)
        warm["score"].sum().compute()
        thors_threshold(warm, score_col="score", label_col="label", fn_cost=FN, fp_cost=FP)
        client.run(gc.collect)
        client.run(reset_peak)
        base = max(client.run(peak_rss_mb).values())
        t0 = time.perf_counter()
        total = ddf["score"].sum().compute()
        t_data = time.perf_counter() - t0
        assert np.isfinite(total)
        peak_data = max(client.run(peak_rss_mb).values())
        client.run(reset_peak)
        t0 = time.perf_counter()
        r = thors_threshold(ddf, score_col="score", label_col="label", fn_cost=FN, fp_cost=FP)
        t_thors = time.perf_counter() - t0
        peak = max(client.run(peak_rss_mb).values())
    return {"t_data": t_data, "t_thors": t_thors, "peak_mb": peak, "peak_data_mb": peak_data, "base_mb": base,
            "parts": len(sizes), "r": r}


def run_single(n: int, decimals: int | None) -> tuple[float, object, float]:
    sizes = layout(n)
    frames = [make_partition(i, m, decimals) for i, m in enumerate(sizes)]
    s = np.concatenate([f["score"].to_numpy() for f in frames])
    y = np.concatenate([f["label"].to_numpy() for f in frames])
    del frames
    single_threshold(s[:1000], y[:1000], fn_cost=FN, fp_cost=FP)  # warm-up
    gc.collect()
    reset_peak()
    before = peak_rss_mb()
    t0 = time.perf_counter()
    r = single_threshold(s, y, fn_cost=FN, fp_cost=FP)
    dt = time.perf_counter() - t0
    extra = peak_rss_mb() - before  # working memory of the call, beyond its input arrays
    del s, y
    gc.collect()
    return dt, r, extra


def fmt_n(n: int) -> str:
    e = round(float(np.log10(n)))
    return f"1e{e}" if n == 10**e else f"{n:,}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--quick", action="store_true", help="sizes 1e5 and 1e6")
    ap.add_argument("--single-max", type=float, default=1e8,
                    help="largest size also run on one machine (1e8 float64 scores + sort: ~3 GB)")
    ap.add_argument("--round", type=int, default=None, metavar="DECIMALS",
                    help="round the scores (few distinct values: shows memory following distinct scores, not rows)")
    args = ap.parse_args(argv)
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        print("needs the dask extra: pip install 'thors_stream[dask]'", file=sys.stderr)
        return 2
    sizes = [100_000, 1_000_000] if args.quick else [int(float(x)) for x in args.sizes.split(",")]
    t_start = time.perf_counter()
    rows = []
    per_row = {}
    for n in sizes:
        single = run_single(n, args.round) if n <= args.single_max else None
        for workers in (1, 2):
            d = run_dask(n, workers, args.round)
            same = None if single is None else (d["r"] == single[1])
            rows.append((n, workers, d, single, same))
            per_row[(n, workers)] = d["t_thors"] / n
            print(f"  done n={fmt_n(n)} workers={workers}: {d['t_thors']:.1f} s", file=sys.stderr, flush=True)

    kind = "all distinct" if args.round is None else f"rounded to {args.round} decimals"
    print(f"scores: N(0,1) + 1.5*y, float64, {kind}\n")
    print("| rows | partitions | workers | data-only pass (s) | dask THORS (s) | THORS / data pass "
          "| peak RSS per worker: data pass / THORS (MB) | single machine (s) | its working memory (MB) "
          "| dask / single | identical |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for n, workers, d, single, same in rows:
        st = "-" if single is None else f"{single[0]:.2f}"
        sm = "-" if single is None else f"{single[2]:,.0f}"
        ratio = "-" if single is None else f"{d['t_thors'] / single[0]:.1f}x"
        print(f"| {fmt_n(n)} | {d['parts']} | {workers} | {d['t_data']:.2f} | {d['t_thors']:.2f} | "
              f"{d['t_thors'] / d['t_data']:.1f}x | {d['peak_data_mb']:,.0f} / {d['peak_mb']:,.0f} | {st} | {sm} | "
              f"{ratio} | "
              f"{'-' if same is None else same} |")
    print(f"\nworker RSS after start-up and warm-up: ~{rows[0][2]['base_mb']:,.0f} MB (peaks are VmHWM, reset after "
          "the warm-up and between the two passes); single machine: peak RSS during the call minus RSS before it "
          "(the input arrays: 9 bytes per row)")

    n_big = max(sizes)
    one, two = per_row[(n_big, 1)], per_row[(n_big, 2)]
    print(f"\nspeed-up 1 -> 2 workers at {fmt_n(n_big)}: {one / two:.2f}x "
          f"(2 cores shared with other jobs, so at most 2x)")
    if args.round is not None:  # the estimate below assumes all-distinct scores
        print(f"\nbenchmark wall time: {time.perf_counter() - t_start:.0f} s")
        return 0
    core_s_per_row = one  # one worker = one core doing everything, shuffle included (local)
    rows_1e10, workers_100 = 10**10, 100
    compute = rows_1e10 * core_s_per_row / workers_100
    shuffle_gb = rows_1e10 * 16 / 1e9  # all-distinct scores: one 16-byte key per row
    net = shuffle_gb / workers_100 / 1.0  # each worker sends and receives its share at ~1 GB/s
    parts = rows_1e10 // 10**7
    sched = parts * workers_100 * 300e-6  # P x R slice tasks at ~300 us of scheduler time each
    print(
        f"\non-paper estimate, 1e10 rows on 100 workers (1 core each), all scores distinct:\n"
        f"- compute: 1e10 rows x {core_s_per_row * 1e9:.0f} ns/row (measured, 1 worker, {fmt_n(n_big)}) / 100 "
        f"= {compute:,.0f} s\n"
        f"- shuffle: {shuffle_gb:,.0f} GB of aggregates in total, {shuffle_gb / workers_100:.1f} GB in and out per "
        f"worker at ~1 GB/s (10 GbE) = {net:,.0f} s, overlapping the compute in part\n"
        f"- scheduler: {parts:,} partitions of 1e7 rows x n_ranges=100 = {parts * workers_100:,} slice tasks at "
        f"~300 us = {sched:,.0f} s (keep n_ranges ~ number of workers)\n"
        f"- memory per worker: {rows_1e10 / workers_100 * 16 / 1e9:.1f} GB of aggregates for its ranges, "
        f"about 3x that while a range is merged, plus one 1e7-row partition being read\n"
        f"=> roughly {compute + net + sched:,.0f} s end to end; fewer distinct scores (e.g. float32 or "
        f"rounded probabilities) shrink the shuffle and the range work proportionally"
    )
    print(f"\nbenchmark wall time: {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
