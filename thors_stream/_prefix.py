"""A sorted multiset of scores that keeps its minimum prefix sum ready.

This is the numpy data structure behind :class:`~thors_stream.StreamingThors`
(``backend="python"``). Distinct scores ("keys") are kept in ascending order in
blocks of at most ``2 * load - 1`` keys. Each block is one ``(7, 2 * load)`` float64
array (at least one padding column always remains) whose rows hold, per key:

    KEY  the score                                   (padding: +inf)
    LP   local prefix: sum of VAL over this block's keys up to this one (padding: +inf)
    W1   weight of positives at this key (high part) (padding: 0)
    W0   weight of negatives at this key (high part) (padding: 0)
    C1   number of positive events at this key       (padding: 0)
    C0   number of negative events at this key       (padding: 0)
    VAL  pos_coef * W1 - neg_coef * W0               (padding: 0)

The empirical cost at threshold ``t`` is ``neg_coef * W0_total + P(t)`` where ``P(t)``
is the sum of VAL over keys ``<= t``; the optimum is the minimum of ``P`` over the keys
and the empty prefix (``t = -inf``, ``P = 0``), the first one on ties.

What the answer depends on
--------------------------
*Per-key weights* are double-doubles ``(hi, lo)``: ``hi`` in row W1/W0, the rarely
non-zero ``lo`` in a dictionary keyed by score (absent = 0, so exact streams pay
nothing). An update adds with the error-free TwoSum (see :func:`dd_add`); the pair is
kept normalised as ``hi = round(x)``, ``lo = x - hi`` of the true per-key sum ``x``
whenever ``x`` fits in a double-double, whatever events came and went: adding then
removing an event restores the pair bit for bit. A class whose count falls to zero at
a key has weight exactly 0. Exported weights are the ``hi`` parts (``round(x)``);
:meth:`SortedPrefixMin.export_lo` gives the ``lo`` parts.

*VAL* of a key is ``pos_coef * hi1 - neg_coef * hi0`` in float64 (one expression, the
same scalar and vectorised): a function of the key's held weights only.

*LP* is, at every moment, the sequential float64 cumulative sum of VAL over the block
from its first key (``np.add.accumulate``, which is sequential): the *canonical*
chain, a function of the held per-key values and the block layout. Two update paths
keep it:

- exact regime: all VAL are integer multiples of a power of two ``q`` and
  ``A = sum |VAL| < 2**52 * q``. Then every prefix sum, every ``delta = VAL_new -
  VAL_old`` and every ``LP + delta`` is a multiple of ``q`` below ``2**53 * q`` in
  magnitude, hence exactly representable: the canonical chain equals the true prefix
  sums, and the fast in-place ``LP[i:] += delta`` produces exactly the canonical chain
  (no rounding at all, so no history);
- otherwise: LP is recomputed from VAL from the changed key to the block end (the
  tail of the canonical chain; the head did not change): one ``np.add.accumulate``.

``q`` and ``A`` are bookkeeping that only choose the path: ``q`` is lowered when a VAL
falls off its grid and ``A`` is kept by exact increments while below the limit (past
it, both are recomputed from the rows every ``RESYNC`` updates, and afresh when the
structure empties).

Block summaries ``(sum, min, argmin)`` and the global answer are recomputed from LP
on read (one ``argmin`` per changed block, one ``accumulate`` and ``argmin`` over the K
block sums), so they too are a function of the held values and the layout. On the
exact domain (every per-key sum, VAL and prefix sum of the held events exactly
representable: integers, dyadic fractions) every one of these sums is exact, so the
answer is the exact optimum whatever the layout and the history.

A cached global answer survives the updates that provably cannot move it (see
:meth:`SortedPrefixMin._touch`): an increase of VAL after the optimum (sound in float
by monotonicity of rounding), and on the exact regime a decrease at or before it.

Invariants (checked by :meth:`SortedPrefixMin._check`): every block holds 1 to
``2 * load - 1`` keys (an insert into a full block splits it first; merges and bulk
rebuilds never produce more), keys strictly increase across blocks, VAL and LP are as
above. Every mutation validates before changing anything, so a rejected call leaves the
structure as it was.

Costs: with ``n`` keys and ``K ~ n / load`` blocks an update is O(log n) to locate
plus O(load) vectorised work (memmoves of the rows, and the LP tail); a read after
changes is O(load + K) vectorised. Blocks stay below 128 KiB at the default load, so
their temporaries come from the heap rather than fresh pages.

The code: the row layout, the exact arithmetic and the operations on the layout are in
:mod:`thors_stream._prefix_blocks`, sorted batches (:meth:`SortedPrefixMin.apply_sorted`) in
:mod:`thors_stream._prefix_bulk`; this module holds the class, its per-event updates and its reads.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

import numpy as np

from ._prefix_blocks import (
    _INF,
    _NEG_INF,
    _PAD,
    C0,
    C1,
    KEY,
    LP,
    RESYNC,
    VAL,
    W0,
    W1,
    _row_views,
    dd_add,
)
from ._prefix_bulk import BulkPart


class SortedPrefixMin(BulkPart):
    """Ordered keys with per-key class weights and a fast minimum prefix sum.

    ``pos_coef``/``neg_coef`` turn class weights into the signed value
    ``pos_coef * w1 - neg_coef * w0`` whose prefix sums are minimised.
    """

    def __init__(self, pos_coef: float, neg_coef: float, load: int = 1024) -> None:
        if isinstance(load, bool) or not isinstance(load, (int, np.integer)) or load < 4:
            raise ValueError(f"load must be an integer >= 4, got {load!r}")
        load = int(load)
        self._a = float(pos_coef)
        self._b = float(neg_coef)
        self._load = load
        self._maxn = 2 * load - 1  # keys per block at most
        self._cap = 2 * load  # columns: at least one padding column always remains
        self._blocks: list[np.ndarray] = []
        self._keyrows: list[np.ndarray] = []
        self._lprows: list[np.ndarray] = []
        self._mvs: list[tuple[memoryview[float], ...]] = []  # per block, its seven rows as memoryviews
        self._sizes: list[int] = []
        self._maxes: list[float] = []
        self._barg: list[int] = []
        self._dirty: set[int] = set()
        self._lo: dict[float, tuple[float, float]] = {}  # key -> (lo1, lo0), only when not both 0
        self._alloc_top(16)
        self._best: tuple[float, float] | None = (0.0, _NEG_INF)
        self._reset_bounds()  # exact-regime bookkeeping (see the module docstring)
        self.n_keys = 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_keyrows", "_lprows", "_mvs", "_E_head"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._keyrows = [blk[KEY] for blk in self._blocks]
        self._lprows = [blk[LP] for blk in self._blocks]
        self._mvs = [_row_views(blk) for blk in self._blocks]
        self._E_head = self._E[: self._kcap]

    # ------------------------------------------------------------------ lookup
    def locate(self, key: float) -> tuple[int, int] | None:
        """Block and index of ``key`` if held, else ``None``. O(log n)."""
        j = bisect_left(self._maxes, key)
        if j == len(self._maxes):
            return None
        i = int(self._keyrows[j].searchsorted(key))
        return (j, i) if self._mvs[j][KEY][i] == key else None

    def held_at(self, key: float) -> tuple[float, float, float, float] | None:
        """``(w1, w0, c1, c0)`` held at ``key`` (weights: high parts), or ``None``. O(log n)."""
        loc = self.locate(key)
        if loc is None:
            return None
        _, _, w1, w0, c1, c0, _ = self._mvs[loc[0]]
        i = loc[1]
        return w1[i], w0[i], c1[i], c0[i]

    # ------------------------------------------------------------------ updates
    def _touch(self, key: float, vo: float, vn: float, deleted: bool, exact: bool) -> None:
        """Keep the cached optimum when an update provably cannot move it, else drop it.

        The VAL of ``key`` went from ``vo`` to ``vn`` (0 for an absent key).

        - ``key`` after the optimum and ``vn >= vo``: the prefixes up to the optimum are
          untouched, and those after it can only grow, in float too (``fl(x + v)`` is
          monotone in ``x`` and ``v``), so the first minimum and its value stay.
        - ``key`` at or before the optimum, ``vn <= vo`` and the exact regime: the optimum
          and everything after it drop by the same exact amount while the prefixes before
          it (strictly larger) do not grow; it stays the first minimum, lower by ``vn - vo``.
        """
        best = self._best
        if best is None:
            return
        bkey = best[1]
        if key > bkey:
            if vn < vo:
                self._best = None
        elif exact and vn <= vo and not (deleted and key == bkey):
            self._best = (best[0] + (vn - vo), bkey)
        else:
            self._best = None

    def _slow_change(self, blk: np.ndarray, i: int, n: int) -> None:
        """Off the exact regime: recompute the tail LP[i:n] of the canonical chain. ``q`` and
        ``A`` are not kept meanwhile; they are recomputed every ``RESYNC`` such updates."""
        self._A_ok = False
        self._relp(blk, i, n)
        self._updates += 1
        if self._updates >= RESYNC:
            self._refresh_bounds()

    def _add_first(self, key: float, is_pos: bool, w: float) -> None:
        col = np.array([[key], [0.0], [w if is_pos else 0.0], [0.0 if is_pos else w], [1.0 if is_pos else 0.0],
                        [0.0 if is_pos else 1.0], [0.0]])
        blk = self._block_from(col)
        self._insert_block(0, blk, 1)
        self.n_keys = 1
        vn = blk.item(VAL, 0)
        if vn % self._q != 0.0:
            self._lower_q(vn)
        self._A = abs(vn)
        self._A_ok = self._A < self._lim
        self._best = None

    def add(self, key: float, is_pos: bool, w: float) -> None:
        """Add one event: weight ``w`` of class ``is_pos`` at ``key``. O(log n + load)."""
        key = float(key) + 0.0  # Python floats (fast scalar arithmetic); -0.0 is stored as 0.0
        w = float(w)
        maxes = self._maxes
        j = bisect_left(maxes, key)
        if j == len(maxes):
            if not j:
                self._add_first(key, is_pos, w)
                return
            j -= 1
        mv = self._mvs[j]
        kr, lr, w1r, w0r, c1r, c0r, vr = mv
        i = int(self._keyrows[j].searchsorted(key))
        a, b = self._a, self._b
        n = self._sizes[j]
        if kr[i] == key:
            h1 = w1r[i]
            h0 = w0r[i]
            vo = vr[i]
            if is_pos:
                s = h1 + w
                bb = s - h1
                if bb != w or s - bb != h1 or (self._lo and key in self._lo):
                    s = self._lo_add(key, 0, h1, w)
                w1r[i] = s
                c1r[i] += 1.0
                vn = a * s - b * h0
            else:
                s = h0 + w
                bb = s - h0
                if bb != w or s - bb != h0 or (self._lo and key in self._lo):
                    s = self._lo_add(key, 1, h0, w)
                w0r[i] = s
                c0r[i] += 1.0
                vn = a * h1 - b * s
            vr[i] = vn
        else:
            if n >= self._maxn:  # full: split first, so that no block ever overflows
                self._split(j)
                self.add(key, is_pos, w)
                return
            vo = 0.0
            if i < n:  # memoryview slice assignment is a memmove per row
                for r in mv:
                    r[i + 1 : n + 1] = r[i:n]
            kr[i] = key
            lr[i] = lr[i - 1] if i else 0.0
            if is_pos:
                w1r[i] = w
                w0r[i] = 0.0
                c1r[i] = 1.0
                c0r[i] = 0.0
                vn = a * w - b * 0.0
            else:
                w1r[i] = 0.0
                w0r[i] = w
                c1r[i] = 0.0
                c0r[i] = 1.0
                vn = a * 0.0 - b * w
            vr[i] = vn
            n += 1
            self._sizes[j] = n
            self.n_keys += 1
            if i == n - 1:
                maxes[j] = key
        # LP[i:n] to the canonical chain: exactly by the delta on the exact regime
        exact = False
        if self._A_ok:
            if vn % self._q != 0.0:
                self._lower_q(vn)
            A = self._A
            An = (A - abs(vo)) + abs(vn)
            self._A = An
            lim = self._lim
            if A < lim and An < lim:
                d = vn - vo
                if d:
                    self._lprows[j][i:n] += d
                exact = True
        if not exact:
            self._slow_change(self._blocks[j], i, n)
        self._dirty.add(j)
        best = self._best  # keep the cached optimum when provably unmoved (see _touch)
        if best is not None:
            bkey = best[1]
            if key > bkey:
                if vn < vo:
                    self._best = None
            elif exact and vn <= vo:
                self._best = (best[0] + (vn - vo), bkey)
            else:
                self._best = None

    def _lo_add(self, key: float, cls: int, h: float, w: float) -> float:
        """Double-double add of ``w`` to class ``cls`` at ``key`` (held part ``h``), keeping
        the low part in ``_lo``; returns the new high part."""
        lo = self._lo.get(key)
        if lo is None:
            h, lc = dd_add(h, 0.0, w)
            if lc:
                self._lo[key] = (lc, 0.0) if cls == 0 else (0.0, lc)
            return h
        h, lc = dd_add(h, lo[cls], w)
        pair = (lc, lo[1]) if cls == 0 else (lo[0], lc)
        if pair[0] or pair[1]:
            self._lo[key] = pair
        else:
            del self._lo[key]
        return h

    def remove(self, key: float, is_pos: bool, w: float) -> None:
        """Remove one held event. Raises ``KeyError`` (changing nothing) when no event of
        class ``is_pos`` is held at ``key``. O(log n + load)."""
        key = float(key)
        j = bisect_left(self._maxes, key)
        if j < len(self._maxes):
            i = int(self._keyrows[j].searchsorted(key))
            if self._mvs[j][KEY][i] == key:
                self.remove_at(j, i, is_pos, w)
                return
        raise KeyError(f"no held event has score {key!r}")

    def remove_at(self, j: int, i: int, is_pos: bool, w: float) -> None:
        """Remove one event of class ``is_pos`` and weight ``w`` at located ``(j, i)``.

        Raises ``KeyError`` (changing nothing) when no event of that class is held there;
        the weight is the caller's to check. A class left without events has weight
        exactly 0. O(load).
        """
        w = float(w)
        mv = self._mvs[j]
        kr, lr, w1r, w0r, c1r, c0r, vr = mv
        key = kr[i]
        c1 = c1r[i]
        c0 = c0r[i]
        if (c1 if is_pos else c0) < 1.0:
            raise KeyError(f"no held event has score {key!r} and label {int(bool(is_pos))}")
        h1 = w1r[i]
        h0 = w0r[i]
        a, b = self._a, self._b
        vo = vr[i]
        n = self._sizes[j]
        if is_pos:
            c1 -= 1.0
        else:
            c0 -= 1.0
        deleted = c1 == 0.0 and c0 == 0.0
        if deleted:
            vn = 0.0
            n -= 1
            if i < n:
                for r in mv:
                    r[i:n] = r[i + 1 : n + 1]
            kr[n] = lr[n] = _INF
            w1r[n] = w0r[n] = c1r[n] = c0r[n] = vr[n] = 0.0
            self._sizes[j] = n
            self.n_keys -= 1
            if self._lo:
                self._lo.pop(key, None)
            if n == 0:
                self._delete_block(j)
                self._A -= abs(vo)  # exact on the exact regime (a multiple of q, smaller)
                self._best = None
                if not self._blocks:
                    self._reset_bounds()
                return
            if i == n:
                self._maxes[j] = kr[n - 1]
        elif is_pos:
            if not c1:
                s = 0.0
                if self._lo and key in self._lo:
                    self._set_lo(key, 0.0, self._lo[key][1])
            else:
                s = h1 - w
                bb = s - h1
                if bb != -w or s - bb != h1 or (self._lo and key in self._lo):
                    s = self._lo_add(key, 0, h1, -w)
            w1r[i] = s
            c1r[i] = c1
            vn = a * s - b * h0
            vr[i] = vn
        else:
            if not c0:
                s = 0.0
                if self._lo and key in self._lo:
                    self._set_lo(key, self._lo[key][0], 0.0)
            else:
                s = h0 - w
                bb = s - h0
                if bb != -w or s - bb != h0 or (self._lo and key in self._lo):
                    s = self._lo_add(key, 1, h0, -w)
            w0r[i] = s
            c0r[i] = c0
            vn = a * h1 - b * s
            vr[i] = vn
        exact = False
        if self._A_ok:
            if vn % self._q != 0.0:
                self._lower_q(vn)
            A = self._A
            An = (A - abs(vo)) + abs(vn)
            self._A = An
            lim = self._lim
            if A < lim and An < lim:
                d = vn - vo
                if d:
                    self._lprows[j][i:n] += d
                exact = True
        if not exact:
            self._slow_change(self._blocks[j], i, n)
        self._dirty.add(j)
        self._touch(key, vo, vn, deleted, exact)
        if deleted and n < self._load // 4:
            self._merge_small(j)

    def set_coefs(self, pos_coef: float, neg_coef: float) -> None:
        """Change the class coefficients; recomputes every prefix. O(n)."""
        a, b = float(pos_coef), float(neg_coef)
        if a == self._a and b == self._b:
            return
        self._a, self._b = a, b
        self._resync_all()
        self._refresh_bounds()

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
        S, bmin, barg, sizes, lprows, mvs = self._S, self._bmin, self._barg, self._sizes, self._lprows, self._mvs
        for j in self._dirty:
            a = int(lprows[j].argmin())
            lp = mvs[j][LP]
            barg[j] = a
            bmin[j] = lp[a]
            S[j + 1] = lp[sizes[j] - 1]
        self._dirty.clear()
        np.add.accumulate(S, out=self._E)
        C = self._C
        np.add(self._E_head, bmin, out=C)
        jj = int(C.argmin())
        m = float(C[jj])
        self._best = (0.0, _NEG_INF) if m >= 0.0 else (m, mvs[jj][KEY][barg[jj]])
        return self._best

    def threshold(self) -> float:
        """The key of the minimum prefix (``-inf`` for the empty prefix)."""
        return self.best()[1]

    def totals_upto(self, key: float) -> tuple[float, float, float, float]:
        """Sums of rows W1, W0, C1, C0 over keys ``<= key``. O(n / load + load)."""
        out = np.zeros(4)
        for blk, n, mx in zip(self._blocks, self._sizes, self._maxes):
            if mx <= key:
                out += blk[W1:VAL, :n].sum(axis=1)
            else:
                i = int(blk[KEY].searchsorted(key, side="right"))
                out += blk[W1:VAL, :i].sum(axis=1)
                break
        w1, w0, c1, c0 = out.tolist()
        return float(w1), float(w0), float(c1), float(c0)

    def export(self) -> np.ndarray:
        """Rows ``(key, w1, w0, c1, c0)`` of every held key, in key order, as ``(5, n)``.

        The weights are the high parts of the per-key double-doubles (``round(w)``)."""
        if not self._blocks:
            return np.zeros((5, 0))
        return np.concatenate([blk[[KEY, W1, W0, C1, C0], :n] for blk, n in zip(self._blocks, self._sizes)], axis=1)

    def export_lo(self) -> np.ndarray:
        """The low parts ``(lo1, lo0)`` of the per-key weights, in :meth:`export` order, as ``(2, n)``."""
        out = np.zeros((2, self.n_keys))
        if self._lo:
            keys = np.concatenate([kr[:n] for kr, n in zip(self._keyrows, self._sizes)])
            ks = np.fromiter(self._lo.keys(), dtype=np.float64, count=len(self._lo))
            out[:, np.searchsorted(keys, ks)] = np.array(list(self._lo.values()), dtype=np.float64).T
        return out

    def nbytes(self) -> int:
        """Bytes held by the numpy arrays (blocks and block summaries)."""
        return sum(b.nbytes for b in self._blocks) + 4 * self._S.nbytes

    # ------------------------------------------------------------------ tests
    def _check(self) -> None:
        """Assert every invariant (tests; O(n))."""
        k = len(self._blocks)
        assert k == len(self._keyrows) == len(self._lprows) == len(self._sizes) == len(self._maxes) == len(self._barg)
        assert sum(self._sizes) == self.n_keys
        prev = _NEG_INF
        a, b = self._a, self._b
        for j, (blk, n) in enumerate(zip(self._blocks, self._sizes)):
            assert 1 <= n <= self._maxn, (j, n)
            assert blk.shape == (7, self._cap)
            assert self._keyrows[j] is not None and np.shares_memory(self._keyrows[j], blk)
            keys = blk[KEY, :n]
            assert keys[0] > prev and (n == 1 or (keys[1:] > keys[:-1]).all())
            assert self._maxes[j] == keys[-1]
            prev = keys[-1]
            assert (blk[:, n:] == _PAD).all()
            c1, c0 = blk[C1, :n], blk[C0, :n]
            assert (c1 >= 0).all() and (c0 >= 0).all() and ((c1 + c0) > 0).all()
            assert (blk[W1, :n][c1 == 0] == 0).all() and (blk[W0, :n][c0 == 0] == 0).all()
            v = a * blk[W1, :n] - b * blk[W0, :n]
            assert (v == blk[VAL, :n]).all(), ("VAL is not a * W1 - b * W0", j)
            assert (np.cumsum(v) == blk[LP, :n]).all(), ("LP is not the canonical chain", j)
        held = set(np.concatenate([kr[:n] for kr, n in zip(self._keyrows, self._sizes)]).tolist()) if k else set()
        for key, (l1, l0) in self._lo.items():
            assert key in held and (l1 or l0)
            at = self.held_at(key)
            assert at is not None
            h1, h0, k1, k0 = at
            assert h1 + l1 == h1 and h0 + l0 == h0
            assert (k1 or not l1) and (k0 or not l0)
        if self._A_ok and k:
            vals = np.concatenate([a * blk[W1, :n] - b * blk[W0, :n] for blk, n in zip(self._blocks, self._sizes)])
            assert (np.fmod(vals, self._q) == 0).all()
            assert self._A == math.fsum(np.abs(vals).tolist())
        if self._best is not None:
            cached = self._best
            self._best = None
            self._dirty.update(range(k))
            fresh = self.best()
            assert fresh == cached, (fresh, cached)
