"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, the demo and benchmarks.

It serves ``GET {prefix}/models`` and ``POST {prefix}/chat/completions`` and can be told to
answer with the faults real endpoints produce (see ``Fault``), so that the channel and the doctor
are tested over real HTTP. ``python -m agentrig.testing.fake_endpoint`` runs it by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import os
import random
import signal
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from aiohttp import web

FAULT_KINDS = ("unauthorized", "forbidden", "rate_limit", "quota", "server_error", "request_timeout", "conflict",
               "delay", "malformed", "not_completion", "html", "context_overflow", "bad_request", "unprocessable",
               "disconnect")


@dataclass
class Fault:
    kind: str
    retry_after: float | None = None
    retry_after_ms: int | None = None
    status: int | None = None
    delay_s: float | None = None
    message: str | None = None
    on: str = "chat"  # "chat" | "models" | "any"

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    auth_ok: bool
    t_start: float
    t_end: float = 0.0


def _fault(f: Fault | str | dict) -> Fault:
    if isinstance(f, Fault):
        return f
    if isinstance(f, str):
        return Fault(f)
    return Fault(**f)


def _error(status: int, message: str, type_: str, code: str | None, headers: dict | None = None) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return web.Response(status=status, text=json.dumps(body), content_type="application/json", headers=headers)


def _mask(key: str) -> str:
    return key[:5] + "*" * 3 + key[-4:] if len(key) > 9 else "***"


def _dummy(schema: dict) -> Any:
    if not isinstance(schema, dict):
        return "x"
    if schema.get("enum"):
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t == "object" or "properties" in schema:
        return {k: _dummy(v) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    return {"integer": 1, "number": 1.0, "boolean": True, "array": []}.get(t, "x")


def _tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


class FakeEndpoint:
    def __init__(self, *, models=("fake-model", "fake-model-mini"), api_key: str | None = "sk-fake-test-0123456789abcdef",
                 prefix: str = "/v1", responder: Callable | None = None, delay_s: float = 0.0,
                 tool_support: str = "full", fault_rate: float = 0.0,
                 fault_kinds: tuple[str, ...] = ("rate_limit", "server_error", "malformed"), seed: int = 0,
                 record: bool = True, host: str = "127.0.0.1", port: int = 0):
        self.models = list(models)
        self.api_key = api_key
        self.prefix = prefix.rstrip("/")
        self.responder = responder
        self.delay_s = delay_s
        self.tool_support = tool_support
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.rng = random.Random(seed)
        self.record = record
        self.host, self.port = host, port
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = self.root_url = ""
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.faults: deque[Fault] = deque()
            self.replies: deque[dict] = deque()
            self.requests: list[RecordedRequest] = []
            self.in_flight = self.max_in_flight = self.chat_count = 0

    def push(self, *faults: Fault | str | dict) -> None:
        with self._lock:
            self.faults.extend(_fault(f) for f in faults)

    def push_reply(self, *replies: dict) -> None:
        with self._lock:
            self.replies.extend(replies)

    # ------------------------------------------------------------------ lifecycle
    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(self.prefix + "/models", self._models)
        app.router.add_post(self.prefix + "/chat/completions", self._chat)
        app.router.add_post("/_fake/faults", self._ctl_faults)
        app.router.add_post("/_fake/replies", self._ctl_replies)
        app.router.add_post("/_fake/reset", self._ctl_reset)
        app.router.add_get("/_fake/stats", self._ctl_stats)
        return app

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.root_url = f"http://{self.host}:{self.port}"
        self.base_url = self.root_url + self.prefix
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> "FakeEndpoint":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ handlers
    def _take_fault(self, route: str) -> Fault | None:
        with self._lock:
            if self.faults and self.faults[0].on in (route, "any"):
                return self.faults.popleft()
        if route == "chat" and self.fault_rate > 0 and self.rng.random() < self.fault_rate:
            return Fault(self.rng.choice(self.fault_kinds))
        return None

    def _auth(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        header = request.headers.get("Authorization", "")
        if not header:
            return _error(401, "You didn't provide an API key. You need to provide your API key in an Authorization header "
                          "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", None)
        sent = header.removeprefix("Bearer ").strip()
        if sent != self.api_key:
            return _error(401, f"Incorrect API key provided: {_mask(sent)}. You can find your API key at "
                          "https://example.invalid/api-keys.", "invalid_request_error", "invalid_api_key")
        return None

    async def _enter(self, request: web.Request, body: Any) -> RecordedRequest | None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if not self.record:
                return None
            rec = RecordedRequest(request.method, request.path,
                                  {k.lower(): v for k, v in request.headers.items() if k.lower() != "authorization"},
                                  body, True, time.monotonic())
            self.requests.append(rec)
            return rec

    def _leave(self, rec: RecordedRequest | None) -> None:
        with self._lock:
            self.in_flight -= 1
        if rec is not None:
            rec.t_end = time.monotonic()

    async def _models(self, request: web.Request) -> web.StreamResponse:
        rec = await self._enter(request, None)
        try:
            denied = self._auth(request)
            if rec is not None:
                rec.auth_ok = denied is None
            if denied is not None:
                return denied
            fault = self._take_fault("models")
            if fault is not None:
                return await self._apply(fault, request)
            data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "agentrig-fake"} for m in self.models]
            return web.json_response({"object": "list", "data": data})
        finally:
            self._leave(rec)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        rec = await self._enter(request, body)
        try:
            with self._lock:
                self.chat_count += 1
            denied = self._auth(request)
            if rec is not None:
                rec.auth_ok = denied is None
            if denied is not None:
                return denied
            if not isinstance(body, dict):
                return _error(400, "We could not parse the JSON body of your request.", "invalid_request_error", None)
            fault = self._take_fault("chat")
            if fault is not None and fault.kind != "delay":
                return await self._apply(fault, request)
            model = body.get("model")
            if model not in self.models:
                return _error(404, f"The model `{model}` does not exist or you do not have access to it.",
                              "invalid_request_error", "model_not_found")
            if body.get("tools") and self.tool_support == "reject":
                return _error(400, "tools is not supported by this model", "invalid_request_error", "unsupported_parameter")
            delay = self.delay_s + ((fault.delay_s if fault.delay_s is not None else 1.0) if fault else 0.0)
            if delay:
                await asyncio.sleep(delay)
            reply = await self._reply(body)
            return web.Response(text=json.dumps(self._completion(body, reply)), content_type="application/json")
        finally:
            self._leave(rec)

    async def _reply(self, body: dict) -> dict:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            out = self.responder(body)
            return await out if inspect.isawaitable(out) else out
        tools = body.get("tools") or []
        choice = body.get("tool_choice")
        if tools and self.tool_support == "full" and (choice == "required" or isinstance(choice, dict)):
            name = choice["function"]["name"] if isinstance(choice, dict) else tools[0]["function"]["name"]
            spec = next((t["function"] for t in tools if t["function"]["name"] == name), tools[0]["function"])
            return {"content": None, "tool_calls": [{"name": name, "arguments": _dummy(spec.get("parameters", {}))}]}
        return {"content": "OK"}

    def _completion(self, body: dict, reply: dict) -> dict:
        n = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        calls = []
        for i, tc in enumerate(reply.get("tool_calls") or []):
            args = tc.get("arguments", {})
            calls.append({"id": tc.get("id") or f"call_{n}_{i}", "type": "function",
                          "function": {"name": tc["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
        if calls:
            message["tool_calls"] = calls
        if reply.get("reasoning_content") is not None:
            message["reasoning_content"] = reply["reasoning_content"]
        prompt = _tokens(body.get("messages", []))
        completion = _tokens(message)
        usage = reply.get("usage") or {
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": _tokens(reply["reasoning_content"]) if reply.get("reasoning_content") else 0},
        }
        return {"id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": reply.get("finish_reason") or ("tool_calls" if calls else "stop")}],
                "usage": usage}

    async def _apply(self, f: Fault, request: web.Request) -> web.StreamResponse:
        k = f.kind
        if k == "unauthorized":
            return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        if k == "forbidden":
            return _error(403, f.message or "You are not allowed to sample from this model.", "invalid_request_error", None)
        if k == "rate_limit":
            headers = {"retry-after-ms": str(f.retry_after_ms)} if f.retry_after_ms is not None else \
                {"Retry-After": f"{f.retry_after if f.retry_after is not None else 1:g}"}
            return _error(429, f.message or "Rate limit reached for requests. Please try again in 1s.",
                          "rate_limit_exceeded", "rate_limit_exceeded", headers)
        if k == "quota":
            return _error(429, "You exceeded your current quota, please check your plan and billing details.",
                          "insufficient_quota", "insufficient_quota")
        if k == "server_error":
            return _error(f.status or 500, f.message or "The server had an error while processing your request.",
                          "server_error", None)
        if k == "request_timeout":
            return _error(408, "Request timed out.", "timeout", None)
        if k == "conflict":
            return _error(409, "Conflict, please retry.", "conflict", None)
        if k == "malformed":
            return web.Response(text='{"id": "chatcmpl-x", "choi', content_type="application/json")
        if k == "not_completion":
            return web.json_response({"status": "ok"})
        if k == "html":
            return web.Response(text="<!doctype html><html><body><h1>Welcome</h1></body></html>", content_type="text/html")
        if k == "context_overflow":
            return _error(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                          "9000 tokens. Please reduce the length of the messages.", "invalid_request_error",
                          "context_length_exceeded")
        if k == "bad_request":
            return _error(400, f.message or "Invalid value for 'temperature'", "invalid_request_error", None)
        if k == "unprocessable":
            return _error(422, f.message or "Unprocessable request", "invalid_request_error", None)
        if k == "disconnect":
            assert request.transport is not None
            request.transport.close()
            raise ConnectionResetError("fake endpoint dropped the connection")
        raise AssertionError(k)

    # ------------------------------------------------------------------ control routes
    async def _ctl_faults(self, request: web.Request) -> web.Response:
        self.push(*(await request.json()))
        return web.json_response({"queued": len(self.faults)})

    async def _ctl_replies(self, request: web.Request) -> web.Response:
        self.push_reply(*(await request.json()))
        return web.json_response({"queued": len(self.replies)})

    async def _ctl_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def _ctl_stats(self, request: web.Request) -> web.Response:
        return web.json_response({"chat_count": self.chat_count, "max_in_flight": self.max_in_flight,
                                  "requests": len(self.requests)})


class ThreadedFakeEndpoint:
    """A FakeEndpoint on its own event loop in a daemon thread, for sync and subprocess tests."""

    def __init__(self, **kwargs: Any):
        self.endpoint = FakeEndpoint(**kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.base_url = asyncio.run_coroutine_threadsafe(self.endpoint.start(), self._loop).result(10)
        self.root_url = self.endpoint.root_url

    def stop(self) -> None:
        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self.endpoint.stop(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> "ThreadedFakeEndpoint":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m agentrig.testing.fake_endpoint",
                                 description="A local OpenAI-compatible server for tests and benchmarks.")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--models", default="fake-model,fake-model-mini")
    auth = ap.add_mutually_exclusive_group()
    auth.add_argument("--api-key-env", help="accept only the key in this environment variable")
    auth.add_argument("--no-auth", action="store_true", help="accept any key")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    ep = FakeEndpoint(models=tuple(args.models.split(",")), api_key=key, delay_s=args.delay_ms / 1000,
                      fault_rate=args.fault_rate, seed=args.seed, record=False, port=args.port)

    async def serve() -> None:
        print(await ep.start(), flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await ep.stop()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
