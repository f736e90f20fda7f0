"""A terminal agent on the plain `openai` SDK, for `agent = { kind = "python", entry = "terminal_agent:make" }`
on terminal tasks.

A small loop: the model gets the task and one tool, `run_command`; each call of it runs in the
task's sandbox through `turn.run` and its output goes back to the model; a reply without a tool
call means the model is done, and its text is the agent's final note. The agent itself runs on
the host; only its commands run in the sandbox. The client agentrig gives points at the trial's
proxy with the trial's token: nothing here knows a real key.

Settings (the arm's `agent.settings`): `temperature` (default: the endpoint's), `max_turns`
(default 60: model calls before it gives up), `output_chars` (default 8000: the end of each
command's output shown to the model).
"""

from __future__ import annotations

import json
from typing import Any

from agentrig_agent import TerminalTurn

SYSTEM = (
    "You are working in a Linux terminal to complete a task. Use the run_command tool to run one shell "
    "command at a time and read its output before deciding on the next one. Check your work. When the "
    "task is complete, reply with a short summary and no tool call."
)

RUN_COMMAND = {
    "type": "function",
    "function": {
        "name": "run_command",
        "description": "Run a shell command in the task's terminal and return its exit code and output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command line to run with bash"}},
            "required": ["command"],
        },
    },
}


class TerminalAgent:
    def __init__(self, client: Any, model: str, settings: dict):
        self.client = client
        self.model = model
        self.options = {"temperature": settings["temperature"]} if "temperature" in settings else {}
        self.max_turns = int(settings.get("max_turns", 60))
        self.output_chars = int(settings.get("output_chars", 8000))

    def respond(self, turn: TerminalTurn) -> str:
        limits = turn.limits
        task = (f"{turn.instruction.strip()}\n\nCommands start in {turn.workdir}. You may run at most "
                f"{limits['commands']} commands, each for at most {limits['command_timeout_s']:g} seconds.")
        messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        for _ in range(self.max_turns):
            completion = self.client.chat.completions.create(
                model=turn.model, messages=messages, tools=[RUN_COMMAND], **self.options)
            message = completion.choices[0].message
            calls = message.tool_calls or []
            messages.append({"role": "assistant", "content": message.content or "",
                             **({"tool_calls": [c.model_dump() for c in calls]} if calls else {})})
            if not calls:
                return message.content or ""
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": self._run(turn, call)})
        return "stopped: max_turns reached"

    def _run(self, turn: TerminalTurn, call: Any) -> str:
        try:
            command = json.loads(call.function.arguments or "{}").get("command")
        except (ValueError, AttributeError):
            command = None
        if call.function.name != "run_command" or not isinstance(command, str) or not command.strip():
            return "error: call run_command with a JSON object holding a non-empty \"command\" string"
        result = turn.run(command)
        code = "none (timed out)" if result.timed_out else result.exit_code
        return f"exit code: {code}\n{result.output[-self.output_chars:]}"


def make(settings: dict, client: Any, model: str) -> TerminalAgent:
    if client is None or not hasattr(client, "chat"):
        raise RuntimeError("terminal_agent needs the `openai` package in its interpreter (agent.python)")
    return TerminalAgent(client, model, settings)
