"""The expiry queue of a windowed :class:`~thors_stream.StreamingThors`.

A FIFO of held events in growable ring buffers: score (8 bytes), label (1 byte: 0,
1, or ``CANCELLED`` for an event removed early by ``revert``), weight (8 bytes)
and, for time windows, time (8 bytes). The buffers are ``array.array`` /
``bytearray`` (fast scalar access from Python) with zero-copy numpy views for the
batch operations. Push and pop are O(1) amortised.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

CANCELLED = 2


class EventQueue:
    """FIFO of ``(score, label, weight[, time])`` records in ring buffers."""

    def __init__(self, timed: bool, capacity: int = 1024) -> None:
        self.timed = timed
        self._head = 0  # index of the oldest record
        self._size = 0
        self._alloc(max(int(capacity), 16))

    def _alloc(self, cap: int) -> None:
        old = self._size and self.arrays()
        self._ps = array("d", bytes(8 * cap))
        self._py = bytearray(cap)
        self._pw = array("d", bytes(8 * cap))
        self._pt = array("d", bytes(8 * cap if self.timed else 0))
        self._s = np.frombuffer(self._ps, dtype=np.float64)
        self._y = np.frombuffer(self._py, dtype=np.uint8)
        self._w = np.frombuffer(self._pw, dtype=np.float64)
        self._t = np.frombuffer(self._pt, dtype=np.float64)
        self._cap = cap
        self._head = 0
        if old:
            n = self._size
            self._s[:n], self._y[:n], self._w[:n] = old[0], old[1], old[2]
            if self.timed:
                self._t[:n] = old[3]

    def __getstate__(self) -> dict[str, Any]:
        return {"timed": self.timed, "arrays": self.arrays(), "cap": self._cap}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.timed = state["timed"]
        self._size = 0
        self._alloc(state["cap"])
        arrays = state["arrays"]
        if arrays[0].shape[0]:
            self.push_many(*arrays)

    def __len__(self) -> int:
        return self._size

    def push(self, s: float, y: int, w: float, t: float = 0.0) -> None:
        """Append one record. O(1) amortised."""
        if self._size == self._cap:
            self._alloc(2 * self._cap)
        i = self._head + self._size
        if i >= self._cap:
            i -= self._cap
        self._ps[i] = s
        self._py[i] = y
        self._pw[i] = w
        if self.timed:
            self._pt[i] = t
        self._size += 1

    def push_evict(
        self, s: float, y: int, w: float, limit: int, only_evict: bool = False
    ) -> tuple[float, int, float] | None:
        """Append a record (unless ``only_evict``), then pop and return the oldest one if
        more than ``limit`` are queued (else ``None``). One call per event on the hot path."""
        if not only_evict:
            size = self._size
            if size == self._cap:
                self._alloc(2 * self._cap)
            i = self._head + size
            if i >= self._cap:
                i -= self._cap
            self._ps[i] = s
            self._py[i] = y
            self._pw[i] = w
            self._size = size + 1
        if self._size <= limit:
            return None
        i = self._head
        rec = (self._ps[i], self._py[i], self._pw[i])
        self._head = i + 1 if i + 1 < self._cap else 0
        self._size -= 1
        return rec

    def pop(self) -> tuple[float, int, float]:
        """Remove and return the oldest ``(score, label, weight)``. O(1)."""
        i = self._head
        rec = (self._ps[i], self._py[i], self._pw[i])
        self._head = i + 1 if i + 1 < self._cap else 0
        self._size -= 1
        return rec

    def oldest_time(self) -> float:
        """Time of the oldest record (timed queues only)."""
        return self._pt[self._head]

    def _index(self, lo: int, hi: int) -> np.ndarray:
        return (self._head + np.arange(lo, hi)) % self._cap

    def arrays(self, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, ...]:
        """Copies of records ``lo:hi`` (oldest first) as ``(s, y, w[, t])`` arrays."""
        hi = self._size if hi is None else hi
        idx = self._index(lo, hi)
        out = (self._s[idx], self._y[idx], self._w[idx])
        return out + (self._t[idx],) if self.timed else out

    def push_many(self, s: np.ndarray, y: np.ndarray, w: np.ndarray, t: np.ndarray | None = None) -> None:
        """Append records in order. O(m) amortised."""
        m = s.shape[0]
        if self._size + m > self._cap:
            cap = self._cap
            while cap < self._size + m:
                cap *= 2
            self._alloc(cap)
        idx = self._index(self._size, self._size + m)
        self._s[idx], self._y[idx], self._w[idx] = s, y, w
        if self.timed:
            self._t[idx] = t
        self._size += m

    def pop_many(self, m: int) -> tuple[np.ndarray, ...]:
        """Remove and return the ``m`` oldest records as arrays. O(m)."""
        out = self.arrays(0, m)
        self._head = (self._head + m) % self._cap
        self._size -= m
        return out

    def count_expired(self, cutoff: float) -> int:
        """Number of oldest records with time ``<= cutoff`` (times are non-decreasing)."""
        n, h, cap, t = self._size, self._head, self._cap, self._t
        first = min(n, cap - h)  # records in t[h:h + first], then t[0:n - first]
        k = int(np.searchsorted(t[h : h + first], cutoff, side="right"))
        if k == first and n > first:
            k += int(np.searchsorted(t[: n - first], cutoff, side="right"))
        return k

    def time_at(self, pos: int) -> float:
        """Time of record ``pos`` (0 = oldest; timed queues only)."""
        return float(self._t[(self._head + pos) % self._cap])

    def find(self, s: float, y: int, w: float) -> int:
        """Position (0 = oldest) of the oldest live record equal to ``(s, y, w)``, or -1. O(n)."""
        if not self._size:
            return -1
        ss, yy, ww = self.arrays()[:3]
        hit = np.flatnonzero((ss == s) & (yy == y) & (ww == w))
        return int(hit[0]) if hit.shape[0] else -1

    def cancel(self, pos: int) -> None:
        """Mark record ``pos`` (0 = oldest) as removed; it is skipped when it expires."""
        self._y[(self._head + pos) % self._cap] = CANCELLED

    def nbytes(self) -> int:
        return self._s.nbytes + self._y.nbytes + self._w.nbytes + self._t.nbytes
