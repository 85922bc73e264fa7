"""`thors fit` on a large CSV: wall time and peak memory, parsing vs thresholding.

Writes a CSV of n rows (score with 6 decimals, label; 5% positives) if it does not
exist yet, then runs ``thors fit --json`` on it in a fresh process once per reader
engine (the standard-library reader, and pyarrow when installed), and prints the
split reported by the command itself (parse seconds, threshold seconds, peak RSS).

Run: ``python benchmarks/fit_large.py [--rows 1e7] [--path /tmp/thors_1e7.csv]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def write_csv(path: str, n: int) -> None:
    rng = np.random.default_rng(0)
    with open(path, "w") as f:
        f.write("score,label\n")
        for lo in range(0, n, 1_000_000):
            m = min(1_000_000, n - lo)
            y = rng.random(m) < 0.05
            s = rng.normal(size=m) + 1.5 * y
            block = np.char.add(np.char.add(np.char.mod("%.6f", s), ","), y.astype(int).astype(str))
            f.write("\n".join(block.tolist()))
            f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--path", default=None)
    args = ap.parse_args()
    n = int(args.rows)
    path = args.path or f"/tmp/thors_fit_{n}.csv"
    if not os.path.exists(path):
        t0 = time.perf_counter()
        write_csv(path, n)
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:,.0f} MB) in {time.perf_counter() - t0:.1f} s")
    engines = ["python"]
    try:
        import pyarrow  # noqa: F401

        engines.append("pyarrow")
    except ImportError:
        print("pyarrow not installed: only the standard-library reader is measured")
    print("| rows | engine | wall s | parse s | threshold s | peak RSS MB | threshold |")
    print("|---|---|---|---|---|---|---|")
    for eng in engines:
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "thors_stream.cli", "fit", path, "--score-col", "score", "--label-col", "label",
             "--fn-cost", "10", "--fp-cost", "1", "--json", "--engine", eng],
            capture_output=True, text=True, check=True,
        ).stdout
        wall = time.perf_counter() - t0
        d = json.loads(out)
        print(f"| {n:.0e} | {eng} | {wall:.1f} | {d['parse_seconds']:.1f} | {d['threshold_seconds']:.2f} "
              f"| {d.get('peak_rss_mb', float('nan')):,.0f} | {d['threshold']} |", flush=True)


if __name__ == "__main__":
    main()
