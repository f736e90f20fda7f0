"""Configuration models and TOML loading.

The channel part of an experiment file:

    [channel]                      # defaults for every role
    base_url = "https://gateway.example/v1"
    api_key_env = "GATEWAY_KEY"    # the NAME of the variable holding the key, never the key
    timeout_s = 60
    max_attempts = 6
    max_concurrency = 16
    headers = { "X-Team" = "evals" }
    extra_body = { "provider" = { "sort" = "throughput" } }

    [roles.agent]                  # agent, user, memory, judge, analyst: inherit [channel], may override it
    model = "openai/gpt-4.1"
    temperature = 0.0

    [prices."openai/gpt-4.1"]      # optional, USD per million tokens
    input = 2.0
    output = 8.0

With nothing configured, ``OPENAI_BASE_URL`` (else the OpenAI API) and ``OPENAI_API_KEY`` are used.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentrig.types import Strict

from .errors import ConfigError, format_validation_error as _format_errors

# analyst: writes consistency guidelines (`agentrig guidelines derive`), never called in a trial
Role = Literal["agent", "user", "memory", "judge", "analyst"]
ROLES: tuple[Role, ...] = ("agent", "user", "memory", "judge", "analyst")
ToolChoice = Literal["auto", "required", "omit"]
# The wire formats: the API a role's requests speak (docs/channel.md), by the names a settings file
# writes. The settings, --wire and other clients' files validate against these names; which module
# speaks each is the wires' own registry (channel/wires/__init__.py's REGISTRY, the same names).
WIRES: tuple[str, ...] = ("chat", "responses", "anthropic")
Wire = Literal[WIRES]  # type: ignore[valid-type]
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class EndpointSettings(Strict):
    """Settings that [channel] sets for all roles and a [roles.X] table may override."""

    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float | None = Field(None, gt=0)
    deadline_s: float | None = Field(None, gt=0)
    max_attempts: int | None = Field(None, ge=1, le=100)
    max_concurrency: int | None = Field(None, ge=1, le=4096)
    backoff_base_s: float | None = Field(None, ge=0)
    backoff_max_s: float | None = Field(None, ge=0)
    headers: dict[str, str] | None = None
    # header name -> NAME of an environment variable whose value is sent (and redacted)
    headers_from_env: dict[str, str] | None = None
    extra_body: dict[str, Any] | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    # what a request with tools says about calling them: "auto" (sent), "required" (sent), "omit" (not sent)
    tool_choice: ToolChoice | None = None
    wire: Wire | None = None

    @field_validator("api_key_env")
    @classmethod
    def _looks_like_a_name(cls, v: str | None) -> str | None:
        if v is not None and (not v or not all(c.isalnum() or c == "_" for c in v)):
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits, _), not the key itself"
            )
        return v


class ChannelSettings(EndpointSettings):
    """[channel] only: how the channel rides out an endpoint's outage and cuts hung requests
    short (channel/breaker.py, channel/adaptive.py; docs/channel.md)."""

    # how long calls wait for an endpoint that answered before and went down; 0 = no waiting
    outage_wait_s: float = Field(600.0, ge=0)
    # per (endpoint, model): after a warm-up, an attempt's timeout follows the observed latency
    adaptive_timeout: bool = True
    # "replay": answered responses kept per trial in the run directory and replayed when the same
    # trial sends the same request again (store/replay_cache.py); never shared between trials
    cache: Literal["off", "replay"] = "off"


class RoleConfig(EndpointSettings):
    pass


class Price(Strict):
    """USD per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)


class ResolvedRole(BaseModel):
    """One role's effective settings: [roles.X] over [channel] over the built-in defaults."""

    model_config = ConfigDict(frozen=True)

    role: str
    model: str | None
    base_url: str
    api_key_env: str
    timeout_s: float = 60.0
    deadline_s: float = 600.0
    max_attempts: int = 6
    max_concurrency: int = 16
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    headers: dict[str, str] = {}
    headers_from_env: dict[str, str] = {}
    extra_body: dict[str, Any] = {}
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    tool_choice: ToolChoice = "auto"
    wire: Wire = "chat"


# settings whose tables merge key by key across layers (the rest: the upper layer's value wins)
MERGED_TABLES = ("headers", "headers_from_env", "extra_body")


def merge_layers(*layers: BaseModel | None) -> dict[str, Any]:
    """The one merge rule of role settings, lowest layer first ([channel] → [roles.X] → an arm's
    roles.X): a setting given in an upper layer replaces the lower one's, except the tables of
    ``MERGED_TABLES``, which merge key by key; unset (None) settings leave the lower layer's."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        for name, value in layer.model_dump(exclude_none=True).items():
            merged[name] = {**merged.get(name, {}), **value} if name in MERGED_TABLES else value
    return merged


class ChannelConfig(Strict):
    channel: ChannelSettings = ChannelSettings()
    roles: dict[Role, RoleConfig] = {}
    prices: dict[str, Price] = {}

    def resolve(self, role: str, env: Mapping[str, str] | None = None) -> ResolvedRole:
        env = os.environ if env is None else env
        merged = merge_layers(self.channel, self.roles.get(role))
        merged.setdefault("base_url", env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        merged.setdefault("api_key_env", DEFAULT_KEY_ENV)
        merged.setdefault("model", None)
        return ResolvedRole(role=role, **merged)

    def configured_roles(self) -> list[str]:
        """Roles with a [roles.X] table, else just 'agent' (the channel defaults)."""
        return [r for r in ROLES if r in self.roles] or ["agent"]


def format_validation_error(exc: ValidationError, source: str) -> str:
    def line(err: dict) -> str:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown setting (check its spelling against the docs: docs/channel.md)"
        return f"{where}: {msg}"
    return _format_errors(exc, f"{source}: invalid configuration", line)


def read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file; give the path of an experiment TOML") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot be read ({exc.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None


def load_channel_config(path: str | Path) -> ChannelConfig:
    """The [channel], [roles.*] and [prices.*] tables of an experiment file."""
    data = read_toml(path)
    part = {k: data[k] for k in ("channel", "roles", "prices") if k in data}
    try:
        return ChannelConfig.model_validate(part)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(path))) from None
