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

# The code, by concern: the file (format, opening, locking, refusals) in _store_sqlite, the store
# of pending decisions (the log, checkpoints, commits, the horizon) in _store_pending, the loop in
# _store_loop. Everything is imported from here; the classes name this module as their home
# (pickles, reprs, the API reference). The names after the public ones were importable from
# here before the split and stay so (benchmarks/store_scale.py times _INSERT and _TAKE); Any and
# np are the names the annotations of Pending and Decisions use, which typing resolves here.
from typing import Any  # noqa: F401

import numpy as np  # noqa: F401

from ._store_loop import DecisionLoop, Decisions  # noqa: F401
from ._store_pending import (
    DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_COMMIT_EVERY,
    DEFAULT_COMMIT_INTERVAL,
    Pending,
    PendingStore,
)
from ._store_sqlite import _INSERT, _TAKE, APPLICATION_ID, FORMAT, StoreLockedError  # noqa: F401

__all__ = [
    "DEFAULT_CHECKPOINT_EVERY",
    "DEFAULT_COMMIT_EVERY",
    "DEFAULT_COMMIT_INTERVAL",
    "DecisionLoop",
    "Pending",
    "PendingStore",
    "StoreLockedError",
]
