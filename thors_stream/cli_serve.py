"""``thors serve``: the threshold service (:mod:`thors_stream.service`) from the command line.

``thors serve --store fraud.sqlite --fn-cost 50 --fp-cost 1`` opens (or creates) the store,
binds ``127.0.0.1:8000`` and serves ``POST /v1/decide``, ``POST /v1/labels``,
``GET /v1/threshold``, ``GET /healthz``, ``GET /metrics`` and ``GET /openapi.json`` until
SIGTERM or Ctrl-C; then it lets the requests in flight finish, commits, writes a checkpoint
and exits as the signal asked (status 143 after SIGTERM, which service managers count as a
clean stop; 130 after Ctrl-C). A store that is in use,
corrupt, or was written with other settings is refused before the port is bound (exit 2,
one line naming the file). Needs the ``serve`` extra: ``pip install 'thors_stream[serve]'``.

The options map one to one onto :func:`thors_stream.service.serve` (and the
:class:`~thors_stream.store.DecisionLoop` under it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from typing import Any

__all__ = ["add_serve_parser", "run_serve"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return v


def _int_at_least(lo: int) -> Any:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}, got {text!r}")
        return v

    return parse


def parse_window(text: str) -> int | str | None:
    """``--window``: a positive integer, ``auto`` (chosen online) or ``all`` (every labelled event).

    >>> parse_window("5000"), parse_window("auto"), parse_window("all")
    (5000, 'auto', None)
    """
    if text in ("auto", "all"):
        return "auto" if text == "auto" else None
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, auto or all, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, auto or all, got {text!r}")
    return v


def parse_horizon(text: str) -> int | dt.timedelta:
    """``--max-pending-age``: an integer (decisions made after it) or a duration with a unit
    ``s``, ``m``, ``h``, ``d`` or ``w`` (by the decision times).

    >>> parse_horizon("1000000"), parse_horizon("90d"), parse_horizon("12h")
    (1000000, datetime.timedelta(days=90), datetime.timedelta(seconds=43200))
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m:
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds <= 0:
            raise argparse.ArgumentTypeError(f"must be a positive duration, got {text!r}")
        return dt.timedelta(seconds=seconds)
    if re.fullmatch(r"\s*\d+\s*", text) and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"must be a number of decisions (1000000) or a duration with a unit s, m, h, d, "
                                     f"w (90d), got {text!r}")


def add_serve_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to the ``thors`` subparsers ``sub``; returns its parser.

    >>> p = argparse.ArgumentParser(); s = add_serve_parser(p.add_subparsers(dest="command"))
    >>> a = p.parse_args(["serve", "--store", "f.sqlite", "--fn-cost", "50", "--fp-cost", "1", "--window", "auto"])
    >>> a.store, a.fn_cost, a.window, a.host, a.port
    ('f.sqlite', 50.0, 'auto', '127.0.0.1', 8000)
    """
    s = sub.add_parser(
        "serve", help="the threshold service over HTTP (decide now, label later, from any language)",
        description="Serve POST /v1/decide, POST /v1/labels, GET /v1/threshold, /healthz, /metrics and "
                    "/openapi.json on one store until SIGTERM or Ctrl-C (then commit and checkpoint). "
                    "Needs pip install 'thors_stream[serve]'.",
        epilog="exit codes: 143 stopped by SIGTERM and 130 by Ctrl-C (after committing and checkpointing), "
               "2 bad usage, a store that cannot be used (in use, corrupt, other settings) or a server that could "
               "not start")
    s.add_argument("--store", required=True, metavar="PATH",
                   help="the SQLite file of pending decisions and thresholding state (created when missing, "
                        "resumed otherwise; one server per store)")
    s.add_argument("--fn-cost", type=_positive_float, required=True,
                   help="cost of a false negative (with --decide-on margin: the default of the events' fn_cost)")
    s.add_argument("--fp-cost", type=_positive_float, required=True,
                   help="cost of a false positive (with --decide-on margin: the default of the events' fp_cost)")
    s.add_argument("--window", type=parse_window, default=10_000, metavar="N|auto|all",
                   help="the labelled events the threshold is learned on: the last N (default 10000), auto "
                        "(chosen online among 500 to 32000), or all")
    s.add_argument("--decide-on", choices=("score", "margin"), default="score",
                   help="flag when the score exceeds the threshold (default), or when the cost margin "
                        "logit(score) + log(fn_cost / fp_cost) does, with per-event fn_cost/fp_cost fields")
    s.add_argument("--segment-field", default=None, metavar="NAME",
                   help="one threshold per value of this field of the events (e.g. merchant)")
    s.add_argument("--warm-up", type=_int_at_least(0), default=100, metavar="N",
                   help="labelled events (both classes) before the THORS threshold replaces the default "
                        "(default 100; not with --window auto)")
    s.add_argument("--default-threshold", type=_float, default=None, metavar="T",
                   help="the threshold until then (default fp/(fp+fn) on scores, 0 on margins)")
    s.add_argument("--min-per-class", type=_int_at_least(1), default=30, metavar="N",
                   help="with --segment-field: a segment uses its own threshold once it holds N labelled events "
                        "of each class (default 30)")
    s.add_argument("--max-pending-age", type=parse_horizon, default=None, metavar="N|DURATION",
                   help="the horizon: a decision is dropped once N decisions were made after it, or once one a "
                        "DURATION newer was (90d, 12h); its label is then counted unmatched (default: none)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; to serve other machines, bind another and set a "
                        "token)")
    s.add_argument("--port", type=_int_at_least(0), default=8000, help="port (default 8000)")
    tok = s.add_mutually_exclusive_group()
    tok.add_argument("--token-file", default=None, metavar="PATH",
                     help="require Authorization: Bearer <token>, the token being this file's first line")
    tok.add_argument("--token-env", default=None, metavar="NAME",
                     help="require Authorization: Bearer <token>, the token being this environment variable")
    s.add_argument("--max-events", type=_int_at_least(1), default=None, metavar="N",
                   help="most events or labels one request may carry (default 100000)")
    s.add_argument("--max-body-bytes", type=_int_at_least(1), default=None, metavar="N",
                   help="largest request body (default 16 MiB)")
    s.add_argument("--commit-every", type=_int_at_least(1), default=None, metavar="N",
                   help="operations between two commits, at most (default 1000)")
    s.add_argument("--commit-interval", type=_float, default=None, metavar="SECONDS",
                   help="seconds between two commits, at most (default 0.25, at most 1)")
    s.add_argument("--synchronous", choices=("NORMAL", "FULL"), default=None,
                   help="FULL: every commit survives a power loss too (an fsync per commit; default NORMAL)")
    s.add_argument("--access-log", action="store_true", help="log every request (off by default)")
    return s  # type: ignore[no-any-return]


def serve_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`thors_stream.service.serve` that ``args`` asks for
    (the store's path first, under ``store_path``)."""
    kw: dict[str, Any] = dict(store_path=args.store, fn_cost=args.fn_cost, fp_cost=args.fp_cost, window=args.window,
                              decide_on=args.decide_on, segment_field=args.segment_field, host=args.host,
                              port=args.port, token_file=args.token_file, token_env=args.token_env,
                              access_log=args.access_log, warm_up=args.warm_up, min_per_class=args.min_per_class)
    optional = {"default_threshold": args.default_threshold, "max_pending_age": args.max_pending_age,
                "max_events": args.max_events, "max_body_bytes": args.max_body_bytes,
                "commit_every": args.commit_every, "commit_interval": args.commit_interval,
                "synchronous": args.synchronous}
    kw.update({k: v for k, v in optional.items() if v is not None})
    return kw


def run_serve(args: argparse.Namespace) -> int:
    """Run ``thors serve`` with the parsed ``args`` until SIGTERM or Ctrl-C (the server then
    re-raises the signal it received, after committing and checkpointing). A store that
    cannot be used raises ``ValueError`` naming it (the command line prints it and exits 2);
    a server that could not start (a port in use) returns 2."""
    from .service import serve
    from .store import StoreLockedError

    kw = serve_kwargs(args)
    try:
        serve(kw.pop("store_path"), **kw)
    except StoreLockedError as exc:
        raise ValueError(str(exc)) from None
    except SystemExit as exc:  # uvicorn exits when it cannot bind or start
        if exc.code not in (None, 0):
            import sys

            print(f"thors serve: error: the server did not start on {args.host}:{args.port} (see above)",
                  file=sys.stderr)
            return 2
    return 0
