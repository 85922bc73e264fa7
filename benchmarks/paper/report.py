"""Tables, plots, the paper-vs-ours comparison and the summary, built from raw records.

Everything here is a pure function of the records written by :mod:`.runner`, so
``python -m benchmarks.paper --report-only`` rebuilds the outputs of a finished run.

Files written into the output directory:

- ``<case>.md`` -- per case: test cost mean ± sd per classifier x method (paper Tables
  2/5/8), THORS's wins/losses/ties (Tables 3/6/9), mean running times (Tables 4/7/10),
  the extra diagnostics, and the data/protocol facts of the run;
- ``<case>_boxplot.png`` -- the per-round test costs of the six methods, one panel per
  classifier (paper Figures 1/3/5);
- ``winloss.csv`` -- every win/loss/tie count in machine-readable form;
- ``paper_vs_ours.md`` -- the paper's number next to ours for every cell in both;
- ``summary.md`` -- where we agree with the paper and where not (generated statements
  followed by the hand-written ``discussion.md`` of this directory's parent package).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from . import paper_values as pv
from .protocol import CASES, EXTRA_METHODS, METHODS

__all__ = ["OPPONENTS", "Results", "build_all", "sign_test_p", "verdict"]

#: Win/loss opponents in the paper's column order (Tables 3/6/9).
OPPONENTS = ("Theoretical", "Null", "Empirical", "MetaCost", "CRS")
DISCUSSION = Path(__file__).with_name("discussion.md")


class Results:
    """Per-round records indexed by (case, classifier, method)."""

    def __init__(self, records: dict[str, Any]) -> None:
        self.info = records["info"]
        self.cost: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
        self.time: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
        self.thors = records["thors"]
        for c in records["costs"]:
            key = (c["case"], c["classifier"], c["method"])
            self.cost[key][c["round"]] = float(c["cost"])
            self.time[key][c["round"]] = float(c["time"])
        self.cases = [c for c in self.info["cases"] if any(k[0] == c for k in self.cost)]

    def costs(self, case: str, clf: str, method: str) -> np.ndarray:
        """Test costs of the rounds, in round order."""
        d = self.cost[(case, clf, method)]
        return np.array([d[r] for r in sorted(d)])

    def mean_sd(self, case: str, clf: str, method: str) -> tuple[float, float]:
        """Mean and sample standard deviation (ddof = 1; 0 for one round) of the test costs."""
        x = self.costs(case, clf, method)
        return float(x.mean()), float(x.std(ddof=1)) if x.shape[0] > 1 else 0.0

    def mean_time(self, case: str, clf: str, method: str) -> float:
        """Mean wall time of one round of ``method`` (seconds)."""
        d = self.time[(case, clf, method)]
        return float(np.mean(list(d.values())))

    def thors_threshold_time(self, case: str, clf: str) -> float:
        """Mean time of the ``thors_threshold`` call alone (seconds)."""
        t = [r["threshold_time"] for r in self.thors if r["case"] == case and r["classifier"] == clf]
        return float(np.mean(t))

    def winloss(self, case: str, clf: str, other: str, me: str = "THORS") -> tuple[int, int, int]:
        """Rounds where ``me`` costs less than / more than / the same as ``other``."""
        a, b = self.cost[(case, clf, me)], self.cost[(case, clf, other)]
        w = sum(a[r] < b[r] for r in a)
        lo = sum(a[r] > b[r] for r in a)
        return w, lo, len(a) - w - lo

    def rounds(self, case: str) -> int:
        """Number of rounds of ``case``."""
        clf = CASES[case].classifiers[0]
        return len(self.cost[(case, clf, "THORS")])


def sign_test_p(w: int, lo: int) -> float:
    """Two-sided exact sign-test p-value of ``w`` wins against ``lo`` losses (ties dropped)."""
    n = w + lo
    if n == 0:
        return 1.0
    k = min(w, lo)
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


def verdict(w: int, lo: int) -> str:
    """``better`` / ``worse`` / ``even``: THORS's majority over the rounds (ties ignored)."""
    return "better" if w > lo else "worse" if lo > w else "even"


def fmt_cost(x: float) -> str:
    """A cost rounded to an integer with thousands separators (one decimal below 10)."""
    return f"{x:,.1f}" if abs(x) < 10 and x != round(x) else f"{x:,.0f}"


def fmt_ms(m: float, s: float) -> str:
    """``mean ± sd``."""
    return f"{fmt_cost(m)} ± {fmt_cost(s)}"


def fmt_time(t: float) -> str:
    """Seconds with 2 decimals (3 significant digits below 0.01 s)."""
    return f"{t:.2f}" if t >= 0.01 else f"{t:.2g}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def case_markdown(res: Results, case: str, plot: str | None = None) -> str:
    """The Markdown report of one case (tables 2-4 style, extras and facts; ``plot``: box-plot file)."""
    c = CASES[case]
    n = res.rounds(case)
    clfs = c.classifiers
    parts = [f"# {case}: {c.description}", ""]
    th = [t for t in res.thors if t["case"] == case]
    ds = res.info["datasets"].get(c.dataset, {})
    feats: dict[str, int] = defaultdict(int)
    for t in th:
        if t["classifier"] == clfs[0]:
            for f in str(t["features"]).split():
                feats[f] += 1
    parts += [
        f"- Data: {ds.get('note', c.dataset)}; {ds.get('rows', '?'):,} rows, {ds.get('positives', '?'):,} positives.",
        f"- Costs: FN {c.fn_cost:g}, FP {c.fp_cost:g}; split train / validation / test = "
        f"{_split_text(res, case)}; {n} rounds (seeds {th[0]['seed']}..{th[-1]['seed']}).",
        f"- Classifiers: {', '.join(clfs)}"
        + (f"; random forests of {c.rf_trees or res.info['settings']['rf_trees']} trees" if "RF" in clfs else "")
        + f"; categoricals: {c.encoding if c.dataset == 'adult' else 'none'}.",
        f"- Mean positives in the test split: {np.mean([t['test_pos'] for t in th if t['classifier'] == clfs[0]]):.1f}"
        ".",
        "- Features used (rounds selected / rounds): "
        + ", ".join(f"{k} ({v}/{n})" for k, v in sorted(feats.items(), key=lambda kv: (-kv[1], kv[0]))) + ".",
        "",
        f"## Test cost, mean ± sd over {n} rounds (paper Table {_tab(c, 0)})",
        "",
    ]
    rows = []
    for clf in clfs:
        means = {m: res.mean_sd(case, clf, m)[0] for m in METHODS}
        best = min(means.values())
        rows.append([clf] + [("**" if means[m] == best else "") + fmt_ms(*res.mean_sd(case, clf, m))
                             + ("**" if means[m] == best else "") for m in METHODS])
    parts += [_table(["Classifier", *METHODS], rows), "", "Bold: the lowest mean cost of the row.", ""]
    if plot:
        parts += [f"![Test cost per round and method]({plot})", ""]
    parts += [f"## THORS wins / losses / ties per round (paper Table {_tab(c, 1)})", ""]
    rows = [[clf] + ["{}/{}/{}".format(*res.winloss(case, clf, o)) for o in OPPONENTS] for clf in clfs]
    parts += [_table(["Classifier", *OPPONENTS], rows), "",
              "An entry w/l/t: in w rounds THORS's test cost is lower than the method's, in l higher, in t equal.", ""]
    parts += [f"## Mean running time per round, seconds (paper Table {_tab(c, 2)})", ""]
    rows = [[clf] + [fmt_time(res.mean_time(case, clf, m)) for m in METHODS]
            + [f"{1e3 * res.thors_threshold_time(case, clf):.2f} ms"] for clf in clfs]
    parts += [_table(["Classifier", *METHODS, "THORS threshold only"], rows), "",
              "Each time covers training on the raw training split through predicting the test split "
              "(THORS, Null, Theoretical and Empirical share one base fit, counted in each). "
              "'THORS threshold only' is the `thors_threshold` call on the validation scores.", ""]
    parts += ["## Extra diagnostics (not in the paper)", ""]
    rows = []
    for clf in clfs:
        rows.append([clf] + [fmt_ms(*res.mean_sd(case, clf, m)) for m in EXTRA_METHODS]
                    + ["{}/{}/{}".format(*res.winloss(case, clf, m)) for m in ("Empirical-val", "CRS-1")])
    parts += [_table(["Classifier", *EXTRA_METHODS, "THORS vs Empirical-val w/l/t", "THORS vs CRS-1 w/l/t"], rows),
              "",
              "Empirical-val: Sheng & Ling's grid search run on the validation probabilities of the THORS "
              "model (same data as THORS, grid of step 0.001 instead of order statistics). CRS-1: "
              "cost-proportionate rejection sampling with one sample instead of the ensemble. Oracle: the best "
              "threshold on the test scores themselves (a floor for any threshold on this score). "
              "All-pos / All-neg: predict every test event positive / negative.", ""]
    return "\n".join(parts)


def _split_text(res: Results, case: str) -> str:
    th = [t for t in res.thors if t["case"] == case]
    t0 = th[0]
    ds = res.info["datasets"].get(CASES[case].dataset, {})
    rows = ds.get("rows")
    n_tr = rows - t0["n_val"] - t0["n_test"] if isinstance(rows, int) else "?"
    return f"{n_tr:,} / {t0['n_val']:,} / {t0['n_test']:,}" if isinstance(n_tr, int) else "?"


def _tab(c: Any, i: int) -> int:
    return pv.PAPER_TABLES[c.paper][i]


def boxplot(res: Results, case: str, path: Path) -> bool:
    """Write the box plots of ``case`` to ``path``; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    c = CASES[case]
    k = len(c.classifiers)
    nr, nc = (1, 1) if k == 1 else (1, 2) if k == 2 else (2, 2)
    fig, axes = plt.subplots(nr, nc, figsize=(5.5 * nc, 4 * nr), squeeze=False)
    for ax in axes.ravel()[k:]:
        ax.set_visible(False)
    for ax, clf in zip(axes.ravel(), c.classifiers):
        data = [res.costs(case, clf, m) for m in METHODS]
        ax.boxplot(data, tick_labels=list(METHODS), showmeans=True)
        ax.set_title(f"{clf}")
        ax.set_ylabel("total test cost")
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{case}: test cost per round ({res.rounds(case)} rounds), FN {c.fn_cost:g} / FP {c.fp_cost:g}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def winloss_rows(res: Results) -> list[dict[str, Any]]:
    """Every THORS-vs-opponent count: case, classifier, opponent, wins, losses, ties, rounds."""
    rows = []
    for case in res.cases:
        for clf in CASES[case].classifiers:
            for o in (*OPPONENTS, "Empirical-val", "CRS-1"):
                w, lo, t = res.winloss(case, clf, o)
                rows.append({"case": case, "classifier": clf, "opponent": o, "wins": w, "losses": lo, "ties": t,
                             "rounds": res.rounds(case)})
    return rows


def comparison_markdown(res: Results) -> tuple[str, dict[str, Any]]:
    """The paper-vs-ours tables, and the agreement statistics the summary uses."""
    stats: dict[str, Any] = {}
    parts = [
        "# The paper's numbers next to ours",
        "",
        "Every cell that exists both in the paper's Tables 2-10 and in this run. Ratios 'xTHORS' divide a "
        "method's mean cost (or time) by THORS's in the same table: they compare shapes across data sets, "
        "machines and cost scales. 'Verdict' is THORS's majority over the rounds (better / worse / even).",
        "",
        "**Shuttle is a stand-in for the paper's Scania trucks data** (not available offline): its absolute "
        "costs are not comparable with Tables 2-4, only the pattern (which method wins) is.",
        "",
    ]
    for case in res.cases:
        c = CASES[case]
        key = c.paper
        fn_s, fp_s = pv.STATED_COSTS[key]
        tc, tw, tt = pv.PAPER_TABLES[key]
        parts += [f"## {case} vs the paper's {key} data (Tables {tc}, {tw}, {tt})", "",
                  f"{c.description}. The paper states FN {fn_s:g}, FP {fp_s:g}.", ""]
        rows, close10, close25, ncell = [], 0, 0, 0
        for clf in c.classifiers:
            if clf not in pv.COST[key]:
                continue
            pth = pv.COST[key][clf]["THORS"][0]
            oth = res.mean_sd(case, clf, "THORS")[0]
            for m in METHODS:
                pm, ps = pv.COST[key][clf][m]
                om, osd = res.mean_sd(case, clf, m)
                rel = om / pm - 1.0
                ncell += 1
                close10 += abs(rel) <= 0.10
                close25 += abs(rel) <= 0.25
                rows.append([clf, m, fmt_ms(pm, ps), fmt_ms(om, osd), f"{om / pm:.2f}", _ratio(pm, pth),
                             _ratio(om, oth)])
        parts += [f"### Test cost (Table {tc})", "",
                  _table(["Classifier", "Method", "Paper", "Ours", "Ours/Paper", "Paper xTHORS", "Ours xTHORS"], rows),
                  "", f"Cells within 10% of the paper: {close10}/{ncell}; within 25%: {close25}/{ncell}.", ""]
        rows = []
        for clf in c.classifiers:
            if clf in pv.COST[key]:
                pm, ps = pv.COST[key][clf]["CRS"]
                wl1 = "{}/{}/{}".format(*res.winloss(case, clf, "CRS-1"))
                rows.append([clf, fmt_ms(pm, ps), fmt_ms(*res.mean_sd(case, clf, "CRS")),
                             fmt_ms(*res.mean_sd(case, clf, "CRS-1")), wl1])
        parts += ["Not a paper cell, for reading its CRS column: our CRS with a single rejection sample (CRS-1).", "",
                  _table(["Classifier", "Paper CRS", "Ours CRS (10 samples)", "Ours CRS-1", "THORS vs CRS-1 w/l/t"],
                         rows), ""]
        rows, agree, cells, disagree, reversed_ = [], 0, 0, [], []
        for clf in c.classifiers:
            if clf not in pv.WINLOSS[key]:
                continue
            for o in OPPONENTS:
                pw, pl = pv.WINLOSS[key][clf][o]
                w, lo, t = res.winloss(case, clf, o)
                vp, vo = verdict(pw, pl), verdict(w, lo)
                cells += 1
                agree += vp == vo
                pp, po = sign_test_p(pw, pl), sign_test_p(w, lo)
                if vp != vo:
                    disagree.append(f"{clf} vs {o} (paper {pw}/{pl}, ours {w}/{lo}/{t})")
                    if pp < 0.05 and po < 0.05:
                        reversed_.append(f"{clf} vs {o} (paper {pw}/{pl}, ours {w}/{lo}/{t})")
                rows.append([clf, o, f"{pw}/{pl}", f"{w}/{lo}/{t}", vp, vo, f"{pp:.2g}", f"{po:.2g}",
                             "yes" if vp == vo else "**no**"])
        parts += [f"### THORS wins/losses (Table {tw})", "",
                  _table(["Classifier", "vs", "Paper w/l", "Ours w/l/t", "Paper verdict", "Our verdict", "Paper p",
                          "Our p", "Agree"], rows),
                  "", f"Verdicts agreeing: {agree}/{cells}. p: two-sided exact sign test of wins against losses "
                  "(ties dropped); a disagreement where both p < 0.05 is a clear reversal.", ""]
        rows = []
        for clf in c.classifiers:
            if clf not in pv.TIME[key]:
                continue
            pth = pv.TIME[key][clf]["THORS"]
            oth = res.mean_time(case, clf, "THORS")
            for m in ("THORS", "Empirical", "MetaCost", "CRS"):
                pt, ot = pv.TIME[key][clf][m], res.mean_time(case, clf, m)
                rows.append([clf, m, f"{pt:.2f}", fmt_time(ot), _ratio(pt, pth), _ratio(ot, oth)])
        parts += [f"### Running time per round, seconds (Table {tt})", "",
                  _table(["Classifier", "Method", "Paper", "Ours", "Paper xTHORS", "Ours xTHORS"], rows), "",
                  "The paper's laptop (i5-6300U) and implementation differ from ours; compare the xTHORS ratios.",
                  ""]
        stats[case] = {"close10": close10, "close25": close25, "cells": ncell, "agree": agree,
                       "wl_cells": cells, "disagree": disagree, "reversed": reversed_}
    return "\n".join(parts), stats


def summary_markdown(res: Results, stats: dict[str, Any], command: str) -> str:
    """The generated part of ``summary.md`` plus the hand-written discussion."""
    info = res.info
    wall = info["wall_seconds"]
    parts = [
        "# Reproducing the THORS paper's case studies: summary",
        "",
        f"Run: `{command}` -- {info['rounds']} rounds per case (at most 4 for the RF-100 variants), "
        f"cases {', '.join(info['cases'])}; "
        f"wall time **{wall / 60:.1f} min** ({wall:,.0f} s) on {info['machine']} "
        f"(shared with other work), {info['date']}. Python {info['python']}, numpy {info['numpy']}, "
        f"scikit-learn {info['sklearn']}, river {info['river']}, thors_stream {info['thors_stream']}.",
        "",
        "Per-case tables: " + ", ".join(f"[{c}]({c}.md)" for c in res.cases)
        + "; side by side with the paper: [paper_vs_ours.md](paper_vs_ours.md); raw per-round numbers: "
        "`raw_costs.csv`, `raw_thors.csv`, `winloss.csv`.",
        "",
        "## Generated from this run",
        "",
    ]
    if info.get("quick"):
        parts[2:2] = ["**Quick smoke run on subsampled data: these numbers are not comparable with the paper's.**",
                      ""]
    rows = []
    for case in res.cases:
        c = CASES[case]
        key = c.paper
        n = res.rounds(case)
        lowest, lowest_paper, maj, maj_paper, cells = 0, 0, 0, 0, 0
        for clf in c.classifiers:
            means = {m: res.mean_sd(case, clf, m)[0] for m in METHODS}
            lowest += means["THORS"] <= min(means.values())
            if clf in pv.COST[key]:
                pm = {m: pv.COST[key][clf][m][0] for m in METHODS}
                lowest_paper += pm["THORS"] <= min(pm.values())
            for o in OPPONENTS:
                w, lo, _ = res.winloss(case, clf, o)
                maj += w > lo
                cells += 1
                if clf in pv.WINLOSS[key]:
                    pw, pl = pv.WINLOSS[key][clf][o]
                    maj_paper += pw > pl
        s = stats.get(case, {})
        rows.append([case, str(n), f"{lowest}/{len(c.classifiers)} (paper {lowest_paper})",
                     f"{maj}/{cells} (paper {maj_paper})", f"{s.get('agree', 0)}/{s.get('wl_cells', 0)}",
                     f"{s.get('close10', 0)}/{s.get('cells', 0)}", f"{s.get('close25', 0)}/{s.get('cells', 0)}"])
    parts += [_table(["Case", "Rounds", "THORS lowest mean cost (classifiers)",
                      "THORS wins the majority of rounds (cells)", "Win/loss verdict = paper's",
                      "Cost cells within 10% of paper", "within 25%"], rows), ""]
    for case in res.cases:
        d = stats.get(case, {}).get("disagree", [])
        rv = stats.get(case, {}).get("reversed", [])
        if d:
            parts.append(f"- **{case}**: verdicts that differ from the paper's: " + "; ".join(d) + "."
                         + (f" Clear reversals (sign test p < 0.05 on both sides): {'; '.join(rv)}." if rv
                            else " None is a clear reversal (sign test p < 0.05 on both sides)."))
    parts += ["", "Where THORS loses on average (our mean cost higher than the method's):", ""]
    losses = []
    for case in res.cases:
        for clf in CASES[case].classifiers:
            th = res.mean_sd(case, clf, "THORS")[0]
            for m in METHODS[1:]:
                mm = res.mean_sd(case, clf, m)[0]
                if mm < th:
                    w, lo, t = res.winloss(case, clf, m)
                    losses.append(f"- {case} / {clf}: {m} {fmt_cost(mm)} < THORS {fmt_cost(th)} "
                                  f"(THORS w/l/t {w}/{lo}/{t})")
    parts += losses or ["- none"]
    parts += [""]
    if DISCUSSION.exists():
        parts += ["## Discussion (written after reading the full run's numbers)", "",
                  DISCUSSION.read_text().strip(), ""]
    return "\n".join(parts)


def build_all(records: dict[str, Any], out: Path, command: str = "python -m benchmarks.paper") -> list[Path]:
    """Write every table, plot, the comparison and the summary into ``out``; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    res = Results(records)
    written = []
    for case in res.cases:
        png = out / f"{case}_boxplot.png"
        plotted = boxplot(res, case, png)
        if plotted:
            written.append(png)
        p = out / f"{case}.md"
        p.write_text(case_markdown(res, case, png.name if plotted else None) + "\n")
        written.append(p)
    with open(out / "winloss.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "classifier", "opponent", "wins", "losses", "ties", "rounds"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(winloss_rows(res))
    written.append(out / "winloss.csv")
    text, stats = comparison_markdown(res)
    (out / "paper_vs_ours.md").write_text(text + "\n")
    written.append(out / "paper_vs_ours.md")
    (out / "summary.md").write_text(summary_markdown(res, stats, command) + "\n")
    written.append(out / "summary.md")
    return written

