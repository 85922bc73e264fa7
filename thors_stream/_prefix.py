"""A sorted multiset of scores that keeps its minimum prefix sum ready.

This is the data structure behind :class:`~thors_stream.StreamingThors`. Distinct
scores ("keys") are kept in ascending order in blocks of at most ``2 * load`` keys.
Each block is one ``(6, capacity)`` float64 array whose rows hold, per key:

    KEY  the score (padding: +inf, so ``np.searchsorted`` needs no slicing)
    VAL  pos_coef * W1 - neg_coef * W0   (padding: 0)
    W1   weight of positives at this key
    W0   weight of negatives at this key
    C1   number of positive events at this key
    C0   number of negative events at this key

The empirical cost at threshold ``t`` is ``neg_coef * W0_total + P(t)`` where ``P(t)``
is the sum of VAL over keys ``<= t``. The optimum is the minimum of ``P`` over the
keys and over the empty prefix (``t = -inf``, ``P = 0``).

Per block we cache ``(sum, min prefix, argmin)``; a change marks its block dirty and
the summary is recomputed (one ``np.cumsum`` and one ``argmin``) only when the
minimum is next read. The minimum over blocks is one more ``cumsum`` + ``argmin``
over the block summaries. On top of that, a cached global answer survives the two
kinds of update that provably cannot move it (see :meth:`_touch`), so a read after
such updates is O(1).

Costs: with ``n`` keys and ``K ~ n / load`` blocks, an update is O(log n) to locate
plus an O(load) ``memmove`` (in C); a read after changes is O(load + K) in numpy.
Memory is 48 bytes per distinct key times the block fill factor (50-100%).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

import numpy as np

KEY, VAL, W1, W0, C1, C0 = range(6)
_INF = float("inf")
_PAD = np.array([_INF, 0.0, 0.0, 0.0, 0.0, 0.0])


class SortedPrefixMin:
    """Ordered keys with per-key class weights and an O(1)-amortised min prefix sum.

    ``pos_coef``/``neg_coef`` turn class weights into the signed value
    ``pos_coef * w1 - neg_coef * w0`` whose prefix sums are minimised.
    """

    def __init__(self, pos_coef: float, neg_coef: float, load: int = 512) -> None:
        if load < 4:
            raise ValueError(f"load must be >= 4, got {load!r}")
        self._a = float(pos_coef)
        self._b = float(neg_coef)
        self._load = load
        self._cap = 2 * load + 1  # at most 2 * load keys, so one +inf pad always remains
        self._blocks: list[np.ndarray] = []
        self._keys: list[np.ndarray] = []  # row views blocks[j][KEY]
        self._vals: list[np.ndarray] = []  # row views blocks[j][VAL]
        self._sizes: list[int] = []
        self._maxes: list[float] = []
        self._barg: list[int] = []
        self._dirty: set[int] = set()
        self._cs = np.empty(self._cap)
        self._alloc_top(16)
        # cached global answer: (min prefix value, key or -inf, block, index) or None
        self._best: tuple[float, float, int, int] | None = (0.0, -_INF, -1, -1)
        self.n_keys = 0

    # ------------------------------------------------------------------ layout
    def _alloc_top(self, kcap: int) -> None:
        old_k = len(self._blocks)
        S = np.zeros(kcap + 1)
        bmin = np.full(kcap, _INF)
        if old_k:
            S[: old_k + 1] = self._S[: old_k + 1]
            bmin[:old_k] = self._bmin[:old_k]
        self._kcap = kcap
        self._S, self._bmin = S, bmin  # S[j + 1] = sum of block j; S[0] = 0
        self._E = np.empty(kcap + 1)
        self._E_head = self._E[:kcap]
        self._C = np.empty(kcap)

    def _new_block(self) -> np.ndarray:
        blk = np.empty((6, self._cap))
        blk[:] = _PAD[:, None]
        return blk

    def _insert_block(self, j: int, blk: np.ndarray, size: int) -> None:
        k = len(self._blocks)
        if k + 1 > self._kcap:
            self._alloc_top(2 * self._kcap)
        S, bmin = self._S, self._bmin
        S[j + 2 : k + 2] = S[j + 1 : k + 1].copy()
        bmin[j + 1 : k + 1] = bmin[j:k].copy()
        self._blocks.insert(j, blk)
        self._keys.insert(j, blk[KEY])
        self._vals.insert(j, blk[VAL])
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
        for lst in (self._blocks, self._keys, self._vals, self._sizes, self._maxes, self._barg):
            del lst[j]
        self._dirty = {d - 1 if d > j else d for d in self._dirty if d != j}

    def _split(self, j: int) -> None:
        blk, n, h = self._blocks[j], self._sizes[j], self._load
        new = self._new_block()
        new[:, : n - h] = blk[:, h:n]
        blk[:, h:n] = _PAD[:, None]
        self._sizes[j] = h
        self._maxes[j] = float(blk[KEY, h - 1])
        self._dirty.add(j)
        self._insert_block(j + 1, new, n - h)

    def _merge_small(self, j: int) -> None:
        """Fold a block that fell below load/4 keys into a neighbour when they fit."""
        k = len(self._blocks)
        if k < 2:
            return
        left = j - 1 if j > 0 else j
        nl, nr = self._sizes[left], self._sizes[left + 1]
        if nl + nr > 2 * self._load:
            return
        bl, br = self._blocks[left], self._blocks[left + 1]
        bl[:, nl : nl + nr] = br[:, :nr]
        self._sizes[left] = nl + nr
        self._maxes[left] = self._maxes[left + 1]
        self._dirty.add(left)
        self._delete_block(left + 1)

    # ------------------------------------------------------------------ lookup
    def locate(self, key: float) -> tuple[int, int] | None:
        """Block and index of ``key`` if held, else ``None``. O(log n)."""
        j = bisect_left(self._maxes, key)
        if j == len(self._maxes):
            return None
        keys = self._keys[j]
        i = int(keys.searchsorted(key))
        return (j, i) if keys[i] == key else None

    def column(self, j: int, i: int) -> np.ndarray:
        """Copy of the six rows stored for key ``(j, i)``."""
        return self._blocks[j][:, i].copy()

    # ------------------------------------------------------------------ updates
    def _touch(self, key: float, delta: float, deleted: bool) -> None:
        """Keep the cached optimum when an update cannot move it, else drop it.

        Adding ``delta`` to a key shifts every prefix at or after it. If the key lies
        after the optimum and ``delta >= 0``, no prefix drops below the optimum and
        earlier ones are untouched: nothing changes. If the key lies at or before the
        optimum and ``delta <= 0``, the optimum and everything after it drop by the
        same amount while the prefixes before it (strictly larger) do not move, so it
        stays the first minimum, lower by ``delta``.
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
            self._best = (best[0] + delta, bkey, -1, -1)
        else:
            self._best = None

    def add(self, key: float, is_pos: bool, w: float) -> None:
        """Add one event: weight ``w`` to class ``is_pos`` at ``key``. O(log n + load)."""
        a_or_b = self._a if is_pos else -self._b
        delta = a_or_b * w
        maxes = self._maxes
        j = bisect_left(maxes, key)
        if j == len(maxes):
            if j == 0:  # empty structure
                blk = self._new_block()
                blk[:, 0] = (key, delta, w if is_pos else 0.0, 0.0 if is_pos else w, is_pos, not is_pos)
                self._insert_block(0, blk, 1)
                self.n_keys = 1
                self._touch(key, delta, False)
                return
            j -= 1
            maxes[j] = key
        keys = self._keys[j]
        blk = self._blocks[j]
        i = int(keys.searchsorted(key))
        if keys[i] == key:
            col = blk[:, i]
            col[VAL] += delta
            if is_pos:
                col[W1] += w
                col[C1] += 1.0
            else:
                col[W0] += w
                col[C0] += 1.0
        else:
            n = self._sizes[j]
            if i < n:
                blk[:, i + 1 : n + 1] = blk[:, i:n]
            if is_pos:
                blk[:, i] = (key, delta, w, 0.0, 1.0, 0.0)
            else:
                blk[:, i] = (key, delta, 0.0, w, 0.0, 1.0)
            n += 1
            self._sizes[j] = n
            self.n_keys += 1
            if n == self._cap - 1:
                self._dirty.add(j)
                self._touch(key, delta, False)
                self._split(j)
                return
        self._dirty.add(j)
        self._touch(key, delta, False)

    def remove_at(self, j: int, i: int, is_pos: bool, w: float) -> None:
        """Remove one event of class ``is_pos`` and weight ``w`` at located ``(j, i)``.

        The caller has checked that such an event is held. O(load).
        """
        blk = self._blocks[j]
        col = blk[:, i]
        key = float(col[KEY])
        delta = -(self._a * w if is_pos else -self._b * w)
        if is_pos:
            col[C1] -= 1.0
        else:
            col[C0] -= 1.0
        deleted = col[C1] + col[C0] == 0.0
        if deleted:
            n = self._sizes[j] - 1
            blk[:, i:n] = blk[:, i + 1 : n + 1]
            blk[:, n] = _PAD
            self._sizes[j] = n
            self.n_keys -= 1
            if n == 0:
                self._delete_block(j)
            else:
                if i == n:
                    self._maxes[j] = float(blk[KEY, n - 1])
                self._dirty.add(j)
                if n < self._load // 4:
                    self._merge_small(j)
        else:
            col[VAL] += delta
            if is_pos:
                col[W1] -= w
            else:
                col[W0] -= w
            self._dirty.add(j)
        self._touch(key, delta, deleted)

    def set_coefs(self, pos_coef: float, neg_coef: float) -> None:
        """Change the class coefficients and recompute every VAL. O(n)."""
        a, b = float(pos_coef), float(neg_coef)
        if a == self._a and b == self._b:
            return
        self._a, self._b = a, b
        for j, blk in enumerate(self._blocks):
            np.subtract(a * blk[W1], b * blk[W0], out=blk[VAL])
            self._dirty.add(j)
        self._best = None

    def apply_sorted(
        self, keys: np.ndarray, dw1: np.ndarray, dw0: np.ndarray, dc1: np.ndarray, dc0: np.ndarray
    ) -> None:
        """Apply net changes for strictly increasing ``keys`` in one pass per block.

        Every resulting count must be >= 0 (the caller aggregates inserts and removals).
        O(m log K + touched blocks * load) with numpy work per touched block.
        """
        if keys.shape[0] == 0:
            return
        self._best = None
        dval = self._a * dw1 - self._b * dw0
        rows = np.vstack([keys, dval, dw1, dw0, dc1, dc0])
        if not self._blocks:
            keep = (dc1 + dc0) > 0
            self._rebuild_from(rows[:, keep])
            return
        bidx = np.searchsorted(np.asarray(self._maxes), keys)
        bidx[bidx == len(self._blocks)] = len(self._blocks) - 1
        bounds = np.flatnonzero(np.diff(bidx)) + 1
        starts = np.concatenate([[0], bounds])
        stops = np.concatenate([bounds, [keys.shape[0]]])
        # right to left, so that splitting block j leaves the indices of blocks < j alone
        for lo, hi in zip(starts[::-1].tolist(), stops[::-1].tolist()):
            self._merge_into(int(bidx[lo]), rows[:, lo:hi])

    def _merge_into(self, j: int, rows: np.ndarray) -> None:
        blk, n = self._blocks[j], self._sizes[j]
        cur = blk[:, :n]
        pos = np.searchsorted(cur[KEY], rows[KEY])
        pc = np.minimum(pos, n - 1)
        hit = cur[KEY, pc] == rows[KEY]
        if hit.any():
            cur[1:, pc[hit]] += rows[1:, hit]
        new = rows[:, ~hit]
        new = new[:, (new[C1] + new[C0]) > 0]
        merged = np.insert(cur, pos[~hit][(rows[C1, ~hit] + rows[C0, ~hit]) > 0], new, axis=1) if new.shape[1] else cur
        alive = (merged[C1] + merged[C0]) > 0
        if not alive.all():
            merged = merged[:, alive]
        m = merged.shape[1]
        self.n_keys += m - n
        if 0 < m <= 2 * self._load:
            if m != n or merged is not cur:
                blk[:, :m] = merged
                blk[:, m:n] = _PAD[:, None]
            self._sizes[j] = m
            self._maxes[j] = float(blk[KEY, m - 1])
            self._dirty.add(j)
            return
        self._delete_block(j)
        for q, lo in enumerate(range(0, m, self._load)):
            chunk = merged[:, lo : lo + self._load]
            nb = self._new_block()
            nb[:, : chunk.shape[1]] = chunk
            self._insert_block(j + q, nb, chunk.shape[1])

    def _rebuild_from(self, rows: np.ndarray) -> None:
        for lo in range(0, rows.shape[1], self._load):
            chunk = rows[:, lo : lo + self._load]
            nb = self._new_block()
            nb[:, : chunk.shape[1]] = chunk
            self._insert_block(len(self._blocks), nb, chunk.shape[1])
        self.n_keys = rows.shape[1]

    def clear(self) -> None:
        """Drop every key. O(1)."""
        self.__init__(self._a, self._b, self._load)  # type: ignore[misc]

    # ------------------------------------------------------------------ queries
    def best(self) -> tuple[float, float]:
        """``(min prefix, key)``; key ``-inf`` when the empty prefix is the minimum.

        Ties go to the smallest key (the empty prefix first). O(1) when nothing moved
        the optimum, else O(dirty blocks * load + K) in numpy.
        """
        best = self._best
        if best is not None:
            return best[0], best[1]
        k = len(self._blocks)
        if k == 0:
            self._best = (0.0, -_INF, -1, -1)
            return 0.0, -_INF
        S, bmin, cs, barg = self._S, self._bmin, self._cs, self._barg
        for j in self._dirty:
            np.cumsum(self._vals[j], out=cs)
            a = int(cs.argmin())
            barg[j] = a
            bmin[j] = cs[a]
            S[j + 1] = cs[-1]
        self._dirty.clear()
        np.cumsum(S, out=self._E)
        C = self._C
        np.add(self._E_head, bmin, out=C)
        jj = int(C.argmin())
        m = float(C[jj])
        if m >= 0.0:
            self._best = (0.0, -_INF, -1, -1)
        else:
            self._best = (m, float(self._keys[jj][barg[jj]]), jj, barg[jj])
        return self._best[0], self._best[1]

    def totals_upto(self, key: float) -> np.ndarray:
        """Sums of rows W1, W0, C1, C0 over keys ``<= key`` (all keys for +inf). O(n)."""
        out = np.zeros(4)
        for blk, n, mx in zip(self._blocks, self._sizes, self._maxes):
            if mx <= key:
                out += blk[W1:, :n].sum(axis=1)
            else:
                i = int(blk[KEY].searchsorted(key, side="right"))
                out += blk[W1:, :i].sum(axis=1)
                break
        return out

    def items(self) -> Iterator[np.ndarray]:
        """Yield the used ``(6, size)`` part of every block, in key order."""
        for blk, n in zip(self._blocks, self._sizes):
            yield blk[:, :n]

    def nbytes(self) -> int:
        """Bytes held by the numpy arrays (blocks and block summaries)."""
        return sum(b.nbytes for b in self._blocks) + self._S.nbytes * 2 + self._bmin.nbytes * 2 + self._cs.nbytes
