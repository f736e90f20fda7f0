"""``TrialProxy``: one trial's local endpoint for an agent we did not write (see the package's
docstring for what it serves, what it does not forward and what it adds: ``hints``,
``before_call``)."""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import socket
import time
from typing import Any, Awaitable, Callable, Literal

from aiohttp import web

from agentrig.channel.usage import cost_of
from agentrig.errors import AgentStop, ChannelError, RetriesExhausted
from agentrig.trial.context import TrialContext
from agentrig.types import AssistantMessage, Completion, Strict, Transient

from ..transients import last_user_index, with_transients
from . import anthropic_out, openai_out
from .inbound import READERS, BadBody, Inbound, estimate_tokens

Wire = Literal["chat", "responses", "anthropic"]
SHUTDOWN_S = 1.0  # how long close() lets a request in flight finish
# the status an agent gets when the channel could not get an answer: a gateway's
UPSTREAM_DOWN, UPSTREAM_FATAL = 503, 502
LIMIT = {"chat": 429, "responses": 429, "anthropic": 400}  # a server's answer at a spending limit
# asked before each call: (calls sent before it, the request's messages as translated) -> that call's hints
BeforeCall = Callable[[int, list[dict]], Awaitable[list[Transient]]]


class ProxyReply(Strict):
    """One call the proxy answered: which ``ModelCall`` of the trial it was (``call``, an index in
    ``ctx.trajectory.model_calls``), the wire and whether it streamed, the message the channel
    returned and the ids of the tool calls the agent got (they are the message's own ids)."""

    call: int
    wire: Wire
    stream: bool = False
    message: AssistantMessage
    tool_call_ids: list[str] = []


def _kept_key(tool_call_ids: list[str], text: str) -> tuple:
    """How an assistant message the agent sends back is recognised: by its tool-call ids, or by its text."""
    return ("calls", *tool_call_ids) if tool_call_ids else ("text", text)


class TrialProxy:
    """One trial's endpoint: ``await start()`` → base URL; ``token``; ``await close()``.

    After the trial's agent ends, ``failure`` holds the channel fault that ended it (the trial is
    invalid) or ``stop`` the limit it reached (``AgentStop``: valid); ``ended`` is set at either.
    ``replies`` lists the answered calls in order. ``hints``: the plug-ins' transient context of
    the current agent step, set by the agent's host; added to every request sent while set.
    ``before_call``: asked before each call for that call's own hints (added after ``hints``)."""

    def __init__(self, ctx: TrialContext, *, role: str = "agent", step_limit: int | None = None,
                 token_limit: int | None = None, cost_limit: float | None = None, deadline: float | None = None,
                 before_call: BeforeCall | None = None):
        self.ctx, self.role = ctx, role
        self.step_limit, self.token_limit, self.cost_limit, self.deadline = step_limit, token_limit, cost_limit, deadline
        self.token = "agentrig-" + secrets.token_urlsafe(32)
        self._token_bytes = self.token.encode()
        self.base_url = ""
        self.failure: BaseException | None = None
        self.stop: AgentStop | None = None
        self.ended = asyncio.Event()
        self.replies: list[ProxyReply] = []
        self.hints: list[Transient] = []  # the current agent step's plug-in context (the package docstring)
        self.before_call = before_call
        self.left_out: set[str] = set()  # tool types the agent offered that were not forwarded
        self.steps = 0  # calls sent (answered or not)
        self.tokens = 0  # prompt + completion tokens of the answered calls
        self.cost, self.cost_known = 0.0, True
        self._kept: dict[tuple, dict] = {}  # the provider fields (reasoning) of each reply, to send them back
        self._runner: web.AppRunner | None = None
        self._ids = iter(range(1, 1 << 62))
        self._tag = secrets.token_hex(4)

    # ------------------------------------------------------------------ lifecycle
    @property
    def model(self) -> str:
        return self.ctx.channel.role(self.role).model or "" if self.ctx.channel is not None else ""

    async def start(self, sock: socket.socket | None = None) -> str:
        """Serve on ``sock`` (an already bound socket, e.g. made inside a sandbox's network namespace)
        or on 127.0.0.1 at a free port. Returns the base URL (no ``/v1``: the routes answer with and
        without it, so OpenAI clients take it with or without ``/v1`` and Anthropic's as it is)."""
        if self._runner is not None:
            return self.base_url
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("", "/v1"):
            app.router.add_post(prefix + "/chat/completions", self._chat)
            app.router.add_post(prefix + "/responses", self._responses)
            app.router.add_post(prefix + "/messages", self._messages)
            app.router.add_post(prefix + "/messages/count_tokens", self._count_tokens)
            app.router.add_get(prefix + "/models", self._models)
            app.router.add_get(prefix + "/models/{model_id:.+}", self._models)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_S, handle_signals=False)
        await runner.setup()
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
        site = web.SockSite(runner, sock)
        await site.start()
        self._runner = runner
        if sock.family == socket.AF_INET6:
            host, port = sock.getsockname()[:2]
            self.base_url = f"http://[{host}]:{port}"
        elif sock.family == socket.AF_INET:
            host, port = sock.getsockname()[:2]
            self.base_url = f"http://{host}:{port}"
        else:
            self.base_url = site.name
        return self.base_url

    async def close(self) -> None:
        """Stop serving: the listening socket is closed, so nothing answers any more."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> "TrialProxy":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ answers
    def _error(self, wire: Wire, status: int, message: str, kind: str = "invalid_request_error",
               code: str | None = None) -> web.Response:
        if wire == "anthropic":
            body = anthropic_out.error_body(status, message)
        else:
            body = openai_out.error_body(status, message, kind, code)
        return web.Response(status=status, body=body, content_type="application/json")

    def _authorized(self, request: web.Request) -> bool:
        """The trial's token in ``x-api-key`` (Anthropic's clients) or ``Authorization: Bearer``."""
        header = request.headers.get("Authorization", "")
        for sent in (request.headers.get("x-api-key"), header[7:].strip() if header[:7].lower() == "bearer " else None):
            if sent is not None and hmac.compare_digest(sent.encode(errors="surrogateescape"), self._token_bytes):
                return True
        return False

    def _refused(self, wire: Wire) -> web.Response:
        if wire == "anthropic":
            return self._error(wire, 401, "invalid x-api-key")
        return self._error(wire, 401, "Incorrect API key provided: this trial's endpoint does not know it.",
                           code="invalid_api_key")

    def _ending(self, wire: Wire) -> web.Response:
        """The answer to every request once the trial's agent is to stop."""
        if self.failure is None and self.stop is not None:
            message = f"agentrig: this trial's limit is reached: {self.stop.detail}. You exceeded your current quota."
            if wire == "anthropic":
                message = f"agentrig: this trial's limit is reached: {self.stop.detail}. You have reached your specified API usage limits."
            return self._error(wire, LIMIT[wire], message, "insufficient_quota", "insufficient_quota")
        exc = self.failure
        code = getattr(getattr(exc, "diagnosis", None), "code", None) or type(exc).__name__
        status = UPSTREAM_DOWN if isinstance(exc, RetriesExhausted) else UPSTREAM_FATAL
        # the diagnosis's own text stays in the trial's record: it may name the endpoint
        return self._error(wire, status, f"agentrig: the model endpoint failed ({code}); this trial is stopped and "
                           "will be played again", "server_error", code)

    def _end(self, *, stop: AgentStop | None = None, failure: BaseException | None = None) -> None:
        """The first failure is kept even after a stop (a call in flight when a limit was reached
        may still fail: the trial is then invalid); a stop only while nothing failed."""
        if failure is not None and self.failure is None:
            self.failure = failure
        if stop is not None and self.stop is None and self.failure is None:
            self.stop = stop
        self.ended.set()

    def _over_limit(self) -> AgentStop | None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return AgentStop("agent_timeout", "the agent's time limit ran out")
        if self.step_limit is not None and self.steps >= self.step_limit:
            return AgentStop("limits_exceeded", f"step limit: {self.steps} model calls (step_limit={self.step_limit})")
        if self.cost_limit is not None and self.cost_known and self.cost >= self.cost_limit:
            return AgentStop("limits_exceeded", f"cost limit: {self.cost:.4f} USD spent (cost_limit={self.cost_limit:g})")
        if self.token_limit is not None and self.tokens >= self.token_limit:
            return AgentStop("limits_exceeded", f"token limit: {self.tokens} tokens used (token_limit={self.token_limit})")
        return None

    # ------------------------------------------------------------------ routes
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._call(request, "chat")

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        return await self._call(request, "responses")

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        return await self._call(request, "anthropic")

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return self._refused("anthropic")
        try:
            body = json.loads(await request.read())
        except ValueError:
            return self._error("anthropic", 400, "the request body is not JSON")
        except ConnectionResetError:  # the agent went away mid-request (ended, killed): no one to answer
            return self._error("anthropic", 400, "the request was cut off")
        return web.json_response({"input_tokens": estimate_tokens(body)})

    async def _models(self, request: web.Request) -> web.StreamResponse:
        anthropic = "anthropic-version" in request.headers
        if not self._authorized(request):
            return self._refused("anthropic" if anthropic else "chat")
        model, one = self.model, request.match_info.get("model_id")
        if anthropic:
            body = anthropic_out.model_body(one or model) if one else anthropic_out.models_body(model)
        else:
            info = {"id": one or model, "object": "model", "created": 0, "owned_by": "agentrig"}
            body = openai_out.dumps(info if one else {"object": "list", "data": [info]}).encode()
        return web.Response(body=body, content_type="application/json")

    # ------------------------------------------------------------------ a model call
    async def _call(self, request: web.Request, wire: Wire) -> web.StreamResponse:
        if not self._authorized(request):
            return self._refused(wire)
        if self.ended.is_set():
            return self._ending(wire)
        try:
            inbound = READERS[wire](json.loads(await request.read()))
        except ValueError as exc:  # not JSON, or a body the wire cannot mean (BadBody)
            text = str(exc) if isinstance(exc, BadBody) else "the request body is not JSON"
            return self._error(wire, 400, text)
        except ConnectionResetError:  # the agent went away mid-request (ended, killed): no one to answer,
            return self._error(wire, 400, "the request was cut off")  # nothing sent, nothing recorded
        if inbound.left_out:
            self._note_left_out(wire, inbound.left_out)
        over = self._over_limit()
        if over is not None:
            self._end(stop=over)
            return self._ending(wire)
        self.steps += 1
        kwargs: dict[str, Any] = {}
        if inbound.tool_choice is not None:
            kwargs["tool_choice"] = inbound.tool_choice
        if inbound.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = inbound.parallel_tool_calls
        messages = self._with_kept(inbound.messages)
        hints = list(self.hints or ())
        if self.before_call is not None:
            try:
                hints += await self.before_call(self.steps - 1, inbound.messages)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a plug-in's FatalChannelError (the run stops), or a bug
                self._end(failure=exc)
                self.ctx.event("proxy", "before_call_failed", error=type(exc).__name__)
                return self._ending(wire)
        sent = with_transients(messages, last_user_index(messages), hints)
        try:
            done, call = await self.ctx.complete(self.role, sent, inbound.tools, purpose="agent", **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a ChannelError (or a broken channel): the trial is invalid
            self._end(failure=exc)
            if not isinstance(exc, ChannelError):
                self.ctx.event("proxy", "call_failed", error=type(exc).__name__)
            return self._ending(wire)
        self._account(done)
        if sent is not messages:
            shown = [t for t in hints if t.text]
            self.ctx.event("proxy", "hints", call=call, sources=[t.source for t in shown],
                           placements=[t.placement for t in shown])
        return await self._answer(request, wire, inbound, done, call)

    def _note_left_out(self, wire: Wire, kinds: list[str]) -> None:
        new = sorted(set(kinds) - self.left_out)
        if new:
            self.left_out.update(new)
            self.ctx.event("proxy", "tools_left_out", wire=wire, tools=new,
                           reason="built-in tools of the agent's API that the role's endpoint cannot run")

    def _account(self, done: Completion) -> None:
        self.tokens += done.usage.prompt_tokens + done.usage.completion_tokens
        cost = cost_of(done, self.ctx.channel.config.prices)
        if cost is not None:
            self.cost += cost
        elif self.cost_known:
            self.cost_known = False
            if self.cost_limit:
                self.ctx.event("proxy", "cost_limit_off", model=done.model,
                               reason="no price for this model (or no usage reported): the cost limit does not apply"
                                      + ("; token_limit still does" if self.token_limit else ""))

    def _with_kept(self, messages: list[dict]) -> list[dict]:
        """The agent's messages with each of our replies' provider fields put back (thinking blocks
        with their signatures, reasoning items), as a built-in agent sends them."""
        if not self._kept:
            return messages
        out = []
        for m in messages:
            if m.get("role") == "assistant":
                ids = [str(c.get("id") or "") for c in m.get("tool_calls") or () if isinstance(c, dict)]
                content = m.get("content")
                kept = self._kept.get(_kept_key(ids, content if isinstance(content, str) else ""))
                if kept is not None:
                    m = {**m, **kept}
            out.append(m)
        return out

    def _keep(self, message: AssistantMessage) -> None:
        fields = dict(message.extra)
        if message.reasoning and "reasoning_content" not in fields and "reasoning" not in fields:
            fields["reasoning_content"] = message.reasoning
        if fields:
            self._kept[_kept_key([c.id for c in message.tool_calls], message.content or "")] = fields

    async def _answer(self, request: web.Request, wire: Wire, inbound: Inbound, done: Completion,
                      call: int) -> web.StreamResponse:
        message, model, n = done.message, self.model, next(self._ids)
        if message.extra or message.reasoning:
            self._keep(message)
        self.replies.append(ProxyReply(call=call, wire=wire, stream=inbound.stream, message=message,
                                       tool_call_ids=[c.id for c in message.tool_calls]))
        rid = f"{self._tag}{n:06d}"
        if wire == "chat":
            rid = "chatcmpl-" + rid
            body = (openai_out.chat_events(done, model, rid, inbound.include_usage) if inbound.stream
                    else openai_out.chat_json(done, model, rid))
        elif wire == "responses":
            rid = "resp_" + rid
            names = (inbound.custom_tools, inbound.namespaced)
            body = (openai_out.responses_events(done, model, rid, *names) if inbound.stream
                    else openai_out.responses_json(done, model, rid, *names))
        else:
            rid = "msg_" + rid
            body = anthropic_out.message_events(done, model, rid) if inbound.stream else anthropic_out.message_json(done, model, rid)
        headers = {"x-request-id": rid, "request-id": rid}
        if not inbound.stream:
            return web.Response(body=body, content_type="application/json", headers=headers)
        # the whole stream is in hand: one write (headers and events together) rather than one per event
        return web.Response(body=b"".join(body), headers={**headers, "Content-Type": "text/event-stream; charset=utf-8",
                                                          "Cache-Control": "no-cache"})
