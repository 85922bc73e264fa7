"""Load on the threshold service, over loopback: batched and single requests, latency, nothing lost.

Starts ``thors_stream.service.serve`` in a subprocess on a free loopback port (a fresh store,
scores, window 10,000), waits for ``/healthz``, then, from this process with keep-alive
connections (``httpx``):

- **batched decisions**: ``--batches`` requests of ``--batch`` events each to ``/v1/decide``
  (bodies encoded before the clock starts), events per second;
- **batched labels**: the same keys' labels in the same batches to ``/v1/labels``;
- **single decisions**: ``--singles`` requests of one event each, from ``--clients`` processes
  (the standard library's ``http.client``, one keep-alive connection each), requests per second
  and the latency percentiles (p50, p99) per request;
- **nothing lost**: every label sent is matched or counted (``/v1/threshold``'s counters).

Every loop is bounded in count and by ``--deadline`` seconds; only 127.0.0.1 is contacted; the
server is stopped with SIGTERM at the end (it commits and checkpoints). Client and server share
the machine's cores, so the figures are for one server process with its client beside it.

Run: ``python benchmarks/service_load.py`` (about a minute); ``--quick`` for a smoke run;
``--write`` records the figures in ``benchmarks/results/service_load.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def single_client(port: int, c: int, n: int, seconds: float) -> tuple[list[float], float]:
    """One client process: ``n`` single-event decisions over one keep-alive connection (the
    standard library's ``http.client``): each request's latency, and the seconds they took."""
    import http.client

    rng = random.Random(c)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    stop = time.monotonic() + seconds
    out = []
    t0 = time.perf_counter()
    for j in range(n):
        if time.monotonic() > stop:
            break
        body = json.dumps({"events": [{"key": f"single-{c}-{j}", "score": rng.random()}]})
        s = time.perf_counter()
        conn.request("POST", "/v1/decide", body, {"content-type": "application/json"})
        r = conn.getresponse()
        r.read()
        out.append(time.perf_counter() - s)
        if r.status != 200:
            raise RuntimeError(f"status {r.status}")
    elapsed = time.perf_counter() - t0
    conn.close()
    return out, elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the process ``pid`` so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return float("nan")


def percentile(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * len(ys)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1_000, help="events per batched request")
    ap.add_argument("--batches", type=int, default=200, help="batched requests of each kind")
    ap.add_argument("--singles", type=int, default=5_000, help="single-event requests")
    ap.add_argument("--clients", type=int, default=2, help="processes sending single requests")
    ap.add_argument("--deadline", type=float, default=300.0, help="seconds before every loop stops")
    ap.add_argument("--quick", action="store_true", help="a smoke run")
    ap.add_argument("--write", action="store_true", help="write benchmarks/results/service_load.md")
    args = ap.parse_args(argv)
    if args.quick:
        args.batches, args.singles = 10, 300
    import httpx

    workdir = tempfile.mkdtemp(prefix="service_load_")
    path = os.path.join(workdir, "fraud.sqlite")
    port = free_port()
    code = (f"from thors_stream.service import serve; serve({path!r}, fn_cost=20.0, fp_cost=1.0, window=10_000, "
            f"warm_up=100, port={port})")
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    stop_at = time.monotonic() + args.deadline
    rng = random.Random(0)
    try:
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > stop_at:
                raise SystemExit(f"the server did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        n = args.batch * args.batches
        truth = [rng.random() < 0.1 for _ in range(n)]
        scores = [min(1.0, max(0.0, rng.gauss(0.6 if y else 0.3, 0.15))) for y in truth]
        decide_bodies = [json.dumps({"events": [{"key": f"tx-{i}", "score": scores[i]}
                                                for i in range(b, b + args.batch)]}).encode()
                         for b in range(0, n, args.batch)]
        label_bodies = [json.dumps({"labels": [{"key": f"tx-{i}", "label": truth[i]}
                                               for i in range(b, b + args.batch)]}).encode()
                        for b in range(0, n, args.batch)]
        headers = {"content-type": "application/json"}
        with httpx.Client(base_url=base, timeout=30) as http:
            sent = 0
            c0 = cpu_seconds(server.pid)
            t0 = time.perf_counter()
            for body in decide_bodies:
                if time.monotonic() > stop_at:
                    break
                r = http.post("/v1/decide", content=body, headers=headers)
                assert r.status_code == 200, r.text
                sent += args.batch
            decide_rate = sent / (time.perf_counter() - t0)
            decide_cpu = (cpu_seconds(server.pid) - c0) / max(1, sent)
            labelled = 0
            c0 = cpu_seconds(server.pid)
            t0 = time.perf_counter()
            for body in label_bodies[: sent // args.batch]:
                if time.monotonic() > stop_at:
                    break
                r = http.post("/v1/labels", content=body, headers=headers)
                assert r.status_code == 200, r.text
                labelled += args.batch
            label_rate = labelled / (time.perf_counter() - t0)
            label_cpu = (cpu_seconds(server.pid) - c0) / max(1, labelled)
        per_client = args.singles // args.clients
        c0 = cpu_seconds(server.pid)
        with multiprocessing.get_context("spawn").Pool(args.clients) as pool:
            runs = pool.starmap(single_client, [(port, c, per_client, stop_at - time.monotonic())
                                                for c in range(args.clients)])
        latencies = [x for run, _ in runs for x in run]
        single_cpu = (cpu_seconds(server.pid) - c0) / max(1, len(latencies))
        single_rate = len(latencies) / max(elapsed for _, elapsed in runs)  # the clients ran side by side
        counters = httpx.get(f"{base}/v1/threshold?bounds=false", timeout=30).json()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    lost = labelled - counters["matched"] - counters["unmatched"]
    rows = [
        ("batched decisions (events/s)", f"{decide_rate:,.0f}", f"{sent:,} events, {args.batch:,} per request"),
        ("batched labels (events/s)", f"{label_rate:,.0f}", f"{labelled:,} labels, {args.batch:,} per request"),
        ("single decisions (requests/s)", f"{single_rate:,.0f}", f"{len(latencies):,} requests, "
                                                                  f"{args.clients} client processes"),
        ("single decision latency p50 / p99 (ms)",
         f"{percentile(latencies, 0.5) * 1e3:.2f} / {percentile(latencies, 0.99) * 1e3:.2f}", ""),
        ("server CPU per event: batched decisions / batched labels (us)",
         f"{decide_cpu * 1e6:.1f} / {label_cpu * 1e6:.1f}", "the server process's user + system time"),
        ("server CPU per single decision request (us)", f"{single_cpu * 1e6:.0f}",
         "the clients' HTTP work runs in their own processes"),
        ("labels matched / unmatched / lost", f"{counters['matched']:,} / {counters['unmatched']:,} / {lost:,}", ""),
        ("threshold at the end", f"{counters['threshold']:.4f}", f"{counters['n_held']:,} events held"),
    ]
    table = "| measure | value | how |\n|---|---|---|\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)
    print(table)
    if args.write:
        cmd = "python benchmarks/service_load.py " + " ".join(argv if argv is not None else sys.argv[1:])
        out = Path(__file__).parent / "results" / "service_load.md"
        out.write_text(
            f"# The threshold service under load (loopback)\n\nCommand: `{cmd.strip()}`\n\n"
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.system()}; one server process, its client on the same machine, other work running on "
            f"the machine during the run.\n\n{table}\n", encoding="utf-8")
        print(f"wrote {out}")
    for f in Path(workdir).iterdir():
        f.unlink()
    os.rmdir(workdir)
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
