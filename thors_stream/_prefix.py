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
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any, cast

import numpy as np

KEY, LP, W1, W0, C1, C0, VAL = range(7)
_INF = float("inf")
_NEG_INF = float("-inf")
_PAD = np.array([_INF, _INF, 0.0, 0.0, 0.0, 0.0, 0.0])[:, None]
_PADCOL = _PAD[:, 0]
RESYNC = 1 << 16
_LIM = 2.0**52  # exact regime: sum |VAL| < _LIM * q
_TWO53 = 2.0**53


# ---------------------------------------------------------------------- helpers
def _dd_exact(*terms: float) -> tuple[float, float]:
    """``(round(x), round(x - round(x)))`` for ``x`` the exact sum of ``terms``."""
    try:
        hi = math.fsum(terms)
        return hi, math.fsum((*terms, -hi))
    except OverflowError:  # the sum leaves the float range: no exactness to keep
        hi = sum(terms)
        return hi, 0.0


def dd_add(hi: float, lo: float, w: float) -> tuple[float, float]:
    """``(hi, lo) + w`` as a normalised double-double (``hi == round(hi + lo)``).

    Error-free transformations: ``hi + w = s + e`` (TwoSum); when ``e`` and ``lo`` are zero
    the sum is ``(s, 0)``. Else ``lo + e = t + f`` (TwoSum); when ``f`` is zero the sum is
    exactly ``s + t``, renormalised by one more TwoSum; else (rare: the tails do not fit
    one double) the pair is rebuilt from the exact sum of ``hi, lo, w`` (``math.fsum``).
    So the result is ``round(x), x - round(x)`` for the true sum ``x`` whenever that fits
    in a double-double, and adding then removing ``w`` restores the pair bit for bit.

    >>> dd_add(*dd_add(2.0**30, 0.0, 2.0**-30), -2.0**30)
    (9.313225746154785e-10, 0.0)
    """
    s = hi + w
    bb = s - hi
    e = (hi - (s - bb)) + (w - bb)
    if e == 0.0 and lo == 0.0:
        return s, 0.0
    t = lo + e
    bb = t - lo
    if (lo - (t - bb)) + (e - bb) != 0.0:
        return _dd_exact(hi, lo, w)
    h = s + t
    bb = h - s
    return h, (s - (h - bb)) + (t - bb)


def _lowbit_exp(x: float) -> int:
    """Exponent of the lowest set bit of the finite non-zero float ``x``."""
    m, e = math.frexp(x)
    mi = abs(int(m * _TWO53))
    return e - 53 + (mi & -mi).bit_length() - 1


def _min_lowbit_exp(v: np.ndarray) -> int | None:
    """Smallest :func:`_lowbit_exp` over the non-zero entries of ``v`` (``None``: all zero)."""
    v = v[(v != 0.0) & np.isfinite(v)]  # an infinite VAL fails the limit on A anyway
    if not v.shape[0]:
        return None
    m, e = np.frexp(v)
    mi = np.abs(np.ldexp(m, 53)).astype(np.int64)
    low = (mi & -mi).astype(np.float64)
    return int((e - 54 + np.frexp(low)[1]).min())


def _row_views(blk: np.ndarray) -> tuple[memoryview[float], ...]:
    """Memoryviews of a block's float64 rows (scalar reads and writes without numpy's
    per-item overhead). O(rows)."""
    return tuple(cast("memoryview[float]", memoryview(cast(Any, row))) for row in blk)


class SortedPrefixMin:
    """Ordered keys with per-key class weights and a fast minimum prefix sum.

    ``pos_coef``/``neg_coef`` turn class weights into the signed value
    ``pos_coef * w1 - neg_coef * w0`` whose prefix sums are minimised.
    """

    _S: np.ndarray  # block sums, prefix form (see _alloc_top)
    _bmin: np.ndarray  # per block, its minimum local prefix

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

    # ------------------------------------------------------------------ layout
    def _alloc_top(self, kcap: int) -> None:
        k = len(self._blocks)
        S = np.zeros(kcap + 1)
        bmin = np.full(kcap, _INF)
        if k:
            S[: k + 1] = self._S[: k + 1]
            bmin[:k] = self._bmin[:k]
        E = np.empty(kcap + 1)
        C = np.empty(kcap)
        self._kcap = kcap
        self._S, self._bmin = S, bmin  # S[0] = 0, S[j + 1] = sum of block j
        self._E = E
        self._E_head = E[:kcap]
        self._C = C

    def _block_from(self, cols: np.ndarray) -> np.ndarray:
        """A fresh padded block holding ``cols`` (rows KEY, -, W1, W0, C1, C0[, -]); VAL and
        LP computed."""
        blk = np.empty((7, self._cap))
        m = cols.shape[1]
        blk[: cols.shape[0], :m] = cols
        blk[:, m:] = _PAD
        self._resync(blk, m)
        return blk

    def _resync(self, blk: np.ndarray, n: int) -> None:
        """VAL and the canonical local prefix sums of a block's first ``n`` keys."""
        np.subtract(self._a * blk[W1, :n], self._b * blk[W0, :n], out=blk[VAL, :n])
        np.add.accumulate(blk[VAL, :n], out=blk[LP, :n])

    @staticmethod
    def _relp(blk: np.ndarray, i: int, n: int) -> None:
        """Recompute the canonical chain LP[i:n] from LP[i - 1] and VAL[i:n]: one
        accumulate over VAL[i - 1:n] with VAL[i - 1] standing in for LP[i - 1]."""
        if i >= n:
            return
        val, lp = blk[VAL], blk[LP]
        if not i:
            np.add.accumulate(val[:n], out=lp[:n])
            return
        keep = val[i - 1]
        val[i - 1] = lp[i - 1]
        np.add.accumulate(val[i - 1 : n], out=lp[i - 1 : n])
        val[i - 1] = keep

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
        self._mvs.insert(j, _row_views(blk))
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
        for lst in (self._blocks, self._keyrows, self._lprows, self._mvs, self._sizes, self._maxes, self._barg):
            del lst[j]
        self._dirty = {d - 1 if d > j else d for d in self._dirty if d != j}

    def _split(self, j: int) -> None:
        """Move the upper part of block ``j`` into a new block ``j + 1`` (layout only)."""
        blk, n, h = self._blocks[j], self._sizes[j], self._load
        if len(self._blocks) + 1 > self._kcap:  # allocate before changing anything
            self._alloc_top(2 * self._kcap)
        new = self._block_from(blk[:, h:n])
        blk[:, h:n] = _PAD
        self._sizes[j] = h
        self._maxes[j] = float(blk[KEY, h - 1])
        self._dirty.add(j)
        self._insert_block(j + 1, new, n - h)
        self._best = None  # the layout changed: the rounding of the global prefixes may too

    def _merge_small(self, j: int) -> None:
        """Fold a block that fell below load/4 keys into a neighbour when they fit."""
        if len(self._blocks) < 2:
            return
        left = j - 1 if j > 0 else j
        nl, nr = self._sizes[left], self._sizes[left + 1]
        if nl + nr > self._maxn:
            return
        bl, br = self._blocks[left], self._blocks[left + 1]
        bl[:, nl : nl + nr] = br[:, :nr]
        self._relp(bl, nl, nl + nr)
        self._sizes[left] = nl + nr
        self._maxes[left] = self._maxes[left + 1]
        self._dirty.add(left)
        self._delete_block(left + 1)
        self._best = None

    def _resync_all(self) -> None:
        for j, (blk, n) in enumerate(zip(self._blocks, self._sizes)):
            self._resync(blk, n)
            self._dirty.add(j)
        self._best = None

    def _refresh_bounds(self) -> None:
        """Recompute ``q`` and ``A`` (the exact-regime bookkeeping) from the rows. O(n)."""
        g: int | None = None
        total = 0.0
        for blk, n in zip(self._blocks, self._sizes):
            v = blk[VAL, :n]
            gb = _min_lowbit_exp(v)
            if gb is not None and (g is None or gb < g):
                g = gb
            total += float(np.abs(v).sum())
        self._q = math.ldexp(1.0, g) if g is not None else 2.0**900
        self._lim = _LIM * self._q
        # each block's sum of multiples of q is exact while below the limit, and a
        # rounded sum is >= the limit when the true one is: the test below is exact
        self._A = total
        self._A_ok = total < self._lim
        self._updates = 0

    def _reset_bounds(self) -> None:
        """Nothing held: the exact-regime bookkeeping starts afresh."""
        self._q = 2.0**900
        self._lim = _LIM * self._q
        self._A = 0.0
        self._A_ok = True
        self._updates = 0

    def _lower_q(self, v: float) -> None:
        if not math.isfinite(v):  # the limit on A fails: the exact path is not taken
            return
        q = math.ldexp(1.0, _lowbit_exp(v))
        if q < self._q:
            self._q = q
            self._lim = _LIM * q

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

    def _set_lo(self, key: float, l1: float, l0: float) -> None:
        if l1 or l0:
            self._lo[key] = (l1, l0)
        else:
            self._lo.pop(key, None)

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

    def apply_sorted(
        self, keys: np.ndarray, dw1: np.ndarray, dw0: np.ndarray, dc1: np.ndarray, dc0: np.ndarray,
        dw1_lo: np.ndarray | None = None, dw0_lo: np.ndarray | None = None,
    ) -> None:
        """Apply net changes for strictly increasing ``keys`` in one pass per touched block.

        ``(dw1 + dw1_lo, dw0 + dw0_lo)`` are the weight changes (the optional low parts
        carry double-double precision, e.g. from :meth:`export_lo`), ``dc1, dc0`` the
        count changes. Every resulting count must be >= 0, else ``ValueError`` and nothing
        changes. Weights of a class left without events are exactly 0. Added onto an
        absent key the pair is kept exactly; onto a held one it is added exactly when
        the sum fits in a double-double. O(m log K + touched blocks * load), vectorised
        per block (small arrays: large temporaries cost page faults).
        """
        rows, lo = self._check_bulk(keys, dw1, dw0, dc1, dc0, dw1_lo, dw0_lo)
        m = rows.shape[1]
        if m == 0:
            return
        k = len(self._blocks)
        if k == 0:
            self._build(rows, lo)
            return
        bidx = np.minimum(np.searchsorted(np.asarray(self._maxes), rows[KEY]), k - 1)
        cut = (np.flatnonzero(np.diff(bidx)) + 1).tolist()
        groups = [(int(bidx[s]), s, e) for s, e in zip([0, *cut], [*cut, m])]
        # 1. compute every touched block's new content (raises before any change)
        plans = [self._plan(j, rows[:, s:e], None if lo is None else lo[:, s:e]) for j, s, e in groups]
        # 2. commit, right to left so that replacing block j leaves blocks < j where they are
        for (j, _, _), plan in zip(reversed(groups), reversed(plans)):
            self._commit(j, plan)
        self._best = None
        if not self._blocks:
            self._reset_bounds()
        # fold blocks that came out small into a neighbour
        if len(self._blocks) > 1:
            quarter = self._load // 4
            for mx in [mx for mx, n in zip(self._maxes, self._sizes) if n < quarter]:
                jj = bisect_left(self._maxes, mx)
                if jj < len(self._blocks) and self._maxes[jj] == mx and self._sizes[jj] < quarter:
                    self._merge_small(jj)

    def _check_bulk(
        self, keys: Any, dw1: Any, dw0: Any, dc1: Any, dc0: Any, dw1_lo: Any, dw0_lo: Any
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Validated ``(rows, lo)``: rows KEY, 0, W1, W0, C1, C0 and the low parts (or ``None``)."""
        arrs = [np.asarray(x, dtype=np.float64) for x in (keys, dw1, dw0, dc1, dc0)]
        m = arrs[0].shape[0] if arrs[0].ndim == 1 else -1
        los = [np.asarray(x, dtype=np.float64) for x in (dw1_lo, dw0_lo) if x is not None]
        if any(x.shape != (m,) for x in (*arrs, *los)):
            raise ValueError("apply_sorted needs 1-d arrays of one length")
        rows = np.vstack([arrs[0], np.zeros(m), *arrs[1:]])
        rows[KEY] += 0.0  # one zero: -0.0 is stored as 0.0
        lo = None
        if los:
            lo = np.zeros((2, m))
            if dw1_lo is not None:
                lo[0] = dw1_lo
            if dw0_lo is not None:
                lo[1] = dw0_lo
            if not lo.any():
                lo = None
        if m == 0:
            return rows, lo
        if not np.isfinite(rows).all() or (lo is not None and not np.isfinite(lo).all()):
            raise ValueError("apply_sorted needs finite keys and changes")
        k = rows[KEY]
        if m > 1 and not (k[1:] > k[:-1]).all():
            raise ValueError("apply_sorted needs strictly increasing keys")
        if (np.fmod(rows[C1:], 1.0) != 0.0).any():
            raise ValueError("apply_sorted needs integer count changes")
        # rows that change nothing (e.g. an event added and expired in one batch) go now
        live = (rows[W1:] != 0.0).any(axis=0)
        if lo is not None:
            live |= (lo != 0.0).any(axis=0)
        if not live.all():
            rows = rows.compress(live, axis=1)
            lo = None if lo is None else lo.compress(live, axis=1)
        return rows, lo

    def _lo_of(self, keys: np.ndarray) -> np.ndarray:
        """The held low parts at ``keys`` as ``(2, m)`` (zeros where none)."""
        m = keys.shape[0]
        if not self._lo or not m:
            return np.zeros((2, m))
        got = [self._lo.get(k, (0.0, 0.0)) for k in keys.tolist()]
        out: np.ndarray = np.array(got, dtype=np.float64).reshape(m, 2).T.copy()
        return out

    def _build(self, rows: np.ndarray, lo: np.ndarray | None) -> None:
        """Fill the empty structure from validated ``rows`` (blocks of ``load`` keys)."""
        if (rows[C1:] < 0.0).any():
            raise ValueError("apply_sorted would remove events from a score that holds none")
        w = rows[W1:C1]
        los: list[tuple[float, tuple[float, float]]] = []
        if lo is not None:  # the given pairs, renormalised (two terms: exact)
            s = w + lo
            bb = s - w
            e = (w - (s - bb)) + (lo - bb)
            w[...] = s
            e[rows[C1:] == 0.0] = 0.0
            for i in np.flatnonzero(e.any(axis=0)).tolist():
                los.append((rows.item(KEY, i), (e.item(0, i), e.item(1, i))))
        w[rows[C1:] == 0.0] = 0.0
        alive = (rows[C1] + rows[C0]) > 0.0
        cols = rows if alive.all() else rows.compress(alive, axis=1)
        m = cols.shape[1]
        if not m:
            return
        vals = self._a * cols[W1] - self._b * cols[W0]
        g = _min_lowbit_exp(vals)
        if g is not None and math.ldexp(1.0, g) < self._q:
            self._q = math.ldexp(1.0, g)
            self._lim = _LIM * self._q
        A = float(np.abs(vals).sum())  # exact when below the limit (a sum of multiples of q)
        self._A, self._A_ok = A, A < self._lim
        for key, pair in los:
            self._set_lo(float(key), *pair)
        size = self._load
        starts = range(0, m, size)
        blocks = []
        for lo_ in starts:
            hi = min(lo_ + size, m)
            blk = np.empty((7, self._cap))
            blk[:6, : hi - lo_] = cols[:, lo_:hi]
            blk[VAL, : hi - lo_] = vals[lo_:hi]
            blk[:, hi - lo_ :] = _PAD
            np.add.accumulate(vals[lo_:hi], out=blk[LP, : hi - lo_])
            blocks.append(blk)
        kcap = 16
        while kcap < len(blocks) + 1:
            kcap *= 2
        self._alloc_top(kcap)
        self._blocks = blocks
        self._keyrows = [blk[KEY] for blk in blocks]
        self._lprows = [blk[LP] for blk in blocks]
        self._mvs = [_row_views(blk) for blk in blocks]
        self._sizes = [min(size, m - lo_) for lo_ in starts]
        self._maxes = [cols.item(KEY, min(lo_ + size, m) - 1) for lo_ in starts]
        self._barg = [0] * len(blocks)
        self._dirty = set(range(len(blocks)))
        self.n_keys = m
        self._best = None

    def _plan(self, j: int, rows: np.ndarray, lo: np.ndarray | None):  # type: ignore[no-untyped-def]
        """Block ``j``'s columns after ``rows`` (low parts ``lo``, ``(2, m)`` or ``None``):
        ``(merged, |VAL| sum before and after at the keys of rows, new VAL, low parts to
        set)``. Changes nothing; raises ``ValueError`` on a negative count."""
        a, b = self._a, self._b
        base, n = self._blocks[j], self._sizes[j]
        m = rows.shape[1]
        rk = rows[KEY]
        pos = base[KEY, :n].searchsorted(rk)
        hit = base[KEY].take(pos) == rk  # index n is padding (+inf)
        old = base[W1:VAL].take(pos, axis=1)  # at a fresh key: the next key's column, zeroed below
        nhit = int(np.count_nonzero(hit))
        if nhit < m:
            old *= hit
        new = old + rows[W1:]
        if (new[2:] < 0.0).any():
            raise ValueError("apply_sorted would leave a negative event count")
        hw, dw, sw = old[:2], rows[W1:C1], new[:2]
        nlo = None
        if self._lo or lo is not None or (sw - hw != dw).any() or (sw - dw != hw).any():
            # some sum is not exact, or low parts are involved: exact rebuild where needed
            bb = sw - hw
            err = (hw - (sw - bb)) + (dw - bb)
            lo_old = self._lo_of(rk)
            nlo = np.zeros_like(sw)
            slow = (err != 0.0) | (lo_old != 0.0)
            if lo is not None:
                slow |= lo != 0.0
            for r, k in zip(*(x.tolist() for x in np.nonzero(slow))):
                extra = lo[r, k] if lo is not None else 0.0
                sw[r, k], nlo[r, k] = _dd_exact(hw[r, k], lo_old[r, k], dw[r, k], extra)
        zero = new[2:] == 0.0
        if zero.any():
            sw[zero] = 0.0
            if nlo is not None:
                nlo[zero] = 0.0
        vals = np.concatenate([hw, sw], axis=1)
        vals = a * vals[0] - b * vals[1]  # VAL at the keys of rows, before then after
        absv = np.abs(vals)
        sold, snew = float(absv[:m].sum()), float(absv[m:].sum())
        los: list[tuple[float, tuple[float, float]]] = []
        if nlo is not None:
            held_lo = self._lo
            for key, l1, l0 in zip(rk.tolist(), nlo[0].tolist(), nlo[1].tolist()):
                if l1 or l0 or key in held_lo:
                    los.append((key, (l1, l0)))
        # the merged columns: the block's, less the changed ones, plus the changed ones
        # still holding events, in key order
        alive = ~(zero[0] & zero[1])
        nalive = int(np.count_nonzero(alive))
        if nhit == m == nalive:  # only held keys change, none empties: update in place
            return (pos, new), sold, snew, vals[m:], los
        put = np.empty((7, nalive))
        put[LP] = put[VAL] = 0.0  # both recomputed when installed
        if nalive == m:
            put[KEY] = rk
            put[W1:VAL] = new
        else:
            put[KEY] = rk.compress(alive)
            put[W1:VAL] = new.compress(alive, axis=1)
        both = np.concatenate([base[:, :n], put], axis=1)
        if nhit:
            both[KEY][pos.compress(hit) if nhit < m else pos] = _INF
        order = both[KEY].argsort(kind="stable")
        merged = both.take(order[: n + nalive - nhit], axis=1)
        return merged, sold, snew, vals[m:], los

    def _commit(self, j: int, plan) -> None:  # type: ignore[no-untyped-def]
        """Install a plan as block ``j``'s new content (split into blocks when too many)."""
        merged, sold, snew, vnew, los = plan
        # exact-regime bookkeeping from the VAL of the changed keys before and after
        if self._A_ok:
            off = np.fmod(vnew, self._q) != 0.0
            if off.any():
                g = _min_lowbit_exp(vnew.compress(off))
                self._q = min(self._q, math.ldexp(1.0, g))  # type: ignore[arg-type]
                self._lim = _LIM * self._q
            A, lim = self._A, self._lim
            # sums of multiples of q below the limit are exact, and a rounded one is >= it
            if A < lim and sold < lim and snew < lim:
                A = (A - sold) + snew
                self._A, self._A_ok = A, A < lim
            else:
                self._A_ok = False
        for key, pair in los:
            self._set_lo(key, *pair)
        n = self._sizes[j]
        if isinstance(merged, tuple):  # in place: (positions, new W1, W0, C1, C0)
            pos, new = merged
            blk = self._blocks[j]
            for r in range(4):
                blk[W1 + r][pos] = new[r]
            self._resync(blk, n)
            self._dirty.add(j)
            return
        m = merged.shape[1]
        self.n_keys += m - n
        if 0 < m <= self._maxn:
            blk = self._blocks[j]
            blk[:, :m] = merged
            if m < n:
                blk[:, m:n] = _PAD
            self._resync(blk, m)
            self._sizes[j] = m
            self._maxes[j] = blk.item(KEY, m - 1)
            self._dirty.add(j)
            return
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
