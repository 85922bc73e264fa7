"""Sharded streaming: one THORS threshold for a stream consumed by several worker processes.

A labelled stream arrives in ``--shards`` partitions (as a Kafka topic would). Each
partition is consumed by its own dask actor, in its own worker process of a
``distributed.LocalCluster``; the actor keeps a windowed ``StreamingThors`` of the last
``--window`` labelled events of *its* partition. Every tick a coordinator gathers the
shards' summaries (they pickle), merges them with ``StreamingThors.merged`` and publishes
the threshold of the union of the windows.

The check: the coordinator rebuilds, independently, the events each shard must be holding
(the last ``window`` of each partition, regenerated from the same seeds) and compares the
published threshold and cost with a single ``StreamingThors`` holding exactly that union
and with the batch ``thors_threshold``; the script exits non-zero on a mismatch. Scores
are rounded to 1e-3, so equal scores occur across shards and must be merged.

Run: ``python examples/dask_shards.py`` (about 10-20 s, most of it cluster start-up;
``--quick`` for a smaller run). Needs the dask extra: ``pip install 'thors_stream[dask]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

import numpy as np

from thors_stream import StreamingThors, thors_threshold

FN_COST, FP_COST = 10.0, 1.0
SEED = 7


def partition_batch(shard: int, tick: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Events ``tick*size .. (tick+1)*size`` of partition ``shard``: the same on any machine.

    Partitions differ in their positive rate and score shift, so the per-shard thresholds
    differ from the global one.
    """
    rng = np.random.default_rng([SEED, shard, tick])
    y = rng.random(size) < 0.04 + 0.02 * shard
    s = np.round(rng.normal(size=size) + 1.6 * y + 0.2 * shard, 3)
    return s, y


class ShardConsumer:
    """Lives in one worker process: consumes one partition into a windowed StreamingThors."""

    def __init__(self, shard: int, window: int) -> None:
        self.shard = shard
        self.ticks = 0
        self.st = StreamingThors(fn_cost=FN_COST, fp_cost=FP_COST, window=window)

    def consume(self, size: int) -> int:
        """Read the partition's next ``size`` events (in mini-batches, as they arrive)."""
        s, y = partition_batch(self.shard, self.ticks, size)
        for lo in range(0, size, 1_000):
            self.st.update_many(s[lo:lo + 1_000], y[lo:lo + 1_000])
        self.ticks += 1
        return len(self.st)

    def summary(self) -> StreamingThors:
        """The shard's held events as a compact, unwindowed copy; pickled on the way to the coordinator.

        ``StreamingThors.merged([st])`` keeps the per-score totals and drops the expiry
        queue, so the message costs 40 bytes per distinct score instead of adding 17
        bytes per held event (here ~4x smaller); the coordinator needs no queue.
        """
        return StreamingThors.merged([self.st])


def union_of_windows(shards: int, ticks: int, size: int, window: int) -> tuple[np.ndarray, np.ndarray]:
    """What the shards must hold after ``ticks`` ticks, rebuilt without the cluster."""
    parts_s, parts_y = [], []
    for k in range(shards):
        batches = [partition_batch(k, t, size) for t in range(ticks)]
        s = np.concatenate([b[0] for b in batches])[-window:]
        y = np.concatenate([b[1] for b in batches])[-window:]
        parts_s.append(s)
        parts_y.append(y)
    return np.concatenate(parts_s), np.concatenate(parts_y)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--window", type=int, default=40_000)
    ap.add_argument("--batch", type=int, default=15_000, help="events per shard per tick")
    ap.add_argument("--ticks", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="2 shards, 4 ticks, small windows")
    ap.add_argument("--address", help="use this running scheduler instead of starting a LocalCluster")
    args = ap.parse_args(argv)
    if args.quick:
        args.shards, args.window, args.batch, args.ticks = 2, 5_000, 2_000, 4
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("this example needs dask.distributed: pip install 'thors_stream[dask]'", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if args.address:
            client = stack.enter_context(Client(args.address))
        else:
            cl = stack.enter_context(LocalCluster(n_workers=args.shards, processes=True, threads_per_worker=1,
                                                  dashboard_address=None))
            client = stack.enter_context(Client(cl))
        workers = list(client.scheduler_info()["workers"])
        t_up = time.perf_counter() - t0
        # one actor per shard, each pinned to its own worker process
        actors = [client.submit(ShardConsumer, k, args.window, actor=True, workers=[workers[k % len(workers)]])
                  .result() for k in range(args.shards)]
        print(f"{args.shards} shard consumers on {len(workers)} worker processes (cluster ready in {t_up:.1f} s); "
              f"window {args.window:,} per shard, {args.batch:,} events per shard per tick\n")
        print("| tick | events seen | held (union) | published threshold | cost | gather+merge (ms) "
              "| = single StreamingThors | = thors_threshold |")
        print("|---:|---:|---:|---:|---:|---:|:---:|:---:|")
        all_ok = True
        for tick in range(1, args.ticks + 1):
            for f in [a.consume(args.batch) for a in actors]:  # the shards consume in parallel
                f.result()
            tm = time.perf_counter()
            summaries = [f.result() for f in [a.summary() for a in actors]]
            hub = StreamingThors.merged(summaries)
            published = hub.result()
            ms = 1e3 * (time.perf_counter() - tm)

            s, y = union_of_windows(args.shards, tick, args.batch, args.window)
            single = StreamingThors(fn_cost=FN_COST, fp_cost=FP_COST)
            single.update_many(s, y)
            batch = thors_threshold(s, y, fn_cost=FN_COST, fp_cost=FP_COST)
            ok_single = (single.get(), single.cost, len(single)) == (hub.get(), hub.cost, len(hub))
            ok_batch = published == batch
            all_ok &= ok_single and ok_batch
            print(f"| {tick} | {tick * args.batch * args.shards:,} | {len(hub):,} | {published.threshold:.3f} | "
                  f"{published.cost:,.0f} | {ms:.0f} | {ok_single} | {ok_batch} |")
        own = [f.result() for f in [a.summary() for a in actors]]
        print("\nper-shard thresholds (what each shard alone would publish): "
              + ", ".join(f"{st.get():.3f}" for st in own))
    print(f"\nmerged threshold equals the single-summary and batch answers at every tick: {all_ok} "
          f"(total {time.perf_counter() - t0:.1f} s)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
