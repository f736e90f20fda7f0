"""The τ² benchmark's tables in an experiment file: ``[benchmark]`` (kind = "tau2") and ``[judge]``
(the ``[user]`` table's model is ``user.UserSettings``). See docs/experiments.md."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from agentrig.types import Strict


class Tau2Settings(Strict):
    kind: Literal["tau2"] = "tau2"
    data: str | None = None
    domains: list[str] = Field(min_length=1)
    split: str | None = None
    task_ids: list[str] | dict[str, list[str]] | None = None
    num_tasks: int | None = Field(None, ge=1)

    @field_validator("domains", mode="before")
    @classmethod
    def _one_domain(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class JudgeSettings(Strict):
    nl_assertions: Literal["auto", "basis", "never"] = "auto"
