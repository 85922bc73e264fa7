"""The blocks under SortedPrefixMin: their row layout, the exact float arithmetic, the layout operations.

A block is one ``(7, 2 * load)`` float64 array whose rows are :data:`KEY` ... :data:`VAL`
(see :mod:`thors_stream._prefix`, which describes the structure and what its answers depend
on). This module holds the row indices and padding, the error-free double-double sums and the
power-of-two grid of the exact regime, and :class:`BlockLayout`: the attributes a
:class:`~thors_stream._prefix.SortedPrefixMin` holds, declared once, and the operations that
change its layout (allocating the top level, inserting, deleting, splitting and merging
blocks, recomputing VAL and the local prefixes, the exact-regime bookkeeping, the low parts).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

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
    """``(round(x), round(x - round(x)))`` for ``x`` the exact sum of ``terms``, renormalised so
    that ``hi == hi + lo`` (when ``x - round(x)`` does not fit a double its rounding can make
    ``hi + lo`` a tie that rounds away from ``hi``; the pair then moves to the same value's other
    form, exactly)."""
    try:
        hi = math.fsum(terms)
        lo = math.fsum((*terms, -hi))
    except OverflowError:  # the sum leaves the float range: no exactness to keep
        return sum(terms), 0.0
    h = hi + lo
    if h != hi:  # (Fast2Sum: |hi| >= |lo|, so the new low part is exact)
        lo = (hi - h) + lo
        hi = h
    return hi, lo


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


if TYPE_CHECKING:
    FloatView = memoryview[float]  # a float64 row, read and written item by item
else:  # (memoryview is not subscriptable at run time before Python 3.12: get_type_hints resolves this)
    FloatView = memoryview


def _row_views(blk: np.ndarray) -> tuple[FloatView, ...]:
    """Memoryviews of a block's float64 rows (scalar reads and writes without numpy's
    per-item overhead). O(rows)."""
    return tuple(cast("FloatView", memoryview(cast(Any, row))) for row in blk)



class BlockLayout:
    """The attributes of a :class:`~thors_stream._prefix.SortedPrefixMin` (set by its
    ``__init__``) and the operations on its layout, shared by its parts."""

    _a: float  # pos_coef
    _b: float  # neg_coef
    _load: int
    _maxn: int  # keys per block at most
    _cap: int  # columns per block: at least one padding column always remains
    _blocks: list[np.ndarray]
    _keyrows: list[np.ndarray]  # per block, its KEY row
    _lprows: list[np.ndarray]  # per block, its LP row
    _mvs: list[tuple[FloatView, ...]]  # per block, its seven rows as memoryviews
    _sizes: list[int]
    _maxes: list[float]
    _barg: list[int]
    _dirty: set[int]
    _lo: dict[float, tuple[float, float]]  # key -> (lo1, lo0), only when not both 0
    _best: tuple[float, float] | None
    _S: np.ndarray  # block sums, prefix form (see _alloc_top)
    _bmin: np.ndarray  # per block, its minimum local prefix
    _E: np.ndarray
    _E_head: np.ndarray
    _C: np.ndarray
    _kcap: int
    _q: float  # exact regime: the grid every VAL lies on
    _lim: float  # _LIM * q
    _A: float  # sum |VAL| (exact while below the limit)
    _A_ok: bool
    _updates: int
    n_keys: int

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

    def _set_lo(self, key: float, l1: float, l0: float) -> None:
        if l1 or l0:
            self._lo[key] = (l1, l0)
        else:
            self._lo.pop(key, None)
