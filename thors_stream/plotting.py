"""Pictures: the cost curve, a replay's trajectory, the validation-size planner (matplotlib, optional).

Files are drawn on a bare :class:`matplotlib.figure.Figure`, so saving a PNG never switches
the user's pyplot backend; :func:`plot_validation_size` draws on a given or new pyplot ``Axes``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .planner import required_validation_size
from .result import ThresholdResult

__all__ = ["plot_cost_curve", "plot_trajectory", "plot_validation_size"]

_MISSING = "plotting needs matplotlib; install it with: pip install 'thors_stream[plot]'"


def _figure(**kwargs: Any) -> Any:
    """A pyplot-free matplotlib Figure (for saving files), or ImportError naming the extra."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(_MISSING) from None
    return Figure(**kwargs)


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(_MISSING) from None
    return plt


def plot_cost_curve(
    thresholds: np.ndarray, costs: np.ndarray, result: ThresholdResult, path: str | os.PathLike[str],
    *, bounds: Any = None, title: str | None = None,
) -> None:
    """Save a PNG of empirical cost against threshold, the chosen threshold marked.

    ``thresholds``/``costs`` as returned by :func:`~thors_stream.cost_curve`. When
    ``bounds`` (a :class:`~thors_stream.ThresholdBounds` of ``result``) is given, its FPR/FNR
    bounds are written in a box and, unless the result is weighted, the interval for the
    expected cost of ``bounds.n_test`` new events is shaded and the bound on the cost paid on
    them drawn as a dotted line (with ``n_test`` equal to the number of events the curve was
    computed from, these are on the curve's own scale). O(n).
    """
    fig = _figure(figsize=(7, 4))
    ax = fig.subplots()
    finite = np.isfinite(thresholds)
    ax.step(thresholds[finite], costs[finite], where="post", lw=1, label="empirical cost")
    if math.isinf(result.threshold):
        left = thresholds[finite][0] if finite.any() else 0
        ax.axvline(left, color="C3", ls="--", label="THORS: -inf (all positive)")
    else:
        ax.axvline(result.threshold, color="C3", ls="--", label=f"THORS threshold {result.threshold:.4g}")
    ax.plot([result.threshold if math.isfinite(result.threshold) else thresholds[finite][0]], [result.cost], "o",
            color="C3")
    if bounds is not None:
        _mark_bounds(ax, bounds)
    ax.set_xlabel("threshold (predict positive iff score > threshold)")
    ax.set_ylabel("total cost")
    ax.set_title(title or f"FN cost {result.fn_cost:g}, FP cost {result.fp_cost:g}: minimum cost {result.cost:,.6g}")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _mark_bounds(ax: Any, bounds: Any) -> None:
    """Shade the expected-cost interval, draw the realised-cost bound, list the rate bounds."""
    c = f"{bounds.confidence:.0%}"
    if not bounds.weighted and bounds.n_test:
        ci = bounds.cost_interval
        ax.axhspan(ci.lower, ci.upper, color="C2", alpha=0.15,
                   label=f"expected cost of {bounds.n_test:,} new events, {c} interval")
        ax.axhline(bounds.cost_upper_exact, color="C2", ls=":", label=f"cost paid on them, {c} upper bound")
    ax.text(0.99, 0.02, f"at the threshold ({c} each side):\nFPR in [{bounds.fpr_lower:.3f}, {bounds.fpr_upper:.3f}]\n"
            f"FNR in [{bounds.fnr_lower:.3f}, {bounds.fnr_upper:.3f}]", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=8, bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})


def plot_trajectory(
    step: np.ndarray, threshold: np.ndarray, cost: np.ndarray, path: str | os.PathLike[str], *,
    title: str | None = None,
) -> None:
    """Save a PNG of the threshold and the windowed cost after each recorded event. O(n)."""
    fig = _figure(figsize=(8, 5))
    a1, a2 = fig.subplots(2, 1, sharex=True)
    a1.plot(step, np.where(np.isfinite(threshold), threshold, np.nan), lw=1)
    a1.set_ylabel("threshold")
    a2.plot(step, cost, lw=1, color="C1")
    a2.set_ylabel("cost in window")
    a2.set_xlabel("events")
    if title:
        a1.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_validation_size(
    fpr: float, fnr: float, class_prior: float, *, fn_cost: float, fp_cost: float,
    multiples: Sequence[float] | None = None, confidence: float = 0.95, n_test: int = 1,
    methods: Sequence[str] = ("exact", "paper"), label: str | None = None, ax: Any = None,
    **kw: Any,
) -> Any:
    """Validation size needed against the allowed cost bound, like the paper's Fig. 2/4/6.

    For each ``method`` draws ``log10`` of :func:`~thors_stream.planner.required_validation_size`
    against ``multiple`` (the bound as a multiple of the nominal cost ``C2``); solid for the
    valid bounds, dashed for ``"paper"``. Multiples that no size up to ``max_size`` reaches
    are left out. Extra keywords go to ``required_validation_size``. Returns the matplotlib
    ``Axes``. O(len(multiples) * len(methods)) planner calls.

    Raises
    ------
    ImportError
        matplotlib is not installed (the message names the ``plot`` extra).

    Examples
    --------
    >>> try:
    ...     ax = plot_validation_size(0.2, 0.1, 0.24, fn_cost=100, fp_cost=10, n_test=6512)
    ...     ok = len(ax.lines) == 2
    ...     ax.figure.clf()
    ... except ImportError as exc:  # matplotlib missing: the message names the extra
    ...     ok = "thors_stream[plot]" in str(exc)
    >>> ok
    True
    """
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    mults = np.asarray(multiples if multiples is not None else np.linspace(1.1, 3.5, 25), dtype=np.float64)
    for method in methods:
        xs, ys = [], []
        for m in mults:
            try:
                n = required_validation_size(fpr, fnr, class_prior, fn_cost=fn_cost, fp_cost=fp_cost, multiple=m,
                                             confidence=confidence, n_test=n_test, method=method, **kw)
            except ValueError as exc:
                if "meets the target" not in str(exc):
                    raise
                continue
            xs.append(m)
            ys.append(np.log10(n))
        name = "paper (cost.ub1)" if method == "paper" else f"valid ({method})"
        ax.plot(xs, ys, "--" if method == "paper" else "-", label=f"{label}: {name}" if label else name)
    ax.set_xlabel(f"{confidence:.0%} upper bound on the cost, as a multiple of C2")
    ax.set_ylabel("log10 validation size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return ax
