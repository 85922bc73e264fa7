"""`thors replay --jsonl`: the monitoring log's cost, against the same replay without it.

Writes a CSV of n events (score with 4 decimals, label; a share ``--positives`` of positives,
scores N(1.5 y, 1)) if it does not exist yet, then runs ``thors replay`` on it in a fresh
process, with and without ``--jsonl`` (``--every 1`` by default: a log line per event),
alternating the two ``--repeats`` times, and reports the wall times (start-up included) and
their ratio. Then it checks the log: every ``cost_over_bound`` alert's bound is recomputed
from scratch (``thors_threshold`` on the window the published threshold was chosen from, then
``bounds(confidence, n_test=events)``) and must be identical to the bit.

Run: ``python benchmarks/replay_monitor.py [--events 1e6] [--window 10000] [--positives 0.05]``
(``--quick``: 10**5 events).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_csv(path: str, n: int, positives: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        f.write("score,label\n")
        for lo in range(0, n, 1_000_000):
            m = min(1_000_000, n - lo)
            y = rng.random(m) < positives
            s = rng.normal(size=m) + 1.5 * y
            block = np.char.add(np.char.add(np.char.mod("%.4f", s), ","), y.astype(int).astype(str))
            f.write("\n".join(block.tolist()))
            f.write("\n")


def replay(path: str, window: int, every: int, jsonl: str | None, out: str) -> tuple[float, float]:
    """Wall seconds of one ``thors replay`` in a fresh process, and the seconds it reports itself."""
    cmd = [sys.executable, "-m", "thors_stream", "replay", path, "--score-col", "score", "--label-col", "label",
           "--fn-cost", "10", "--fp-cost", "1", "--window", str(window), "--every", str(every), "--out", out,
           "--no-progress"]
    if jsonl is not None:
        cmd += ["--jsonl", jsonl]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    m = re.search(r"replayed [\d,]+ events in ([\d.]+) s", res.stderr)
    return wall, float(m.group(1)) if m else float("nan")


def check_alerts(path: str, log: str, window: int) -> tuple[int, int]:
    """(alerts whose bound equals the bound recomputed from scratch, alerts)."""
    from thors_stream import thors_threshold

    data = np.loadtxt(path, delimiter=",", skiprows=1)
    s, y = data[:, 0], data[:, 1] > 0.5
    same = total = 0
    prev = None
    with open(log) as f:
        for line in f:
            rec = json.loads(line)
            for a in rec["alerts"]:
                if a["type"] != "cost_over_bound":
                    continue
                at = prev["published_at"]  # the threshold live before this row's publication
                lo = max(0, at - window)
                r = thors_threshold(s[lo:at], y[lo:at], fn_cost=10, fp_cost=1)
                b = r.bounds(a["confidence"], n_test=a["events"]).cost_upper_exact
                total += 1
                same += int(b == a["bound"] and r.threshold == prev["threshold"])
            prev = rec
    return same, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=float, default=1e6)
    ap.add_argument("--window", type=int, default=10_000)
    ap.add_argument("--positives", type=float, default=0.05)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--path", default=None)
    ap.add_argument("--quick", action="store_true", help="10**5 events, one repeat")
    args = ap.parse_args()
    n = 10**5 if args.quick else int(args.events)
    repeats = 1 if args.quick else args.repeats
    tmp = tempfile.mkdtemp(prefix="thors_monitor_")
    path = args.path or os.path.join(tempfile.gettempdir(), f"thors_replay_{n}_{args.positives:g}_{args.seed}.csv")
    if not os.path.exists(path):
        write_csv(path, n, args.positives, args.seed)
    out, log = os.path.join(tmp, "t.csv"), os.path.join(tmp, "m.jsonl")
    plain, monitored = [], []
    for _ in range(repeats):
        plain.append(replay(path, args.window, args.every, None, out))
        monitored.append(replay(path, args.window, args.every, log, out))
    with open(log) as f:
        rows = sum(1 for _ in f)
    same, total = check_alerts(path, log, args.window)
    best_p = min(w for w, _ in plain)
    best_m = min(w for w, _ in monitored)
    print("| events | window | positives | every | without --jsonl, wall s | with --jsonl, wall s | ratio | "
          "log rows | alerts | alert bounds identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {n:.0e} | {args.window:,} | {args.positives:g} | {args.every} | "
          f"{' / '.join(f'{w:.1f}' for w, _ in plain)} | {' / '.join(f'{w:.1f}' for w, _ in monitored)} | "
          f"{best_m / best_p:.2f} | {rows:,} | {total} | {same} of {total} |")
    print(f"(the replay's own seconds, without start-up: without {', '.join(f'{r:.1f}' for _, r in plain)}; "
          f"with {', '.join(f'{r:.1f}' for _, r in monitored)}; ratio of the best wall times)")


if __name__ == "__main__":
    main()
