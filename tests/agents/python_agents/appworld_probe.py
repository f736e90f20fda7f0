"""A test agent for kind "python" on AppWorld tasks (imported by the runner in the agent's own
process, never by pytest).

``make`` wraps the AppWorld example agent (examples/python_agents/appworld_agent.py, on the agent's
path too) and, as the settings say: prints its environment once (``dump_env``), prints what each
turn carried as a ``TURN {json}`` line (``show_turns``), raises in a step (``raise_at``), stops by
returning None (``stop_at``) or replies with tool calls (``tool_calls_at``).
"""

from __future__ import annotations

import json
import os

import appworld_agent


class Probe:
    def __init__(self, inner, settings):
        self.inner = inner
        self.settings = settings

    def respond(self, turn):
        s = self.settings
        if s.get("show_turns"):
            print("TURN " + json.dumps({
                "step": turn.step, "task_id": turn.task.id, "instruction": turn.task.instruction,
                "supervisor": turn.task.supervisor, "datetime": turn.task.datetime, "prompt": turn.prompt,
                "guide": turn.guide, "output": turn.output, "failed": turn.failed, "messages": turn.messages,
                "new": turn.new, "model": turn.model}), flush=True)
        if turn.step == s.get("raise_at"):
            raise ValueError(f"probe failure at step {turn.step}")
        if turn.step == s.get("stop_at"):
            return None
        if turn.step == s.get("tool_calls_at"):
            return {"tool_calls": [{"name": "execute", "arguments": {"code": "print(1)"}}]}
        return self.inner.respond(turn)


def make(settings, client, model):
    if settings.get("dump_env"):
        print("ENV " + json.dumps(dict(os.environ)), flush=True)
    return Probe(appworld_agent.make(settings.get("inner") or {}, client, model), settings)
