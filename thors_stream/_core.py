"""The core behind :class:`~thors_stream.StreamingThors`: held keys plus the expiry queue.

A *core* keeps the distinct scores held with their class weights and counts, the
minimum prefix sum of ``VAL = a * w1 - b * w0`` over them, and (for windows) the FIFO
of held events. Two interchangeable cores give identical answers on the exact domain
(see the README's "Exactness"):

- the compiled ``CTree`` (:mod:`thors_stream._ctree`): a B+-tree with an expiry ring in
  C; one call per event (:meth:`window_push`) adds, queues and expires;
- :class:`PyCore`: the numpy block structure (:mod:`thors_stream._prefix`) with the
  :class:`~thors_stream._queue.EventQueue`, for machines without a C compiler.

Both expose the same methods (``add``, ``remove``, ``window_push``, ``time_push``,
``expire_until``, ``threshold``, ``best``, ``cost``, ``totals``, ``n_events``,
``held_at``, ``totals_upto``, ``export``, ``export_lo``, ``apply_sorted``,
``set_coefs``, ``n_keys``, ``nbytes``); the queue is reached through :func:`queue_of`,
which gives the :class:`~thors_stream._queue.EventQueue` interface for both.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._prefix import SortedPrefixMin
from ._prefix_blocks import dd_add
from ._queue import CANCELLED, EventQueue

__all__ = ["CRingView", "PyCore", "dd_add", "queue_of"]


def _sums_exact(*arrays: np.ndarray) -> bool:
    """Whether every sum of these weights is exact in float64: integers whose absolute
    total stays below 2**53 (the common unit-weight case)."""
    for a in arrays:
        if not (np.all(a == np.round(a)) and float(np.abs(a).sum()) < 2.0**53):
            return False
    return True


class PyCore:
    """Numpy backend core: :class:`~thors_stream._prefix.SortedPrefixMin` plus an
    :class:`~thors_stream._queue.EventQueue` (``ring`` 0: none, 1: count, 2: time).

    Class totals are kept as double-doubles, so they too carry no rounding from
    departed events on the exact domain. O(log n + load) per update.
    """

    def __init__(self, pos_coef: float, neg_coef: float, load: int = 1024, ring: int = 0) -> None:
        self._t = SortedPrefixMin(pos_coef, neg_coef, load=load)
        self.ring = ring
        self.queue = EventQueue(ring == 2, 1024) if ring else None
        self._n = 0
        self._c1 = 0
        self.n_updates = 0  # update calls accepted (kept here, as in the compiled core)
        self.version = 0  # raised by every change of the held events
        self._w = [0.0, 0.0, 0.0, 0.0]  # W1 hi, lo, W0 hi, lo

    def enter(self) -> None:
        """Nothing to do: the numpy core has no fast path that bypasses the lock."""

    def exit(self) -> None:
        """See :meth:`enter`."""

    # ---- mutation
    def _count(self, pos: Any, w: float, sign: int) -> None:
        self.version += 1
        self._n += sign
        w1h, w1l, w0h, w0l = self._w
        if pos:
            self._c1 += sign
            w1h, w1l = dd_add(w1h, w1l, sign * w) if self._c1 else (0.0, 0.0)
        else:
            w0h, w0l = dd_add(w0h, w0l, sign * w) if self._n - self._c1 else (0.0, 0.0)
        self._w = [w1h, w1l, w0h, w0l]

    def _add_weight(self, pos: Any, w: float) -> None:
        """Add weight ``w`` (no event) to a class total held at a non-zero count."""
        self.version += 1
        i = 0 if pos else 2
        self._w[i], self._w[i + 1] = dd_add(self._w[i], self._w[i + 1], w)

    def add(self, key: float, pos: Any, w: float) -> None:
        self._t.add(key, pos, w)
        self._count(pos, w, 1)

    def remove(self, key: float, pos: Any, w: float) -> None:
        held = self._t.held_at(key)
        if held is None or held[2 if pos else 3] < 1:
            raise KeyError(f"no held event of that label has score {key!r}")
        self._t.remove(key, pos, w)
        self._count(pos, w, -1)

    def window_push(self, key: float, pos: Any, w: float, limit: int) -> None:
        self.add(key, pos, w)
        q = self.queue
        old = q.push_evict(key, int(pos), w, limit)  # type: ignore[union-attr]
        while old is not None:
            if old[1] != CANCELLED:
                self.remove(old[0], old[1] == 1, old[2])
            old = q.push_evict(0.0, 0, 0.0, limit, only_evict=True)  # type: ignore[union-attr]

    def time_push(self, key: float, pos: Any, w: float, t: float, cutoff: float) -> None:
        self.add(key, pos, w)
        self.queue.push(key, int(pos), w, t)  # type: ignore[union-attr]
        self.expire_until(cutoff)

    def expire_until(self, cutoff: float) -> None:
        q = self.queue
        assert q is not None  # a time window has a queue
        while len(q) and q.oldest_time() <= cutoff:
            s, y, w = q.pop()
            if y != CANCELLED:
                self.remove(s, y == 1, w)

    def apply_sorted(self, keys: np.ndarray, dw1: np.ndarray, dw0: np.ndarray, dc1: np.ndarray,
                     dc0: np.ndarray) -> None:
        """Per-event (or per-key) deltas sorted by key; keys may repeat."""
        if not keys.shape[0]:
            return
        if not _sums_exact(dw1, dw0):
            # per-key float sums could round (e.g. 2**30 + 2**-30 - 2**30): one event at a
            # time through the tree's error-free per-key sums instead
            rows = list(zip(*(x.tolist() for x in (keys, dw1, dw0, dc1, dc0))))
            for phase in (1, -1, 0):  # additions first: no count dips below zero
                for k, a1, a0, b1, b0 in rows:
                    for pos, w, c in ((True, a1, b1), (False, a0, b0)):
                        if phase == 1 and c > 0:  # c events of total weight w
                            for i in range(int(c)):
                                self.add(k, pos, w if i == 0 else 0.0)
                        elif phase == -1 and c < 0:
                            for i in range(int(-c)):
                                self.remove(k, pos, -w if i == 0 else 0.0)
                        elif phase == 0 and c == 0 and w != 0.0:  # a low part: weight only
                            self._t.apply_sorted(np.array([k]), np.array([w if pos else 0.0]),
                                                 np.array([0.0 if pos else w]), np.zeros(1), np.zeros(1))
                            self._add_weight(pos, w)  # the class total takes it too
            return
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        k = keys[starts]
        c1 = np.add.reduceat(dc1, starts)
        c0 = np.add.reduceat(dc0, starts)
        # class totals first (exact, per event), then the tree
        self._t.apply_sorted(np.ascontiguousarray(k), np.add.reduceat(dw1, starts), np.add.reduceat(dw0, starts),
                             c1, c0)
        w1h, w1l, w0h, w0l = self._w
        for a in dw1[dw1 != 0].tolist():
            w1h, w1l = dd_add(w1h, w1l, a)
        for a in dw0[dw0 != 0].tolist():
            w0h, w0l = dd_add(w0h, w0l, a)
        self.version += 1
        self._n += int(c1.sum() + c0.sum())
        self._c1 += int(c1.sum())
        if not self._c1:
            w1h = w1l = 0.0
        if not self._n - self._c1:
            w0h = w0l = 0.0
        self._w = [w1h, w1l, w0h, w0l]

    def clear(self) -> None:
        """Forget every held event (the queue is the caller's): an empty tree with the same
        coefficients and load, totals zero. O(1) (the old blocks are dropped)."""
        self._t = SortedPrefixMin(self._t._a, self._t._b, load=self._t._load)
        self.version += 1
        self._n = self._c1 = 0
        self._w = [0.0, 0.0, 0.0, 0.0]

    def set_coefs(self, a: float, b: float) -> None:
        self._t.set_coefs(a, b)

    # ---- reads
    def threshold(self) -> float | None:
        return self._t.threshold() if self._n else None

    def best(self) -> tuple[float, float]:
        return self._t.best()

    def cost(self) -> float | None:
        if not self._n:
            return None
        return self._t._b * self._w[2] + self._t.best()[0]

    def totals(self) -> tuple[float, float, float, float]:
        return (self._w[0], self._w[2], float(self._c1), float(self._n - self._c1))

    def n_events(self) -> int:
        return self._n

    def held_at(self, key: float) -> tuple[float, float, float, float] | None:
        return self._t.held_at(key)

    def totals_upto(self, key: float) -> tuple[float, float, float, float]:
        return self._t.totals_upto(key)

    def export(self) -> np.ndarray:
        return self._t.export()

    def export_lo(self) -> np.ndarray:
        lo = getattr(self._t, "export_lo", None)
        return lo() if lo is not None else np.zeros((2, self._t.n_keys))

    def check(self) -> None:
        """Verify the class totals against the rows (tests)."""
        rows = self._t.export()
        assert int(rows[3].sum() + rows[4].sum()) == self._n

    @property
    def n_keys(self) -> int:
        return self._t.n_keys

    @property
    def _a(self) -> float:
        return self._t._a

    @property
    def _b(self) -> float:
        return self._t._b

    def nbytes(self) -> int:
        return self._t.nbytes() + (self.queue.nbytes() if self.queue is not None else 0)


class CRingView:
    """The :class:`~thors_stream._queue.EventQueue` interface over a compiled core's ring.

    Mutations through the view change the queue only (the tree is the caller's business),
    exactly as with an ``EventQueue``.
    """

    def __init__(self, core: Any) -> None:
        self._c = core
        self.timed = core.ring == 2

    def __len__(self) -> int:
        return int(self._c.q_len())

    def arrays(self, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, ...]:
        hi = len(self) if hi is None else hi
        f, y = self._c.q_arrays(lo, hi)
        m = hi - lo
        fa = np.frombuffer(f, dtype=np.float64).reshape(3, m) if m else np.zeros((3, 0))
        ya = np.frombuffer(y, dtype=np.uint8).copy()
        out = (fa[0].copy(), ya, fa[1].copy())
        return out + (fa[2].copy(),) if self.timed else out

    def push_many(self, s: np.ndarray, y: np.ndarray, w: np.ndarray, t: np.ndarray | None = None) -> None:
        m = s.shape[0]
        self._c.q_push_many(np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(y, dtype=np.uint8),
                            np.ascontiguousarray(w, dtype=np.float64),
                            np.zeros(m) if t is None else np.ascontiguousarray(t, dtype=np.float64))

    def pop_many(self, m: int) -> tuple[np.ndarray, ...]:
        out = self.arrays(0, m)
        self._c.q_drop(m)
        return out

    def pop(self) -> tuple[float, int, float]:
        s, y, w = self.arrays(0, 1)[:3]
        self._c.q_drop(1)
        return float(s[0]), int(y[0]), float(w[0])

    def count_expired(self, cutoff: float) -> int:
        return int(self._c.q_count_expired(cutoff))

    def oldest_time(self) -> float:
        t = self._c.q_oldest_time()
        return math.inf if t is None else t

    def time_at(self, pos: int) -> float:
        return float(self._c.q_time_at(pos))

    def find(self, s: float, y: int, w: float) -> int:
        return int(self._c.q_find(s, y, w))

    def cancel(self, pos: int) -> None:
        self._c.q_cancel(pos)

    def nbytes(self) -> int:
        return 0  # counted by the core's nbytes()


def queue_of(core: Any) -> Any:
    """The expiry queue of ``core`` (``None`` without a window), EventQueue interface."""
    if isinstance(core, PyCore):
        return core.queue
    return CRingView(core) if core.ring else None
