"""The serialized contract: every value stored or exported is one of these pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallContext(_Model):
    """Who is calling: sent as X-Agentrig-* headers so a gateway's log can be reconciled."""

    run: str | None = None
    arm: str | None = None
    domain: str | None = None
    task: str | None = None
    trial: int | None = None
    role: str | None = None

    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in ("run", "arm", "domain", "task", "trial", "role"):
            value = getattr(self, name)
            if value is not None:
                text = "".join(ch for ch in str(value) if 32 <= ord(ch) < 127)
                out[f"X-Agentrig-{name.capitalize()}"] = text[:200]
        return out


class ToolCall(_Model):
    id: str
    name: str
    arguments: dict[str, Any] | None = None  # None when arguments_error is set
    arguments_raw: str = ""
    arguments_error: str | None = None  # arguments were not a JSON object: shown to the model


class AssistantMessage(_Model):
    content: str | None = None
    tool_calls: list[ToolCall] = []
    reasoning: str | None = None  # reasoning content, when the endpoint returns any
    # provider fields that must be sent back with the message (e.g. reasoning_details)
    extra: dict[str, Any] = {}


class Usage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    reported: bool = True  # False when the endpoint sent no usage

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Attempt(_Model):
    """One HTTP attempt of a call. ``cause`` is None for the attempt that succeeded."""

    cause: str | None = None  # rate_limited, server_error, timeout, connection, malformed, ...
    status: int | None = None
    latency_s: float = 0.0
    wait_s: float = 0.0  # the pause after this attempt before the next one
    detail: str | None = None


class Completion(_Model):
    role: str
    model: str
    message: AssistantMessage
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0  # from the first attempt's start to the answer, waits included
    attempts: list[Attempt] = []
    request_id: str | None = None

    @property
    def retries(self) -> int:
        return len(self.attempts) - 1
