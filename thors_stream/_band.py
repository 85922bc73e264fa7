"""Exact simultaneous confidence bands for one class's score CDF (uniform order statistics).

Every band here is a statement about the order statistics ``U_(1) <= ... <= U_(n)`` of ``n``
i.i.d. uniforms, which carry over to any score law ``F`` (ties and atoms included) through
``X_i = F^{-1}(U_i)``: with ``k`` of the ``n`` scores ``<= t``, ``U_(k) <= F(t) < U_(k+1)``
(see :mod:`thors_stream.bounds`).

**The probability, computed.** :func:`no_crossing_probability` returns
``P(l_i <= U_(i) <= u_i for every i)`` for any nondecreasing boundaries. It runs the
Poisson-process form of Noé's recursion (as in Moscovich & Nadler 2017): for a Poisson
process ``N`` of rate ``n`` on ``[0, 1]``, ``U_(i) >= l_i`` is ``N(l_i) <= i - 1`` and
``U_(i) <= u_i`` is ``N(u_i) >= i``; walking through the boundary points in time order, the
distribution of ``N`` at the current point restricted to "no boundary crossed yet" is
carried forward by convolving with the Poisson law of the increment and zeroing the counts
the next constraint forbids; conditioning on ``N(1) = n`` (dividing by ``P(N(1) = n)``)
gives the uniform order statistics. Every term is a nonnegative probability (no
cancellation, unlike the Steck/Bolshev determinant recursions). Counts whose probability is
below ``1e-17`` (relative) and Poisson tails below ``1e-17`` are dropped, which can only
*lower* the result: up to floating-point rounding (about ``1e-13``, checked against scipy's
exact Kolmogorov-Smirnov laws) the value returned is never above the true probability, and
below it by at most ``1e-17`` per step. Cost: one convolution per boundary point over the counts that
carry mass, ``O(sqrt(n))`` wide, i.e. ``O(n^1.5)`` overall, a few milliseconds at
``n = 1,000`` and about 0.1 s at ``n = 10,000``.

**The band.** Equal local levels (the finite-sample Berk-Jones band of Moscovich, Nadler &
Spiegelman 2016): at level ``alpha`` the lower boundary at rank ``r`` is the ``alpha``
quantile of ``U_(r) ~ Beta(r, n + 1 - r)`` and the upper one its ``1 - alpha`` quantile, so
every rank is equally likely to cross. :func:`band_level` finds, by a safeguarded secant
search on ``log alpha``, a local level whose *computed* crossing probability lies in
``[(1 - 1e-2) delta, delta]`` (one-sided: the lower boundary alone, which by symmetry
crosses exactly as often as the upper one alone; two-sided: both at once), and caches it
per ``(n, delta, sides)``. Since the computed probability is a lower bound on the true
probability of staying inside, the band holds with probability at least ``1 - delta``,
exactly up to the ``1e-2`` (relative) tolerance of the search.

**Ranks constrained.** For ``n <= 1,600`` every rank is constrained. Above that, ranks are
constrained on a grid whose spacing is a tenth of the standard deviation of ``n U_(r)``
(``max(1, floor(0.1 sqrt(r (n + 1 - r) / (n + 1))))``, symmetric in ``r`` and ``n + 1 - r``);
a rank ``k`` between grid ranks takes the boundary of the grid rank below it (lower) or above
it (upper). Since ``U_(k) >= U_(r)`` for ``k >= r``, this is again a band whose coverage is
*exactly* the computed one, and it moves each bound by at most a tenth of a standard
deviation, while the computation takes about ``30 sqrt(n)`` steps instead of ``n``. Above
:data:`MAX_EXACT` events the band falls back to the union-bound ("hybrid") band of
:mod:`thors_stream.bounds` (valid, a little wider).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import special, stats

__all__ = ["MAX_EXACT", "band_level", "constrained_ranks", "ell_lower", "ell_upper", "no_crossing_probability"]

TINY = 1e-17  # probability mass dropped (conservatively) per count and per Poisson tail
GRID_FRACTION = 0.1  # spacing of the constrained ranks, in standard deviations of n U_(r)
MAX_EXACT = 200_000  # larger samples use the union-bound band (see the module docstring)
BIG_MEAN = 64.0  # Poisson increments with a larger mean get their own kernel
TOLERANCE = 1e-2  # the calibrated crossing probability lies in [(1 - TOLERANCE) delta, delta]


# --------------------------------------------------------------------------- the recursion
def _kernels(lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Poisson pmfs ``P(X = l)``, ``l = 0..L``, one row per mean, and each row's useful length.

    Upper tails below :data:`TINY` are cut (conservative). Means may be 0 (kernel ``[1]``).
    """
    lams = np.asarray(lams, dtype=np.float64)
    top = float(lams.max(initial=0.0))
    width = int(top + 12.0 * math.sqrt(top) + 30)
    ell = np.arange(width + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        logk = ell[None, :] * np.log(lams)[:, None] - lams[:, None] - special.gammaln(ell + 1)[None, :]
        k = np.exp(logk)
    k[lams <= 0, :] = 0.0
    k[lams <= 0, 0] = 1.0
    keep = k >= TINY
    length = width + 1 - np.argmax(keep[:, ::-1], axis=1)
    length = np.where(keep.any(axis=1), length, 1)
    return k, length


def _propagate(n: int, times: np.ndarray, caps: np.ndarray, floors: np.ndarray) -> float:
    """``P(floors[j] <= N(times[j]) <= caps[j] for all j | N(1) = n)`` for a rate-``n`` Poisson ``N``.

    ``times`` nondecreasing in ``[0, 1]``. Returns a value never above the true probability.
    """
    if times.size == 0:
        return 1.0
    lams = n * np.diff(np.concatenate([[0.0], times]))
    lams = np.maximum(lams, 0.0)
    small = lams <= BIG_MEAN
    kern, length = _kernels(np.where(small, lams, 0.0))
    p = np.ones(1)
    lo = 0  # p[j] = P(N(t) = lo + j, no constraint violated so far)
    for j in range(times.size):
        if not small[j]:  # a long gap: the kernel's support starts well above 0
            lam = float(lams[j])
            l0 = max(0, int(lam - 12.0 * math.sqrt(lam) - 30))
            k = stats.poisson.pmf(np.arange(l0, int(lam + 12.0 * math.sqrt(lam) + 31)), lam)
            k = k[: np.flatnonzero(k >= TINY)[-1] + 1]
            p = np.convolve(p, k)
            lo += l0
        elif lams[j] > 0.0:
            p = np.convolve(p, kern[j, : length[j]])
        c, f = int(caps[j]), int(floors[j])
        if lo + p.size - 1 > c:
            p = p[: max(c - lo + 1, 0)]
        if f > lo:
            p = p[f - lo:]
            lo = f
        if p.size == 0:
            return 0.0
        if p[0] < TINY or p[-1] < TINY:
            big = np.flatnonzero(p >= TINY * p.max())
            if big.size == 0:
                return 0.0
            p = p[big[0]: big[-1] + 1]
            lo += int(big[0])
    m = lo + np.arange(p.size)
    rest = n * (1.0 - float(times[-1]))
    if rest > 0.0:
        w = stats.poisson.pmf(n - m, rest)
    else:
        w = (m == n).astype(np.float64)
    return float(min(1.0, max(0.0, np.dot(p, w) / stats.poisson.pmf(n, n))))


def no_crossing_probability(n: int, lower: Any = None, upper: Any = None, ranks: Any = None) -> float:
    """Exact ``P(lower[j] <= U_(r_j) <= upper[j] for every j)`` for ``n`` uniform order statistics.

    ``ranks`` (default ``1..n``) are increasing ranks ``r_j``; ``lower`` and ``upper`` (default
    no constraint) give the boundaries at those ranks and must be nondecreasing; values
    ``<= 0`` (lower) or ``>= 1`` (upper) constrain nothing. Computed by the Poisson-process
    recursion of the module docstring; the value is never above the true probability and
    below it by at most ``1e-17`` per boundary point. O(m sqrt(n)) for ``m`` boundary points.

    >>> round(no_crossing_probability(2, lower=[0.2, 0.5]), 12)  # (1 - .5)**2 + 2 (.5 - .2)(1 - .5)
    0.55
    >>> from scipy import stats   # two-sided Kolmogorov-Smirnov: P(D_n <= d)
    >>> n, d = 40, 0.15
    >>> i = np.arange(1, n + 1)
    >>> p = no_crossing_probability(n, lower=i / n - d, upper=(i - 1) / n + d)
    >>> bool(abs(p - stats.kstwo.cdf(d, n)) < 1e-12)
    True
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n == 0:
        return 1.0
    r = np.arange(1, n + 1) if ranks is None else np.asarray(ranks, dtype=np.int64)
    if r.size and (np.any(np.diff(r) <= 0) or r[0] < 1 or r[-1] > n):
        raise ValueError("ranks must be increasing integers in 1..n")
    lo = np.zeros(r.size) if lower is None else np.asarray(lower, dtype=np.float64).reshape(-1)
    hi = np.ones(r.size) if upper is None else np.asarray(upper, dtype=np.float64).reshape(-1)
    if lo.shape != r.shape or hi.shape != r.shape:
        raise ValueError("lower and upper must have one value per rank")
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError("boundaries must not be NaN")
    if np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0):
        raise ValueError("boundaries must be nondecreasing")
    if np.any(lo > hi):
        return 0.0
    lo_on, hi_on = lo > 0, hi < 1
    t = np.concatenate([lo[lo_on], hi[hi_on]])
    caps = np.concatenate([r[lo_on] - 1, np.full(int(hi_on.sum()), n)])
    floors = np.concatenate([np.zeros(int(lo_on.sum()), dtype=np.int64), r[hi_on]])
    order = np.argsort(t, kind="stable")
    return _propagate(n, t[order], caps[order], floors[order])


# --------------------------------------------------------------------------- the band
@lru_cache(maxsize=256)
def _ranks(n: int) -> np.ndarray:
    half = np.arange(1, (n + 1) // 2 + 1, dtype=np.float64)  # ranks up to the middle
    gap = np.maximum(1.0, np.floor(GRID_FRACTION * np.sqrt(half * (n + 1 - half) / (n + 1))))
    pos = np.cumsum(1.0 / gap)
    take = np.floor(pos + 1e-9) > np.floor(pos - 1.0 / gap + 1e-9)
    lower_half = half[take].astype(np.int64)
    if lower_half[0] != 1:
        lower_half = np.concatenate([[1], lower_half])
    r = np.union1d(lower_half, n + 1 - lower_half)
    r.setflags(write=False)
    return r


def constrained_ranks(n: int) -> np.ndarray:
    """The ranks the band constrains for ``n`` events: all of them up to 1,600, else a grid.

    Symmetric (``r`` in it iff ``n + 1 - r`` is), contains 1 and ``n``; spacing
    ``max(1, floor(0.1 sqrt(r (n + 1 - r) / (n + 1))))``. O(n) once per ``n`` (cached).

    >>> constrained_ranks(5).tolist(), int(constrained_ranks(10_000).size)
    ([1, 2, 3, 4, 5], 3578)
    """
    return _ranks(int(n))


def _ell_bounds(n: int, alpha: float, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = special.betaincinv(r, n + 1 - r, alpha)
    return lo, 1.0 - lo[::-1]


def _crossing(n: int, alpha: float, sides: int) -> float:
    r = constrained_ranks(n)
    lo, hi = _ell_bounds(n, alpha, r)
    if sides == 1:
        return 1.0 - no_crossing_probability(n, lower=lo, ranks=r)
    return 1.0 - no_crossing_probability(n, lower=lo, upper=hi, ranks=r)


def _initial_guess(n: int, delta: float, sides: int) -> float:
    """A first local level from a rough fit (crossing ~ alpha * (1 + 1.3 log n) per side);
    a function of ``(n, delta, sides)`` only, so the calibrated level never depends on which
    levels were computed before."""
    return delta / sides / (1.0 + 1.3 * math.log(max(n, 1)))


@lru_cache(maxsize=8192)
def band_level(n: int, delta: float, sides: int = 1) -> float:
    """Local level ``alpha`` of the equal-local-level band with crossing probability ``delta``.

    ``sides=1``: ``P(U_(r) >= BetaInv(alpha; r, n + 1 - r) for every constrained r)`` lies in
    ``[1 - delta, 1 - (1 - 1e-2) delta]`` (the upper boundary alone, by symmetry, too);
    ``sides=2``: both boundaries at once. Found by a safeguarded secant search on
    ``log alpha`` (typically three to six evaluations of :func:`no_crossing_probability`,
    each O(n^1.5) up to the rank grid), cached per ``(n, delta, sides)``; the result depends
    on ``(n, delta, sides)`` only. ``n`` in
    ``1..MAX_EXACT``, ``delta`` in (0, 1).

    >>> a = band_level(100, 0.1)
    >>> 0.1 / 100 < a < 0.1      # between Bonferroni and a single rank
    True
    >>> p = no_crossing_probability(100, lower=special.betaincinv(np.arange(1, 101), np.arange(100, 0, -1), a))
    >>> 0.9 <= p <= 0.9 + 1e-2 * 0.1     # calibrated: crossing within 1% of delta, from below
    True
    """
    n, delta, sides = int(n), float(delta), int(sides)
    if not 1 <= n <= MAX_EXACT:
        raise ValueError(f"n must be in 1..{MAX_EXACT}, got {n}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if sides not in (1, 2):
        raise ValueError(f"sides must be 1 or 2, got {sides}")
    m = constrained_ranks(n).size
    # bracket in x = log(alpha): f(x) = log(crossing) - log(delta), increasing in x
    x_ok, f_ok = math.log(delta / (sides * m)), None  # Bonferroni: crossing <= delta
    x_bad, f_bad = math.log(delta / sides), None  # one rank alone crosses w.p. delta / sides
    target = math.log(delta)
    x = min(max(math.log(_initial_guess(n, delta, sides)), x_ok), x_bad)
    best = x_ok
    for _ in range(60):
        c = _crossing(n, math.exp(x), sides)
        f = (math.log(c) if c > 0 else -745.0) - target
        if f <= 0.0:
            x_ok, f_ok, best = x, f, x
            if f >= math.log1p(-TOLERANCE):
                break
        else:
            x_bad, f_bad = x, f
        # next point: secant through the bracket ends when both are known, else a slope-1 step
        if f_ok is not None and f_bad is not None:
            nxt = x_ok - f_ok * (x_bad - x_ok) / (f_bad - f_ok)
            # keep it inside and away from the ends (Illinois-type safeguard)
            span = x_bad - x_ok
            nxt = min(max(nxt, x_ok + 0.02 * span), x_bad - 0.02 * span)
            # aim a hair below the target so that the next point tends to be valid
            nxt -= 0.3 * TOLERANCE
        else:
            nxt = x - f - (0.3 * TOLERANCE if f > 0 else -0.5 * math.log1p(-TOLERANCE))
            nxt = min(max(nxt, x_ok), x_bad)
        if abs(nxt - x) < 1e-12 or x_bad - x_ok < 1e-10:
            break
        x = nxt
    return math.exp(best)


def _rank_below(n: int, k: np.ndarray) -> np.ndarray:
    """Largest constrained rank ``<= k`` (0 if none), for integer arrays ``k`` in 0..n."""
    r = constrained_ranks(n)
    i = np.searchsorted(r, k, side="right") - 1
    return np.where(i >= 0, r[np.maximum(i, 0)], 0)


def _rank_above(n: int, j: np.ndarray) -> np.ndarray:
    """Smallest constrained rank ``>= j`` (``n + 1`` if none), for integer arrays ``j`` in 1..n+1."""
    r = constrained_ranks(n)
    i = np.searchsorted(r, j, side="left")
    return np.where(i < r.size, r[np.minimum(i, r.size - 1)], n + 1)


def ell_lower(k: Any, n: int, alpha: float) -> np.ndarray:
    """Lower band value ``a_k`` at ``k`` of ``n`` events (``k`` in 0..n; ``a_0 = 0``), local level ``alpha``.

    The ``alpha`` quantile of ``U_(r)``, ``r`` the largest constrained rank ``<= k``.
    Vectorised over ``k``; O(1) per element.

    >>> ell_lower([0, 1, 5], 5, 0.05).round(4).tolist()
    [0.0, 0.0102, 0.5493]
    """
    kk = np.asarray(k, dtype=np.int64)
    r = _rank_below(int(n), kk)
    rr = np.maximum(r, 1)
    return np.where(r > 0, special.betaincinv(rr, n + 1 - rr, alpha), 0.0)


def ell_upper(j: Any, n: int, alpha: float) -> np.ndarray:
    """Upper band value ``b_j`` at rank ``j`` of ``n`` (``j`` in 1..n+1; ``b_{n+1} = 1``), local level ``alpha``.

    The ``1 - alpha`` quantile of ``U_(r)``, ``r`` the smallest constrained rank ``>= j``.
    Vectorised over ``j``; O(1) per element.

    >>> ell_upper([1, 5, 6], 5, 0.05).round(4).tolist()
    [0.4507, 0.9898, 1.0]
    """
    jj = np.asarray(j, dtype=np.int64)
    r = _rank_above(int(n), jj)
    rr = np.minimum(r, n)
    return np.where(r <= n, 1.0 - special.betaincinv(n + 1 - rr, rr, alpha), 1.0)
