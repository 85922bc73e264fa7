"""Choice of the sorted prefix-minimum structure behind StreamingThors.

Two interchangeable backends give identical answers:

- ``"c"``: a treap in C (``thors_stream._ctree``), O(log n) updates and O(1)
  reads; built at install time when a C compiler is present.
- ``"python"``: blocks of numpy arrays (:mod:`thors_stream._prefix`), no compiler
  needed; O(log n + load) updates and O(load + n / load) reads.

``"auto"`` (the default) takes the C one when it was built. The environment
variable ``THORS_STREAM_BACKEND=python`` forces the pure one.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._prefix import SortedPrefixMin

try:
    from ._ctree import CTree
except ImportError:  # no compiler at install time
    CTree = None

BACKENDS = ("auto", "c", "python")


def available_backends() -> list[str]:
    """The backends usable here, fastest first."""
    return (["c"] if CTree is not None else []) + ["python"]


def resolve_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        forced = os.environ.get("THORS_STREAM_BACKEND", "")
        if forced in ("c", "python"):
            backend = forced
        else:
            return "c" if CTree is not None else "python"
    if backend == "c" and CTree is None:
        raise ImportError(
            "the compiled backend thors_stream._ctree was not built (no C compiler at install time); "
            "use backend='python' or reinstall with a compiler available"
        )
    return backend


def make_tree(pos_coef: float, neg_coef: float, backend: str, load: int,
              count_index: tuple[bool, bool] = (False, False)) -> Any:
    """A fresh tree. ``count_index=(negatives, positives)`` adds per-class count indexes
    (compiled backend only; Neyman-Pearson reads in O(log n))."""
    if backend == "c":
        if any(count_index):
            from ._count_index import CountIndexedTree

            return CountIndexedTree(CTree(pos_coef, neg_coef), CTree, *count_index)
        return CTree(pos_coef, neg_coef)
    return SortedPrefixMin(pos_coef, neg_coef, load=load)


def export_rows(tree: Any) -> np.ndarray:
    """The tree's keys as a ``(5, n)`` array of rows key, w1, w0, c1, c0."""
    out = tree.export()
    if isinstance(out, bytes):
        return np.frombuffer(out, dtype=np.float64).reshape(5, -1).copy()
    return out
