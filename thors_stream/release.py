"""Release files: the thresholds a re-threshold job ships, as versioned JSON.

``thors fit --out thresholds.json`` writes one; ``thors fit --baseline thresholds.json``
reads one back (the deployed thresholds). The format is described by the JSON schema
``thors_stream/schemas/release.schema.json`` (:func:`release_schema`) and checked on
reading by :func:`validate_release`, a small validator for the subset of JSON Schema the
schema uses (``type``, ``const``, ``enum``, ``required``, ``properties``,
``additionalProperties``, ``items``, ``minimum``, ``maximum``, ``pattern``, ``$ref`` to
``#/$defs/...``, ``anyOf``) — no dependency.

Format version 1 (all numbers JSON numbers; a ``-inf`` threshold is the string ``"-inf"``)::

    {
      "format": "thors-release", "version": 1,
      "created_utc": "2026-11-22T20:30:00Z",
      "library": {"name": "thors_stream", "version": "0.1.0"},
      "input": {"path": "scores.csv", "sha256": "<64 hex>", "rows": 100000},
      "parameters": {...the command's options...},
      "global": ENTRY,
      "segments": {"<segment>": ENTRY + {"source": "segment" | "pooled" | "global"}, ...} or null,
      "baseline": null or {"path", "threshold", "cost", "new_cost", "saving", "shift", "forced",
                           "decide_on", "rule_change", "changes", "segments"},
      "decision": DECISION
    }

The DECISION says what the thresholds apply to and how:

* ``decide_on``: ``"score"`` (flag iff ``score > threshold``) or ``"margin"`` (the score is a
  probability ``p``; flag iff the cost margin ``logit(p) + log(fn_cost / fp_cost) > threshold``,
  ``p`` clipped to ``[proba_clip, 1 - proba_clip]``; see :mod:`thors_stream.margin`);
* ``score_col``, ``fn_cost`` and ``fp_cost``: each cost ``{"column": name}`` (the event's
  own cost, read from that column) or ``{"value": number}``; ``proba_clip`` (margin);
  ``segment_col`` with segments;
* ``apply``: the same rule in words, with the column names, e.g. ``"flag iff logit(p) +
  log(amount / 5.0) > threshold, p clipped to [1e-12, 1 - 1e-12]"``.

A file written before the field existed has no ``decision``: its thresholds are on the score
(:func:`release_decision` says so). With per-event costs or the margin, costs are money: an
entry's ``cost`` is the money lost, ``n1`` the FN cost at stake and ``n0`` the FP cost.
A ``baseline`` with another decision rule (the other ``decide_on``, or a margin with other
costs) has ``shift`` null and a ``rule_change`` (``from``, ``to``, ``was``, ``now``): two
thresholds on different scales are not a move of one. ``changes`` lists the other settings that
differ from the deployed release's, in words (``costs changed from FN 10/FP 1 to FN 1/FP 1``;
segments, the Neyman-Pearson constraint, the class prior); ``segments`` gives, per segment of
the new run, the threshold the deployed release applies to it (``deployed``: its own, or the
global one), the new one and the shift.

An ENTRY is the threshold (flag iff the decision's quantity is ``> threshold``) and what it does on
the input (on the segment's events for a segment): ``cost``, ``n0``, ``n1``, ``k0``,
``k1`` (weighted), ``count0``, ``count1``, ``count_k0``, ``count_k1`` (events), ``fpr``,
``fnr`` (empirical, weighted), ``supported`` (both classes with at least
``parameters.min_per_class`` events) and ``bounds`` (valid bounds on the true event rates
at ``bounds.confidence``, see :mod:`thors_stream.bounds`; for unit weights also
``cost_paid_upper``, the valid bound on the cost paid on ``n_test`` new events, also written
``cost_upper`` as before). A segment whose ``source`` is ``"global"`` had too few events of a class and
deploys the global threshold; its statistics are those of the global threshold on the
segment's events.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from typing import Any

import numpy as np

from ._files import StagedOutputs, replace_target
from .result import ThresholdResult

__all__ = ["RELEASE_FORMAT", "RELEASE_VERSION", "evaluate_threshold", "read_release", "release_decision",
           "release_entry", "release_predict", "release_schema", "release_threshold", "validate_release",
           "write_release"]

RELEASE_FORMAT = "thors-release"
RELEASE_VERSION = 1
_SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schemas", "release.schema.json")


def evaluate_threshold(threshold: float, scores: Any, y: Any, *, fn_cost: float, fp_cost: float,
                       sample_weight: Any = None, class_prior: float | None = None) -> ThresholdResult:
    """What a *given* threshold does on labelled scores, as a :class:`ThresholdResult`.

    The cost is the THORS cost ``a * k1 + b * (n0 - k0)`` (``a, b`` from
    :func:`~thors_stream.class_coefficients`), so it compares directly with the cost of
    ``thors_threshold`` on the same data: the deployed threshold's cost minus the new one's
    is the saving. Inputs are taken as validated (finite scores, 0/1 labels, weights > 0).
    O(n).

    >>> r = evaluate_threshold(0.5, [0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1], fn_cost=10, fp_cost=1)
    >>> r.cost, r.count_k1, r.fpr
    (11.0, 1, 0.5)
    """
    from .costs import class_coefficients

    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(y).astype(bool)
    w = np.ones(s.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    thr = float(threshold)
    below = s <= thr
    n1, n0 = float(w[lab].sum()), float(w[~lab].sum())
    k1, k0 = float(w[lab & below].sum()), float(w[~lab & below].sum())
    c1 = int(np.count_nonzero(lab))
    c0 = s.shape[0] - c1
    ck1 = int(np.count_nonzero(lab & below))
    ck0 = int(np.count_nonzero(below)) - ck1
    a, b = class_coefficients(float(fn_cost), float(fp_cost), n0, n1, class_prior)
    return ThresholdResult(threshold=thr, cost=float(a * k1 + b * (n0 - k0)), n0=n0, n1=n1, k0=k0, k1=k1,
                           count0=c0, count1=c1, count_k0=ck0, count_k1=ck1, fn_cost=float(fn_cost),
                           fp_cost=float(fp_cost), class_prior=class_prior)


def _thr_json(t: float) -> float | str:
    return "-inf" if t == -math.inf else float(t)


def _thr_from_json(v: Any) -> float:
    return -math.inf if v == "-inf" else float(v)


def release_entry(result: ThresholdResult, *, min_per_class: int, confidence: float = 0.95,
                  n_test: int | None = None) -> dict[str, Any]:
    """One ENTRY of a release file (see the module docstring) for ``result``. O(1) plus the bounds.

    >>> from thors_stream import thors_threshold
    >>> e = release_entry(thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], fn_cost=1, fp_cost=1),
    ...                   min_per_class=1)
    >>> e["threshold"], e["cost"], e["supported"], sorted(e["bounds"])[:2]
    (0.1, 1.0, True, ['confidence', 'fnr_lower'])
    """
    d: dict[str, Any] = {"threshold": _thr_json(result.threshold), "cost": float(result.cost)}
    for k in ("n0", "n1", "k0", "k1"):
        d[k] = float(getattr(result, k))
    for k in ("count0", "count1", "count_k0", "count_k1"):
        d[k] = int(getattr(result, k))
    d["fpr"], d["fnr"] = float(result.fpr), float(result.fnr)
    d["supported"] = result.is_supported(min_per_class)
    b = result.bounds(confidence, n_test if n_test is not None else None)
    bd: dict[str, Any] = {"confidence": confidence}
    bd.update({k: float(getattr(b, k)) for k in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper")})
    if not b.weighted and b.n_test is not None:
        bd["n_test"] = int(b.n_test)
        assert b.cost_upper_exact is not None  # unweighted with n_test
        bd["cost_paid_upper"] = bd["cost_upper"] = float(b.cost_upper_exact)  # (cost_upper: its earlier name)
    d["bounds"] = bd
    return d


def release_schema() -> dict[str, Any]:
    """The release file's JSON schema (``thors_stream/schemas/release.schema.json``)."""
    with open(_SCHEMA_PATH, encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


_TYPES: dict[str, Any] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    "integer": int, "number": (int, float),
}


def _check(v: Any, sch: dict[str, Any], root: dict[str, Any], where: str) -> str | None:
    """The first violation of ``sch`` by ``v`` (a message), or ``None``."""
    if "$ref" in sch:
        return _check(v, root["$defs"][sch["$ref"].rsplit("/", 1)[1]], root, where)
    if "anyOf" in sch:
        errors = [_check(v, s, root, where) for s in sch["anyOf"]]
        if all(errors):  # report the branch that got deepest into the value
            return max(errors, key=lambda e: e.split(":", 1)[0].count("."))  # type: ignore[union-attr]
    if "type" in sch:
        types = sch["type"] if isinstance(sch["type"], list) else [sch["type"]]
        ok = any(isinstance(v, _TYPES[t]) and not (isinstance(v, bool) and t in ("integer", "number"))
                 for t in types)
        if not ok:
            return f"{where}: expected {' or '.join(types)}, got {type(v).__name__}"
    if "const" in sch and v != sch["const"]:
        return f"{where}: must be {sch['const']!r}, got {v!r}"
    if "enum" in sch and v not in sch["enum"]:
        return f"{where}: must be one of {sch['enum']}, got {v!r}"
    if isinstance(v, int) and not isinstance(v, bool):
        try:
            float(v)
        except OverflowError:  # (math.isfinite would raise it)
            return f"{where}: must be finite (a float64), got an integer of {v.bit_length()} bits"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            return f"{where}: must be finite, got {v!r}"
        if "minimum" in sch and v < sch["minimum"]:
            return f"{where}: must be >= {sch['minimum']}, got {v!r}"
        if "exclusiveMinimum" in sch and v <= sch["exclusiveMinimum"]:
            return f"{where}: must be > {sch['exclusiveMinimum']}, got {v!r}"
        if "maximum" in sch and v > sch["maximum"]:
            return f"{where}: must be <= {sch['maximum']}, got {v!r}"
    if isinstance(v, str) and "pattern" in sch and not re.fullmatch(sch["pattern"], v):
        return f"{where}: does not match {sch['pattern']!r}: {v[:40]!r}"
    if isinstance(v, list) and "items" in sch:
        for i, x in enumerate(v):
            err = _check(x, sch["items"], root, f"{where}[{i}]")
            if err:
                return err
    if isinstance(v, dict):
        for k in sch.get("required", ()):
            if k not in v:
                return f"{where}: missing {k!r}"
        props = sch.get("properties", {})
        extra = sch.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                err = _check(x, props[k], root, f"{where}.{k}")
            elif extra is False:
                err = f"{where}: unexpected field {k!r}"
            elif isinstance(extra, dict):
                err = _check(x, extra, root, f"{where}.{k}")
            else:
                err = None
            if err:
                return err
    return None


def validate_release(doc: Any, schema: dict[str, Any] | None = None) -> None:
    """Raise ``ValueError`` naming the first field of ``doc`` that breaks the release schema.

    >>> validate_release({"format": "thors-release"})
    Traceback (most recent call last):
    ...
    ValueError: not a valid release file: release: missing 'version'
    """
    root = release_schema() if schema is None else schema
    err = _check(doc, root, root, "release")
    if err:
        raise ValueError(f"not a valid release file: {err}")


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def make_release(global_entry: dict[str, Any], *, segments: dict[str, dict[str, Any]] | None,
                 input_info: dict[str, Any], parameters: dict[str, Any],
                 baseline: dict[str, Any] | None = None, decision: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assemble (and validate) a release document; ``decision`` is the DECISION of the module
    docstring (omitted: a file on the score, as before the field existed). O(size)."""
    from ._version import library_version as _version

    doc = {
        "format": RELEASE_FORMAT, "version": RELEASE_VERSION, "created_utc": _utc_now(),
        "library": {"name": "thors_stream", "version": _version()},
        "input": input_info, "parameters": parameters, "global": global_entry,
        "segments": segments, "baseline": baseline,
    }
    if decision is not None:
        doc["decision"] = decision
    validate_release(doc)
    return doc


def dumps_release(doc: dict[str, Any]) -> str:
    """The release as JSON text (strict: no NaN or infinity), newline-terminated."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def write_release(doc: dict[str, Any], path: str) -> None:
    """Write the release atomically (a temporary file in the same directory, fsync, rename)."""
    text = dumps_release(doc)
    path = replace_target(path)  # a symlink's target; never a FIFO or device
    with StagedOutputs() as stage, open(stage.path(path), "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def read_release(path: str) -> dict[str, Any]:
    """Read and validate a release file; ``ValueError`` naming the file and the bad field.

    Only regular files are read (at most 64 MiB); the JSON must be strict (no NaN).
    """
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file")
    if st.st_size > 64 << 20:
        raise ValueError(f"{path}: too large for a release file ({st.st_size:,} bytes)")

    def no_constants(c: str) -> Any:
        raise ValueError(f"non-standard JSON constant {c}")

    def one_value_per_name(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for name, _ in pairs:  # (which of two values wins would be the reader's guess)
            if name in seen:
                raise ValueError(f"the name {name!r} appears twice in one object")
            seen.add(name)
        return dict(pairs)

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, parse_constant=no_constants, object_pairs_hook=one_value_per_name)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a release file (not valid JSON: {str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a release file (JSON nested too deeply)") from None
    try:
        validate_release(doc)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    checked: dict[str, Any] = doc
    return checked


def release_threshold(doc: dict[str, Any], segment: str | None = None) -> float:
    """The threshold a release deploys: the segment's when ``segment`` is listed, else the global one.

    >>> release_threshold({"global": {"threshold": "-inf"}, "segments": None})
    -inf
    """
    segs = doc.get("segments") or {}
    if segment is not None and segment in segs:
        return _thr_from_json(segs[segment]["threshold"])
    return _thr_from_json(doc["global"]["threshold"])


def release_decision(doc: dict[str, Any]) -> dict[str, Any]:
    """The DECISION of a release (see the module docstring): how its thresholds are applied.

    A file written before releases recorded it decides on the score, and gets the
    equivalent DECISION (its costs taken from its parameters). O(1).

    >>> release_decision({"parameters": {"score_col": "s", "fn_cost": 10.0, "fp_cost": 1.0}})["apply"]
    'flag iff s > threshold'
    """
    if "decision" in doc:
        found: dict[str, Any] = doc["decision"]
        return found
    params = doc.get("parameters", {})
    s = params.get("score_col", "score")

    def spec(name: str) -> dict[str, Any]:
        if params.get(name + "_col") is not None:
            return {"column": params[name + "_col"]}
        return {"value": params.get(name)}

    d: dict[str, Any] = {"decide_on": "score", "score_col": s, "fn_cost": spec("fn_cost"), "fp_cost": spec("fp_cost")}
    d["apply"] = f"flag iff {s} > threshold"
    return d


def release_predict(doc: dict[str, Any], scores: Any, *, fn_cost: Any = None, fp_cost: Any = None,
                    segments: Any = None) -> np.ndarray:
    """Decide new events with a release: a bool array, ``True`` for a flagged event. O(n).

    ``scores`` are the events' scores (probabilities when the release decides on the cost
    margin). On the margin, each cost the release reads from a column is needed, one per
    event (``fn_cost=amounts``); a cost it records as a number is used when none is given (a
    number given instead must equal it). With segments, ``segments`` (one per event, as text)
    picks each event's threshold (the global one for a segment the release does not list).

    >>> doc = {"global": {"threshold": 0.0}, "segments": None, "decision": {
    ...     "decide_on": "margin", "score_col": "p", "fn_cost": {"column": "amount"}, "fp_cost": {"value": 5.0},
    ...     "proba_clip": 2.0**-40, "apply": "flag iff logit(p) + log(amount / 5.0) > threshold"}}
    >>> release_predict(doc, [0.01, 0.01], fn_cost=[1000.0, 100.0]).tolist()   # 1% of 1,000 > 5; 1% of 100 < 5
    [True, False]
    """
    dec = release_decision(doc)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-d, got shape {s.shape}")
    segs = doc.get("segments") or {}
    if segments is None:
        thr = np.full(s.shape[0], release_threshold(doc))
    else:
        g = [str(x) for x in segments]
        if len(g) != s.shape[0]:
            raise ValueError(f"segments must have one value per event ({s.shape[0]}), got {len(g)}")
        glob = release_threshold(doc)
        thr = np.array([_thr_from_json(segs[k]["threshold"]) if k in segs else glob for k in g], dtype=np.float64)
    if dec["decide_on"] == "score":
        if fn_cost is not None or fp_cost is not None:
            raise ValueError("this release decides on the score: per-event costs do not enter its decisions")
        out: np.ndarray = s > thr
        return out
    from .margin import PROBA_CLIP, cost_margins

    if dec.get("proba_clip", PROBA_CLIP) != PROBA_CLIP:
        raise ValueError(f"this release clips probabilities to {dec['proba_clip']!r}, this library to {PROBA_CLIP!r}")

    def cost(given: Any, spec: dict[str, Any], name: str) -> Any:
        if "column" in spec:
            if given is None:
                raise ValueError(f"this release decides on the cost margin with {name} from the column "
                                 f"{spec['column']!r}: give {name}= (one per event)")
            return given
        if given is not None and not (np.ndim(given) == 0 and float(given) == spec["value"]):
            raise ValueError(f"this release's {name} is {spec['value']!r}; a margin with other costs is another rule")
        return spec["value"]

    margins = cost_margins(s, cost(fn_cost, dec["fn_cost"], "fn_cost"), cost(fp_cost, dec["fp_cost"], "fp_cost"))
    out = margins > thr
    return out
