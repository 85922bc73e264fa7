"""Pending decisions of :class:`~thors_stream.river.ThorsClassifier` by key: in memory, or in a store.

``predict_one(x, key=k)`` keeps the decision's score (with per-event costs, its margin, its two
costs and the labels the model had learned) under ``k``, and ``learn_one(x, y, key=k)`` takes it
back. In memory the decisions live in an ordered dict of at most ``max_pending`` (the oldest is
evicted); with ``store="pending.sqlite"`` in a :class:`~thors_stream.store.PendingStore`, which
also holds the thresholding state (a checkpoint plus the events learned since) that a wrapper
opened on the same file resumes. A label whose key finds nothing follows ``on_unknown``.

>>> from river import linear_model
>>> from thors_stream.river import ThorsClassifier
>>> m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, max_pending=2)
>>> for k in ("a", "b", "c"):
...     _ = m.predict_one({"x": 1.0}, key=k)
>>> list(m._pending), m.n_evicted
(['b', 'c'], 1)
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Hashable
from typing import Any

import numpy as np

from ._keys import db_key, encode_key
from ._river_base import _RESCORE, RiverBase, _event, _same_features
from ._validation import _show

__all__ = ["PendingPart"]


def _put_and_tick(db: Any, v: Any, kt: str | None, s: float, tf: float, x: bytes | None) -> None:
    """A checked decision into the store, then a commit if one is due."""
    db._put(v, kt, s, tf, x)
    db.tick()


class PendingPart(RiverBase):
    """The pending decisions of :class:`~thors_stream.river.ThorsClassifier` (see the module docstring)."""

    # ---------------------------------------------------------------- in memory
    def _store(self, key: Hashable, score: Any) -> None:
        if self._db is not None:
            self._db_put(key, score)
            return
        pending = self._pending
        try:
            known = key in pending
        except TypeError:
            raise TypeError(f"key must be hashable, got {key!r}") from None
        if known:
            pending.move_to_end(key)
        elif len(pending) >= self.max_pending:
            pending.popitem(last=False)
            self._n_evicted += 1
        pending[key] = score

    def _lookup(self, key: Hashable, what: str) -> Any:
        """The entry pending under ``key`` (in memory); for an unknown key, by ``on_unknown``:
        ``"raise"`` raises ``KeyError`` (nothing changed), ``"count"`` counts it and returns
        ``None``, ``"score"`` returns ``_RESCORE`` (the label is learned with ``x`` scored now)."""
        try:
            return self._pending[key]
        except KeyError:
            if self._policy == "raise":
                raise KeyError(
                    f"unknown key {key!r}: no {what} is pending under it (predict_one/predict_proba_one was not "
                    "called with this key, its label was already learned, or it was evicted: at most "
                    f"max_pending={self.max_pending} {what}s are kept, {self._n_evicted} evicted so far)"
                ) from None
            if self._policy == "count":
                self._n_unmatched += 1
                return None
            return _RESCORE
        except TypeError:
            raise TypeError(f"key must be hashable, got {key!r}") from None

    # ---------------------------------------------------------------- pending decisions on disk
    def _store_settings(self) -> dict[str, Any]:
        """The settings a store records at creation and checks at every opening (JSON)."""
        def num(v: Any) -> Any:
            if v is None or isinstance(v, (bool, str)):
                return v
            if isinstance(v, (int, float, np.integer, np.floating)):
                f = float(v)
                return f if math.isfinite(f) else repr(f)
            return ["callable", None] if callable(v) else repr(v)

        def label(v: Any) -> Any:
            try:
                return encode_key(v)
            except TypeError:
                return ["repr", repr(v)]

        def setting(v: Any) -> Any:
            return ["feature", v] if isinstance(v, str) else ["callable", None] if callable(v) else num(v)

        thors = self._thors
        out: dict[str, Any] = {
            "kind": "ThorsClassifier", "decide_on": self.decide_on, "fn_cost": setting(self.fn_cost),
            "fp_cost": setting(self.fp_cost), "window": "auto" if isinstance(self.window, str) else thors.window,
            "windows": None if self.windows is None else sorted(self.windows), "period": num(thors._period_s),
            "warm_up": self.warm_up, "default_threshold": num(self.default_threshold),
            "class_prior": num(self.class_prior), "max_fpr": num(self.max_fpr), "max_fnr": num(self.max_fnr),
            "confidence": num(self.confidence) if self._np else None, "pos_label": label(self.pos_label),
            "neg_label": label(self.neg_label), "auto_choose": self.auto_choose, "segment": setting(self.segment),
            "min_per_class": self.min_per_class, "max_segments": self.max_segments,
            "min_model_labels": self.min_model_labels if self._margin else None,
            "pool_weight": num(self.pool_weight), "pool_every": self.pool_every,
        }
        return out

    def _open_store(self, path: str | os.PathLike[str]) -> None:
        """Open (or create) the store and resume the thresholding state it holds: its
        checkpoint, then the events learned after it, replayed in order."""
        from .checkpoint import parse_checkpoint
        from .store import PendingStore

        db = PendingStore(path, owner="ThorsClassifier", settings=self._store_settings(),
                          max_pending_age=self.max_pending_age,
                          on_unknown="raise" if self._policy == "raise" else "count", **(self.store_options or {}))
        try:
            data, events = db.restore()
            if data is not None:
                ck = parse_checkpoint(data, "ThorsClassifier.thresholding",
                                      f"{db._where} (checkpoint {db.n_checkpoints})", literal=("pending_keys",))
                self._restore_thresholding(ck)
            for s, y, w, t, seg, nm in events:
                pos = y == 1
                if self._margin:
                    self._n_model_labels += 1
                    if nm < self.min_model_labels:
                        self._n_cold_skipped += 1
                        continue
                self._apply(s, pos, w, t, seg)
        except BaseException:
            db.abandon()
            raise
        db.state_fn = self._state_bytes
        self._db = db

    def _state_bytes(self) -> bytes:
        from .checkpoint import checkpoint_bytes

        return checkpoint_bytes("ThorsClassifier.thresholding", *self._thresholding_parts())

    def _db_put(self, key: Hashable, entry: Any) -> None:
        """Store a decision in the store: the score, or ``(margin, fn_i, fp_i, model labels)``."""
        db = self._db
        assert db is not None
        if entry.__class__ is tuple:
            s, fn, fp, nm = entry
            x = db._pack(fn, fp, nm, None)
        else:
            s, x = entry, None
            if s - s != 0.0:
                raise ValueError(f"the model's probability of the positive class is {s!r}, not a finite number; "
                                 f"the decision was not stored (event key {_show(key)})")
        try:
            v, kt = db_key(key)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} (event key {_show(key)})") from None
        # as a whole: an interrupt part-way leaves the store refusing, and closing rolls back to its last commit
        db._as_whole(_put_and_tick, db, v, kt, s, time.time(), x)

    def _learn_stored(self, x: dict[Hashable, Any], y: Any, pos: bool, key: Hashable | None, w: float | None,
                      wt: float, tf: float | None, kwargs: dict[str, Any]) -> None:
        """``learn_one`` with a store (label, weight and time checked): the decision is taken from
        the store (an unknown key follows ``on_unknown``), or ``x`` is scored now; every check
        comes before the store, the model or the thresholder changes; the event learned is
        logged for a restart."""
        db = self._db
        assert db is not None
        db._check_whole()  # (before the model learns: refused after an interrupted operation)
        margin = self._margin
        seg = None
        if self._segmented is not None:
            seg = self._segment_of(x)
            try:
                db._segment_text(seg)  # storable in the log, or raises
            except TypeError as exc:
                raise TypeError(f"{exc}{_event(key, x)}") from None
        rescore = key is None
        if key is not None:
            try:
                db_key(key)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc} (event key {_show(key)})") from None
            if self._policy == "score" or (margin and w is not None):
                e0 = db.peek(key)
                if e0 is None:
                    rescore = self._policy == "score"
                elif margin:
                    self._margin_weight(e0.fn_cost if pos else e0.fp_cost, pos, wt, key, x)
        if rescore:  # the current model's score (reused when predict_one just gave it for this x)
            cached = self._cache_x
            p = self._cache_score if cached is not None and _same_features(cached, x) else self._score_now(x, kwargs)
            if margin:
                s, fn, fp, nm = self._margin_entry(p, x, key)
            else:
                if p - p != 0.0:
                    self._reject_score(p)
                s, fn, fp, nm = p, 1.0, 1.0, 0
            weight = self._margin_weight(fn if pos else fp, pos, wt, key, x) if margin else wt
        if key is not None:
            # the decision is read here and taken from the store only once the model has learned,
            # so an interrupted learn_one leaves it pending
            e = db.peek(key)
            if e is None and not rescore:
                db.take(key)  # on_unknown="raise": KeyError, nothing changed; "count": counted, nothing learned
                db.tick()
                return
            if e is not None:  # (its weight was checked by the peek when w was given)
                s, fn, fp, nm = e.score, e.fn_cost, e.fp_cost, e.model_labels
                weight = self._margin_weight(fn if pos else fp, pos, wt, key, x) if margin else wt
        self._cache_x = None
        model_kwargs = self._route("learn_one", kwargs) if kwargs else {}
        if w is not None and self._model_takes_w():
            model_kwargs["w"] = w  # the sample weight only: a cost never reaches the model
        first_negative = not pos and self._neg_seen is None
        self.classifier.learn_one(x, y, **model_kwargs)
        db._as_whole(self._record_learned, db, key, pos, y, s, weight, tf, seg, nm, first_negative, margin)

    def _record_learned(self, db: Any, key: Hashable | None, pos: bool, y: Any, s: float, weight: float,
                        tf: float | None, seg: Any, nm: int, first_negative: bool, margin: bool) -> None:
        """The end of :meth:`_learn_stored`, once the model has learned: the decision taken
        from the store, the thresholder updated, the event logged, the commit if due."""
        if key is not None:
            db.take(key)  # the decision (or, with on_unknown="score", the unknown key's count)
        if first_negative:
            self._neg_seen = y  # the first negative label (predict_one returns it; checkpointed below)
        if margin:
            self._n_model_labels += 1
        if not margin or nm >= self.min_model_labels:
            self._apply(s, pos, weight, tf, seg)
        else:  # a cold start's margin: the model had learned too few labels to score it
            self._n_cold_skipped += 1
        if self._segmented is not None:
            db.log(s, int(pos), weight, t=tf, segment=seg, model_labels=nm)
        else:
            db.log(s, int(pos), weight, t=tf, model_labels=nm)
        if first_negative:
            db.commit(checkpoint=True)  # the negative label is state the log does not carry
        else:
            db.tick()
