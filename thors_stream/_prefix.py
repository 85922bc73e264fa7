"""A sorted multiset of scores that keeps its minimum prefix sum ready.

This is the data structure behind :class:`~thors_stream.StreamingThors`. Distinct
scores ("keys") are kept in ascending order in blocks of at most ``2 * load`` keys.
Each block is one ``(6, 2 * load + 1)`` float64 array whose rows hold, per key:

    KEY  the score                                   (padding: +inf)
    LP   local prefix: sum of VAL over this block's keys up to this one (padding: +inf)
    W1   weight of positives at this key             (padding: 0)
    W0   weight of negatives at this key             (padding: 0)
    C1   number of positive events at this key       (padding: 0)
    C0   number of negative events at this key       (padding: 0)

with ``VAL = pos_coef * W1 - neg_coef * W0``. The empirical cost at threshold ``t`` is
``neg_coef * W0_total + P(t)`` where ``P(t)`` is the sum of VAL over keys ``<= t``;
the optimum is the minimum of ``P`` over the keys and the empty prefix
(``t = -inf``, ``P = 0``), the first one on ties.

Keeping local prefix sums (rather than VAL) makes an update one vectorised add on
the tail of one block, and a block's minimum one ``argmin`` over its row (the +inf
padding needs no slicing). A change marks its block dirty; reading the optimum
refreshes the dirty blocks' ``(sum, min, argmin)`` and takes one ``cumsum`` and one
``argmin`` over the K block summaries. On top of that a cached global answer
survives the updates that provably cannot move it (see :meth:`_touch`), making
such reads O(1).

Rounding: with float weights the local prefixes drift by one rounding per update;
they are recomputed from W1/W0 whenever a block is split or merged and every
``RESYNC`` updates, which bounds the drift. Integer or dyadic weights and costs
are exact and unaffected.

Costs: with ``n`` keys and ``K ~ n / load`` blocks an update is O(log n) to locate
plus O(load) vectorised work; a read after changes is O(load + K) vectorised.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

KEY, LP, W1, W0, C1, C0 = range(6)
_INF = float("inf")
_NEG_INF = float("-inf")
_PAD = np.array([_INF, _INF, 0.0, 0.0, 0.0, 0.0])[:, None]
RESYNC = 1 << 16


class SortedPrefixMin:
    """Ordered keys with per-key class weights and a fast minimum prefix sum.

    ``pos_coef``/``neg_coef`` turn class weights into the signed value
    ``pos_coef * w1 - neg_coef * w0`` whose prefix sums are minimised.
    """

    def __init__(self, pos_coef: float, neg_coef: float, load: int = 1024) -> None:
        if load < 4:
            raise ValueError(f"load must be >= 4, got {load!r}")
        self._a = float(pos_coef)
        self._b = float(neg_coef)
        self._load = load
        self._cap = 2 * load + 1  # at most 2 * load keys: one padding column always remains
        self._blocks: list[np.ndarray] = []
        self._keyrows: list[np.ndarray] = []
        self._lprows: list[np.ndarray] = []
        self._sizes: list[int] = []
        self._maxes: list[float] = []
        self._barg: list[int] = []
        self._dirty: set[int] = set()
        self._alloc_top(16)
        self._best: tuple[float, float] | None = (0.0, _NEG_INF)
        self._updates = 0
        self.n_keys = 0

    # ------------------------------------------------------------------ layout
    def _alloc_top(self, kcap: int) -> None:
        k = len(self._blocks)
        S = np.zeros(kcap + 1)
        bmin = np.full(kcap, _INF)
        if k:
            S[: k + 1] = self._S[: k + 1]
            bmin[:k] = self._bmin[:k]
        self._kcap = kcap
        self._S, self._bmin = S, bmin  # S[0] = 0, S[j + 1] = sum of block j
        self._E = np.empty(kcap + 1)
        self._E_head = self._E[:kcap]
        self._C = np.empty(kcap)

    def _block_from(self, cols: np.ndarray) -> np.ndarray:
        """A fresh padded block holding ``cols`` (rows KEY, -, W1, W0, C1, C0)."""
        blk = np.empty((6, self._cap))
        m = cols.shape[1]
        blk[:, :m] = cols
        blk[:, m:] = _PAD
        self._resync(blk, m)
        return blk

    def _resync(self, blk: np.ndarray, n: int) -> None:
        """Recompute a block's local prefix sums from its class weights."""
        np.cumsum(self._a * blk[W1, :n] - self._b * blk[W0, :n], out=blk[LP, :n])

    def _insert_block(self, j: int, blk: np.ndarray, size: int) -> None:
        k = len(self._blocks)
        if k + 1 > self._kcap:
            self._alloc_top(2 * self._kcap)
        S, bmin = self._S, self._bmin
        S[j + 2 : k + 2] = S[j + 1 : k + 1].copy()
        bmin[j + 1 : k + 1] = bmin[j:k].copy()
        self._blocks.insert(j, blk)
        self._keyrows.insert(j, blk[KEY])
        self._lprows.insert(j, blk[LP])
        self._sizes.insert(j, size)
        self._maxes.insert(j, float(blk[KEY, size - 1]))
        self._barg.insert(j, 0)
        self._dirty = {d + 1 if d >= j else d for d in self._dirty}
        self._dirty.add(j)

    def _delete_block(self, j: int) -> None:
        k = len(self._blocks)
        S, bmin = self._S, self._bmin
        S[j + 1 : k] = S[j + 2 : k + 1].copy()
        S[k] = 0.0
        bmin[j : k - 1] = bmin[j + 1 : k].copy()
        bmin[k - 1] = _INF
        for lst in (self._blocks, self._keyrows, self._lprows, self._sizes, self._maxes, self._barg):
            del lst[j]
        self._dirty = {d - 1 if d > j else d for d in self._dirty if d != j}

    def _split(self, j: int) -> None:
        blk, n, h = self._blocks[j], self._sizes[j], self._load
        new = self._block_from(blk[:, h:n])
        blk[:, h:n] = _PAD
        self._sizes[j] = h
        self._maxes[j] = float(blk[KEY, h - 1])
        self._resync(blk, h)
        self._dirty.add(j)
        self._insert_block(j + 1, new, n - h)

    def _merge_small(self, j: int) -> None:
        """Fold a block that fell below load/4 keys into a neighbour when they fit."""
        if len(self._blocks) < 2:
            return
        left = j - 1 if j > 0 else j
        nl, nr = self._sizes[left], self._sizes[left + 1]
        if nl + nr > 2 * self._load:
            return
        bl, br = self._blocks[left], self._blocks[left + 1]
        bl[:, nl : nl + nr] = br[:, :nr]
        self._resync(bl, nl + nr)
        self._sizes[left] = nl + nr
        self._maxes[left] = self._maxes[left + 1]
        self._dirty.add(left)
        self._delete_block(left + 1)

    def _resync_all(self) -> None:
        for j, (blk, n) in enumerate(zip(self._blocks, self._sizes)):
            self._resync(blk, n)
            self._dirty.add(j)
        self._best = None

    # ------------------------------------------------------------------ lookup
    def locate(self, key: float) -> tuple[int, int] | None:
        """Block and index of ``key`` if held, else ``None``. O(log n)."""
        j = bisect_left(self._maxes, key)
        if j == len(self._maxes):
            return None
        keys = self._keyrows[j]
        i = int(keys.searchsorted(key))
        return (j, i) if keys[i] == key else None

    def held_at(self, key: float) -> tuple[float, float, float, float] | None:
        """``(w1, w0, c1, c0)`` held at ``key``, or ``None``. O(log n)."""
        loc = self.locate(key)
        if loc is None:
            return None
        col = self._blocks[loc[0]][:, loc[1]]
        return float(col[W1]), float(col[W0]), float(col[C1]), float(col[C0])

    def remove(self, key: float, is_pos: bool, w: float) -> None:
        """Remove one held event (the caller checked it is held). O(log n + load)."""
        j, i = self.locate(key)  # type: ignore[misc]
        self.remove_at(j, i, is_pos, w)

    # ------------------------------------------------------------------ updates
    def _touch(self, key: float, delta: float, deleted: bool) -> None:
        """Keep the cached optimum when an update cannot move it, else drop it.

        Adding ``delta`` to a key shifts every prefix at or after it. If the key lies
        after the optimum and ``delta >= 0``, no prefix drops below the optimum and
        earlier ones are untouched: nothing changes. If the key lies at or before the
        optimum and ``delta <= 0``, the optimum and everything after it drop by the
        same amount while the prefixes before it (strictly larger, as it is the first
        minimum) do not move: it stays the first minimum, lower by ``delta``.
        """
        best = self._best
        if best is None:
            return
        bkey = best[1]
        if deleted and key == bkey:
            self._best = None
        elif key > bkey:
            if delta < 0:
                self._best = None
        elif delta <= 0:
            self._best = (best[0] + delta, bkey)
        else:
            self._best = None

    def add(self, key: float, is_pos: bool, w: float) -> None:
        """Add one event: weight ``w`` of class ``is_pos`` at ``key``. O(log n + load)."""
        if is_pos:
            delta = self._a * w
        else:
            delta = -self._b * w
        self._updates += 1
        maxes = self._maxes
        j = bisect_left(maxes, key)
        if j == len(maxes):
            if j == 0:  # empty structure
                col = np.array([[key], [0.0], [w if is_pos else 0.0], [0.0 if is_pos else w], [is_pos], [not is_pos]])
                self._insert_block(0, self._block_from(col), 1)
                self.n_keys = 1
                self._touch(key, delta, False)
                return
            j -= 1
            maxes[j] = key
        keys = self._keyrows[j]
        i = int(keys.searchsorted(key))
        if keys[i] == key:
            blk = self._blocks[j]
            if is_pos:
                blk[W1, i] += w
                blk[C1, i] += 1.0
            else:
                blk[W0, i] += w
                blk[C0, i] += 1.0
            self._lprows[j][i : self._sizes[j]] += delta
        else:
            blk = self._blocks[j]
            n = self._sizes[j]
            lp = self._lprows[j]
            if i < n:
                blk[:, i + 1 : n + 1] = blk[:, i:n]
            base = lp[i - 1] if i else 0.0
            if is_pos:
                blk[:, i] = (key, base, w, 0.0, 1.0, 0.0)
            else:
                blk[:, i] = (key, base, 0.0, w, 0.0, 1.0)
            n += 1
            lp[i:n] += delta
            self._sizes[j] = n
            self.n_keys += 1
            if n == self._cap - 1:
                self._touch(key, delta, False)
                self._split(j)
                return
        self._dirty.add(j)
        self._touch(key, delta, False)
        if self._updates >= RESYNC:
            self._updates = 0
            self._resync_all()

    def remove_at(self, j: int, i: int, is_pos: bool, w: float) -> None:
        """Remove one event of class ``is_pos`` and weight ``w`` at located ``(j, i)``.

        The caller has checked that such an event is held. O(load).
        """
        blk = self._blocks[j]
        key = float(blk[KEY, i])
        if is_pos:
            delta = -self._a * w
            c = blk[C1, i] - 1.0
            deleted = c == 0.0 and blk[C0, i] == 0.0
        else:
            delta = self._b * w
            c = blk[C0, i] - 1.0
            deleted = c == 0.0 and blk[C1, i] == 0.0
        n = self._sizes[j]
        if deleted:
            n -= 1
            blk[:, i:n] = blk[:, i + 1 : n + 1]
            blk[:, n] = _PAD[:, 0]
            self._sizes[j] = n
            self.n_keys -= 1
            if n == 0:
                self._delete_block(j)
                self._touch(key, delta, True)
                return
            self._lprows[j][i:n] += delta
            if i == n:
                self._maxes[j] = float(blk[KEY, n - 1])
            self._dirty.add(j)
            if n < self._load // 4:
                self._merge_small(j)
        else:
            # a class with no events left at this key has exactly zero weight
            if is_pos:
                blk[C1, i] = c
                blk[W1, i] = blk[W1, i] - w if c else 0.0
            else:
                blk[C0, i] = c
                blk[W0, i] = blk[W0, i] - w if c else 0.0
            self._lprows[j][i:n] += delta
            self._dirty.add(j)
        self._touch(key, delta, deleted)

    def set_coefs(self, pos_coef: float, neg_coef: float) -> None:
        """Change the class coefficients; recomputes every prefix. O(n)."""
        a, b = float(pos_coef), float(neg_coef)
        if a == self._a and b == self._b:
            return
        self._a, self._b = a, b
        self._resync_all()

    def apply_sorted(
        self, keys: np.ndarray, dw1: np.ndarray, dw0: np.ndarray, dc1: np.ndarray, dc0: np.ndarray
    ) -> None:
        """Apply net changes for strictly increasing ``keys`` in one pass per block.

        Every resulting count must be >= 0 (the caller nets inserts against removals).
        O(m log K + touched blocks * load), vectorised per touched block.
        """
        if keys.shape[0] == 0:
            return
        self._best = None
        rows = np.vstack([keys, np.zeros_like(keys), dw1, dw0, dc1, dc0])
        if not self._blocks:
            rows = rows[:, (dc1 + dc0) > 0]
            for lo in range(0, rows.shape[1], self._load):
                chunk = rows[:, lo : lo + self._load]
                self._insert_block(len(self._blocks), self._block_from(chunk), chunk.shape[1])
            self.n_keys = rows.shape[1]
            return
        k = len(self._blocks)
        bidx = np.minimum(np.searchsorted(np.asarray(self._maxes), keys), k - 1)
        cut = np.flatnonzero(np.diff(bidx)) + 1
        starts = np.concatenate([[0], cut]).tolist()
        stops = np.concatenate([cut, [keys.shape[0]]]).tolist()
        # right to left, so that restructuring block j leaves the indices of blocks < j alone
        for lo, hi in zip(reversed(starts), reversed(stops)):
            self._merge_into(int(bidx[lo]), rows[:, lo:hi])

    def _merge_into(self, j: int, rows: np.ndarray) -> None:
        blk, n = self._blocks[j], self._sizes[j]
        cur = blk[:, :n]
        pos = np.searchsorted(cur[KEY], rows[KEY])
        hit = cur[KEY, np.minimum(pos, n - 1)] == rows[KEY]
        if hit.any():
            cur[W1:, pos[hit]] += rows[W1:, hit]
        fresh = ~hit & ((rows[C1] + rows[C0]) > 0)
        merged = np.insert(cur, pos[fresh], rows[:, fresh], axis=1) if fresh.any() else cur
        alive = (merged[C1] + merged[C0]) > 0
        if not alive.all():
            merged = merged[:, alive]
        m = merged.shape[1]
        self.n_keys += m - n
        if 0 < m <= 2 * self._load:
            if merged is not cur:
                blk[:, :m] = merged
                if m < n:
                    blk[:, m:n] = _PAD
            self._resync(blk, m)
            self._sizes[j] = m
            self._maxes[j] = float(blk[KEY, m - 1])
            self._dirty.add(j)
            return
        merged = merged.copy()
        self._delete_block(j)
        if m:
            parts = -(-m // self._load)
            size = -(-m // parts)
            for q, lo in enumerate(range(0, m, size)):
                chunk = merged[:, lo : lo + size]
                self._insert_block(j + q, self._block_from(chunk), chunk.shape[1])

    # ------------------------------------------------------------------ queries
    def best(self) -> tuple[float, float]:
        """``(min prefix, key)``; key ``-inf`` when the empty prefix is the minimum.

        Ties go to the smallest key (the empty prefix first). O(1) when no update
        moved the optimum, else O(dirty blocks * load + K) vectorised.
        """
        best = self._best
        if best is not None:
            return best
        k = len(self._blocks)
        if k == 0:
            self._best = (0.0, _NEG_INF)
            return self._best
        S, bmin, barg, sizes, lprows = self._S, self._bmin, self._barg, self._sizes, self._lprows
        for j in self._dirty:
            lp = lprows[j]
            a = int(lp.argmin())
            barg[j] = a
            bmin[j] = lp[a]
            S[j + 1] = lp[sizes[j] - 1]
        self._dirty.clear()
        np.cumsum(S, out=self._E)
        C = self._C
        np.add(self._E_head, bmin, out=C)
        jj = int(C.argmin())
        m = float(C[jj])
        self._best = (0.0, _NEG_INF) if m >= 0.0 else (m, float(self._keyrows[jj][barg[jj]]))
        return self._best

    def threshold(self) -> float:
        """The key of the minimum prefix (``-inf`` for the empty prefix)."""
        return self.best()[1]

    def totals_upto(self, key: float) -> tuple[float, float, float, float]:
        """Sums of rows W1, W0, C1, C0 over keys ``<= key``. O(n / load + load)."""
        out = np.zeros(4)
        for blk, n, mx in zip(self._blocks, self._sizes, self._maxes):
            if mx <= key:
                out += blk[W1:, :n].sum(axis=1)
            else:
                i = int(blk[KEY].searchsorted(key, side="right"))
                out += blk[W1:, :i].sum(axis=1)
                break
        return tuple(out.tolist())  # type: ignore[return-value]

    def export(self) -> np.ndarray:
        """Rows ``(key, w1, w0, c1, c0)`` of every held key, in key order, as ``(5, n)``."""
        if not self._blocks:
            return np.zeros((5, 0))
        return np.concatenate([blk[[KEY, W1, W0, C1, C0], :n] for blk, n in zip(self._blocks, self._sizes)], axis=1)

    def nbytes(self) -> int:
        """Bytes held by the numpy arrays (blocks and block summaries)."""
        return sum(b.nbytes for b in self._blocks) + 4 * self._S.nbytes
