"""The measuring proxy: one trial's local endpoint for an agent we did not write (an installed CLI
such as mini-swe-agent, Codex or Claude Code, or a user's own command).

    proxy = TrialProxy(ctx, step_limit=50, token_limit=None, cost_limit=2.0, deadline=time.monotonic() + 900)
    base_url = await proxy.start(sock)      # sock: a listening socket bound where the agent runs, or None
    ... the agent runs with base_url and proxy.token (never the real key) ...
    await proxy.ended.wait() or the agent exits; then proxy.failure / proxy.stop; await proxy.close()

What it serves (each route with and without ``/v1``; Anthropic's ``?beta=true`` accepted; the token
in ``Authorization: Bearer`` or ``x-api-key``, any other is a 401 in the wire's error shape):
``POST /chat/completions`` (OpenAI Chat Completions), ``POST /responses`` (OpenAI Responses),
``POST /messages`` (Anthropic Messages), each streamed (server-sent events, as those servers send
them) when the body asks ``"stream": true``, else plain JSON; ``POST /messages/count_tokens`` (an
estimate: four characters a token); ``GET /models`` and ``GET /models/{id}`` (the role's model, in
OpenAI's shape, or Anthropic's when asked with an ``anthropic-version`` header).

Every request is translated into the channel's own terms (``inbound.py``) and sent with
``ctx.complete(role, …, purpose="agent")``: the channel's retries, Retry-After, concurrency bound,
breaker, outage ride-through and timeouts apply, and the trial records the ``ModelCall`` (usage,
latency, attempts) and the ``AgentRequest`` (what ``agentrig instability`` re-sends). The upstream
call is not streamed: the whole reply comes first (so a fault the channel rides out never reaches
the agent), then the agent gets it in its wire (``openai_out.py``, ``anthropic_out.py``), streamed
when it asked.

What is NOT forwarded: the agent's own sampling settings (``temperature``, ``max_tokens``,
``top_p``, ``reasoning``…) — the role's settings rule, as for the built-in agents — and its
``model``: the reply names the role's model. Built-in tools of the agent's API that a model
endpoint cannot run (Responses' ``web_search``, ``local_shell``…; Anthropic's server tools) are
left out and recorded once as a ``proxy``/``tools_left_out`` event. A Responses tool of type
``namespace`` (how Codex offers an MCP server's tools, e.g. ``mcp__tau``) reaches the model as one
function per member, named ``<namespace>__<name>``; the model's call of one goes back to the agent
with its ``namespace`` and ``name``, as Codex expects it.

What it adds: ``proxy.hints`` (a list of ``Transient``, empty by default), the arm's plug-ins'
context for the current agent step (the memory plug-in's reminder, consistency guidelines). The
agent's host sets it before each agent step (``proxy.hints = transient``) and clears it; while it
is set, every request the proxy sends gets it after translation, as agentrig's own agents add it
(``agents/transients.py``: ``system`` hints as one system message at the end, ``user_append`` ones
appended to the last user message). The agent's own messages and what it gets back are unchanged;
the recorded ``AgentRequest`` holds the request as sent, hints included, and each answered call
that carried hints gets a ``proxy``/``hints`` event (``call``, the hints' ``sources`` and
``placements``) beside the plug-in's own events. An agent that runs as one process with no step
of ours between its calls (a terminal installed agent) gets them per call instead:
``TrialProxy(..., before_call=hook)`` awaits ``hook(n, messages)`` before each call it sends —
``n`` the calls sent before it (for an agent that waits for each answer, the calls answered so
far), ``messages`` the agent's request as translated, before hints — and adds what it returns
after ``hints``. A hook that raises ends the trial as a channel fault does (``proxy.failure``, a
``proxy``/``before_call_failed`` event), without a model call.

How a trial ends here: a fault the channel could not ride out (``RetriesExhausted``, a
``FatalChannelError``: auth, unknown model, ``EndpointDown``, context overflow; a
``PromptTruncated``) is answered 503/502 in the wire's error shape (naming only the diagnosis code),
kept in ``proxy.failure`` (the first one, also when a limit was reached before it) and
``proxy.ended`` is set: the caller stops the agent and
raises it, so the trial is invalid and replayed. Before each call the limits are checked —
``step_limit`` calls, ``token_limit`` tokens (prompt + completion of the answered calls),
``cost_limit`` USD (the channel's price table; a model without a price turns it off, noted once),
``deadline`` (``time.monotonic()``) — and past one the agent gets what a server answers at a
spending limit (429 ``insufficient_quota``; Anthropic: 400 with "usage limits"), ``proxy.stop`` is
the ``AgentStop`` (``limits_exceeded``, or ``agent_timeout`` for the deadline) and ``proxy.ended`` is
set. Every later request gets the same answer without a model call.

``proxy.replies`` lists the answered calls (``ProxyReply``: the ``ModelCall`` index, the wire, the
message, the tool-call ids the agent got), to align the agent's own record with the calls.
"""

from .server import ProxyReply, TrialProxy

__all__ = ["ProxyReply", "TrialProxy"]
