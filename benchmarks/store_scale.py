"""Pending decisions on disk at scale: memory, decision overhead and label cost of the store.

A :class:`~thors_stream.store.DecisionLoop` (scores, window 10,000) on a fresh SQLite store
takes ``--pending`` decisions (default 20 million) under random 16-hex-digit keys (payment
ids), in batches of 10,000 (``decide_many``). Measured:

- **memory**: the process's resident set (``VmRSS``) after opening the loop and after the
  fill, and its peak (``VmHWM``): the pending decisions live on disk, so the growth is the
  page cache SQLite keeps (``cache_mb``, 32 MiB by default) plus Python's allocator slack;
- **decision overhead**: ``decide(key, score)`` one event at a time, with the store and with
  the store replaced by a dictionary (memory only, what a loop without a store does), in
  interleaved chunks of 5,000 events, on the empty store and on the full one; the overhead
  is the difference per event, amortised over the batched commits (every 1,000 operations);
- **labels**: ``label(key, y)`` one at a time for random keys decided during the fill (a
  lookup on disk, the delete, the threshold's update and the log), and ``label_many`` in
  batches of 1,000.

Times are process CPU time (user + system), so that other work on the machine slows the
figures less than wall time would; SQLite's reads and writes go through the OS page cache
(``synchronous=NORMAL``: no ``fsync`` per commit), so their cost is CPU time too.

Run: ``python benchmarks/store_scale.py`` (20 million decisions: several minutes, about 3 GB
of disk); ``--pending 1000000`` sizes it down; ``--quick`` is a smoke run (20,000);
``--write`` records the figures in ``benchmarks/results/store_scale.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from thors_stream.store import DecisionLoop

MASK = 2**64 - 1
BATCH = 10_000
CHUNK = 5_000


def random_key(i: int) -> str:
    """The i-th payment id, random: 16 hex digits in a scrambled order (each insert lands
    somewhere else in the key index, as UUIDv4-like ids do)."""
    return f"{(i * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & MASK:016x}"


def ordered_key(i: int) -> str:
    """The i-th payment id, growing with time (a sequence number, a ULID or UUIDv7 prefix):
    16 hex digits in increasing order (inserts append to the key index)."""
    return f"{i:016x}"


key_of = random_key


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


class DictStore:
    """The store replaced by a dictionary: what deciding costs without one (the loop's calls
    into its store, answered in memory)."""

    def __init__(self) -> None:
        self.d: dict[Any, tuple[Any, ...]] = {}

    def _check_open(self) -> None:
        pass

    def _segment_text(self, segment: Any) -> Any:
        return None

    def _put(self, v: Any, kt: Any, s: float, fn: float, fp: float, seg: Any, tf: float, nm: int) -> None:
        self.d[v] = (kt, s, fn, fp, seg, tf, nm)

    def tick(self) -> bool:
        return False


def time_decisions(loop: DecisionLoop, start: int, n: int, rng: random.Random) -> tuple[float, float]:
    """CPU seconds per event of ``decide`` with the store and with a dictionary, interleaved."""
    store, memory = loop.store, DictStore()
    with_store = without = 0.0
    i = start
    for _ in range(max(1, n // CHUNK)):
        scores = [rng.random() for _ in range(CHUNK)]
        ks = [key_of(j) for j in range(i, i + CHUNK)]
        loop.store = memory  # type: ignore[assignment]
        t0 = time.process_time()
        for k, s in zip(ks, scores):
            loop.decide(k, s, t=0.0)
        without += time.process_time() - t0
        loop.store = store
        t0 = time.process_time()
        for k, s in zip(ks, scores):
            loop.decide(k, s, t=0.0)
        with_store += time.process_time() - t0
        i += CHUNK
    m = max(1, n // CHUNK) * CHUNK
    return with_store / m, without / m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pending", type=int, default=20_000_000, help="decisions to fill the store with")
    ap.add_argument("--probe", type=int, default=100_000, help="single decisions timed at each end")
    ap.add_argument("--labels", type=int, default=100_000, help="single labels timed on the full store")
    ap.add_argument("--keys", choices=("random", "ordered"), default="random",
                    help="payment ids in random order (default) or growing with time")
    ap.add_argument("--dir", default=None, help="where the store goes (default: a temporary directory)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 20,000 decisions")
    ap.add_argument("--write", action="store_true", help="write benchmarks/results/store_scale.md")
    args = ap.parse_args(argv)
    if args.quick:
        args.pending, args.probe, args.labels = 20_000, 10_000, 5_000
    global key_of
    key_of = random_key if args.keys == "random" else ordered_key
    workdir = tempfile.mkdtemp(prefix="store_scale_", dir=args.dir)
    path = os.path.join(workdir, "fraud.sqlite")
    rng = random.Random(0)
    loop = DecisionLoop(path, fn_cost=20.0, fp_cost=1.0, window=10_000, warm_up=0)
    rss0 = rss_mb()
    probe_base = 1 << 40  # probe keys apart from the fill's
    empty = time_decisions(loop, probe_base, args.probe, rng)
    print(f"empty store: decide {empty[0] * 1e6:.2f} us/event with the store, {empty[1] * 1e6:.2f} without",
          flush=True)
    t_fill, w_fill = time.process_time(), time.perf_counter()
    marks = []
    n = 0
    while n < args.pending:
        m = min(BATCH, args.pending - n)
        loop.decide_many([key_of(i) for i in range(n, n + m)], [rng.random() for _ in range(m)], t=0.0)
        n += m
        if n % max(BATCH, args.pending // 10) == 0 or n == args.pending:
            marks.append((n, time.process_time() - t_fill, time.perf_counter() - w_fill, rss_mb()))
            print(f"  {n:>11,} pending  cpu {marks[-1][1]:7.1f} s  wall {marks[-1][2]:7.1f} s  "
                  f"rss {marks[-1][3]:7.1f} MB", flush=True)
    loop.commit()
    fill_cpu = time.process_time() - t_fill
    full = time_decisions(loop, probe_base + args.probe, args.probe, rng)
    print(f"full store: decide {full[0] * 1e6:.2f} us/event with the store, {full[1] * 1e6:.2f} without", flush=True)
    # labels: random keys decided during the fill
    picks = rng.sample(range(args.pending), min(args.pending, args.labels + 100_000))
    single, batch = picks[:args.labels // 2], picks[args.labels // 2: args.labels]
    t0 = time.process_time()
    for i in single:
        loop.label(key_of(i), i % 7 == 0)
    label_one = (time.process_time() - t0) / max(1, len(single))
    t0 = time.process_time()
    for j in range(0, len(batch), 1_000):
        chunk = batch[j:j + 1_000]
        loop.label_many([key_of(i) for i in chunk], [i % 7 == 0 for i in chunk])
    label_many = (time.process_time() - t0) / max(1, len(batch))
    loop.commit()
    print(f"labels: {label_one * 1e6:.2f} us/event one by one, {label_many * 1e6:.2f} in batches of 1,000; "
          f"matched {loop.matched:,}", flush=True)
    rss1, hwm = rss_mb(), rss_mb("VmHWM")
    pending = loop.pending
    loop.close()
    size = sum(f.stat().st_size for f in Path(workdir).iterdir()) / 2**20
    rows = [
        ("keys", "random (scrambled)" if args.keys == "random" else "ordered (growing with time)"),
        ("pending decisions in the store", f"{pending:,}"),
        ("resident memory after opening / after the fill / peak (MB)", f"{rss0:.0f} / {rss1:.0f} / {hwm:.0f}"),
        ("resident memory growth (MB)", f"{rss1 - rss0:.0f}"),
        ("store file size (MB)", f"{size:,.0f}"),
        ("fill with decide_many, batches of 10,000 (us/event, CPU)", f"{fill_cpu / args.pending * 1e6:.2f}"),
        ("decide, empty store: with / without the store (us/event, CPU)",
         f"{empty[0] * 1e6:.2f} / {empty[1] * 1e6:.2f}"),
        ("decide overhead of the store, empty (us/event)", f"{(empty[0] - empty[1]) * 1e6:.2f}"),
        (f"decide, {args.pending:,} pending: with / without the store (us/event, CPU)",
         f"{full[0] * 1e6:.2f} / {full[1] * 1e6:.2f}"),
        (f"decide overhead of the store, {args.pending:,} pending (us/event)", f"{(full[0] - full[1]) * 1e6:.2f}"),
        ("label (lookup on disk + learn), one at a time (us/event, CPU)", f"{label_one * 1e6:.2f}"),
        ("label_many, batches of 1,000 (us/event, CPU)", f"{label_many * 1e6:.2f}"),
    ]
    table = "| measure | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    fills = "| pending | CPU (s) | wall (s) | RSS (MB) |\n|---|---|---|---|\n" + "\n".join(
        f"| {n:,} | {c:.1f} | {w:.1f} | {r:.0f} |" for n, c, w, r in marks)
    print(table)
    print(fills)
    if args.write:
        cmd = "python benchmarks/store_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
        out = Path(__file__).parent / "results" / "store_scale.md"
        head = ("# Pending decisions on disk at scale\n\nWritten by `benchmarks/store_scale.py --write`; each run "
                "adds a section.\n")
        old = out.read_text(encoding="utf-8") if out.exists() else head
        out.write_text(
            f"{old.rstrip()}\n\n## {args.pending:,} decisions, {args.keys} keys\n\nCommand: `{cmd.strip()}`\n\n"
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"SQLite {__import__('sqlite3').sqlite_version}, {platform.system()}; other work was running on the "
            "machine during the run (figures are process CPU time, which that slows less than wall time).\n\n"
            f"{table}\n\nThe fill, step by step:\n\n{fills}\n", encoding="utf-8")
        print(f"wrote {out}")
    for f in Path(workdir).iterdir():
        f.unlink()
    os.rmdir(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
