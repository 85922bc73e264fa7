"""Checkpoints and pickling of :class:`~thors_stream.river.ThorsClassifier`'s thresholding state.

``save_thresholding`` and ``load_thresholding`` (and a store's checkpoints) write and read the
:mod:`thors_stream.checkpoint` format: the :class:`~thors_stream.StreamingThors` state, the
warm-up counters, the pending decisions under their typed keys (:mod:`thors_stream._keys`),
and, with ``window="auto"`` or ``segment=``, the selector's or the segments' parts. A restore
checks every part against the wrapper's settings before it takes any. Pickling copies the
wrapper's ``__dict__`` (a wrapper with a store refuses: its state is the file) and fills in
what a pickle of an older version lacks.

>>> import pickle
>>> from river import linear_model
>>> from thors_stream.river import ThorsClassifier
>>> m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, warm_up=0)
>>> m.learn_one({"x": 1.0}, True); m.learn_one({"x": -1.0}, False)
>>> pickle.loads(pickle.dumps(m)).threshold == m.threshold
True
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Hashable
from typing import Any

import numpy as np

from ._keys import decode_key, encode_key
from ._river_base import RiverBase
from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST
from .stream import StreamingThors

__all__ = ["StatePart"]


class StatePart(RiverBase):
    """The checkpoints and pickling of :class:`~thors_stream.river.ThorsClassifier` (see the module docstring):
    its :meth:`save_thresholding` and :meth:`load_thresholding`."""

    # ---------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        db = self.__dict__.get("_db")
        if db is not None:
            raise TypeError(f"a ThorsClassifier with a store ({db.path!r}) cannot be pickled or copied: its "
                            "thresholding state and pending decisions live in the store; close it and open the "
                            "store again with a new wrapper (pickle the wrapped model on its own)")
        return self.__dict__

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "_margin" not in state:  # pickled before per-event costs existed: numbers for both costs
            state = {**state, "_margin": False, "_fn_setting": 1.0, "_fp_setting": 1.0, "min_model_labels": 100,
                     "_lean_labels": state["_plain_labels"], "_special": state["_segmented"] is not None,
                     "_n_model_labels": 0, "_n_cold_skipped": 0}
        if "_seg_auto" not in state:  # (nor windows=, segments with window='auto' and pooling)
            state = {**state, "_seg_auto": False, "windows": None, "pool_weight": None, "pool_every": None}
        if "_policy" not in state:  # (nor a store, nor the unknown-key policy)
            state = {**state, "store": None, "max_pending_age": None, "on_unknown": None, "store_options": None,
                     "_policy": "raise", "_n_matched": 0, "_n_unmatched": 0, "_db": None}
        self.__dict__.update(state)

    # ---------------------------------------------------------------- checkpoints
    def save_thresholding(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> None:
        """Checkpoint the thresholding state (not the wrapped model) atomically.

        Writes the :mod:`thors_stream.checkpoint` format: the StreamingThors state, the
        warm-up counters and the scores waiting for a delayed label under their keys; with
        ``window="auto"``, every candidate window and the selector's weights, costs, choice
        and generator state too, so a restored wrapper continues exactly as this one
        would (the same thresholds and the same draws); with ``segment=``, every held
        segment's summary under its key (typed as pending keys are), in eviction order, and
        the eviction count.
        Keys keep their type: ``str``, ``int``, ``float`` (``inf`` and ``nan`` too),
        ``bool``, ``bytes``, ``None`` and tuples of these; any other key raises
        ``TypeError`` before anything is written. Save the wrapped model separately (river
        models pickle); :meth:`load_thresholding` restores this part into a wrapper
        built with the same settings. ``key``: bytes for an HMAC-SHA256 trailer (then
        needed to load). O(n + pending).

        Examples
        --------
        >>> import os, tempfile
        >>> from river import linear_model
        >>> from thors_stream.river import ThorsClassifier
        >>> m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, warm_up=0)
        >>> m.learn_one({"x": 1.0}, True); m.learn_one({"x": -1.0}, False)
        >>> _ = m.predict_one({"x": 0.5}, key="tx-1")
        >>> path = os.path.join(tempfile.mkdtemp(), "thr.ckpt")
        >>> m.save_thresholding(path)
        >>> m2 = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, warm_up=0)
        >>> m2.load_thresholding(path)
        >>> m2.threshold == m.threshold, m2.n_pending
        (True, 1)
        """
        from .checkpoint import write_checkpoint

        params, state, arrays = self._thresholding_parts()
        write_checkpoint(path, "ThorsClassifier.thresholding", params, state, arrays, key=key)

    def _thresholding_parts(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        """``(params, state, arrays)`` of the thresholding state, as :meth:`save_thresholding`
        writes them (with a store, no pending keys: they are in the store). O(window + pending)."""
        keys = [encode_key(k) for k in self._pending]
        params, state, arrays = self._thors._checkpoint_parts()
        params = {"thors": params, "warm_up": self.warm_up, "max_pending": self.max_pending}
        state = {
            "thors": state, "last_t": self._last_t, "n_learned": self._n_learned, "n_pos": self._n_pos,
            "ready": self._ready, "n_evicted": self._n_evicted, "pending_keys": keys,
        }
        if not self._plain_labels:  # the negative label predict_one answers (learned, or given)
            state["neg_label"] = encode_key(self._neg_seen)
        if self._margin:  # per-event costs: the settings, the model's label count, each pending decision's parts
            params["margin"] = self._margin_settings()
            state["n_model_labels"], state["n_cold_skipped"] = self._n_model_labels, self._n_cold_skipped
            entries = list(self._pending.values())
            arrays = {**arrays, "pending_scores": np.array([e[0] for e in entries], dtype=np.float64),
                      "pending_fn": np.array([e[1] for e in entries], dtype=np.float64),
                      "pending_fp": np.array([e[2] for e in entries], dtype=np.float64),
                      "pending_labels": np.array([e[3] for e in entries], dtype=np.int64)}
        else:
            arrays = {**arrays, "pending_scores": np.array(list(self._pending.values()), dtype=np.float64)}
        if self._selector is not None:  # window="auto": "thors" is its longest window
            sp, ss, sa = self._selector._checkpoint_parts()
            params["selector"], state["selector"] = sp, ss
            arrays.update(sa)
        if self._segmented is not None:  # segment=: "thors" is the global summary
            gp, gs, ga, seg_keys = self._segmented._checkpoint_parts()
            params["segments"] = gp
            state["segments"] = gs
            state["segment_keys"] = [_encode_segment_key(k) for k in seg_keys]
            arrays.update(ga)
        return params, state, arrays

    def load_thresholding(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> None:
        """Restore what :meth:`save_thresholding` wrote; the settings must match this wrapper.

        Raises ``ValueError`` naming the file (changing nothing) for a file that is not
        a regular file, is corrupt, fails any invariant (see
        :meth:`StreamingThors.load <thors_stream.StreamingThors.load>`), or was written
        with other settings or more pending scores than ``max_pending``. ``key``: the
        HMAC-SHA256 key the file was written with. Files written before keys were
        tagged by type (their keys are ``str`` or ``int``) are read too.
        """
        from .checkpoint import read_checkpoint_full

        if self._db is not None:
            raise ValueError(f"this wrapper resumes from its store {self._db.path!r}, not from a file; load "
                             f"{os.fspath(path)!r} into a wrapper without a store")
        ck = read_checkpoint_full(path, "ThorsClassifier.thresholding", key=key, literal=("pending_keys",))
        self._restore_thresholding(ck)

    def _restore_thresholding(self, ck: Any) -> None:
        """Check every part of the checkpoint ``ck`` against this wrapper's settings, then take
        it (nothing changes when a check fails). O(window + pending)."""
        where, legacy = ck.where, ck.revision < 2
        arrays = dict(ck.arrays)
        scores = arrays.pop("pending_scores", None)
        costs = [arrays.pop(k, None) for k in ("pending_fn", "pending_fp", "pending_labels")]
        params, state = ck.params, ck.state
        if not isinstance(params, dict) or not isinstance(state, dict):
            raise ValueError(f"{where} is invalid: params and state must be objects")
        margin = "margin" in params
        if margin != self._margin:
            said = ("on the cost margin (per-event fn_cost/fp_cost)", "on the score (numbers for fn_cost and fp_cost)")
            raise ValueError(f"{where} was written by a wrapper deciding {said[not margin]}; this wrapper decides "
                             f"{said[not self._margin]}")
        auto, segmented = "selector" in params, "segments" in params
        if auto != (self._selector is not None):
            raise ValueError(f"{where} was written by a wrapper with window={'auto' if auto else 'not auto'!s}, "
                             f"this wrapper has window={self.window!r}")
        if segmented != (self._segmented is not None):
            raise ValueError(f"{where} was written by a wrapper {'with' if segmented else 'without'} segment=, "
                             f"this wrapper has segment={self.segment!r}")
        extra = {"selector"} if auto else {"segments"} if segmented else set()
        _check_fields(params, "params", {"thors", "warm_up", "max_pending"} | extra | ({"margin"} if margin else set()),
                      where)
        optional = {"neg_label"} & set(state)  # (files written before it was saved lack it)
        _check_fields(state, "state", {"thors", "last_t", "n_learned", "n_pos", "ready", "n_evicted",
                                       "pending_keys"} | extra | optional
                      | ({"segment_keys"} if segmented else set())
                      | ({"n_model_labels", "n_cold_skipped"} if margin else set()), where)
        if margin and params["margin"] != self._margin_settings():
            raise ValueError(f"{where} was written with per-event cost settings {params['margin']!r}, this wrapper "
                             f"has {self._margin_settings()!r} (a callable is recorded as such, not compared)"[:600])
        if not margin and any(c is not None for c in costs):
            raise ValueError(f"{where} is invalid: it holds pending costs without per-event costs")
        neg = self._neg_seen
        if optional:
            neg = _decode_pending_key(state["neg_label"], False, "state.neg_label", where)
        own = {k: a for k, a in arrays.items() if not k.startswith(("sel", "seg_"))}
        if not auto and any(k.startswith("sel") for k in arrays):
            raise ValueError(f"{where} is invalid: it holds the selector's arrays without window='auto'")
        if not segmented and any(k.startswith("seg_") for k in arrays):
            raise ValueError(f"{where} is invalid: it holds segments' arrays without segment=")
        thors = StreamingThors._from_checkpoint_parts(params["thors"], state["thors"], own, where=where,
                                                      legacy=legacy)
        warm_up = _check_int(params["warm_up"], "params.warm_up", 0, where)
        max_pending = _check_int(params["max_pending"], "params.max_pending", 1, where)
        mine = (self._thors.fn_cost, self._thors.fp_cost, self._thors.window, self._thors._period_s, self.class_prior,
                self.warm_up, self.max_fpr, self.max_fnr, self.confidence if self._np else None)
        theirs = (thors.fn_cost, thors.fp_cost, thors.window, thors._period_s, thors.class_prior, warm_up,
                  thors.max_fpr, thors.max_fnr, thors.confidence if self._np else None)
        if mine != theirs:
            raise ValueError(
                f"{where} was written with (fn_cost, fp_cost, window, period, class_prior, "
                f"warm_up, max_fpr, max_fnr, confidence) = {theirs}, this wrapper has {mine}"
            )
        n_learned = _check_int(state["n_learned"], "state.n_learned", 0, where)
        n_pos = _check_int(state["n_pos"], "state.n_pos", 0, where)
        n_evicted = _check_int(state["n_evicted"], "state.n_evicted", 0, where)
        ready = state["ready"]
        if n_pos > n_learned:
            raise ValueError(f"{where} is invalid: state.n_pos={n_pos} exceeds state.n_learned={n_learned}")
        if not isinstance(ready, bool) or ready != (n_learned >= warm_up and 0 < n_pos < n_learned):
            raise ValueError(f"{where} is invalid: state.ready={ready!r} does not follow from n_learned={n_learned}, "
                             f"n_pos={n_pos} and warm_up={warm_up}")
        last_t = state["last_t"]
        if isinstance(last_t, bool) or not isinstance(last_t, (int, float)) or math.isnan(last_t) or \
                last_t == math.inf or (not self._timed and last_t != -math.inf):
            raise ValueError(f"{where} is invalid: state.last_t must be -inf{' or finite' if self._timed else ''}, "
                             f"got {last_t!r}")
        raw = state["pending_keys"]
        if not isinstance(raw, list):
            raise ValueError(f"{where} is invalid: state.pending_keys must be a list, got {type(raw).__name__}")
        keys = [_decode_pending_key(k, legacy, f"state.pending_keys[{i}]", where) for i, k in enumerate(raw)]
        if scores is None or scores.shape != (len(keys),):
            got = "no array" if scores is None else f"shape {scores.shape}"
            raise ValueError(f"{where} is invalid: array 'pending_scores' must hold one score per pending key "
                             f"({len(keys)}), got {got}")
        finite = np.isfinite(scores)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"{where} is invalid: array 'pending_scores' holds {float(scores[i])!r} at {i} "
                             f"(the score pending under key {keys[i]!r}); scores are finite")
        n_model, n_skipped = 0, 0
        if margin:
            n_model = _check_int(state["n_model_labels"], "state.n_model_labels", 0, where)
            n_skipped = _check_int(state["n_cold_skipped"], "state.n_cold_skipped", 0, where)
            if n_skipped + n_learned > n_model:
                raise ValueError(f"{where} is invalid: state.n_cold_skipped={n_skipped} plus state.n_learned="
                                 f"{n_learned} exceeds state.n_model_labels={n_model}")
            pending = collections.OrderedDict(zip(keys, zip(scores.tolist(), *self._pending_costs(costs, keys, n_model,
                                                                                                  where))))
        else:
            pending = collections.OrderedDict(zip(keys, scores.tolist()))
        if len(pending) != len(keys):
            raise ValueError(f"{where} is invalid: state.pending_keys holds a key twice")
        if len(pending) > min(max_pending, self.max_pending):
            raise ValueError(f"{where} holds {len(pending)} pending scores, more than max_pending="
                             f"{min(max_pending, self.max_pending)}")
        if self._selector is not None:  # checks the selector's parts, then takes them
            self._selector._restore(params["selector"], state["selector"], arrays, thors, where)
        if self._segmented is not None:  # checks every segment's summary, then takes them
            raw_keys = state["segment_keys"]
            if not isinstance(raw_keys, list):
                raise ValueError(f"{where} is invalid: state.segment_keys must be a list, "
                                 f"got {type(raw_keys).__name__}")
            seg_keys = [_decode_pending_key(k, False, f"state.segment_keys[{i}]", where)
                        for i, k in enumerate(raw_keys)]
            self._segmented._restore(params["segments"], state["segments"],
                                     {k: a for k, a in arrays.items() if k.startswith("seg_")}, seg_keys,
                                     params["thors"], thors, where)
        self._thors = thors
        if self._selector is None:
            self._source = thors  # the fast learn_one path and predict_one read it
        self._last_t = float(last_t)
        self._n_learned, self._n_pos = n_learned, n_pos
        self._ready, self._n_evicted = ready, n_evicted
        self._pending = pending
        self._n_model_labels, self._n_cold_skipped = n_model, n_skipped
        if not self._plain_labels and self.neg_label is None:
            self._neg_seen = neg
        self._cache_x = None

    @staticmethod
    def _pending_costs(costs: list[np.ndarray | None], keys: list[Hashable], n_model: int,
                       where: str) -> tuple[list[float], list[float], list[int]]:
        """The pending decisions' costs and label counts of a checkpoint, checked: one per
        key, costs in ``[2**-960, 2**960]``, counts from 0 to the model's ``n_model``."""
        for name, a in zip(("pending_fn", "pending_fp", "pending_labels"), costs):
            if a is None or a.shape != (len(keys),):
                got = "no array" if a is None else f"shape {a.shape}"
                raise ValueError(f"{where} is invalid: array {name!r} must hold one value per pending key "
                                 f"({len(keys)}), got {got}")
        fn, fp, labels = costs
        assert fn is not None and fp is not None and labels is not None
        for name, a in (("pending_fn", fn), ("pending_fp", fp)):
            bad = ~((a >= MIN_WEIGHTED_COST) & (a <= MAX_WEIGHTED_COST))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{where} is invalid: array {name!r} holds {float(a[i])!r} at {i} (the cost pending "
                                 f"under key {keys[i]!r}); costs lie in [2**-960, 2**960]"[:600])
        bad = (labels < 0) | (labels > n_model)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{where} is invalid: array 'pending_labels' holds {int(labels[i])} at {i} (key "
                             f"{keys[i]!r}); a decision's model had learned from 0 to state.n_model_labels="
                             f"{n_model} labels"[:600])
        return fn.tolist(), fp.tolist(), labels.tolist()



# ---------------------------------------------------------------- checkpoint helpers
_encode_pending_key = encode_key  # (the name this module used before keys moved to thors_stream._keys)


def _encode_segment_key(k: Any) -> list[Any]:
    """A segment key, tagged as pending keys are (:func:`thors_stream._keys.encode_key`)."""
    try:
        return encode_key(k)
    except TypeError:
        raise TypeError(f"save_thresholding stores segments that are str, int, float, bool, bytes, None or tuples "
                        f"of these, got {k!r}"[:400]) from None


def _decode_pending_key(v: Any, legacy: bool, field: str, where: str) -> Any:
    """Undo :func:`thors_stream._keys.encode_key` (``legacy``: a bare str or int, as files
    without ``revision`` wrote them)."""
    if legacy:
        if type(v) in (str, int):
            return v
        raise ValueError(f"{where} is invalid: {field} must be a str or int key, got {v!r}"[:400])
    return decode_key(v, field, where)


def _check_fields(obj: dict[str, Any], name: str, fields: set[str], where: str) -> None:
    if set(obj) != fields:
        raise ValueError(f"{where} is invalid: {name} must have the fields {sorted(fields)}, got {sorted(obj)}")


def _check_int(v: Any, field: str, lo: int, where: str) -> int:
    if type(v) is not int or not lo <= v < 2**63:
        raise ValueError(f"{where} is invalid: {field} must be an integer >= {lo}, got {v!r}"[:400])
    return v
