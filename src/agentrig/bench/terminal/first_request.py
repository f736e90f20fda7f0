"""What an installed agent (mini-swe-agent, Codex CLI, Claude Code) really sends first, as the
trial's proxy forwards it: for ``agentrig doctor --config`` to send that very request to the role's
endpoint (its tools, its system prompt's size, ``tool_choice`` and ``parallel_tool_calls``).

Nothing of an agent's request is kept in agentrig (its prompt is its vendor's text): it is made
when the doctor runs. ``capture(agent, model)`` runs the installed agent itself, from its cached
tool root, on the host, for one model call (``await first_request(arm, agent, model)``):

- in a fresh temporary directory (its home, its config files as a trial writes them, and a scratch
  working directory), removed afterwards;
- against a throwaway ``TrialProxy`` whose channel goes to a local stub endpoint (``agents/proxy/capture.py``: 127.0.0.1, a
  one-word answer; no request leaves the machine), with the flags and environment that keep each
  CLI headless and offline (``installed.py``);
- with an environment of its own: ``PATH``, ``HOME`` (the temporary one), the throwaway proxy's
  address and token — never the real key, nor anything else of the caller's environment;
- until the proxy has forwarded a request with tools (or the agent exits, or ``CAPTURE_S`` pass);
  then its process group is ended (``SIGTERM``, then ``SIGKILL``), by its own id.

The request is read back from the throwaway trial's record (``ctx.trajectory.agent_requests``: the
messages, tools and arguments the proxy handed to ``ctx.complete``). An agent not installed yet is
not installed here: ``FirstRequest.problem`` says so, with ``agentrig agents install KIND``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from agentrig.agents.proxy.capture import captured, recorded_requests, stub_endpoint, throwaway_context
from agentrig.benchmark import FirstRequest

from .installed import HOME_MOUNT, INSTALLED_KINDS, RECORD_FILES, TOOL_MOUNT, InstalledAgent, command_line

CAPTURE_S = 120.0  # the longest an agent may take to send its first request with tools
INSTRUCTION = "List the files in the current directory with ls, then say how many there are."
NAMES = {"mini-swe-agent": "mini-swe-agent", "codex": "Codex CLI", "claude-code": "Claude Code"}


def agent_label(kind: str, version: str) -> str:
    return f"{NAMES.get(kind, kind)} {version}"


# ------------------------------------------------------------------------------ the agent's run
def _host_line(line: str, home: Path, tool: Path) -> str:
    """The trial's command line with the sandbox's mount points replaced by the host's directories
    (both are made of characters a shell word needs no quoting for)."""
    return line.replace(HOME_MOUNT, str(home)).replace(TOOL_MOUNT, str(tool))


def agent_env(agent: Any, model: str, home: Path, tmp: Path, base_url: str, token: str) -> dict[str, str]:
    """The agent's whole environment (nothing of the caller's but ``PATH``): its temporary home, the
    throwaway proxy's address and token, and the config files a trial writes (written into ``home``)."""
    env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "TMPDIR": str(tmp), "OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": token,
           "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": token, "AGENTRIG_MODEL": model,
           "AGENTRIG_INSTRUCTION": INSTRUCTION, "AGENTRIG_HOME": str(home)}
    written = InstalledAgent(agent, None).write_home(home, model, base_url)
    env.update({k: v.replace(HOME_MOUNT, str(home)) for k, v in written.items()})
    return env


async def _end_group(proc: asyncio.subprocess.Process) -> None:
    """End the agent's process group (its own: ``start_new_session``), by its id: SIGTERM, then SIGKILL
    for whatever is left of it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 3.0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5.0)


async def _capture(agent: Any, model: str, tool: Path, entry: str, timeout_s: float) -> tuple[Any, str]:
    """(the agent's first request with tools, or the largest one, or None; what the agent said when none came)."""
    from agentrig.agents.proxy import TrialProxy

    tmp = Path(tempfile.mkdtemp(prefix="agentrig-doctor-agent-"))
    ctx = None
    try:
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        async with stub_endpoint() as stub:
            ctx = throwaway_context(stub, model, domain="terminal")
            proxy = TrialProxy(ctx, step_limit=4)
            base_url = await proxy.start()
            try:
                env = agent_env(agent, model, home, tmp, base_url, proxy.token)
                line = _host_line(command_line(agent, f"{TOOL_MOUNT}/{entry}", RECORD_FILES.get(agent.kind)), home, tool)
                proc = await asyncio.create_subprocess_exec(
                    "bash", "-c", line, cwd=str(work), env=env, stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
                try:
                    deadline = time.monotonic() + timeout_s
                    while time.monotonic() < deadline and proc.returncode is None:
                        if proxy.ended.is_set() or any(tools for _, tools, _ in recorded_requests(ctx)):
                            break  # a request with tools, or the throwaway proxy's step limit (an agent without tools)
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(proc.wait(), 0.1)
                finally:
                    await _end_group(proc)
            finally:
                await proxy.close()
                await ctx.channel.aclose()
        said = ""
        if not ctx.trajectory.agent_requests:
            log = home / "agent.log"
            said = log.read_text(encoding="utf-8", errors="replace")[-400:] if log.is_file() else ""
            said = said.replace(proxy.token, "[token]").strip()
        return captured(ctx), said
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def first_request(arm: str, agent: Any, model: str, timeout_s: float = CAPTURE_S) -> FirstRequest:
    """The arm's installed agent's first request as its proxy forwards it (see the module's docstring);
    a ``FirstRequest`` with ``problem`` (and ``fix``) when it cannot be had."""
    from agentrig.agents.installed.toolroot import check_kind_version, read_root, root_path

    assert agent.kind in INSTALLED_KINDS
    version = check_kind_version(agent.kind, agent.version)
    label = agent_label(agent.kind, version)
    where = f"arm {arm}"
    root = read_root(root_path(agent.kind, version))
    if root is None:
        return FirstRequest(arm=arm, where=where, messages=[], tools=[], tools_where=where, agent=label,
                            problem_code="AGENT_NOT_INSTALLED",
                            problem=f"{label} is not installed yet, so its real first request was not checked "
                                    "(a trial would install it first)",
                            fix=f"agentrig agents install {agent.kind}" + (f" --version {version}" if agent.version else "")
                                + ", then run the doctor again")
    started = time.monotonic()
    try:
        best, said = await _capture(agent, model, Path(root.path), root.entry, timeout_s)
    except OSError as exc:  # the agent could not be started here
        best, said = None, f"{type(exc).__name__}: {exc.strerror or exc}"
    took = time.monotonic() - started
    if best is None:
        return FirstRequest(arm=arm, where=where, messages=[], tools=[], tools_where=where, agent=label,
                            problem_code="AGENT_NOT_CHECKED",
                            problem=f"{label} sent no model request within {took:.0f} s when run on this host"
                                    + (f" (its log ends: {said[-200:]!r})" if said else ""),
                            fix="run one trial with `agentrig run --smoke` to see the agent's own log")
    messages, tools, params = best
    return FirstRequest(arm=arm, where=where, messages=messages, tools=list(tools or []), tools_where=where,
                        agent=label, tool_choice=params.get("tool_choice"),
                        parallel_tool_calls=params.get("parallel_tool_calls"))
