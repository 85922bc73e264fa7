"""Sorted batches into SortedPrefixMin: net changes per score, planned block by block, then committed.

:meth:`BulkPart.apply_sorted` takes the net changes of a batch for strictly increasing scores
(weights with optional double-double low parts, and counts), checks them, computes every
touched block's new content without changing anything (a negative count raises here), then
installs the plans right to left, splitting blocks that grew too large and folding small ones
into a neighbour; an empty structure is built from the rows directly. The stream's
``update_many`` and the loading of exported rows reach the numpy core this way.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

import numpy as np

from ._prefix_blocks import (
    _INF,
    _LIM,
    _PAD,
    C0,
    C1,
    KEY,
    LP,
    VAL,
    W0,
    W1,
    BlockLayout,
    _dd_exact,
    _min_lowbit_exp,
    _row_views,
)


class BulkPart(BlockLayout):
    """Applying a sorted batch of net changes to a :class:`~thors_stream._prefix.SortedPrefixMin`."""

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
