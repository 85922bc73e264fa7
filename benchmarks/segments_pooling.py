"""Per-segment thresholds by simulation: separate, fallback, pooled or one global threshold?

Five segments with different score laws (so different optimal thresholds) and training sizes
from 50 to 50,000 events. In segment ``g`` a positive's score is ``N(m_g + 1.5, 1)``, a
negative's ``N(m_g, 1)``, positives make up ``p_g`` of the events; a missed positive costs 10,
a false alarm 1. The true expected cost per event of a threshold ``t`` is known in closed form,
``p_g * 10 * Phi(t - m_g - 1.5) + (1 - p_g) * (1 - Phi(t - m_g))``, so every policy is scored
on the population (held-out cost with no test noise), as regret over the segment's Bayes-optimal
threshold, averaged over repetitions:

* ``separate``: THORS on the segment's own events (``thors_by_segment``);
* ``fallback``: the same, but the global threshold when a class has fewer than 30 events;
* ``pooled λ``: the segment's events at weight 1 plus all events at weight λ (one weighted THORS);
* ``global``: one THORS threshold for all segments.

    python benchmarks/segments_pooling.py            # 200 repetitions, writes benchmarks/results/segments_pooling.md
    python benchmarks/segments_pooling.py --quick    # 5 repetitions, prints only
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from thors_stream import thors_threshold
from thors_stream.segments import pooled_threshold, segment_thresholds, thors_by_segment

FN, FP = 10.0, 1.0
SCENARIOS = {  # name: {segment: (training events, mean shift m_g, positive share p_g)}
    "segments differ a lot (shifts up to 1.5 score SD)": {
        "s50": (50, 1.5, 0.10), "s200": (200, -1.0, 0.05), "s1k": (1_000, 0.8, 0.15),
        "s5k": (5_000, -0.6, 0.08), "s50k": (50_000, 0.0, 0.10)},
    "segments differ little (shifts up to 0.3 score SD)": {
        "s50": (50, 0.3, 0.10), "s200": (200, -0.2, 0.08), "s1k": (1_000, 0.15, 0.12),
        "s5k": (5_000, -0.1, 0.09), "s50k": (50_000, 0.0, 0.10)},
}
SEGMENTS = SCENARIOS["segments differ a lot (shifts up to 1.5 score SD)"]
LAMBDAS = (0.001, 0.01, 0.1)


def true_cost(t: float, m: float, p: float) -> float:
    """Expected cost per event of threshold ``t`` in a segment (score > t predicts positive)."""
    if t == -np.inf:
        return (1 - p) * FP
    return p * FN * stats.norm.cdf(t - m - 1.5) + (1 - p) * FP * stats.norm.sf(t - m)


def bayes(m: float, p: float) -> float:
    return optimize.minimize_scalar(lambda t: true_cost(t, m, p), bounds=(m - 5, m + 6), method="bounded").fun


def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s, y, g = [], [], []
    for name, (n, m, p) in SEGMENTS.items():
        yy = rng.random(n) < p
        s.append(rng.normal(m + 1.5 * yy, 1.0))
        y.append(yy)
        g.append(np.full(n, name))
    return np.concatenate(s), np.concatenate(y), np.concatenate(g)


def run(reps: int, seed: int = 0) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    best = {k: bayes(m, p) for k, (_, m, p) in SEGMENTS.items()}
    policies = ["separate", "fallback", *[f"pooled λ={lam:g}" for lam in LAMBDAS], "global"]
    regret = {pol: {k: 0.0 for k in SEGMENTS} for pol in policies}
    for _ in range(reps):
        s, y, g = draw(rng)
        own = thors_by_segment(s, y, g, fn_cost=FN, fp_cost=FP)
        plan = segment_thresholds(s, y, g, fn_cost=FN, fp_cost=FP, min_per_class=30)
        glob = thors_threshold(s, y, fn_cost=FN, fp_cost=FP).threshold
        for k, (_, m, p) in SEGMENTS.items():
            thr = {"separate": own[k].threshold, "fallback": plan.threshold(k), "global": glob}
            for lam in LAMBDAS:
                thr[f"pooled λ={lam:g}"] = pooled_threshold(s, y, g == k, lam, fn_cost=FN, fp_cost=FP).threshold
            for pol, t in thr.items():
                regret[pol][k] += (true_cost(t, m, p) - best[k]) / reps
    return regret


def table(regret: dict[str, dict[str, float]]) -> str:
    lines = ["| policy | " + " | ".join(f"{k} (n={SEGMENTS[k][0]:,})" for k in SEGMENTS) + " |",
             "|---" * (len(SEGMENTS) + 1) + "|"]
    for pol, r in regret.items():
        lines.append(f"| {pol} | " + " | ".join(f"{r[k]:.4f}" for k in SEGMENTS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    reps = args.reps or (5 if args.quick else 200)
    global SEGMENTS
    text = ""
    for name, segs in SCENARIOS.items():
        SEGMENTS = segs
        t0 = time.perf_counter()
        regret = run(reps)
        text += (f"**{name}.** Regret (expected cost per event above the segment's Bayes-optimal threshold, FN cost "
                 f"10, FP cost 1), mean of {reps} repetitions; {time.perf_counter() - t0:.0f} s.\n\n"
                 + table(regret) + "\n\n")
    print(text)
    if not args.quick:
        out = Path(__file__).parent / "results" / "segments_pooling.md"
        out.write_text("# segments_pooling.py\n\n" + text)


if __name__ == "__main__":
    main()
