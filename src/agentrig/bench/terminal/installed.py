"""Agents we did not write, on terminal tasks: mini-swe-agent, Codex CLI, Claude Code, a user's command.

    [[arms]]
    agent = { kind = "codex" }                       # or "mini-swe-agent", "claude-code"
    agent = { kind = "command", run = "python3 {tool}/my_agent.py {instruction}", mount = "my_agent/" }

One trial of such an agent (``InstalledAgent.run``, the agent phase of ``episode.play_trial``):

1. **Its tool root.** mini-swe-agent, Codex and Claude Code are installed once per kind and version
   into a cached tool root (``agents/installed/toolroot.py``; ``agentrig agents install``), bound
   read-only at ``TOOL_MOUNT`` — the task's image is not changed. A ``command`` agent's ``mount``
   directory (its code) is bound there instead.
2. **Its proxy.** A ``TrialProxy`` (``agents/proxy``) serves the trial on a port opened inside the
   sandbox's own network namespace (``sandbox/netsocket.py``): the agent reaches it at
   ``127.0.0.1:PORT`` and, with the task's network off, nothing else. The agent's environment names
   it — ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY`` (the
   trial's own token, refused by every other trial and after this one), ``AGENTRIG_MODEL`` — and
   never the real key: that stays in agentrig's channel, outside the sandbox.
3. **Its run.** ``bash -c`` the agent's command line in the sandbox (``Sandbox.run_agent``), from the
   task's working directory, its own record written to its home (``HOME_MOUNT``, a host directory
   of the trial bound writable): mini's trajectory file, Codex's ``--json`` events, Claude Code's
   ``stream-json``; its other output in ``agent.log``. It ends by itself (exit 0: ``submitted``;
   else ``never_submitted``, with an ``agent``/``exit`` event), at the task's agent timeout
   (``agent_timeout``; its whole process tree is killed), or when the proxy ends it: a limit
   (``step_limit`` calls, ``token_limit``, ``cost_limit``: ``limits_exceeded``) or a channel fault
   the channel could not ride out (the fault is raised: the trial is *invalid* and replayed).
4. **Its plug-ins.** With plug-ins on the arm, the proxy asks them before each model call
   (``TrialProxy(before_call=…)``): ``session.transient(n)``, ``n`` the calls sent before it — the
   bash agent's step numbering — and their context goes into that call only. What they read of
   the trajectory meanwhile is the conversation as the proxy has seen it
   (``records.LiveConversation``: the instruction, the replies, the results the agent sent back),
   one call at a time.
5. **Its trajectory.** The agent's record is read into the trial's conversation, aligned with the
   proxy's calls (``agents/installed/records.py``; the live conversation is replaced by it):
   ``analyze``, the report, ``instability`` and the exports read it as they read the bash agent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.agents.installed.cli_config import codex_config, toml_value
from agentrig.agents.installed.records import RECORD_FILES  # each agent's record, one table for the writer and the reader
from agentrig.errors import ConfigError

INSTALLED_KINDS = ("mini-swe-agent", "codex", "claude-code")
EXTERNAL_KINDS = (*INSTALLED_KINDS, "command")
TOOL_MOUNT = "/run/agentrig/tool"  # the agent's tool root (or a command agent's mount), read-only
HOME_MOUNT = "/run/agentrig/home"  # the agent's home: its config and its record, writable
LOG_TAIL_CHARS = 2000  # the end of agent.log kept in the agent/exit event

# the flags that keep each CLI headless, unattended and off the network but for the proxy
CODEX_FLAGS = ["exec", "--json", "--ephemeral", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
               "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
               "-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false"]
CLAUDE_FLAGS = ["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
CLAUDE_ENV = {"IS_SANDBOX": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
MINI_ENV = {"MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def check_settings(agent: AgentSettings, where: str) -> None:
    """The arm's agent settings, checked when the experiment loads (each error names the field)."""
    if agent.kind == "command":
        if not (agent.run or "").strip():
            raise ConfigError(f"{where}: agent kind \"command\" needs `run`, the command that starts your agent.\n"
                              "  fix: e.g. agent = { kind = \"command\", run = \"python3 {tool}/agent.py {instruction}\", "
                              "mount = \"my_agent\" }")
        if agent.version is not None:
            raise ConfigError(f"{where}: agent.version is for installed agents ({', '.join(INSTALLED_KINDS)}), "
                              "not kind \"command\".\n  fix: remove `version`")
        if agent.mount is not None and not Path(agent.mount).is_dir():
            raise ConfigError(f"{where}: agent.mount {agent.mount} is not a directory.\n"
                              "  fix: give the directory of your agent's code (relative to the experiment file)")
    elif agent.run is not None or agent.mount is not None:
        field = "run" if agent.run is not None else "mount"
        raise ConfigError(f"{where}: agent.{field} is for kind \"command\", not {agent.kind!r}.\n  fix: remove `{field}`")
    if agent.config_file is not None and not Path(agent.config_file).is_file():
        raise ConfigError(f"{where}: agent.config_file {agent.config_file} not found.\n"
                          "  fix: give the file's path relative to the experiment file")


class Expand(str):
    """A word of the command line in which the shell expands ``$VARIABLE`` (double-quoted)."""


def _word(word: str) -> str:
    if isinstance(word, Expand):
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
    return shlex.quote(word)


def command_line(agent: AgentSettings, entry: str | None, record: str | None) -> str:
    """The ``bash -c`` line that starts the agent from the task's working directory. The task's
    instruction, the model and the proxy's address come from the environment
    (``AGENTRIG_INSTRUCTION``, ``AGENTRIG_MODEL``, ``OPENAI_BASE_URL``), never spliced into the
    line; the user's own settings are quoted as they are."""
    home, extra = HOME_MOUNT, [*agent.args]
    argv: list[str]
    if agent.kind == "mini-swe-agent":
        cfg = f"{home}/mini-config.yaml" if agent.config_file else "mini.yaml"
        argv = [str(entry), "-m", Expand("openai/$AGENTRIG_MODEL"), "-t", Expand("$AGENTRIG_INSTRUCTION"), "--yolo",
                "--exit-immediately", "-l", "0", "-c", cfg, "-c", Expand("model.model_kwargs.api_base=$OPENAI_BASE_URL")]
        for key, value in agent.config.items():
            argv += ["-c", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
        argv += ["-o", f"{home}/{record}", *extra]
        out = f"> {home}/agent.log 2>&1"
    elif agent.kind == "codex":
        argv = [str(entry), *CODEX_FLAGS]
        for key, value in agent.config.items():
            argv += ["-c", f"{key}={toml_value(value)}"]
        argv += [*extra, Expand("$AGENTRIG_INSTRUCTION")]
        out = f"> {home}/{record} 2> {home}/agent.log"
    elif agent.kind == "claude-code":
        argv = [str(entry), "-p", Expand("$AGENTRIG_INSTRUCTION"), *CLAUDE_FLAGS, "--model", Expand("$AGENTRIG_MODEL"), *extra]
        out = f"> {home}/{record} 2> {home}/agent.log"
    else:  # command: the user's own line, its placeholders filled
        line = (agent.run or "").replace("{instruction}", '"$AGENTRIG_INSTRUCTION"').replace("{tool}", TOOL_MOUNT) \
            .replace("{home}", HOME_MOUNT).replace("{model}", '"$AGENTRIG_MODEL"')
        return f"{line} > {home}/agent.log 2>&1"
    return "exec " + " ".join(_word(w) for w in argv) + " " + out


class InstalledAgent:
    """The agent phase of one trial of an agent we did not write (see the module docstring)."""

    def __init__(self, settings: AgentSettings, session: Any) -> None:
        self.settings = settings
        self.session = session

    async def _tool_root(self) -> tuple[Path | None, str | None]:
        kind = self.settings.kind
        if kind == "command":
            return (Path(self.settings.mount).resolve() if self.settings.mount else None), None
        from agentrig.agents.installed.toolroot import ensure_tool_root

        root = await asyncio.to_thread(ensure_tool_root, kind, self.settings.version)
        return Path(root.path), f"{TOOL_MOUNT}/{root.entry}"

    def write_home(self, home: Path, model: str, base_url: str) -> dict[str, str]:
        """The agent's config files in its home; returns the environment naming them."""
        a = self.settings
        env: dict[str, str] = {}
        if a.kind == "mini-swe-agent":
            (home / "mini").mkdir()
            env.update(MINI_ENV, MSWEA_GLOBAL_CONFIG_DIR=f"{HOME_MOUNT}/mini")
            if a.config_file:
                shutil.copyfile(a.config_file, home / "mini-config.yaml")
        elif a.kind == "codex":
            (home / "codex").mkdir()
            extra = Path(a.config_file).read_text(encoding="utf-8") if a.config_file else ""
            (home / "codex" / "config.toml").write_text(codex_config(model, f"{base_url}/v1", extra), encoding="utf-8")
            env["CODEX_HOME"] = f"{HOME_MOUNT}/codex"
        elif a.kind == "claude-code":
            (home / "claude").mkdir()
            settings: dict[str, Any] = json.loads(Path(a.config_file).read_text(encoding="utf-8")) if a.config_file else {}
            settings.update(a.config)
            if settings:
                (home / "claude" / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
            env.update(CLAUDE_ENV, CLAUDE_CONFIG_DIR=f"{HOME_MOUNT}/claude")
        for sub in home.iterdir():
            if sub.is_dir():
                sub.chmod(0o777)
        return env

    async def run(self, session: Any) -> None:
        from agentrig.agents.installed.records import LiveConversation, apply_record
        from agentrig.agents.proxy import TrialProxy

        from .sandbox.netsocket import listen_inside

        ctx, box, a = session.ctx, session.sandbox, self.settings
        if not hasattr(box, "run_agent"):
            raise ConfigError(f"agent kind {a.kind!r} runs inside the task's sandbox, which [sandbox] kind = "
                              f"{box.kind!r} cannot hold.\n  fix: use [sandbox] kind = \"bwrap\", \"podman\" or \"docker\"")
        if ctx.channel is None:
            raise ConfigError(f"agent kind {a.kind!r} needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        tool, entry = await self._tool_root()
        model = ctx.channel.role("agent").model or ""
        base_dir = Path(getattr(box, "trial_dir", None) or tempfile.gettempdir())
        home = Path(tempfile.mkdtemp(prefix="agentrig-agent-home-", dir=base_dir if base_dir.is_dir() else None))
        home.chmod(0o777)  # the image's user may not be root (a container's USER): the agent writes its record here
        live = LiveConversation(ctx, a.kind) if getattr(session, "plugins", None) else None
        proxy = TrialProxy(ctx, step_limit=a.step_limit, token_limit=a.token_limit, cost_limit=a.cost_limit,
                           deadline=session.deadline)
        if live is not None:
            proxy.before_call = self._plugins_hook(session, proxy, live)
        try:
            sock = await listen_inside(getattr(box, "init_pid", None))
            base_url = await proxy.start(sock)
            env = {"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": proxy.token,
                   "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": proxy.token,
                   "AGENTRIG_MODEL": model, "AGENTRIG_INSTRUCTION": session.task.instruction,
                   "AGENTRIG_HOME": HOME_MOUNT, **self.write_home(home, model, base_url)}
            line = command_line(a, entry, RECORD_FILES.get(a.kind))
            ro = {str(tool): TOOL_MOUNT} if tool is not None else {}
            ctx.event("agent", "start", agent=a.kind, version=self._version(), command=line[:2000])
            result = None
            try:
                result = await self._run_until_ended(box, proxy, line, env, ro, {str(home): HOME_MOUNT})
            finally:
                await proxy.close()
                if live is not None:
                    live.clear()
                try:
                    apply_record(ctx, a.kind, home, [(r.call, r.message) for r in proxy.replies])
                except Exception as exc:  # noqa: BLE001 - the trial stands on the proxy's calls alone
                    ctx.event("agent", "record_unreadable", file=str(RECORD_FILES.get(a.kind, "")),
                              problem=f"{type(exc).__name__}: {exc}"[:500])
            if proxy.failure is not None:
                raise proxy.failure
            if proxy.stop is not None:
                raise proxy.stop
            assert result is not None
            tail = _tail(home / "agent.log", proxy.token)
            ctx.event("agent", "exit", exit_code=result.exit_code, log_tail=tail)
            if result.exit_code == 0:  # it ended by itself: its submission (the record's, else its last text)
                submitted = next((e.data.get("submission") for e in ctx.trajectory.events
                                  if e.plugin == "agent" and e.kind == "submit"), None)
                if submitted is None:
                    final = next((r.message.content for r in reversed(proxy.replies) if r.message.content), "")
                    session.submit(final or "")
                else:
                    session.submitted, session.submission = True, submitted
        finally:
            await proxy.close()
            shutil.rmtree(home, ignore_errors=True)

    @staticmethod
    def _plugins_hook(session: Any, proxy: Any, live: Any) -> Any:
        """The proxy's ``before_call``: the conversation so far into the trajectory, then the arm's
        plug-ins asked for this call's context — one call at a time (a plug-in's state is one
        trial's sequence of steps; an agent's calls in parallel are asked in the order they came)."""
        lock = asyncio.Lock()

        async def before_call(n: int, request: list[dict]) -> list[Any]:
            async with lock:
                live.catch_up([(r.call, r.message) for r in proxy.replies], request)
                return list(await session.transient(n))

        return before_call

    def _version(self) -> str | None:
        if self.settings.kind == "command":
            return None
        from agentrig.agents.installed.toolroot import DEFAULT_VERSIONS

        return self.settings.version or DEFAULT_VERSIONS.get(self.settings.kind)

    async def _run_until_ended(self, box: Any, proxy: Any, line: str, env: dict[str, str],
                               ro: dict[str, str], rw: dict[str, str]) -> Any:
        """Run the agent until it ends by itself or the proxy ends it (a limit, a channel fault);
        the agent's process tree is killed in the second case and when the phase is cancelled."""
        timeout = max(self.session.remaining(), 0.001)
        agent = asyncio.ensure_future(box.run_agent(line, timeout, env, ro, rw))
        ended = asyncio.ensure_future(proxy.ended.wait())
        try:
            await asyncio.wait({agent, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not agent.done():
                agent.cancel()
                with contextlib.suppress(BaseException):
                    await agent
        if agent.cancelled():
            return None
        result = agent.result()
        if result.timed_out and proxy.failure is None and proxy.stop is None:
            raise AgentStop("agent_timeout", "the agent was still running when the agent timeout was reached")
        return result


def _tail(path: Path, token: str) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-LOG_TAIL_CHARS:].replace(token, "[trial token]")
