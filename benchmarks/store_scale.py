"""Pending decisions on disk at scale: memory, decision overhead and label cost of the store.

A :class:`~thors_stream.store.DecisionLoop` (scores, window 10,000) on a fresh SQLite store
takes ``--pending`` decisions (default 20 million) under 16-hex-digit keys (payment ids),
either growing with time (``--keys ordered``: a sequence number, a ULID, a UUIDv7) or in a
scrambled order (``--keys random``: UUIDv4-like), in batches of 10,000 (``decide_many``).
Measured:

- **memory**: the process's resident set (``VmRSS``) after opening the loop and after the
  fill, and its peak (``VmHWM``): the pending decisions live on disk, so the growth is the
  page cache SQLite keeps (``cache_mb``, 32 MiB by default) plus Python's allocator slack;
- **decision overhead**: ``decide(key, score)`` one event at a time, with the store and with
  the store replaced by a dictionary (memory only, what a loop without a store does), in
  interleaved chunks of 5,000 events, on the empty store and on the full one; the overhead
  is the difference per event, amortised over the batched commits (every 1,000 operations);
- **labels**: ``label(key, y)`` one at a time and ``label_many`` in batches of 1,000 (the
  lookup on disk, the delete, the threshold's update and the log), for labels arriving in
  decision order (the oldest pending decisions first, as chargebacks do a horizon later) and
  in random order;
- **SQLite alone**, beside them, on the same connection: the one statement a label runs
  (``DELETE ... WHERE k=? RETURNING ...``) for keys in decision order and in random order,
  and the insert a decision's commit runs (``executemany`` of 1,000 rows, then the commit):
  the floor under the store's figures on this machine.

Times are process CPU time (user + system), so that other work on the machine slows the
figures less than wall time would; SQLite's reads and writes go through the OS page cache
(``synchronous=NORMAL``: no ``fsync`` per commit), so their cost is CPU time too.

Run: ``python benchmarks/store_scale.py`` (20 million decisions: several minutes, about 1.5 GB
of disk); ``--pending 1000000`` sizes it down; ``--quick`` is a smoke run (20,000);
``--write`` records the figures in ``benchmarks/results/store_scale.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from thors_stream.store import _INSERT, _TAKE, DecisionLoop

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

    def _put(self, v: Any, kt: Any, s: float, tf: float, x: Any) -> None:
        self.d[v] = (kt, s, tf, x)

    def tick(self) -> bool:
        return False


def time_decisions(loop: DecisionLoop, start: int, n: int, rng: random.Random) -> tuple[float, float, float]:
    """CPU seconds per event of ``decide`` with the store and with a dictionary, in interleaved
    chunks of ``CHUNK`` events: the medians over chunks of each, and of their difference."""
    store, memory = loop.store, DictStore()
    with_store, without, diff = [], [], []
    i = start
    for _ in range(max(1, n // CHUNK)):
        scores = [rng.random() for _ in range(CHUNK)]
        ks = [key_of(j) for j in range(i, i + CHUNK)]
        loop.store = memory  # type: ignore[assignment]
        t0 = time.process_time()
        for k, s in zip(ks, scores):
            loop.decide(k, s, t=0.0)
        without.append((time.process_time() - t0) / CHUNK)
        loop.store = store
        t0 = time.process_time()
        for k, s in zip(ks, scores):
            loop.decide(k, s, t=0.0)
        with_store.append((time.process_time() - t0) / CHUNK)
        diff.append(with_store[-1] - without[-1])
        i += CHUNK
    return statistics.median(with_store), statistics.median(without), statistics.median(diff)


def time_labels(loop: DecisionLoop, picks: list[int], batch: bool) -> float:
    """CPU seconds per label of ``label`` one at a time, or of ``label_many`` (``batch``), for the
    keys ``picks``: the median over chunks of 1,000."""
    out = []
    for j in range(0, len(picks), 1_000):
        ks = [key_of(i) for i in picks[j:j + 1_000]]
        ys = [i % 7 == 0 for i in picks[j:j + 1_000]]
        t0 = time.process_time()
        if batch:
            loop.label_many(ks, ys)
        else:
            for k, y in zip(ks, ys):
                loop.label(k, y)
        out.append((time.process_time() - t0) / len(ks))
    return statistics.median(out)


def time_bare_take(loop: DecisionLoop, picks: list[int]) -> float:
    """CPU seconds per key of the store's one label statement alone, on its connection (commits every 1,000)."""
    loop.commit()
    conn = loop.store._conn
    ks = [key_of(i) for i in picks]
    found = 0
    out = []
    for j in range(0, len(ks), 1_000):
        t0 = time.process_time()
        for k in ks[j:j + 1_000]:
            found += conn.execute(_TAKE, (k,)).fetchone() is not None
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        out.append((time.process_time() - t0) / len(ks[j:j + 1_000]))
    loop.store._pending -= found  # (the rows are gone: the pending count follows)
    loop.commit()
    return statistics.median(out)


def time_bare_insert(loop: DecisionLoop, start: int, n: int) -> float:
    """CPU seconds per row of the insert a commit runs, alone: batches of 1,000 rows, each committed."""
    loop.commit()
    conn = loop.store._conn
    rows = [(key_of(i), i, 0.5, 0.0, None, None) for i in range(start, start + n)]
    out = []
    for j in range(0, n, 1_000):
        t0 = time.process_time()
        conn.executemany(_INSERT, rows[j:j + 1_000])
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        out.append((time.process_time() - t0) / len(rows[j:j + 1_000]))
    conn.executemany("DELETE FROM pending WHERE k=?", [(r[0],) for r in rows])  # (as they were)
    conn.execute("COMMIT")
    conn.execute("BEGIN IMMEDIATE")
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pending", type=int, default=20_000_000, help="decisions to fill the store with")
    ap.add_argument("--probe", type=int, default=100_000, help="single decisions timed at each end")
    ap.add_argument("--labels", type=int, default=20_000, help="labels timed per measure on the full store")
    ap.add_argument("--keys", choices=("random", "ordered"), default="random",
                    help="payment ids in random order (default) or growing with time")
    ap.add_argument("--dir", default=None, help="where the store goes (default: a temporary directory)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 20,000 decisions")
    ap.add_argument("--write", action="store_true", help="write benchmarks/results/store_scale.md")
    args = ap.parse_args(argv)
    if args.quick:
        args.pending, args.probe, args.labels = 20_000, 10_000, 1_000
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
    bare_insert = time_bare_insert(loop, probe_base + 2 * args.probe + 10**9, args.probe)
    # labels: in decision order (the oldest pending first), then in random order; SQLite alone beside them
    q = args.labels
    oldest = iter(range(args.pending))
    fifo_one = time_labels(loop, [next(oldest) for _ in range(q)], False)
    fifo_many = time_labels(loop, [next(oldest) for _ in range(q)], True)
    bare_fifo = time_bare_take(loop, [next(oldest) for _ in range(q)])
    picks = rng.sample(range(2 * q + q, args.pending), min(args.pending - 3 * q, 3 * q))
    rand_one = time_labels(loop, picks[:q], False)
    rand_many = time_labels(loop, picks[q:2 * q], True)
    bare_rand = time_bare_take(loop, picks[2 * q:])
    loop.commit()
    print(f"labels in decision order: {fifo_one * 1e6:.2f} us one by one, {fifo_many * 1e6:.2f} in batches "
          f"(SQLite's statement alone {bare_fifo * 1e6:.2f}); in random order: {rand_one * 1e6:.2f}, "
          f"{rand_many * 1e6:.2f} (alone {bare_rand * 1e6:.2f}); matched {loop.matched:,}", flush=True)
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
        ("decide overhead of the store, empty (us/event, median of the chunks' differences)", f"{empty[2] * 1e6:.2f}"),
        (f"decide, {args.pending:,} pending: with / without the store (us/event, CPU)",
         f"{full[0] * 1e6:.2f} / {full[1] * 1e6:.2f}"),
        (f"decide overhead of the store, {args.pending:,} pending (us/event, median of the chunks' differences)",
         f"{full[2] * 1e6:.2f}"),
        ("SQLite alone: inserting decision rows, batches of 1,000 committed (us/row, CPU)", f"{bare_insert * 1e6:.2f}"),
        ("label in decision order (lookup on disk + learn), one at a time (us/event, CPU)", f"{fifo_one * 1e6:.2f}"),
        ("label_many in decision order, batches of 1,000 (us/event, CPU)", f"{fifo_many * 1e6:.2f}"),
        ("SQLite alone: the label's statement, keys in decision order (us/event, CPU)", f"{bare_fifo * 1e6:.2f}"),
        ("label in random order, one at a time (us/event, CPU)", f"{rand_one * 1e6:.2f}"),
        ("label_many in random order, batches of 1,000 (us/event, CPU)", f"{rand_many * 1e6:.2f}"),
        ("SQLite alone: the label's statement, keys in random order (us/event, CPU)", f"{bare_rand * 1e6:.2f}"),
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
                "adds a section. Times are process CPU time per event, the median over chunks of 1,000 events "
                "(5,000 for single decisions). The rows *SQLite alone* run the store's one statement (a label's "
                "delete, a commit's insert) on its connection, without the rest: the floor under the store's "
                "figures on the machine. With keys in random order, every decision, and every label out of "
                "decision order, writes a page of the key tree; that page is most of the cost, with the store "
                "or without it.\n")
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
