"""A threshold service over HTTP: decide now, label later, from any language.

One process owns a :class:`~thors_stream.store.DecisionLoop` on an SQLite store (SQLite has
one writer) and serves it as JSON over HTTP (FastAPI on uvicorn: ``pip install
'thors_stream[serve]'``); from the command line, ``thors serve --store fraud.sqlite --fn-cost 50
--fp-cost 1`` runs :func:`serve`. Scorers in any language call it:

``POST /v1/decide``
    ``{"events": [{"key": k, "score": p, "fn_cost"?: c, "fp_cost"?: c, <segment field>?: s}, ...]}``
    -> ``{"decisions": [{"key": k, "flag": bool, "threshold": t}, ...]}`` in order; each
    decision is stored under its key with its decision-time score. Keys are strings (at most
    512 characters) or integers (int64); ``fn_cost``/``fp_cost`` per event only when the
    service decides on the cost margin (``decide_on="margin"``; the service's costs are the
    defaults); the segment, when the service has a segment field, in that field.
``POST /v1/labels``
    ``{"labels": [{"key": k, "label": bool, "w"?: weight}, ...]}`` -> ``{"matched": n,
    "unmatched": m, "unmatched_keys": [...]}``; a matched label teaches the threshold with the
    stored score; an unknown or evicted key is counted, never an error.
``GET /v1/threshold``
    ``{"threshold": t, "n_held": n, ..., "bounds": {...}}``, and with segments
    ``"segments": [{"segment": s, "threshold": t, "n_held": n, "bounds": ...}, ...]``
    (``?segment=s`` for one; ``?bounds=false`` to skip the bounds).
``GET /healthz``, ``GET /metrics`` (Prometheus text), ``GET /openapi.json``.

The thresholds are those of a :class:`~thors_stream.StreamingThors` (or
:class:`~thors_stream.MarginThors`, per segment :class:`~thors_stream.segments.SegmentedStreamingThors`)
fed the matched labels' decision-time scores in the order the labels came, exactly.
A threshold of ``-inf`` (flag every event) is written as ``-1.7976931348623157e308``, the
lowest double, which every score and margin exceeds: JSON has no infinities.

**Safe by default.** Binds ``127.0.0.1``; an optional bearer token (from a file or an
environment variable, compared in constant time) guards every ``/v1`` route and ``/metrics``;
request bodies are limited (``max_body_bytes``, ``max_events``); a malformed request gets a 4xx
JSON error ``{"error": {"field": "events[3].score", "message": "..."}}`` naming the field,
and changes nothing (values are quoted in the message as text, never echoed as JSON numbers;
``NaN`` and ``Infinity`` literals are refused, as are repeated names in an object). SIGTERM
(and Ctrl-C) commits and checkpoints before the process exits; a restart on the same store
answers with the same thresholds.
"""

import asyncio
import contextlib
import hmac
import json
import math
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from .store import DEFAULT_COMMIT_INTERVAL, DecisionLoop

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_EVENTS", "ServiceSettings", "create_app", "serve"]

DEFAULT_MAX_BODY_BYTES = 16 * 2**20
"""The largest request body accepted (16 MiB), bytes."""
DEFAULT_MAX_EVENTS = 100_000
"""The most events (or labels) one request may carry."""
MAX_KEY_CHARS = 512
_LOWEST = -sys.float_info.max
_I64 = 2**63


def _require() -> Any:
    """Import FastAPI, with a message naming the extra when it is missing."""
    try:
        import fastapi
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise ImportError("the threshold service needs FastAPI and uvicorn: pip install 'thors_stream[serve]' "
                          f"({exc})") from None
    return fastapi


class _BadRequest(Exception):
    """A request refused: status, the field it names, a message."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


def _num(x: float) -> float:
    """A float JSON can carry: ``-inf`` becomes the lowest double."""
    return x if x != -math.inf else _LOWEST


def _strict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _BadRequest(400, k, f"the name {k!r} appears twice in one object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise _BadRequest(400, "body", f"{name} is not JSON (non-finite numbers are refused)")


def _parse(body: bytes) -> Any:
    try:
        return json.loads(body, object_pairs_hook=_strict, parse_constant=_no_constant)
    except _BadRequest:
        raise
    except (ValueError, RecursionError) as exc:
        raise _BadRequest(400, "body", f"not valid JSON: {str(exc)[:200]}") from None


def _show(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:50] + "..."


def _key(v: Any, field: str) -> str | int:
    if type(v) is str:
        if len(v) > MAX_KEY_CHARS:
            raise _BadRequest(422, field, f"must be at most {MAX_KEY_CHARS} characters, got {len(v)}")
        return v
    if type(v) is int:
        if not -_I64 <= v < _I64:
            raise _BadRequest(422, field, "must be an integer in the int64 range")
        return v
    raise _BadRequest(422, field, f"must be a string or an integer, got {type(v).__name__} {_show(v)}")


def _number(v: Any, field: str) -> float:
    if type(v) is float:
        if not math.isfinite(v):
            raise _BadRequest(422, field, f"must be a finite number, got {v!r}")
        return v
    if type(v) is int:
        f = float(v) if abs(v) < 2**1023 else math.inf
        if not math.isfinite(f):
            raise _BadRequest(422, field, "must be a finite number, got an integer too large for a double")
        return f
    raise _BadRequest(422, field, f"must be a number, got {type(v).__name__} {_show(v)}")


def _list(obj: Any, name: str, limit: int) -> list[Any]:
    if not isinstance(obj, dict):
        raise _BadRequest(422, "body", f"must be a JSON object with {name!r}, got {type(obj).__name__}")
    items = obj.get(name)
    if not isinstance(items, list):
        raise _BadRequest(422, name, f"must be a list, got {type(items).__name__ if name in obj else 'nothing'}")
    if len(items) > limit:
        raise _BadRequest(413, name, f"holds {len(items)} items, more than the {limit} one request may carry")
    return items


class ServiceSettings:
    """The settings of one service: the loop's (passed to :class:`~thors_stream.store.DecisionLoop`)
    and the HTTP side's. See :func:`create_app`."""

    def __init__(self, store_path: str | os.PathLike[str], *, fn_cost: float, fp_cost: float,
                 window: int | str | None = 10_000, decide_on: str = "score", segment_field: str | None = None,
                 token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_events: int = DEFAULT_MAX_EVENTS, **loop_kwargs: Any) -> None:
        if segment_field is not None and (not isinstance(segment_field, str) or not segment_field or
                                          segment_field in ("key", "score", "fn_cost", "fp_cost")):
            raise ValueError(f"segment_field must be a field name other than key, score, fn_cost, fp_cost, got "
                             f"{segment_field!r}")
        if token is not None and (not isinstance(token, str) or len(token) < 16):
            raise ValueError("token must be a string of at least 16 characters")
        for name, v in (("max_body_bytes", max_body_bytes), ("max_events", max_events)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.store_path = os.fspath(store_path)
        self.loop_kwargs = dict(fn_cost=fn_cost, fp_cost=fp_cost, window=window, decide_on=decide_on,
                                segmented=segment_field is not None, **loop_kwargs)
        self.segment_field = segment_field
        self.decide_on = decide_on
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.max_events = max_events

    def open_loop(self) -> DecisionLoop:
        """Open (or resume) the loop on the store."""
        return DecisionLoop(self.store_path, **self.loop_kwargs)


_ERROR = {"type": "object", "properties": {"error": {"type": "object", "properties": {
    "field": {"type": "string", "description": "the field refused, e.g. events[3].score"},
    "message": {"type": "string"}}, "required": ["field", "message"]}}, "required": ["error"]}
_KEY = {"oneOf": [{"type": "string", "maxLength": MAX_KEY_CHARS}, {"type": "integer"}],
        "description": "the decision's key (a payment id)"}


def _decide_schema(segment_field: str | None, margin: bool) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "object", "required": ["key", "score"], "properties": {
        "key": _KEY,
        "score": {"type": "number", "description": "the model's probability of the positive class" if margin
                  else "the model's score (a finite number)"}}}
    if margin:
        event["properties"]["fn_cost"] = {"type": "number", "exclusiveMinimum": 0,
                                          "description": "what missing this event costs if positive (default: the "
                                                         "service's fn_cost)"}
        event["properties"]["fp_cost"] = {"type": "number", "exclusiveMinimum": 0,
                                          "description": "what flagging this event costs if negative (default: the "
                                                         "service's fp_cost)"}
    if segment_field is not None:
        event["required"].append(segment_field)
        event["properties"][segment_field] = {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"},
                                                        {"type": "boolean"}, {"type": "null"}],
                                              "description": "the event's segment"}
    return {"type": "object", "required": ["events"], "properties": {"events": {"type": "array", "items": event}}}


_LABELS_SCHEMA = {"type": "object", "required": ["labels"], "properties": {"labels": {"type": "array", "items": {
    "type": "object", "required": ["key", "label"], "properties": {
        "key": _KEY, "label": {"oneOf": [{"type": "boolean"}, {"type": "integer", "enum": [0, 1]}]},
        "w": {"type": "number", "exclusiveMinimum": 0, "description": "a sample weight (default 1)"}}}}}}
_DECISIONS_SCHEMA = {"type": "object", "required": ["decisions"], "properties": {"decisions": {
    "type": "array", "items": {"type": "object", "required": ["key", "flag", "threshold"], "properties": {
        "key": _KEY, "flag": {"type": "boolean"},
        "threshold": {"type": "number", "description": "the threshold it was decided against (-inf is sent as "
                                                       "the lowest double)"}}}}}}
_MATCH_SCHEMA = {"type": "object", "required": ["matched", "unmatched"], "properties": {
    "matched": {"type": "integer"}, "unmatched": {"type": "integer"},
    "unmatched_keys": {"type": "array", "items": _KEY}}}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _responses(schema: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    err = {"content": {"application/json": {"schema": _ERROR}}}
    return {200: {"content": {"application/json": {"schema": schema}}},
            400: {"description": "malformed JSON", **err}, 401: {"description": "missing or wrong token", **err},
            413: {"description": "request too large", **err}, 422: {"description": "a field refused", **err}}


def create_app(settings: ServiceSettings) -> "FastAPI":
    """The ASGI application (FastAPI) of the service: the loop is opened at startup (resuming
    the store) and closed at shutdown (commit and checkpoint). A background task commits an
    idle tail every ``commit_interval``. Requests are served one at a time on the event loop
    (the loop is not shared between threads). Test it with FastAPI's ``TestClient``; run it
    with :func:`serve` (or any ASGI server, one worker: one writer per store).

    Complexity: a batch of ``m`` events costs O(m) to parse and check, plus the loop's
    ``decide_many``/``label_many``.
    """
    _require()
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import Response
    from starlette.exceptions import HTTPException as StarletteHTTPException

    state: dict[str, Any] = {"errors": {"validation": 0, "auth": 0, "too_large": 0, "malformed": 0,
                                        "internal": 0}}

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        loop = settings.open_loop()
        state["loop"] = loop
        interval = loop.store.commit_interval or DEFAULT_COMMIT_INTERVAL

        async def committer() -> None:
            while True:
                await asyncio.sleep(interval)
                loop.tick()

        task = asyncio.create_task(committer())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            loop.close()

    class ThresholdApp(FastAPI):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            """The two batched routes served straight from ASGI, before FastAPI's middleware."""
            if scope["type"] == "http" and scope["method"] == "POST":
                work = routes.get(scope["path"])
                if work is not None:
                    await raw(scope, receive, send, work)
                    return
            await super().__call__(scope, receive, send)

    app = ThresholdApp(title="thors_stream threshold service", lifespan=lifespan,
                       description="Cost-sensitive THORS thresholds: decide now, label later.")

    def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
        return Response(json.dumps(obj, allow_nan=False, separators=(",", ":")), status_code=status,
                        media_type="application/json", headers=headers)

    def _error(exc: _BadRequest) -> Any:
        kind = {400: "malformed", 401: "auth", 413: "too_large"}.get(exc.status, "validation")
        state["errors"][kind] += 1
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _json({"error": {"field": exc.field, "message": exc.message}}, exc.status, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Any, exc: Any) -> Any:  # no input echoed back
        errs = exc.errors()
        first = errs[0] if errs else {}
        field = ".".join(str(p) for p in first.get("loc", ())) or "request"
        return _error(_BadRequest(422, field, str(first.get("msg", "invalid request"))[:200]))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Any, exc: Any) -> Any:
        return _json({"error": {"field": "path", "message": str(exc.detail)[:200]}}, exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(request: Any, exc: Exception) -> Any:  # pragma: no cover - a bug or a failing disk
        state["errors"]["internal"] += 1
        return _json({"error": {"field": "server", "message": f"internal error: {type(exc).__name__}"}}, 500)

    def _auth(request: Any) -> None:
        _check_token(request.headers.get("authorization", ""))

    def _check_token(given: str) -> None:
        if settings.token is None:
            return
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.token.encode()):
            raise _BadRequest(401, "Authorization", "a bearer token is required (Authorization: Bearer <token>)"
                              if not given else "the bearer token is wrong")

    async def _read(request: Any) -> Any:
        _auth(request)
        limit = settings.max_body_bytes
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise _BadRequest(413, "body", f"is larger than {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _BadRequest(413, "body", f"is larger than {limit} bytes")
            chunks.append(chunk)
        return _parse(b"".join(chunks))

    margin = settings.decide_on == "margin"
    seg_field = settings.segment_field

    def decide_batch(obj: Any) -> dict[str, Any]:
        events = _list(obj, "events", settings.max_events)
        n = len(events)
        keys: list[Any] = [None] * n
        scores = [0.0] * n
        fns: list[Any] | None = None
        fps: list[Any] | None = None
        segs: list[Any] | None = [None] * n if seg_field is not None else None
        for i, e in enumerate(events):
            if type(e) is not dict:
                raise _BadRequest(422, f"events[{i}]", f"must be an object, got {type(e).__name__}")
            try:
                keys[i] = _key(e["key"], f"events[{i}].key")
                s = _number(e["score"], f"events[{i}].score")
            except KeyError as exc:
                raise _BadRequest(422, f"events[{i}].{exc.args[0]}", "is required") from None
            if margin and not 0.0 <= s <= 1.0:
                raise _BadRequest(422, f"events[{i}].score", f"must be a probability in [0, 1], got {s!r}")
            scores[i] = s
            for name in ("fn_cost", "fp_cost"):
                if name in e:
                    if not margin:
                        raise _BadRequest(422, f"events[{i}].{name}", "per-event costs need the service to decide "
                                          "on the cost margin (decide_on='margin')")
                    c = _number(e[name], f"events[{i}].{name}")
                    if not 2.0**-960 <= c <= 2.0**960:
                        raise _BadRequest(422, f"events[{i}].{name}", f"must be > 0 (in [2**-960, 2**960]), got {c!r}")
                    if name == "fn_cost":
                        fns = fns if fns is not None else [None] * n
                        fns[i] = c
                    else:
                        fps = fps if fps is not None else [None] * n
                        fps[i] = c
            if segs is not None:
                if seg_field not in e:
                    raise _BadRequest(422, f"events[{i}].{seg_field}", "is required (the segment)")
                g = e[seg_field]
                if g is not None and type(g) not in (str, int, float, bool):
                    raise _BadRequest(422, f"events[{i}].{seg_field}", f"must be a string, number, boolean or "
                                      f"null, got {type(g).__name__}")
                if type(g) is float and not math.isfinite(g):
                    raise _BadRequest(422, f"events[{i}].{seg_field}", f"must be finite, got {g!r}")
                segs[i] = g
            elif "segment" in e:
                raise _BadRequest(422, f"events[{i}].segment", "this service has no segments (start it with a "
                                  "segment field)")
        loop: DecisionLoop = state["loop"]
        fn_list = None if fns is None else [loop.fn_cost if c is None else c for c in fns]
        fp_list = None if fps is None else [loop.fp_cost if c is None else c for c in fps]
        try:
            if n == 1:  # (one event: the same answer as decide_many, without its arrays)
                g = None if segs is None else segs[0]
                thr = [_num(loop.threshold_of(g))]
                flags = [loop.decide(keys[0], scores[0], fn_cost=None if fn_list is None else fn_list[0],
                                     fp_cost=None if fp_list is None else fp_list[0], segment=g)]
            else:
                d = loop.decide_many(keys, scores, fn_cost=fn_list, fp_cost=fp_list, segments=segs)
                flags = d.flags.tolist()
                thr = [_num(t) for t in d.thresholds.tolist()]
        except (TypeError, ValueError) as exc:  # (every field was checked above)
            raise _BadRequest(422, "events", str(exc)[:300]) from None
        return {"decisions": [{"key": k, "flag": f, "threshold": t} for k, f, t in zip(keys, flags, thr)]}

    def label_batch(obj: Any) -> dict[str, Any]:
        labels = _list(obj, "labels", settings.max_events)
        n = len(labels)
        keys: list[Any] = [None] * n
        ys = [False] * n
        ws: list[float] | None = None
        for i, e in enumerate(labels):
            if type(e) is not dict:
                raise _BadRequest(422, f"labels[{i}]", f"must be an object, got {type(e).__name__}")
            try:
                keys[i] = _key(e["key"], f"labels[{i}].key")
                y = e["label"]
            except KeyError as exc:
                raise _BadRequest(422, f"labels[{i}].{exc.args[0]}", "is required") from None
            if type(y) is bool:
                ys[i] = y
            elif type(y) is int and y in (0, 1):
                ys[i] = y == 1
            else:
                raise _BadRequest(422, f"labels[{i}].label", f"must be true, false, 0 or 1, got {_show(y)}")
            if "w" in e:
                w = _number(e["w"], f"labels[{i}].w")
                if not 0.0 < w <= 2.0**960:
                    raise _BadRequest(422, f"labels[{i}].w", f"must be > 0 (at most 2**960), got {w!r}")
                ws = ws if ws is not None else [1.0] * n
                ws[i] = w
        loop: DecisionLoop = state["loop"]
        try:
            matched = loop.label_many(keys, ys, w=ws)
        except (TypeError, ValueError) as exc:  # a weight out of range for the decision's cost
            raise _BadRequest(422, "labels", str(exc)[:300]) from None
        out = matched.tolist()
        unmatched = [k for k, m in zip(keys, out) if not m]
        return {"matched": n - len(unmatched), "unmatched": len(unmatched), "unmatched_keys": unmatched}

    async def handle(request: Any, work: Callable[[Any], dict[str, Any]]) -> Any:
        try:
            obj = await _read(request)
            return _json(work(obj))
        except _BadRequest as exc:
            return _error(exc)

    routes: dict[str, Callable[[Any], dict[str, Any]]] = {"/v1/decide": decide_batch, "/v1/labels": label_batch}

    async def raw(scope: Any, receive: Any, send: Any, work: Callable[[Any], dict[str, Any]]) -> None:
        """The two batched routes served straight from ASGI (the same checks and answers as the
        FastAPI routes below, which document them, without their per-request machinery)."""
        extra: list[tuple[bytes, bytes]] = []
        try:
            auth, length = b"", None
            for k, v in scope["headers"]:
                if k == b"authorization":
                    auth = v
                elif k == b"content-length":
                    length = v
            _check_token(auth.decode("latin-1"))
            limit = settings.max_body_bytes
            if length is not None and (not length.isdigit() or int(length) > limit):
                raise _BadRequest(413, "body", f"is larger than {limit} bytes")
            chunks, size = [], 0
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return
                chunk = msg.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _BadRequest(413, "body", f"is larger than {limit} bytes")
                chunks.append(chunk)
                if not msg.get("more_body", False):
                    break
            status, payload = 200, json.dumps(work(_parse(b"".join(chunks))), allow_nan=False, separators=(",", ":"))
        except _BadRequest as exc:
            state["errors"][{400: "malformed", 401: "auth", 413: "too_large"}.get(exc.status, "validation")] += 1
            if exc.status == 401:
                extra.append((b"www-authenticate", b"Bearer"))
            status = exc.status
            payload = json.dumps({"error": {"field": exc.field, "message": exc.message}}, separators=(",", ":"))
        except Exception as exc:  # pragma: no cover - a bug or a failing disk
            state["errors"]["internal"] += 1
            status = 500
            payload = json.dumps({"error": {"field": "server", "message": f"internal error: {type(exc).__name__}"}})
        body = payload.encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})

    @app.post("/v1/decide", openapi_extra=_body(_decide_schema(seg_field, margin)),
              responses=_responses(_DECISIONS_SCHEMA), summary="Decide on events and store them as pending")
    async def decide(request: Request) -> Any:
        return await handle(request, decide_batch)

    @app.post("/v1/labels", openapi_extra=_body(_LABELS_SCHEMA), responses=_responses(_MATCH_SCHEMA),
              summary="Learn the labels of pending decisions")
    async def labels(request: Request) -> Any:
        return await handle(request, label_batch)

    def _bounds(result: Any, want: bool) -> Any:
        if not want or result is None:
            return None
        from .bounds import threshold_bounds

        try:
            b = threshold_bounds(result)
        except (ValueError, ZeroDivisionError, ArithmeticError):
            return None
        return {name: getattr(b, name) for name in ("confidence", "fpr", "fpr_lower", "fpr_upper", "fnr",
                                                    "fnr_lower", "fnr_upper", "risk_upper")}

    @app.get("/v1/threshold", summary="The thresholds now, with bounds",
             responses={401: {"description": "missing or wrong token",
                              "content": {"application/json": {"schema": _ERROR}}}})
    async def threshold(request: Request, bounds: bool = True, segment: str | None = None) -> Any:
        try:
            _auth(request)
        except _BadRequest as exc:
            return _error(exc)
        loop: DecisionLoop = state["loop"]
        st = loop.store
        body: dict[str, Any] = {
            "threshold": _num(loop.threshold), "n_held": len(loop.thors), "decide_on": loop.decide_on,
            "window": loop.window, "warmed_up": loop.warmed_up, "default_threshold": _num(loop.default_threshold),
            "n_learned": loop.n_learned, "pending": st.pending, "matched": st.matched, "unmatched": st.unmatched,
            "evicted": st.evicted, "n_decided": st.n_decided, "n_labels": st.n_labels,
            "bounds": _bounds(loop.thors.result(), bounds)}
        segs = loop.segments
        if segs is not None:
            held = segs.segments()
            if segment is not None:  # a query string is text: match a held segment by its text
                held = [g for g in held if str(g) == segment or (g is None and segment == "null")] or [segment]
            body["segments"] = [_segment_entry(loop, g, bounds) for g in held]
        return _json(body)

    def _segment_entry(loop: DecisionLoop, g: Any, bounds: bool) -> dict[str, Any]:
        segs = loop.segments
        assert segs is not None
        summary = segs._summary(g)
        return {"segment": g, "threshold": _num(loop.threshold_of(g)),
                "source": segs.source(g) if loop.warmed_up or segs.auto else "default",
                "n_held": 0 if summary is None else len(summary),
                "bounds": _bounds(None if summary is None else summary.result(), bounds)}

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> Any:
        loop = state.get("loop")
        return _json({"status": "ok" if loop is not None else "starting",
                      "pending": loop.pending if loop is not None else None})

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Any:
        try:
            _auth(request)
        except _BadRequest as exc:
            return _error(exc)
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    registry = _registry(state)
    return app


def _registry(state: dict[str, Any]) -> Any:
    """A Prometheus registry whose one collector reads the loop's counters at each scrape."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    class Collector:
        def collect(self) -> Any:
            loop: DecisionLoop | None = state.get("loop")
            if loop is None:
                return
            st = loop.store
            yield CounterMetricFamily("thors_decisions", "Decisions stored.", value=st.n_decided)
            yield CounterMetricFamily("thors_flagged", "Decisions flagged by this process.", value=loop.n_flagged)
            labels = CounterMetricFamily("thors_labels", "Labels received, by whether they matched a decision.",
                                         labels=["result"])
            labels.add_metric(["matched"], st.matched)
            labels.add_metric(["unmatched"], st.unmatched)
            yield labels
            yield CounterMetricFamily("thors_positive_labels", "Matched positive labels (this process).",
                                      value=loop.n_positive_labels)
            yield CounterMetricFamily("thors_evicted", "Pending decisions evicted by the horizon.", value=st.evicted)
            yield GaugeMetricFamily("thors_pending_decisions", "Decisions waiting for their label.", value=st.pending)
            thr = GaugeMetricFamily("thors_threshold", "The threshold now, per segment (\"\" is over all events).",
                                    labels=["segment"])
            thr.add_metric([""], loop.threshold)
            segs = loop.segments
            if segs is not None:
                for g in segs.segments():
                    thr.add_metric([str(g)], loop.threshold_of(g))
            yield thr
            r = loop.thors.result()
            rate = GaugeMetricFamily("thors_positive_rate", "Share of positives among the events the threshold "
                                     "is learned on (count).", value=(r.count1 / (r.count1 + r.count0)) if r else 0.0)
            yield rate
            yield GaugeMetricFamily("thors_held_events", "Labelled events the threshold is learned on.",
                                    value=len(loop.thors))
            errors = CounterMetricFamily("thors_errors", "Requests refused or failed, by kind.", labels=["kind"])
            for kind, n in state["errors"].items():
                errors.add_metric([kind], n)
            yield errors

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return registry


def read_token(token_file: str | os.PathLike[str] | None = None, token_env: str | None = None) -> str | None:
    """The bearer token from a file (its first line) or an environment variable, or ``None``.
    ``ValueError`` for an empty or short token (fewer than 16 characters) or a missing variable."""
    if token_file is not None and token_env is not None:
        raise ValueError("give the token in a file or in an environment variable, not both")
    if token_file is not None:
        with open(token_file, encoding="utf-8") as f:
            token = f.readline().strip()
        where = f"token file {os.fspath(token_file)!r}"
    elif token_env is not None:
        if token_env not in os.environ:
            raise ValueError(f"environment variable {token_env!r} (the token) is not set")
        token = os.environ[token_env].strip()
        where = f"environment variable {token_env!r}"
    else:
        return None
    if len(token) < 16:
        raise ValueError(f"{where} holds a token of {len(token)} characters; use at least 16")
    return token


def serve(store_path: str | os.PathLike[str], *, fn_cost: float, fp_cost: float, window: int | str | None = 10_000,
          segment_field: str | None = None, decide_on: str = "score", host: str = "127.0.0.1", port: int = 8000,
          token_file: str | os.PathLike[str] | None = None, token_env: str | None = None,
          max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_events: int = DEFAULT_MAX_EVENTS,
          access_log: bool = False, **loop_kwargs: Any) -> None:
    """Run the threshold service with uvicorn until SIGTERM or Ctrl-C (then it commits and
    checkpoints, and returns). ``host`` defaults to the loopback address: pass ``"0.0.0.0"``
    to listen on every interface, and then set a token. ``loop_kwargs`` go to
    :class:`~thors_stream.store.DecisionLoop` (``warm_up``, ``max_pending_age``,
    ``default_threshold``, ``min_per_class``, ``commit_every``...). The store is opened before
    the port is bound: a store in use, corrupt, or written with other settings fails here.
    """
    _require()
    import uvicorn

    settings = ServiceSettings(store_path, fn_cost=fn_cost, fp_cost=fp_cost, window=window, decide_on=decide_on,
                               segment_field=segment_field, token=read_token(token_file, token_env),
                               max_body_bytes=max_body_bytes, max_events=max_events, **loop_kwargs)
    settings.open_loop().close()  # fail early, before the port is bound, on a bad store or settings
    uvicorn.run(create_app(settings), host=host, port=port, access_log=access_log, log_level="info",
                lifespan="on")
