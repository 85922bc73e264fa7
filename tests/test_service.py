"""The threshold service (thors_stream.service): its HTTP contract, refusals, restarts, a real server."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():  # (newer Starlette warns about httpx in its test client)
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from thors_stream import MarginThors, StreamingThors
from thors_stream.segments import SegmentedStreamingThors
from thors_stream.service import ServiceSettings, create_app
from thors_stream.store import DecisionLoop

TOKEN = "s3cret-token-of-32-characters-xx"


def _client(path, **kw):
    kw.setdefault("fn_cost", 5.0)
    kw.setdefault("fp_cost", 1.0)
    kw.setdefault("window", 50)
    kw.setdefault("warm_up", 0)
    return TestClient(create_app(ServiceSettings(path, **kw)))


def _events(seed, n, margin=False, segment=None):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = rng.random() < 0.3
        e = {"key": f"tx-{seed}-{i}" if i % 3 else seed * 10_000 + i,
             "score": round(min(1.0, max(0.0, rng.gauss(0.6 if y else 0.35, 0.2))), 2)}
        if margin:
            e["fn_cost"] = rng.choice([5.0, 80.0, 400.0])
        if segment:
            e[segment] = rng.choice(["FR", "DE", 7])
        out.append((e, y))
    return out


@pytest.mark.parametrize("mode", ["score", "margin", "segments"])
def test_the_service_thresholds_equal_a_summary_fed_the_same_labels(tmp_path, mode):
    margin, seg = mode == "margin", "merchant" if mode == "segments" else None
    ref = (MarginThors(window=50) if margin else
           SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=50, min_per_class=3) if seg else
           StreamingThors(fn_cost=5, fp_cost=1, window=50))
    kw = dict(decide_on="margin", fn_cost=1.0) if margin else dict(segment_field=seg, min_per_class=3) if seg else {}
    with _client(tmp_path / "s.sqlite", **kw) as client:
        for batch in range(4):
            evs = _events(batch, 40, margin, seg)
            r = client.post("/v1/decide", json={"events": [e for e, _ in evs]})
            assert r.status_code == 200, r.text
            decisions = r.json()["decisions"]
            assert [d["key"] for d in decisions] == [e["key"] for e, _ in evs]
            labelled = evs[::2] + [({"key": "never-decided"}, True)]
            r = client.post("/v1/labels", json={"labels": [{"key": e["key"], "label": y} for e, y in labelled]})
            assert r.json() == {"matched": len(labelled) - 1, "unmatched": 1, "unmatched_keys": ["never-decided"]}
            for e, y in labelled[:-1]:
                if margin:
                    ref.update(e["score"], y, fn_cost=e["fn_cost"], fp_cost=1.0)
                elif seg:
                    ref.update(e[seg], e["score"], y)
                else:
                    ref.update(e["score"], y)
            body = client.get("/v1/threshold?bounds=false").json()
            if seg:
                for s in body["segments"]:
                    want = ref.get(s["segment"])
                    assert s["threshold"] == want
                assert body["threshold"] == ref.global_threshold()
            else:
                assert body["threshold"] == ref.get()
                assert body["n_held"] == len(ref)
        # the decisions use the thresholds of the moment
        evs = _events(9, 5, margin, seg)
        got = client.post("/v1/decide", json={"events": [e for e, _ in evs]}).json()["decisions"]
        for (e, _), d in zip(evs, got):
            if margin:
                assert d["flag"] == ref.predict_one(e["score"], fn_cost=e["fn_cost"], fp_cost=1.0)
            elif seg:
                assert d["threshold"] == ref.get(e[seg]) and d["flag"] == (e["score"] > d["threshold"])
            else:
                assert d["flag"] == ref.predict_one(e["score"])
        for (e, _), d in zip(evs, got):  # one event per request: the same answers
            one = client.post("/v1/decide", json={"events": [{**e, "key": f"one-{e['key']}"}]}).json()
            assert one == {"decisions": [{**d, "key": f"one-{e['key']}"}]}
        before = client.get("/v1/threshold").json()
    with _client(tmp_path / "s.sqlite", **kw) as client:  # restarted on the same store
        assert client.get("/v1/threshold").json() == before
    assert before["bounds"] is not None and 0 <= before["bounds"]["fpr_lower"] <= before["bounds"]["fpr_upper"]


def _hostile(margin):
    good = {"key": "k", "score": 0.5}
    cases = [
        (b"{not json", 400, "body"),
        (b'{"events": [{"key": "k", "score": NaN}]}', 400, "body"),
        (b'{"events": [{"key": "k", "score": Infinity}]}', 400, "body"),
        (b'{"events": [{"key": "k", "score": 1e999}]}', 422, "events[0].score"),
        (b'{"events": [{"key": "k", "score": 0.5, "score": 0.7}]}', 400, "score"),
        (b'[1, 2]', 422, "body"),
        (b'{"events": {"key": "k"}}', 422, "events"),
        (b'{"labels": []}', 422, "events"),
        (json.dumps({"events": [good, {"score": 0.5}]}).encode(), 422, "events[1].key"),
        (json.dumps({"events": [good, {"key": "x"}]}).encode(), 422, "events[1].score"),
        (json.dumps({"events": [{"key": True, "score": 0.5}]}).encode(), 422, "events[0].key"),
        (json.dumps({"events": [{"key": 1.5, "score": 0.5}]}).encode(), 422, "events[0].key"),
        (json.dumps({"events": [{"key": 2**70, "score": 0.5}]}).encode(), 422, "events[0].key"),
        (json.dumps({"events": [{"key": "x" * 600, "score": 0.5}]}).encode(), 422, "events[0].key"),
        (json.dumps({"events": [{"key": "k", "score": "0.5"}]}).encode(), 422, "events[0].score"),
        (json.dumps({"events": [good, "k"]}).encode(), 422, "events[1]"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "body"),
    ]
    if margin:
        cases += [
            (json.dumps({"events": [good, {"key": "j", "score": 1.5}]}).encode(), 422, "events[1].score"),
            (json.dumps({"events": [{**good, "fn_cost": -2}]}).encode(), 422, "events[0].fn_cost"),
            (json.dumps({"events": [{**good, "fp_cost": 0}]}).encode(), 422, "events[0].fp_cost"),
        ]
    else:
        cases += [
            (json.dumps({"events": [{**good, "fn_cost": 3.0}]}).encode(), 422, "events[0].fn_cost"),
            (json.dumps({"events": [{**good, "segment": "FR"}]}).encode(), 422, "events[0].segment"),
        ]
    return cases


LABEL_CASES = [
    (json.dumps({"labels": [{"key": "a", "label": True}, {"key": "b", "label": 2}]}).encode(), 422,
     "labels[1].label"),
    (json.dumps({"labels": [{"key": "a", "label": "yes"}]}).encode(), 422, "labels[0].label"),
    (json.dumps({"labels": [{"key": "a"}]}).encode(), 422, "labels[0].label"),
    (json.dumps({"labels": [{"key": "a", "label": True, "w": -1}]}).encode(), 422, "labels[0].w"),
    (json.dumps({"labels": [{"key": [1], "label": True}]}).encode(), 422, "labels[0].key"),
]


@pytest.mark.parametrize("margin", [False, True])
def test_a_malformed_request_gets_a_4xx_naming_the_field_and_changes_nothing(tmp_path, margin):
    kw = dict(decide_on="margin", fn_cost=1.0) if margin else {}
    with _client(tmp_path / "s.sqlite", max_events=50, max_body_bytes=2**20, **kw) as client:
        evs = _events(1, 30)
        client.post("/v1/decide", json={"events": [e for e, _ in evs]})
        client.post("/v1/labels", json={"labels": [{"key": e["key"], "label": y} for e, y in evs[:20]]})
        before = client.get("/v1/threshold?bounds=false").json()
        metrics_before = client.get("/metrics").text
        cases = [(b, s, f, "/v1/decide") for b, s, f in _hostile(margin)]
        cases += [(b, s, f, "/v1/labels") for b, s, f in LABEL_CASES]
        cases += [(json.dumps({"events": [{"key": i, "score": 0.5} for i in range(51)]}).encode(), 413, "events",
                   "/v1/decide"),
                  (b" " * (2**20 + 1), 413, "body", "/v1/decide")]
        for body, status, field, route in cases:
            r = client.post(route, content=body, headers={"content-type": "application/json"})
            assert r.status_code == status, (body[:80], r.text)
            err = r.json()["error"]
            assert err["field"] == field, (body[:80], err)
            json.loads(r.text, parse_constant=pytest.fail)  # strict JSON: no NaN or Infinity echoed back
            assert client.get("/v1/threshold?bounds=false").json() == before
        assert "thors_errors_total" in client.get("/metrics").text and metrics_before


def test_a_token_guards_the_routes_and_metrics_count_the_loop(tmp_path):
    with _client(tmp_path / "s.sqlite", token=TOKEN, segment_field="merchant", min_per_class=1) as client:
        assert client.get("/healthz").json()["status"] == "ok"
        body = {"events": [{"key": "a", "score": 0.9, "merchant": "m1"}]}
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": TOKEN}):
            r = client.post("/v1/decide", json=body, headers=headers)
            assert r.status_code == 401 and r.json()["error"]["field"] == "Authorization"
            assert client.get("/metrics", headers=headers).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert client.post("/v1/decide", json=body, headers=auth).json()["decisions"][0]["flag"] is True
        client.post("/v1/labels", json={"labels": [{"key": "a", "label": True}, {"key": "z", "label": 0}]},
                    headers=auth)
        text = client.get("/metrics", headers=auth).text
        for line in ("thors_decisions_total 1.0", 'thors_labels_total{result="matched"} 1.0',
                     'thors_labels_total{result="unmatched"} 1.0', "thors_pending_decisions 0.0",
                     'thors_threshold{segment=""}', 'thors_threshold{segment="m1"}',
                     'thors_errors_total{kind="auth"} 6.0'):
            assert line in text, line
        schema = client.get("/openapi.json").json()
        assert {"/v1/decide", "/v1/labels", "/v1/threshold", "/healthz", "/metrics"} <= set(schema["paths"])
        req = schema["paths"]["/v1/decide"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert req["properties"]["events"]["items"]["required"] == ["key", "score", "merchant"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_thors_serve_runs_the_real_server_over_http_and_a_sigterm_commits(tmp_path):
    import httpx

    path = tmp_path / "fraud.sqlite"
    port = _free_port()
    cmd = [sys.executable, "-m", "thors_stream", "serve", "--store", str(path), "--fn-cost", "5", "--fp-cost", "1",
           "--window", "100", "--warm-up", "0", "--port", str(port), "--max-pending-age", "90d"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
            time.sleep(0.05)
        with httpx.Client(base_url=base, timeout=10) as http:
            evs = _events(3, 30)
            r = http.post("/v1/decide", json={"events": [e for e, _ in evs]})
            assert r.status_code == 200 and len(r.json()["decisions"]) == 30
            r = http.post("/v1/labels", json={"labels": [{"key": e["key"], "label": y} for e, y in evs[:20]]})
            assert r.json()["matched"] == 20
            thr = http.get("/v1/threshold").json()["threshold"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    log = proc.stdout.read().decode()
    # uvicorn shuts down gracefully, then exits with the signal it received
    assert proc.returncode in (0, -signal.SIGTERM) and "Application shutdown complete" in log, log[-2000:]
    ref = StreamingThors(fn_cost=5, fp_cost=1, window=100)
    for e, y in evs[:20]:
        ref.update(e["score"], y)
    assert thr == ref.get()
    with DecisionLoop(path, fn_cost=5.0, fp_cost=1.0, window=100, warm_up=0,
                      max_pending_age=dt.timedelta(days=90)) as loop:  # committed on SIGTERM
        assert loop.threshold == thr and loop.pending == 10 and loop.matched == 20
    assert not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0


def test_thors_serve_refuses_a_store_it_cannot_use_naming_it(tmp_path, capsys):
    from thors_stream.cli import main

    junk = tmp_path / "notes.txt"
    junk.write_text("not a database\n" * 10)
    args = ["serve", "--store", str(junk), "--fn-cost", "5", "--fp-cost", "1", "--port", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("thors serve: error:") and "notes.txt" in err and "not a thors_stream store" in err
    path = tmp_path / "s.sqlite"
    with DecisionLoop(path, fn_cost=5.0, fp_cost=1.0):  # the store is in use
        assert main(["serve", "--store", str(path), "--fn-cost", "5", "--fp-cost", "1", "--port", "1"]) == 2
        assert "is open for writing" in capsys.readouterr().err
    assert main(["serve", "--store", str(path), "--fn-cost", "6", "--fp-cost", "1", "--port", "1"]) == 2
    assert "other settings" in capsys.readouterr().err
    assert main(["serve", "--store", str(path), "--fn-cost", "5", "--fp-cost", "1", "--window", "0"]) == 2
    assert "--window" in capsys.readouterr().err


def test_a_key_with_a_lone_surrogate_is_decided_stored_and_matched(tmp_path):
    # valid JSON ("\ud800" escaped), but no UTF-8 form: SQLite could not hold it as text, and the failed
    # commit left the pending counter wrong for good
    body = '{"events": [{"key": "ok-1", "score": 0.3}, {"key": "\\ud800", "score": 0.5}]}'
    headers = {"Content-Type": "application/json"}
    with _client(tmp_path / "s.sqlite") as client:
        assert client.post("/v1/decide", content=body, headers=headers).status_code == 200
        assert client.get("/v1/threshold?bounds=false").json()["pending"] == 2
    with _client(tmp_path / "s.sqlite") as client:
        assert client.get("/v1/threshold?bounds=false").json()["pending"] == 2
        labels = '{"labels": [{"key": "ok-1", "label": 0}, {"key": "\\ud800", "label": 1}]}'
        assert client.post("/v1/labels", content=labels, headers=headers).json()["matched"] == 2
        assert client.get("/v1/threshold?bounds=false").json()["pending"] == 0
