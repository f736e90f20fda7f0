"""The seam between the episode and an agent under test (and the reference agents).

An agent is built once per trial by ``agentrig.agents.build_agent(settings, ctx)`` and then:

- ``start(history)`` once, with the messages it already "said and saw" (τ²-bench's
  ``get_init_state``): normally just its own greeting ``Hi! How can I help you today?``; for a
  task with a ``message_history``, the agent-side messages of that history;
- ``respond(incoming, transient)`` per agent step: ``incoming`` are the messages addressed to it
  since its last step (one user message, or the tool results of its own calls, in call order);
  ``transient`` is context a plug-in adds to THIS call only (never kept in the agent's history).
  It returns one ``assistant`` ``Message`` with text or tool calls (the episode sets ``turn``/``t``).

An agent that cannot produce a message because the channel failed lets the ``ChannelError``
propagate (the episode marks the trial invalid). Model calls go through ``ctx.complete`` so that
they are recorded in the trajectory.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import Field

from agentrig.errors import AgentStop  # noqa: F401 (re-exported: agents raise it from here)
from agentrig.types import Message, Strict, Transient

GREETING = "Hi! How can I help you today?"
# the installed agents that also play a τ² or AppWorld trial (a conversation: agents/installed/cli_trial.py)
CONVERSATION_KINDS = ("codex", "claude-code")


class AgentSettings(Strict):
    """The ``agent`` part of an ``[[arms]]`` table."""

    # which agent plays: each benchmark names the kinds it accepts (``Benchmark.agent_kinds``, checked
    # when the experiment loads) — τ²: llm, gold, flaky-gold, noop, python (your own Python agent:
    # agents/python_agent/), codex, claude-code (bench/tau/cli_agent.py); terminal: bash (the LLM bash
    # agent), oracle (plays the task's solution), flaky-oracle (skips one solution step with
    # probability drop_p), noop; AppWorld: llm, oracle, noop, python, codex, claude-code
    # (bench/appworld/cli_agent.py)
    kind: str = Field("llm", min_length=1)
    # llm: how tools are offered. native = OpenAI function calling; text = described in the
    # prompt, one JSON action per reply
    tool_mode: Literal["native", "text"] = "native"
    parallel_tool_calls: bool = False
    # prompt variant: "default" (ours) or a path to a text file with the system prompt's preamble
    prompt: str = "default"
    # policy variant of the domain (telecom: default / workflow)
    policy: str = "default"
    # text mode: consecutive unusable replies before the trial ends (too_many_format_errors)
    max_format_errors: int = Field(3, ge=1)
    # send reasoning content back to the endpoint with the assistant messages it came with
    send_reasoning: bool = True
    # flaky-gold: probability of dropping one gold write action (else the communicated info);
    # flaky-oracle: probability of skipping one step of the task's solution
    drop_p: float = Field(0.0, ge=0.0, le=1.0)
    # bash agent (terminal tasks; see agents/bash.py). Limits of one trial's agent phase:
    # model calls (None: unbounded; the run's max_steps bounds the commands), USD from the price
    # table (a model without a price: the cost limit is off, token_limit still applies), total
    # tokens (prompt + completion)
    step_limit: int | None = Field(None, ge=1)
    cost_limit: float | None = Field(None, gt=0)
    token_limit: int | None = Field(None, ge=1)
    # the model's context window in tokens (None: learned from the endpoint's context-overflow
    # error); old observations are elided to fit, keeping elided_keep_chars (head + tail) of each
    context_tokens: int | None = Field(None, ge=256)
    elided_keep_chars: int = Field(600, ge=0)
    # agents we did not write (terminal: kind mini-swe-agent, codex, claude-code — installed once
    # into a cached tool root — and command, a user's own program; τ²: codex, claude-code;
    # docs/agents.md). Each talks to the trial's measuring proxy; step_limit, cost_limit and
    # token_limit are enforced there.
    version: str | None = None  # the agent package's version (None: agentrig's pinned default)
    run: str | None = None  # kind command: the shell command, {instruction} replaced by the task's (quoted)
    config: dict[str, Any] = {}  # the agent's own settings: mini/codex `-c key=value` each; claude-code: settings.json keys
    config_file: str | None = None  # mini: its YAML config (default mini.yaml); codex: config.toml lines; claude-code: settings.json
    args: list[str] = []  # extra flags for the agent's command line
    mount: str | None = None  # kind command: your agent's directory, bound read-only at /run/agentrig/tool ({tool} in run)
    # kind python (τ², AppWorld; agents/python_agent/, docs/agents.md "Bring a Python agent"): your agent, run
    # in its own interpreter, one process per trial, its model calls through the trial's proxy
    entry: str | None = None  # "package.module:function", the factory make(settings, client, model)
    settings: dict[str, Any] = {}  # the agent's own settings, handed to make() as they are
    python: str | None = None  # its interpreter (a venv's bin/python); None: the one running agentrig
    path: list[str] = []  # directories put first on its import path (relative to the experiment file)
    # the ready client make() gets: "auto" = openai.OpenAI if the agent's interpreter has openai, else
    # anthropic.Anthropic if it has anthropic, else None; "openai" / "anthropic" / "none" to choose
    client: Literal["auto", "openai", "anthropic", "none"] = "auto"


class Agent(Protocol):
    async def start(self, history: list[Message]) -> None: ...

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message: ...
