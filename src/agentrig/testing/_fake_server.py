"""The fake endpoint's server: routes, auth, fault injection, scripted replies, records.

Public names are re-exported by ``agentrig.testing.fake_endpoint``; import them from there.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import random
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable

from aiohttp import web

from ._fake_bodies import (
    JSON_CT, TOOLS_REJECTED, Fault, ReplyError, build_completion, default_reply, fault_response,
    invalid_request_body, model_not_found_body, stream_events, unauthorized_body,
)
from ._fake_wires import add_wire_routes
from .personalities import Personality, make_personality, side_route

# The headers of the chat request being answered, for a responder that reads them (the gold and
# solution endpoints find the task in X-Agentrig-Task): set by the chat handler, read in the
# responder's call, which runs in the handler's own task.
HANG_S = 3600.0  # how long a "hang" fault holds its request (the client gives up first)
REQUEST_HEADERS: contextvars.ContextVar[Any] = contextvars.ContextVar("fake_request_headers", default=None)

__all__ = ["DEFAULT_KEY", "TOOL_SUPPORT", "FakeEndpoint", "RecordedRequest"]

DEFAULT_KEY = "sk-fake-test-0123456789abcdef"
_CREATED = 1_700_000_000
TOOL_SUPPORT = ("full", "ignore", "reject")
_DISCONNECTED = object()  # the handler dropped the connection
_UNPARSEABLE = object()  # the body was not JSON
# what a request was answered with, kept on the request for its record (aiohttp ≥ 3.12 types the keys)
_KEY = getattr(web, "RequestKey", None)
USAGE_KEY: Any = _KEY("fake_usage", object) if _KEY else "fake_usage"
FAULT_KEY: Any = _KEY("fake_fault", object) if _KEY else "fake_fault"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names, Authorization and x-api-key removed
    json: Any  # the parsed body, or None
    auth_ok: bool
    t_start: float  # time.perf_counter()
    t_end: float
    status: int | None = None  # the HTTP status answered; None: the connection was dropped (a disconnect fault)
    usage: dict | None = None  # the usage of the completion answered (Chat Completions' fields), else None
    fault: str | None = None  # the kind of fault injected into this request (pushed, at random, or the responder's)


def log_line(r: RecordedRequest) -> str:
    """One request of the ``log`` file (``--log``): the record without its body, and of its headers
    only agentrig's ``X-Agentrig-*`` (which name the trial), as one JSON line."""
    line = {k: v for k, v in asdict(r).items() if k not in ("json", "headers")}
    line["headers"] = {k: v for k, v in r.headers.items() if k.startswith("x-agentrig-")}
    return json.dumps(line)


class FakeEndpoint:
    """One fake OpenAI-style server; see ``agentrig.testing.fake_endpoint``."""

    def __init__(self, *, models=("fake-model", "fake-model-mini"), api_key: str | None = DEFAULT_KEY,
                 prefix: str = "/v1", responder: Callable[[dict], Any] | None = None, delay_s: float = 0.0,
                 tool_support: str = "full", fault_rate: float = 0.0,
                 fault_kinds: tuple[str, ...] = ("rate_limit", "server_error", "malformed"), seed: int = 0,
                 record: bool = True, host: str = "127.0.0.1", port: int = 0,
                 personality: "str | Personality | None" = None, wires: tuple[str, ...] = ("responses", "anthropic"),
                 log: str | None = None):
        self.personality = make_personality(personality)  # a server's own behaviour (testing/personalities.py)
        self.wires = tuple(wires)  # the other wires it serves besides chat completions (_fake_wires.py)
        if tool_support not in TOOL_SUPPORT:
            raise ValueError(f"tool_support={tool_support!r}; expected one of {TOOL_SUPPORT}")
        for kind in fault_kinds:
            Fault(kind)  # validates the kind
        self.models = tuple(models)
        self._model_set = frozenset(self.models)
        self.api_key = api_key
        self._auth_header = f"Bearer {api_key}" if api_key else None
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.responder = responder
        self.delay_s = delay_s
        self.tool_support = tool_support
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.seed = seed
        self.record = record
        # every request also appended to this file as it is answered (``log_line``), so the log
        # outlives the process (a test that kills the endpoint mid-run still reads what it served)
        self.log = open(log, "a", encoding="utf-8", buffering=1) if log else None
        self.host, self.port = host, port
        self.base_url = self.root_url = ""
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []  # exceptions raised by the responder
        self._lock = threading.Lock()  # guards the queues: push/reset may come from another thread
        self._faults: deque[Fault] = deque()
        self._replies: deque[dict] = deque()
        self._runner: web.AppRunner | None = None
        self._zero_counters()

    def _zero_counters(self) -> None:
        self.in_flight = getattr(self, "in_flight", 0)
        self.max_in_flight = self.in_flight
        self.chat_count = 0
        self._n_completion = 0
        self._n_call = 0
        self._rng = random.Random(self.seed)

    # ------------------------------------------------------------------ control

    def push(self, *faults: Fault | str) -> None:
        coerced = [Fault.coerce(f) for f in faults]
        with self._lock:
            self._faults.extend(coerced)

    def push_reply(self, *replies: dict) -> None:
        for r in replies:
            if not isinstance(r, dict):
                raise TypeError(f"a scripted reply is a dict, not {type(r).__name__}")
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._replies.clear()
            self.requests.clear()
            self.errors.clear()
            self._zero_counters()

    def stats(self) -> dict:
        return {"chat_count": self.chat_count, "max_in_flight": self.max_in_flight, "in_flight": self.in_flight,
                "requests": len(self.requests), "queued_faults": len(self._faults),
                "queued_replies": len(self._replies)}

    def _take_fault(self, route: str) -> Fault | None:
        if not self._faults:
            return None
        with self._lock:
            for i, f in enumerate(self._faults):
                if f.on == route or f.on == "any":
                    del self._faults[i]
                    return f
        return None

    def _take_reply(self) -> dict | None:
        if not self._replies:
            return None
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _next_call_id(self) -> str:
        self._n_call += 1
        return f"call_{self._n_call}"

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> str:
        if self._runner is not None:
            return self.base_url
        app = web.Application(client_max_size=64 * 1024 * 1024)
        p = self.prefix
        app.router.add_get(p + "/models", self._models)
        app.router.add_post(p + "/chat/completions", self._chat)
        app.router.add_post("/_fake/faults", self._ctl_faults)
        app.router.add_post("/_fake/replies", self._ctl_replies)
        app.router.add_post("/_fake/reset", self._ctl_reset)
        app.router.add_get("/_fake/stats", self._ctl_stats)
        app.router.add_get("/_fake/requests", self._ctl_requests)
        self._known_paths = {p + "/models": "GET", p + "/chat/completions": "POST"}
        self._known_paths.update(add_wire_routes(app, self, REQUEST_HEADERS))  # /responses, /messages (_fake_wires.py)
        if self.personality is not None:
            for method, path, handler in self.personality.routes():
                app.router.add_route(method, path, side_route(self, handler))
                self._known_paths[path] = method
            app.on_response_prepare.append(self._personality_headers)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=2048, reuse_address=True)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]
        self.root_url = f"http://{self.host}:{self.port}"
        self.base_url = self.root_url + self.prefix
        return self.base_url

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self.log is not None:
            self.log.close()
            self.log = None

    async def __aenter__(self) -> "FakeEndpoint":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # ------------------------------------------------------------------ helpers

    def _sent_key(self, request: web.Request) -> tuple[str | None, bool]:
        """(the key the client sent, whether it is accepted)."""
        header = request.headers.get("Authorization")
        if header is None and request.headers.get("x-api-key"):  # the Anthropic SDK's header
            header = "Bearer " + request.headers["x-api-key"]
        if self._auth_header is None:
            return (header[7:] if header and header[:7].lower() == "bearer " else None), True
        if header == self._auth_header:
            return self.api_key, True
        if header and header[:7].lower() == "bearer " and header[7:].strip():
            return header[7:].strip(), False
        return None, False

    @property
    def recording(self) -> bool:
        return self.record or self.log is not None

    def _record(self, request: web.Request, body: Any, auth_ok: bool, t0: float, status: int | None = None) -> None:
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in ("authorization", "x-api-key")}
        usage = request.get(USAGE_KEY) if status == 200 else None
        rec = RecordedRequest(request.method, request.path, headers, body, auth_ok, t0, time.perf_counter(),
                              status, usage, request.get(FAULT_KEY))
        if self.record:
            self.requests.append(rec)
        if self.log is not None:
            self.log.write(log_line(rec) + "\n")

    def _enter(self) -> float:
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight
        return time.perf_counter()

    @staticmethod
    def _json(status: int, body: bytes, headers: dict | None = None) -> web.Response:
        return web.Response(status=status, body=body, content_type=JSON_CT, headers=headers)

    async def _apply_fault(self, request: web.Request, fault: Fault, model: str, sent_key: str | None):
        """A response for the fault, or None when the request should then be answered normally."""
        request[FAULT_KEY] = fault.kind
        if fault.kind == "delay":
            await asyncio.sleep(1.0 if fault.delay_s is None else fault.delay_s)
            return None
        if fault.kind == "hang":  # a request the server never answers (an hour, or delay_s)
            await asyncio.sleep(HANG_S if fault.delay_s is None else fault.delay_s)
            return None
        if fault.kind == "disconnect":
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            request.protocol.force_close()
            if request.transport is not None:
                request.transport.abort()
            return _DISCONNECTED
        status, headers, body, ctype = fault_response(fault, model, sent_key)
        return web.Response(status=status, body=body, content_type=ctype, headers=headers)

    # ------------------------------------------------------------------ routes

    async def _models(self, request: web.Request) -> web.StreamResponse:
        t0 = self._enter()
        auth_ok, status = False, None
        try:
            sent, auth_ok = self._sent_key(request)
            if not auth_ok:
                status = 401
                return self._json(401, unauthorized_body(sent))
            fault = self._take_fault("models")
            if fault is not None:
                resp = await self._apply_fault(request, fault, "", sent)
                if resp is _DISCONNECTED:
                    return web.Response()
                if resp is not None:
                    status = resp.status
                    return resp
            status = 200
            return self._json(200, self._models_body())
        finally:
            self.in_flight -= 1
            if self.recording:
                self._record(request, None, auth_ok, t0, status)

    def _models_body(self) -> bytes:
        body = getattr(self, "_models_cache", None)
        if body is None and self.personality is not None:
            body = self._models_cache = json.dumps(self.personality.models_body(self.models)).encode()
        if body is None:
            data = [{"id": m, "object": "model", "created": _CREATED, "owned_by": "agentrig-fake"} for m in self.models]
            body = self._models_cache = json.dumps({"object": "list", "data": data}).encode()
        return body

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.chat_count += 1
        t0 = self._enter()
        body, auth_ok, status = None, False, None
        try:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = _UNPARSEABLE
            sent, auth_ok = self._sent_key(request)
            REQUEST_HEADERS.set(request.headers)
            resp = await self._chat_inner(request, body, sent, auth_ok)
            if resp is _DISCONNECTED:
                return web.Response()
            status = resp.status
            return resp
        finally:
            self.in_flight -= 1
            if self.recording:
                self._record(request, None if body is _UNPARSEABLE else body, auth_ok, t0, status)

    async def _chat_inner(self, request, body, sent, auth_ok) -> web.StreamResponse | object:
        if not auth_ok:
            return self._json(401, unauthorized_body(sent))
        model = body.get("model") if isinstance(body, dict) else None
        model = model if isinstance(model, str) else "unknown"
        fault = self._take_fault("chat")
        if fault is None and self.fault_rate > 0 and self._rng.random() < self.fault_rate:
            fault = Fault(self._rng.choice(self.fault_kinds))
        if fault is not None:
            resp = await self._apply_fault(request, fault, model, sent)
            if resp is not None:
                return resp
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if body is _UNPARSEABLE or not isinstance(body, dict):
            return self._json(400, invalid_request_body(
                "We could not parse the JSON body of your request. Send a JSON object as the body."))
        if "model" not in body:
            return self._json(400, invalid_request_body("you must provide a model parameter", None, "model"))
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return self._json(400, invalid_request_body(
                "Missing required parameter: 'messages'.", "missing_required_parameter", "messages"))
        if model not in self._model_set:
            return self._json(404, model_not_found_body(model))
        if self.personality is not None:
            refused = self.personality.refuse(body, model)
            if refused is not None:
                return self._json(refused[0], json.dumps(refused[1]).encode())
        if self.tool_support == "reject" and body.get("tools"):
            return self._json(400, TOOLS_REJECTED)
        reply = self._take_reply()
        if reply is None and self.responder is not None:
            try:
                reply = self.responder(body)
                if inspect.isawaitable(reply):
                    reply = await reply
            except Exception as exc:  # a broken responder is a 500 the test can see in .errors
                self.errors.append(exc)
                return self._json(500, invalid_request_body(f"responder raised {type(exc).__name__}: {exc}"))
            if isinstance(reply, (Fault, str)):
                resp = await self._apply_fault(request, Fault.coerce(reply), model, sent)
                if resp is not None:
                    return resp
                reply = default_reply(body, self.tool_support)
        if reply is None and self.personality is not None:
            reply = self.personality.reply(body)
        if reply is None:
            reply = default_reply(body, self.tool_support)
            if isinstance(reply, str):
                return self._json(400, invalid_request_body(reply, None, "tool_choice"))
        if self.personality is not None and isinstance(reply, dict):
            reply = self.personality.shape(body, reply)
        self._n_completion += 1
        try:
            completion = build_completion(reply, model, body, f"chatcmpl-fake{self._n_completion}",
                                          int(time.time()), self._next_call_id)
        except (ReplyError, AttributeError, TypeError) as exc:
            self.errors.append(exc)
            return self._json(500, invalid_request_body(f"bad scripted reply: {exc}"))
        request[USAGE_KEY] = completion.get("usage")
        if body.get("stream"):
            return await self._stream(request, completion, bool((body.get("stream_options") or {}).get("include_usage")))
        return self._json(200, json.dumps(completion).encode())

    async def _stream(self, request: web.Request, completion: dict, include_usage: bool) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        for event in stream_events(completion, include_usage):
            await resp.write(event)
        await resp.write_eof()
        return resp

    async def _personality_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(self.personality.response_headers(request.path))

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        t0 = self._enter()
        try:
            allowed = self._known_paths.get(request.path)
            if allowed is not None:
                raise web.HTTPMethodNotAllowed(request.method, [allowed])
            raise web.HTTPNotFound()
        finally:
            self.in_flight -= 1
            if self.recording:
                self._record(request, None, self._sent_key(request)[1], t0, 405 if allowed is not None else 404)

    async def _ctl_faults(self, request: web.Request) -> web.Response:
        return await self._ctl_push(request, self.push)

    async def _ctl_replies(self, request: web.Request) -> web.Response:
        return await self._ctl_push(request, self.push_reply)

    async def _ctl_push(self, request: web.Request, push) -> web.Response:
        try:
            items = await request.json()
            if not isinstance(items, list):
                items = [items]
            push(*items)
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"queued": len(items)})

    async def _ctl_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def _ctl_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _ctl_requests(self, request: web.Request) -> web.Response:
        return web.json_response([asdict(r) for r in list(self.requests)])

