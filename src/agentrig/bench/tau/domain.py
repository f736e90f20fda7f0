"""The contract between the τ-bench engine and one domain (airline, retail, telecom, mock, ours).

A domain module in ``agentrig.bench.tau.domains`` exposes ``DOMAIN: DomainSpec``. The engine
(``environment.py``) builds one ``Environment`` per trial from it:

- ``agent_tools(db)`` / ``user_tools(user_db)``: Toolkit instances over that trial's own state
  (a fresh copy of the parsed db file; see ``state.py``);
- ``sync(agent, user)``: called after every tool call when both sides exist (telecom keeps the
  user's phone in step with the agent-side line records);
- tasks' ``initialization_actions`` and ``env_assertions`` call ``getattr(toolkit, func_name)``
  on the side named by ``env_type`` ("assistant" or "user"), so those functions are plain methods
  of the toolkits, tools or not;
- ``normalize_db(db)`` / ``normalize_user_db(user_db)`` (optional): bring a parsed db file into the
  shape of tau2's pydantic ``model_dump()`` (field order, defaults such as ``"status": null``,
  float fields as floats), so that tool results serialize to the same JSON text. Applied once per
  process when the file is parsed (the cached state is the normalized one) and again after a
  task's ``initialization_data`` is merged in (tau2 re-validates the model there). Must return
  the dict (it may normalize in place).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .toolkit import Toolkit


@dataclass(frozen=True)
class DomainSpec:
    name: str
    agent_toolkit: type[Toolkit]
    # file names inside domains/<name>/, first existing one wins
    db_files: tuple[str, ...]
    user_toolkit: type[Toolkit] | None = None
    user_db_files: tuple[str, ...] = ()
    # policy variants: name -> policy file names joined in order; "default" must exist
    policies: dict[str, tuple[str, ...]] | None = None
    sync: Callable[[Toolkit, Toolkit], None] | None = None
    # builds the user-side state when the domain has a user toolkit but no user db file
    default_user_db: Callable[[], dict] | None = None
    # for a domain shipped inside the package: its own directory (else the data root's domains/<name>)
    builtin_dir: Path | None = None
    normalize_db: Callable[[dict], dict] | None = None
    normalize_user_db: Callable[[dict], dict] | None = None


@dataclass
class TauTrial:
    """τ²'s own part of a trial's context (``TrialContext.bench``): the domain's spec, its data
    directory and the policy text the arm's agent reads, built by ``Tau2Benchmark.trial_context``;
    and the trial's tool ``Environment``, set by the episode (``episode.py``) when it starts, whose
    end state the judge reads (``judge.py``); and ``call_tool(name, arguments, call_id=…)``, the
    episode's ``agent_tool_call`` for an agent that runs its own tool loop (a Python agent, an MCP
    agent), also set when the episode starts, with ``ended``, the event set when such a call ended
    the trial (the step's reply is then not waited for)."""

    spec: DomainSpec
    domain_dir: Path | None = None
    policy: str = ""
    env: Any = None
    call_tool: Callable[..., Any] | None = None
    ended: Any = None  # asyncio.Event
