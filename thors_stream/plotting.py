"""Pictures of a threshold: the cost curve, and a replay's trajectory (matplotlib, optional)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .result import ThresholdResult


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'thors_stream[plot]'") from None
    return plt


def plot_cost_curve(
    thresholds: np.ndarray, costs: np.ndarray, result: ThresholdResult, path: str | os.PathLike[str],
    *, bounds: Any = None, title: str | None = None,
) -> None:
    """Save a PNG of empirical cost against threshold, the chosen threshold marked.

    ``thresholds``/``costs`` as returned by :func:`~thors_stream.cost_curve`. When
    ``bounds`` (an object with ``cost_upper`` and, optionally, ``cost_interval``) is
    given, the bounds are drawn as horizontal lines. O(n).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
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
        up = getattr(bounds, "cost_upper", None)
        if up is not None and math.isfinite(up):
            ax.axhline(up, color="C2", ls=":", label=f"cost upper bound {up:,.4g}")
    ax.set_xlabel("threshold (predict positive iff score > threshold)")
    ax.set_ylabel("total cost")
    ax.set_title(title or f"FN cost {result.fn_cost:g}, FP cost {result.fp_cost:g}: minimum cost {result.cost:,.6g}")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_trajectory(
    step: np.ndarray, threshold: np.ndarray, cost: np.ndarray, path: str | os.PathLike[str], *,
    title: str | None = None,
) -> None:
    """Save a PNG of the threshold and the windowed cost after each recorded event. O(n)."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    a1.plot(step, np.where(np.isfinite(threshold), threshold, np.nan), lw=1)
    a1.set_ylabel("threshold")
    a2.plot(step, cost, lw=1, color="C1")
    a2.set_ylabel("cost in window")
    a2.set_xlabel("events")
    if title:
        a1.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
