"""One trial's tools as an MCP server (the ``mcp`` SDK's low-level ``Server``), on streamable HTTP,
served by uvicorn on a task of the running event loop (no thread, no process).

- ``tools/list``: the tools given (name, description, input JSON schema), unchanged;
- ``initialize``: the ``instructions`` given (τ²: the domain's policy);
- ``tools/call``: handed to ``call(name, arguments, call_id, arguments_error)`` in the order the
  calls arrive — every name, an unknown one included (the benchmark answers and counts it); absent
  arguments are ``{}``; arguments that are not a JSON object reach ``call`` as ``None`` with the
  reason in ``arguments_error`` (the SDK would otherwise refuse the request before any tool saw
  it). Its ``ToolResult`` is the call's text content, ``isError`` when ``error``. Each call served
  is kept in ``calls``.

Every HTTP request must carry ``Authorization: Bearer <token>`` (the server's per-trial
``token``); any other gets 401 before the SDK sees it. With the token required, the SDK's
Host-header check (a defence against DNS rebinding) is off, so that an agent in a container can
reach the server by another host name.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hmac
import inspect
import logging
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentrig.errors import Signal
from agentrig.procs import finish_despite_cancel

__all__ = ["BRIDGE_SCRIPT", "BRIDGE_TOKEN_ENV", "BRIDGE_URL_ENV", "CallFn", "McpTool", "ServedCall", "ToolResult",
           "TrialToolServer"]

log = logging.getLogger(__name__)

BRIDGE_URL_ENV = "AGENTRIG_MCP_URL"
BRIDGE_TOKEN_ENV = "AGENTRIG_MCP_TOKEN"
BRIDGE_SCRIPT = Path(__file__).with_name("bridge.py")  # standard library only: any python3 runs it
_MCP_PATH = "/mcp"
CLOSE_BOUND_S = 5.0  # close(): the whole teardown, a cancellation of the caller included
_GRACE_S = 1.0  # open requests (an agent's idle SSE stream) get this long before they are cancelled


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict


@dataclass(frozen=True)
class ToolResult:
    text: str
    error: bool = False


@dataclass(frozen=True)
class ServedCall:
    call_id: str
    name: str
    arguments: dict | None
    arguments_error: str
    result: ToolResult


CallFn = Callable[[str, "dict | None", str, str], "ToolResult | Awaitable[ToolResult]"]

# set by the middleware for a tools/call whose arguments are not an object, read by the handler
_BAD_ARGUMENTS: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentrig_mcp_bad_arguments",
                                                                             default=None)


class _Unauthorized:
    """ASGI wrapper: an HTTP request without the bearer token gets 401 and goes no further."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"bearer {token}".encode()

    def _allowed(self, scope: dict) -> bool:
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                scheme, _, rest = value.partition(b" ")
                return hmac.compare_digest(scheme.lower() + b" " + rest.strip(), self.expected)
        return False

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = b'{"error": "unauthorized: this MCP server needs the trial\'s bearer token"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _uvicorn_server(app: Any) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn's server without its signal handlers (the run owns Ctrl-C) and with a started event."""

        def __init__(self, config: Any):
            super().__init__(config)
            self.ready = asyncio.Event()

        @contextlib.contextmanager
        def capture_signals(self):  # noqa: D401 - the run's own handlers stay in place
            yield

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            self.ready.set()

    config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False,
                            timeout_graceful_shutdown=_GRACE_S, ws="none")
    return _Server(config)


class TrialToolServer:
    """One trial's MCP server (see the module's docstring). ``start()`` then ``url``/``token`` (or
    ``stdio_command()``) for the agent; ``close()`` at the trial's end."""

    def __init__(self, tools: list[McpTool], call: CallFn, *, name: str = "agentrig", instructions: str = ""):
        self.tools = list(tools)
        self.call = call
        self.name = name
        self.instructions = instructions
        self.token = "agentrig-" + secrets.token_urlsafe(32)
        self.calls: list[ServedCall] = []
        # the first exception ``call`` raised: an agentrig fault, or a benchmark's stop (AppWorld's
        # AgentStop); the call got a JSON-RPC error, and the agent's runner ends the trial with it
        self.failure: BaseException | None = None
        self.url: str | None = None
        self._server: Any = None
        self._task: asyncio.Task | None = None
        self._sock: socket.socket | None = None
        self._mcp: Any = None

    # -- the MCP handlers -------------------------------------------------------------------------

    def _mcp_server(self) -> Any:
        import mcp_types as types
        from mcp.server import Server

        listed = types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in self.tools])

        async def list_tools(ctx: Any, params: Any) -> Any:
            return listed

        async def call_tool(ctx: Any, params: Any) -> Any:
            bad = _BAD_ARGUMENTS.get()
            arguments = None if bad is not None else (params.arguments if params.arguments is not None else {})
            result = await self._serve_call(params.name, arguments, bad or "")
            return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.error)

        async def non_object_arguments(ctx: Any, call_next: Any) -> Any:
            params = ctx.params
            if ctx.method == "tools/call" and isinstance(params, dict):
                arguments = params.get("arguments")
                if arguments is not None and not isinstance(arguments, dict):
                    token = _BAD_ARGUMENTS.set(f"a JSON {type(arguments).__name__.replace('str', 'string')}, "
                                               f"not an object: {str(arguments)[:200]}")
                    try:
                        return await call_next(replace(ctx, params={**params, "arguments": None}))
                    finally:
                        _BAD_ARGUMENTS.reset(token)
            return await call_next(ctx)

        server = Server(self.name, version="1", instructions=self.instructions or None,
                        on_list_tools=list_tools, on_call_tool=call_tool)
        server.middleware.insert(0, non_object_arguments)
        return server

    async def _serve_call(self, name: str, arguments: dict | None, arguments_error: str) -> ToolResult:
        call_id = f"mcp_{len(self.calls) + 1}"
        try:
            result = self.call(name, arguments, call_id, arguments_error)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            if self.failure is None:
                self.failure = exc
            if isinstance(exc, Signal):  # a benchmark's stop (AppWorld's AgentStop), for the runner
                log.debug("MCP tool call %s stopped the trial: %r", name, exc)
            else:
                log.exception("MCP tool call %s failed in agentrig", name)
            raise
        if not isinstance(result, ToolResult):
            raise TypeError(f"the tool server's call returned {type(result).__name__}, not a ToolResult")
        self.calls.append(ServedCall(call_id, name, arguments, arguments_error, result))
        return result

    # -- serving ----------------------------------------------------------------------------------

    async def start(self, sock: socket.socket | None = None) -> str:
        """Serve on ``sock`` (a listening socket, which the server then owns and closes) or on a
        fresh port of 127.0.0.1; returns the endpoint's URL (``…/mcp``)."""
        if self._task is not None:
            raise RuntimeError("TrialToolServer.start: already started")
        from mcp.server.transport_security import TransportSecuritySettings

        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(64)
        self._sock = sock
        self._mcp = self._mcp_server()
        app = self._mcp.streamable_http_app(
            streamable_http_path=_MCP_PATH, session_idle_timeout=None,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self._server = _uvicorn_server(_Unauthorized(app, self.token))
        self._task = asyncio.ensure_future(self._serve(self._server, sock))
        ready = asyncio.ensure_future(self._server.ready.wait())
        try:
            await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while starting: nothing is left serving
            await self.close()
            raise
        finally:
            if not ready.done():
                ready.cancel()
        if not self._server.ready.is_set():
            task = self._task
            exc = task.exception() if task.done() and not task.cancelled() else None
            await self.close()
            raise RuntimeError(f"the trial's MCP server did not start: {exc!r}")
        host, port = sock.getsockname()[:2]
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        self.url = f"http://{'[' + host + ']' if ':' in host else host}:{port}{_MCP_PATH}"
        return self.url

    @staticmethod
    async def _serve(server: Any, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn's answer to a failed start; never out of the event loop
            raise RuntimeError(f"uvicorn exited ({exc.code})") from None

    def stdio_command(self, python: str | None = None) -> tuple[list[str], dict[str, str]]:
        """The command and environment of a stdio MCP server for this trial: a bridge process
        (``bridge.py``, standard library only) between its stdin/stdout and this server, run by
        ``python`` (default: agentrig's own interpreter; any Python 3.8+ will do — e.g. the one of
        the agent's sandbox, with ``BRIDGE_SCRIPT`` mounted there). The token goes in the
        environment, never on the command line."""
        if self.url is None:
            raise RuntimeError("TrialToolServer.stdio_command: start() the server first")
        return ([python or sys.executable, "-I", str(BRIDGE_SCRIPT)],
                {BRIDGE_URL_ENV: self.url, BRIDGE_TOKEN_ENV: self.token})

    async def close(self) -> None:
        """Stop serving: the port is closed, open requests get ``_GRACE_S`` and are then cancelled;
        bounded by ``CLOSE_BOUND_S``, a cancellation of the caller included (procs.py)."""
        task, server = self._task, self._server
        if task is None:
            if self._sock is not None:
                self._sock.close()
            return
        if not task.done():
            await finish_despite_cancel(self._stop(task, server), CLOSE_BOUND_S)
        if self._sock is not None:
            self._sock.close()

    async def _stop(self, task: asyncio.Task, server: Any) -> None:
        # the MCP sessions first: their open SSE streams (an agent's GET stream) end in order, and
        # uvicorn then has no request left to wait for
        manager = getattr(self._mcp, "_session_manager", None)
        transports = list(getattr(manager, "_server_instances", {}).values())
        if transports:
            ending = asyncio.gather(*(t.terminate() for t in transports), return_exceptions=True)
            try:
                await asyncio.wait_for(ending, _GRACE_S)
            except asyncio.TimeoutError:  # a session that does not end in order is cut by uvicorn below
                log.debug("MCP sessions did not terminate within %s s", _GRACE_S)
        server.should_exit = True
        done, _ = await asyncio.wait({task}, timeout=CLOSE_BOUND_S - 0.5)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=0.5)
        if task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                log.warning("the trial's MCP server ended with %r", exc)
