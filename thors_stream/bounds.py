"""Distribution-free bounds for the threshold THORS returned: error rates and cost.

The paper (Tian & Zhang, section 3) bounds the true FPR/FNR at the chosen threshold with
order-statistic (Beta) distributions for *fixed* ranks ``k0``, ``k1`` (Theorem 2), the
expected cost of ``n_test`` new events with Bernstein's inequality (Theorem 3) and an
interval for it with Hoeffding's (Theorem 5). Two assumptions fail for THORS as used:

* THORS picks ``k0``, ``k1`` by minimising the cost on the very data the bound is computed
  from, so a bound that is valid for a rank fixed in advance is not valid for the chosen
  one (it is optimistic: the empirical cost at the argmin is biased low).
* Theorem 3 sums ``n_te`` terms as if independent, but every test event shares the same two
  error rates, so the expected cost does not concentrate as ``n_te`` grows.

The default bounds here are valid for the threshold actually returned, because they rest on
a *simultaneous* confidence band for each class's score CDF, which holds at every threshold
at once and hence at any threshold chosen from the data:

**The band.** Write ``G = F(t)`` for the CDF of one class at the threshold ``t`` and ``k`` for
the number of that class's ``n`` validation scores ``<= t``. With ``U_(1) <= ... <= U_(n)``
the uniform order statistics of that class (``X_i = F^{-1}(U_i)``, for any ``F``, ties and
atoms included), ``U_(k) <= G < U_(k+1)`` (``U_(0) = 0``, ``U_(n+1) = 1``). A lower band
``a_k`` with ``P(U_(k) >= a_k for all k) >= 1 - d`` gives ``G >= a_k``; an upper band ``b_j``
with ``P(U_(j) <= b_j for all j) >= 1 - d`` gives ``G <= b_{k+1}``. Four bands are offered:

* ``"exact"`` (default): the equal-local-level band (Beta quantiles at one local level
  ``alpha`` for every rank) whose simultaneous coverage is *computed* by the recursion of
  :mod:`thors_stream._band` and calibrated to ``[1 - d, 1 - 0.99 d]``; with ``sides=2`` both
  sides hold at once with probability ``1 - d``. Classes above :data:`EXACT_MAX_N` events use
  ``"hybrid"``.

* ``"dkw"``: one-sided DKW with Massart's constant, ``a_k = k/n - e``, ``b_j = (j-1)/n + e``,
  ``e = sqrt(log(1/d) / (2n))`` (Massart 1990; valid for ``d <= 1/2``, larger ``d`` is
  treated as ``1/2``).
* ``"bonferroni"``: Beta quantiles with a union bound over the ``n`` ranks,
  ``a_k = BetaInv(d/n; k, n-k+1)``, ``b_j = BetaInv(1 - d/n; j, n-j+1)``.
* ``"hybrid"`` (the default before ``"exact"``): the tighter of the two with ``d/2`` each (union bound), i.e.
  ``a_k = max(BetaInv(d/(2n); k, n-k+1), k/n - sqrt(log(2/d)/(2n)))`` and likewise for
  ``b``. Near-Beta width for small rates, near-DKW width in the middle.

``FPR = 1 - G0`` and ``FNR = G1``, so ``fpr_upper = 1 - a_{k0}``, ``fpr_lower = 1 - b_{k0+1}``,
``fnr_upper = b_{k1+1}``, ``fnr_lower = a_{k1}``, with ``d = 1 - confidence`` for each
one-sided statement.

**Class prior.** A known population prior (``class_prior=``, or the one the result was
computed with) is used as is. Otherwise the validation set is taken to be an i.i.d. sample
of the population and the prior gets a two-sided Clopper-Pearson interval with its own share
of the failure probability; every cost bound is maximised (minimised) over that interval.

**Cost.** Per event the cost is ``fn_cost`` (a missed positive, probability ``pi1 * FNR``),
``fp_cost`` (a false alarm, ``(1 - pi1) * FPR``) or 0. ``risk_upper`` bounds the expected
cost per new event ``pi1 * fn_cost * FNR + (1 - pi1) * fp_cost * FPR`` (the paper's ``C`` is
``n_test`` times it). Given the validation data, new events are independent, and the cost of
one is stochastically increasing in both rates; so on the event that the rates and the prior
lie inside their bounds, the realised cost of ``n_test`` events is dominated by a sum of
``n_test`` i.i.d. three-point variables, whose ``1 - d`` quantile is bounded by Bernstein's
inequality (``cost_upper``) or computed exactly (``cost_upper_exact``: the sum is
``small * M + (big - small) * X`` with ``M ~ Bin(n_test, b)``, ``X | M ~ Bin(M, a/b)``; its CDF
is an exact finite sum, the quantile is found by bisection). The failure probability
``1 - confidence`` is split *equally and in advance* between the statements each bound uses
(never depending on the data). With ``method="exact"`` the statements are independent given
the labels (each band depends on one class's scores, the prior's interval on the labels, the
test draw on nothing else), so each of ``m`` gets ``1 - (1 - delta)^(1/m)`` and the cost
interval uses one two-sided band per class (``m`` = 2, [3]); the other methods use the union
bound below (``delta / m`` each, four one-sided rate statements for the interval):

===================== ============================================ =============
bound                 statements (each gets ``d / m``)             ``m``
===================== ============================================ =============
fpr/fnr lower/upper   that one statement                           1
risk_upper            FPR upper, FNR upper, [prior]                2 [3]
expected_cost_upper   same as risk_upper (``n_test * risk_upper``) 2 [3]
cost_interval         four rate bounds, [prior]                    4 [5]
cost_upper(_exact)    FPR upper, FNR upper, [prior], test sampling 3 [4]
===================== ============================================ =============

(``[prior]`` only when the prior is estimated.) Each reported bound holds with probability at
least ``confidence`` on its own; for several at once add their failure probabilities.

**Counts, not weights.** The theory is about events, so every bound uses the plain counts
(``count0``, ``count_k0``, ...). The band holds at every threshold, including one chosen
with sample weights or a class prior, so for a weighted result the rate bounds are valid
bounds on the *event* rates ``P(score > t | y = 0)`` and ``P(score <= t | y = 1)``, and the
cost bounds are about the unit-weight cost ``fn_cost * #FN + fp_cost * #FP`` of new events,
not about an example-dependent (weighted) cost, which depends on the unknown weights of new
events and has no distribution-free bound. ``ThresholdBounds.weighted`` flags this case.
When the weights are frequency weights that change the class mix, pass ``class_prior``.

**Assumptions.** Validation and new events are independent draws from the same population
(class-conditional score distributions fixed); the prior is known or the validation set is
an i.i.d. sample. For a ``StreamingThors`` window this means no drift within the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy import special, stats

from ._validation import check_class_prior, check_open_unit

__all__ = ["CostInterval", "RealisedCostCheck", "ThresholdBounds", "threshold_bounds"]

METHODS = ("exact", "hybrid", "dkw", "bonferroni")
EXACT_MAX_N = 5_000  # classes larger than this use the hybrid band under method="exact" (the level costs > 50 ms)
_TRUNC = 1e-15  # probability mass neglected (conservatively) in the exact quantile
MAX_N_TEST = 2**53  # largest n_test: event counts up to it are exact in float64
MAX_EXACT_CELLS = 2**22  # widest support (and cells per array) the exact quantile evaluates


class CostInterval(NamedTuple):
    """An interval for the expected cost of ``n_test`` new events and the probability it holds."""

    lower: float
    upper: float
    probability: float


@dataclass(frozen=True)
class ThresholdBounds:
    """High-probability bounds on what a THORS threshold does on new events.

    Made by :func:`threshold_bounds` (or ``ThresholdResult.bounds``); the module docstring
    of :mod:`thors_stream.bounds` derives every number. All probabilities are over the
    validation data (and, for ``cost_upper*``, the new events). Each bound holds on its own
    with probability at least ``confidence``.

    Attributes
    ----------
    confidence, method, n_test
        The inputs (``n_test`` is ``None`` when no cost of new events was asked for).
    weighted
        True when the result had non-unit weights: the bounds are about event counts (see
        the module docstring), not about the weighted rates or the weighted cost.
    fpr, fnr
        Empirical count-based rates ``(count0 - count_k0) / count0``, ``count_k1 / count1``
        (0.0 for an empty class).
    fpr_lower, fpr_upper, fnr_lower, fnr_upper
        One-sided bounds on the true rates at the returned threshold, valid for that
        data-dependent threshold (simultaneous band). ``[lower, upper]`` is a two-sided
        interval at level ``2 * confidence - 1``. An empty class gives ``[0, 1]``.
    class_prior, prior_known
        The positive-class share used for the costs (given, or ``count1 / (count0 + count1)``)
        and whether it was taken as known (no confidence term).
    risk_upper
        Upper bound on the expected cost of one new event,
        ``pi1 * fn_cost * FNR + (1 - pi1) * fp_cost * FPR``.
    expected_cost_upper
        ``n_test * risk_upper``: upper bound on the expected cost of ``n_test`` new events
        given the threshold (the paper's ``C``).
    cost_interval
        :class:`CostInterval` for that expected cost (Theorem 5's statement, made valid).
    cost_upper
        Upper bound on the *realised* cost ``fn_cost * #FN + fp_cost * #FP`` of ``n_test``
        new events (band + Bernstein), at most ``n_test * max(fn_cost, fp_cost)``.
    cost_upper_exact
        The same statement with the exact quantile in place of Bernstein; never larger than
        ``cost_upper``.
    paper_fpr_lower, paper_fpr_upper, paper_fnr_lower, paper_fnr_upper
        Theorem 2 as printed: Beta quantiles for the ranks taken as fixed. **Not valid** for
        the rank THORS picked (they undercover; see ``benchmarks/bounds_coverage.py``).
    paper_cost_upper
        Theorem 3 as printed (Bernstein over ``n_test`` terms treated as independent) for
        the expected cost; undercovers badly as ``n_test`` grows.
    paper_cost_interval
        Theorem 5 as printed, ``[C1 - Ce, C2 + Ce]`` with ``e`` solved so that its stated
        probability equals ``confidence`` (lower end clipped at 0); pointwise in the ranks.

    Cost fields are ``None`` when ``n_test`` is ``None`` and 0.0 when ``n_test == 0``.
    """

    confidence: float
    method: str
    n_test: int | None
    weighted: bool
    fpr: float
    fnr: float
    fpr_lower: float
    fpr_upper: float
    fnr_lower: float
    fnr_upper: float
    class_prior: float
    prior_known: bool
    risk_upper: float
    expected_cost_upper: float | None
    cost_interval: CostInterval | None
    cost_upper: float | None
    cost_upper_exact: float | None
    paper_fpr_lower: float
    paper_fpr_upper: float
    paper_fnr_lower: float
    paper_fnr_upper: float
    paper_cost_upper: float | None
    paper_cost_interval: CostInterval | None


# --------------------------------------------------------------------------- checks
def check_confidence(confidence: Any) -> float:
    """Return ``confidence`` as a float strictly inside (0, 1) or raise ``ValueError``; below
    2**-53, where ``1 - confidence`` rounds to 1, it is refused too."""
    c: float = check_open_unit(confidence, "confidence")  # type: ignore[assignment]
    if 1.0 - c == 1.0:
        raise ValueError(f"confidence must be at least 2**-53 (below it 1 - confidence rounds to 1), "
                         f"got {confidence!r}")
    return c


def check_n_test(n_test: Any) -> int | None:
    """Return ``n_test`` as an int in [0, 2**53] (or ``None``) or raise ``ValueError``."""
    if n_test is None:
        return None
    if isinstance(n_test, (bool, str, bytes)):
        raise ValueError(f"n_test must be a non-negative integer or None, got {n_test!r}")
    try:
        f = float(n_test)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"n_test must be a non-negative integer or None, got {n_test!r}") from None
    if not (math.isfinite(f) and f == int(f)) or f < 0:
        raise ValueError(f"n_test must be a non-negative integer or None, got {n_test!r}")
    if f > MAX_N_TEST or (isinstance(n_test, (int, np.integer)) and int(n_test) > MAX_N_TEST):
        raise ValueError(f"n_test must be at most 2**53 (MAX_N_TEST: counts beyond it are not exact in "
                         f"float64), got {n_test!r}")
    return int(f)


def check_method(method: Any) -> str:
    """Return ``method`` if it names a band (``"exact"``, ``"hybrid"``, ``"dkw"``, ``"bonferroni"``)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    return str(method)


# --------------------------------------------------------------------------- bands
def _f(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _exact_band(k: np.ndarray, n: np.ndarray, delta: np.ndarray, sides: int, upper: bool) -> np.ndarray:
    """The calibrated equal-local-level band (:mod:`thors_stream._band`) at ``k`` (lower: ``a_k``)
    or ``k + 1`` (upper: ``b_{k+1}``), one level per distinct ``(n, delta)``; classes above
    :data:`EXACT_MAX_N` events get the hybrid band (Bonferroni-Beta and DKW, each with half of
    ``delta / sides`` per side: valid, slightly wider). Inputs broadcast, ``0 < k <= n``
    (lower) or ``0 <= k < n`` (upper) where it matters."""
    from ._band import band_level, ell_lower, ell_upper

    out = np.empty(k.shape)
    flat_n, flat_d = n.reshape(-1), delta.reshape(-1)
    pairs = np.unique(np.stack([flat_n, flat_d], axis=1), axis=0)
    for nv, dv in pairs.tolist():
        sel = (n == nv) & (delta == dv)
        kk = k[sel]
        ni = int(nv)
        if ni < 1:
            out[sel] = 1.0 if upper else 0.0
        elif ni > EXACT_MAX_N:
            d = dv / sides
            out[sel] = (cdf_upper(kk, nv, d, "hybrid") if upper else cdf_lower(kk, nv, d, "hybrid"))
        else:
            alpha = band_level(ni, float(dv), sides)
            ki = kk.astype(np.int64)
            out[sel] = ell_upper(ki + 1, ni, alpha) if upper else ell_lower(ki, ni, alpha)
    return out


def cdf_lower(k: Any, n: Any, delta: Any, method: str = "exact", sides: int = 1) -> np.ndarray:
    """Simultaneous lower confidence bound on a class's CDF at the threshold.

    ``k`` of the class's ``n`` scores are ``<= t``; returns ``a_k`` with
    ``P(F(t) >= a_k for every t at once) >= 1 - delta`` (``a_0 = 0``; ``n = 0`` gives 0).
    ``method="exact"`` (default): the equal-local-level band whose simultaneous coverage is
    computed exactly and calibrated to ``1 - delta``; with ``sides=2`` it is the lower side of
    the two-sided band whose *both* sides hold at once with probability ``1 - delta``
    (:func:`cdf_upper` with the same arguments gives the other side).
    ``method="pointwise"`` is the paper's fixed-rank quantile ``BetaInv(delta; k, n-k+1)``,
    not simultaneous. Vectorised over all arguments; O(1) per element.

    >>> round(float(cdf_lower(50, 100, 0.05)), 4), round(float(cdf_lower(50, 100, 0.05, "pointwise")), 4)
    (0.3577, 0.4136)
    >>> round(float(cdf_lower(5, 100, 0.05)), 4), round(float(cdf_lower(5, 100, 0.05, "hybrid")), 4)
    (0.0092, 0.0055)
    """
    k, n, delta = np.broadcast_arrays(_f(k), _f(n), _f(delta))
    ok = (k > 0) & (n > 0)
    kk, nn = np.where(ok, k, 1.0), np.where(ok, n, 1.0)
    a: Any
    if method == "exact":
        a = _exact_band(kk, nn, delta, sides, upper=False)
    elif method == "pointwise":
        a = stats.beta.ppf(delta, kk, nn - kk + 1)
    elif method == "bonferroni":
        a = stats.beta.ppf(delta / nn, kk, nn - kk + 1)
    elif method == "dkw":
        a = kk / nn - np.sqrt(np.log(1.0 / np.minimum(delta, 0.5)) / (2 * nn))
    elif method == "hybrid":
        a = np.maximum(
            stats.beta.ppf(delta / (2 * nn), kk, nn - kk + 1),
            kk / nn - np.sqrt(np.log(2.0 / delta) / (2 * nn)),
        )
    else:
        raise ValueError(f"method must be one of {METHODS + ('pointwise',)}, got {method!r}")
    return np.where(ok, np.clip(a, 0.0, 1.0), 0.0)


def cdf_upper(k: Any, n: Any, delta: Any, method: str = "exact", sides: int = 1) -> np.ndarray:
    """Simultaneous upper confidence bound on a class's CDF at the threshold.

    ``k`` of the class's ``n`` scores are ``<= t``; returns ``b_{k+1}`` with
    ``P(F(t) <= b_{k+1} for every t at once) >= 1 - delta`` (``k = n`` or ``n = 0`` gives 1).
    ``method``, ``sides``: as in :func:`cdf_lower`.
    ``method="pointwise"``: the paper's ``BetaInv(1 - delta; k+1, n-k)``. O(1) per element.

    >>> round(float(cdf_upper(50, 100, 0.05)), 4), float(cdf_upper(100, 100, 0.05))
    (0.6423, 1.0)
    """
    k, n, delta = np.broadcast_arrays(_f(k), _f(n), _f(delta))
    ok = (k < n) & (n > 0)
    j, nn = np.where(ok, k + 1, 1.0), np.where(ok, n, 1.0)
    b: Any
    if method == "exact":
        b = _exact_band(j - 1, nn, delta, sides, upper=True)
    elif method == "pointwise":
        b = stats.beta.ppf(1 - delta, j, nn - j + 1)
    elif method == "bonferroni":
        b = stats.beta.isf(delta / nn, j, nn - j + 1)
    elif method == "dkw":
        b = (j - 1) / nn + np.sqrt(np.log(1.0 / np.minimum(delta, 0.5)) / (2 * nn))
    elif method == "hybrid":
        b = np.minimum(
            stats.beta.isf(delta / (2 * nn), j, nn - j + 1),
            (j - 1) / nn + np.sqrt(np.log(2.0 / delta) / (2 * nn)),
        )
    else:
        raise ValueError(f"method must be one of {METHODS + ('pointwise',)}, got {method!r}")
    return np.where(ok, np.clip(b, 0.0, 1.0), 1.0)


def _prior_interval(c1: np.ndarray, n: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson interval for the positive share (failure ``delta``)."""
    lo = np.where(c1 > 0, stats.beta.ppf(delta / 2, np.maximum(c1, 1), n - c1 + 1), 0.0)
    hi = np.where(c1 < n, stats.beta.isf(delta / 2, c1 + 1, np.maximum(n - c1, 1)), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


# --------------------------------------------------------------------------- cost pieces
def _risk_extreme(p_lo: np.ndarray, p_hi: np.ndarray, fn: float, fp: float, r1: np.ndarray, r0: np.ndarray,
                  fun: Any) -> np.ndarray:
    """max/min over the prior interval of ``pi*fn*r1 + (1-pi)*fp*r0`` (linear in pi)."""
    out: np.ndarray = fun(p_lo * fn * r1 + (1 - p_lo) * fp * r0, p_hi * fn * r1 + (1 - p_hi) * fp * r0)
    return out


def _dominating(p_lo: np.ndarray, p_hi: np.ndarray, fn: float, fp: float, u1: np.ndarray,
                u0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tail probabilities ``a = P(c >= big)``, ``b = P(c > 0)`` of the dominating 3-point law."""
    if fn >= fp:
        a = np.maximum(p_lo * u1, p_hi * u1)
    else:
        a = np.maximum((1 - p_lo) * u0, (1 - p_hi) * u0)
    b = _risk_extreme(p_lo, p_hi, 1.0, 1.0, u1, u0, np.maximum)
    return np.minimum(a, b), np.clip(b, 0.0, 1.0)


def bernstein_quantile(n: int, a: Any, b: Any, big: float, small: float, delta: Any) -> np.ndarray:
    """Bernstein upper bound on the ``1 - delta`` quantile of a sum of ``n`` i.i.d. costs.

    Each cost is ``big`` with probability ``a``, ``small`` with probability ``b - a`` and 0
    otherwise (``0 <= a <= b <= 1``, ``big >= small >= 0``). With mean ``mu``, variance
    ``v`` and ``M = big - mu``, ``P(S > n*mu + t) <= exp(-t^2 / (2(n v + M t / 3)))``, so
    ``t = M L / 3 + sqrt((M L / 3)^2 + 2 n v L)``, ``L = log(1/delta)``; capped at ``n * big``.
    Vectorised over ``a``, ``b``, ``delta``; O(1) per element.

    >>> round(float(bernstein_quantile(1000, 0.1, 0.1, 1.0, 1.0, 0.05)), 2)
    124.14
    """
    a, b, delta = np.broadcast_arrays(_f(a), _f(b), _f(delta))
    mu = big * a + small * (b - a)
    m = np.maximum(big - mu, 0.0)
    L = np.log(1.0 / delta)
    # sqrt(v) as the norm of the deviations (no cancellation), and sqrt(x^2 + y^2) by hypot:
    # nothing is squared, so costs up to the float maximum do not overflow
    sd = np.hypot(np.hypot(np.sqrt(a) * (big - mu), np.sqrt(np.maximum(b - a, 0.0)) * np.abs(small - mu)),
                  np.sqrt(np.maximum(1.0 - b, 0.0)) * mu)
    x = m * L / 3
    t = x + np.hypot(x, np.sqrt(2.0 * n * L) * sd)
    q: np.ndarray = np.minimum(n * mu + t, n * big)
    return q


def _exact_part(n: int, a: np.ndarray, b: np.ndarray, r: np.ndarray, delta: np.ndarray, hi: np.ndarray,
                m_lo: np.ndarray, m_hi: np.ndarray, big: float, small: float, tol: float) -> np.ndarray:
    """exact_quantile's bisection for elements with ``0 < a < b`` and ``big > small`` (1-d
    arrays; ``r = a / b``, ``hi`` the upper end, ``m_lo..m_hi`` the support of M kept, as
    int64 in ``0..n``)."""
    d = big - small
    width = int((m_hi - m_lo).max()) + 1
    m = m_lo[:, None] + np.arange(width)[None, :]
    valid = m <= m_hi[:, None]
    m = np.minimum(m, n)
    pm = np.where(valid, stats.binom.pmf(m, n, b[:, None]), 0.0)
    rr = r[:, None]
    target = 1 - delta

    def cdf(c: np.ndarray) -> np.ndarray:
        x = np.floor((c[:, None] - small * m) / d)
        ok = x >= 0
        xi = np.clip(x, 0, m)
        cond = np.where(ok, special.bdtr(xi, m, rr), 0.0)
        tot: np.ndarray = np.sum(pm * cond, axis=1)
        return tot

    lo_c = np.zeros(b.size)
    hi_c = hi.copy()
    good = cdf(hi_c) >= target
    for _ in range(200):
        mid = 0.5 * (lo_c + hi_c)
        ge = cdf(mid) >= target
        hi_c = np.where(ge, mid, hi_c)
        lo_c = np.where(ge, lo_c, mid)
        if np.all(hi_c - lo_c <= tol * np.maximum(hi_c, 1.0)):
            break
    # snap down to the largest attainable sum <= hi_c: still >= the quantile (which is one)
    x = np.clip(np.floor((hi_c[:, None] - small * m) / d), -1, m)
    snap = np.max(np.where(valid & (x >= 0), small * m + d * x, -np.inf), axis=1)
    snapped = np.where(np.isfinite(snap) & (cdf(np.maximum(snap, 0.0)) >= target), snap, hi_c)
    res: np.ndarray = np.where(good, snapped, hi)
    return res


def exact_quantile(
    n: int, a: Any, b: Any, big: float, small: float, delta: Any, upper: Any = None, tol: float = 1e-7
) -> np.ndarray:
    """Upper ``1 - delta`` quantile of a sum of ``n`` i.i.d. three-point costs, computed exactly.

    Same law as :func:`bernstein_quantile`. The sum is ``small * M + (big - small) * X`` with
    ``M ~ Bin(n, b)`` and ``X | M ~ Bin(M, a / b)``, so its CDF at ``c`` is the finite sum
    ``sum_m P(M = m) * P(X <= floor((c - small m) / (big - small)) | m)``, evaluated in full
    over the values of ``m`` with probability above ``1e-15`` (the rest is dropped, which can
    only raise the result). The smallest ``c`` with CDF ``>= 1 - delta`` is found by bisection
    between 0 and ``upper`` (default: the Bernstein bound) to a relative tolerance ``tol``,
    then lowered to the largest attainable sum below the upper end. The value is never below
    the true quantile (at most ``tol * upper`` above it) and never above ``upper``.
    O(W * log(1/tol)) per element, ``W`` the width of ``M``'s support (about
    ``16 * sqrt(n b (1 - b)) + 30``); where ``W`` exceeds :data:`MAX_EXACT_CELLS` (``n``
    beyond ~10**11 at ``b = 0.5``) the value is ``upper`` (the Bernstein bound), so time and
    memory stay bounded whatever ``n``.

    >>> float(exact_quantile(1000, 0.1, 0.1, 1.0, 1.0, 0.05)) == float(stats.binom.ppf(0.95, 1000, 0.1))
    True
    """
    a, b, delta = np.broadcast_arrays(_f(a), _f(b), _f(delta))
    shape = a.shape
    a, b, delta = a.ravel(), b.ravel(), delta.ravel()
    hi = (bernstein_quantile(n, a, b, big, small, delta) if upper is None
          else np.broadcast_to(_f(upper), shape).ravel().astype(np.float64))
    out = hi.copy()
    if n == 0:
        return np.zeros(shape)
    d = big - small
    r = np.where(b > 0, np.clip(a / np.where(b > 0, b, 1.0), 0.0, 1.0), 0.0)
    simple = (b <= 0) | (d <= 0) | (r <= 0) | (r >= 1)
    if simple.any():
        # S = v * M with v = small (no big events), big (all events big, or big == small)
        v = np.where((r >= 1) | (d <= 0), big, small)
        q = stats.binom.ppf(1 - delta[simple], n, b[simple])
        out[simple] = np.minimum(np.where(b[simple] > 0, v[simple] * q, 0.0), hi[simple])
    idx = np.flatnonzero(~simple)
    if idx.size:
        # M's support: ~16 sqrt(n b (1 - b)) + 30 values. Wider than MAX_EXACT_CELLS (n_test
        # beyond ~10**11 at b = 0.5): the Bernstein bound stands (time and memory stay
        # bounded); narrower: in chunks of at most MAX_EXACT_CELLS cells per array
        m_lo = np.asarray(stats.binom.ppf(_TRUNC, n, b[idx]))
        m_hi = np.minimum(np.maximum(np.asarray(stats.binom.isf(_TRUNC, n, b[idx])), m_lo), n)
        widths = m_hi - m_lo + 1
        keep = (widths <= MAX_EXACT_CELLS) & (m_hi < 2.0**53)  # (counts exact as int64 and float)
        idx, widths = idx[keep], widths[keep]
        m_lo, m_hi = m_lo[keep].astype(np.int64), m_hi[keep].astype(np.int64)
        if idx.size:
            per = max(1, int(MAX_EXACT_CELLS // float(widths.max())))
            for c0 in range(0, idx.size, per):
                part, sl = idx[c0 : c0 + per], slice(c0, c0 + per)
                out[part] = _exact_part(n, a[part], b[part], r[part], delta[part], hi[part], m_lo[sl], m_hi[sl],
                                        big, small, tol)
    res: np.ndarray = np.minimum(out, hi).reshape(shape)
    return res


# --------------------------------------------------------------------------- core
def _paper_eps(n_test: int, c0: Any, c1: Any, ck0: Any, ck1: Any, delta: Any) -> np.ndarray:
    """Theorem 5: the smallest eps >= 0 with ``n_te * sum of its four exp terms <= delta``."""
    c0, c1, ck0, ck1, delta = np.broadcast_arrays(_f(c0), _f(c1), _f(ck0), _f(ck1), _f(delta))
    s0, s1 = np.maximum(c0, 1.0), np.maximum(c1, 1.0)
    offs = [(ck0 / (s0 * (s0 + 1)), c0, s0), ((c0 - ck0) / (s0 * (s0 + 1)), c0, s0),
            (ck1 / (s1 * (s1 + 1)), c1, s1), ((c1 - ck1) / (s1 * (s1 + 1)), c1, s1)]

    def fail(eps: np.ndarray) -> np.ndarray:
        tot = np.zeros_like(eps)
        for off, cnt, s in offs:
            tot = tot + np.where(cnt > 0, np.exp(-2 * (eps + off) ** 2 * s), 0.0)
        return n_test * tot

    lo = np.zeros_like(delta)
    n_min = np.minimum(np.where(c0 > 0, c0, np.inf), np.where(c1 > 0, c1, np.inf))
    hi = np.sqrt(np.log(4.0 * max(n_test, 1) / delta) / (2 * np.where(np.isfinite(n_min), n_min, 1.0))) + 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        ok = fail(mid) <= delta
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    eps: np.ndarray = np.where(fail(lo) <= delta, lo, hi)
    return eps


def _realised_law(c0: np.ndarray, c1: np.ndarray, ck0: np.ndarray, ck1: np.ndarray, fn: float, fp: float,
                  delta: float, method: str, prior: float | None) -> tuple[np.ndarray, np.ndarray, float]:
    """The dominating three-point law of one new event's cost behind ``cost_upper*``: ``(a, b, d)``
    with ``a = P(cost >= max(fn, fp))``, ``b = P(cost > 0)`` and ``d`` the failure probability left
    for the test draw (the statements and their split as in :func:`bounds_arrays`). O(1) per element."""
    known = prior is not None
    m = 3 if known else 4
    d = -math.expm1(math.log1p(-delta) / m) if method == "exact" else delta / m
    u0 = 1 - cdf_lower(ck0, c0, d, method)
    u1 = cdf_upper(ck1, c1, d, method)
    if known:
        plo = phi = np.full(c0.shape, prior)
    else:
        plo, phi = _prior_interval(c1, c0 + c1, np.full(c0.shape, d))
    a, b = _dominating(plo, phi, fn, fp, u1, u0)
    return a, b, d


def bounds_arrays(
    count0: Any, count1: Any, count_k0: Any, count_k1: Any, *, fn_cost: float, fp_cost: float,
    confidence: float = 0.95, n_test: int | None = None, class_prior: float | None = None,
    method: str = "exact",
) -> dict[str, np.ndarray]:
    """Every bound of :class:`ThresholdBounds`, vectorised over arrays of counts.

    The engine behind :func:`threshold_bounds` (which calls it with scalars); used by the
    coverage simulation to bound many simulated validation sets at once. ``class_prior``
    given means known; ``None`` means estimated from ``count1 / (count0 + count1)``.
    Returns a dict of float arrays keyed by the :class:`ThresholdBounds` field names
    (intervals split into ``*_lower`` / ``*_upper``; cost keys only when ``n_test`` is set).
    O(1) per element for the rate bounds, O(W log(1/tol)) for the exact cost quantile.

    >>> out = bounds_arrays([90, 900], [10, 100], [60, 600], [2, 20], fn_cost=5, fp_cost=1)
    >>> out["fpr_upper"].round(3).tolist(), out["fnr_upper"].round(3).tolist()
    ([0.485, 0.382], [0.624, 0.333])
    """
    conf = check_confidence(confidence)
    n_te = check_n_test(n_test)
    method = check_method(method)
    prior = check_class_prior(class_prior)
    c0, c1, ck0, ck1 = np.broadcast_arrays(_f(count0), _f(count1), _f(count_k0), _f(count_k1))
    fn, fp = float(fn_cost), float(fp_cost)
    delta = 1.0 - conf
    n = c0 + c1
    known = prior is not None
    extra = 0 if known else 1
    out: dict[str, np.ndarray] = {}
    emp_fpr = np.where(c0 > 0, (c0 - ck0) / np.maximum(c0, 1), 0.0)
    emp_fnr = np.where(c1 > 0, ck1 / np.maximum(c1, 1), 0.0)
    out["fpr"], out["fnr"] = emp_fpr, emp_fnr
    out["class_prior"] = np.full(c0.shape, prior) if known else c1 / n

    def rates(d: float, meth: str, sides: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (1 - cdf_upper(ck0, c0, d, meth, sides), 1 - cdf_lower(ck0, c0, d, meth, sides),
                cdf_lower(ck1, c1, d, meth, sides), cdf_upper(ck1, c1, d, meth, sides))

    joint = method == "exact"

    def share(m: int) -> float:
        """Each of ``m`` statements' failure probability: with ``method="exact"`` they are
        independent given the labels (one per class, the prior, the test draw), so the
        product of their coverages is ``1 - delta``; otherwise a union bound (``delta / m``)."""
        return -math.expm1(math.log1p(-delta) / m) if joint else delta / m

    def prior_iv(d: float) -> tuple[np.ndarray, np.ndarray]:
        if known:
            p = np.full(c0.shape, prior)
            return p, p
        return _prior_interval(c1, n, np.full(c0.shape, d))

    out["fpr_lower"], out["fpr_upper"], out["fnr_lower"], out["fnr_upper"] = rates(delta, method)
    (out["paper_fpr_lower"], out["paper_fpr_upper"],
     out["paper_fnr_lower"], out["paper_fnr_upper"]) = rates(delta, "pointwise")

    # expected cost per new event
    d = share(2 + extra)
    _, u0, _, u1 = rates(d, method)
    plo, phi = prior_iv(d)
    out["risk_upper"] = _risk_extreme(plo, phi, fn, fp, u1, u0, np.maximum)
    if n_te is None:
        return out
    out["expected_cost_upper"] = n_te * out["risk_upper"]
    # interval for the expected cost of n_te events: both sides of each class's band
    d = share(2 + extra) if joint else delta / (4 + extra)
    l0, u0, l1, u1 = rates(d, method, 2 if joint else 1)
    plo, phi = prior_iv(d)
    out["cost_interval_lower"] = n_te * _risk_extreme(plo, phi, fn, fp, l1, l0, np.minimum)
    out["cost_interval_upper"] = n_te * _risk_extreme(plo, phi, fn, fp, u1, u0, np.maximum)
    # realised cost of n_te events
    a, b, d = _realised_law(c0, c1, ck0, ck1, fn, fp, delta, method, prior)
    big, small = max(fn, fp), min(fn, fp)
    bern = bernstein_quantile(n_te, a, b, big, small, d)
    out["cost_upper"] = bern
    out["cost_upper_exact"] = np.minimum(exact_quantile(n_te, a, b, big, small, d, upper=bern), bern)
    # the paper's Theorems 3 and 5, as printed (pi from the prior or the validation mix)
    pi1 = out["class_prior"]
    pi0 = 1 - pi1
    ey1, ey0 = (ck1 + 1) / (c1 + 1), (c0 - ck0 + 1) / (c0 + 1)
    vy1 = (ck1 + 1) * (c1 - ck1) / ((c1 + 1) ** 2 * (c1 + 2))
    vy0 = ck0 * (c0 - ck0 + 1) / ((c0 + 1) ** 2 * (c0 + 2))
    cstar = n_te * (fn * pi1 * ey1 + fp * pi0 * ey0)
    L = math.log(1.0 / delta)
    # sqrt(2 L sigma2), sigma2 = n_te (fn^2 pi1^2 vy1 + fp^2 pi0^2 vy0), by hypot (no square
    # of a cost, which overflows beyond ~1.3e154)
    sigma = np.sqrt(2.0 * n_te * L) * np.hypot(fn * pi1 * np.sqrt(vy1), fp * pi0 * np.sqrt(vy0))
    mm = np.maximum(pi1 * fn * np.maximum(ey1, 1 - ey1), pi0 * fp * np.maximum(ey0, 1 - ey0))
    out["paper_cost_upper"] = (cstar + mm * L / 3 + np.hypot(mm * L / 3, sigma)) * (n_te > 0)
    eps = _paper_eps(n_te, c0, c1, ck0, ck1, delta)
    c_lo = n_te * (fn * pi1 * ck1 / (c1 + 1) + fp * pi0 * (c0 - ck0) / (c0 + 1))
    c_e = n_te * (fn * pi1 + fp * pi0) * eps
    out["paper_cost_interval_lower"] = np.maximum(c_lo - c_e, 0.0)
    out["paper_cost_interval_upper"] = cstar + c_e
    return out


def threshold_bounds(
    result: Any, confidence: float = 0.95, n_test: int | None = None, *,
    class_prior: float | None = None, method: str = "exact",
) -> ThresholdBounds:
    """High-probability bounds on the true error rates and costs of a THORS threshold.

    Valid for the threshold THORS actually returned (chosen from the same data): the rate
    bounds come from a simultaneous band over all thresholds, the cost bounds from that band,
    a confidence interval for the class prior when it is estimated, and a concentration
    bound for the new events, joined by a union bound. See the :mod:`thors_stream.bounds`
    module docstring for the derivation, the split of ``1 - confidence`` and what a weighted
    result's bounds mean. The paper's own (pointwise) bounds are reported as ``paper_*``.

    Parameters
    ----------
    result
        A :class:`~thors_stream.ThresholdResult` (``thors_threshold`` or
        ``StreamingThors.result()``).
    confidence
        Probability, in (0, 1), with which each bound holds.
    n_test
        Number of new events whose cost to bound; ``None`` skips the cost-of-``n_test``
        fields, 0 makes them 0.
    class_prior
        Population share of positives among new events, taken as known. Default: the
        result's ``class_prior`` if it has one, else estimated from the validation counts
        (with its own confidence term).
    method
        Simultaneous band: ``"exact"`` (default: calibrated to exactly ``1 - delta``, with
        joint accounting), ``"hybrid"`` (the earlier default), ``"dkw"`` or ``"bonferroni"``.

    Raises
    ------
    ValueError
        ``confidence`` outside (0, 1), ``n_test`` negative or not an integer, a bad
        ``class_prior`` or ``method``, a result with no events or inconsistent counts.

    Complexity: O(1) for the rate bounds; the exact cost quantile costs
    O(sqrt(n_test) * 40) work (bisection over an exact finite sum).

    Examples
    --------
    >>> import numpy as np
    >>> from thors_stream import thors_threshold
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(2000) < 0.3
    >>> s = rng.normal(1.5 * y, 1.0)
    >>> r = thors_threshold(s, y, fn_cost=5, fp_cost=1)
    >>> b = threshold_bounds(r, confidence=0.95, n_test=1000)
    >>> b.fpr_lower <= r.fpr <= b.fpr_upper and b.fnr_lower <= r.fnr <= b.fnr_upper
    True
    >>> b.cost_upper_exact <= b.cost_upper
    True
    >>> round(b.fnr_upper, 3), round(b.cost_upper_exact)
    (0.127, 618)
    """
    conf = check_confidence(confidence)
    n_te = check_n_test(n_test)
    method = check_method(method)
    prior = check_class_prior(class_prior)
    if prior is None:
        prior = getattr(result, "class_prior", None)
    counts = (int(result.count0), int(result.count1), int(result.count_k0), int(result.count_k1))
    if counts[0] + counts[1] <= 0 or not (0 <= counts[2] <= counts[0] and 0 <= counts[3] <= counts[1]):
        raise ValueError(f"result must hold at least one event and 0 <= count_k <= count per class, got counts "
                         f"count0={counts[0]}, count1={counts[1]}, count_k0={counts[2]}, count_k1={counts[3]}")
    weighted = not (
        float(result.n0) == counts[0] and float(result.n1) == counts[1]
        and float(result.k0) == counts[2] and float(result.k1) == counts[3]
    )
    out = bounds_arrays(*counts, fn_cost=result.fn_cost, fp_cost=result.fp_cost, confidence=conf,
                        n_test=n_te, class_prior=prior, method=method)
    g = {k: float(v) for k, v in out.items()}

    def iv(prefix: str) -> CostInterval | None:
        if n_te is None:
            return None
        return CostInterval(g[prefix + "_lower"], g[prefix + "_upper"], conf)

    return ThresholdBounds(
        confidence=conf, method=method, n_test=n_te, weighted=weighted, fpr=g["fpr"], fnr=g["fnr"],
        fpr_lower=g["fpr_lower"], fpr_upper=g["fpr_upper"], fnr_lower=g["fnr_lower"], fnr_upper=g["fnr_upper"],
        class_prior=g["class_prior"], prior_known=prior is not None, risk_upper=g["risk_upper"],
        expected_cost_upper=g.get("expected_cost_upper"), cost_interval=iv("cost_interval"),
        cost_upper=g.get("cost_upper"), cost_upper_exact=g.get("cost_upper_exact"),
        paper_fpr_lower=g["paper_fpr_lower"], paper_fpr_upper=g["paper_fpr_upper"],
        paper_fnr_lower=g["paper_fnr_lower"], paper_fnr_upper=g["paper_fnr_upper"],
        paper_cost_upper=g.get("paper_cost_upper"), paper_cost_interval=iv("paper_cost_interval"),
    )


# --------------------------------------------------------------------------- monitoring
_CERT_MARGIN = 1e-9  # probability margin covering the rounding of the computed CDFs (~1e-12)


def _bdtr(k: float, n: int, p: float) -> float:
    """``P(Bin(n, p) <= k)`` for any real ``k`` (scipy's ``bdtr`` is NaN beyond ``0..n``)."""
    k = math.floor(k)
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return float(special.bdtr(k, n, p))


def three_point_cdf(n: int, a: float, b: float, big: float, small: float, c: float) -> float:
    """``P(S <= c)`` for ``S`` a sum of ``n`` i.i.d. three-point costs (``big`` w.p. ``a``,
    ``small`` w.p. ``b - a``, else 0; the law of :func:`exact_quantile`), never below the true
    value but for rounding (about ``1e-12``): no mass is dropped (the binomial tails beyond 40
    standard deviations are added whole). O(W), W the number of values of ``M ~ Bin(n, b)`` with
    ``small * M <= c``, at most ``80 sqrt(n b (1 - b)) + 100``.

    >>> round(three_point_cdf(2, 0.1, 0.3, 10.0, 1.0, 1.0), 6)   # no cost (0.7**2) or one small (2 * 0.2 * 0.7)
    0.77
    """
    if c < 0:
        return 0.0
    if n <= 0 or b <= 0:
        return 1.0
    b = min(b, 1.0)
    d = big - small
    r = min(max(a / b, 0.0), 1.0)
    if d <= 0 or r <= 0 or r >= 1:  # S = v * M
        return _bdtr(c / (big if (r >= 1 or d <= 0) else small), n, b)
    spread = math.sqrt(n * b * (1.0 - b))
    m_max = min(n, math.floor(c / small))
    m_lo = max(0, min(m_max, math.floor(n * b - 40.0 * spread - 50.0)))
    tail = _bdtr(m_lo - 1, n, b)  # bounds those terms from above
    m_hi = math.ceil(n * b + 40.0 * spread + 50.0)
    if m_max > m_hi:  # and the terms above the bulk
        tail += 1.0 - _bdtr(m_hi, n, b) if m_hi < n else 0.0
        m_max = m_hi
    m = np.arange(m_lo, m_max + 1, dtype=np.int64)
    x = np.floor((c - small * m) / d)
    cond = np.where(x >= 0, special.bdtr(np.clip(x, 0, m), m, r), 0.0)
    pmf = getattr(stats.binom, "_pmf", stats.binom.pmf)  # (the ufunc, without scipy's argument checks)
    return min(1.0, tail + float(np.sum(pmf(m, n, b) * cond)))


class RealisedCostCheck:
    """Whether the realised cost of new events exceeds the valid bound on it, row after row, cheaply.

    For one result (the threshold, chosen on its data), ``exceeds(n_test, realised)`` answers
    whether ``realised > threshold_bounds(result, confidence, n_test).cost_upper_exact`` and
    returns that bound when it does, ``None`` otherwise: the same answer and the same number,
    to the bit. Most calls cost O(1): a call first looks for a *certificate*, a cost ``c``
    below the bound for every ``n >= n_c``, found from the CDF of the realised cost's
    dominating law (:func:`three_point_cdf`; its true CDF at ``c`` below ``1 - d`` minus a
    margin of 1e-9 that covers rounding means that the exact quantile, at ``n_c`` and every
    larger ``n`` (the sum grows with ``n``), lies above ``c``). A realised cost up to the
    certificate needs no computation. Otherwise a new certificate is sought, first with a law
    that needs no band (the pointwise Beta bounds and the prior's point estimate: a
    stochastically smaller law, so its certificate holds too), then with the law itself; only
    when none is found is the exact bound computed (:func:`exact_quantile`, O(sqrt(n_test))).
    Costs grow by an event's cost at a time and the certificate roughly as the quantile, so
    over a run the exact bound is computed near the bound only. Unit-weight costs only (as the
    bound): ``fn_cost * #FN + fp_cost * #FP``.

    >>> import numpy as np
    >>> from thors_stream import thors_threshold
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(2000) < 0.3
    >>> r = thors_threshold(rng.normal(1.5 * y, 1.0), y, fn_cost=5, fp_cost=1)
    >>> check = RealisedCostCheck(r, 0.95)
    >>> check.exceeds(100, 40.0) is None                        # well below: certified
    True
    >>> check.exceeds(100, 500.0) == threshold_bounds(r, 0.95, n_test=100).cost_upper_exact
    True
    """

    def __init__(self, result: Any, confidence: float = 0.95, *, class_prior: float | None = None,
                 method: str = "exact") -> None:
        self.confidence = check_confidence(confidence)
        self.method = check_method(method)
        prior = check_class_prior(class_prior)
        self.class_prior = prior if prior is not None else getattr(result, "class_prior", None)
        self.result = result
        self._counts = tuple(_f(int(getattr(result, k))) for k in ("count0", "count1", "count_k0", "count_k1"))
        self._fn, self._fp = float(result.fn_cost), float(result.fp_cost)
        self._big, self._small = max(self._fn, self._fp), min(self._fn, self._fp)
        self._whole = self._fn.is_integer() and self._fp.is_integer()  # every realised cost a whole number
        self._law: tuple[float, float, float] | None = None  # (a, b, d) of the bound
        self._lower: tuple[float, float] | None = None  # (a, b) of a stochastically smaller law
        self._cert_n = 0
        self._cert = -math.inf
        self._z: float | None = None  # the normal quantile behind a certificate's first guess
        self.n_exact = 0  # how many times the exact bound was computed (for tests and benchmarks)

    def law(self) -> tuple[float, float, float]:
        """``(a, b, d)``: the dominating law of one new event's cost and the test draw's failure
        probability, as :func:`bounds_arrays` computes them for ``cost_upper*``. Cached."""
        if self._law is None:
            c0, c1, ck0, ck1 = self._counts
            a, b, d = _realised_law(c0, c1, ck0, ck1, self._fn, self._fp, 1.0 - self.confidence, self.method,
                                    self.class_prior)
            self._law = (float(a), float(b), float(d))
        return self._law

    def bound(self, n_test: int) -> float:
        """``cost_upper_exact`` for ``n_test`` new events (exactly as :func:`threshold_bounds`)."""
        n = check_n_test(n_test)
        assert n is not None
        a, b, d = self.law()
        self.n_exact += 1
        bern = bernstein_quantile(n, a, b, self._big, self._small, d)
        return float(np.minimum(exact_quantile(n, a, b, self._big, self._small, d, upper=bern), bern))

    def _lower_law(self) -> tuple[float, float]:
        """A law below the bound's: each rate's pointwise upper Beta quantile at the same ``d``
        (the calibrated band's level is at most ``d``, so its value is at least this one) or,
        for the hybrid band's classes, the smaller of it and the DKW term; the prior's point
        estimate (inside its interval) or the known prior."""
        if self._lower is None:
            a, b = _lower_law(self._counts, self._fn, self._fp, self._share(), self.class_prior)
            self._lower = (float(a), float(b))
        return self._lower

    def _share(self) -> float:
        delta = 1.0 - self.confidence
        m = 3 if self.class_prior is not None else 4
        return -math.expm1(math.log1p(-delta) / m) if self.method == "exact" else delta / m

    def _certify(self, n: int, realised: float, a: float, b: float, d: float) -> float | None:
        """A cost ``c >= realised`` such that no realised cost up to ``c`` exceeds the bound, for
        every ``n_test >= n``, or ``None``. With whole-number costs every cost and sum is exact in
        float64 and the realised costs are whole numbers, so ``P(S < c) < 1 - d`` (all sums below
        ``c`` under the quantile) suffices; otherwise ``P(S <= c) < 1 - d`` (``c`` below it)."""
        theta = 1.0 - d - _CERT_MARGIN
        big, small = self._big, self._small
        s = small / big
        mu = a + s * (b - a)
        var = max(a + s * s * (b - a) - mu * mu, 0.0)
        # the bound never exceeds Bernstein's (bernstein_quantile, here in units of big with a margin for rounding)
        log_d = math.log(1.0 / d)
        x = max(1.0 - mu, 0.0) * log_d / 3
        bern = big * min(n * mu + x + math.hypot(x, math.sqrt(2.0 * n * log_d * var)), float(n)) * (1.0 - 1e-9)
        if self._z is None:
            from statistics import NormalDist

            self._z = NormalDist().inv_cdf(theta) - 0.25
        guess = big * (n * mu + self._z * math.sqrt(n * var))
        whole = self._whole and n * big < 2.0**52
        if whole:
            guess = math.floor(guess)
        for c in ((guess, realised) if guess > realised else (realised,)):
            below = c - 0.5 if whole else c
            if c < bern and three_point_cdf(n, a, b, big, small, below) < theta:
                return c
        return None

    def exceeds(self, n_test: int, realised: float) -> float | None:
        """The bound ``cost_upper_exact`` of ``n_test`` new events when ``realised`` is above it,
        else ``None``. Amortised O(1); see the class docstring."""
        n = int(n_test)
        if not realised > 0:
            return None
        if n >= self._cert_n and realised <= self._cert:
            return None
        d = self._share()
        lower = self._law is None and self.method == "exact"  # (the lower law is derived for the exact band)
        laws = ([self._lower_law()] if lower else []) + [None]
        for law in laws:
            a, b = law if law is not None else self.law()[:2]
            c = self._certify(n, realised, a, b, d)
            if c is not None:
                self._cert_n, self._cert = n, c
                return None
        q = self.bound(n)
        return q if realised > q else None


def _lower_law(counts: tuple[np.ndarray, ...], fn: float, fp: float, d: float,
               prior: float | None) -> tuple[float, float]:
    """``(a, b)`` of a law stochastically below :func:`_realised_law`'s for ``method="exact"`` (see
    :meth:`RealisedCostCheck._lower_law`): rates no larger than the band's upper bounds at ``d``.
    The calibrated band's local level is at most ``d`` and its ranks are coarser outward, so its
    upper bound on a class's CDF at rank ``k + 1`` is at least the pointwise ``BetaInv(1 - d; k + 1,
    n - k)``, and its lower bound at ``k`` at most ``BetaInv(d; k, n - k + 1)``; the hybrid band
    (classes above :data:`EXACT_MAX_N`) is the tighter of a Beta quantile at a smaller level and
    a DKW term, so the DKW term is taken when it is the tighter. O(1)."""
    c0, c1, ck0, ck1 = (float(x) for x in counts)
    u1 = 1.0  # FNR's upper bound: the band's upper bound on the positives' CDF at k1 + 1
    if c1 > 0 and ck1 < c1:
        u1 = float(special.betaincinv(ck1 + 1, c1 - ck1, 1 - d))
        if c1 > EXACT_MAX_N:
            u1 = min(u1, ck1 / c1 + math.sqrt(math.log(2.0 / d) / (2 * c1)))
    u0 = 1.0  # FPR's upper bound: 1 - the band's lower bound on the negatives' CDF at k0
    if c0 > 0 and ck0 > 0:
        low = float(special.betaincinv(ck0, c0 - ck0 + 1, d))
        if c0 > EXACT_MAX_N:
            low = max(low, ck0 / c0 - math.sqrt(math.log(2.0 / d) / (2 * c0)))
        u0 = 1.0 - low
    u0, u1 = min(max(u0, 0.0), 1.0), min(max(u1, 0.0), 1.0)
    p = prior if prior is not None else c1 / (c0 + c1)  # inside the prior's interval
    a = p * u1 if fn >= fp else (1 - p) * u0
    b = min(p * u1 + (1 - p) * u0, 1.0)
    return min(a, b), b
