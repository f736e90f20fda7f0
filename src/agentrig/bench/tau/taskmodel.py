"""τ²-bench's task format as pydantic models (the shape of ``domains/<name>/tasks.json``).

Every field tau2-bench defines is here, with its defaults; keys we do not know (for example
airline's ``annotations``) are kept as extras, so ``model_dump(exclude_unset=True)`` gives back
what the file said. Loading, caching and errors live in ``data.py``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Requestor = Literal["assistant", "user"]


class _Open(BaseModel):
    """Base of the task models: unknown keys are kept (and dumped back), never rejected."""

    model_config = ConfigDict(extra="allow")


class RewardType(StrEnum):
    """The components a task's reward can be the product of (``reward_basis``)."""

    DB = "DB"
    ENV_ASSERTION = "ENV_ASSERTION"
    NL_ASSERTION = "NL_ASSERTION"
    ACTION = "ACTION"
    COMMUNICATE = "COMMUNICATE"


def _default_reward_basis() -> list[RewardType]:
    # tau2-bench's default when a task names no basis: the original τ-bench's DB and COMMUNICATE
    return [RewardType.DB, RewardType.COMMUNICATE]


class Description(_Open):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class StructuredUserInstructions(_Open):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str

    def render(self) -> str:
        """The instructions as one text block, fields in tau2-bench's order, absent ones left out."""
        parts = [f"Domain: {self.domain}", "Reason for call:\n" + _indent(self.reason_for_call)]
        if self.known_info is not None:
            parts.append("Known info:\n" + _indent(self.known_info))
        if self.unknown_info is not None:
            parts.append("Unknown info:\n" + _indent(self.unknown_info))
        parts.append("Task instructions:\n" + _indent(self.task_instructions))
        return "\n".join(parts)


class UserScenario(_Open):
    persona: str | None = None
    instructions: StructuredUserInstructions | str

    def instructions_text(self) -> str:
        ins = self.instructions
        return ins if isinstance(ins, str) else ins.render()

    def render(self) -> str:
        parts = []
        if self.persona is not None:
            parts += ["Persona:", _indent(self.persona)]
        parts += ["Instructions:", _indent(self.instructions_text())]
        return "\n".join(parts)


class Action(_Open):
    """One gold tool call, by the agent ("assistant") or the user."""

    action_id: str
    requestor: Requestor = "assistant"
    name: str
    arguments: dict
    info: str | None = None
    # the arguments an agent's call must match (None: all of them)
    compare_args: list[str] | None = None

    def call_text(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


class EnvFunctionCall(_Open):
    """A function called directly on one side of the environment (not through the agent)."""

    env_type: Requestor
    func_name: str
    arguments: dict

    def call_text(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.arguments.items())
        return f"{self.env_type}.{self.func_name}({args})"


class EnvAssertion(EnvFunctionCall):
    assert_value: bool = True
    message: str | None = None


class EvaluationCriteria(_Open):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=_default_reward_basis)


class InitializationData(_Open):
    agent_data: dict | None = None
    user_data: dict | None = None


class InitialState(_Open):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    # tau2 messages (role, content, tool_calls, turn_idx, ...) kept as plain dicts
    message_history: list[dict] | None = None


class TaskIssue(_Open):
    id: str
    title: str
    description: str | None = None
    status: Literal["open", "resolved", "wont_fix"] = "open"
    resolution: str | None = None
    created_at: str | None = None
    resolved_at: str | None = None
    author_email: str | None = None
    pr_link: str | None = None
    simulation_file: str | None = None


class Task(_Open):
    id: str
    description: Description | None = None
    user_scenario: UserScenario
    ticket: str | None = None
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    issues: list[TaskIssue] | None = None
    required_documents: list[str] | None = None
    # user tools the simulator may use in this task (None: all of the domain's, []: none)
    user_tools: list[str] | None = None

    @property
    def gold_actions(self) -> list[Action]:
        ec = self.evaluation_criteria
        return list(ec.actions or []) if ec is not None else []

    @property
    def reward_basis(self) -> list[RewardType]:
        ec = self.evaluation_criteria
        return list(ec.reward_basis) if ec is not None else _default_reward_basis()

    def summary(self, width: int = 100) -> str:
        """A one-line gist: the purpose, else the reason for the call, else the instructions."""
        text = self.description.purpose if self.description and self.description.purpose else None
        if not text:
            ins = self.user_scenario.instructions
            text = ins if isinstance(ins, str) else ins.reason_for_call
        line = " ".join(text.split())
        return line if len(line) <= width else line[: width - 1].rstrip() + "…"

    def to_file_dict(self) -> dict:
        """The task as a tasks.json entry: only the keys that were set, extras included."""
        return self.model_dump(mode="json", exclude_unset=True)


def _indent(text: str, prefix: str = "\t") -> str:
    return "\n".join(prefix + line if line.strip() else line for line in text.split("\n"))
