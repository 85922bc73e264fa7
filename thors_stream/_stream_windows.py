"""Windows and late labels: how events enter and leave a :class:`~thors_stream.StreamingThors`.

The part of the stream that owns *which* events are held (the tree then answers for
them):

- a **count window** (``window=n``): the last ``n`` labelled events; every update adds one
  and expires the oldest beyond ``n`` (one call into the core);
- a **time window** (``period=p``): events whose time ``t`` satisfies ``t > t_newest - p``;
  an event older than the newest one seen (a *late label*) is held until it falls out of
  the period, one already outside it is not held;
- **no window**: every event is held until :meth:`~WindowsPart.revert` removes it; the
  weight ledger keeps the non-unit weights so that a revert is verified exactly.

Times are seconds or ``datetime`` (a naive one is UTC); see :func:`~thors_stream._validation.check_time`.

>>> from thors_stream import StreamingThors
>>> st = StreamingThors(fn_cost=1, fp_cost=1, period=10)
>>> st.update(0.3, 1, t=100); st.update(0.6, 0, t=95)    # a late label, held
>>> st.update(0.8, 0, t=80)                             # already outside the period
>>> len(st)
2
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import PyCore
from ._queue import CANCELLED
from ._stream_lock import _locked
from ._stream_state import StreamState
from ._validation import (
    check_label,
    check_labels,
    check_score,
    check_scores,
    check_time,
    check_times,
    check_weight,
    check_weighted_costs,
    check_weights,
    period_cutoff,
)

__all__ = ["WindowsPart"]

_NEG_INF = float("-inf")


def _label(y: Any) -> bool:
    """A label as a bool, by the package's one rule (:func:`~thors_stream._validation.check_label`:
    ``False``/``True`` or a real number equal to 0 or 1; ``"1"``, ``2``, ``1+0j``, ``None``
    are a ``ValueError``). O(1)."""
    return check_label(y) == 1


class WindowsPart(StreamState):
    """The windows and late labels of :class:`~thors_stream.StreamingThors` (see the module
    docstring): ``update``, ``revert`` and ``update_many``, the slow (validating) paths
    behind the compiled core's fast ones."""

    @_locked
    def update(self, score: float, y: Any, w: float = 1.0, t: Any = None) -> None:
        """Add one labelled event; with a window, expire what falls out of it.

        ``y`` is a bool or 0/1, ``w`` > 0 a weight (e.g. the event's own cost), ``t``
        the event time (required with ``period``). With ``period``, an event older
        than the newest one (a late label) is held until it falls out of the period,
        and one already outside it is not held. Invalid input raises and leaves the
        object unchanged. O(log n) compiled, O(log n + load) numpy backend.
        """
        s = score if type(score) is float and score - score == 0.0 else check_score(score)
        pos = _label(y)
        if w != 1.0 or type(w) is not float:
            w = check_weight(w)
            if not self._wmin <= w <= self._wmax:
                check_weighted_costs(w, self.fn_cost, self.fp_cost)
        if self._period_s is None:
            if t is not None:
                check_time(t, "t")  # validated, not used without a period
            # ---- hot path: one call into the core adds, queues and expires
            if self.window is not None:
                self._tree.window_push(s, pos, w, self.window)
            else:
                self._tree.add(s, pos, w)
                if w != 1.0:
                    self._ledger.add(s, pos, w)
            self._count_updates(1)
            return
        if t is None:
            raise ValueError("t (the event time) is required when period is set")
        tf = check_time(t, "t")
        if tf < self._last_t:
            self._add_late(s, pos, w, tf)
            self._count_updates(1)
            return
        cutoff = period_cutoff(tf, self._period_s)
        self._tree.time_push(s, pos, w, tf, cutoff)
        self._last_t = tf
        self._count_updates(1)
        self._expire_late(cutoff)

    def _add_late(self, s: float, pos: bool, w: float, tf: float) -> None:
        """An event older than the newest one: held until it falls out of the period."""
        if tf <= period_cutoff(self._last_t, self._period_s):  # type: ignore[arg-type]
            return  # already outside the window: it would expire at once
        self._tree.add(s, pos, w)
        self._arrivals += 1
        self._late.add((tf, self._arrivals, s, int(pos), w))

    def _expire_late(self, cutoff: float) -> None:
        late = self._late
        while late and late[0][0] <= cutoff:
            _, _, s, y, w = late.pop(0)
            self._tree.remove(s, y == 1, w)

    @_locked
    def revert(self, score: float, y: Any, w: float = 1.0) -> None:
        """Remove one held event with this score, label and weight.

        Raises ``KeyError`` (and changes nothing) when no such event is held; the check
        is exact for the score, the label and the weight. With ``window`` the oldest
        identical event leaves; with ``period`` the identical event with the earliest
        time (a late copy if it is older than every queued one). O(log n) without a
        window; O(n) with one (a scan of the expiry queue).
        """
        s = check_score(score)
        pos = _label(y)
        w = check_weight(w)
        label = int(pos)
        col = self._tree.held_at(s)
        if col is None or col[2 + (not pos)] < 1:
            raise KeyError(f"no held event has score {s!r} and label {label}")
        queue = self._queue
        if queue is None:
            unit_held = col[2 + (not pos)] - self._ledger.count_at(s, label)
            if not (self._ledger.holds(s, label, w) if w != 1.0 else unit_held >= 1):
                raise KeyError(self._not_held(s, label, w, col))
            self._tree.remove(s, pos, w)
            if w != 1.0:
                self._ledger.remove(s, label, w)
            return
        qpos = queue.find(s, label, w)
        lpos = next((i for i, e in enumerate(self._late) if e[2:] == (s, label, w)), -1)
        if qpos < 0 and lpos < 0:
            raise KeyError(self._not_held(s, label, w, col))
        if lpos >= 0 and (qpos < 0 or self._late[lpos][0] < queue.time_at(qpos)):
            qpos = -1  # the late copy is the older one
        self._tree.remove(s, pos, w)
        if qpos >= 0:
            queue.cancel(qpos)
        else:
            del self._late[lpos]

    @staticmethod
    def _not_held(s: float, label: int, w: float, col: tuple[float, ...]) -> str:
        held_w, count = (col[0], col[2]) if label else (col[1], col[3])
        return (f"no held event has score {s!r}, label {label} and weight {w!r} "
                f"(held at this score and label: {int(count)} event(s) of total weight {held_w!r})")

    # ---------------------------------------------------------------- batches
    @_locked
    def update_many(self, scores: Any, ys: Any, ws: Any = None, ts: Any = None) -> None:
        """Add a batch of events, in order: the same end state as ``update`` on each.

        Validates the whole batch first (nothing changes on error), then applies the
        net change per distinct score in one pass over the touched blocks.
        O(m log m + touched blocks * load) for a batch of m.
        """
        s = check_scores(scores)
        m = s.shape[0]
        y = check_labels(ys, m, "ys")
        w = check_weights(ws, m, "ws")
        if w is not None:
            check_weighted_costs(w, self.fn_cost, self.fp_cost, "ws")
        t = None
        if ts is not None:
            t = check_times(ts, m, "ts")  # one rule with update's t; not used without a period
            if self._period_s is None:
                t = None
        if self._period_s is None and not isinstance(self._tree, PyCore):
            if m == 0:
                return
            # compiled core: queue, expiry and the tree's change in one call (the tree rebuilt
            # from the batch when it replaces the whole window, by key when the batch repeats
            # few scores, else a radix sort applied leaf by leaf: as count changes by score when
            # every weight is 1); it reads C-contiguous buffers
            # (a strided view, e.g. a[::2], is copied here), labels as bytes, no weights: all 1
            s, y8 = np.ascontiguousarray(s), np.ascontiguousarray(y).view(np.uint8)
            wc = None if w is None else np.ascontiguousarray(w)
            if self.window is not None:
                self._tree.window_push_many(s, y8, wc, self.window)
            else:
                self._tree.add_many(s, y8, wc)
                if wc is not None:
                    self._ledger.add_many(s, y, wc)
            self._count_updates(m)
            return
        w = np.ones(m) if w is None else w
        queue = self._queue
        if self._period_s is not None:
            if t is None:
                raise ValueError("ts (event times) are required when period is set")
            if m and (t[0] < self._last_t or (np.diff(t) < 0).any()):
                # late events among them: the per-event path handles them exactly
                for a, b, c, d in zip(s.tolist(), y.tolist(), w.tolist(), t.tolist()):
                    self.update(a, b, c, t=d)
                return
        if m == 0:
            return
        keys, yy, ww, sign = s, y, w, np.ones(m)
        if queue is not None:
            held = len(queue)
            queue.push_many(s, y.astype(np.uint8), w, t)
            if self.window is not None:
                k = max(0, len(queue) - self.window)
            else:
                self._last_t = float(t[-1])  # type: ignore[index]
                cutoff = period_cutoff(self._last_t, self._period_s)  # type: ignore[arg-type]
                k = queue.count_expired(cutoff)
                self._expire_late(cutoff)
            if k:
                out = queue.pop_many(k)
                live = out[1] != CANCELLED
                if (self.window is not None and k >= held and isinstance(self._tree, PyCore)
                        and self._tree.n_events() == int(live[:held].sum())):
                    # every event held before expires (the tree holds those and nothing else):
                    # the tree is rebuilt from the batch's events that stay
                    self._tree.clear()
                    keys, yy, ww, sign = s[k - held :], y[k - held :], w[k - held :], sign[k - held :]
                else:
                    keys = np.concatenate([s, out[0][live]])
                    yy = np.concatenate([y, out[1][live] == 1])
                    ww = np.concatenate([w, out[2][live]])
                    sign = np.concatenate([sign, -np.ones(int(live.sum()))])
        else:
            self._ledger.add_many(s, y, w)
        # one row per event, sorted by score: the core adds each weight exactly
        order = np.argsort(keys)  # per-event rows: their order within a score does not matter
        keys, yy, sw, sign = keys[order], yy[order], (sign * ww)[order], sign[order]
        zero = np.zeros(keys.shape[0])
        self._tree.apply_sorted(np.ascontiguousarray(keys), np.where(yy, sw, zero), np.where(yy, zero, sw),
                                np.where(yy, sign, zero), np.where(yy, zero, sign))
        self._count_updates(m)

