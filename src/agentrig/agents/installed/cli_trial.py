"""One trial's Codex CLI or Claude Code, whatever the benchmark: the binary (installed once,
``toolroot.py``), the trial's measuring proxy (``agents/proxy``) as its model, the benchmark's
``TrialToolServer`` (``agents/mcp``) as its only tools, and the conversation (``conversation.py``)
run turn by turn. The benchmark's part (τ²: ``bench/tau/cli_agent.py``, AppWorld:
``bench/appworld/cli_agent.py``) builds the tool server and the instructions and says what a turn's
text is and when the trial has ended.

    trial = CliTrial(settings, ctx)
    await trial.start(server, instructions, mcp_name="appworld", ended=lambda: session.completed)
    turn = await trial.turn(text, stop=(episode_ended,))   # an agent/turn event recorded
    trial.raise_stop()                                     # the proxy's fault or limit, the server's failure
    await trial.aclose()

- ``start``: a ``ConfigError`` when the trial has no channel; the proxy (``step_limit``,
  ``token_limit``, ``cost_limit`` at it) and the tool server started; an ``agent``/``start`` event
  (kind, version, the command line).
- The tool server's calls are wrapped: when a call ended the trial (``ended()`` is true after it,
  or it raised: the server's ``failure``), the agent's process group is killed at once, before the
  result goes back, so the agent makes no model call after the end.
- ``turn`` runs one turn, ended early by the proxy's end or one of ``stop``; the ``agent``/``turn``
  event: exit code, whether it was stopped, its session, its MCP tool calls, the errors its record
  shows, Codex's warnings (``notes``).
- ``aclose``: the proxy and the tool server stop, the agent's private home is removed.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from agentrig.agents.base import CONVERSATION_KINDS  # noqa: F401 (the kinds this module runs)

LOG_TAIL_CHARS = 1500


def check_conversation_settings(agent: Any, where: str) -> None:
    """The settings of Codex or Claude Code on a benchmark without a sandbox (τ², AppWorld): terminal's
    ``run``/``mount`` refused, a ``config_file`` that exists (each error names the field and the fix)."""
    from agentrig.errors import ConfigError

    if agent.run is not None or agent.mount is not None:
        field = "run" if agent.run is not None else "mount"
        raise ConfigError(f"{where}: agent.{field} is for terminal's kind \"command\", not {agent.kind!r}.\n"
                          f"  fix: remove `{field}`")
    if agent.config_file is not None and not Path(agent.config_file).is_file():
        raise ConfigError(f"{where}: agent.config_file {agent.config_file} not found.\n"
                          "  fix: give the file's path relative to the experiment file")


class CliTrial:
    """One trial's Codex or Claude Code, its proxy and its tool server (see the module's docstring)."""

    def __init__(self, settings: Any, ctx: Any):
        self.settings, self.ctx = settings, ctx
        self.proxy: Any = None
        self.server: Any = None
        self.convo: Any = None
        self.home: Path | None = None

    async def start(self, server: Any, instructions: str, *, mcp_name: str,
                    ended: Callable[[], bool] = lambda: False) -> None:
        from agentrig.agents.proxy import TrialProxy
        from agentrig.errors import ConfigError

        from .conversation import CliConversation
        from .toolroot import ensure_tool_root

        a, ctx = self.settings, self.ctx
        if ctx.channel is None:
            raise ConfigError(f"agent kind {a.kind!r} needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        root = await asyncio.to_thread(ensure_tool_root, a.kind, a.version)
        model = ctx.channel.role("agent").model or ""
        self.home = Path(tempfile.mkdtemp(prefix=f"agentrig-{mcp_name}-{a.kind}-"))
        self.proxy = TrialProxy(ctx, step_limit=a.step_limit, token_limit=a.token_limit, cost_limit=a.cost_limit)
        proxy_url = await self.proxy.start()
        self.server = server
        server.call = self._stopping_at_the_end(server.call, ended)
        mcp_url = await server.start()
        self.convo = CliConversation(
            a.kind, root.path / root.entry, self.home, model=model, instructions=instructions, proxy_url=proxy_url,
            proxy_token=self.proxy.token, mcp_url=mcp_url, mcp_token=server.token, config=a.config,
            config_file=a.config_file, args=a.args, mcp_name=mcp_name)
        ctx.event("agent", "start", agent=a.kind, version=root.version, command=" ".join(self.convo.argv()))

    def _stopping_at_the_end(self, call: Any, ended: Callable[[], bool]) -> Any:
        """The tool server's call, killing the agent's turn at once when the call ended the trial:
        the agent never reads that result, so it makes no model call after."""

        def stop_if_ended() -> None:
            if self.convo is not None and ended():
                self.convo.kill()

        if inspect.iscoroutinefunction(call):
            async def call_then_stop_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await call(*args, **kwargs)
                except Exception:
                    if self.convo is not None:
                        self.convo.kill()
                    raise
                finally:
                    stop_if_ended()

            return call_then_stop_async

        def call_then_stop(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except Exception:
                if self.convo is not None:
                    self.convo.kill()
                raise
            finally:
                stop_if_ended()

        return call_then_stop

    async def turn(self, text: str, stop: tuple[asyncio.Event, ...] = ()) -> Any:
        """One turn with ``text`` as the user's message; its ``agent``/``turn`` event recorded."""
        convo = self.convo
        turn = await convo.turn(text, stop=(*stop, self.proxy.ended))
        self.ctx.event("agent", "turn", agent=self.settings.kind, turn=convo.turns, session=convo.session,
                       exit_code=turn.exit_code, stopped=turn.stopped, tool_calls=turn.tool_calls,
                       failed_tool_calls=turn.failed_tool_calls[:20], errors=turn.record.errors[:20],
                       notes=turn.notes[:20], finished=turn.record.finished)
        return turn

    def raise_stop(self, *, server: bool = True) -> None:
        """Raise what ended the trial outside the agent: the proxy's channel fault (invalid) or limit
        (``AgentStop``), then (``server``) the tool server's failure (a benchmark's stop or fault)."""
        if self.proxy.failure is not None:
            raise self.proxy.failure
        if self.proxy.stop is not None:
            raise self.proxy.stop
        if server and self.server is not None and self.server.failure is not None:
            raise self.server.failure

    def log_tail(self) -> str:
        """The end of the agent's own output, its tokens masked."""
        try:
            text = self.convo.log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return ""
        for secret, shown in ((self.proxy.token, "[trial token]"), (self.server.token, "[mcp token]")):
            text = text.replace(secret, shown)
        return text

    async def aclose(self) -> None:
        """The trial's end: the proxy and the tool server stop, the agent's home goes."""
        try:
            if self.proxy is not None:
                await self.proxy.close()
            if self.server is not None:
                await self.server.close()
        finally:
            if self.home is not None:
                shutil.rmtree(self.home, ignore_errors=True)
