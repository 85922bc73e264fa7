"""``thors fit --baseline``: the deployed release against the new threshold (cost, saving, shifts, rule changes).

The deployed rule is evaluated on this run's data under this run's costs; the settings that
changed since it (costs, segments, Neyman-Pearson constraint, class prior) are named; a move
beyond ``--max-shift`` of the global threshold or of any segment's, or a change of decision
rule (the score against the cost margin, or a margin with other costs), is refused (exit 4)
unless ``--force``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from .cli_common import EXIT_SHIFT, Refused, _json_thr, _Rule, _shift, _thr_text


def _thr_value(v: Any) -> float:
    return -math.inf if v == "-inf" else float(v)


def _same_rule(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two decisions threshold the same quantity: both on the score, or both on the cost
    margin with the same costs (the margin's scale moves with the costs)."""
    if old["decide_on"] != new["decide_on"]:
        return False
    return bool(new["decide_on"] == "score" or (old["fn_cost"] == new["fn_cost"] and old["fp_cost"] == new["fp_cost"]))


def _baseline_keys(args: argparse.Namespace, old: dict[str, Any], ev: Any) -> np.ndarray:
    """What the deployed rule thresholds, on this file's events: the scores, or their cost margins
    with the deployed rule's costs (a cost column this run does not read is read for it)."""
    if old["decide_on"] == "score":
        return np.asarray(ev.scores)
    from .margin import cost_margins

    bad = ~((ev.scores >= 0.0) & (ev.scores <= 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"--baseline {args.baseline} decides on the cost margin of probabilities, but "
                         f"{args.score_col} is {ev.scores[i].item()!r} at data row {i + 1} (outside [0, 1]): the "
                         "deployed rule cannot be evaluated on this file")
    have = {c: a for c, a in ((args.fn_cost_col, ev.fn_costs), (args.fp_cost_col, ev.fp_costs)) if c is not None}
    need = list(dict.fromkeys(s["column"] for s in (old["fn_cost"], old["fp_cost"])
                              if "column" in s and s["column"] not in have))
    if need:
        if args.data == "-":
            raise ValueError(f"--baseline {args.baseline} decides with the cost column(s) {need}, which this run "
                             "does not read, and standard input cannot be read twice: give the data as a file")
        from .io import read_events

        try:
            extra = read_events(args.data, score_col=args.score_col, label_col=args.label_col, engine=args.engine,
                                fn_cost_col=need[0], fp_cost_col=need[1] if len(need) > 1 else None)
        except ValueError as exc:
            raise ValueError(f"--baseline {args.baseline} decides with the cost column(s) {need}: {exc}") from None
        have[need[0]] = extra.fn_costs
        if len(need) > 1:
            have[need[1]] = extra.fp_costs

    def cost(spec: dict[str, Any]) -> Any:
        return have[spec["column"]] if "column" in spec else spec["value"]

    try:
        return cost_margins(ev.scores, cost(old["fn_cost"]), cost(old["fp_cost"]))
    except ValueError as exc:  # (a cost the baseline gives, or one of its columns)
        raise ValueError(f"--baseline {args.baseline}: its decision's costs: {exc}") from None


def _costs_text(dec: dict[str, Any]) -> str:
    """A decision's costs in words: ``FN 10/FP 1``, ``FN amount/FP 3`` (a column by its name)."""
    def one(spec: dict[str, Any]) -> str:
        return str(spec["column"]) if "column" in spec else f"{spec['value']:g}"

    return f"FN {one(dec['fn_cost'])}/FP {one(dec['fp_cost'])}"


def _settings(dec: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    """What a run's thresholds depend on besides the data, in words, keyed by setting: the costs,
    the segments (and their pooling), the Neyman-Pearson constraint and the class prior."""
    seg = dec.get("segment_col", params.get("segment_col"))
    pool = params.get("pool_weight")
    caps = [f"true {k[4:].upper()} <= {params[k]:g}" for k in ("max_fpr", "max_fnr") if params.get(k) is not None]
    prior = params.get("class_prior")
    return {"costs": _costs_text(dec),
            "segments": "none" if seg is None else f"{seg}" + ("" if pool is None else f" (pooled, lambda {pool:g})"),
            "mode": "cost-optimal" if not caps else "Neyman-Pearson (" + " and ".join(caps) + ")",
            "class prior": "none" if prior is None else f"{prior:g}"}


def _changes(baseline: dict[str, Any], args: argparse.Namespace, decision: dict[str, Any]) -> list[str]:
    """The settings that differ from the deployed release's, each as ``costs changed from FN 10/FP 1
    to FN 1/FP 1`` (the decision rule itself, score or cost margin, is ``rule_change``'s)."""
    from .release import release_decision

    old = _settings(release_decision(baseline), baseline.get("parameters", {}))
    new = _settings(decision, {k: v for k, v in vars(args).items() if v is not None})
    return [f"{k} changed from {old[k]} to {new[k]}" for k in old if old[k] != new[k]]


def _compare_baseline(args: argparse.Namespace, baseline: dict[str, Any], ev: Any, rule: _Rule, r: Any,
                      decision: dict[str, Any], plan: Any = None) -> dict[str, Any]:
    """The ``baseline`` block: the deployed (global) rule's cost on this data under this run's
    costs, the new cost, the saving, the threshold's shift and, with segments, each segment's
    (against what the deployed release applies to the segment: its own threshold, else the
    global one), or (``rule_change``) that the decision rule changes, when the two thresholds
    are not on the same scale; ``changes`` lists the settings that differ from the deployed
    release's (costs, segments, Neyman-Pearson constraint, class prior), which explain a move.
    Refuses (exit 4) a shift of the global threshold or of any segment's beyond ``--max-shift``,
    and any rule change under ``--max-shift``, without ``--force``."""
    from .release import evaluate_threshold, release_decision, release_threshold

    old_rule = release_decision(baseline)
    old_thr = release_threshold(baseline)
    same = _same_rule(old_rule, decision)
    keys = rule.keys if same else _baseline_keys(args, old_rule, ev)
    old = evaluate_threshold(old_thr, keys, ev.labels, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                             sample_weight=rule.weights, class_prior=args.class_prior)
    shift = _shift(r.threshold, old_thr) if same else None
    changes = _changes(baseline, args, decision)
    info: dict[str, Any] = {
        "path": args.baseline, "threshold": "-inf" if math.isinf(old_thr) else old_thr, "cost": old.cost,
        "new_cost": r.cost, "saving": old.cost - r.cost,
        "shift": None if shift is None else "inf" if math.isinf(shift) else shift, "forced": False,
        "decide_on": old_rule["decide_on"],
        "rule_change": None if same else {"from": old_rule["decide_on"], "to": decision["decide_on"],
                                          "was": old_rule["apply"], "now": decision["apply"]},
        "changes": changes}
    moves: list[tuple[float, str]] = []  # (shift, "name old -> new (shift)") of every threshold compared
    if shift is not None:
        moves.append((shift, f"global {_thr_text(old_thr)} -> {_thr_text(r.threshold)}"))
    if plan is not None:
        listed = baseline.get("segments") or {}
        segs: dict[str, Any] = {}
        for k, v in plan.results.items():
            name = str(k)
            was = release_threshold(baseline, name)
            sh = _shift(v.threshold, was) if same else None
            segs[name] = {"threshold": _json_thr(was), "deployed": "segment" if name in listed else "global",
                          "new_threshold": _json_thr(v.threshold),
                          "shift": None if sh is None else "inf" if math.isinf(sh) else sh}
            if sh is not None:
                moves.append((sh, f"segment {name[:30]} {_thr_text(was)} -> {_thr_text(v.threshold)}"))
        info["segments"] = segs
    if args.max_shift is None:
        return info
    what = "money lost" if rule.money else "cost"
    why = f" ({'; '.join(changes)} since the deployed release)" if changes else ""
    if shift is None:
        if not args.force:
            raise Refused(f"refused: the decision rule changes from {old_rule['decide_on']} ({old_rule['apply']}) to "
                          f"{decision['decide_on']} ({decision['apply']}){why}: thresholds on different scales are "
                          f"not a shift --max-shift {args.max_shift:g} can bound; {what} {old.cost:,.6g} -> "
                          f"{r.cost:,.6g} on this data; use --force to publish it", EXIT_SHIFT)
        info["forced"] = True
        return info
    over = sorted((m for m in moves if m[0] > args.max_shift), key=lambda m: -m[0])
    if over:
        if not args.force:
            def by(x: float) -> str:
                return "an infinite amount" if math.isinf(x) else f"{x:.6g}"

            listed_moves = "; ".join(f"{t} (by {by(x)})" for x, t in over[:3])
            more = f" and {len(over) - 3} more" if len(over) > 3 else ""
            if len(moves) == 1:  # the global threshold alone: as it has always been said
                head = (f"the threshold would move by {by(shift)} (from {_thr_text(old_thr)} to "
                        f"{_thr_text(r.threshold)})")
            else:
                head = f"{len(over)} of {len(moves)} thresholds would move: {listed_moves}{more}"
            raise Refused(f"refused: {head}, more than --max-shift {args.max_shift:g}{why}; {what} "
                          f"{old.cost:,.6g} -> {r.cost:,.6g}; use --force to publish it", EXIT_SHIFT)
        info["forced"] = True
    return info
