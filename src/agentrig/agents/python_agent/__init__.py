"""A user's own Python agent (``agent = { kind = "python", entry = "my_pkg.agent:make" }``).

``host.AgentProcess`` is the machinery of one trial whatever the benchmark (below); a benchmark's
side says what a turn carries and what a reply means: ``host.PythonAgent`` for τ² (built by
``build_agent``: the conversation in, text and tool calls out), ``bench/appworld/python_agent.py``
for AppWorld (the task and the last execution's output in, code out), ``bench/terminal/python_agent.py``
for terminal tasks (the instruction in, commands run in the sandbox over the socket). One runner
serves them all: the turn class it hands the agent (``child/agentrig_agent.py``: ``Turn``,
``AppWorldTurn``, ``TerminalTurn``) and the turn's fields come from the host.

One trial:

1. **Its proxy.** A ``TrialProxy`` (``agents/proxy``) on 127.0.0.1, role ``agent``, with the arm's
   ``step_limit`` / ``token_limit`` / ``cost_limit``: every model call of the agent goes through the
   channel (retries, recording), answered in the wire the agent speaks.
2. **Its process.** ``child/runner.py`` — standard library only, never importing agentrig — run by
   path with the agent's interpreter (``agent.python``; default: the one running agentrig), so the
   agent's dependencies never meet agentrig's. Its environment is agentrig's without any key or
   secret header agentrig knows of and without ``PYTHONPATH``; ``OPENAI_BASE_URL`` /
   ``OPENAI_API_KEY`` / ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` name the proxy and the
   trial's token. The runner imports ``agent.entry`` (``agent.path`` first on ``sys.path``, then
   ``child/`` for ``agentrig_agent``, the protocol's types) and calls
   ``make(settings, client, model)`` with a ready client.
3. **Its steps.** The protocol runs over a private socket (JSON lines, ``runner.py`` lists them),
   never the agent's stdout/stderr, which are captured (bounded) into ``agent``/``output`` events.
   τ²: per step the agent gets the new messages, answers text and/or tool calls, and may call
   tools itself meanwhile (``turn.call_tool``), which the host sends to the episode's
   ``ctx.bench.call_tool``. Before each step the proxy gets the step's transient context
   (``proxy.hints``).
4. **How it ends.** A channel fault the proxy could not ride out is raised (the trial is invalid and
   replayed); a proxy limit is the trial's ``AgentStop`` (``limits_exceeded``); an agent whose code
   raises (or whose process dies) ends the trial ``agent_error`` — valid, reward 0 — with an
   ``agent``/``error`` event holding the traceback. ``aclose()`` (the episode calls it at the trial's
   end, cancellation included) lets an idle agent run its ``close()``, then kills the process group
   and closes the proxy, each bounded.

Before the run, ``check.preflight`` starts the runner with the agent's interpreter and imports the
entry: an interpreter that cannot start or an entry that cannot be imported is a ``ConfigError``
naming ``agent.python`` / ``agent.entry`` and the fix. ``entry_sha`` (a hash of the entry's module
file) is in the run's comparability snapshot: a changed module is another agent.
"""

from .check import PYTHON_FIELDS, check_agent, check_settings, entry_sha, preflight
from .host import AgentProcess, PythonAgent

__all__ = ["PYTHON_FIELDS", "AgentProcess", "PythonAgent", "check_agent", "check_settings", "entry_sha", "preflight"]
