"""How many labelled validation events a THORS cost bound needs (the paper's Theorem 6).

The paper (Fig. 2/4/6, equation (cost.ub1)) plans the validation size ``n_v`` that keeps the
expected cost of ``n_test`` new events below ``multiple * C2`` with a given probability,
where ``C2 ~ n_test * (pi1 * fn_cost * FNR + (1 - pi1) * fp_cost * FPR)`` is the cost at the
error rates one expects (Theorem 6: ``k1 / (n1 + 1)`` and ``(n0 - k0) / (n0 + 1)`` settle to
the population FNR and FPR). :func:`required_validation_size` answers the same question
for the valid bounds of :mod:`thors_stream.bounds` (default) or with the paper's own
equation (``method="paper"``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._validation import check_class_prior
from .bounds import bounds_arrays, check_confidence, check_method, check_n_test
from .costs import resolve_costs

__all__ = ["paper_failure_probability", "required_validation_size"]

QUANTITIES = ("expected", "realised")


def _check_rate(x: Any, name: str) -> float:
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}") from None
    if isinstance(x, bool) or not 0.0 <= f <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")
    return f


def _plug_in_counts(n_v: np.ndarray, fpr: float, fnr: float,
                    pi1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n1 = np.rint(pi1 * n_v)
    n0 = n_v - n1
    k1 = np.rint(fnr * n1)
    k0 = n0 - np.rint(fpr * n0)
    return n0, n1, k0, k1


def paper_failure_probability(
    n_v: Any, fpr: float, fnr: float, class_prior: float, *, fn_cost: float, fp_cost: float,
    multiple: float, n_test: int = 1,
) -> np.ndarray:
    """The failure probability of the paper's equation (cost.ub1) at validation size ``n_v``.

    As printed: ``n_te * [exp(-2 (e + k1/(n1(n1+1)))^2 n1) + exp(-2 (e + (n0-k0)/(n0(n0+1)))^2 n0)]``
    with ``n1 = pi1 n_v``, ``n0 = n_v - n1``, ``k1 = FNR n1``, ``n0 - k0 = FPR n0`` (rounded),
    and ``e`` from ``C_e = (multiple - 1) * C2``, i.e.
    ``e = (multiple - 1) * (pi1 fn FNR + pi0 fp FPR) / (pi1 fn + pi0 fp)``. (Its derivation in
    the appendix gives the offsets ``(n1-k1)/(n1(n1+1))`` and ``k0/(n0(n0+1))`` for the upper
    bound; the printed ones belong to the lower bound. Both are O(1/n); on Adult-like rates
    the printed ones ask for 0.3% (``n_v`` ~ 160,000) to 10% (``n_v`` ~ 250) more events.)
    Not valid for the threshold THORS picks (fixed ranks). Vectorised, O(1) per element.

    >>> p = paper_failure_probability([1000, 100000], 0.2, 0.1, 0.25, fn_cost=100, fp_cost=10, multiple=1.3)
    >>> bool(p[0] > 0.05 > p[1])
    True
    """
    pi1 = float(class_prior)
    nv = np.asarray(n_v, dtype=np.float64)
    n0, n1, k0, k1 = _plug_in_counts(nv, fpr, fnr, pi1)
    ref = pi1 * fn_cost * fnr + (1 - pi1) * fp_cost * fpr
    eps = (multiple - 1.0) * ref / (pi1 * fn_cost + (1 - pi1) * fp_cost)
    s1, s0 = np.maximum(n1, 1.0), np.maximum(n0, 1.0)
    t1 = np.where(n1 > 0, np.exp(-2 * (eps + k1 / (s1 * (s1 + 1))) ** 2 * s1), 1.0)
    t0 = np.where(n0 > 0, np.exp(-2 * (eps + (n0 - k0) / (s0 * (s0 + 1))) ** 2 * s0), 1.0)
    return n_test * (t1 + t0)


def _ratio(n_v: np.ndarray, fpr: float, fnr: float, pi1: float, fn: float, fp: float, conf: float, n_test: int,
           prior_known: bool, quantity: str, method: str) -> np.ndarray:
    n0, n1, k0, k1 = _plug_in_counts(n_v, fpr, fnr, pi1)
    ref = pi1 * fn * fnr + (1 - pi1) * fp * fpr
    b = bounds_arrays(n0, n1, k0, k1, fn_cost=fn, fp_cost=fp, confidence=conf,
                      n_test=n_test if quantity == "realised" else None,
                      class_prior=pi1 if prior_known else None, method=method)
    out: np.ndarray = b["risk_upper"] / ref if quantity == "expected" else b["cost_upper_exact"] / (n_test * ref)
    return out


def required_validation_size(
    fpr: float, fnr: float, class_prior: float, *, fn_cost: float, fp_cost: float, multiple: float,
    confidence: float = 0.95, n_test: int = 1, method: str = "exact", quantity: str = "expected",
    prior_known: bool = False, max_size: int = 10**9,
) -> int:
    """Smallest validation size whose cost bound is at most ``multiple`` times the nominal cost.

    The nominal cost of ``n_test`` new events is ``C2 = n_test * (pi1 * fn_cost * fnr +
    (1 - pi1) * fp_cost * fpr)`` (the paper's ``C2`` for large ``n_v``). For a candidate size
    ``n_v`` the validation counts are the typical ones — ``n1 = pi1 n_v``, ``k1 = fnr n1``,
    ``n0 - k0 = fpr n0``, rounded — and the bound is computed from them:

    * ``method="paper"``: the paper's equation (cost.ub1) as printed — the smallest ``n_v``
      with :func:`paper_failure_probability` ``<= 1 - confidence``. Its bound is pointwise in
      the ranks (not valid for the threshold THORS picks) and its ``n_test`` factor is a
      union bound over identical events (needlessly conservative).
    * ``method="exact"`` (default) / ``"hybrid"`` / ``"dkw"`` / ``"bonferroni"`` (valid bounds):
      with ``quantity="expected"`` the smallest ``n_v`` with
      ``risk_upper <= multiple * C2 / n_test`` (the expected cost of new events; ``n_test``
      does not matter), with ``quantity="realised"`` the smallest with
      ``cost_upper_exact <= multiple * C2`` (the realised cost of ``n_test`` events; it may
      be unreachable for small ``n_test``). ``prior_known`` says whether the bound will be
      computed with a known prior (else it is estimated, with its confidence term).

    It is a planning figure for typical data, not a guarantee: the counts of the actual
    validation set vary around the plug-in ones. The search evaluates a geometric grid of
    sizes and bisects between the first grid size whose bound is within the multiple and the one before
    (the plug-in bound decreases with ``n_v`` up to the rounding of the counts).

    Parameters
    ----------
    fpr, fnr
        Expected error rates at the threshold (e.g. from a pilot run), in [0, 1], not both 0.
    class_prior
        Population share of positives, in (0, 1).
    fn_cost, fp_cost
        Costs of a false negative / false positive (> 0).
    multiple
        Allowed bound as a multiple of ``C2`` (> 1).
    confidence
        Probability with which the bound holds, in (0, 1).
    n_test
        Number of new events (used by ``method="paper"`` and ``quantity="realised"``).
    max_size
        Largest size considered.

    Raises
    ------
    ValueError
        Bad arguments, or no size up to ``max_size`` is large enough (the message gives
        the ratio reached at ``max_size``).

    Complexity: O(G + log n) bound evaluations, G = 60 grid points, each O(1) (O(sqrt(n_test))
    for ``quantity="realised"``).

    Examples
    --------
    >>> kw = dict(fn_cost=100, fp_cost=10, multiple=1.3, n_test=6512)
    >>> n_paper = required_validation_size(0.2, 0.1, 0.24, method="paper", **kw)
    >>> n_valid = required_validation_size(0.2, 0.1, 0.24, **kw)
    >>> n_paper, n_valid
    (17694, 4657)
    >>> required_validation_size(0.2, 0.1, 0.24, **dict(kw, multiple=2.0)) < n_valid
    True
    """
    fpr, fnr = _check_rate(fpr, "fpr"), _check_rate(fnr, "fnr")
    pi1 = check_class_prior(class_prior)
    if pi1 is None:
        raise ValueError("class_prior must be given (the population share of positives)")
    costs = resolve_costs(fn_cost, fp_cost)
    fn, fp = costs.fn_cost, costs.fp_cost
    try:
        mult = float(multiple)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"multiple must be a number > 1, got {multiple!r}") from None
    if not (mult > 1.0 and math.isfinite(mult)):
        raise ValueError(f"multiple must be a finite number > 1, got {multiple!r}")
    conf = check_confidence(confidence)
    n_te = check_n_test(n_test)
    if n_te is None or n_te < 1:
        raise ValueError(f"n_test must be a positive integer, got {n_test!r}")
    if method != "paper":
        method = check_method(method)
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity must be one of {QUANTITIES}, got {quantity!r}")
    try:
        max_n = check_n_test(max_size)
    except ValueError:
        max_n = None
    if max_n is None or max_n < 2:
        raise ValueError(f"max_size must be an integer from 2 to 2**53, got {max_size!r}")
    if pi1 * fn * fnr + (1 - pi1) * fp * fpr <= 0:
        raise ValueError(f"the nominal cost is 0 (or underflows) at fpr={fpr!r}, fnr={fnr!r} with fn_cost={fn!r}, "
                         f"fp_cost={fp!r}: no multiple of it can be a bound")

    if method == "paper":
        def meets(nv: np.ndarray) -> np.ndarray:
            p = paper_failure_probability(nv, fpr, fnr, pi1, fn_cost=fn, fp_cost=fp, multiple=mult, n_test=n_te)
            return p <= 1 - conf
    else:
        def meets(nv: np.ndarray) -> np.ndarray:
            return _ratio(nv, fpr, fnr, pi1, fn, fp, conf, n_te, prior_known, quantity, method) <= mult

    grid = np.unique(np.rint(np.geomspace(2, max_n, 60)))
    ok = meets(grid)
    if not ok.any():
        if method == "paper":
            reached = float(paper_failure_probability(max_n, fpr, fnr, pi1, fn_cost=fn, fp_cost=fp,
                                                      multiple=mult, n_test=n_te))
            what = f"failure probability {reached:.3g} > {1 - conf:.3g}"
        else:
            r = float(_ratio(np.array([float(max_n)]), fpr, fnr, pi1, fn, fp, conf, n_te, prior_known,
                             quantity, method)[0])
            what = f"bound / C2 = {r:.4g} > multiple {mult:g}"
        raise ValueError(f"no validation size up to max_size={max_n:,} meets the target ({what})")
    i = int(np.argmax(ok))
    if i == 0:
        return int(grid[0])
    lo, hi = int(grid[i - 1]), int(grid[i])  # meets(lo) is False, meets(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bool(meets(np.array([float(mid)]))[0]):
            hi = mid
        else:
            lo = mid
    return hi

