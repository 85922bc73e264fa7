"""Pending decisions and thresholding state on disk: one SQLite file that survives restarts.

A fraud loop decides on a payment now and learns its label (a chargeback) weeks later, from
the score it decided with. :class:`PendingStore` keeps those pending decisions in one SQLite
file (the standard library's :mod:`sqlite3`), with periodic checkpoints of the thresholding
state, so tens of millions of them cost disk, not memory, and a restart loses nothing that
was committed. :class:`DecisionLoop` is the whole loop on top of it: ``decide(key, score)``
flags and stores, ``label(key, y)`` finds the decision and teaches the threshold with its
decision-time score; no dictionary of pending keys in your code.

**The file.** Tables ``pending`` (one row per decision, in one B-tree ordered by the key: the
key, the decision's number, its score and time, and, packed in one field left empty when they
are the defaults, its two costs, the labels the model had learned and its segment),
``learned`` (the labelled events learned since the last checkpoint, in order, packed one row
per commit), ``checkpoint`` (the thresholding state, in the :mod:`thors_stream.checkpoint`
format, SHA-256 included) and ``meta`` (the format, the owner's settings and the counters).
Journal mode WAL; the write-ahead log is copied into the file every 10,000 pages (about
40 MB) and emptied by ``close``.

**What it costs.** A decision is one row inserted at its commit, a label one row found and
deleted: one B-tree operation each. Keys that grow with time (a sequence number, a ULID, a
UUIDv7) insert at the end of the tree and, with labels arriving in about the order of their
decisions, delete near its start, so a commit writes few pages. Keys in random order (a
UUIDv4) land on a different page each: every decision and every label out of order then
writes a page of the tree (4 KiB) to the log, whatever the batching, which costs several
microseconds more per event (see ``benchmarks/results/store_scale.md``).

**Commits and durability.** Work is committed in batches: after ``commit_every`` operations
(default :data:`DEFAULT_COMMIT_EVERY`, 1,000) or once ``commit_interval`` seconds (default
:data:`DEFAULT_COMMIT_INTERVAL`, 0.25 s; at most 1 s) have passed since the last commit, checked
at every operation, and by :meth:`PendingStore.commit` and ``close``. One commit is one SQLite
transaction: the decisions, the labels matched, the events learned and the counters land
together or not at all. With ``synchronous=NORMAL`` in WAL mode:

- a *process* crash (``kill -9``, an out-of-memory kill, a segfault) loses only what was not
  committed yet: at most the last ``commit_every`` operations or ``commit_interval`` seconds;
- a *power loss or OS crash* may also lose the last commits before it (those made since the
  write-ahead log was last copied into the file and synced: at most about 40 MB of changes),
  never more, and never leaves a corrupt file: SQLite rolls back to the last durable commit.
  Pass ``synchronous="FULL"`` to make every commit survive a power loss too (an ``fsync`` per
  commit).

Opening the same path again resumes exactly where the last commit left off: the thresholding
state is its checkpoint plus the learned events after it, replayed in order (at most
``checkpoint_every``, default :data:`DEFAULT_CHECKPOINT_EVERY`; ``close`` writes a checkpoint).

**One writer.** A process that opens a store holds an exclusive lock on it (``flock``) until
``close``; a second opening, from another process or the same one, raises
:class:`StoreLockedError` naming the path. The lock dies with the process (also on
``kill -9``). Readers (``sqlite3 fraud.sqlite``) can still look at the committed state.

**Refusals.** A file that is not an SQLite database, an SQLite database of another
application, a store written by a newer format, or one whose state does not check out is
refused with ``ValueError`` naming the path. A store reopened by a loop with other settings is
refused, naming both.

**Horizon.** ``max_pending_age`` bounds how long a decision waits for its label: an ``int``
``N`` evicts a decision once more than ``N`` decisions were made after it; a ``timedelta`` evicts
it once a decision more than ``max_pending_age`` newer (by the decision times ``t``) was made.
Eviction is a rule, not a race: a label for a decision past the horizon is unmatched (and
counted evicted) whenever it comes. The rows are deleted by a sweep at each commit that goes
on through the keys, in key order, where the last one stopped, visiting at least twice as
many keys as operations were made since the last commit: every decision past the horizon is
deleted within one pass over the keys, so the file holds at most about twice the horizon's
decisions. ``None`` (the default) keeps every decision until its label comes (no sweep).

**Unknown keys.** A label whose key was never decided, already labelled or evicted follows
``on_unknown``: ``"count"`` (the default: counted in :attr:`PendingStore.unmatched`, ``False``
returned, nothing else changes) or ``"raise"`` (``KeyError`` naming the key; nothing changes).

Keys are ``str``, ``int``, ``float``, ``bool``, ``bytes``, ``None`` or tuples of these, and
come back with their type; keys equal in Python (``1``, ``1.0``, ``True``) are one key, as in a
``dict``. A NaN key is refused (it could never be matched).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sqlite3
import stat
import struct
import time
from collections.abc import Hashable, Iterable, Sequence
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np

from ._keys import db_key, decode_key, encode_key
from ._validation import (
    MAX_WEIGHTED_COST,
    MIN_WEIGHTED_COST,
    _show,
    check_label,
    check_time,
    check_weight,
    check_weighted_costs,
    real_number,
)
from .checkpoint import checkpoint_bytes, parse_checkpoint
from .margin import cost_margin
from .neyman_pearson import NPInfeasibleError
from .segments import SegmentedStreamingThors
from .selection import WindowSelector
from .stream import StreamingThors

__all__ = [
    "DEFAULT_CHECKPOINT_EVERY",
    "DEFAULT_COMMIT_EVERY",
    "DEFAULT_COMMIT_INTERVAL",
    "DecisionLoop",
    "Pending",
    "PendingStore",
    "StoreLockedError",
]

DEFAULT_COMMIT_EVERY = 1_000
"""Operations (decisions, labels) between two commits, at most."""
DEFAULT_COMMIT_INTERVAL = 0.25
"""Seconds between two commits, at most (checked at every operation)."""
DEFAULT_CHECKPOINT_EVERY = 100_000
"""Learned events between two checkpoints of the thresholding state, at most (what a restart replays)."""

APPLICATION_ID = 0x54485253  # "THRS": SQLite's application_id of a thors_stream store
FORMAT = 2  # SQLite's user_version: the store's table layout
_FORMAT_NAME = "thors_stream.store"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_CHUNK = 1_000  # keys per statement ... IN (...)
_WAL_PAGES = 10_000  # pages the write-ahead log holds before SQLite copies them into the file (40 MB)

_SCHEMA = {
    "meta": "CREATE TABLE meta(name TEXT PRIMARY KEY NOT NULL, value)",
    # one B-tree keyed by the key: a decision is one row (its rarer fields packed in x, NULL when all default)
    "pending": "CREATE TABLE pending(k PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, score REAL NOT NULL, "
               "t REAL NOT NULL, x BLOB, kt TEXT) WITHOUT ROWID",
    # the learned events since the checkpoint, one row per commit: n packed events (_LOG) and their segments
    "learned": "CREATE TABLE learned(i INTEGER PRIMARY KEY, n INTEGER NOT NULL, data BLOB NOT NULL, segs TEXT)",
    "checkpoint": "CREATE TABLE checkpoint(id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL, "
                  "data BLOB NOT NULL)",
}
_INSERT = "INSERT OR IGNORE INTO pending(k, seq, score, t, x, kt) VALUES (?,?,?,?,?,?)"
_TAKE = "DELETE FROM pending WHERE k=? RETURNING seq, score, t, x"
_X = struct.Struct("<ddq")  # a decision's fn_cost, fp_cost, model_labels (then its segment's text, if any)
_LOG_ROW = struct.Struct("<dBddq")  # a learned event: score, y, w, t (NaN: none), model_labels
_LOG = np.dtype({"names": ["s", "y", "w", "t", "nm"], "formats": ["<f8", "u1", "<f8", "<f8", "<i8"],
                 "offsets": [0, 8, 9, 17, 25], "itemsize": _LOG_ROW.size})
_NAN = math.nan
_COUNTERS = ("next_seq", "n_decided", "n_labels", "matched", "unmatched", "evicted", "pending", "n_logged",
             "n_checkpoints")
_NO_SEGMENT = object()


def _extra(fn: float, fp: float, nm: int, seg: str | None) -> bytes | None:
    """A decision's rarer fields packed: ``None`` when they are the defaults (costs 1, no
    labels, no segment), else ``fn, fp, nm`` (:data:`_X`) and the segment's text."""
    if fn == 1.0 and fp == 1.0 and nm == 0 and seg is None:
        return None
    x = _X.pack(fn, fp, nm)
    return x if seg is None else x + seg.encode()


class StoreLockedError(RuntimeError):
    """A store is already open for writing (by another process, or elsewhere in this one)."""


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


def _where(path: str) -> str:
    return f"store {path!r}"


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
    thresholding state: the storage under :class:`DecisionLoop` (see the module docstring
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
        ``"NORMAL"`` (default) or ``"FULL"`` (see the module docstring).
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
        self._lock_fd = self._lock()
        try:
            self._conn = self._open(settings_json, synchronous, cache_mb)
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._closed = False
        self._buf: dict[Any, tuple[Any, ...]] = {}  # decisions not yet written: lookup value -> row
        self._logbuf: list[tuple[Any, ...]] = []
        self._ops_base = self._next_seq + self._n_labels  # operations so far, at the last commit
        self._sweep_at: Any = None  # the key the horizon's sweep goes on after (None: from the first)
        self._last_commit = time.monotonic()
        self._seg_enc: dict[Any, str] = {}
        self._seg_dec: dict[str, Any] = {}
        self._conn.execute("BEGIN IMMEDIATE")

    # ---------------------------------------------------------------- opening
    def _lock(self) -> int:
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            raise ValueError(f"{self._where} is not a regular file (a directory, FIFO or device); refusing to use it")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): SQLite's exclusive locking below
            self._flock = False
            return fd
        self._flock = True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(f"{self._where} is open for writing by another process (or elsewhere in this "
                                   "one): a store has one writer; stop the other one, or give this one its own "
                                   "store") from None
        return fd

    def _open(self, settings_json: str, synchronous: str, cache_mb: int) -> sqlite3.Connection:
        where = self._where
        with open(self.path, "rb") as f:
            head = f.read(100)
        if head and (len(head) < 100 or head[:16] != _SQLITE_MAGIC):
            raise ValueError(f"{where} is not a thors_stream store: not an SQLite database (it starts with "
                             f"{head[:16]!r})")
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise ValueError(f"{where} cannot be opened as an SQLite database: {exc}") from None
        try:
            try:
                if not self._flock:  # pragma: no cover - no flock: SQLite's own exclusive lock instead
                    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
                new = self._inspect(conn)  # read only: a foreign file is refused before anything is written
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise ValueError(f"{where}: SQLite refused WAL mode (journal_mode={mode!r})")
                conn.execute(f"PRAGMA synchronous={synchronous}")
                conn.execute(f"PRAGMA cache_size=-{int(cache_mb) * 1024}")
                conn.execute("PRAGMA temp_store=MEMORY")
                conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_PAGES}")
                if new:
                    self._create(conn, settings_json)
                self._load_meta(conn)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise StoreLockedError(f"{where} is locked by another process: {exc}") from None
                raise ValueError(f"{where} is corrupt or not a thors_stream store: {exc}") from None
            except sqlite3.DatabaseError as exc:
                raise ValueError(f"{where} is corrupt or not a thors_stream store: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _inspect(self, conn: sqlite3.Connection) -> bool:
        """Whether the database is new (empty); refuses one that is not this owner's store with
        these settings, reading only."""
        where = self._where
        tables = {name: sql for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if not tables and app == 0:
            return True
        if app != APPLICATION_ID:
            names = sorted(tables)[:8]
            raise ValueError(f"{where} is an SQLite database of another application (application_id={app}, tables "
                             f"{names}), not a thors_stream store; refusing to use it")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != FORMAT:
            raise ValueError(f"{where} has store format {version}; this library reads format {FORMAT}"
                             + (" (written by a newer thors_stream)" if version > FORMAT else
                                " (written by an older thors_stream: finish its pending decisions with that "
                                "version, or start a new store)"))
        for name, sql in _SCHEMA.items():
            if tables.get(name) != sql:
                raise ValueError(f"{where} is invalid: its {name!r} table or index is "
                                 f"{'missing' if name not in tables else 'not the one a store has'}")
        extra = sorted(set(tables) - set(_SCHEMA))
        if extra:
            raise ValueError(f"{where} is invalid: it holds tables no store has: {extra[:8]}")
        meta = dict(conn.execute("SELECT name, value FROM meta"))
        if meta.get("format") != _FORMAT_NAME:
            raise ValueError(f"{where} is invalid: meta 'format' is {meta.get('format')!r}")
        if meta.get("owner") != self.owner:
            raise ValueError(f"{where} belongs to a {str(meta.get('owner'))[:80]!r}, not a {self.owner!r}")
        settings_json = json.dumps(self.settings, sort_keys=True, allow_nan=False)
        if meta.get("settings") != settings_json:
            try:
                theirs = json.loads(meta.get("settings") or "null")
            except ValueError:
                theirs = meta.get("settings")
            diff = ({k: (theirs.get(k), self.settings.get(k)) for k in sorted(set(theirs) | set(self.settings))
                     if theirs.get(k) != self.settings.get(k)} if isinstance(theirs, dict) else theirs)
            raise ValueError(f"{where} was written with other settings ({{setting: (the store's, yours)}}: "
                             f"{diff!r}); open it with the same settings, or use a new store"[:800])
        return False

    def _create(self, conn: sqlite3.Connection, settings_json: str) -> None:
        """Make the empty database a store: its tables, identity and counters, in one transaction."""
        from ._version import __version__

        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={FORMAT}")
        for sql in _SCHEMA.values():
            conn.execute(sql)
        rows = [("format", _FORMAT_NAME), ("library", f"thors_stream {__version__}"), ("owner", self.owner),
                ("settings", settings_json), ("newest_t", None), *((c, 0) for c in _COUNTERS)]
        conn.executemany("INSERT INTO meta(name, value) VALUES (?, ?)", rows)
        conn.execute("COMMIT")

    def _load_meta(self, conn: sqlite3.Connection) -> None:
        meta = dict(conn.execute("SELECT name, value FROM meta"))
        for name in _COUNTERS:
            v = meta.get(name)
            if type(v) is not int or not 0 <= v < 2**63:
                raise ValueError(f"{self._where} is invalid: counter {name!r} is {v!r}, not an integer >= 0")
        newest = meta.get("newest_t")
        if newest is not None and (type(newest) is not float or not math.isfinite(newest)):
            raise ValueError(f"{self._where} is invalid: meta 'newest_t' is {newest!r}")
        self._next_seq: int = meta["next_seq"]
        self._newest_t = -math.inf if newest is None else newest
        self._n_labels: int = meta["n_labels"]
        self._matched: int = meta["matched"]
        self._unmatched: int = meta["unmatched"]
        self._evicted: int = meta["evicted"]
        self._pending: int = meta["pending"]
        self._n_logged: int = meta["n_logged"]
        self._n_checkpoints: int = meta["n_checkpoints"]

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
        conn = self._conn
        ops = self._next_seq + self._n_labels - self._ops_base
        if self._buf:
            rows = list(self._buf.values())
            self._buf.clear()
            added = conn.executemany(_INSERT, rows).rowcount
            if added < len(rows):  # keys decided again: their older decision is replaced
                conn.executemany("UPDATE pending SET seq=?, score=?, t=?, x=? WHERE k=? AND seq<>?",
                                 [(r[1], r[2], r[3], r[4], r[0], r[1]) for r in rows])
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
        try:
            self.commit(checkpoint=self.state_fn is not None and self._n_logged > 0)
            self._conn.execute("COMMIT")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
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


# ==================================================================== the loop
_KIND = "DecisionLoop"


class Decisions(NamedTuple):
    """What :meth:`DecisionLoop.decide_many` returns."""

    flags: np.ndarray
    """One bool per event: flag it (``score > threshold``, or ``margin > threshold``)."""
    thresholds: np.ndarray
    """The threshold each event was decided against (its segment's, with segments)."""
    scores: np.ndarray
    """The decision scores stored: the scores, or the cost margins."""


class DecisionLoop:
    """A decide-now, label-later loop on disk: THORS thresholds with pending decisions in a
    :class:`PendingStore`, so that no dictionary of pending keys lives in your process.

    ``decide(key, score)`` answers whether to flag the event (its score above the threshold,
    or, with ``decide_on="margin"``, its cost margin ``logit(p) + log(fn_i / fp_i)`` above the
    cut) and stores the decision under ``key``. ``label(key, y)`` finds it and teaches the
    threshold with the decision-time score (and the decision's costs): ``True`` when matched;
    an unknown or evicted key follows ``on_unknown`` (``"count"``: ``False`` and counted).
    Batches (``decide_many``, ``label_many``) give the same answers as the calls one by one.
    The thresholds equal a :class:`~thors_stream.StreamingThors` (``decide_on="score"``) or a
    :class:`~thors_stream.MarginThors` (``"margin"``) fed the matched labels' decision scores
    in the order the labels came, exactly; segments and ``window="auto"`` as
    :class:`~thors_stream.segments.SegmentedStreamingThors` and
    :class:`~thors_stream.selection.WindowSelector` do.

    Everything is committed in batches and survives a restart (see :mod:`thors_stream.store`):
    ``DecisionLoop(path, ...)`` on an existing store resumes where its last commit left off,
    and refuses a store written with other settings. Close it (or use ``with``) to commit the
    tail and write a checkpoint. Threads: one at a time (as river's models); the service
    (:mod:`thors_stream.service`) serialises its requests on one event loop.

    Parameters
    ----------
    path
        The store's SQLite file.
    fn_cost, fp_cost
        Costs of a false negative and a false positive (numbers > 0). With
        ``decide_on="margin"`` they are the defaults of the per-event costs.
    window
        The labelled events the threshold is learned on: the last ``window`` (default 10,000),
        all (``None``), or ``"auto"`` (windows of 500 to 32,000 events and the default
        threshold, chosen online; see :class:`~thors_stream.selection.WindowSelector`).
    decide_on
        ``"score"`` (flag iff ``score > threshold``; scores any finite numbers) or
        ``"margin"`` (probabilities in ``[0, 1]`` and per-event costs; flag iff the cost
        margin exceeds the cut, learned at unit costs with each event weighing its cost).
    segmented
        One threshold per segment (``decide(..., segment=s)``), falling back to the global
        one while a segment holds fewer than ``min_per_class`` events of a class (at most
        ``max_segments`` segments, the least recently updated evicted).
    warm_up
        Labelled events (both classes among them) to learn before the THORS threshold
        replaces the default (not with ``window="auto"``, whose default is a candidate).
    default_threshold
        The threshold until then: by default ``fp_cost / (fp_cost + fn_cost)`` on scores,
        ``0.0`` (the per-event Bayes rule) on margins.
    min_model_labels
        With margins: a decision whose model had learned fewer labels (``model_labels=`` at
        :meth:`decide`) is matched but not learned (:attr:`n_cold_skipped`). Default 0.
    max_pending_age, on_unknown, commit_every, commit_interval, checkpoint_every, synchronous, cache_mb
        The store's (see :class:`PendingStore`); they may change between openings.

    Complexity
    ----------
    ``decide``: a threshold read (O(1) when it did not move) plus :meth:`PendingStore.put`;
    ``label``: :meth:`PendingStore.take` (O(log n) on disk) plus one update (O(log window));
    reopening: the checkpoint plus at most ``checkpoint_every`` replayed updates. Memory: the
    thresholder (``window`` events) plus the store's uncommitted batch and page cache.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "fraud.sqlite")
    >>> loop = DecisionLoop(path, fn_cost=50, fp_cost=1, window=1_000, warm_up=0)
    >>> loop.decide("tx-1", 0.9), loop.decide("tx-2", 0.01), loop.decide("tx-3", 0.3)
    (True, False, True)
    >>> loop.label("tx-1", True), loop.label("tx-2", False), loop.label("tx-404", True)
    (True, True, False)
    >>> loop.threshold, loop.matched, loop.unmatched, loop.pending
    (0.01, 2, 1, 1)
    >>> loop.close()
    >>> with DecisionLoop(path, fn_cost=50, fp_cost=1, window=1_000, warm_up=0) as again:
    ...     again.threshold, again.pending, again.label("tx-3", False)
    (0.01, 1, True)
    """

    def __init__(self, path: str | os.PathLike[str], *, fn_cost: float, fp_cost: float,
                 window: int | str | None = 10_000, decide_on: str = "score", segmented: bool = False,
                 warm_up: int = 100, default_threshold: float | None = None, min_per_class: int = 30,
                 max_segments: int = 10_000, min_model_labels: int = 0,
                 max_pending_age: int | dt.timedelta | None = None, on_unknown: str = "count",
                 commit_every: int = DEFAULT_COMMIT_EVERY, commit_interval: float = DEFAULT_COMMIT_INTERVAL,
                 checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY, synchronous: str = "NORMAL",
                 cache_mb: int = 32) -> None:
        if decide_on not in ("score", "margin"):
            raise ValueError(f"decide_on must be 'score' or 'margin', got {decide_on!r}")
        if isinstance(warm_up, bool) or not isinstance(warm_up, int) or warm_up < 0:
            raise ValueError(f"warm_up must be an integer >= 0, got {warm_up!r}")
        if isinstance(min_model_labels, bool) or not isinstance(min_model_labels, int) or min_model_labels < 0:
            raise ValueError(f"min_model_labels must be an integer >= 0, got {min_model_labels!r}")
        if not isinstance(segmented, bool):
            raise TypeError(f"segmented must be True or False, got {segmented!r}")
        auto = isinstance(window, str)
        if auto and window != "auto":
            raise ValueError(f"window must be a positive integer, None or 'auto', got {window!r}")
        margin = decide_on == "margin"
        base = StreamingThors(fn_cost=fn_cost, fp_cost=fp_cost)  # checks the costs
        self.fn_cost, self.fp_cost = base.fn_cost, base.fp_cost
        unit = (1.0, 1.0) if margin else (self.fn_cost, self.fp_cost)
        default = (real_number(default_threshold, "default_threshold") if default_threshold is not None else
                   0.0 if margin else self.fp_cost / (self.fp_cost + self.fn_cost))
        self.window = window
        self.decide_on = decide_on
        self.segmented = segmented
        self.warm_up = warm_up
        self.default_threshold = default
        self.min_per_class = min_per_class
        self.max_segments = max_segments
        self.min_model_labels = min_model_labels
        self._margin = margin
        self._auto = auto
        self._selector: WindowSelector | None = None
        self._segments: SegmentedStreamingThors | None = None
        if segmented:
            self._segments = SegmentedStreamingThors(
                fn_cost=unit[0], fp_cost=unit[1], window=window, max_segments=max_segments,
                min_per_class=min_per_class, default_threshold=default if auto else None)
            self._thors = self._segments.global_summary
        elif auto:
            self._selector = WindowSelector(fn_cost=unit[0], fp_cost=unit[1], default_threshold=default)
            self._thors = self._selector.experts[-1]
        else:
            self._thors = StreamingThors(fn_cost=unit[0], fp_cost=unit[1], window=window)  # type: ignore[arg-type]
        self._n_learned = 0
        self._n_pos = 0
        self._ready = False
        self._n_cold_skipped = 0
        self.n_flagged = 0
        """Decisions flagged by this process (not persisted)."""
        self.n_positive_labels = 0
        """Matched positive labels learned by this process (not persisted)."""
        settings = {"kind": _KIND, "decide_on": decide_on, "fn_cost": self.fn_cost, "fp_cost": self.fp_cost,
                    "window": window, "segmented": segmented, "warm_up": warm_up, "default_threshold": default,
                    "min_per_class": min_per_class, "max_segments": max_segments,
                    "min_model_labels": min_model_labels}
        self.store = PendingStore(path, owner=_KIND, settings=settings, max_pending_age=max_pending_age,
                                  on_unknown=on_unknown, commit_every=commit_every, commit_interval=commit_interval,
                                  checkpoint_every=checkpoint_every, synchronous=synchronous, cache_mb=cache_mb)
        try:
            self._resume()
        except BaseException:
            self.store.abandon()
            raise
        self.store.state_fn = self._state_bytes

    # ---------------------------------------------------------------- state
    def _state_bytes(self) -> bytes:
        params, state, arrays = self._thors._checkpoint_parts()
        params = {"thors": params}
        state = {"thors": state, "n_learned": self._n_learned, "n_pos": self._n_pos, "ready": self._ready,
                 "n_cold_skipped": self._n_cold_skipped}
        if self._selector is not None:
            sp, ss, sa = self._selector._checkpoint_parts()
            params["selector"], state["selector"] = sp, ss
            arrays = {**arrays, **sa}
        if self._segments is not None:
            gp, gs, ga, keys = self._segments._checkpoint_parts()
            params["segments"], state["segments"] = gp, gs
            state["segment_keys"] = [encode_key(k) for k in keys]
            arrays = {**arrays, **ga}
        return checkpoint_bytes(_KIND, params, state, arrays)

    def _resume(self) -> None:
        data, events = self.store.restore()
        if data is not None:
            self._restore_state(data)
        for s, y, w, _t, seg, nm in events:
            self._learn(s, bool(y), w, seg, nm)

    def _restore_state(self, data: bytes) -> None:
        where = f"{self.store._where} (checkpoint {self.store.n_checkpoints})"
        ck = parse_checkpoint(data, _KIND, where)
        params, state, arrays = ck.params, ck.state, ck.arrays
        want_p = {"thors"} | ({"selector"} if self._selector is not None else set()) | \
            ({"segments"} if self._segments is not None else set())
        want_s = {"thors", "n_learned", "n_pos", "ready", "n_cold_skipped"} | (want_p - {"thors"}) | \
            ({"segment_keys"} if self._segments is not None else set())
        if set(params) != want_p or set(state) != want_s:
            raise ValueError(f"{where} is invalid: params {sorted(params)} and state {sorted(state)}, expected "
                             f"{sorted(want_p)} and {sorted(want_s)}")
        own = {k: a for k, a in arrays.items() if not k.startswith(("sel", "seg_"))}
        thors = StreamingThors._from_checkpoint_parts(params["thors"], state["thors"], own, where=where)
        mine = (self._thors.fn_cost, self._thors.fp_cost, self._thors.window, self._thors._period_s,
                self._thors.class_prior, self._thors.default_threshold)
        theirs = (thors.fn_cost, thors.fp_cost, thors.window, thors._period_s, thors.class_prior,
                  thors.default_threshold)
        if mine != theirs:
            raise ValueError(f"{where} holds a summary with (fn_cost, fp_cost, window, period, class_prior, "
                             f"default_threshold) = {theirs}, this loop's is {mine}")
        counts = []
        for name in ("n_learned", "n_pos", "n_cold_skipped"):
            v = state[name]
            if type(v) is not int or not 0 <= v < 2**63:
                raise ValueError(f"{where} is invalid: state.{name} must be an integer >= 0, got {v!r}"[:300])
            counts.append(v)
        n_learned, n_pos, n_cold = counts
        ready = state["ready"]
        if n_pos > n_learned or ready is not (n_learned >= self.warm_up and 0 < n_pos < n_learned):
            raise ValueError(f"{where} is invalid: state.ready={ready!r} does not follow from n_learned="
                             f"{n_learned}, n_pos={n_pos} and warm_up={self.warm_up}")
        if self._selector is not None:
            self._selector._restore(params["selector"], state["selector"], arrays, thors, where)
        if self._segments is not None:
            raw = state["segment_keys"]
            if not isinstance(raw, list):
                raise ValueError(f"{where} is invalid: state.segment_keys must be a list")
            keys = [decode_key(k, f"state.segment_keys[{i}]", where) for i, k in enumerate(raw)]
            self._segments._restore(params["segments"], state["segments"],
                                    {k: a for k, a in arrays.items() if k.startswith("seg_")}, keys,
                                    params["thors"], thors, where)
        self._thors = thors
        self._n_learned, self._n_pos, self._ready, self._n_cold_skipped = n_learned, n_pos, ready, n_cold

    # ---------------------------------------------------------------- reads
    def threshold_of(self, segment: Any = None) -> float:
        """The threshold a decision of ``segment`` is made against now (without segments, the
        one threshold). ``-inf`` flags every event. O(1) when it did not move."""
        if self._segments is not None:
            thr = self._segments.get(segment) if (self._ready or self._auto) else None
        elif self._selector is not None:
            thr = self._selector.get()
        elif self._ready:
            try:
                thr = self._thors.get()
            except NPInfeasibleError:  # pragma: no cover - no Neyman-Pearson mode here
                thr = None
        else:
            thr = None
        return self.default_threshold if thr is None else thr

    @property
    def threshold(self) -> float:
        """The threshold now (with segments, the one over all events). O(1) when it did not move."""
        if self._segments is not None:
            if not (self._ready or self._auto):
                return self.default_threshold
            thr = self._segments.global_threshold()
            return self.default_threshold if thr is None else thr
        return self.threshold_of(None)

    @property
    def thors(self) -> StreamingThors:
        """The :class:`~thors_stream.StreamingThors` over all events (with ``window="auto"`` the
        longest window; read only)."""
        return self._thors

    @property
    def selector(self) -> WindowSelector | None:
        """With ``window="auto"`` (no segments): the :class:`~thors_stream.selection.WindowSelector`."""
        return self._selector

    @property
    def segments(self) -> SegmentedStreamingThors | None:
        """With ``segmented=True``: the :class:`~thors_stream.segments.SegmentedStreamingThors` (read only)."""
        return self._segments

    @property
    def warmed_up(self) -> bool:
        """Whether the THORS threshold replaced the default (``warm_up`` events, both classes)."""
        return self._ready

    @property
    def n_learned(self) -> int:
        """Labelled events the threshold learned (matched, not cold)."""
        return self._n_learned

    @property
    def n_cold_skipped(self) -> int:
        """Matched labels not learned: their model had learned fewer than ``min_model_labels``."""
        return self._n_cold_skipped

    @property
    def matched(self) -> int:
        """Labels that found their decision (:attr:`PendingStore.matched`)."""
        return self.store.matched

    @property
    def unmatched(self) -> int:
        """Labels that found none: unknown, already labelled or evicted (:attr:`PendingStore.unmatched`)."""
        return self.store.unmatched

    @property
    def evicted(self) -> int:
        """Decisions dropped by the horizon (:attr:`PendingStore.evicted`)."""
        return self.store.evicted

    @property
    def pending(self) -> int:
        """Decisions waiting for their label (:attr:`PendingStore.pending`)."""
        return self.store.pending

    # ---------------------------------------------------------------- deciding
    def _costs(self, fn_cost: Any, fp_cost: Any, where: str) -> tuple[float, float]:
        if not self._margin:
            if fn_cost is not None or fp_cost is not None:
                raise ValueError(f"per-event fn_cost/fp_cost{where} need decide_on='margin' (this loop decides on "
                                 "the score with the costs it was made with)")
            return self.fn_cost, self.fp_cost
        fn = self.fn_cost if fn_cost is None else real_number(fn_cost, "fn_cost", where)
        fp = self.fp_cost if fp_cost is None else real_number(fp_cost, "fp_cost", where)
        for name, c in (("fn_cost", fn), ("fp_cost", fp)):
            if not MIN_WEIGHTED_COST <= c <= MAX_WEIGHTED_COST:
                raise ValueError(f"{name} must be > 0 (between 2**-960 and 2**960), got {c!r}{where}")
        return fn, fp

    def _score(self, score: Any, fn: float, fp: float, where: str) -> float:
        if self._margin:
            return cost_margin(score, fn, fp, where=where)
        return real_number(score, "score", where)

    def _segment(self, segment: Any, where: str) -> Any:
        if self._segments is None:
            if segment is not None:
                raise ValueError(f"segment={_show(segment)}{where}: this loop has no segments (segmented=False)")
            return _NO_SEGMENT
        self.store._segment_text(segment)  # hashable and storable, or raises
        return segment

    def decide(self, key: Hashable, score: float, *, fn_cost: float | None = None, fp_cost: float | None = None,
               segment: Any = None, t: Any = None, model_labels: int = 0) -> bool:
        """Whether to flag the event, and store the decision under ``key`` for its label.

        ``score``: the model's score (with ``decide_on="margin"``, its probability of the
        positive class, with ``fn_cost``/``fp_cost`` the event's costs, defaulting to the
        loop's); ``segment`` with ``segmented=True``; ``t`` the decision time (seconds or a
        ``datetime``; default now; the time horizon is measured on it); ``model_labels`` the
        labels the model had learned (see ``min_model_labels``). A bad value raises naming it,
        and nothing changes. O(1) + the store's put.
        """
        where = f" (event key {_show(key)})"
        fn, fp = self._costs(fn_cost, fp_cost, where)
        s = self._score(score, fn, fp, where)
        seg = self._segment(segment, where)
        store = self.store
        try:
            v, kt = db_key(key)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc}{where}") from None
        tf = time.time() if t is None else check_time(t)
        if (model_labels.__class__ is not int and (isinstance(model_labels, bool) or
                                                  not isinstance(model_labels, (int, np.integer)))) or \
                not 0 <= model_labels < 2**63:
            raise ValueError(f"model_labels must be an integer >= 0, got {_show(model_labels)}{where}")
        thr = self.threshold_of(None if seg is _NO_SEGMENT else seg)
        store._check_open()
        if not self._margin and seg is _NO_SEGMENT and model_labels == 0:
            store._put(v, kt, s, tf, None)
        else:
            store._put(v, kt, s, tf, _extra(fn if self._margin else 1.0, fp if self._margin else 1.0,
                                            int(model_labels), store._segment_text(seg)))
        flag = s > thr
        if flag:
            self.n_flagged += 1
        self.store.tick()
        return flag

    def decide_many(self, keys: Sequence[Hashable], scores: Any, *, fn_cost: Any = None, fp_cost: Any = None,
                    segments: Sequence[Any] | None = None, t: Any = None, model_labels: int = 0) -> Decisions:
        """:meth:`decide` for a batch, with the same answers: every value is checked first
        (a bad one raises naming its position, and nothing changes), then each event is
        decided against the threshold of now (a decision does not move it) and stored.
        ``fn_cost``/``fp_cost``: a number or one per event; ``t``: one time for the batch
        (default now) or one per event. O(m) + the store's puts."""
        n = len(keys)
        ps = np.asarray(scores, dtype=object) if not isinstance(scores, np.ndarray) else scores
        if ps.shape != (n,):
            raise ValueError(f"scores must have one value per key ({n}), got shape {ps.shape}")
        fns = self._per_event(fn_cost, n, "fn_cost")
        fps = self._per_event(fp_cost, n, "fp_cost")
        if segments is not None and len(segments) != n:
            raise ValueError(f"segments must have one value per key ({n}), got {len(segments)}")
        if t is None or np.ndim(t) == 0:
            ts = [time.time() if t is None else check_time(t)] * n
        else:
            if len(t) != n:
                raise ValueError(f"t must be one time or one per key ({n}), got {len(t)}")
            ts = [check_time(x, f"t at position {i}") for i, x in enumerate(t)]
        if isinstance(model_labels, bool) or not isinstance(model_labels, (int, np.integer)) or \
                not 0 <= model_labels < 2**63:
            raise ValueError(f"model_labels must be an integer >= 0, got {_show(model_labels)}")
        out_s = np.empty(n)
        out_fn = np.empty(n)
        out_fp = np.empty(n)
        segs: list[Any] = []
        encoded = []
        store = self.store
        for i in range(n):
            where = f" at position {i}"
            fn, fp = self._costs(None if fns is None else fns[i], None if fps is None else fps[i], where)
            out_s[i] = self._score(ps[i], fn, fp, where)
            out_fn[i], out_fp[i] = fn, fp
            seg = self._segment(None if segments is None else segments[i], where)
            segs.append(seg)
            try:
                encoded.append(db_key(keys[i]))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (key at position {i})") from None
        thr = np.empty(n)
        cache: dict[Any, float] = {}
        for i, seg in enumerate(segs):
            try:
                thr[i] = cache[seg]
            except KeyError:
                thr[i] = cache[seg] = self.threshold_of(None if seg is _NO_SEGMENT else seg)
        flags = out_s > thr
        seg_text = store._segment_text
        put = store._put
        nm = int(model_labels)
        store._check_open()
        if not self._margin and self._segments is None and nm == 0:
            for (v, kt), s_i, t_i in zip(encoded, out_s.tolist(), ts):
                put(v, kt, s_i, t_i, None)
        else:
            margin = self._margin
            for i, (v, kt) in enumerate(encoded):
                put(v, kt, float(out_s[i]), ts[i], _extra(float(out_fn[i]) if margin else 1.0,
                                                          float(out_fp[i]) if margin else 1.0, nm, seg_text(segs[i])))
        self.n_flagged += int(flags.sum())
        store.tick()
        return Decisions(flags, thr, out_s)

    @staticmethod
    def _per_event(value: Any, n: int, name: str) -> list[Any] | None:
        if value is None:
            return None
        if np.ndim(value) == 0:
            return [value] * n
        if len(value) != n:
            raise ValueError(f"{name} must be a number or one value per key ({n}), got {len(value)}")
        return list(value)

    # ---------------------------------------------------------------- labels
    def _learn(self, s: float, pos: bool, weight: float, seg: Any, nm: int) -> None:
        """Teach the thresholder one matched event (also the replay of a logged one)."""
        if self._margin and nm < self.min_model_labels:
            self._n_cold_skipped += 1
            return
        if self._segments is not None:
            self._segments.update(seg, s, pos, weight)
        elif self._selector is not None:
            self._selector.update(s, pos, weight)
        else:
            self._thors.update(s, pos, weight)
        if not self._ready:
            self._n_learned += 1
            self._n_pos += pos
            self._ready = self._n_learned >= self.warm_up and 0 < self._n_pos < self._n_learned
        else:
            self._n_learned += 1
            self._n_pos += pos

    def _weight(self, fn: float, fp: float, pos: bool, wt: float | None, where: str) -> float:
        if not self._margin:
            return 1.0 if wt is None else wt
        c = fn if pos else fp
        weight = c if wt is None else c * wt
        if not MIN_WEIGHTED_COST <= weight <= MAX_WEIGHTED_COST:
            raise ValueError(f"the event's weight, w={wt!r} times its {'fn_cost' if pos else 'fp_cost'} {c!r}, is "
                             f"{weight!r}, outside [2**-960, 2**960]{where}")
        return weight

    def _check_w(self, w: Any) -> float | None:
        if w is None:
            return None
        wt = check_weight(w)
        if not self._margin:
            check_weighted_costs(wt, self.fn_cost, self.fp_cost)
        return wt

    def label(self, key: Hashable, y: Any, *, w: float | None = None) -> bool:
        """Learn the label ``y`` (0/1, ``False``/``True``) of the decision stored under ``key``,
        with its decision-time score (and costs); ``True`` when it was found. ``w`` (> 0): a
        sample weight (multiplying the event's cost). An unknown or evicted key: ``False``
        and counted (``on_unknown="count"``), or ``KeyError`` (``"raise"``). A bad label or
        weight raises before anything changes. O(log n) + O(log window)."""
        pos = (y is True or y == 1) if (y.__class__ is bool or y.__class__ is int) and (y == 0 or y == 1) else \
            check_label(y) == 1
        wt = None if w is None else self._check_w(w)
        store = self.store
        store._check_open()
        v = db_key(key)[0]
        if wt is not None and self._margin:  # the weight times the decision's cost must be in range
            e0 = store.peek(key)
            if e0 is not None:
                self._weight(e0.fn_cost, e0.fp_cost, pos, wt, f" (event key {_show(key)})")
        e = store._take(v, key)
        if e is None:
            store.tick()
            return False
        self._take_in(e, pos, wt)
        store.tick()
        return True

    def _take_in(self, e: tuple[int, float, float, Any], pos: bool, wt: float | None) -> None:
        """Learn a matched decision ``(seq, score, t, packed fields)`` with its label, and log it."""
        store = self.store
        s, x = e[1], e[3]
        fn, fp, nm, seg_text = (1.0, 1.0, 0, None) if x is None else store._fields(x)
        weight = (1.0 if wt is None else wt) if not self._margin else self._weight(fn, fp, pos, wt, "")
        if self._segments is not None:
            self._learn(s, pos, weight, store._segment_of(seg_text), nm)
        else:
            self._learn(s, pos, weight, None, nm)
            seg_text = None
        store._logbuf.append((s, 1 if pos else 0, weight, _NAN, nm, seg_text))
        store._n_logged += 1
        self.n_positive_labels += pos

    def label_many(self, keys: Sequence[Hashable], ys: Any, *, w: Any = None) -> np.ndarray:
        """:meth:`label` for a batch, in order, with the same results (one bool per key:
        matched); every label and weight is checked first (a bad one raises naming its
        position, and nothing changes). O(m log n)."""
        n = len(keys)
        if len(ys) != n:
            raise ValueError(f"ys must have one label per key ({n}), got {len(ys)}")
        pos = []
        for i, y in enumerate(ys):
            try:
                pos.append(check_label(y) == 1)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (label at position {i})") from None
        wts: list[float | None] = [None] * n
        if w is not None:
            raw = [w] * n if np.ndim(w) == 0 else list(w)
            if len(raw) != n:
                raise ValueError(f"w must be one weight or one per key ({n}), got {len(raw)}")
            for i, x in enumerate(raw):
                try:
                    wts[i] = self._check_w(x)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"{exc} (weight at position {i})") from None
        store = self.store
        store._check_open()
        vs = []
        for i, k in enumerate(keys):
            try:
                vs.append(db_key(k)[0])
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (key at position {i})") from None
        if w is not None and self._margin:
            for i, k in enumerate(keys):
                e0 = store.peek(k)
                if e0 is not None:
                    self._weight(e0.fn_cost, e0.fp_cost, pos[i], wts[i], f" (position {i})")
        found = store._take_many(vs, keys)
        out = np.zeros(n, dtype=bool)
        take_in = self._take_in
        for i, e in enumerate(found):
            if e is not None:
                take_in(e, pos[i], wts[i])
                out[i] = True
        store.tick()
        return out

    # ---------------------------------------------------------------- lifecycle
    def commit(self, *, checkpoint: bool = False) -> None:
        """Commit now (see :meth:`PendingStore.commit`)."""
        self.store.commit(checkpoint=checkpoint)

    def tick(self) -> bool:
        """Commit if one is due (for an idle loop: the tail of a burst; see :meth:`PendingStore.tick`)."""
        return self.store.tick()

    def close(self) -> None:
        """Commit, write a checkpoint, release the store. Idempotent."""
        self.store.close()

    def __enter__(self) -> DecisionLoop:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"DecisionLoop({self.store.path!r}, decide_on={self.decide_on!r}, window={self.window!r}, "
                f"threshold={self.threshold!r}, pending={self.pending}, matched={self.matched})")
