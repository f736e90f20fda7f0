"""Test agents for kind "python" (imported by the runner in the agent's own process, never by pytest).

``make`` wraps the plain-openai example agent (examples/python_agents/openai_agent.py, on the agent's
path too) and, as the settings say: prints its environment (``dump_env``), prints a line to stdout
and stderr each step (``chatter``), raises in a step (``raise_at``), exits its process
(``exit_at``), hangs (``hang_at``), returns something that is not a reply (``bad_reply_at``),
raises in ``make`` itself (``raise_in_make``), or prints what its process is (``report_process``: its
pid and parent, a draw of ``random``, and the base URL the module saw when it was imported).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

import openai_agent

IMPORTED_WITH = os.environ.get("OPENAI_BASE_URL")  # module-level code: run in each trial's process


class Probe:
    def __init__(self, inner, settings):
        self.inner = inner
        self.settings = settings

    def respond(self, turn):
        s = self.settings
        if s.get("chatter"):
            print(f"step {turn.step}: {len(turn.messages)} messages, {len(turn.new)} new")
            print(f"step {turn.step} on stderr", file=sys.stderr)
        if turn.step == s.get("raise_at"):
            raise ValueError(f"probe failure at step {turn.step}")
        if turn.step == s.get("exit_at"):
            sys.stderr.write("probe: leaving now\n")
            sys.stderr.flush()
            os._exit(3)
        if turn.step == s.get("hang_at"):
            print(f"pid {os.getpid()} hanging", flush=True)
            time.sleep(3600)
        if turn.step == s.get("bad_reply_at"):
            return 42
        return self.inner.respond(turn)


def make(settings, client, model):
    if settings.get("raise_in_make"):
        raise RuntimeError("probe cannot be made")
    if settings.get("dump_env"):
        print("ENV " + json.dumps(dict(os.environ)), flush=True)
    if settings.get("report_process"):
        print("PROC " + json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "random": random.random(),
                                    "imported_with": IMPORTED_WITH, "base_url": os.environ.get("OPENAI_BASE_URL"),
                                    "openai_loaded": "openai" in sys.modules}), flush=True)
    return Probe(openai_agent.make(settings.get("inner") or {}, client, model), settings)
