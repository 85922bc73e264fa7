"""``thors fit``: the threshold of a file of labelled scores, its bounds, segments and release file.

:func:`cmd_fit` reads the file, finds the THORS threshold (cost-optimal or Neyman-Pearson, on
the score or the cost margin, per segment with ``--segment-col``), bounds it, compares it with
the deployed release (``--baseline``, :mod:`thors_stream.cli_baseline`), writes the release
file (``--out``) and the cost curve (``--plot``) and prints the report (text or ``--json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

import numpy as np

from ._files import StagedOutputs
from .cli_baseline import _compare_baseline, _thr_value
from .cli_common import (
    EXIT_OK,
    EXIT_UNSUPPORTED,
    Refused,
    _check_cost_options,
    _check_magnitudes_w,
    _check_outputs,
    _decision,
    _Rule,
    _thr_text,
    _wall_seconds,
)


def cmd_fit(args: argparse.Namespace) -> int:
    """``thors fit``: read a file, print (or ``--json``) the threshold, its cost and bounds;
    refuse unsupported data (exit 3) or a too large move from ``--baseline`` (exit 4), or a
    change of decision rule from it (``--decide-on`` or the margin's costs) under ``--max-shift``;
    write the release file (``--out``). O(n log n) (times the segments with pooling)."""
    from .batch import cost_curve
    from .io import read_events
    from .release import make_release, read_release, release_entry

    if args.out == "-" and args.json:
        raise ValueError("--out - and --json both write to standard output; choose one")
    if args.pool_weight is not None and args.segment_col is None:
        raise ValueError("--pool-weight needs --segment-col")
    if args.max_shift is not None and args.baseline is None:
        raise ValueError("--max-shift needs --baseline (the deployed release file)")
    if args.bootstrap and args.baseline is None:
        raise ValueError("--bootstrap needs --baseline (the deployed release file, missing on the first night)")
    if args.no_bounds and args.out is not None:
        raise ValueError("--no-bounds cannot be combined with --out: a release file carries its thresholds' bounds")
    _check_cost_options(args)
    _check_outputs(args.data, [("--plot", args.plot), ("--out", args.out)])
    first_release = args.bootstrap and not os.path.lexists(args.baseline)
    baseline = read_release(args.baseline) if args.baseline is not None and not first_release else None
    t0 = time.perf_counter()
    ev = read_events(args.data, score_col=args.score_col, label_col=args.label_col, weight_col=args.weight_col,
                     engine=args.engine, fn_cost_col=args.fn_cost_col, fp_cost_col=args.fp_cost_col,
                     segment_col=args.segment_col, digest=args.out is not None, probability=args.decide_on == "margin")
    t1 = time.perf_counter()
    rule = _Rule(args, ev)
    _check_magnitudes_w(ev, rule.weights, rule.fn_cost, rule.fp_cost, args.class_prior, rule.money)
    np_mode = {}
    if args.max_fpr is not None or args.max_fnr is not None:
        np_mode = {"max_fpr": args.max_fpr, "max_fnr": args.max_fnr, "confidence": args.confidence}
    r = rule.threshold(args, ev, **np_mode)
    t2 = time.perf_counter()
    n_test = len(ev) if args.n_test is None else args.n_test
    bounds = None if args.no_bounds else _bounds(r, args.confidence, n_test)
    issue = r.support_issue(args.min_per_class)
    if issue is not None:
        raise Refused(f"refused: {issue} (--min-per-class {args.min_per_class}); nothing published", EXIT_UNSUPPORTED)
    plan = None
    if args.segment_col is not None:
        from .segments import segment_thresholds

        # on the rule's keys (scores or cost margins) with its weights: per-event costs and the margin compose
        plan = segment_thresholds(rule.keys, ev.labels, ev.segments, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                                  sample_weight=rule.weights, class_prior=args.class_prior,
                                  min_per_class=args.min_per_class, pool_weight=args.pool_weight)
    decision = _decision(args)
    base_info = None
    if baseline is not None:
        base_info = _compare_baseline(args, baseline, ev, rule, r, decision, plan)
    seg_entries = None  # each segment's release entry (threshold, cost, counts, rates, bounds) and source
    if plan is not None:
        seg_entries = {}
        for k, v in plan.results.items():
            e = _entry(args, v, None, release_entry)
            e["source"] = plan.sources[k]
            seg_entries[str(k)] = e
    t3 = time.perf_counter()
    # the plot goes to a temporary file renamed onto --plot once the release is written
    with StagedOutputs() as stage:
        if args.plot:
            from .plotting import plot_cost_curve

            thr, cost = cost_curve(rule.keys, ev.labels, fn_cost=rule.fn_cost, fp_cost=rule.fp_cost,
                                   sample_weight=rule.weights, class_prior=args.class_prior)
            plot_cost_curve(thr, cost, r, stage.path(args.plot), bounds=bounds)
        if args.out is not None:
            _write_release_out(args, ev, r, seg_entries, base_info, n_test, make_release, release_entry, decision)
    report = sys.stderr if args.out == "-" else sys.stdout
    if args.json:
        d = r.to_dict()
        d.update(rows=len(ev), parse_seconds=round(t1 - t0, 6), threshold_seconds=round(t2 - t1, 6),
                 bounds_seconds=round(t3 - t2, 6), total_seconds=round(_wall_seconds(), 6))
        d["decision"] = decision
        d["cost_unit"] = "money" if rule.money else "cost"
        if rule.money:
            d["money"] = _money(r)
        peak = _peak_rss_mb()
        if peak is not None:
            d["peak_rss_mb"] = peak
        if bounds is not None:
            d["bounds"] = {"confidence": args.confidence, **_bounds_dict(bounds)}
        if np_mode:
            d["constraint_notes"] = _np_notes(args, bounds)
        if base_info is not None:
            d["baseline"] = base_info
        if first_release:
            d["first_release"] = True
        if seg_entries is not None:
            d["segments"] = seg_entries
        print(json.dumps(d))
        return EXIT_OK
    thr_txt = "-inf (predict every event positive)" if math.isinf(r.threshold) else _thr_text(r.threshold)

    def say(line: str) -> None:
        print(line, file=report)

    say(f"rows          {len(ev):,} ({r.count1:,} positive, {r.count0:,} negative)")
    if rule.decide_on == "margin":
        say(f"threshold     {thr_txt}   (on the cost margin; 0 is the per-event Bayes rule)")
        say("decide on     the cost margin (money): " + decision["apply"].replace(" > threshold", " > the threshold"))
    else:
        say(f"threshold     {thr_txt}   (predict positive iff score > threshold)")
        say(f"decide on     the score: {decision['apply']}")
    if rule.money:
        fn_txt, fp_txt = _money_text(args)
        m = _money(r)
        say(f"money lost    {m['lost']:,.6g}   (missed positives {m['missed_positives']:,.6g} + false alarms "
            f"{m['false_alarms']:,.6g}; a missed positive costs {fn_txt}, a false alarm {fp_txt})")
        say(f"at stake      {m['fn_at_stake']:,.6g} on the positives (all missed), {m['fp_at_stake']:,.6g} on the "
            "negatives (all flagged)")
    else:
        say(f"cost          {r.cost:,.6g}   (FN cost {r.fn_cost:g}, FP cost {r.fp_cost:g})")
    if np_mode:
        caps = " and ".join(f"true {k[4:].upper()} <= {v:g}" for k, v in np_mode.items() if k != "confidence" and v)
        say(f"constraint    {caps}, with probability {args.confidence:.0%} (cheapest such threshold)")
        for note in _np_notes(args, bounds):
            say(f"note          {note}")
    if rule.money:  # the result's rates are shares of the money at stake; the bounds are on event rates
        say(f"FPR           {r.fpr:.6f}   FNR {r.fnr:.6f}   (shares of the money at stake)")
        fpr_ev = (r.count0 - r.count_k0) / r.count0 if r.count0 else 0.0
        fnr_ev = r.count_k1 / r.count1 if r.count1 else 0.0
        say(f"event rates   FPR {fpr_ev:.6f}   FNR {fnr_ev:.6f}   (shares of the events)")
    else:
        say(f"FPR           {r.fpr:.6f}   FNR {r.fnr:.6f}")
    if bounds is not None:
        c = f"{args.confidence:.0%}"
        say(f"FPR bounds    [{bounds.fpr_lower:.6f}, {bounds.fpr_upper:.6f}]   (each side {c}; valid for this "
            "data-chosen threshold)")
        say(f"FNR bounds    [{bounds.fnr_lower:.6f}, {bounds.fnr_upper:.6f}]")
        if bounds.weighted:
            say("              (weighted events or money: the bounds are on event rates; no cost bound for per-event "
                "costs)")
        else:
            ci = bounds.cost_interval
            say(f"{bounds.n_test:,} new events: expected cost in [{ci.lower:,.6g}, {ci.upper:,.6g}] ({c}), "
                f"cost paid <= {bounds.cost_upper_exact:,.6g} ({c})")
            say(f"              (budget with the cost paid, cost_paid_upper in --json; the expected cost, "
                f"expected_cost_lower/upper, is a mean; Bernstein's looser bound on the cost paid: "
                f"{bounds.cost_upper:,.6g})")
    if first_release:
        say(f"baseline      none yet: {args.baseline} does not exist (--bootstrap): this is the first release")
    if base_info is not None and base_info["changes"]:
        say(f"changes       {'; '.join(base_info['changes'])} (since the deployed release: they move thresholds)")
    if base_info is not None:
        what = "money lost" if rule.money else "costs"
        forced = "   (move larger than --max-shift, forced)" if base_info["forced"] else ""
        change = base_info.get("rule_change")
        if change is None:
            say(f"baseline      deployed threshold {_thr_text(_thr_value(base_info['threshold']))} {what} "
                f"{base_info['cost']:,.6g} on this data; new {r.cost:,.6g}; saving {base_info['saving']:,.6g}"
                + forced)
        else:
            forced = forced.replace("move larger than --max-shift", "rule change under --max-shift")
            say(f"baseline      the decision rule changes from {change['from']} to {change['to']}: not a shift "
                f"(deployed: {change['was']}, threshold {_thr_text(_thr_value(base_info['threshold']))}); "
                f"deployed rule {what} {base_info['cost']:,.6g} on this data; new {r.cost:,.6g}; "
                f"saving {base_info['saving']:,.6g}" + forced)
    if plan is not None:
        say(f"segments      {len(plan.results):,} (own threshold when each class has >= {args.min_per_class} "
            "events, else the global one)")
        moved = base_info.get("segments", {}) if base_info is not None else {}
        for k, v in plan.results.items():
            e = seg_entries[str(k)]
            b = e["bounds"]
            line = (f"  {str(k)[:30]:<30} {_thr_text(v.threshold):>16}  {plan.sources[k]:<7}  "
                    f"{'money lost' if rule.money else 'cost'} {v.cost:,.6g}  ({v.count1:,} pos, {v.count0:,} neg)  "
                    f"FPR <= {b['fpr_upper']:.4f}  FNR <= {b['fnr_upper']:.4f}")
            dep: Any = moved.get(str(k))
            if dep is not None:
                sh: Any = dep["shift"]
                line += f"  deployed {_thr_text(_thr_value(dep['threshold']))}" + (
                    "" if sh is None else f" (shift {sh if sh == 'inf' else f'{sh:.6g}'})")
            say(line)
    if args.out is not None and args.out != "-":
        say(f"release       written to {args.out}")
    peak = _peak_rss_mb()
    total = _wall_seconds()
    say(f"time          {total:.3f} s in all: start-up {max(total - (time.perf_counter() - t0), 0.0):.3f} s, "
        f"parse {t1 - t0:.3f} s, threshold {t2 - t1:.3f} s, bounds and segments {t3 - t2:.3f} s"
        + (f", peak memory {peak:,.0f} MB" if peak is not None else ""))
    return EXIT_OK


def _np_notes(args: argparse.Namespace, bounds: Any) -> list[str]:
    """One sentence per Neyman-Pearson cap whose reported upper bound is above the cap: why both
    hold (the cap's guarantee and the bounds rest on different statements)."""
    notes: list[str] = []
    if bounds is None:
        return notes
    for rate, cap, upper, where in (("FPR", args.max_fpr, bounds.fpr_upper, "the negatives' scores, at or below"),
                                    ("FNR", args.max_fnr, bounds.fnr_upper, "the positives' scores, above")):
        if cap is not None and upper > cap:
            notes.append(f"the {rate} upper bound {upper:.6f} is above the cap {cap:g}, yet the true {rate} is at "
                         f"most {cap:g} with probability {args.confidence:.0%}: the cap rests on a single order "
                         f"statistic (a rank of {where} the threshold, fixed in advance), the {rate} bounds on a band "
                         "that must hold at every threshold at once, which is wider")
    return notes


def _bounds_dict(b: Any) -> dict[str, Any]:
    """The bounds worth printing. Cost bounds are about unit-weight costs, so a weighted file gets rates only.

    ``cost_paid_upper`` bounds the cost paid on ``n_test`` new events (the exact quantile: the one
    to budget with), ``cost_paid_upper_bernstein`` is Bernstein's closed form of the same statement
    (never smaller), ``expected_cost_lower``/``expected_cost_upper`` the interval for the expected
    cost. ``cost_upper_exact``, ``cost_upper`` and ``cost_interval_*`` are the same numbers under
    their earlier names (kept for readers of earlier output)."""
    out: dict[str, Any] = {k: getattr(b, k) for k in ("fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper")}
    if not b.weighted and b.n_test is not None:
        out["n_test"] = b.n_test
        out["cost_paid_upper"], out["cost_paid_upper_bernstein"] = b.cost_upper_exact, b.cost_upper
        out["expected_cost_lower"], out["expected_cost_upper"] = b.cost_interval.lower, b.cost_interval.upper
        out["cost_interval_lower"], out["cost_interval_upper"] = b.cost_interval.lower, b.cost_interval.upper
        out["cost_upper"], out["cost_upper_exact"] = b.cost_upper, b.cost_upper_exact
    return out


def _bounds(r: Any, confidence: float, n_test: int) -> Any:
    """``r.bounds(...)``, refusing (ValueError) costs so large that the cost bounds overflow."""
    too_big = ValueError(f"the costs are too large to bound the cost of {n_test:,} new events (overflow); "
                         "express the costs in larger units or lower --n-test")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            b = r.bounds(confidence=confidence, n_test=n_test)
    except (OverflowError, FloatingPointError):
        raise too_big from None
    values = _bounds_dict(b).values()
    if not all(math.isfinite(v) for v in values if isinstance(v, float)):
        raise too_big
    return b


def _money_text(args: argparse.Namespace) -> tuple[str, str]:
    """What a missed positive and a false alarm cost, in words (``amount``, ``5 each``)."""
    def one(col: str | None, value: float | None) -> str:
        return col if col is not None else f"{value:g} each"

    w = f", times {args.weight_col}" if args.weight_col is not None else ""
    return one(args.fn_cost_col, args.fn_cost) + w, one(args.fp_cost_col, args.fp_cost) + w


def _money(r: Any) -> dict[str, float]:
    """The money of a result whose weights are costs: lost (missed positives + false alarms) and at stake."""
    return {"lost": float(r.cost), "missed_positives": float(r.k1), "false_alarms": float(r.n0 - r.k0),
            "fn_at_stake": float(r.n1), "fp_at_stake": float(r.n0)}


def _entry(args: argparse.Namespace, res: Any, n: int | None, release_entry: Any) -> dict[str, Any]:
    """A release entry for ``res`` (the cost bound of ``n`` events when it can be computed)."""
    try:
        made: dict[str, Any] = release_entry(res, min_per_class=args.min_per_class, confidence=args.confidence,
                                             n_test=n)
    except (OverflowError, FloatingPointError):
        made = release_entry(res, min_per_class=args.min_per_class, confidence=args.confidence, n_test=None)
    return made


def _write_release_out(args: argparse.Namespace, ev: Any, r: Any, segments: dict[str, Any] | None, base_info: Any,
                       n_test: int, make_release: Any, release_entry: Any, decision: dict[str, Any]) -> None:
    """Build the release document (``segments``: the entries already made) and write it to
    ``--out`` (atomically) or standard output."""
    from .release import dumps_release, write_release

    params = {k: v for k, v in sorted(vars(args).items())
              if k not in ("command", "data", "json", "plot", "out", "force") and v is not None}
    params["n_test"] = n_test
    doc = make_release(_entry(args, r, n_test, release_entry), segments=segments,
                       input_info={"path": args.data, "sha256": ev.sha256, "rows": len(ev)},
                       parameters=params, baseline=base_info, decision=decision)
    if args.out == "-":
        sys.stdout.write(dumps_release(doc))
    else:
        write_release(doc, args.out)


def _peak_rss_mb() -> float | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
