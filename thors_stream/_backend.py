"""The core behind StreamingThors, chosen (compiled or numpy) and made; per-score rows read out and loaded in.

Two interchangeable backends give identical answers (see :mod:`thors_stream._core`):

- ``"c"``: a B+-tree with an expiry ring in C (``thors_stream._ctree``): O(log n)
  worst-case updates, O(1) reads; built at install time when a C compiler is present.
- ``"python"``: blocks of numpy arrays (:mod:`thors_stream._prefix`), no compiler
  needed; O(log n + load) updates and O(load + n / load) reads, about 10x slower.

``"auto"`` (the default) takes the C one when it was built, and warns once when it
was not. The environment variable ``THORS_STREAM_BACKEND=python`` forces the pure one.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from ._core import PyCore

try:
    from ._ctree import CTree as _CTree

    CTree: type[_CTree] | None = _CTree
except ImportError:  # no compiler at install time
    CTree = None

BACKENDS = ("auto", "c", "python")


def available_backends() -> list[str]:
    """The backends usable here, fastest first."""
    return (["c"] if CTree is not None else []) + ["python"]


_warned = False


def _warn_no_compiled() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "thors_stream: the compiled core (thors_stream._ctree) was not built, so the numpy backend "
            "is used (same answers, about 10x slower per event). Install a C compiler (e.g. gcc) and "
            "reinstall thors_stream to build it; set THORS_STREAM_BACKEND=python to silence this warning.",
            RuntimeWarning, stacklevel=4,
        )


def resolve_backend(backend: str) -> str:
    """``"c"`` or ``"python"`` for ``backend`` (``"auto"``: the compiled one when built)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        forced = os.environ.get("THORS_STREAM_BACKEND", "")
        if forced in ("c", "python"):
            backend = forced
        else:
            if CTree is None:
                _warn_no_compiled()
                return "python"
            return "c"
    if backend == "c" and CTree is None:
        raise ImportError(
            "the compiled backend thors_stream._ctree was not built (no C compiler at install time); "
            "use backend='python' or reinstall with a compiler available"
        )
    return backend


def make_core(pos_coef: float, neg_coef: float, backend: str, load: int, ring: int = 0) -> Any:
    """A fresh core (``ring``: 0 no queue, 1 count window, 2 time window)."""
    if backend == "c" and CTree is not None:
        return CTree(pos_coef, neg_coef, ring=ring)
    return PyCore(pos_coef, neg_coef, load=load, ring=ring)


def export_rows(core: Any) -> np.ndarray:
    """The core's keys as a ``(5, n)`` array of rows key, w1, w0, c1, c0."""
    out = core.export()
    if isinstance(out, bytes):
        out = np.frombuffer(out, dtype=np.float64).reshape(5, -1).copy()
    rows: np.ndarray = out
    return rows


def export_lo(core: Any) -> np.ndarray:
    """The double-double low parts of the rows' w1 and w0, a ``(2, n)`` array."""
    out = core.export_lo()
    if isinstance(out, bytes):
        out = np.frombuffer(out, dtype=np.float64).reshape(2, -1).copy()
    lo: np.ndarray = np.asarray(out, dtype=np.float64).reshape(2, -1)
    return lo


def load_rows(core: Any, rows: np.ndarray, lo: np.ndarray | None = None) -> None:
    """Add per-score rows (and their low parts) to ``core``: the exact per-score sums."""
    keys, w1, w0, c1, c0 = (np.ascontiguousarray(r, dtype=np.float64) for r in rows)
    if not keys.shape[0]:
        return
    if lo is not None and lo.shape[1] and lo.any():
        z = np.zeros_like(keys)
        core.apply_sorted(np.repeat(keys, 2), np.stack([w1, lo[0]], 1).ravel(), np.stack([w0, lo[1]], 1).ravel(),
                          np.stack([c1, z], 1).ravel(), np.stack([c0, z], 1).ravel())
    else:
        core.apply_sorted(keys, w1, w0, c1, c0)
