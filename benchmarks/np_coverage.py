"""Coverage of Neyman-Pearson mode (``max_fpr`` / ``max_fnr``) by simulation, against the naive plug-in.

For score laws with a known truth, draw many validation sets with fixed class sizes, run
``thors_threshold(..., max_fpr=alpha, confidence=1 - delta)`` (and ``max_fnr``) on each, and
count how often the *true* rate at the returned threshold exceeds ``alpha``: the guarantee says at
most ``delta`` of the time. For contrast, the naive plug-in picks the cheapest threshold whose
*empirical* rate is ``<= alpha`` (measured on the same draws). Costs are chosen so that the
unconstrained THORS optimum breaks the constraint (``fn_cost = 5`` for ``max_fpr``, ``fp_cost = 5``
for ``max_fnr``), i.e. the constraint binds; the price is reported as the true expected cost per
event (population prior 0.5) relative to that of the unconstrained THORS threshold of the same draw.

    python benchmarks/np_coverage.py            # full: 4 laws x 3 sizes x 2 alphas x 2 deltas x 2 rates, 1,000 reps
    python benchmarks/np_coverage.py --quick    # small smoke run

A full run writes ``benchmarks/results/np_coverage.md`` (``--quick`` only with ``--out``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from thors_stream import thors_threshold
from thors_stream.neyman_pearson import NPInfeasibleError, min_class_size

RESULTS = Path(__file__).resolve().parent / "results"
GRID = 0.25


@dataclass(frozen=True)
class Law:
    """Class-conditional score laws with exact FPR(t) = P(S0 > t) and FNR(t) = P(S1 <= t)."""

    name: str
    s0: Callable[[np.random.Generator, int], np.ndarray]
    s1: Callable[[np.random.Generator, int], np.ndarray]
    fpr: Callable[[float], float]
    fnr: Callable[[float], float]


LAWS = [
    Law("gauss (shift 1.5)", lambda r, n: r.standard_normal(n), lambda r, n: r.standard_normal(n) + 1.5,
        lambda t: stats.norm.sf(t), lambda t: stats.norm.cdf(t - 1.5)),
    Law("beta(2,5) vs beta(5,2)", lambda r, n: r.beta(2.0, 5.0, n), lambda r, n: r.beta(5.0, 2.0, n),
        lambda t: stats.beta.sf(t, 2, 5), lambda t: stats.beta.cdf(t, 5, 2)),
    Law("cauchy (shift 2)", lambda r, n: r.standard_cauchy(n), lambda r, n: r.standard_cauchy(n) + 2.0,
        lambda t: stats.cauchy.sf(t), lambda t: stats.cauchy.cdf(t - 2.0)),
    # scores rounded to a 0.25 grid (heavy ties): for a grid point t, S > t  <=>  raw >= t + GRID / 2
    Law("gauss on a 0.25 grid (ties)", lambda r, n: np.round(r.standard_normal(n) / GRID) * GRID,
        lambda r, n: np.round((r.standard_normal(n) + 1.5) / GRID) * GRID,
        lambda t: stats.norm.sf(t + GRID / 2), lambda t: stats.norm.cdf(t + GRID / 2 - 1.5)),
]


def naive_threshold(s: np.ndarray, y: np.ndarray, fn: float, fp: float, rate: str, alpha: float) -> float:
    """Cheapest candidate (smallest on ties) whose *empirical* FPR (or FNR) is ``<= alpha``."""
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))
    c1 = np.concatenate([[0], np.cumsum(yy)[ends]])
    c0 = np.concatenate([[0], np.cumsum(~yy)[ends]])
    n1, n0 = c1[-1], c0[-1]
    cost = fn * c1 + fp * (n0 - c0)
    ok = (n0 - c0 <= alpha * n0) if rate == "fpr" else (c1 <= alpha * n1)
    j = int(np.argmin(np.where(ok, cost, np.inf)))
    return float(ss[ends[j - 1]]) if j > 0 else -math.inf


def run_setting(law: Law, n: int, alpha: float, delta: float, rate: str, reps: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    fn, fp = (5.0, 1.0) if rate == "fpr" else (1.0, 5.0)
    true_rate = law.fpr if rate == "fpr" else law.fnr
    y = np.r_[np.zeros(n, bool), np.ones(n, bool)]
    viol = viol_naive = binds = 0
    rates, ratio = [], []

    def risk(t: float) -> float:  # expected cost per event, population prior 0.5
        return 0.5 * fn * law.fnr(t) + 0.5 * fp * law.fpr(t)

    for _ in range(reps):
        s = np.r_[law.s0(rng, n), law.s1(rng, n)]
        kw = {"max_fpr": alpha} if rate == "fpr" else {"max_fnr": alpha}
        r = thors_threshold(s, y, fn_cost=fn, fp_cost=fp, confidence=1 - delta, **kw)
        plain = thors_threshold(s, y, fn_cost=fn, fp_cost=fp)
        t = r.threshold
        tr = float(true_rate(t)) if math.isfinite(t) else (0.0 if rate == "fnr" else 1.0)
        viol += tr > alpha
        rates.append(tr)
        binds += t != plain.threshold
        ratio.append(risk(t) / risk(plain.threshold))
        tn = naive_threshold(s, y, fn, fp, rate, alpha)
        tnr = float(true_rate(tn)) if math.isfinite(tn) else (0.0 if rate == "fnr" else 1.0)
        viol_naive += tnr > alpha
    return {
        "viol": viol / reps, "viol_naive": viol_naive / reps, "binds": binds / reps,
        "median_rate": float(np.median(rates)), "risk_ratio": float(np.mean(ratio)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run (100 reps, one law, n=200)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None, help="markdown output (default: results/np_coverage.md)")
    args = ap.parse_args(argv)
    reps = args.reps or (100 if args.quick else 1000)
    laws = LAWS[:1] if args.quick else LAWS
    sizes = (200,) if args.quick else (50, 200, 2000)
    alphas, deltas = (0.05, 0.1), (0.05, 0.1)
    t0 = time.perf_counter()
    rows = []
    seed = 0
    for law in laws:
        for n in sizes:
            for rate in ("fpr", "fnr"):
                for alpha in alphas:
                    for delta in deltas:
                        seed += 1
                        need = min_class_size(alpha, delta)
                        if n < need:
                            # the guarantee is impossible: check the error says so, skip the setting
                            try:
                                thors_threshold(np.r_[np.zeros(n), np.ones(n)], np.r_[np.zeros(n), np.ones(n)],
                                                fn_cost=1, fp_cost=1, confidence=1 - delta,
                                                **{f"max_{rate}": alpha})
                                raise AssertionError("expected NPInfeasibleError")
                            except NPInfeasibleError:
                                pass
                            rows.append((law.name, n, rate, alpha, delta, None, need))
                            continue
                        res = run_setting(law, n, alpha, delta, rate, reps, seed)
                        rows.append((law.name, n, rate, alpha, delta, res, need))
    wall = time.perf_counter() - t0
    lines = [
        f"# Neyman-Pearson mode: coverage ({reps:,} repetitions per setting, wall time {wall:.0f} s)",
        "",
        "`viol` = share of repetitions whose *true* rate at the returned threshold exceeds alpha (must be",
        "<= delta; ✗ marks > delta + 3 s.e.). `naive` = the same for the cheapest threshold with *empirical*",
        "rate <= alpha, on the same draws. `binds` = share where the NP threshold differs from plain THORS.",
        "`cost ratio` = mean true expected cost per event (prior 0.5) of the NP threshold over that of plain",
        "THORS on the same draw (the price of the guarantee). n = events per class; below the minimum",
        "class size `log(delta)/log(1-alpha)` the call raises `NPInfeasibleError` (checked) and the row says so.",
        "",
        "| scores | n/class | rate | alpha | delta | viol (± s.e.) | naive viol | median true rate | binds "
        "| cost ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for name, n, rate, alpha, delta, res, need in rows:
        if res is None:
            lines.append(f"| {name} | {n:,} | {rate} | {alpha} | {delta} | needs n >= {need}: error raised "
                         "| | | | |")
            continue
        se = math.sqrt(delta * (1 - delta) / reps)
        flag = " ✗" if res["viol"] > delta + 3 * se else ""
        worst = max(worst, res["viol"] / delta)
        lines.append(
            f"| {name} | {n:,} | {rate} | {alpha} | {delta} | {res['viol']:.3f} ± {se:.3f}{flag} | "
            f"{res['viol_naive']:.3f} | {res['median_rate']:.4f} | {res['binds']:.2f} | {res['risk_ratio']:.3f} |"
        )
    done = [r[5] for r in rows if r[5] is not None]
    over = sum(1 for r in rows if r[5] is not None and r[5]["viol"] > r[4] + 3 * math.sqrt(r[4] * (1 - r[4]) / reps))
    lines += [
        "",
        "## Summary per score law (feasible settings)",
        "",
        "| scores | settings | max viol / delta | mean viol / delta | naive viol (mean, max) | mean cost ratio |",
        "|---|---|---|---|---|---|",
    ]
    for law in laws:
        sel = [(r[4], r[5]) for r in rows if r[0] == law.name and r[5] is not None]
        vd = [d["viol"] / delta for delta, d in sel]
        nv = [d["viol_naive"] for _, d in sel]
        lines.append(
            f"| {law.name} | {len(sel)} | {max(vd):.2f} | {np.mean(vd):.2f} | {np.mean(nv):.2f}, {max(nv):.2f} | "
            f"{np.mean([d['risk_ratio'] for _, d in sel]):.2f} |"
        )
    lines += [
        "",
        f"Settings with viol > delta + 3 s.e.: {over} of {len(done)}. "
        f"Worst violation rate / delta over all settings: {worst:.2f} (guarantee: <= 1). "
        f"Naive plug-in violation rate: mean {np.mean([d['viol_naive'] for d in done]):.2f}, "
        f"max {np.max([d['viol_naive'] for d in done]):.2f}.",
        "",
        f"Command: `python benchmarks/np_coverage.py{' --quick' if args.quick else ''}`; wall time {wall:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out if args.out is not None else (None if args.quick else RESULTS / "np_coverage.md")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
