"""A compiled tree with per-class count indexes, for O(log n) Neyman-Pearson reads.

The Neyman-Pearson constraints are ranks in one class's scores ("the k-th smallest
negative"), and the admissible thresholds a key range. :class:`CountIndexedTree` wraps
the compiled cost tree and keeps, beside it, a compiled tree per constrained class whose
values are that class's event counts, so the rank is a descent on subtree sums
(``first_at_least``) and the cheapest admissible threshold a range query on the cost
tree (``range_best``); both O(log n). Every mutation goes through the wrapper, so the
indexes never drift from the cost tree; reads are forwarded.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class CountIndexedTree:
    """The cost tree ``main`` plus count trees for negatives (``neg``) and/or positives (``pos``).

    Same interface as the compiled tree (``add``, ``remove``, ``apply_sorted`` and every
    read); the count trees hold counts of events (weight 1 each) of their class only.
    """

    def __init__(self, main: Any, tree_type: Any, neg: bool, pos: bool) -> None:
        self._main = main
        self.neg = tree_type(0.0, -1.0) if neg else None  # value = negatives at the key
        self.pos = tree_type(1.0, 0.0) if pos else None  # value = positives at the key

    def add(self, key: float, is_pos: Any, w: float) -> None:
        self._main.add(key, is_pos, w)
        aux = self.pos if is_pos else self.neg
        if aux is not None:
            aux.add(key, is_pos, 1.0)

    def remove(self, key: float, is_pos: Any, w: float) -> None:
        self._main.remove(key, is_pos, w)
        aux = self.pos if is_pos else self.neg
        if aux is not None:
            aux.remove(key, is_pos, 1.0)

    def apply_sorted(self, keys: np.ndarray, dw1: np.ndarray, dw0: np.ndarray, dc1: np.ndarray,
                     dc0: np.ndarray) -> None:
        self._main.apply_sorted(keys, dw1, dw0, dc1, dc0)
        if self.neg is not None:
            m = dc0 != 0
            zero = np.zeros(int(m.sum()))
            self.neg.apply_sorted(np.ascontiguousarray(keys[m]), zero, dc0[m], zero, dc0[m])
        if self.pos is not None:
            m = dc1 != 0
            zero = np.zeros(int(m.sum()))
            self.pos.apply_sorted(np.ascontiguousarray(keys[m]), dc1[m], zero, dc1[m], zero)

    def nbytes(self) -> int:
        return int(self._main.nbytes()) + sum(int(t.nbytes()) for t in (self.neg, self.pos) if t is not None)

    def __getattr__(self, name: str) -> Any:  # reads: threshold, best, export, held_at, set_coefs, ...
        return getattr(self._main, name)
