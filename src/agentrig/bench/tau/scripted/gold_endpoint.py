"""An OpenAI-compatible endpoint that plays the GOLD conversation of every τ²-bench task.

It answers the agent, the user simulator and the NL judge of a trial, all from the request
alone (no state between requests, so a retried request gets the same answer)::

    async with GoldEndpoint(data_root) as gold:
        ...  # point every role of an experiment at gold.base_url (model "gold")

    # or in its own process: python -m agentrig.bench.tau.scripted.gold_endpoint --data ROOT

Which trial a request belongs to comes from the headers agentrig's channel sends
(``X-Agentrig-Domain``, ``X-Agentrig-Task``, ``X-Agentrig-Role``); the task from the data root
(parsed once per domain, then a small script per task is kept).

Another harness (tau2-bench itself: ``--agent-llm openai/gold-agent --user-llm openai/gold-user``)
sends no such headers: a request without ``X-Agentrig-Role`` whose model is ``gold-agent``,
``gold-user`` or ``gold-judge`` plays that role, its task recognised from the request
(``GoldResponder.recognise``; needs ``--data``): the user's by the scenario texts its system prompt
holds, the agent's by the gold user's opening among its user messages. Tasks that play the same
(airline 15 and 16) count as one; other ties (telecom's shared openings) are a 400 that says so.

The script of a task is its gold actions in order, cut into *steps*: each assistant action is one
step (one tool call), each run of consecutive user actions (requestor "user": telecom's device
actions, mock's inbox actions) one step ("please do this on your phone"), and one closing step
that states every ``communicate_info`` string verbatim (put just before a
``transfer_to_human_agents`` action; left out there when the task has nothing to communicate).

- role ``agent``: counts its own tool calls and text messages in the request (the task's own
  ``message_history`` and the greeting not included) to know how many steps are done, and plays
  the next one. A call goes out under the name the request offers the tool by: its own, or one
  that ends with it after a ``__`` or ``.`` (an MCP agent's: Claude Code's
  ``mcp__tau__get_user_details``, Codex's namespaced ``mcp__tau__get_user_details`` as the proxy
  offers it) — ``offered_name``.
- role ``user``: its first reply states the request; afterwards the agent's n-th text (after the
  greeting) names what it answers — a request to act (it makes those user tool calls one per
  reply, counting its own calls, then says ``Done.``), the text before a transfer (it agrees and
  waits), or the closing text (it ends with ``###STOP###``).
- role ``judge``: every outcome listed as a JSON array between ``<expected_outcomes>`` and
  ``</expected_outcomes>`` in the last user message is met.
- role ``memory`` (the memory plug-in): a request that offers tools named ``memory_*`` is an edit
  phase — it saves one knowledge entry naming the task's first gold step (``MEMORY_NOTE``
  …) unless the request already holds that note (the bank is in the prompt; a follow-up
  request holds the call), else it answers without a tool call. Any other request is a decide
  phase: ``<no_intervention/>``, or a short ``<context_for_action>`` reminder for one request in
  ``REMIND_EVERY`` (chosen by a hash of the request's last message, so the same request gets the
  same answer) and for every request whose text does not offer ``<no_intervention/>`` (a mode
  that must always remind). The gold agent ignores reminders (it counts its own messages only),
  so the gold conversation and its reward are the same with or without the plug-in.

**Noisy mode** (``noise=Noise(...)``; command line ``--noise TASK=STEPS --noise-p P --noise-seed N``):
at the chosen gold steps of the chosen tasks, an agent request sampled with ``temperature`` > 0
gets a wrong action with probability ``p`` (a seeded draw per request, see ``_noise``): a call of
the step's tool with every argument value changed (``mode="one"``: one argument of the call
changed, the rest kept), or for a text step the text ``NOISE_TEXT``.
The agent's decision ``i`` (0-based, the task's message history not counted) is gold step ``i``:
every reply is one call or one text, so a wrong action also counts as played. The step returns the
correct action when a system message of the request holds ``<<do:LABEL>>`` with the step's label:
the tool name of a call step, ``ask`` for a step asking the user to act, ``info`` for the closing
information (the obey-marker a guidelines file uses to "fix" a noisy step).

An unknown domain, task or role, or missing headers, is an HTTP 400 whose message says what was
wrong (the role and header handling, and ``agentrig doctor``'s probes, are ``_scripted``'s, shared
with the solution and AppWorld endpoints). Everything else (auth, faults at ``fault_rate``, delay, usage figures, the control routes)
is ``FakeEndpoint``'s.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig.agents.base import GREETING
from agentrig.errors import AgentrigError
from agentrig.testing._noise import Noise, add_noise_arguments, noise_of, obeys
from agentrig.testing._scripted import (MEMORY_NOTE, offered_name, GoldRequestError, ScriptedResponder, content_text, header_form,
                                       memory_reply)
from agentrig.testing.fake_endpoint import FakeEndpoint

__all__ = ["GOLD_MODELS", "MEMORY_NOTE", "NOISE_TEXT", "Noise", "GoldEndpoint", "GoldResponder", "GoldScript", "Step", "main",
           "offered_name"]

GOLD_MODELS = ("gold", "gold-agent", "gold-user", "gold-judge", "gold-memory")
TRANSFER = "transfer_to_human_agents"
STOP = "###STOP###"
NOISE_TEXT = "Let me look into something else first."
_AMBIGUOUS = object()
ROLE_MODELS = {"gold-agent": "agent", "gold-user": "user", "gold-judge": "judge"}  # the role of a header-less request


# ---- the texts, and the NL judge's stateless reply

_OUTCOMES = re.compile(r"<expected_outcomes>(.*?)</expected_outcomes>", re.S)


def judge_reply(messages: list[dict]) -> dict:
    """Every expected outcome met, in the NL judge's answer format."""
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = content_text(last.get("content")) if last else ""
    found = _OUTCOMES.search(text)
    if found is None:
        raise GoldRequestError("judge request: the last user message holds no <expected_outcomes>[...]"
                               "</expected_outcomes> block (a JSON array of the outcomes to judge)")
    try:
        outcomes = json.loads(found.group(1))
    except ValueError as exc:
        raise GoldRequestError(f"judge request: <expected_outcomes> is not a JSON array ({exc})") from None
    if not isinstance(outcomes, list):
        raise GoldRequestError("judge request: <expected_outcomes> must hold a JSON array")
    results = [{"expectedOutcome": o, "reasoning": "The gold conversation meets this outcome.",
                "metExpectation": True} for o in outcomes]
    return {"content": json.dumps({"results": results})}


def _is_text(m: dict) -> bool:
    if m.get("tool_calls"):
        return False
    text = content_text(m.get("content"))
    return bool(text) and text != GREETING


def _call_text(name: str, arguments: Any) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (arguments or {}).items())
    return f"{name}({args})"


def _info_text(info: list[str]) -> str:
    if not info:
        return "Everything you asked for is done. Is there anything else I can help with?"
    return "Everything is done. Here is what you need to know: " + "; ".join(info) + "."


def _opening(task: Any) -> str:
    ins = task.user_scenario.instructions
    text = ins if isinstance(ins, str) else ins.reason_for_call
    text = " ".join(str(text).split())
    return ("Hi, I need some help. " + text)[:600]


def _scenario_needles(task: Any) -> tuple[str, ...]:
    """The texts of a task's user scenario (whitespace collapsed) a user-simulator prompt holds."""
    ins = task.user_scenario.instructions
    parts = [ins] if isinstance(ins, str) else [ins.reason_for_call, ins.known_info, ins.unknown_info,
                                                 ins.task_instructions]
    return tuple(" ".join(str(p).split()) for p in parts if p)


@dataclass(frozen=True)
class Step:
    """One move of the gold agent: ``call`` (a tool call), ``ask`` (ask the user to make the user
    actions ``user_actions[start:end]``) or ``info`` (state the required information)."""

    kind: str
    name: str = ""
    arguments: Any = None
    start: int = 0
    end: int = 0
    before_transfer: bool = False


@dataclass(frozen=True)
class GoldScript:
    domain: str
    task_id: str
    steps: tuple[Step, ...]
    texts: tuple[Step, ...]  # the steps the agent plays as text, in order (ask / info)
    user_actions: tuple[tuple[str, Any], ...]
    info_text: str
    opening: str
    # what the task's message_history already holds (not counted as played)
    hist_agent_calls: int = 0
    hist_agent_texts: int = 0
    hist_user_calls: int = 0

    @classmethod
    def from_task(cls, domain: str, task: Any) -> "GoldScript":
        ec = task.evaluation_criteria
        actions = list(ec.actions or []) if ec is not None else []
        info = list(ec.communicate_info or []) if ec is not None else []
        info_text = _info_text(info)
        steps: list[Step] = []
        user_actions: list[tuple[str, Any]] = []
        for a in actions:
            if a.requestor == "user":
                user_actions.append((a.name, a.arguments or {}))
                last = steps[-1] if steps else None
                if last is not None and last.kind == "ask":  # the previous action was the user's too
                    steps[-1] = Step("ask", start=last.start, end=len(user_actions))
                else:
                    steps.append(Step("ask", start=len(user_actions) - 1, end=len(user_actions)))
                continue
            if a.name == TRANSFER and info and not any(s.kind == "info" for s in steps):
                steps.append(Step("info", before_transfer=True))
            steps.append(Step("call", name=a.name, arguments=a.arguments or {}))
        if not any(s.kind == "info" for s in steps) and not (steps and steps[-1].name == TRANSFER):
            steps.append(Step("info"))
        hist = (task.initial_state.message_history if task.initial_state is not None else None) or []
        return cls(
            domain=domain, task_id=task.id, steps=tuple(steps),
            texts=tuple(s for s in steps if s.kind != "call"),
            user_actions=tuple(user_actions), info_text=info_text, opening=_opening(task),
            hist_agent_calls=sum(len(m.get("tool_calls") or []) for m in hist if m.get("role") == "assistant"),
            hist_agent_texts=sum(1 for m in hist if m.get("role") == "assistant" and _is_text(m)),
            hist_user_calls=sum(len(m.get("tool_calls") or []) for m in hist if m.get("role") == "user"),
        )

    @property
    def play(self) -> tuple:
        """What the script plays (not which task it is): two tasks with equal ``play`` are one."""
        return (self.steps, self.user_actions, self.info_text, self.opening, self.hist_agent_calls,
                self.hist_agent_texts, self.hist_user_calls)

    # ------------------------------------------------------------------ the agent's side

    def agent_reply(self, messages: list[dict], noise: Noise | None = None, body: dict | None = None) -> dict:
        calls = texts = 0
        for m in messages:
            if m.get("role") == "assistant":
                if m.get("tool_calls"):
                    calls += len(m["tool_calls"])
                elif _is_text(m):
                    texts += 1
        n_calls = calls
        calls = max(0, calls - self.hist_agent_calls)
        texts = max(0, texts - self.hist_agent_texts)
        index = calls + texts  # the agent's decision: every reply is one call or one text
        wrong = noise is not None and noise.wrong(body or {}, self.domain, self.task_id, index)
        for step in self.steps:
            if step.kind == "call":
                if calls:
                    calls -= 1
                    continue
                name = offered_name(step.name, body)
                if wrong and noise is not None and not obeys(messages, step.name):
                    bad = noise.corrupt(step.arguments, self.domain, self.task_id, index, (body or {}).get("seed"))
                    return {"content": None, "tool_calls": [{"id": f"gold_a{n_calls + 1}", "name": name,
                                                             "arguments": bad}]}
                return {"content": None, "tool_calls": [
                    {"id": f"gold_a{n_calls + 1}", "name": name, "arguments": step.arguments}]}
            if texts:
                texts -= 1
                continue
            if wrong and not obeys(messages, step.kind):
                return {"content": NOISE_TEXT}
            return {"content": self._ask_text(step) if step.kind == "ask" else self.info_text}
        if wrong and not obeys(messages, "info"):
            return {"content": NOISE_TEXT}
        return {"content": self.info_text}  # all played: say it again

    # ------------------------------------------------------------------ the memory plug-in's side

    def first_step_text(self) -> str:
        step = self.steps[0] if self.steps else Step("info")
        if step.kind == "call":
            return _call_text(step.name, step.arguments)
        if step.kind == "ask":
            return "ask the user to do: " + "; ".join(_call_text(n, a) for n, a in self.user_actions[step.start:step.end])
        return "state the required information"

    def _ask_text(self, step: Step) -> str:
        todo = "; ".join(_call_text(n, a) for n, a in self.user_actions[step.start:step.end])
        return f"Please do the following on your device and tell me when it is done: {todo}."

    # ------------------------------------------------------------------ the user's side

    def user_reply(self, messages: list[dict]) -> dict:
        agent_texts = own_calls = 0
        last_role = None
        for m in messages:
            role = m.get("role")
            if role == "system":
                continue
            last_role = role
            if role == "user" and _is_text(m):
                agent_texts += 1
            elif role == "assistant" and m.get("tool_calls"):
                own_calls += len(m["tool_calls"])
        n_calls = own_calls
        own_calls = max(0, own_calls - self.hist_user_calls)
        agent_texts = max(0, agent_texts - self.hist_agent_texts)
        if last_role == "tool":  # the result of its own call: go on with the group, or report back
            step = self._group_of(own_calls - 1)
            if step is not None and own_calls < step.end:
                return self._user_call(own_calls, n_calls)
            return {"content": "Done."}
        if agent_texts == 0:
            return {"content": self.opening}
        step = self.texts[agent_texts - 1] if agent_texts <= len(self.texts) else None
        if step is not None and step.kind == "ask":
            if own_calls < step.end:
                return self._user_call(own_calls, n_calls)
            return {"content": "Done."}
        if step is not None and step.before_transfer:
            return {"content": "Thank you. Please go ahead."}
        return {"content": f"Thank you, that is all I needed. {STOP}"}

    def _group_of(self, index: int) -> Step | None:
        for s in self.texts:
            if s.kind == "ask" and s.start <= index < s.end:
                return s
        return None

    def _user_call(self, index: int, n_calls: int) -> dict:
        name, arguments = self.user_actions[index]
        return {"content": None, "tool_calls": [{"id": f"gold_u{n_calls + 1}", "name": name, "arguments": arguments}]}


# ---------------------------------------------------------------------------------------- responder


class GoldResponder(ScriptedResponder):
    """``responder(body)`` for a FakeEndpoint whose requests carry agentrig's X-Agentrig-* headers
    (``GoldEndpoint`` passes them through a context variable)."""

    name = "gold endpoint"
    roles = ("agent", "user", "memory")
    free_roles = ("judge",)
    task_headers = ("X-Agentrig-Domain", "X-Agentrig-Task")

    def __init__(self, data_root: str | Path | None, noise: Noise | None = None):
        self.data_root = Path(data_root) if data_root is not None else None
        self.noise = noise
        self._scripts: dict[str, dict[str, GoldScript]] = {}
        self._by_header: dict[str, dict[str, Any]] = {}
        self._openings: dict[str, dict[str, list[GoldScript]]] = {}
        self._scenarios: dict[str, list[tuple[tuple[str, ...], GoldScript]]] = {}
        self._lock = threading.Lock()

    def script(self, domain: str, task_id: str) -> GoldScript:
        scripts = self._scripts.get(domain)
        if scripts is None:
            scripts = self._load(domain)
        found = scripts.get(task_id)
        if found is None:  # a header holds printable ASCII only, at most HEADER_MAX characters
            found = self._by_header[domain].get(task_id)
            if found is _AMBIGUOUS:
                raise GoldRequestError(f"X-Agentrig-Task {task_id!r} (a header keeps only the first 200 printable "
                                       f"ASCII characters of an id) fits several tasks of domain {domain!r}")
        if found is None:
            near = ", ".join(i if len(i) < 60 else i[:57] + "..." for i in list(scripts)[:5])
            raise GoldRequestError(f"unknown task {task_id[:120]!r} in domain {domain!r} of the gold endpoint's "
                                   f"data root {self.data_root} ({len(scripts)} tasks, first ids: {near}); "
                                   "check X-Agentrig-Task")
        return found

    def _load(self, domain: str) -> dict[str, GoldScript]:
        from ..data import load_tasks

        with self._lock:
            scripts = self._scripts.get(domain)
            if scripts is not None:
                return scripts
            try:
                tasks = load_tasks(self.data_root, domain)
            except AgentrigError as exc:
                raise GoldRequestError(f"unknown domain {domain!r} for the gold endpoint: {exc}") from None
            scripts = {t.id: GoldScript.from_task(domain, t) for t in tasks}
            by_header: dict[str, Any] = {}
            for tid, script in scripts.items():
                form = header_form(tid)
                by_header[form] = _AMBIGUOUS if form in by_header else script
            self._by_header[domain] = by_header
            openings: dict[str, list[GoldScript]] = {}
            for script in scripts.values():
                openings.setdefault(" ".join(script.opening.split()), []).append(script)
            self._openings[domain] = openings
            self._scenarios[domain] = [(_scenario_needles(t), scripts[t.id]) for t in tasks]
            self._scripts[domain] = scripts
            return scripts

    # -------------------------------------------------- requests without agentrig's headers

    def reply(self, body: dict, headers: Any) -> dict:
        role = ROLE_MODELS.get(str(body.get("model") or ""))
        if headers.get("X-Agentrig-Role") or role is None or self.data_root is None:
            return super().reply(body, headers)
        if role in self.free_roles:
            return self.play_free(role, body)
        messages = body.get("messages") or []
        script = self.recognise(role, messages)
        if role == "agent":
            return script.agent_reply(messages, self.noise, body)
        return script.user_reply(messages)

    def recognise(self, role: str, messages: list[dict]) -> GoldScript:
        """The task of a request that carries no X-Agentrig-* headers (another harness's, e.g.
        tau2-bench's): for the user, the task whose scenario texts its system prompt holds; for
        the agent, the task whose opening a user message is. Tasks that would play the same are
        one; any other tie is a 400."""
        found: list[GoldScript] = []
        if role == "user":
            system = " ".join(" ".join(content_text(m.get("content")) for m in messages
                                       if m.get("role") == "system").split())
            for domain in self._domains():
                found += [s for needles, s in self._scenarios[domain] if all(n in system for n in needles)]
            what = "no task's scenario (reason for call, task instructions …) is in the system prompt"
        elif role == "agent":
            texts = [" ".join(content_text(m.get("content")).split()) for m in messages
                     if m.get("role") == "user" and not m.get("tool_calls")]
            for domain in self._domains():
                openings = self._openings[domain]
                hit = next((openings[t] for t in texts if t in openings), [])
                found += hit
            what = "no user message is a task's opening (the gold user's first message)"
        else:
            raise GoldRequestError(f"model {role!r} without X-Agentrig-* headers: only the agent, user and judge "
                                   "roles are recognised from the request alone")
        if not found:
            raise GoldRequestError(f"a request without X-Agentrig-* headers (model gold-{role}): {what} "
                                   f"of any domain under {self.data_root}")
        if any(s.play != found[0].play for s in found[1:]):
            ids = ", ".join(f"{s.domain}/{s.task_id}" for s in found[:5])
            raise GoldRequestError(f"a request without X-Agentrig-* headers (model gold-{role}) fits several "
                                   f"tasks that play differently ({ids}); send agentrig's headers")
        return found[0]

    def _domains(self) -> list[str]:
        assert self.data_root is not None
        names = sorted(p.name for p in (self.data_root / "domains").iterdir() if p.is_dir())
        usable = []
        for name in names:
            if name not in self._scripts:
                try:
                    self._load(name)
                except GoldRequestError:
                    continue  # a domain agentrig cannot read is no candidate
            usable.append(name)
        return usable

    def play_free(self, role: str, body: dict) -> dict:  # the judge
        return judge_reply(body.get("messages") or [])

    def play(self, role: str, body: dict, headers: Any) -> dict:
        script = self.script(headers["X-Agentrig-Domain"], headers["X-Agentrig-Task"])
        if role == "memory":
            return memory_reply(script, body)
        if role == "agent":
            return script.agent_reply(body.get("messages") or [], self.noise, body)
        return script.user_reply(body.get("messages") or [])


class GoldEndpoint(FakeEndpoint):
    """A FakeEndpoint whose replies play the gold conversation (see the module docstring)."""

    def __init__(self, data_root: str | Path | None, *, models: tuple[str, ...] = GOLD_MODELS,
                 record: bool = False, noise: Noise | None = None, **kwargs: Any):
        self.gold = GoldResponder(data_root, noise)
        super().__init__(models=models, responder=self.gold, record=record, **kwargs)


# ---------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    import argparse

    from agentrig.testing.fake_endpoint import add_server_arguments, serve_main

    ap = argparse.ArgumentParser(prog="python -m agentrig.bench.tau.scripted.gold_endpoint",
                                 description="Serve the gold conversation of τ²-bench tasks until SIGTERM/SIGINT.")
    ap.add_argument("--data", metavar="ROOT", help="tau2-bench data root (holds domains/); none: built-in domains only")
    add_server_arguments(ap, ",".join(GOLD_MODELS))
    ap.add_argument("--record", action="store_true", help="keep request records (GET /_fake/requests)")
    add_noise_arguments(ap)

    def make(args: Any, settings: dict[str, Any]) -> GoldEndpoint:
        noise = noise_of(args)
        if args.data is not None and not (Path(args.data) / "domains").is_dir():
            raise ValueError(f"--data {args.data}: no domains/ directory there; give a tau2-bench data root")
        return GoldEndpoint(args.data, record=args.record, noise=noise, **settings)

    return serve_main(ap, argv, make)


if __name__ == "__main__":
    raise SystemExit(main())
