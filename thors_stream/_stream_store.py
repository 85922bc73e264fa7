"""Checkpoints, pickling and merging of :class:`~thors_stream.StreamingThors`.

Everything that moves a summary's state in or out of the process: ``save``/``load``
(atomic, optionally HMAC-signed files, see :mod:`thors_stream.checkpoint`), pickling
(``__getstate__``/``__setstate__``, also used by ``copy.deepcopy``), and ``merge``/``merged``
(the multiset union of shards). The state written is what the summary holds: per-score rows
(exact double-double sums), the expiry queue, late events and the weight ledger.

>>> import pickle
>>> from thors_stream import StreamingThors
>>> st = StreamingThors(fn_cost=5, fp_cost=1, window=3)
>>> st.update_many([0.2, 0.9, 0.4], [0, 1, 0])
>>> back = pickle.loads(pickle.dumps(st))
>>> back.get() == st.get(), back.held()[0].tolist()
(True, [0.2, 0.4, 0.9])
"""

from __future__ import annotations

import datetime as dt
import math
import os
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from ._backend import export_lo, export_rows, load_rows, make_core, resolve_backend
from ._core import queue_of
from ._ledger import WeightLedger
from ._queue import CANCELLED
from ._stream_lock import _locked, holding
from ._stream_state import StreamState
from ._validation import weight_range

__all__ = ["StorePart"]

_S = TypeVar("_S", bound="StorePart")


class StorePart(StreamState):
    """Checkpoints, pickling and merging of :class:`~thors_stream.StreamingThors` (see the
    module docstring)."""

    def _core_arrays(self) -> dict[str, Any]:
        """What the core holds, as arrays: per-score rows, their double-double low parts
        and the expiry queue's records (oldest first)."""
        return {
            "rows": export_rows(self._tree), "lo": export_lo(self._tree),
            "queue": self._queue.arrays() if self._queue is not None else None,
        }

    def _restore_core(self, a: float, b: float, rows: np.ndarray, lo: np.ndarray | None,
                      queue: tuple[np.ndarray, ...] | None) -> None:
        """Replace the core by one holding ``rows`` (+ ``lo``) and the queue records."""
        old = self.__dict__.get("_tree")
        core = make_core(a, b, self.backend, self._load, self._ring)
        load_rows(core, rows, lo)
        q = queue_of(core)
        if q is not None and queue is not None and queue[0].shape[0]:
            q.push_many(*queue)
        core.n_updates = old.n_updates if old is not None else 0
        self._tree, self._queue = core, q
        self._bind_fast_paths()

    def __getstate__(self) -> dict[str, Any]:
        # the core told too: a compiled fast-path update would otherwise land between the
        # reads of the tree and of the queue, and the snapshot would mix two moments
        with holding(self):
            return self._getstate()

    def _getstate(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_tree"], state["_queue"], state["_lock"]
        for name in ("update", "revert", "get"):
            state.pop(name, None)
        state["n_updates"] = self.n_updates
        state["_core"] = self._core_arrays()
        state["_tree_coefs"] = (self._tree._a, self._tree._b)
        state["_np_cache"] = None
        state["_np_constraints"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        a, b = state.pop("_tree_coefs")
        core = state.pop("_core", None)
        if core is None:  # a pickle from before the B+-tree core
            queue = state.pop("_queue", None)
            core = {"rows": state.pop("_tree"), "lo": None, "queue": queue.arrays() if queue is not None else None}
            for name in ("_n", "_w1", "_w0"):
                state.pop(name, None)
        for name, default in (("max_fpr", None), ("max_fnr", None), ("confidence", 0.95), ("_np_cache", None),
                              ("_np_constraints", {})):
            state.setdefault(name, default)  # pickles from before Neyman-Pearson mode
        n_updates = state.pop("n_updates", 0)
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._wmin, self._wmax = weight_range(self.fn_cost, self.fp_cost)
        self._np_mode = self.max_fpr is not None or self.max_fnr is not None
        self._plain = not self._np_mode and self.class_prior is None
        self._ring = 1 if self.window is not None else (2 if self._period_s is not None else 0)
        self.__dict__.setdefault("_ledger", WeightLedger())
        self.backend = resolve_backend(self.backend if self.backend != "c" else "auto")
        self._restore_core(a, b, core["rows"], core["lo"], core["queue"])
        self.n_updates = n_updates

    # ---------------------------------------------------------------- merging
    def merge(self, other: StorePart) -> None:
        """Add every event ``other`` holds to this summary (a multiset union).

        The basis of sharded loops: each shard keeps its own (windowed) summary and a
        coordinator merges their current contents into an unwindowed one. Costs and
        ``class_prior`` must be equal; ``self`` must have no window (an expiry order
        across shards is not defined). ``other`` is not changed. The Neyman-Pearson
        settings are a read-time choice and need not match: ``self``'s apply to the union. O(m log n) for m
        distinct scores in ``other`` (O(n + m) bulk merge when m is large).

        Examples
        --------
        >>> from thors_stream import StreamingThors
        >>> a = StreamingThors(fn_cost=5, fp_cost=1, window=100)
        >>> b = StreamingThors(fn_cost=5, fp_cost=1, window=100)
        >>> a.update(0.2, 0); a.update(0.7, 1); b.update(0.4, 0)
        >>> hub = StreamingThors.merged([a, b])
        >>> hub.get(), len(hub)
        (0.4, 3)
        """
        if not isinstance(other, StorePart):
            raise TypeError(f"can only merge a StreamingThors, got {type(other).__name__}")
        mine = (self.fn_cost, self.fp_cost, self.class_prior)
        theirs = (other.fn_cost, other.fp_cost, other.class_prior)
        if mine != theirs:
            raise ValueError(
                f"cannot merge summaries with different (fn_cost, fp_cost, class_prior): {mine} vs {theirs}"
            )
        if self._queue is not None:
            raise ValueError(
                "merge into a summary without window/period (expiry order across summaries is undefined); "
                "use StreamingThors.merged([...]) to combine windowed shards"
            )
        # a snapshot of the other summary under its own lock (its core told, so that no
        # fast-path update lands between the reads), then the union under ours (never both
        # locks at once: two threads merging each way cannot deadlock)
        with holding(other):
            rows, lo = export_rows(other._tree), export_lo(other._tree)
            ledger = WeightLedger()
            if other._queue is None:
                ledger.update(other._ledger)
            else:  # the weights of the events merged in, so that revert can still verify them
                s, y, w = other._queue.arrays()[:3]
                live = y != CANCELLED
                ledger.add_many(s[live], y[live] == 1, w[live])
                for _, _, ls, ly, lw in other._late:
                    if lw != 1.0:
                        ledger.add(ls, ly, lw)
            n_updates = other.n_updates
        self._merge_rows(rows, lo, ledger, n_updates)

    @_locked
    def _merge_rows(self, rows: np.ndarray, lo: np.ndarray, ledger: WeightLedger, n_updates: int) -> None:
        if rows.shape[1]:
            load_rows(self._tree, rows, lo)
        self._ledger.update(ledger)
        self._count_updates(n_updates)

    @classmethod
    def merged(cls: type[_S], summaries: Sequence[StorePart], *, backend: str = "auto") -> _S:
        """A new unwindowed summary holding the union of ``summaries``' held events
        (costs, prior, default threshold and Neyman-Pearson settings of the first)."""
        if not summaries:
            raise ValueError("merged() needs at least one summary")
        first = summaries[0]
        make: Any = cls  # StreamingThors: its constructor takes the settings
        out: _S = make(fn_cost=first.fn_cost, fp_cost=first.fp_cost, class_prior=first.class_prior,
                       default_threshold=first.default_threshold, backend=backend, max_fpr=first.max_fpr,
                       max_fnr=first.max_fnr, confidence=first.confidence)
        for s in summaries:
            out.merge(s)
        return out

    # ---------------------------------------------------------------- checkpoints
    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> None:
        """Write a checkpoint of the whole state, atomically (see :mod:`thors_stream.checkpoint`).

        A crash at any moment leaves the previous file or the new one, never a broken
        one. With ``key`` (bytes) the file is signed with HMAC-SHA256 and only loads
        with the same key. Per-score weights are written as the exact sums of the held
        events (recomputed from the expiry queue or the weight ledger where the running
        sums drifted, outside the exactness condition), so every checkpoint loads. O(n).

        Examples
        --------
        >>> import os, tempfile
        >>> from thors_stream import StreamingThors
        >>> st = StreamingThors(fn_cost=5, fp_cost=1, window=10)
        >>> st.update_many([0.1, 0.5, 0.9], [0, 0, 1])
        >>> path = os.path.join(tempfile.mkdtemp(), "st.ckpt")
        >>> st.save(path)
        >>> back = StreamingThors.load(path)
        >>> back.get() == st.get(), len(back)
        (True, 3)
        """
        from .checkpoint import write_checkpoint

        write_checkpoint(path, "StreamingThors", *self._checkpoint_parts(), key=key)

    @_locked
    def _checkpoint_parts(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        """``(params, state, arrays)`` describing this object for the checkpoint format."""
        rows = export_rows(self._tree)
        lo = export_lo(self._tree)
        w_tot = self._repair_rows(rows, lo)
        arrays = {name: rows[i] for i, name in enumerate(("keys", "w1", "w0", "c1", "c0"))}
        if lo.any():  # double-double low parts: only when some per-score sum needs them
            arrays["w1_lo"], arrays["w0_lo"] = lo[0], lo[1]
        if len(self._ledger):
            for name, arr in zip("sywc", self._ledger.arrays()):
                arrays[f"ledger_{name}"] = arr
        if self._queue is not None:
            q = self._queue.arrays()
            for name, a in zip(("queue_s", "queue_y", "queue_w", "queue_t"), q):
                arrays[name] = a
        late = list(self._late)
        arrays["late_t"] = np.array([e[0] for e in late], dtype=np.float64)
        arrays["late_seq"] = np.array([e[1] for e in late], dtype=np.int64)
        arrays["late_s"] = np.array([e[2] for e in late], dtype=np.float64)
        arrays["late_y"] = np.array([e[3] for e in late], dtype=np.uint8)
        arrays["late_w"] = np.array([e[4] for e in late], dtype=np.float64)
        params = {
            "fn_cost": self.fn_cost, "fp_cost": self.fp_cost, "window": self.window,
            "period_seconds": self._period_s, "period_is_timedelta": isinstance(self.period, dt.timedelta),
            "class_prior": self.class_prior, "default_threshold": self.default_threshold, "load": self._load,
            "max_fpr": self.max_fpr, "max_fnr": self.max_fnr, "confidence": self.confidence,
        }
        state = {
            "n": self._n, "w1": w_tot[0], "w0": w_tot[1], "last_t": self._last_t, "arrivals": self._arrivals,
            "n_updates": self.n_updates, "tree_coefs": [self._tree._a, self._tree._b],
        }
        return params, state, arrays

    def _repair_rows(self, rows: np.ndarray, lo: np.ndarray) -> tuple[float, float]:
        """Make the per-score weights in ``rows``/``lo`` (in place) the exact sums of the held
        events wherever the running double-double sums drifted (only possible outside the
        exactness condition), and return the class totals. The events are known one by one:
        the expiry queue and late events, or, without a window, the weight ledger plus
        unit-weight events. O(n), plus ``math.fsum`` over the scores that drifted."""
        keys, n = rows[0], rows.shape[1]
        per: list[list[list[float]]] | None = None
        if self._queue is not None:
            s, y, w = self._queue.arrays()[:3]
            live = y != CANCELLED
            s, y, w = s[live], y[live], w[live]
            if self._late:
                s = np.concatenate([s, [e[2] for e in self._late]])
                y = np.concatenate([y, [e[3] for e in self._late]])
                w = np.concatenate([w, [e[4] for e in self._late]])
            idx = np.searchsorted(keys, s)
        else:
            ls, ly, lw, lc = self._ledger.arrays()
            s, y, w = np.repeat(ls, lc), np.repeat(ly, lc), np.repeat(lw, lc)
            idx = np.searchsorted(keys, s)
            recorded = {cls: np.bincount(idx[y == cls], minlength=n) for cls in (0, 1)}
            for cls, row in ((1, 3), (0, 4)):  # unit-weight events: the rest of each class count
                units = rows[row] - recorded[cls]
                k = np.flatnonzero(units > 0)
                s = np.concatenate([s, np.repeat(keys[k], units[k].astype(np.int64))])
                y = np.concatenate([y, np.full(int(units[k].sum()), cls, dtype=y.dtype)])
                w = np.concatenate([w, np.ones(int(units[k].sum()))])
            idx = np.searchsorted(keys, s)
        for cls, row in ((1, 1), (0, 2)):
            m = y == cls
            approx = np.bincount(idx[m], weights=w[m], minlength=n)
            have = rows[row] + lo[row - 1]
            drift = np.flatnonzero(np.abs(approx - have) > 1e-12 * np.maximum(np.abs(approx), np.abs(have)))
            if drift.shape[0]:
                if per is None:
                    per = [[[] for _ in range(n)], [[] for _ in range(n)]]
                    for i, c, v in zip(idx.tolist(), y.tolist(), w.tolist()):
                        per[c][i].append(v)
                for k in drift.tolist():
                    hi = math.fsum(per[cls][k])
                    rows[row][k], lo[row - 1][k] = hi, math.fsum([*per[cls][k], -hi])
        return (math.fsum([*rows[1].tolist(), *lo[0].tolist()]), math.fsum([*rows[2].tolist(), *lo[1].tolist()]))

    @classmethod
    def load(cls: type[_S], path: str | os.PathLike[str], *, backend: str = "auto", key: bytes | None = None) -> _S:
        """Read a checkpoint written by :meth:`save`. O(n).

        Refuses with ``ValueError`` naming the file and the problem, before building
        anything: a path that is not a regular file (a FIFO, directory or device is not
        read), a corrupt, truncated, foreign or newer-version file, and any state whose
        invariants do not hold (see :mod:`thors_stream._checkpoint_check`: a recomputed
        checksum over an inconsistent state is refused too). ``key``: the HMAC-SHA256
        key the file was written with (see :mod:`thors_stream.checkpoint`); a keyed file
        needs it, and with a key an unkeyed file is refused.
        """
        from .checkpoint import read_checkpoint_full

        resolve_backend(backend)  # a bad argument is the caller's error, not the file's
        ck = read_checkpoint_full(path, "StreamingThors", key=key)
        return cls._from_checkpoint_parts(ck.params, ck.state, ck.arrays, backend=backend, where=ck.where,
                                          legacy=ck.revision < 2)

    @classmethod
    def _from_checkpoint_parts(
        cls: type[_S], params: dict[str, Any], state: dict[str, Any], arrays: dict[str, np.ndarray], *,
        backend: str = "auto", where: str = "checkpoint", legacy: bool = False,
    ) -> _S:
        """Build a summary from validated checkpoint parts (``ValueError`` naming ``where``
        for any broken invariant, checked before anything is built). ``legacy``: parts of a
        file without the header ``revision`` field (a missing weight ledger is rebuilt)."""
        from ._checkpoint_check import check_stream_parts

        spec = check_stream_parts(params, state, arrays, where=where, legacy=legacy)
        try:
            make: Any = cls  # StreamingThors: its constructor takes the settings
            st: _S = make(**spec.kwargs, backend=backend)
            st._restore_core(*spec.coefs, spec.rows, spec.lo, spec.queue)
            for entry in spec.ledger:
                st._ledger.add(*entry)
            st._late.update(spec.late)
            st._last_t, st._arrivals = spec.last_t, spec.arrivals
            st.n_updates = spec.n_updates
        except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} could not be restored: {exc!r}") from None
        if st._tree.n_keys != spec.rows.shape[1] or st._n != spec.n:
            raise ValueError(f"{where} could not be restored: the core holds {st._tree.n_keys} scores and {st._n} "
                             f"events, the file {spec.rows.shape[1]} and {spec.n}")
        return st

