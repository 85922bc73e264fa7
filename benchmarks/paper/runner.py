"""Run the case studies and write the raw per-round records.

:func:`run` executes every (case, round, classifier) and returns the records; the
records are also written as CSV so that :mod:`.report` can rebuild every table and
plot from them (``--report-only``) without rerunning the classifiers.
"""

from __future__ import annotations

import csv
import json
import platform
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from . import data as data_mod
from .protocol import CASES, EXTRA_METHODS, METHODS, Settings, prepare_round, round_seed, run_classifier

__all__ = ["QUICK_ROWS", "load_records", "run", "write_records"]

#: Rows kept per data set in ``--quick`` mode (stratified random subsample).
QUICK_ROWS = 2400

COST_FIELDS = ["case", "dataset", "round", "seed", "classifier", "method", "cost", "fn", "fp", "time"]
THORS_FIELDS = ["case", "round", "seed", "classifier", "threshold", "val_cost", "threshold_time", "val_fpr",
                "val_fnr", "n_val", "n_test", "test_pos", "features"]


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is in the bench extra; without it, run silently
        return None
    return tqdm(total=total, unit="task", desc="paper case studies", smoothing=0.05)


def _stratified_subsample(ds: data_mod.Dataset, rows: int, seed: int) -> data_mod.Dataset:
    if ds.n <= rows:
        return ds
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(ds.y), np.flatnonzero(~ds.y)
    k_pos = max(10, round(rows * pos.shape[0] / ds.n))
    idx = np.sort(np.concatenate([rng.choice(pos, k_pos, replace=False), rng.choice(neg, rows - k_pos, replace=False)]))
    return ds.subset(idx)


def _limit_threads() -> Any:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=1)


def run(cases: Iterable[str], rounds: int, data_dir: Path, *, quick: bool = False, settings: Settings | None = None,
        audit_path: Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Run ``rounds`` rounds of every case; return ``{"costs", "thors", "info"}`` records.

    In ``quick`` mode every data set is first subsampled to :data:`QUICK_ROWS` rows
    (stratified) and the split sizes become the paper's fractions. With ``audit_path``
    the validation and test scores THORS saw are saved there (``.npz``) so that its
    threshold and test cost can be recomputed independently.
    """
    settings = settings or Settings()
    cases = list(cases)
    t_start = time.perf_counter()
    limiter = _limit_threads()
    datasets: dict[str, data_mod.Dataset] = {}
    for name in cases:
        d = CASES[name].dataset
        if d not in datasets:
            ds = data_mod.load(d, data_dir)
            datasets[d] = _stratified_subsample(ds, QUICK_ROWS, 7) if quick else ds
    total = sum(CASES[c].n_rounds(rounds) * len(CASES[c].classifiers) for c in cases)
    bar = _progress(total, progress)
    costs: list[dict[str, Any]] = []
    thors: list[dict[str, Any]] = []
    audit: dict[str, np.ndarray] = {}
    case_time: dict[str, float] = {}
    try:
        for name in cases:
            case = CASES[name]
            ds = datasets[case.dataset]
            t_case = time.perf_counter()
            for r in range(case.n_rounds(rounds)):
                seed = round_seed(case, r)
                rd = prepare_round(ds, case, seed, settings)
                for clf in case.classifiers:
                    if bar is not None:
                        bar.set_postfix_str(f"{name} r{r + 1} {clf}")
                    out = run_classifier(rd, case, clf, seed, settings, audit=audit_path is not None)
                    for method in METHODS + EXTRA_METHODS:
                        m = out["methods"][method]
                        costs.append({"case": name, "dataset": case.dataset, "round": r, "seed": seed,
                                      "classifier": clf, "method": method, "cost": m["cost"], "fn": m["fn"],
                                      "fp": m["fp"], "time": m["time"]})
                    t = out["thors"]
                    thors.append({"case": name, "round": r, "seed": seed, "classifier": clf,
                                  "threshold": t["threshold"], "val_cost": t["val_cost"],
                                  "threshold_time": t["threshold_time"], "val_fpr": t["val_fpr"],
                                  "val_fnr": t["val_fnr"], "n_val": int(rd.y_va.shape[0]),
                                  "n_test": int(rd.y_te.shape[0]), "test_pos": int(rd.y_te.sum()),
                                  "features": " ".join(rd.features)})
                    if audit_path is not None:
                        for k, v in out["audit"].items():
                            audit[f"{name}|{r}|{clf}|{k}"] = v
                    if bar is not None:
                        bar.update(1)
            case_time[name] = time.perf_counter() - t_case
    finally:
        if bar is not None:
            bar.close()
        if limiter is not None:
            limiter.restore_original_limits()
    if audit_path is not None:
        np.savez_compressed(audit_path, **audit)
    info = run_info(cases, rounds, quick, settings, datasets, time.perf_counter() - t_start, case_time)
    return {"costs": costs, "thors": thors, "info": info}


def run_info(cases: list[str], rounds: int, quick: bool, settings: Settings, datasets: dict[str, Any],
             wall: float, case_time: dict[str, float]) -> dict[str, Any]:
    """Settings, versions, machine and timing of a run, as a JSON-ready dict."""
    import sklearn

    import thors_stream

    try:
        import river

        river_version = river.__version__
    except ImportError:  # pragma: no cover
        river_version = None
    return {
        "cases": cases, "rounds": rounds, "quick": quick,
        "settings": settings.__dict__,
        "datasets": {k: {"rows": v.n, "positives": v.n_pos, "note": v.note} for k, v in datasets.items()},
        "wall_seconds": wall, "case_seconds": case_time,
        "python": platform.python_version(), "numpy": np.__version__, "sklearn": sklearn.__version__,
        "river": river_version, "thors_stream": thors_stream.__version__,
        "machine": f"{platform.machine()}, {_cpu_name()}, {_ncpu()} logical CPUs",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _ncpu() -> int:
    import os

    return os.cpu_count() or 0


def write_records(res: dict[str, Any], out: Path) -> None:
    """Write ``raw_costs.csv``, ``raw_thors.csv`` and ``run_info.json`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for fname, fields, rows in (("raw_costs.csv", COST_FIELDS, res["costs"]),
                                ("raw_thors.csv", THORS_FIELDS, res["thors"])):
        with open(out / fname, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            for row in rows:
                w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    (out / "run_info.json").write_text(json.dumps(res["info"], indent=2, default=str) + "\n")


def load_records(out: Path) -> dict[str, Any]:
    """Read back what :func:`write_records` wrote (numbers parsed)."""
    def rows(fname: str) -> list[dict[str, Any]]:
        with open(out / fname, newline="") as f:
            return list(csv.DictReader(f))

    costs = rows("raw_costs.csv")
    for c in costs:
        c["round"], c["seed"], c["fn"], c["fp"] = int(c["round"]), int(c["seed"]), int(c["fn"]), int(c["fp"])
        c["cost"], c["time"] = float(c["cost"]), float(c["time"])
    thors = rows("raw_thors.csv")
    for t in thors:
        for k in ("round", "seed", "n_val", "n_test", "test_pos"):
            t[k] = int(t[k])
        for k in ("threshold", "val_cost", "threshold_time", "val_fpr", "val_fnr"):
            t[k] = float(t[k])
    info = json.loads((out / "run_info.json").read_text())
    return {"costs": costs, "thors": thors, "info": info}
