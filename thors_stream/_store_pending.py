"""PendingStore: pending decisions keyed by the user's key, the owner's log and checkpoints, batched commits.

The storage under :class:`~thors_stream.store.DecisionLoop` and river's
``ThorsClassifier(store=...)``: decisions put, peeked and taken (one row of one B-tree each,
buffered until the commit), the horizon (a decision past it is unmatched, and swept at
commits), the log of the events the owner learned with its checkpoints (what a reopening
replays), and the commits. Opening the file is :mod:`thors_stream._store_sqlite`; users import
from :mod:`thors_stream.store`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sqlite3
import struct
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ._keys import db_key, decode_key, encode_key
from ._store_sqlite import _CHUNK, _INSERT, _LOG, _LOG_ROW, _TAKE, _X, _extra, _where, connect, lock
from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _show, check_time, real_number

_T = TypeVar("_T")

DEFAULT_COMMIT_EVERY = 1_000
"""Operations (decisions, labels) between two commits, at most."""
DEFAULT_COMMIT_INTERVAL = 0.25
"""Seconds between two commits, at most (checked at every operation)."""
DEFAULT_CHECKPOINT_EVERY = 100_000
"""Learned events between two checkpoints of the thresholding state, at most (what a restart replays)."""

_NAN = math.nan
_NO_SEGMENT = object()


class Pending(NamedTuple):
    """One pending decision, as :meth:`PendingStore.take` returns it."""

    key: Any
    """The key (as the label gave it; equal to the decision's key)."""
    score: float
    """The decision score stored: the score, or the cost margin."""
    fn_cost: float
    fp_cost: float
    segment: Any
    """The decision's segment (``None`` when the store has none)."""
    t: float
    """The decision time, seconds."""
    model_labels: int
    """Labels the model had learned when it scored the event."""
    seq: int
    """The decision's number (0 for the first decision the store took)."""


Pending.__module__ = "thors_stream.store"  # its public home (pickles and reprs name it there)


def _check_commit_settings(commit_every: Any, commit_interval: Any, checkpoint_every: Any) -> tuple[int, float, int]:
    if isinstance(commit_every, bool) or not isinstance(commit_every, int) or commit_every < 1:
        raise ValueError(f"commit_every must be an integer >= 1, got {commit_every!r}")
    ci = real_number(commit_interval, "commit_interval")
    if not 0.0 <= ci <= 1.0:
        raise ValueError(f"commit_interval must lie in [0, 1] seconds, got {commit_interval!r}")
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be an integer >= 1, got {checkpoint_every!r}")
    return commit_every, ci, checkpoint_every


def _check_horizon(age: Any) -> tuple[int | None, float | None]:
    """``(count horizon, time horizon in seconds)`` of ``max_pending_age``."""
    if age is None:
        return None, None
    if isinstance(age, dt.timedelta):
        s = age.total_seconds()
        if not s > 0:
            raise ValueError(f"max_pending_age must be a positive duration, got {age!r}")
        return None, s
    if isinstance(age, bool) or not isinstance(age, (int, np.integer)) or age < 1:
        raise ValueError(f"max_pending_age must be an int (decisions) >= 1 or a timedelta (time), got {age!r}; "
                         "for a time horizon pass datetime.timedelta(days=...)")
    return int(age), None


class PendingStore:
    """Pending decisions on disk, keyed by the user's key, plus the log and checkpoints of a
    thresholding state: the storage under :class:`DecisionLoop` (see :mod:`thors_stream.store`
    for the file, commits, durability, the lock, the horizon and unknown keys).

    Use :class:`DecisionLoop` for a whole loop. This class is for an owner that keeps its
    own thresholding state: it stores decisions (:meth:`put`), hands them back once
    (:meth:`take`), records the events its owner learned (:meth:`log`), and asks the owner
    for a checkpoint of its state (``state_fn``, called at a commit once ``checkpoint_every``
    events were logged, and at ``close``). Operations are grouped into atomic commits:
    call :meth:`tick` once an operation is complete (it commits when one is due), or
    :meth:`commit`. :meth:`restore` returns what the owner needs to resume.

    Parameters
    ----------
    path
        The SQLite file (created when missing or empty).
    owner, settings
        What uses the store and with which settings (a JSON object), written at creation; a
        store reopened by another owner or with other settings is refused, naming both.
    max_pending_age
        The horizon: an ``int`` (decisions), a ``timedelta`` (time), or ``None`` (none).
    on_unknown
        ``"count"`` or ``"raise"``: what :meth:`take` does with a key it does not hold.
    commit_every, commit_interval, checkpoint_every
        Operations and seconds between commits, at most; logged events between checkpoints.
    synchronous
        ``"NORMAL"`` (default) or ``"FULL"`` (see :mod:`thors_stream.store`).
    cache_mb
        SQLite's page cache, MiB (the memory the store may use beyond Python's objects).

    Complexity
    ----------
    :meth:`put`: O(1) in memory until the commit, then O(log n) on disk for ``n`` pending
    decisions (amortised over the batch); :meth:`take`: O(log n); a commit: O(batch log n)
    (with a horizon, plus a sweep over O(batch) keys); memory: the uncommitted batch plus
    ``cache_mb``, whatever ``n``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "pending.sqlite")
    >>> with PendingStore(path) as store:
    ...     store.put("tx-1", 0.83, t=0.0)
    ...     store.put(("card", 7), 0.12, t=1.0)
    ...     store.take("tx-1").score, store.take("tx-9"), store.pending, store.unmatched
    (0.83, None, 1, 1)
    >>> with PendingStore(path) as store:        # reopened: what was committed is there
    ...     store.take(("card", 7)).score, store.matched, store.pending
    (0.12, 2, 0)
    """

    def __init__(self, path: str | os.PathLike[str], *, owner: str = "PendingStore",
                 settings: dict[str, Any] | None = None, max_pending_age: int | dt.timedelta | None = None,
                 on_unknown: str = "count", commit_every: int = DEFAULT_COMMIT_EVERY,
                 commit_interval: float = DEFAULT_COMMIT_INTERVAL, checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
                 synchronous: str = "NORMAL", cache_mb: int = 32) -> None:
        if on_unknown not in ("count", "raise"):
            raise ValueError(f"on_unknown must be 'count' or 'raise', got {on_unknown!r}")
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if isinstance(cache_mb, bool) or not isinstance(cache_mb, int) or cache_mb < 1:
            raise ValueError(f"cache_mb must be an integer >= 1, got {cache_mb!r}")
        self.commit_every, self.commit_interval, self.checkpoint_every = _check_commit_settings(
            commit_every, commit_interval, checkpoint_every)
        self._age_n, self._age_s = _check_horizon(max_pending_age)
        self.max_pending_age = max_pending_age
        self.on_unknown = on_unknown
        self.owner = owner
        self.settings = {} if settings is None else dict(settings)
        try:
            settings_json = json.dumps(self.settings, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"settings must be a JSON object of finite numbers, strings, lists: {exc}") from None
        self.path = os.fspath(path)
        self._where = _where(self.path)
        self.state_fn: Any = None
        self._closed = True
        self._lock_fd, self._flock = lock(self.path, self._where)
        try:
            self._conn, meta = connect(self.path, self._where, flock=self._flock, owner=owner,
                                       settings=self.settings, settings_json=settings_json,
                                       synchronous=synchronous, cache_mb=cache_mb)
        except BaseException:
            os.close(self._lock_fd)
            raise
        newest = meta["newest_t"]
        self._next_seq: int = meta["next_seq"]
        self._newest_t: float = -math.inf if newest is None else newest
        self._n_labels: int = meta["n_labels"]
        self._matched: int = meta["matched"]
        self._unmatched: int = meta["unmatched"]
        self._evicted: int = meta["evicted"]
        self._pending: int = meta["pending"]
        self._n_logged: int = meta["n_logged"]
        self._n_checkpoints: int = meta["n_checkpoints"]
        self._closed = False
        # interrupts and failures part-way: _busy while an owner's operation runs (an ordinary
        # error clears it: every operation checks its input before it changes anything), _torn
        # from the start of a commit until the batch and the counters agree; either one left
        # set (a KeyboardInterrupt, a failed write) makes close() roll back to the last commit,
        # as after a crash, and the store refuse every operation until then
        self._busy = False
        self._torn = False
        self._buf: dict[Any, tuple[Any, ...]] = {}  # decisions not yet written: lookup value -> row
        self._logbuf: list[tuple[Any, ...]] = []
        self._ops_base = self._next_seq + self._n_labels  # operations so far, at the last commit
        self._sweep_at: Any = None  # the key the horizon's sweep goes on after (None: from the first)
        self._last_commit = time.monotonic()
        self._seg_enc: dict[Any, str] = {}
        self._seg_dec: dict[str, Any] = {}
        self._conn.execute("BEGIN IMMEDIATE")


    # ---------------------------------------------------------------- counters
    @property
    def matched(self) -> int:
        """Labels that found their pending decision."""
        return self._matched

    @property
    def unmatched(self) -> int:
        """Labels that found none (unknown key, already labelled, or evicted)."""
        return self._unmatched

    @property
    def evicted(self) -> int:
        """Pending decisions dropped by the horizon (swept at commits, or met by a label)."""
        return self._evicted

    @property
    def pending(self) -> int:
        """Pending decisions held (a decision past the horizon is held until the sweep reaches it).
        O(1) after a commit; else O(b log n) for ``b`` uncommitted decisions (a key decided
        again before the commit is looked up on disk)."""
        return self._pending + len(self._buf) - self._redecided()

    def _redecided(self) -> int:
        """Uncommitted decisions whose key also has a decision on disk (counted twice in ``pending``)."""
        if self._closed or not self._buf:
            return 0
        wanted = list(self._buf)
        n = 0
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i:i + _CHUNK]
            n += self._conn.execute(f"SELECT count(*) FROM pending WHERE k IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchone()[0]
        return int(n)

    @property
    def n_decided(self) -> int:
        """Decisions stored so far (a key decided twice counts twice)."""
        return self._next_seq

    @property
    def n_labels(self) -> int:
        """Labels taken so far (matched or not)."""
        return self._n_labels

    @property
    def n_checkpoints(self) -> int:
        """Checkpoints of the owner's state written so far."""
        return self._n_checkpoints

    @property
    def newest_t(self) -> float:
        """The newest decision time stored (``-inf`` before any)."""
        return self._newest_t

    def counters(self) -> dict[str, int]:
        """The counters in one dict (``matched``, ``unmatched``, ``evicted``, ``pending``,
        ``n_decided``, ``n_labels``, ``n_checkpoints``)."""
        return {"matched": self._matched, "unmatched": self._unmatched, "evicted": self._evicted,
                "pending": self.pending, "n_decided": self._next_seq, "n_labels": self._n_labels,
                "n_checkpoints": self._n_checkpoints}

    def __len__(self) -> int:
        return self.pending

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"PendingStore({self.path!r}, {state}, pending={self.pending}, matched={self._matched}, "
                f"unmatched={self._unmatched}, evicted={self._evicted})")

    # ---------------------------------------------------------------- decisions
    def _segment_text(self, segment: Any) -> str | None:
        if segment is _NO_SEGMENT:
            return None
        try:
            return self._seg_enc[segment]
        except KeyError:
            pass
        except TypeError:
            raise TypeError(f"segment must be hashable, got {_show(segment)}") from None
        try:
            text = json.dumps(encode_key(segment), separators=(",", ":"), allow_nan=True)
        except TypeError:
            raise TypeError(f"segments must be str, int, float, bool, bytes, None or tuples of these, got "
                            f"{_show(segment)}") from None
        if len(self._seg_enc) < 100_000:
            self._seg_enc[segment] = text
        return text

    def _segment_of(self, text: str | None) -> Any:
        if text is None:
            return None
        try:
            return self._seg_dec[text]
        except KeyError:
            pass
        try:
            seg = decode_key(json.loads(text), "segment", self._where)
        except ValueError:
            raise ValueError(f"{self._where} is invalid: a stored segment is {text[:80]!r}") from None
        if len(self._seg_dec) < 100_000:
            self._seg_dec[text] = seg
        return seg

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self._where} is closed")
        if self._torn:
            raise ValueError(f"{self._where}: a commit was interrupted or failed part-way; close it (what was not "
                             "committed is rolled back, as after a crash) and open it again")

    def _check_whole(self) -> None:
        """:meth:`_check_open`, and refused after an owner's operation that was interrupted (see
        ``_busy``): what an owner calls before it changes anything of its own."""
        self._check_open()
        if self._busy:
            raise ValueError(f"{self._where}: an operation was interrupted part-way; close it (what was not "
                             "committed is rolled back, as after a crash) and open it again")

    def _as_whole(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``fn(*args, **kwargs)``, an owner's operation, as a whole (see ``_busy``): refused after
        one that was interrupted; marked busy while it runs, the mark cleared when it returns or
        raises an ordinary error (each operation checks its input before it changes anything)."""
        self._check_whole()
        self._busy = True
        try:
            out = fn(*args, **kwargs)
        except Exception:
            self._busy = False
            raise
        self._busy = False
        return out

    def put(self, key: Hashable, score: float, *, fn_cost: float = 1.0, fp_cost: float = 1.0,
            segment: Any = _NO_SEGMENT, t: Any = None, model_labels: int = 0) -> None:
        """Store a pending decision under ``key`` (replacing one pending under an equal key:
        the decision is then the newest). ``score``: the decision score; ``fn_cost``/``fp_cost``
        the event's costs; ``segment`` its segment (any key-like value; omit for none); ``t``
        its time (seconds or a ``datetime``; default now); ``model_labels`` the labels the
        model had learned. A bad value raises naming it, before anything changes. O(1) until
        the commit (then O(log n))."""
        self._check_open()
        v, kt = db_key(key)
        s = real_number(score, "score")
        fn = real_number(fn_cost, "fn_cost")
        fp = real_number(fp_cost, "fp_cost")
        if not (MIN_WEIGHTED_COST <= fn <= MAX_WEIGHTED_COST and MIN_WEIGHTED_COST <= fp <= MAX_WEIGHTED_COST):
            raise ValueError(f"costs must lie in [2**-960, 2**960], got fn_cost={fn!r}, fp_cost={fp!r}")
        tf = time.time() if t is None else check_time(t)
        if isinstance(model_labels, bool) or not isinstance(model_labels, (int, np.integer)) or \
                not 0 <= model_labels < 2**63:
            raise ValueError(f"model_labels must be an integer >= 0, got {_show(model_labels)}")
        seg = self._segment_text(segment)
        self._put(v, kt, s, tf, _extra(fn, fp, int(model_labels), seg))

    _pack = staticmethod(_extra)

    def _put(self, v: Any, kt: str | None, s: float, tf: float, x: bytes | None) -> None:
        """:meth:`put` with every value checked and encoded (``x``: :func:`_extra`)."""
        seq = self._next_seq
        self._next_seq = seq + 1
        if tf > self._newest_t:
            self._newest_t = tf
        buf = self._buf
        if v in buf:  # as in a dict, an equal key decided again keeps the key it was first stored under
            kt = buf[v][5]
        buf[v] = (v, seq, s, tf, x, kt)

    def _expired(self, seq: int, t: float) -> bool:
        if self._age_n is not None and self._next_seq - 1 - seq > self._age_n:
            return True
        return self._age_s is not None and t < self._newest_t - self._age_s

    def _unknown(self, key: Any, expired: bool) -> None:
        if self.on_unknown == "raise":
            why = ("its decision is past the horizon max_pending_age=" + repr(self.max_pending_age) if expired else
                   "no decision is pending under it (never decided, already labelled, or evicted)")
            raise KeyError(f"unknown key {_show(key)}: {why}; {self._where} holds {self.pending} pending")

    def _pending_of(self, key: Any, seq: int, s: float, t: float, x: Any) -> Pending:
        """A :class:`Pending` from the stored fields (``x``: the costs, labels and segment, or ``None``)."""
        if x is None:
            return Pending(key, s, 1.0, 1.0, None, t, 0, seq)
        fn, fp, nm, seg = self._fields(x)
        return Pending(key, s, fn, fp, self._segment_of(seg), t, nm, seq)

    def _fields(self, x: Any) -> tuple[float, float, int, str | None]:
        """``(fn_cost, fp_cost, model_labels, segment text)`` of a decision's packed fields."""
        if x is None:
            return 1.0, 1.0, 0, None
        try:
            fn, fp, nm = _X.unpack_from(x)
            seg = x[_X.size:].decode() if len(x) > _X.size else None
        except (struct.error, TypeError, UnicodeDecodeError):
            raise ValueError(f"{self._where} is invalid: a pending decision's fields are {x!r}"[:300]) from None
        if not (MIN_WEIGHTED_COST <= fn <= MAX_WEIGHTED_COST and MIN_WEIGHTED_COST <= fp <= MAX_WEIGHTED_COST) \
                or nm < 0:
            raise ValueError(f"{self._where} is invalid: a pending decision holds fn_cost={fn!r}, fp_cost={fp!r}, "
                             f"model_labels={nm!r}")
        return fn, fp, nm, seg

    def peek(self, key: Hashable) -> Pending | None:
        """The decision pending under ``key`` without taking it (``None`` when there is none or
        it is past the horizon). Nothing changes; no counter moves. O(log n)."""
        self._check_open()
        v, _ = db_key(key)
        e = self._buf.get(v)
        if e is None:
            row = self._conn.execute("SELECT k, seq, score, t, x FROM pending WHERE k=?", (v,)).fetchone()
            if row is None:
                return None
            e = row
        if self._expired(e[1], e[3]):
            return None
        return self._pending_of(key, e[1], e[2], e[3], e[4])

    def take(self, key: Hashable) -> Pending | None:
        """The decision pending under ``key``, removed (counted matched); ``None`` when there is
        none, or it is past the horizon (counted unmatched; evicted too when past the horizon),
        or ``KeyError`` with ``on_unknown="raise"`` (nothing changes). O(log n)."""
        self._check_open()
        v, _ = db_key(key)
        e = self._take(v, key)
        return None if e is None else self._pending_of(key, e[0], e[1], e[2], e[3])

    def _take(self, v: Any, key: Any) -> tuple[int, float, float, Any] | None:
        """:meth:`take` of the lookup value ``v`` (the store open): ``(seq, score, t, x)``."""
        conn = self._conn
        e = self._buf.get(v)
        if e is None:
            if self.on_unknown == "count":  # one statement: found and deleted (a decision past the horizon too)
                row = conn.execute(_TAKE, (v,)).fetchone()
                self._n_labels += 1
                if row is None:
                    self._unmatched += 1
                    return None
                self._pending -= 1
                if self._expired(row[0], row[2]):
                    self._evicted += 1
                    self._unmatched += 1
                    return None
                self._matched += 1
                return row  # type: ignore[no-any-return]
            row = conn.execute("SELECT seq, score, t, x FROM pending WHERE k=?", (v,)).fetchone()
            if row is None:
                self._unknown(key, False)
                self._n_labels += 1
                self._unmatched += 1
                return None
            if self._expired(row[0], row[2]):
                self._unknown(key, True)
            conn.execute("DELETE FROM pending WHERE k=?", (v,))
            self._pending -= 1
            out = row
        else:  # from the batch not yet written; an older decision of the key may be on disk
            if self._expired(e[1], e[3]):
                self._unknown(key, True)
            del self._buf[v]
            self._pending -= conn.execute("DELETE FROM pending WHERE k=?", (v,)).rowcount
            out = e[1:5]
        self._n_labels += 1
        if self._expired(out[0], out[2]):
            self._evicted += 1
            self._unmatched += 1
            return None
        self._matched += 1
        return out  # type: ignore[no-any-return]

    def take_many(self, keys: Sequence[Hashable]) -> list[Pending | None]:
        """:meth:`take` for each key in order, with one statement per 1,000 distinct keys on disk
        (a key repeated: its second occurrence finds nothing). With ``on_unknown="raise"``
        every key is checked before anything changes. O(m log n)."""
        self._check_open()
        found = self._take_many([db_key(k)[0] for k in keys], keys)
        return [None if e is None else self._pending_of(k, e[0], e[1], e[2], e[3]) for k, e in zip(keys, found)]

    def _take_many(self, vs: list[Any], keys: Sequence[Any]) -> list[tuple[int, float, float, Any] | None]:
        """:meth:`take_many` of lookup values: ``(seq, score, t, x)`` or ``None`` per key."""
        buf, conn = self._buf, self._conn
        wanted = list(dict.fromkeys(vs))
        if self.on_unknown == "raise":  # a dry run: the first unknown key raises, nothing changed
            seen: dict[Any, tuple[Any, ...]] = {}
            for i in range(0, len(wanted), _CHUNK):
                chunk = wanted[i:i + _CHUNK]
                q = f"SELECT k, seq, score, t, x FROM pending WHERE k IN ({','.join('?' * len(chunk))})"
                for row in conn.execute(q, chunk):
                    seen[row[0]] = row
            avail = set(buf) | set(seen)
            for key, v in zip(keys, vs):
                if v not in avail:
                    self._unknown(key, False)
                e0 = buf.get(v) or seen[v]
                if self._expired(e0[1], e0[3]):
                    self._unknown(key, True)
                avail.discard(v)
        found: dict[Any, tuple[Any, ...]] = {}
        for i in range(0, len(wanted), _CHUNK):  # found and deleted in one statement per chunk
            chunk = wanted[i:i + _CHUNK]
            q = f"DELETE FROM pending WHERE k IN ({','.join('?' * len(chunk))}) RETURNING k, seq, score, t, x"
            for row in conn.execute(q, chunk):
                found[row[0]] = row
        self._pending -= len(found)
        out: list[tuple[int, float, float, Any] | None] = []
        expired = self._expired
        matched = 0
        for v in vs:
            e = buf.pop(v, None)  # the newest decision of the key (an older one on disk was deleted too)
            older = found.pop(v, None)
            if e is None:
                e = older
            if e is None:
                out.append(None)
            elif expired(e[1], e[3]):
                self._evicted += 1
                out.append(None)
            else:
                matched += 1
                out.append(e[1:5])
        self._n_labels += len(vs)
        self._matched += matched
        self._unmatched += len(vs) - matched
        return out

    def keys(self) -> Iterable[Any]:
        """The pending keys, with their types, oldest decision first. O(n log n); for inspection."""
        self._check_open()
        from ._keys import decode_db_key

        rows = {k: (seq, kt) for k, kt, seq in self._conn.execute("SELECT k, kt, seq FROM pending")}
        for v, e in self._buf.items():
            old = rows.get(v)
            rows[v] = (e[1], old[1] if old is not None else e[5])  # (a key decided again keeps its first type)
        return [decode_db_key(v, kt, self._where) for v, (_, kt) in sorted(rows.items(), key=lambda r: r[1][0])]

    # ---------------------------------------------------------------- the owner's state
    def log(self, score: float, y: int, w: float = 1.0, *, t: float | None = None, segment: Any = _NO_SEGMENT,
            model_labels: int = 0) -> None:
        """Record one event the owner learned (its state changed): replayed, in order, after
        the last checkpoint when the store is reopened (:meth:`restore`). O(1) until the commit."""
        self._logbuf.append((score, y, w, _NAN if t is None else t, model_labels, self._segment_text(segment)))
        self._n_logged += 1

    def restore(self) -> tuple[bytes | None, list[tuple[float, int, float, float | None, Any, int]]]:
        """``(checkpoint bytes or None, events logged after it)``: what the owner resumes from.
        The events are ``(score, y, w, t, segment, model_labels)`` in the order logged, each
        checked (finite score, ``y`` 0 or 1, weight in ``(0, 2**960]``, ...): a bad one
        raises ``ValueError`` naming the store. O(checkpoint + logged events)."""
        self._check_open()
        row = self._conn.execute("SELECT n, data FROM checkpoint WHERE id=1").fetchone()
        out: list[tuple[float, int, float, float | None, Any, int]] = []
        for i, n, blob, segs in self._conn.execute("SELECT i, n, data, segs FROM learned ORDER BY i"):
            where = f"{self._where} is invalid: learned events {i}"
            if type(n) is not int or type(blob) is not bytes or n < 1 or len(blob) != n * _LOG.itemsize:
                raise ValueError(f"{where} are not {n!r} packed events"[:300])
            a = np.frombuffer(blob, dtype=_LOG)
            s, y, w, t, nm = a["s"], a["y"], a["w"], a["t"], a["nm"]
            bad = ~(np.isfinite(s) & (y <= 1) & (w > 0.0) & (w <= MAX_WEIGHTED_COST) & (np.isfinite(t) | np.isnan(t))
                    & (nm >= 0))
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                bad_event = (float(s[j]), int(y[j]), float(w[j]), float(t[j]), int(nm[j]))
                raise ValueError(f"{where}: learned event {j} is {bad_event!r}")
            seg_list: list[Any] = [None] * n
            if segs is not None:
                try:
                    seg_list = json.loads(segs)
                except (TypeError, ValueError):
                    seg_list = []
                if not isinstance(seg_list, list) or len(seg_list) != n or \
                        not all(g is None or type(g) is str for g in seg_list):
                    raise ValueError(f"{where}: their segments are not {n} texts")
            for e in zip(s.tolist(), y.tolist(), w.tolist(), t.tolist(), seg_list, nm.tolist()):
                out.append((e[0], e[1], e[2], None if e[3] != e[3] else e[3], self._segment_of(e[4]), e[5]))
        if len(out) != self._n_logged:
            raise ValueError(f"{self._where} is invalid: {len(out)} learned events after the checkpoint, the "
                             f"counter says {self._n_logged}")
        data = None
        if row is not None:
            if type(row[1]) is not bytes:
                raise ValueError(f"{self._where} is invalid: the checkpoint is not a blob")
            data = row[1]
        return data, out

    # ---------------------------------------------------------------- commits
    def tick(self) -> bool:
        """Commit if one is due (``commit_every`` operations, or ``commit_interval`` seconds
        since the last commit); whether it committed. Call it when an operation is complete.
        O(1), or a commit's cost."""
        ops = self._next_seq + self._n_labels - self._ops_base
        if ops >= self.commit_every or (ops and time.monotonic() - self._last_commit >= self.commit_interval):
            self.commit()
            return True
        return False

    def commit(self, *, checkpoint: bool = False) -> None:
        """Write the uncommitted batch in one transaction: the new decisions, the evictions the
        horizon calls for, the events logged and the counters; with ``checkpoint`` (or once
        ``checkpoint_every`` events were logged since the last one) a checkpoint of the owner's
        state (``state_fn()``) replacing the logged events. O(batch log n) (+ the checkpoint)."""
        self._check_open()
        self._torn = True  # (cleared once written: see __init__)
        conn = self._conn
        ops = self._next_seq + self._n_labels - self._ops_base
        if self._buf:
            rows = list(self._buf.values())
            added = conn.executemany(_INSERT, rows).rowcount
            if added < len(rows):  # keys decided again: their older decision is replaced
                conn.executemany("UPDATE pending SET seq=?, score=?, t=?, x=? WHERE k=? AND seq<>?",
                                 [(r[1], r[2], r[3], r[4], r[0], r[1]) for r in rows])
            self._buf.clear()
            self._pending += added
        if self._age_n is not None or self._age_s is not None:
            self._sweep(2 * ops + 64)
        if self.state_fn is not None and (checkpoint or self._n_logged >= self.checkpoint_every):
            data = self.state_fn()
            self._n_checkpoints += 1
            conn.execute("INSERT OR REPLACE INTO checkpoint(id, n, data) VALUES (1, ?, ?)",
                         (self._n_checkpoints, sqlite3.Binary(data)))
            conn.execute("DELETE FROM learned")
            self._logbuf.clear()
            self._n_logged = 0
        elif self._logbuf:
            logbuf = self._logbuf
            pack = _LOG_ROW.pack
            blob = b"".join([pack(s, y, w, t, nm) for s, y, w, t, nm, _ in logbuf])
            segs = [e[5] for e in logbuf]
            conn.execute("INSERT INTO learned(n, data, segs) VALUES (?, ?, ?)",
                         (len(logbuf), blob, json.dumps(segs) if segs.count(None) < len(segs) else None))
            logbuf.clear()
        conn.executemany("UPDATE meta SET value=? WHERE name=?",
                         [(self._next_seq, "next_seq"), (self._next_seq, "n_decided"), (self._n_labels, "n_labels"),
                          (self._matched, "matched"), (self._unmatched, "unmatched"), (self._evicted, "evicted"),
                          (self._pending, "pending"), (self._n_logged, "n_logged"),
                          (self._n_checkpoints, "n_checkpoints"),
                          (None if self._newest_t == -math.inf else self._newest_t, "newest_t")])
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        self._ops_base = self._next_seq + self._n_labels
        self._last_commit = time.monotonic()
        self._torn = False

    def _sweep(self, budget: int) -> None:
        """Delete the decisions past the horizon among the next ``budget`` keys (in key order,
        from where the last sweep stopped; after the last key, from the first)."""
        conn = self._conn
        cut_seq = -1 if self._age_n is None else self._next_seq - 1 - self._age_n
        cut_t = -math.inf if self._age_s is None or self._newest_t == -math.inf else self._newest_t - self._age_s
        at = self._sweep_at
        if at is None:
            n, last = conn.execute("SELECT count(*), max(k) FROM (SELECT k FROM pending ORDER BY k LIMIT ?)",
                                   (budget,)).fetchone()
            if n:
                gone = conn.execute("DELETE FROM pending WHERE k <= ? AND (seq < ? OR t < ?)",
                                    (last, cut_seq, cut_t)).rowcount
        else:
            n, last = conn.execute("SELECT count(*), max(k) FROM (SELECT k FROM pending WHERE k > ? ORDER BY k "
                                   "LIMIT ?)", (at, budget)).fetchone()
            if n:
                gone = conn.execute("DELETE FROM pending WHERE k > ? AND k <= ? AND (seq < ? OR t < ?)",
                                    (at, last, cut_seq, cut_t)).rowcount
        self._sweep_at = last if n == budget else None
        if n:
            self._evicted += gone
            self._pending -= gone

    def close(self) -> None:
        """Commit (with a checkpoint of the owner's state when it has one), shrink the WAL
        file, and release the file and its lock. Idempotent."""
        if self._closed:
            return
        if self._busy or self._torn:  # interrupted or failed part-way: nothing more is written
            self.abandon()
            return
        try:
            self.commit(checkpoint=self.state_fn is not None and self._n_logged > 0)
            self._conn.execute("COMMIT")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except BaseException:
            self.abandon()  # (what a failed or interrupted commit began is rolled back)
            raise
        self._closed = True
        self._conn.close()
        os.close(self._lock_fd)

    def abandon(self) -> None:
        """Release the file and its lock *without* committing (what a crash does, minus the
        crash): the uncommitted batch is lost. For tests and for a loop that must not write."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._conn.in_transaction:  # (none when a commit was interrupted between its COMMIT and BEGIN)
                self._conn.execute("ROLLBACK")
        finally:
            self._conn.close()
            os.close(self._lock_fd)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or :meth:`abandon`) was called."""
        return self._closed

    def __enter__(self) -> PendingStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


PendingStore.__module__ = "thors_stream.store"  # its public home (reprs and doctests name it there)
