"""agentrig's runner of a Python agent: run BY PATH with the agent's own interpreter, standard
library only, never importing agentrig (its directory, first on ``sys.path``, holds only this file
and ``agentrig_agent.py``, the protocol's types).

    python runner.py --fd N [--path DIR]...                   one trial: the protocol on socket fd N
    python runner.py --check ENTRY [--client KIND] [--path DIR]...   can ENTRY be imported here?
                                                              (one JSON line on stdout)
    python runner.py --starter ENTRY --fd N [--client KIND] [--path DIR]...
                                                              the run's starter: imports once the
                                                              libraries ENTRY uses, then forks one
                                                              process per trial (below)

The starter (a fork server; socket fd N is SOCK_SEQPACKET, one JSON message per packet). It learns
which *installed* modules ENTRY imports (site-packages, the standard library; never ENTRY's own
package nor a module under ``--path``) in a forked probe that imports ENTRY and is gone, imports
those in itself, and says ``{"type": "starter", "ok": true, "preloaded": N}`` — or ``ok: false``
with ``why`` (a thread was started by an import: forking would be unsafe), and exits. Then per
trial agentrig sends ``{"type": "fork", "id", "env"}`` with three file descriptors (the trial's
protocol socket, its stdout and stderr); the starter forks a child, answers ``{"type": "started",
"id", "pid"}``, and ``{"type": "exit", "pid", "code"}`` when the child ends. The child is what
``--fd`` starts, without the imports: a session of its own, the trial's environment exactly
(``os.environ``), ``random``'s (and numpy's) generator seeded afresh, ENTRY imported anew (its
module-level code runs per trial, with the trial's environment), then the trial's protocol. The
starter exits when agentrig closes its end, or after ``STARTER_IDLE_S`` with no trial asked for and
none of its children running (agentrig starts another when it needs one).

The trial's protocol is JSON lines on the socket agentrig passed (never stdout/stderr, which are
the agent's own and are recorded by agentrig):

    agentrig → runner   {"type": "init", entry, settings, model, client, base_url, token,
                         turn, reply, context}   (turn: the agentrig_agent class of each step's turn,
                                                  "Turn" (τ²), "AppWorldTurn" or "TerminalTurn" (whose
                                                  run(command) is a call_tool "run"); reply: what a plain str
                                                  reply is, "content" or "code"; context: the turn's
                                                  fields that stay the same through the trial)
    runner → agentrig   {"type": "ready", client, python}  or  {"type": "error", stage, error, traceback}
    agentrig → runner   {"type": "turn", step, new, ...}  (new: the chat messages that came in since the
                                                  last step, the runner keeps the agent's own; the
                                                  benchmark's other fields of the step, e.g. output)
    runner → agentrig   {"type": "call_tool", name, arguments, id}  →  {"type": "tool_result", content, error}
    runner → agentrig   {"type": "reply", content, tool_calls, code}  or  {"type": "error", stage, ...}
    agentrig → runner   {"type": "close"}                                   (agent.close(), exit 0)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import inspect
import json
import os
import platform
import socket
import sys
import traceback
import uuid
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
TRACEBACK_CHARS = 20000
PROTOCOL = 2
STARTER_IDLE_S = 60.0  # a starter with no trial running and none asked for this long exits


def _setup_path(paths: List[str]) -> None:
    """This directory (agentrig_agent) first, then the agent's own directories."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    at = sys.path.index(HERE) + 1
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(at, p)


def load_entry(entry: str) -> Any:
    """The object ``module:attribute`` names (ValueError for a malformed entry)."""
    module_name, sep, attr = entry.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"entry {entry!r} is not of the form 'module:function'")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def make_client(kind: str, base_url: str, token: str) -> Tuple[Any, Optional[str]]:
    """The ready client make() gets, and which it is. Its retries are off: the channel behind the
    proxy retries (a fault it cannot ride out ends the trial)."""
    if kind in ("auto", "openai"):
        try:
            import openai
        except ImportError:
            if kind == "openai":
                raise
        else:
            return openai.OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0), "openai"
    if kind in ("auto", "anthropic"):
        try:
            import anthropic
        except ImportError:
            if kind == "anthropic":
                raise
        else:
            return anthropic.Anthropic(base_url=base_url, api_key=token, max_retries=0), "anthropic"
    return None, None


def _version(module: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - not installed (or no metadata)
        return None


def check(entry: str, client: str) -> Dict[str, Any]:
    """Whether ENTRY imports and names a callable, and the client kind is there."""
    out: Dict[str, Any] = {"python": platform.python_version(), "executable": sys.executable,
                           "openai": _version("openai"), "anthropic": _version("anthropic")}
    try:
        factory = load_entry(entry)
    except BaseException as exc:  # noqa: BLE001 - whatever the user's module raises on import
        return {**out, "ok": False, "stage": "import", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-TRACEBACK_CHARS:]}
    if not callable(factory):
        return {**out, "ok": False, "stage": "entry", "error": f"{entry} is a {type(factory).__name__}, not a function"}
    if client in ("openai", "anthropic") and out[client] is None:
        return {**out, "ok": False, "stage": "client", "error": f"the package {client!r} is not installed here"}
    module = sys.modules.get(entry.partition(":")[0])
    return {**out, "ok": True, "file": getattr(module, "__file__", None)}


class Pipe:
    """JSON lines over the socket agentrig passed."""

    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.rfile = self.sock.makefile("rb")
        self.wfile = self.sock.makefile("wb")

    def send(self, message: Dict[str, Any]) -> None:
        sys.stdout.flush()  # what the agent printed before this comes first in agentrig's record
        sys.stderr.flush()
        self.wfile.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        self.wfile.flush()

    def receive(self) -> Dict[str, Any]:
        line = self.rfile.readline()
        if not line:
            raise SystemExit(0)  # agentrig closed its end: the trial is over
        return json.loads(line)


def _error(stage: str, exc: BaseException) -> Dict[str, Any]:
    return {"type": "error", "stage": stage, "error": f"{type(exc).__name__}: {exc}"[:2000],
            "traceback": traceback.format_exc()[-TRACEBACK_CHARS:]}


def _reply_message(value: Any, plain: str = "content") -> Dict[str, Any]:
    """The agent's return value as a reply message (TypeError/ValueError: not a reply). ``plain``:
    what a str is, its text ("content") or its code ("code"; then None means: no code, I stop)."""
    from agentrig_agent import Reply, ToolCall

    if isinstance(value, str):
        return {"type": "reply", "content": None, "tool_calls": [], "code": None, plain: value}
    code = None
    if value is None and plain == "code":
        content, calls = None, []
    elif isinstance(value, Reply):
        content, calls, code = value.content, value.tool_calls, value.code
    elif isinstance(value, dict):
        unknown = sorted(set(value) - {"content", "tool_calls", "code"})
        if unknown:
            raise ValueError(f"the reply dict has unknown key(s) {unknown}: only 'content', 'tool_calls' and 'code'")
        content, calls, code = value.get("content"), value.get("tool_calls") or [], value.get("code")
    else:
        what = "the code as a str" if plain == "code" else "a str"
        raise TypeError(f"respond() returned a {type(value).__name__}; return {what}, an agentrig_agent.Reply "
                        "or a dict {'content': ..., 'tool_calls': [...], 'code': ...}")
    for name, text in (("content", content), ("code", code)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"the reply's {name} is a {type(text).__name__}, not a str")
    out = []
    for i, call in enumerate(calls):
        if isinstance(call, ToolCall):
            name, arguments, cid = call.name, call.arguments, call.id
        elif isinstance(call, dict):
            name, arguments, cid = call.get("name"), call.get("arguments", {}), call.get("id")
        else:
            raise TypeError(f"tool_calls[{i}] is a {type(call).__name__}: give a ToolCall or a dict with name and arguments")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool_calls[{i}] has no name")
        out.append({"name": name, "arguments": arguments, "id": cid if isinstance(cid, str) else None})
    return {"type": "reply", "content": content, "tool_calls": out, "code": code}


def _with_code(content: Optional[str], code: Optional[str]) -> Optional[str]:
    """A reply's text as it stays in the conversation: with its code in a ```python fence unless the
    text holds it already."""
    if code is None or (content and code.strip() in content):
        return content
    fenced = "```python\n" + code.strip("\n") + "\n```"
    return f"{content.rstrip()}\n\n{fenced}" if content and content.strip() else fenced


def _turn(cls: Any, values: Dict[str, Any]) -> Any:
    """The step's turn: the benchmark's class, from the fields it knows (others are left out)."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{k: v for k, v in values.items() if k in names})


def _call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _assistant(content: Optional[str], calls: List[Dict[str, Any]]) -> Dict[str, Any]:
    """An assistant message in Chat Completions' shape (arguments as JSON text)."""
    # "" beside tool calls, as agentrig's own agent sends it (some servers refuse a null content)
    message: Dict[str, Any] = {"role": "assistant", "content": content if content is not None or not calls else ""}
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
            "name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
            else json.dumps(c["arguments"], ensure_ascii=False)}} for c in calls]
    return message


def serve(pipe: Pipe) -> int:
    import agentrig_agent
    from agentrig_agent import ToolResult

    init = pipe.receive()
    loop = asyncio.new_event_loop()  # one loop for the whole trial: async clients stay bound to it
    asyncio.set_event_loop(loop)

    def run(value: Any) -> Any:
        return loop.run_until_complete(value) if inspect.isawaitable(value) else value

    try:
        factory = load_entry(init["entry"])
    except BaseException as exc:  # noqa: BLE001
        pipe.send(_error("import", exc))
        return 1
    try:
        client, client_kind = make_client(init.get("client") or "auto", init["base_url"], init["token"])
        agent = run(factory(init.get("settings") or {}, client, init["model"]))
        if agent is None or not callable(getattr(agent, "respond", None)):
            raise TypeError(f"{init['entry']} returned {type(agent).__name__}, which has no respond(turn) method")
    except BaseException as exc:  # noqa: BLE001
        pipe.send(_error("make", exc))
        return 1
    context = init.get("context") or {}
    plain = "code" if init.get("reply") == "code" else "content"
    turn_class = getattr(agentrig_agent, str(init.get("turn") or "Turn"), None)
    if not (isinstance(turn_class, type) and dataclasses.is_dataclass(turn_class)):
        pipe.send({"type": "error", "stage": "make", "error": f"agentrig_agent has no turn class {init.get('turn')!r}"})
        return 1
    pipe.send({"type": "ready", "client": client_kind, "python": platform.python_version(), "protocol": PROTOCOL})

    messages: List[Dict[str, Any]] = []  # the agent's side of the conversation, kept here

    def call_tool(name: str, arguments: Any) -> ToolResult:
        if not isinstance(name, str) or not name:
            raise TypeError("call_tool: the tool's name must be a non-empty str")
        if isinstance(arguments, (bytes, bytearray)):
            arguments = arguments.decode("utf-8", "replace")
        if arguments is None:
            arguments = {}
        json.dumps(arguments)  # TypeError here, in the agent's code, for arguments that are not JSON
        cid = _call_id()
        pipe.send({"type": "call_tool", "name": name, "arguments": arguments, "id": cid})
        answer = pipe.receive()
        result = ToolResult(content=str(answer.get("content") or ""), error=bool(answer.get("error")))
        messages.append(_assistant(None, [{"name": name, "arguments": arguments, "id": cid}]))
        messages.append({"role": "tool", "tool_call_id": cid, "content": result.content})
        return result

    while True:
        message = pipe.receive()
        kind = message.get("type")
        if kind == "close":
            closer = getattr(agent, "close", None)
            try:
                if callable(closer):
                    run(closer())
            finally:
                loop.close()
            return 0
        if kind != "turn":
            continue
        new = message.get("new") or []
        messages.extend(new)
        fields = {k: v for k, v in message.items() if k not in ("type", "new", "step")}
        turn = _turn(turn_class, {**context, **fields, "messages": list(messages), "new": list(new),
                                  "step": int(message.get("step") or 0), "model": init["model"], "_call": call_tool})
        try:
            reply = _reply_message(run(agent.respond(turn)), plain)
            json.dumps(reply)  # arguments that are not JSON: the agent's error, said here
        except BaseException as exc:  # noqa: BLE001 - the agent's failure, reported with its traceback
            pipe.send(_error("respond", exc))
            continue
        for call in reply["tool_calls"]:
            call["id"] = call["id"] or _call_id()
        messages.append(_assistant(_with_code(reply["content"], reply["code"]), reply["tool_calls"]))
        pipe.send(reply)


# ------------------------------------------------------------------------------ the starter


def _library_modules(entry: str, paths: List[str], before: set) -> List[str]:
    """The modules imported since ``before`` that are installed libraries (their file in a
    site-packages/dist-packages directory or the standard library), in import order; never the
    entry's own top-level package, nor a module under the agent's own directories."""
    import sysconfig

    own = entry.partition(":")[0].split(".")[0]
    roots = [os.path.realpath(p) + os.sep for p in paths] + [HERE + os.sep]
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
    out = []
    for name, module in list(sys.modules.items()):
        if name in before or name.split(".")[0] in (own, "__main__", "agentrig_agent"):
            continue
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        real = os.path.realpath(file)
        if any(real.startswith(r) for r in roots):
            continue
        parts = real.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts or real.startswith(stdlib):
            out.append(name)
    return out


def _probe(entry: str, client: str, paths: List[str]) -> List[str]:
    """In a forked child that is gone after: import ENTRY (and the client's SDK), and say which
    library modules that took."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe
        os.close(r)
        code = 0
        try:
            before = set(sys.modules)
            try:
                make_client(client, "http://127.0.0.1:9", "probe")
                load_entry(entry)
            except BaseException:  # noqa: BLE001 - the trial will say it; the libraries imported so far count
                pass
            with os.fdopen(w, "w") as f:
                f.write(json.dumps(_library_modules(entry, paths, before)))
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    os.waitpid(pid, 0)
    try:
        names = json.loads(text)
    except ValueError:
        return []
    return [n for n in names if isinstance(n, str)]


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _send_packet(sock: socket.socket, message: Dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode("utf-8"))


def starter(fd: int, entry: str, client: str, paths: List[str]) -> Tuple[str, int]:
    """The run's starter (the module's docstring): ``("exit", code)`` when it is done, and in each
    forked trial child ``("trial", fd)``, the trial's protocol socket to serve."""
    import array
    import selectors
    import signal
    import threading

    ctl = socket.socket(fileno=fd)
    ctl.setblocking(True)
    if not hasattr(os, "fork") or not hasattr(socket, "CMSG_LEN"):
        _send_packet(ctl, {"type": "starter", "ok": False, "why": "no fork here"})
        return ("exit", 0)
    for name in _probe(entry, client, paths):
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - left for the trial to import (and to fail in, if it does)
            pass
    if threading.active_count() > 1:  # a library's import started a thread: a fork would not have it
        _send_packet(ctl, {"type": "starter", "ok": False, "why": "an import started a thread"})
        return ("exit", 0)
    sys.stdout.flush()
    sys.stderr.flush()
    _send_packet(ctl, {"type": "starter", "ok": True, "preloaded": len(sys.modules)})
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    size = socket.CMSG_LEN(3 * array.array("i").itemsize)
    live = set()
    while True:
        ready = sel.select(None if live else STARTER_IDLE_S)
        if not ready and not live:  # nothing asked of it for a while, nothing of it running: done
            return ("exit", 0)
        for key, _ in ready:
            if key.fileobj is ctl:
                data, ancdata, _flags, _addr = ctl.recvmsg(1 << 22, size)
                fds = array.array("i")
                for level, kind, payload in ancdata:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                if not data:  # agentrig closed its end
                    return ("exit", 0)
                request = json.loads(data)
                if len(fds) != 3:
                    for x in fds:
                        os.close(x)
                    continue
                pid = os.fork()
                if pid == 0:  # the trial's child
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    sel.close()
                    ctl.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    os.setsid()
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.dup2(fds[1], 1)
                    os.dup2(fds[2], 2)
                    for x in (null, fds[1], fds[2]):
                        os.close(x)
                    os.environ.clear()
                    os.environ.update(request.get("env") or {})
                    import random

                    random.seed()  # each trial its own generator, as a process of its own would have
                    numpy_random = sys.modules.get("numpy.random")
                    if numpy_random is not None and hasattr(numpy_random, "seed"):
                        numpy_random.seed()
                    return ("trial", fds[0])
                for x in fds:
                    os.close(x)
                live.add(pid)
                _send_packet(ctl, {"type": "started", "id": request.get("id"), "pid": pid})
            else:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    live.discard(pid)
                    _send_packet(ctl, {"type": "exit", "pid": pid, "code": _exit_code(status)})


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="runner.py")
    ap.add_argument("--fd", type=int)
    ap.add_argument("--check", metavar="ENTRY")
    ap.add_argument("--starter", metavar="ENTRY")
    ap.add_argument("--client", default="auto")
    ap.add_argument("--path", action="append", default=[])
    args = ap.parse_args(argv)
    _setup_path(args.path)
    if args.starter is not None:
        if args.fd is None:
            ap.error("--starter needs --fd N (agentrig's control socket)")
        what, value = starter(args.fd, args.starter, args.client, args.path)
        return serve(Pipe(value)) if what == "trial" else value
    if args.check is not None:
        out, sys.stdout = sys.stdout, sys.stderr  # what the module prints on import stays off the answer
        try:
            result = check(args.check, args.client)
        finally:
            sys.stdout = out
        print(json.dumps(result), flush=True)
        return 0
    if args.fd is None:
        ap.error("give --fd N (agentrig's socket) or --check ENTRY")
    return serve(Pipe(args.fd))


if __name__ == "__main__":
    sys.exit(main())
