"""The weights of the events an unwindowed :class:`~thors_stream.StreamingThors` holds.

A windowed summary knows every held event (its expiry queue), so ``revert`` can check
that the event it removes is held. An unwindowed one keeps per score only class counts
and weight sums, from which ``revert(score, y, w)`` cannot be verified when several
events share the score: two events of weight 1 do not hold one of weight 0.25. The
ledger records the events whose weight is not 1 as a multiset of
``(score, label, weight)``; the unit-weight events at a score are then the class count
less the ledger's events there. Unit-weight streams pay nothing; weighted ones one
dictionary entry per distinct ``(score, label, weight)`` held.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["WeightLedger"]


class WeightLedger:
    """Multiset of held ``(score, label, weight)`` with ``weight != 1``; O(1) per operation.

    >>> led = WeightLedger()
    >>> led.add(0.5, 1, 2.0)
    >>> led.count_at(0.5, 1), led.holds(0.5, 1, 2.0), led.holds(0.5, 1, 0.25)
    (1, True, False)
    """

    def __init__(self) -> None:
        self._events: Counter[tuple[float, int, float]] = Counter()
        self._at: Counter[tuple[float, int]] = Counter()

    def __len__(self) -> int:
        return self._at.total()

    def add(self, s: float, label: int, w: float, k: int = 1) -> None:
        self._events[(s, label, w)] += k
        self._at[(s, label)] += k

    def remove(self, s: float, label: int, w: float) -> None:
        key = (s, label, w)
        c = self._events[key] - 1
        if c < 0:
            del self._events[key]
            raise KeyError(key)
        if c:
            self._events[key] = c
        else:
            del self._events[key]
        c = self._at[(s, label)] - 1
        if c:
            self._at[(s, label)] = c
        else:
            del self._at[(s, label)]

    def holds(self, s: float, label: int, w: float) -> bool:
        return self._events.get((s, label, w), 0) > 0

    def count_at(self, s: float, label: int) -> int:
        """Events of weight != 1 held at this score and label."""
        return self._at.get((s, label), 0)

    def add_many(self, s: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        """Record the events of a batch whose weight is not 1. O(m log m)."""
        keep = w != 1.0
        if not keep.any():
            return
        rows = np.stack([s[keep], y[keep].astype(np.float64), w[keep]], axis=1)
        uniq, counts = np.unique(rows, axis=0, return_counts=True)
        for (a, b, c), k in zip(uniq.tolist(), counts.tolist()):
            self.add(a, int(b), c, k)

    def update(self, other: WeightLedger) -> None:
        for (s, label, w), k in other._events.items():
            self.add(s, label, w, k)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(score, label, weight, count)`` arrays (for checkpoints)."""
        items = sorted(self._events.items())
        s = np.array([k[0] for k, _ in items], dtype=np.float64)
        y = np.array([k[1] for k, _ in items], dtype=np.uint8)
        w = np.array([k[2] for k, _ in items], dtype=np.float64)
        c = np.array([v for _, v in items], dtype=np.int64)
        return s, y, w, c

    def copy(self) -> WeightLedger:
        out = WeightLedger()
        out._events = self._events.copy()
        out._at = self._at.copy()
        return out
