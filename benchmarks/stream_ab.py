"""Paired A/B of two builds of thors_stream on the rows of the throughput table.

``--old DIR`` names a directory holding another build of the package (``DIR/thors_stream``
with its compiled core, e.g. ``git archive <commit> thors_stream setup.py pyproject.toml``
unpacked there and ``python setup.py build_ext --inplace`` run in it); the new build is this
checkout's. Both are loaded in one process under other names, fed the same events, and
timed alternately: chunks of 500 per-event ``update`` + ``get`` (or ``update`` + ``revert``
+ ``get``), or 10,000-event batches of ``update_many`` + ``get``, the order of the two sides
swapped at every step, so that both see the same moments of the machine's other load. A row
gives each side's median (microseconds per event) and new/old: below 1, the new build is
faster. Timings are thread CPU time (``time.thread_time``), which a neighbour's load
inflates less than wall time; the batch path's second thread is not counted, so its rows
compare the calling thread's work.

Run: ``python benchmarks/stream_ab.py --old DIR`` (~10 min; ``--quick``: small windows).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FN, FP, POS_RATE = 10.0, 1.0, 0.05


def load(src: Path, name: str, tmp: Path) -> Any:
    """The package at ``src/thors_stream`` imported as ``name`` (a copy under ``tmp``)."""
    dst = tmp / name
    shutil.copytree(src / "thors_stream", dst)
    spec = importlib.util.spec_from_file_location(name, dst / "__init__.py", submodule_search_locations=[str(dst)])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def stream(n: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    if kind == "3 decimals":
        s = np.round(s, 3)
    return s, rng.random(n) < POS_RATE


def paired(steps: dict[str, Callable[[int], None]], count: int, size: int) -> dict[str, float]:
    """Median microseconds per event of each side's ``step(k)`` (k = 0 .. count - 1, each
    ``size`` events), the two sides alternated and their order swapped at every step."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for k in range(count):
        for name in names if k % 2 else names[::-1]:
            t0 = time.thread_time()
            steps[name](k)
            times[name].append(time.thread_time() - t0)
    return {name: statistics.median(v) / size * 1e6 for name, v in times.items()}


def window_steps(mods: dict[str, Any], s: np.ndarray, y: np.ndarray, n: int, backend: str = "c",
                 revert: bool = False, **kw: Any) -> dict[str, Callable[[int], None]]:
    """Per side: a window of ``n`` bulk-loaded, then chunks of 500 events."""
    steps = {}
    sl, yl = s.tolist(), y.tolist()
    for name, mod in mods.items():
        st = mod.StreamingThors(fn_cost=FN, fp_cost=FP, window=None if revert else n, backend=backend, **kw)
        st.update_many(s[:n], y[:n])
        st.get()

        def step(k: int, st: Any = st) -> None:
            upd, rev, get = st.update, st.revert, st.get
            for i in range(n + 500 * k, n + 500 * (k + 1)):
                upd(sl[i], yl[i])
                if revert:
                    rev(sl[i - n], yl[i - n])
                get()

        steps[name] = step
    return steps


def batch_steps(mods: dict[str, Any], s: np.ndarray, y: np.ndarray, n: int, warm: int = 0, w: np.ndarray | None = None,
                backend: str = "c", batch: int = 10_000) -> dict[str, Callable[[int], None]]:
    """Per side: a window of ``n`` bulk-loaded and ``warm`` events more in batches, then one
    batch a step."""
    steps = {}
    for name, mod in mods.items():
        st = mod.StreamingThors(fn_cost=FN, fp_cost=FP, window=n, backend=backend)
        st.update_many(s[:n], y[:n], None if w is None else w[:n])
        for lo in range(n, n + warm, batch):
            st.update_many(s[lo : lo + batch], y[lo : lo + batch], None if w is None else w[lo : lo + batch])
        st.get()

        def step(k: int, st: Any = st) -> None:
            lo = n + warm + k * batch
            st.update_many(s[lo : lo + batch], y[lo : lo + batch], None if w is None else w[lo : lo + batch])
            st.get()

        steps[name] = step
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, type=Path, help="directory holding the other build's thors_stream")
    ap.add_argument("--quick", action="store_true", help="small windows and few steps (smoke test)")
    args = ap.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    chunks, batches = (6, 4) if args.quick else (40, 24)
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        mods = {"old": load(args.old, "thors_ab_old", Path(tmp)), "new": load(ROOT, "thors_ab_new", Path(tmp))}
        for kind in ("uniform", "3 decimals"):
            for n in sizes:
                s, y = stream(2 * n + 500 * chunks + batches * 10_000 + 10, kind)
                rows.append((f"window {n:.0e}, {kind}: update + get",
                             paired(window_steps(mods, s, y, n), chunks, 500)))
                rows.append((f"window {n:.0e}, {kind}: update_many, 10k batches",
                             paired(batch_steps(mods, s, y, n), batches, 10_000)))
        big = sizes[-1]
        s, y = stream(3 * big + batches * 10_000 + 10, "uniform", seed=1)
        rows.append((f"window {big:.0e}: update_many after a turnover",
                     paired(batch_steps(mods, s, y, big, warm=big), batches, 10_000)))
        w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
        rows.append((f"window {big:.0e}: update_many, weighted events", paired(batch_steps(mods, s, y, big, w=w),
                                                                                batches, 10_000)))
        for n in sizes[-2:]:
            rows.append((f"{n:.0e} held: update + revert + get (no window)",
                         paired(window_steps(mods, s, y, n, revert=True), chunks, 500)))
        small = sizes[1]
        rows.append((f"window {small:.0e}: Neyman-Pearson max_fpr=0.1, update + get",
                     paired(window_steps(mods, s, y, small, max_fpr=0.1), chunks, 500)))
        for n in sizes[:2]:
            rows.append((f"window {n:.0e}, numpy backend: update_many, 10k batches",
                         paired(batch_steps(mods, s, y, n, backend="python"), max(4, batches // 4), 10_000)))
    print("| row | old us/event | new us/event | new/old |")
    print("|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['old']:.4f} | {r['new']:.4f} | {r['new'] / r['old']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
