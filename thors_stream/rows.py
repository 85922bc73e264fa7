"""Per-score rows: the one representation the selections work on.

A summary of labelled scores, whatever produced it, is a set of *rows*, one per distinct
score in ascending order: ``(keys, w1, w0, c1, c0)`` float64 arrays holding the score, the
class weights and the class event counts there. :func:`rows_by_score` builds them from
events (batch, Dask); the stream's tree exports them (``StreamingThors.held()``); the
Neyman-Pearson selection (:mod:`thors_stream.neyman_pearson`) and the Dask merge take them.
Nothing here imports the rest of the package.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Rows", "rows_by_score"]


Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(keys, w1, w0, c1, c0)``: one float64 array per column, one entry per distinct score."""


def rows_by_score(s: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> Rows:
    """Merge equal scores: float64 rows ``(keys, w1, w0, c1, c0)`` in ascending key order,
    the class weights and event counts at each distinct score (what ``StreamingThors.held()``
    returns). Inputs already validated. O(n log n).

    >>> [r.tolist() for r in rows_by_score(np.array([0.5, 0.1, 0.5]), np.array([True, False, False]), None)]
    [[0.1, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]
    """
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    ww = np.ones(s.shape[0]) if w is None else w[order]
    starts = np.flatnonzero(np.concatenate([[True], ss[1:] != ss[:-1]]))
    yf = yy.astype(np.float64)
    return (
        ss[starts],
        np.add.reduceat(np.where(yy, ww, 0.0), starts),
        np.add.reduceat(np.where(yy, 0.0, ww), starts),
        np.add.reduceat(yf, starts),
        np.add.reduceat(1.0 - yf, starts),
    )
