"""Smoke test of the paper replication (``python -m benchmarks.paper --quick``).

Runs the quick mode once (2 rounds on subsampled data, well under a minute) into a
temporary directory and checks that the outputs exist and agree with each other and
with a direct recomputation: THORS's threshold and test cost are recomputed from the
saved scores by brute force, every raw cost from its error counts, every win/loss
count from the raw costs. Skips when scikit-learn (the ``bench`` extra) or the data
directory is missing; fails when the data is present but broken.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest.importorskip("sklearn", reason="the paper benchmark needs the 'bench' extra (scikit-learn)")

from benchmarks.paper import paper_values as pv  # noqa: E402
from benchmarks.paper.cli import main  # noqa: E402
from benchmarks.paper.data import default_data_dir  # noqa: E402
from benchmarks.paper.protocol import CASES, EXTRA_METHODS, MAIN_CASES, METHODS, QUICK_VARIANTS  # noqa: E402
from benchmarks.paper.report import OPPONENTS, fmt_ms  # noqa: E402

QUICK_CASES = MAIN_CASES + QUICK_VARIANTS


def _data_dir() -> Path:
    d = default_data_dir()
    if not d.is_dir():
        pytest.skip(f"data directory {d} is missing (set THORS_DATA_DIR to run the paper smoke test)")
    return d


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = _data_dir()
    out = tmp_path_factory.mktemp("paper_quick")
    rc = main(["--quick", "--no-progress", "--data-dir", str(data_dir), "--out", str(out)])
    assert rc == 0, f"quick run failed with exit status {rc} although {data_dir} exists (broken data?)"
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_outputs_exist(quick_run: Path) -> None:
    plots = _has_matplotlib()  # box plots need matplotlib (the bench extra); tables never do
    for case in QUICK_CASES:
        for name in (f"{case}.md", *([f"{case}_boxplot.png"] if plots else [])):
            p = quick_run / name
            assert p.is_file() and p.stat().st_size > 0, p
    for name in ("paper_vs_ours.md", "summary.md", "winloss.csv", "raw_costs.csv", "raw_thors.csv", "run_info.json",
                 "audit.npz"):
        assert (quick_run / name).is_file(), name
    info = json.loads((quick_run / "run_info.json").read_text())
    assert info["quick"] and info["rounds"] == 2 and info["cases"] == list(QUICK_CASES)
    if plots:
        assert (quick_run / "shuttle_boxplot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _brute_threshold(s: np.ndarray, y: np.ndarray, fn: float, fp: float) -> tuple[float, float]:
    """Smallest threshold of least cost among -inf and every score, by full enumeration."""
    cands = np.concatenate([[-np.inf], np.unique(s)])
    below = s[None, :] <= cands[:, None]  # predicted negative
    cost = fn * (below & y[None, :]).sum(axis=1) + fp * (~below & ~y[None, :]).sum(axis=1)
    j = int(np.argmin(cost))  # first minimum = smallest threshold
    return float(cands[j]), float(cost[j])


def test_thors_cost_recomputed(quick_run: Path) -> None:
    costs = {(r["case"], int(r["round"]), r["classifier"], r["method"]): r for r in _rows(quick_run / "raw_costs.csv")}
    thors = {(r["case"], int(r["round"]), r["classifier"]): r for r in _rows(quick_run / "raw_thors.csv")}
    audit = np.load(quick_run / "audit.npz")
    checked = 0
    for (case, rnd, clf), t in thors.items():
        c = CASES[case]
        pre = f"{case}|{rnd}|{clf}|"
        s_va, y_va = audit[pre + "val_s"], audit[pre + "val_y"].astype(bool)
        s_te, y_te = audit[pre + "test_s"], audit[pre + "test_y"].astype(bool)
        thr, val_cost = _brute_threshold(s_va, y_va, c.fn_cost, c.fp_cost)
        assert float(t["threshold"]) == thr, (case, rnd, clf)
        assert float(t["val_cost"]) == val_cost
        pred = s_te > thr
        fn = int(np.sum(y_te & ~pred))
        fp = int(np.sum(~y_te & pred))
        row = costs[(case, rnd, clf, "THORS")]
        assert (int(row["fn"]), int(row["fp"])) == (fn, fp)
        assert float(row["cost"]) == c.fn_cost * fn + c.fp_cost * fp
        # the constant predictions give the test split's class counts
        assert float(costs[(case, rnd, clf, "All-pos")]["cost"]) == c.fp_cost * np.sum(~y_te)
        assert float(costs[(case, rnd, clf, "All-neg")]["cost"]) == c.fn_cost * np.sum(y_te)
        assert int(t["n_test"]) == y_te.shape[0] and int(t["test_pos"]) == int(y_te.sum())
        checked += 1
    assert checked == sum(2 * len(CASES[c].classifiers) for c in QUICK_CASES)


def test_every_cost_matches_its_error_counts(quick_run: Path) -> None:
    rows = _rows(quick_run / "raw_costs.csv")
    methods = set(METHODS + EXTRA_METHODS)
    for r in rows:
        c = CASES[r["case"]]
        assert r["method"] in methods
        assert float(r["cost"]) == c.fn_cost * int(r["fn"]) + c.fp_cost * int(r["fp"])
        assert float(r["time"]) >= 0.0
    assert len(rows) == len(methods) * sum(2 * len(CASES[c].classifiers) for c in QUICK_CASES)


def test_winloss_adds_up(quick_run: Path) -> None:
    cost: dict[tuple[str, str, str], dict[int, float]] = {}
    for r in _rows(quick_run / "raw_costs.csv"):
        cost.setdefault((r["case"], r["classifier"], r["method"]), {})[int(r["round"])] = float(r["cost"])
    wl = _rows(quick_run / "winloss.csv")
    assert len(wl) == sum(len(CASES[c].classifiers) * (len(OPPONENTS) + 2) for c in QUICK_CASES)
    for r in wl:
        a, b = cost[(r["case"], r["classifier"], "THORS")], cost[(r["case"], r["classifier"], r["opponent"])]
        w, lo, t, n = int(r["wins"]), int(r["losses"]), int(r["ties"]), int(r["rounds"])
        assert w + lo + t == n == len(a) == 2
        assert w == sum(a[k] < b[k] for k in a) and lo == sum(a[k] > b[k] for k in a)
    # the Markdown win/loss table of each case shows the same counts
    for case in QUICK_CASES:
        md = (quick_run / f"{case}.md").read_text()
        for clf in CASES[case].classifiers:
            got = {r["opponent"]: f"{r['wins']}/{r['losses']}/{r['ties']}" for r in wl
                   if r["case"] == case and r["classifier"] == clf}
            line = "| " + " | ".join([clf] + [got[o] for o in OPPONENTS]) + " |"
            assert line in md, (case, clf)


def test_comparison_lists_every_paper_cell(quick_run: Path) -> None:
    text = (quick_run / "paper_vs_ours.md").read_text()
    for case in QUICK_CASES:
        key = CASES[case].paper
        assert f"## {case} vs the paper's {key} data" in text
        for clf in CASES[case].classifiers:
            for m in METHODS:
                assert f"| {clf} | {m} | {fmt_ms(*pv.COST[key][clf][m])} |" in text, (case, clf, m)
            for o in OPPONENTS:
                assert f"| {clf} | {o} | {pv.WINLOSS[key][clf][o][0]}/{pv.WINLOSS[key][clf][o][1]} |" in text
    summary = (quick_run / "summary.md").read_text()
    assert "not comparable" in summary and "paper_vs_ours.md" in summary


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, THORS_DATA_DIR=str(tmp_path / "nowhere"))
    p = subprocess.run([sys.executable, "-m", "benchmarks.paper", "--quick", "--out", str(tmp_path / "out")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "data missing" in p.stderr and "nowhere" in p.stderr and "Traceback" not in p.stderr


def test_broken_data_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "adult.data.gz").write_bytes(gzip.compress(b"39, State-gov\n"))
    (tmp_path / "magic04.data.gz").write_bytes(b"not gzip")
    rc = main(["--quick", "--no-progress", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out")])
    assert rc == 3
    assert "sha256" in capsys.readouterr().err
