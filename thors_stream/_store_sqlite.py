"""The pending store's SQLite file: its format and tables, and opening it (locked, checked or refused).

:class:`~thors_stream.store.PendingStore` opens its file with :func:`lock` (an exclusive
``flock``: a second writer gets :class:`StoreLockedError`) and :func:`connect` (the checks that
refuse a file that is not an SQLite database, another application's database, another format,
owner or settings; the tables of a new store; the counters read back from ``meta``). The format's
constants (application id, version, schema, the packed layouts of a decision's rarer fields and
of the learned events) live here, next to the code that checks them. Users import from
:mod:`thors_stream.store`, which describes the file.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
import struct
from typing import Any

import numpy as np

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
_COUNTERS = ("next_seq", "n_decided", "n_labels", "matched", "unmatched", "evicted", "pending", "n_logged",
             "n_checkpoints")


def _extra(fn: float, fp: float, nm: int, seg: str | None) -> bytes | None:
    """A decision's rarer fields packed: ``None`` when they are the defaults (costs 1, no
    labels, no segment), else ``fn, fp, nm`` (:data:`_X`) and the segment's text."""
    if fn == 1.0 and fp == 1.0 and nm == 0 and seg is None:
        return None
    x = _X.pack(fn, fp, nm)
    return x if seg is None else x + seg.encode()


class StoreLockedError(RuntimeError):
    """A store is already open for writing (by another process, or elsewhere in this one)."""


StoreLockedError.__module__ = "thors_stream.store"  # its public home (pickles and reprs name it there)


def _where(path: str) -> str:
    return f"store {path!r}"


def lock(path: str, where: str) -> tuple[int, bool]:
    """Open the file (created when missing) and take its exclusive lock, held until the
    descriptor is closed: ``(descriptor, whether flock holds the lock)``; without ``flock``
    (Windows) SQLite's exclusive locking mode takes over in :func:`connect`. Refuses what is
    not a regular file, and a file another writer holds (:class:`StoreLockedError`)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{where} is not a regular file (a directory, FIFO or device); refusing to use it")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): SQLite's exclusive locking below
        return fd, False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreLockedError(f"{where} is open for writing by another process (or elsewhere in this "
                               "one): a store has one writer; stop the other one, or give this one its own "
                               "store") from None
    return fd, True


def connect(path: str, where: str, *, flock: bool, owner: str, settings: dict[str, Any], settings_json: str,
            synchronous: str, cache_mb: int) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """The store's database, opened (WAL, ``synchronous``, a page cache of ``cache_mb`` MiB) and
    checked, a new (empty) file made a store of ``owner`` with ``settings``: ``(connection, the
    rows of meta)``, the counters in them checked. A file that is not this owner's store with
    these settings is refused (``ValueError`` naming ``where``) before anything is written."""
    with open(path, "rb") as f:
        head = f.read(100)
    if head and (len(head) < 100 or head[:16] != _SQLITE_MAGIC):
        raise ValueError(f"{where} is not a thors_stream store: not an SQLite database (it starts with "
                         f"{head[:16]!r})")
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise ValueError(f"{where} cannot be opened as an SQLite database: {exc}") from None
    try:
        try:
            if not flock:  # pragma: no cover - no flock: SQLite's own exclusive lock instead
                conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            new = _inspect(conn, where, owner, settings)  # read only: a foreign file is refused before any write
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise ValueError(f"{where}: SQLite refused WAL mode (journal_mode={mode!r})")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute(f"PRAGMA cache_size=-{int(cache_mb) * 1024}")
            conn.execute("PRAGMA temp_store=MEMORY")
            conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_PAGES}")
            if new:
                _create(conn, owner, settings_json)
            meta = _read_meta(conn, where)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreLockedError(f"{where} is locked by another process: {exc}") from None
            raise ValueError(f"{where} is corrupt or not a thors_stream store: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{where} is corrupt or not a thors_stream store: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn, meta


def _inspect(conn: sqlite3.Connection, where: str, owner: str, settings: dict[str, Any]) -> bool:
    """Whether the database is new (empty); refuses one that is not this owner's store with
    these settings, reading only."""
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
    if meta.get("owner") != owner:
        raise ValueError(f"{where} belongs to a {str(meta.get('owner'))[:80]!r}, not a {owner!r}")
    settings_json = json.dumps(settings, sort_keys=True, allow_nan=False)
    if meta.get("settings") != settings_json:
        try:
            theirs = json.loads(meta.get("settings") or "null")
        except ValueError:
            theirs = meta.get("settings")
        diff = ({k: (theirs.get(k), settings.get(k)) for k in sorted(set(theirs) | set(settings))
                 if theirs.get(k) != settings.get(k)} if isinstance(theirs, dict) else theirs)
        raise ValueError(f"{where} was written with other settings ({{setting: (the store's, yours)}}: "
                         f"{diff!r}); open it with the same settings, or use a new store"[:800])
    return False


def _create(conn: sqlite3.Connection, owner: str, settings_json: str) -> None:
    """Make the empty database a store: its tables, identity and counters, in one transaction."""
    from ._version import __version__

    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version={FORMAT}")
    for sql in _SCHEMA.values():
        conn.execute(sql)
    rows = [("format", _FORMAT_NAME), ("library", f"thors_stream {__version__}"), ("owner", owner),
            ("settings", settings_json), ("newest_t", None), *((c, 0) for c in _COUNTERS)]
    conn.executemany("INSERT INTO meta(name, value) VALUES (?, ?)", rows)
    conn.execute("COMMIT")


def _read_meta(conn: sqlite3.Connection, where: str) -> dict[str, Any]:
    """The rows of meta, the counters (integers >= 0) and ``newest_t`` (``None`` or finite) checked."""
    meta = dict(conn.execute("SELECT name, value FROM meta"))
    for name in _COUNTERS:
        v = meta.get(name)
        if type(v) is not int or not 0 <= v < 2**63:
            raise ValueError(f"{where} is invalid: counter {name!r} is {v!r}, not an integer >= 0")
    newest = meta.get("newest_t")
    if newest is not None and (type(newest) is not float or not math.isfinite(newest)):
        raise ValueError(f"{where} is invalid: meta 'newest_t' is {newest!r}")
    return meta
