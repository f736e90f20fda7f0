"""The generic OpenAI-style server personality of the fake endpoint and the helpers every server's
personality shares (testing/personalities.py has the servers): the prompt-token estimate, error
bodies, the model's own tool choice, and side routes."""

from __future__ import annotations

import json
from typing import Any, Callable

from ._fake_bodies import example_arguments

JSON = dict[str, Any]
_CREATED = 1_700_000_000


def estimate_prompt_tokens(body: JSON, with_tools: bool = True) -> int:
    """About 4 characters a token over the rendered prompt, plus a few tokens of framing per message."""
    chars, n = 0, 0
    for m in body.get("messages") or ():
        if not isinstance(m, dict):
            continue
        n += 1
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
        for tc in m.get("tool_calls") or ():
            fn = (tc or {}).get("function") or {}
            chars += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    if with_tools and body.get("tools"):
        chars += len(json.dumps(body["tools"], separators=(",", ":")))
    return chars // 4 + 4 * n


def _error(message: str, type_: str, code: Any, param: str | None = None, **extra: Any) -> JSON:
    return {"error": {"message": message, "type": type_, "param": param, "code": code, **extra}}


class Personality:
    """The generic OpenAI-style server; subclasses override what their server does differently.

    ``window``: the context window in tokens (None = unlimited)."""

    name = "openai-style"
    owned_by = "agentrig-fake"
    headers: dict[str, str] = {}

    def __init__(self, window: int | None = None):
        self.window = window if window is not None else self.default_window()

    def default_window(self) -> int | None:
        return None

    # --- what the server exposes
    def models_body(self, models: tuple[str, ...]) -> JSON:
        return {"object": "list", "data": [{"id": m, "object": "model", "created": _CREATED,
                                            "owned_by": self.owned_by} for m in models]}

    def routes(self) -> list[tuple[str, str, Callable[[Any, JSON | None], tuple[int, Any]]]]:
        """Extra root-relative routes: (method, path, handler(endpoint, json body) → (status, body))."""
        return []

    def response_headers(self, path: str) -> dict[str, str]:
        return dict(self.headers)

    # --- how it answers a chat request
    def tools_visible(self, body: JSON) -> bool:
        """Whether the model sees the tools at all."""
        return bool(body.get("tools")) and body.get("tool_choice") != "none"

    def may_call(self, body: JSON) -> bool:
        """Whether the model calls a tool on its own when it may (``"auto"`` honoured)."""
        return self.tools_visible(body)

    def prompt_tokens(self, body: JSON) -> int:
        return estimate_prompt_tokens(body, self.tools_visible(body))

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        """(status, error body) when the server refuses the request before the model runs."""
        return None

    def reply(self, body: JSON) -> JSON:
        """The model's own answer (no script, no responder)."""
        tools = body.get("tools") or []
        choice = body.get("tool_choice")
        if self.tools_visible(body):
            forced = _named(choice)
            if forced is not None:
                fn = next((t.get("function") for t in tools if (t.get("function") or {}).get("name") == forced), None)
                if fn is not None:
                    return _call(fn)
            elif choice == "required" or (self.may_call(body) and _last_role(body) == "user"):
                return _call(_pick_tool(tools, body))
        return {"content": "OK"}

    def shape(self, body: JSON, reply: JSON) -> JSON:
        """The server's rules applied to any reply (scripted, responder or own): drop tool calls the
        model could not have made; report the prompt tokens the server counted."""
        reply = dict(reply)
        if reply.get("tool_calls") and not self.tools_visible(body):
            reply.pop("tool_calls")
            if not reply.get("content"):
                reply["content"] = "OK"
        usage = dict(reply.get("usage") or {})
        usage.setdefault("prompt_tokens", self.prompt_tokens(body))
        reply["usage"] = usage
        return reply


def _named(choice: Any) -> str | None:
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    return None


def _last_role(body: JSON) -> str | None:
    msgs = [m for m in body.get("messages") or () if isinstance(m, dict)]
    return msgs[-1].get("role") if msgs else None


def _pick_tool(tools: list, body: JSON) -> JSON:
    last = next((m for m in reversed(body.get("messages") or []) if isinstance(m, dict) and m.get("role") == "user"), {})
    text = last.get("content") if isinstance(last.get("content"), str) else ""
    fns = [t.get("function") or {} for t in tools if isinstance(t, dict)]
    return next((fn for fn in fns if fn.get("name") and fn["name"] in text), fns[0] if fns else {})


def _call(fn: JSON, call_id: str | None = None) -> JSON:
    call = {"name": fn.get("name"), "arguments": example_arguments(fn.get("parameters"))}
    if call_id:
        call["id"] = call_id
    return {"content": None, "tool_calls": [call]}


def side_route(ep: Any, handler: Callable[[Any, JSON | None], tuple[int, Any]]) -> Callable:
    """An aiohttp handler for a personality's side route (``/props``, ``/api/version``…) on ``ep``."""
    from aiohttp import web

    async def route(request: web.Request) -> web.StreamResponse:
        t0 = ep._enter()
        body = None
        try:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return web.json_response({"error": "invalid JSON body"}, status=400)
            status, out = handler(ep, body)
            if isinstance(out, str):
                return web.Response(status=status, text=out, content_type="text/plain")
            return web.json_response(out, status=status)
        finally:
            ep.in_flight -= 1
            if ep.record:
                ep._record(request, body, True, t0)
    return route
