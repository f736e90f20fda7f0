"""agentrig's side of a Python agent's trial (see the package's docstring): ``AgentProcess``, the
machinery any benchmark's turn runs on, and ``PythonAgent``, τ²'s turn on it."""

from __future__ import annotations

import array
import asyncio
import codecs
import contextlib
import inspect
import json
import os
import signal
import socket
import subprocess
from typing import Any

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.config import ROLES
from agentrig.errors import ConfigError
from agentrig.procs import abandon_process, finish_despite_cancel
from agentrig.redact import redact
from agentrig.types import Message, ToolCall, Transient

from .check import RUNNER, interpreter, without_secrets

OUTPUT_CHARS = 50_000  # of each of the agent's streams (stdout, stderr) kept per trial
TRACEBACK_CHARS = 8_000  # of an agent's traceback kept in its error event
LINE_LIMIT = 32 * 1024 * 1024  # the longest protocol line taken from the runner
CLOSE_GRACE_S = 3.0  # how long an idle agent gets to run its close() and exit
KILL_WAIT_S = 2.0


def secret_variables(ctx: Any) -> set[str]:
    """The variables the trial's channel reads keys and secret headers from, for every role (and a
    throwaway trial's ``secret_env``: the real channel's, ``agents/proxy/capture.py``)."""
    names: set[str] = set(getattr(ctx, "secret_env", ()))
    config = getattr(ctx.channel, "config", None)
    if config is None:
        return names
    for role in ROLES:
        rr = config.resolve(role)
        names.add(rr.api_key_env)
        names |= set(rr.headers_from_env.values())
    return names


def agent_environment(ctx: Any, base_url: str, token: str, model: str,
                      environ: dict[str, str] | None = None) -> dict[str, str]:
    """The agent process's environment: agentrig's own, without any key or secret header it knows
    of (by the variable's name, and by its value: every secret read so far), without agentrig's
    ``PYTHON*`` settings; with the trial's proxy and token under the names the SDKs read."""
    # the keys' values are secrets under any other name too — known now, not only once the channel
    # has read them for a first call (a trial's agent starts before any)
    env = without_secrets(os.environ if environ is None else environ, secret_variables(ctx),
                          getattr(ctx.channel, "_env", None) or {})
    no_proxy = ",".join(x for x in (env.get("NO_PROXY") or env.get("no_proxy"), "127.0.0.1", "localhost") if x)
    env.update({"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": token,
                "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": token,
                "AGENTRIG_MODEL": model, "NO_PROXY": no_proxy, "no_proxy": no_proxy,
                "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"})
    return env


def chat_message(m: Message) -> dict | None:
    """A message of the episode as the agent sees it (Chat Completions' shape); None: not its to see."""
    if m.role == "user":
        if m.tool_calls and not m.content:  # the user's own tool calls
            return None
        return {"role": "user", "content": m.content or ""}
    if m.role == "tool":
        if m.requestor == "user":
            return None
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content or ""}
    if m.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": m.content if m.content is not None or not m.tool_calls else ""}
        if m.tool_calls:
            out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.arguments_raw or json.dumps(c.arguments or {}, ensure_ascii=False)}}
                for c in m.tool_calls]
        return out
    return None


def parse_arguments(raw: Any) -> tuple[dict | None, str, str | None]:
    """(arguments, their JSON text, the error when they are not a JSON object)."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False), None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return None, raw, f"not valid JSON ({exc.msg})"
        if isinstance(value, dict):
            return value, raw, None
        return None, raw, f"a JSON {type(value).__name__}, not an object"
    return None, json.dumps(raw), f"a {type(raw).__name__}, not an object"


class _Capture:
    """One of the agent's output streams: read as it comes, kept up to ``OUTPUT_CHARS`` per trial,
    handed out as text in pieces (``take``)."""

    def __init__(self, name: str):
        self.name = name
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending: list[str] = []
        self.kept = 0
        self.dropped = 0

    def add(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        room = OUTPUT_CHARS - self.kept
        if len(text) > room:
            self.dropped += len(text) - max(room, 0)
            text = text[:max(room, 0)]
        if text:
            self.kept += len(text)
            self.pending.append(text)

    def take(self) -> str:
        text, self.pending = "".join(self.pending), []
        return text


# ------------------------------------------------------------------------------ the starter
STARTER_OFF_ENV = "AGENTRIG_PYTHON_AGENT_FORKS"  # "0": every trial's interpreter starts afresh
STARTER_TIMEOUT_S = 180.0  # the starter's imports (as the preflight's: a large agent takes a while)
PER_TRIAL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "AGENTRIG_MODEL")


class ForkedProcess:
    """A trial's agent process forked by a ``Starter``: what ``AgentProcess`` uses of asyncio's
    ``Process`` (``pid``, ``returncode``, ``wait()``, ``kill()``, ``stdout``/``stderr``). Its exit
    code comes from the starter, its parent."""

    def __init__(self, pid: int, exited: asyncio.Future, stdout: asyncio.StreamReader, stderr: asyncio.StreamReader):
        self.pid, self._exited, self.stdout, self.stderr = pid, exited, stdout, stderr

    @property
    def returncode(self) -> int | None:
        return self._exited.result() if self._exited.done() and not self._exited.cancelled() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)


class Starter:
    """One long-lived runner (``runner.py --starter``) per interpreter, entry, path and environment
    in this process and event loop: it has imported the libraries the entry uses, and forks each
    trial's process (``fork``). Declined (``ok`` false: a library's import started a thread, or no
    fork there), the trials start their interpreter as before. It exits when this process closes
    its end of the socket (at exit, or ``close``)."""

    def __init__(self) -> None:
        self.ok = False  # it answered and serves forks
        self.gone = False  # it has ended (or was closed): another is started when one is needed
        self.why = ""
        self.loop = asyncio.get_running_loop()
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._ids = 0
        self._started: dict[int, asyncio.Future] = {}
        self._exits: dict[int, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self.opening: asyncio.Task | None = None  # open(), awaited by every trial that asks meanwhile

    async def open(self, argv: list[str], env: dict[str, str]) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # a plain Popen, bound to no event loop: it outlives the loop that started it (until its
            # socket closes), and Python's subprocess module reaps it once it is dropped
            self.proc = subprocess.Popen(
                [*argv, "--fd", str(theirs.fileno())], pass_fds=(theirs.fileno(),), start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        except OSError as exc:
            mine.close()
            self.why = f"cannot start it: {exc}"
            return
        finally:
            theirs.close()
        mine.setblocking(False)
        self.sock = mine
        try:
            first = json.loads(await asyncio.wait_for(self.loop.sock_recv(mine, 65536), STARTER_TIMEOUT_S) or b"{}")
        except (TimeoutError, ValueError, OSError) as exc:
            first = {"why": f"no answer ({type(exc).__name__})"}
        self.ok = first.get("type") == "starter" and first.get("ok") is True
        if not self.ok:
            self.why = str(first.get("why") or "it ended without answering")
            self.close()
            self.gone = False  # declined: this key's trials start their own interpreters
            return
        self._reader = self.loop.create_task(self._read())

    async def _read(self) -> None:
        assert self.sock is not None
        try:
            while True:
                data = await self.loop.sock_recv(self.sock, 65536)
                if not data:
                    break
                msg = json.loads(data)
                if msg.get("type") == "started":
                    fut = self._started.pop(msg.get("id"), None)
                    if fut is not None and not fut.done():
                        fut.set_result(int(msg["pid"]))
                elif msg.get("type") == "exit":  # handed to its trial's process (kept until then)
                    pid = int(msg["pid"])
                    fut = self._exits.pop(pid, None)
                    if fut is None:  # it ended before fork() took it
                        fut = self._exits[pid] = self.loop.create_future()
                    if not fut.done():
                        fut.set_result(int(msg["code"]))
        except (OSError, ValueError):
            pass
        finally:  # the starter is gone (it ended, idle, or was closed): nothing more forks here
            self.ok, self.gone = False, True
            for fut in self._started.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the Python agent's starter ended"))
            # what it forked and had not reported ended stays unknown (None): each trial still kills
            # its own process group at its end

    async def fork(self, env: dict[str, str]) -> tuple[ForkedProcess, socket.socket]:
        """A trial's process, forked with ``env``, and agentrig's end of its protocol socket.
        Raises ``ConnectionError`` when the starter is gone."""
        parent, child = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            async with self._lock:
                if not self.ok or self.sock is None:
                    raise ConnectionError("the Python agent's starter ended")
                self._ids += 1
                rid = self._ids
                fut = self.loop.create_future()
                self._started[rid] = fut
                data = json.dumps({"type": "fork", "id": rid, "env": env}).encode()
                fds = array.array("i", [child.fileno(), out_w, err_w])
                while True:
                    try:
                        self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
                        break
                    except BlockingIOError:
                        await asyncio.sleep(0.005)
            pid = await fut
        except BaseException:
            parent.close()
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            child.close()
            for fd in (out_w, err_w):
                os.close(fd)
        exited = self._exits.pop(pid, None)  # done already when it ended before this line
        if exited is None:
            exited = self._exits[pid] = self.loop.create_future()
        streams = []
        for fd in (out_r, err_r):
            reader = asyncio.StreamReader(limit=LINE_LIMIT)
            await self.loop.connect_read_pipe(lambda r=reader: asyncio.StreamReaderProtocol(r), os.fdopen(fd, "rb", 0))
            streams.append(reader)
        return ForkedProcess(pid, exited, *streams), parent

    def close(self) -> None:
        if self._reader is not None and not self._reader.done():
            with contextlib.suppress(RuntimeError):  # its loop has been closed
                self._reader.cancel()
        if self.sock is not None:
            self.sock.close()  # the starter reads the end and exits
            self.sock = None
        self.ok, self.gone = False, True
        if self.proc is not None and self.proc.poll() is None:
            _exiting.append(self.proc)  # reaped by a later look-up (it exits on its own)


_exiting: list[subprocess.Popen] = []  # closed starters not yet reaped


_starters: dict[tuple, Starter] = {}


async def starter_for(argv: list[str], env: dict[str, str]) -> Starter | None:
    """This process's starter for ``argv`` (the runner's, ``--starter ENTRY``…) and ``env`` (the
    agent's environment without the trial's own variables) in the running loop; started once
    (concurrent trials wait for it). None: turned off (``AGENTRIG_PYTHON_AGENT_FORKS=0``); not
    ``ok`` (it declined, ``why`` says why): the trial starts its own interpreter."""
    if os.environ.get(STARTER_OFF_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    _exiting[:] = [p for p in _exiting if p.poll() is None]
    key = (tuple(argv), tuple(sorted(env.items())))
    loop = asyncio.get_running_loop()
    found = _starters.get(key)
    if found is not None and (found.loop is not loop or found.gone):  # another loop's, or ended
        found.close()
        found = None
    if found is None:
        found = _starters[key] = Starter()
        found.opening = loop.create_task(found.open(argv, env))
    assert found.opening is not None
    await asyncio.shield(found.opening)
    return found


class AgentProcess:
    """The machinery of one trial's Python agent, whatever the benchmark: its proxy, its process,
    the socket, its output, how it fails and ends (see the package's docstring). A benchmark's side
    (``PythonAgent`` for τ², ``bench/appworld/python_agent.py``) says what the agent gets at the start
    (``open``) and per step (``step``), and what its reply means."""

    TURN = "Turn"  # the agentrig_agent class the runner hands the agent per step
    REPLY = "content"  # what a plain str the agent returns is: its text ("content") or its code ("code")

    def __init__(self, settings: AgentSettings, ctx: Any):
        if ctx.channel is None:
            raise ConfigError("agent kind 'python' needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        self.settings = settings
        self.ctx = ctx
        self.proxy: Any = None
        self.proc: asyncio.subprocess.Process | ForkedProcess | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read: asyncio.Future | None = None
        self._pumps: list[asyncio.Task] = []
        self._out = {"stdout": _Capture("stdout"), "stderr": _Capture("stderr")}
        self._steps = 0
        self._first = 0  # the proxy's replies before this step
        self._busy = False  # in a step: the agent is working (no grace at close)
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    async def open(self, context: dict[str, Any]) -> None:
        """Start the proxy and the agent's process, and make the agent; ``context``: the fields of
        every turn that stay the same through the trial (τ²: the policy and the tools)."""
        from agentrig.agents.proxy import TrialProxy

        a, ctx = self.settings, self.ctx
        model = ctx.channel.role("agent").model or ""
        self.proxy = TrialProxy(ctx, role="agent", step_limit=a.step_limit, token_limit=a.token_limit,
                                cost_limit=a.cost_limit)
        base_url = await self.proxy.start()
        python = interpreter(a)
        argv = [python, str(RUNNER)]
        for p in a.path:
            argv += ["--path", p]
        env = agent_environment(ctx, base_url, self.proxy.token, model)
        parent = None
        starter = await starter_for([*argv, "--client", a.client, "--starter", (a.entry or "").strip()],
                                    {k: v for k, v in env.items() if k not in PER_TRIAL_ENV})
        if starter is not None and starter.ok:
            with contextlib.suppress(ConnectionError):  # the starter died: this trial starts its own
                self.proc, parent = await starter.fork(env)
        if parent is None:
            parent, child = socket.socketpair()
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *argv, "--fd", str(child.fileno()), pass_fds=(child.fileno(),), start_new_session=True,
                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                    env=env)
            except OSError as exc:
                parent.close()
                raise ConfigError(f"agent.python: cannot start {python}: {exc.strerror or exc} "
                                  "(fix: give the path of a Python interpreter, e.g. your venv's bin/python)") from None
            finally:
                child.close()
        self._reader, self._writer = await asyncio.open_connection(sock=parent, limit=LINE_LIMIT)
        self._pumps = [asyncio.ensure_future(self._pump(self.proc.stdout, self._out["stdout"])),
                       asyncio.ensure_future(self._pump(self.proc.stderr, self._out["stderr"]))]
        forked = isinstance(self.proc, ForkedProcess)
        ctx.event("agent", "start", agent="python", entry=a.entry, python=python, pid=self.proc.pid, forked=forked,
                  **({"not_forked": starter.why or "its starter had ended"} if starter is not None and not forked else {}))
        await self._send({"type": "init", "entry": (a.entry or "").strip(), "settings": a.settings, "model": model,
                          "client": a.client, "base_url": base_url, "token": self.proxy.token,
                          "turn": self.TURN, "reply": self.REPLY, "context": context})
        self._busy = True
        ready = await self._receive()
        self._busy = False
        if ready.get("type") == "error":
            self._failed(ready)
        if ready.get("type") != "ready":
            self._failed({"stage": "make", "error": f"the runner answered {ready.get('type')!r} instead of 'ready'"})
        ctx.event("agent", "ready", client=ready.get("client"), python=ready.get("python"))

    async def step(self, fields: dict[str, Any], transient: list[Transient]) -> dict | None:
        """One agent step: the turn's own ``fields`` (beside the step's number) go to the agent; its
        tool calls meanwhile go to ``tool_call``; returns its reply (``{"type": "reply", ...}``), or
        None when one of its tool calls ended the trial."""
        self.proxy.hints = list(transient)  # the step's transient context, for the proxy to add to its requests
        self._first = len(self.proxy.replies)
        self._busy = True
        await self._send({"type": "turn", "step": self._steps, **fields})
        self._steps += 1
        try:
            while True:
                msg = await self._receive()
                kind = msg.get("type")
                if kind == "call_tool":
                    self._flush_output()
                    answer = self.tool_call(msg)
                    if inspect.isawaitable(answer):  # a benchmark whose calls run async (terminal: a command)
                        answer = await answer
                    if answer is None:
                        # its call ended the trial: the agent, left waiting for the result (so it makes
                        # no model call after the end), is not asked to close but ended at once
                        return None
                    await self._send({"type": "tool_result", **answer})
                elif kind == "reply":
                    self._busy = False
                    return msg
                elif kind == "error":
                    self._busy = False  # the runner is back waiting for a turn
                    self._failed(msg)
                else:
                    self._failed({"stage": "respond", "error": f"the runner sent an unknown message {kind!r}"})
        finally:
            self._flush_output()

    def tool_call(self, msg: dict) -> dict | None:
        """A tool the agent called in its step (``turn.call_tool``): ``{"content", "error"}``, or
        None when the call ended the trial (or an awaitable of either). Here: none exists (the
        agent's error)."""
        self._failed({"stage": "respond", "error": "this benchmark offers the agent no tools to call"})
        return None

    def last_call(self) -> int | None:
        """The trajectory index of the step's last model call (None: the step made none)."""
        replies = self.proxy.replies
        return replies[-1].call if len(replies) > self._first else None

    async def aclose(self) -> None:
        """End the agent's process (its ``close()`` first when it is idle) and the proxy; bounded,
        also when the trial is being cancelled."""
        if self._closed:
            return
        self._closed = True
        await finish_despite_cancel(self._close(), CLOSE_GRACE_S + 2 * KILL_WAIT_S + 2)

    async def _close(self) -> None:
        proc = self.proc
        try:
            if proc is not None and proc.returncode is None:
                if not self._busy and self.proxy is not None and not self.proxy.ended.is_set():
                    with contextlib.suppress(Exception):
                        await self._send({"type": "close"})
                        await asyncio.wait_for(proc.wait(), CLOSE_GRACE_S)
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)  # its whole group: what the agent started too
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
            if self._pumps:
                await asyncio.wait(self._pumps, timeout=KILL_WAIT_S)
                for pump in self._pumps:
                    pump.cancel()
            for cap in self._out.values():
                cap.add(b"", final=True)
            self._flush_output()
            for cap in self._out.values():
                if cap.dropped:
                    self.ctx.event("agent", "output_dropped", stream=cap.name, chars=cap.dropped,
                                   reason=f"more than {OUTPUT_CHARS} characters in the trial")
        finally:
            if self._read is not None and not self._read.done():
                self._read.cancel()
            if self._writer is not None:
                self._writer.close()
            if proc is not None:
                abandon_process(proc)
            if self.proxy is not None:
                await self.proxy.close()

    # ------------------------------------------------------------------ the pipe
    async def _send(self, message: dict) -> None:
        assert self._writer is not None
        # default=str: a TOML date in the agent's settings reaches it as its text
        self._writer.write(json.dumps(message, ensure_ascii=False, default=str).encode() + b"\n")
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            pass  # the process is gone: _receive says how it ended

    async def _receive(self) -> dict:
        """The runner's next message; raises how the trial ends when the proxy ended it first (a
        channel fault: the trial is invalid; a limit: AgentStop) or the agent's process ended."""
        assert self._reader is not None and self.proxy is not None
        if self._read is None:
            self._read = asyncio.ensure_future(self._reader.readline())
            # a read left pending when the trial ends fails as the process is killed: nothing to report
            self._read.add_done_callback(lambda f: f.cancelled() or f.exception())
        ended = asyncio.ensure_future(self.proxy.ended.wait())
        try:
            await asyncio.wait({self._read, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
        self._proxy_end()
        read, self._read = self._read, None
        try:
            line = read.result()
        except (ValueError, asyncio.LimitOverrunError):
            self._failed({"stage": "respond", "error": f"a protocol message longer than {LINE_LIMIT} bytes"})
        except (ConnectionError, OSError):
            line = b""
        if not line:
            await self._exited()
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if not isinstance(msg, dict):
            self._failed({"stage": "respond", "error": "the runner sent a line that is not a JSON object"})
        return msg  # type: ignore[return-value]

    def _proxy_end(self) -> None:
        if self.proxy.failure is not None:
            raise self.proxy.failure  # a channel fault: the trial is invalid (replayed), not the agent's failure
        if self.proxy.stop is not None:
            raise self.proxy.stop  # a limit of the arm (step_limit, token_limit, cost_limit)

    async def _exited(self) -> None:
        """The runner closed the pipe: its process ended without a reply."""
        self._busy = False
        code = None
        if self.proc is not None:
            with contextlib.suppress(Exception):
                code = await asyncio.wait_for(self.proc.wait(), KILL_WAIT_S)
        if self._pumps:
            await asyncio.wait(self._pumps, timeout=KILL_WAIT_S)
        self._proxy_end()
        tail = "".join(self._out["stderr"].pending)  # also recorded whole, as the agent's output
        self._failed({"stage": "respond", "error": f"the agent's process ended (exit code {code}) without replying",
                      "traceback": tail[-TRACEBACK_CHARS:]})

    async def _pump(self, stream: asyncio.StreamReader | None, cap: _Capture) -> None:
        if stream is None:
            return
        while True:
            data = await stream.read(65536)
            if not data:
                return
            cap.add(data)

    # ------------------------------------------------------------------ what the agent said
    def _scrub(self, text: str) -> str:
        if self.proxy is not None:
            text = text.replace(self.proxy.token, "[trial token]")
        return redact(text)

    def _flush_output(self) -> None:
        for cap in self._out.values():
            text = cap.take()
            if text:
                self.ctx.event("agent", "output", stream=cap.name, text=self._scrub(text))

    def _failed(self, msg: dict) -> None:
        """The agent's own failure (its code raised, its process died): the trial ends ``agent_error``
        (valid, reward 0), the traceback in an ``agent``/``error`` event — unless the proxy ended the
        trial first (a channel fault the agent then tripped on is not its failure)."""
        self._proxy_end()
        stage, error = str(msg.get("stage") or "respond"), self._scrub(str(msg.get("error") or "unknown error"))
        self._flush_output()
        self.ctx.event("agent", "error", stage=stage, error=error,
                       traceback=self._scrub(str(msg.get("traceback") or ""))[-TRACEBACK_CHARS:])
        what = {"import": "importing its entry", "make": "its make()", "respond": "respond()"}.get(stage, stage)
        raise AgentStop("agent_error", f"the Python agent failed in {what}: {error}")



class PythonAgent(AgentProcess):
    """``kind="python"`` on τ² tasks: the conversation's messages in, text and/or tool calls out
    (the agents' ``start``/``respond``; see the package's docstring)."""

    def __init__(self, settings: AgentSettings, ctx: Any):
        super().__init__(settings, ctx)
        if not hasattr(ctx.bench, "spec"):  # τ²'s TauTrial: the domain's tools and policy
            raise ConfigError("agent kind 'python' with the τ² protocol needs a τ² trial (fix: use it with "
                              "[benchmark] kind = \"tau2\", or the benchmark's own Python agent)")
        self._pending: list[dict] = []  # what the agent has not been sent yet (start's history)

    async def start(self, history: list[Message]) -> None:
        from agentrig.agents.llm import openai_tools

        await self.open({"policy": self.ctx.bench.policy, "tools": openai_tools(self.ctx.bench.spec.agent_toolkit)})
        self._pending = [d for d in (chat_message(m) for m in history) if d is not None]

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        new = self._pending + [d for d in (chat_message(m) for m in incoming) if d is not None]
        self._pending = []
        msg = await self.step({"new": new}, transient)
        if msg is None:
            return Message(role="assistant", content=None)
        if msg.get("code") is not None:
            self._failed({"stage": "respond", "error": "the reply has `code`, which is for AppWorld tasks; on τ² "
                                                       "tasks reply with content and/or tool_calls"})
        return self._message(msg)

    def tool_call(self, msg: dict) -> dict | None:
        arguments, _raw, problem = parse_arguments(msg.get("arguments"))
        name, cid = str(msg.get("name") or ""), str(msg.get("id") or "") or None
        # arguments that are not a JSON object are answered with an Error: result, as in the turn loop
        result = self.ctx.bench.call_tool(name, arguments, call_id=cid, arguments_error=problem or "")
        call = self.last_call()
        if call is not None:  # the call's message names the model call it came from, as a reply's does
            for m in reversed(self.ctx.trajectory.messages[-2:]):
                if m.role == "assistant" and m.tool_calls and m.tool_calls[0].id == cid:
                    m.call = call
        ended = getattr(self.ctx.bench, "ended", None)
        if ended is not None and ended.is_set():
            return None
        return {"content": result.content or "", "error": result.error}

    def _message(self, msg: dict) -> Message:
        calls = []
        for i, c in enumerate(msg.get("tool_calls") or []):
            arguments, raw, problem = parse_arguments(c.get("arguments"))
            calls.append(ToolCall(id=str(c.get("id") or f"call_{self._steps}_{i}"), name=str(c.get("name") or ""),
                                  arguments=arguments, arguments_raw=raw, arguments_error=problem))
        content = msg.get("content")
        if not isinstance(content, str) or (content == "" and calls):  # no text beside the calls
            content = None
        return Message(role="assistant", content=content, tool_calls=calls, call=self.last_call())
