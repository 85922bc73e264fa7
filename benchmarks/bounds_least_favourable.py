"""How close to nominal can a rate bound valid for the threshold THORS picks get?

The default ``fnr_upper`` reads a one-sided band on the positives' order statistics whose
simultaneous coverage is computed and calibrated to ``confidence``. In the settings of
``benchmarks/bounds_coverage.py`` it over-covers (0.957 or more at nominal 0.90 in the 20
gentle ones, 0.932 in the flat-cost population). This
script builds, for a given band, a population in which THORS's own choice of threshold is
exactly the band's worst case, so that the bound's coverage *equals* the band's
simultaneous coverage. A band with a lower simultaneous coverage (narrower) would then
under-cover there: the over-coverage elsewhere is the price of validity, not slack.

The construction, for ``n1`` positives with scores U(0, 1) (so FNR(t) = t on [0, 1]):
let ``u(k)`` be ``fnr_upper`` when ``k`` positives fall at or below the threshold. The
bound fails at a threshold ``t`` exactly when fewer than ``K(t) = #{k : u(k) < t}``
positives lie at or below ``t``. Put one negative just above each of ``u(0), ...,
u(n1-1)``, and take ``fn_cost = fp_cost = 1``. Then the validation cost at ``t`` is
``k1(t) + n1 - K(t)``: at most ``n1 - 1`` where the bound fails and at least ``n1``
elsewhere, and ``n1`` is the cost of the threshold ``-inf`` (THORS's fallback, taken
unless something is strictly cheaper). So THORS returns a failing threshold whenever one
exists, and ``-inf`` (FNR 0, covered) otherwise.

- **conditional**: the negatives are those fixed points (the band, and so ``fnr_upper``,
  holds given the negatives, whatever they are: the positives are independent of them);
- **i.i.d.**: the negatives are ``M * n1`` i.i.d. draws from the uniform law on those
  points and ``fn_cost = M`` (the validation draw of the bounds' guarantee; the negatives'
  sampling noise, ~ sqrt(M n1) / 2, is small next to the margin M).

``fpr_upper`` gets the mirror image: ``n0`` negatives U(0, 1) (FPR(t) = 1 - t), one
positive at each ``1 - v(k)``, ``k = 1..n0``, where ``v(k)`` is ``fpr_upper`` with ``k``
negatives at or below the threshold (see :func:`draw`).

Each population is built for the band it tests. The rows with a band at ``nominal - 0.03``
ask what a narrower band (the same method, calibrated to that lower confidence) would do in
its own least favourable population: its coverage falls to its level, below the nominal one.

Then, in the settings of ``benchmarks/bounds_coverage.py`` where ``fnr_upper`` over-covers the
least, its coverage with the band calibrated to 0.90, 0.87 and 0.85: how far the band would
have to be narrowed for the coverage there to drop below 0.95.

Last, for ``risk_upper``: how much lower it would be with its failure probability split
unequally between the two classes' bands, the split chosen per setting in hindsight (about
the most any rule picking the split from the labels and costs could give).

    python benchmarks/bounds_least_favourable.py           # ~11 minutes
    python benchmarks/bounds_least_favourable.py --quick   # smoke run (the first table only)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bounds_coverage import COSTS, DISTS, simulate, thors_many  # the vectorised THORS (checked there)

from thors_stream import thors_threshold
from thors_stream._band import no_crossing_probability
from thors_stream.bounds import _prior_interval, _risk_extreme, bounds_arrays, cdf_lower, cdf_upper

STATS = ("fnr_upper", "fpr_upper")  # the rate bounds with a least favourable population here


def bound_table(n: int, confidence: float, stat: str = "fnr_upper") -> np.ndarray:
    """The values the bound takes with ``n`` events of its class: ``stat="fnr_upper"``,
    ``u(k)`` with ``k`` of ``n`` positives at or below the threshold; ``"fpr_upper"``,
    ``v(k)`` with ``k`` of ``n`` negatives at or below it; ``k = 0..n`` (each depends on its
    class's counts only)."""
    if stat not in STATS:
        raise ValueError(f"stat must be one of {STATS}, got {stat!r}")
    k = np.arange(n + 1)
    full, none = np.full_like(k, n), np.zeros_like(k)
    ck0, ck1 = (none, k) if stat == "fnr_upper" else (k, none)
    return bounds_arrays(full, full, ck0, ck1, fn_cost=1, fp_cost=1, confidence=confidence)[stat]


def band_coverage(n: int, confidence: float, stat: str = "fnr_upper") -> float:
    """The exact probability that the bound holds at every threshold, which the population
    below makes its coverage: ``U_(k+1) <= u(k)`` for every ``k`` (``fnr_upper``, the
    positives' order statistics), ``V_(k) >= 1 - v(k)`` for ``k >= 1`` (``fpr_upper``, the
    negatives')."""
    b = bound_table(n, confidence, stat)
    if stat == "fnr_upper":
        return no_crossing_probability(n, upper=b[:n])
    return no_crossing_probability(n, lower=1.0 - b[1:])


def draw(n: int, confidence: float, reps: int, rng: np.random.Generator, iid_m: int = 0,
         stat: str = "fnr_upper") -> tuple[np.ndarray, np.ndarray, float, float]:
    """``reps`` validation sets of the population built for the band at ``confidence``:
    scores (reps x all events, positives first), labels, ``fn_cost`` and ``fp_cost``.

    ``fnr_upper``: ``n`` positives U(0, 1), negatives just above ``u(0), ..., u(n-1)``.
    ``fpr_upper`` (the mirror): ``n`` negatives U(0, 1), positives at ``1 - v(1), ...,
    1 - v(n)``; the cost at ``t`` is ``n - k0(t) + J(t)`` with ``J(t) = #{k >= 1 : t >= 1 - v(k)}``,
    at most ``n - 1`` exactly where the bound fails. ``iid_m = 0``: the other class is the
    fixed points; else ``iid_m * n`` i.i.d. draws from them, and that class's cost is ``iid_m``."""
    b = bound_table(n, confidence, stat)
    points = np.nextafter(b[:n], np.inf) if stat == "fnr_upper" else 1.0 - b[1:]
    free = rng.random((reps, n))
    fixed = np.broadcast_to(points, (reps, n)) if iid_m == 0 else points[rng.integers(0, n, (reps, iid_m * n))]
    pos, neg = (free, fixed) if stat == "fnr_upper" else (fixed, free)
    s = np.concatenate([pos, neg], axis=1)
    y = np.zeros(s.shape, dtype=bool)
    y[:, : pos.shape[1]] = True
    m = 1.0 if iid_m == 0 else float(iid_m)
    return (s, y, m, 1.0) if stat == "fnr_upper" else (s, y, 1.0, m)


def covered(s: np.ndarray, y: np.ndarray, fn: float, fp: float, confidence: float,
            stat: str = "fnr_upper") -> np.ndarray:
    """Per validation set of :func:`draw`: does the bound hold at the threshold THORS picks?
    (The free class is U(0, 1): FNR(t) = t, FPR(t) = 1 - t on [0, 1].)"""
    got = thors_many(s, y, fn, fp)
    r0 = thors_threshold(s[0], y[0], fn_cost=fn, fp_cost=fp)  # the vectorised pick is the library's
    assert (r0.threshold, r0.count_k0, r0.count_k1) == (got["threshold"][0], got["k0"][0], got["k1"][0]), r0
    thr = got["threshold"]
    t = np.clip(np.where(np.isfinite(thr), thr, 0.0), 0.0, 1.0)  # -inf: FNR 0, FPR 1
    if stat == "fnr_upper":
        return t <= bound_table(int(y[0].sum()), confidence, stat)[got["k1"].astype(int)]
    return 1.0 - t <= bound_table(int((~y[0]).sum()), confidence, stat)[got["k0"].astype(int)]


def coverage(n: int, confidence: float, reps: int, seed: int, iid_m: int = 0, stat: str = "fnr_upper") -> float:
    """Coverage of the bound at ``confidence`` in the population built for that band."""
    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // (n + max(iid_m, 1) * n))
    held = 0
    for start in range(0, reps, chunk):
        s, y, fn, fp = draw(n, confidence, min(chunk, reps - start), rng, iid_m, stat)
        held += int(covered(s, y, fn, fp, confidence, stat).sum())
    return held / reps


# settings of benchmarks/bounds_coverage.py where fnr_upper over-covers the least
SWEEP = [("cauchy", 0.02, 200), ("gauss", 0.02, 2000), ("gauss-unequal", 0.02, 2000), ("flat-cost@0.02", 0.02, 200)]


def sweep(reps: int, seed: int, levels: tuple[float, ...] = (0.90, 0.87, 0.85)) -> None:
    """Coverage of fnr_upper, the band calibrated to each of ``levels``, in the coverage
    simulation's settings: how low a band must go to cover below 0.95 there."""
    print("| setting | " + " | ".join(f"band at {c:.2f}" for c in levels) + " |")
    print("|---|" + "---|" * len(levels))
    for key, prior, n in SWEEP:
        seed += 1
        res = simulate(DISTS[key], prior, n, reps, seed, levels=levels, method="exact")
        cells = [f"{res['hold'][c]['fnr_upper'] / reps:.3f}" for c in levels]
        print(f"| {DISTS[key].name}, π={prior}, n={n:,} | " + " | ".join(cells) + " |", flush=True)


# settings for the split of delta between the two classes' bands in risk_upper
SPLIT = [("gauss", 0.02, 200), ("gauss", 0.02, 2000), ("gauss", 0.5, 2000), ("beta", 0.5, 200),
         ("gauss-unequal", 0.5, 200)]


def mean_risk_upper(counts: dict[str, np.ndarray], fn: float, fp: float, d1: float, d0: float,
                    d_prior: float) -> float:
    """Mean ``risk_upper`` over validation sets (their THORS counts) with failure
    probabilities ``d1`` (positives' band), ``d0`` (negatives') and ``d_prior`` (the prior)."""
    c0, c1, k0, k1 = (counts[k].astype(float) for k in ("n0", "n1", "k0", "k1"))
    plo, phi = _prior_interval(c1, c0 + c1, np.full(c0.shape, d_prior))
    u1, u0 = cdf_upper(k1, c1, d1, "exact", 1), 1 - cdf_lower(k0, c0, d0, "exact", 1)
    return float(_risk_extreme(plo, phi, fn, fp, u1, u0, np.maximum).mean())


def split_gain(reps: int, seed: int, confidence: float = 0.95, grid: int = 25) -> None:
    """How much ``risk_upper`` could gain from splitting its failure probability unequally
    between the positives' and the negatives' bands (the prior's share unchanged), the split
    picked per setting with hindsight to minimise the mean bound: about the most any rule
    choosing the split from the labels and costs could give (within a setting the labels
    barely vary)."""
    d = -math.expm1(math.log1p(-(1 - confidence)) / 3)  # today: three statements, equal shares
    print(f"| setting | risk_upper, equal shares ({d:.4f} each) | best split (positives', negatives') | lower by |")
    print("|---|---|---|---|")
    for key, prior, n in SPLIT:
        seed += 1
        fn, fp = COSTS[prior]
        rng = np.random.default_rng(seed)
        y = rng.random((reps, n)) < prior
        counts = thors_many(DISTS[key].sample(rng, y), y, fn, fp)
        base = mean_risk_upper(counts, fn, fp, d, d, d)
        lib = bounds_arrays(counts["n0"], counts["n1"], counts["k0"], counts["k1"], fn_cost=fn, fp_cost=fp,
                            confidence=confidence)["risk_upper"].mean()
        assert math.isclose(base, lib, rel_tol=1e-12), (base, lib)  # equal shares: the library's bound
        splits = [(d1, 1 - (1 - d) ** 2 / (1 - d1)) for d1 in np.linspace(d / 8, 2 * d - d * d - d / 16, grid)]
        best, d1, d0 = min((mean_risk_upper(counts, fn, fp, d1, d0, d), d1, d0) for d1, d0 in splits)
        print(f"| {key}, π={prior}, n={n:,} | {base:.4f} | {best:.4f} ({d1:.4f}, {d0:.4f}) | {1 - best / base:.1%} |",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per row (default 20,000; quick 2,000)")
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args(argv)
    reps = args.reps or (2_000 if args.quick else 20_000)
    sizes = (40,) if args.quick else (40, 400)
    t0 = time.perf_counter()
    for stat, free, other, offset in (("fnr_upper", "n1", "negatives", 0), ("fpr_upper", "n0", "positives", 50)):
        print(f"{stat} (method='exact') in its least favourable population; {reps:,} repetitions per row")
        print()
        print(f"| {free} | {other} | nominal | band calibrated to | band's exact simultaneous coverage "
              "| coverage (± s.e.) | below nominal by > 3 s.e. |")
        print("|---|---|---|---|---|---|---|")
        seed = args.seed + offset
        for n in sizes:
            for nominal in (0.90, 0.95):
                narrower = round(nominal - 0.03, 2)
                rows = [("fixed points", 0, nominal), ("fixed points", 0, narrower)]
                if n <= 40:
                    rows.append(("i.i.d., M = 1,000", 1000, nominal))
                for label, m, conf in rows:
                    seed += 1
                    c = coverage(n, conf, reps, seed, iid_m=m, stat=stat)
                    se = math.sqrt(max(c * (1 - c), 1e-12) / reps)
                    flag = "yes" if c < nominal - 3 * math.sqrt(nominal * (1 - nominal) / reps) else "no"
                    print(f"| {n} | {label} | {nominal:.2f} | {conf:.2f} | {band_coverage(n, conf, stat):.4f} "
                          f"| {c:.4f} ± {se:.4f} | {flag} |", flush=True)
        print()
    if args.quick:
        return 0
    sweep_reps = reps // 10
    print(f"fnr_upper in the coverage simulation's settings, its band calibrated lower ({sweep_reps:,} repetitions; "
          f"s.e. ~{math.sqrt(0.05 * 0.95 / sweep_reps):.3f} near 0.95)")
    print()
    sweep(sweep_reps, args.seed + 100)
    print()
    print(f"risk_upper at 95%: an unequal split of delta between the two bands, best per setting in hindsight "
          f"(mean over {sweep_reps // 5:,} validation sets)")
    print()
    split_gain(sweep_reps // 5, args.seed + 200)
    print()
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
