"""An OpenAI-compatible endpoint that plays each synthetic AppWorld task's code, as the code agent.

The AppWorld counterpart of the solution endpoint: point an AppWorld arm (``agent.kind = "llm"``)
at it and each trial runs its task's scripted play, one block of code per reply::

    async with AppWorldEndpoint(root) as ep:    # root: what bench/appworld/synthetic.build made
        ...  # [roles.agent] base_url = ep.base_url, model = "appworld-solution"

    python -m agentrig.bench.appworld.scripted.appworld_endpoint --root DIR --port 8732 --no-auth

Answers come from the request alone (no state between requests: a retried request gets the same
answer). The task is named by the ``X-Agentrig-Task`` header; its play is read from
``root/synthetic.json``:

- the model ``appworld-solution`` (or ``variant="solution"``, the default for other model names):
  the task's solution steps (log in, act, complete), one step a reply; ``appworld-wrong_answer`` /
  ``appworld-collateral``: that wrong play (a wrong answer or end state; a change the task did
  not ask for), as one step;
- the steps already played are counted in the conversation: ``execute`` tool calls (native mode,
  the request offers tools) or assistant replies holding exactly one ``python`` block (text mode,
  parsed as the code agent parses them);
- after the last step every later request gets ``apis.supervisor.complete_task()`` (a call of the
  ``complete_task`` tool when the request offers one: Codex's, Claude Code's MCP tools);
- a tool is called by the name the request offers it under: ``execute`` itself, else the one offered
  tool ending in ``__execute`` / ``.execute`` (an MCP client's prefix: ``mcp__appworld__execute``;
  ``offered_name``), and the steps played are counted under either name;
- role ``memory`` (the memory plug-in) gets the gold endpoint's memory replies, the task's first
  step (its label and first line of code) as the note;
- role ``doctor`` (``agentrig doctor``'s probes) is answered as by any server that calls tools; any
  other role, a request without ``X-Agentrig-Task`` or an unknown task is an HTTP 400 saying so
  (``_scripted``, shared with the gold and solution endpoints).

**Noisy mode** (``noise=Noise(...)``, see ``_noise``): at a chosen step (0-based index of the
solution step about to be played) a request sampled with ``temperature`` > 0 gets, with
probability ``p``, ``NOISE_CODE`` instead (it counts as played: the step's code is skipped, and
the task fails). Keys: ``appworld/<id>``, ``<id>`` or ``*``. A system message holding
``<<do:LABEL>>`` (LABEL the step's label: ``login``, ``create_note``, ``search_notes``,
``delete_note``, ``complete_task``) makes that step play its code whatever the draw.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from agentrig.testing._noise import Noise, obeys
from agentrig.testing._scripted import (GoldRequestError, ScriptedResponder, actions_played, header_form, memory_reply,
                                        offered_name)
from agentrig.testing.fake_endpoint import FakeEndpoint

VARIANTS = ("solution", "wrong_answer", "collateral")
APPWORLD_MODELS = tuple(f"appworld-{v}" for v in VARIANTS)  # the model names the variant it plays
NOISE_CODE = "print('not sure yet; looking around')\n"
COMPLETE_CODE = "apis.supervisor.complete_task()\n"
GROUP = "appworld"
TOOL_NAME = "execute"
COMPLETE_TOOL = "complete_task"  # the MCP tool server's (bench/appworld/mcp.py), offered to Codex / Claude Code


class _FirstStep:
    """What the gold endpoint's memory replies need of a script: its first step, as text."""

    def __init__(self, steps: list[tuple[str, str]]):
        self.steps = steps

    def first_step_text(self) -> str:
        label, code = self.steps[0]
        return f"{label}: {code.strip().splitlines()[0][:200]}"


class AppWorldResponder(ScriptedResponder):
    name = "AppWorld endpoint"

    def __init__(self, root: str | Path, *, variant: str = "solution", noise: Noise | None = None):
        if variant not in VARIANTS:
            raise ValueError(f"variant {variant!r}: use one of {', '.join(VARIANTS)}")
        self.root, self.variant, self.noise = Path(root), variant, noise
        self._tasks: dict[str, dict] | None = None
        self._lock = threading.Lock()

    def tasks(self) -> dict[str, dict]:
        with self._lock:
            if self._tasks is None:
                data = json.loads((self.root / "synthetic.json").read_text(encoding="utf-8"))
                self._tasks = {header_form(k): {**v, "id": k} for k, v in data["tasks"].items()}
            return self._tasks

    def steps(self, task: dict, model: str | None = None) -> list[tuple[str, str]]:
        variant = model[len("appworld-"):] if model in APPWORLD_MODELS else self.variant
        if variant == "solution":
            return [(label, code) for label, code in task["steps"]]
        return [(variant, task[variant])]

    @staticmethod
    def played(messages: list[dict], native: bool) -> int:
        from ..agent import parse_code

        return actions_played(messages, native, TOOL_NAME, lambda text: parse_code(text)[0] is not None)

    def play(self, role: str, body: dict, headers: Any) -> dict:
        task_id = headers["X-Agentrig-Task"]
        task = self.tasks().get(task_id)
        if task is None:
            raise GoldRequestError(f"unknown task {str(task_id)[:120]!r} (X-Agentrig-Task) in {self.root}/synthetic.json")
        steps = self.steps(task, body.get("model"))
        if role == "memory":
            return memory_reply(_FirstStep(steps), body)
        messages = body.get("messages") or []
        native = bool(body.get("tools"))
        n = self.played(messages, native)
        label, code = steps[n] if n < len(steps) else ("complete_task", COMPLETE_CODE)
        if self.noise is not None and n < len(steps) and self.noise.wrong(body, GROUP, task["id"], n) \
                and not obeys(messages, label):
            code = NOISE_CODE
        thought = f"Step {n + 1}: {label}."
        if native:
            complete = offered_name(COMPLETE_TOOL, body)
            if n >= len(steps) and (complete != COMPLETE_TOOL or _offers(body, COMPLETE_TOOL)):  # an MCP agent's tool
                return {"content": thought, "tool_calls": [{"id": f"aw_{n + 1}", "name": complete, "arguments": {}}]}
            return {"content": thought, "tool_calls": [{"id": f"aw_{n + 1}", "name": offered_name(TOOL_NAME, body),
                                                        "arguments": {"code": code}}]}
        return {"content": f"{thought}\n\n```python\n{code.rstrip()}\n```"}


def _offers(body: dict, name: str) -> bool:
    return any(((t or {}).get("function") or {}).get("name") == name or (t or {}).get("name") == name
               for t in body.get("tools") or () if isinstance(t, dict))


class AppWorldEndpoint(FakeEndpoint):
    """A FakeEndpoint whose replies play each synthetic AppWorld task (see the module docstring)."""

    def __init__(self, root: str | Path, *, variant: str = "solution", noise: Noise | None = None,
                 models: tuple[str, ...] = APPWORLD_MODELS, **kwargs: Any):
        self.scripts = AppWorldResponder(root, variant=variant, noise=noise)
        super().__init__(models=models, responder=self.scripts, **kwargs)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from agentrig.testing.fake_endpoint import add_server_arguments, serve_main

    ap = argparse.ArgumentParser(prog="python -m agentrig.bench.appworld.scripted.appworld_endpoint",
                                 description="Serve the plays of the synthetic AppWorld tasks (`agentrig appworld "
                                             "synthetic DIR` makes them), as an AppWorld agent's model, until "
                                             "SIGTERM/SIGINT.")
    ap.add_argument("--root", metavar="DIR", required=True, help="the synthetic data's root (holds synthetic.json)")
    ap.add_argument("--variant", choices=VARIANTS, default="solution",
                    help="what a model name other than appworld-<variant> plays")
    add_server_arguments(ap, ",".join(APPWORLD_MODELS))

    def make(args: Any, settings: dict[str, Any]) -> AppWorldEndpoint:
        if not (Path(args.root) / "synthetic.json").is_file():
            raise ValueError(f"--root {args.root}: no synthetic.json there; make it with `agentrig appworld synthetic DIR`")
        return AppWorldEndpoint(args.root, variant=args.variant, **settings)

    return serve_main(ap, argv, make)


if __name__ == "__main__":
    raise SystemExit(main())
