"""Command line of the paper replication: ``python -m benchmarks.paper [options]``.

Runs the paper's three case studies (and two sensitivity variants) for ``--rounds``
rounds, writes the raw records and builds every table, plot and summary into the
output directory (default ``benchmarks/paper/results``; ``results_quick`` with
``--quick``). Exit status: 0 on success, 2 when the data is missing, 3 when it is
present but not what the data README describes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["main", "parser"]

HERE = Path(__file__).resolve().parent


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    from .protocol import CASES, MAIN_CASES, VARIANT_CASES

    p = argparse.ArgumentParser(
        prog="python -m benchmarks.paper",
        description="Reproduce the THORS paper's case studies (section 4) side by side with its tables.",
    )
    p.add_argument("--data-dir", type=Path, default=None,
                   help="directory with adult.data.gz and magic04.data.gz (default: $THORS_DATA_DIR, "
                        "else ../shared/datasets relative to the repository root)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per case (default 20; 2 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 2 rounds on stratified subsamples of the data; writes to results_quick/"
                        " and saves THORS's scores (audit.npz) for recomputation")
    p.add_argument("--out", type=Path, default=None, help="output directory (default results/ or results_quick/)")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=None,
                   help=f"cases to run (default: {' '.join(MAIN_CASES + VARIANT_CASES)}; "
                        "--quick leaves out the two RF-100 variants)")
    p.add_argument("--no-variants", action="store_true", help="only the three main cases")
    p.add_argument("--rf-trees", type=int, default=None, help="trees per random forest (default 10)")
    p.add_argument("--report-only", action="store_true",
                   help="rebuild tables, plots and summary from the raw CSVs already in the output directory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run (or re-report) the case studies; return the exit status."""
    args = parser().parse_args(argv)
    from .classifiers import require_sklearn

    require_sklearn()
    from . import report, runner
    from .data import DataCorruptError, DataMissingError, check_files, default_data_dir
    from .protocol import CASES, MAIN_CASES, QUICK_VARIANTS, VARIANT_CASES, Settings

    out = args.out or HERE / ("results_quick" if args.quick else "results")
    command = "python -m benchmarks.paper" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    if args.report_only:
        try:
            records = runner.load_records(out)
        except FileNotFoundError as e:
            print(f"error: no raw results to report on in {out}: {e}", file=sys.stderr)
            return 2
        cmd = records["info"].get("command", command)
        for p in report.build_all(records, out, cmd):
            print(p)
        return 0
    variants = () if args.no_variants else QUICK_VARIANTS if args.quick else VARIANT_CASES
    cases = args.cases or list(MAIN_CASES + variants)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 20)
    if rounds < 1:
        print("error: --rounds must be at least 1", file=sys.stderr)
        return 2
    settings = Settings()
    if args.rf_trees is not None:
        settings.rf_trees = args.rf_trees
    data_dir = args.data_dir or default_data_dir()
    t0 = time.perf_counter()
    try:
        check_files([CASES[c].dataset for c in cases], data_dir)
        out.mkdir(parents=True, exist_ok=True)
        records = runner.run(cases, rounds, data_dir, quick=args.quick, settings=settings,
                             audit_path=out / "audit.npz" if args.quick else None,
                             progress=not args.no_progress)
    except DataMissingError as e:
        print(f"error: data missing: {e}", file=sys.stderr)
        return 2
    except DataCorruptError as e:
        print(f"error: data present but broken: {e}", file=sys.stderr)
        return 3
    records["info"]["command"] = command
    records["info"]["data_dir"] = str(data_dir)
    runner.write_records(records, out)
    written = report.build_all(records, out, command)
    print(f"{len(written)} files written to {out} in {time.perf_counter() - t0:.1f} s "
          f"(classifier work {records['info']['wall_seconds']:.1f} s)")
    print(f"summary: {out / 'summary.md'}")
    return 0
