"""The experiment file: what to play (benchmark, tasks), how often (trials), with what (arms).

    name = "airline-gpt41"               # default: the file's stem; names the run directory

    [benchmark]                          # the benchmark's own model (benchmark.py registry):
    kind = "tau2"                        # "tau2" (bench.tau.settings.Tau2Settings) | "terminal"
    data = "../tau2-data"                # default: $AGENTRIG_TAU2_DATA (not needed for bikeshop)
    domains = ["airline"]
    split = "base"                       # default: "base" when the domain has it, else every task;
                                         # "all" = every task of the file
    task_ids = ["0", "1"]                # optional; {airline = [...], retail = [...]} for several
    num_tasks = 10                       # optional: the first N selected tasks per domain

    [run]
    trials = 4                           # per task and arm
    seed = 300
    concurrency = 8                      # trials in flight
    max_steps = 200
    max_errors = 10
    trial_timeout_s = 1800
    max_invalid_retries = 3              # replays of a trial spoiled by the channel
    dir = "runs/airline-gpt41"           # default: runs/<name> beside this file
    send_seed = true                     # send each trial's seed with calls whose role sets none
    executor = "local"                   # "ray": trials on a Ray cluster (docs/scale.md)
    ray_address = "auto"                 # with "ray": "auto" | "ray://HOST:PORT" | "HOST:PORT"
    max_cost = 5.0                       # optional: stop when the stored trials cost this (USD)
    max_tokens = 2_000_000               # optional: … or hold this many tokens (run/budget.py)

    [user]                               # the user simulator (agentrig.bench.tau.user.UserSettings)
    kind = "llm"

    [judge]
    nl_assertions = "auto"               # "auto": judge every task with nl_assertions when a judge
                                         # model is set; "basis": only where NL_ASSERTION is in the
                                         # reward basis (τ²-bench's rule, cheaper); "never"

    [channel] / [roles.agent|user|memory|judge|analyst] / [prices."model"]    # as in docs/channel.md

    [[arms]]
    name = "baseline"                    # unique; letters, digits, - _ .
    agent = { kind = "llm", tool_mode = "native" }          # AgentSettings (or an [arms.agent] table)
    roles.agent = { model = "openai/gpt-4.1", temperature = 0.0 }  # over [roles.agent]/[channel]
    plugins = [{ kind = "memory", budget = 3 }]

``[user]`` and ``[judge]`` are τ²'s tables: a benchmark adds the top-level tables it owns to the
generic ones (``experiment_model(kind)``). Relative paths (``data``, ``dir``, an agent ``prompt``
file) are relative to the experiment file.
This module holds the file's models and the messages for a file that does not fit them;
``experiment.py`` loads a file and resolves it (data, channels, checks).
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator, model_validator

from agentrig.errors import format_validation_error
from agentrig.types import Strict

from agentrig.agents.base import AgentSettings
from agentrig import benchmark as bench_registry
from agentrig.config import ChannelSettings, Price, Role, RoleConfig
from agentrig.plugins.base import PluginSettings


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RAY_ADDRESS_RE = re.compile(r"^(ray://)?[A-Za-z0-9_.\[\]:-]+:[0-9]{1,5}$")
NAME_RULE = "1-64 characters: letters, digits, '-', '_', '.', starting with a letter or digit"
DOCS = "docs/experiments.md"


class RunSettings(Strict):
    trials: int = Field(1, ge=1, le=100_000)
    seed: int = 300
    concurrency: int = Field(4, ge=1, le=4096)
    max_steps: int = Field(200, ge=1)
    max_errors: int = Field(10, ge=1)
    trial_timeout_s: float | None = Field(1800.0, gt=0)
    max_invalid_retries: int = Field(3, ge=0, le=100)
    dir: str | None = None
    send_seed: bool = True
    executor: Literal["local", "ray"] = "local"  # "ray": trials on a Ray cluster (run/ray/executor.py)
    ray_address: str = "auto"  # "auto" | "ray://host:port" | "host:port" (with executor = "ray")
    # the run's spending limit (run/budget.py): USD (needs [prices] for every model) and tokens
    max_cost: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, ge=1)

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, v: str) -> str:
        v = v.strip()
        if v == "auto" or RAY_ADDRESS_RE.match(v):
            return v
        raise ValueError(f"ray_address {v!r} is not a Ray address; use \"auto\" (the cluster this machine "
                         "joined with `ray start`), \"ray://HOST:PORT\" (Ray Client) or \"HOST:PORT\" (the head's GCS)")


class AnalysisSettings(Strict):
    """[analysis]: settings of the figures computed from the stored trials."""

    # a step is unstable when at least this share of its actions leave the majority decision
    # (``agentrig instability --threshold``; docs/consistency.md says why 0.1)
    instability_threshold: float = Field(0.1, gt=0, le=1)


class ArmSettings(Strict):
    name: str
    description: str | None = None  # free text for reports; not part of comparability
    agent: AgentSettings = AgentSettings()
    roles: dict[Role, RoleConfig] = {}
    plugins: list[PluginSettings] = []

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"arm name {v!r} is not usable in paths ({NAME_RULE})")
        return v


class _ExperimentRoot(Strict):
    """The checks every experiment model shares."""

    @field_validator("name", check_fields=False)
    @classmethod
    def _safe_name(cls, v: str | None) -> str | None:
        if v is not None and not NAME_RE.match(v):
            raise ValueError(f"name {v!r} is not usable as a directory name ({NAME_RULE})")
        return v

    @model_validator(mode="after")
    def _unique_arms(self) -> Any:
        seen: set[str] = set()
        for arm in getattr(self, "arms", []):
            if arm.name in seen:
                raise ValueError(f"two [[arms]] are named {arm.name!r}; give every arm its own name")
            seen.add(arm.name)
        return self


class Experiment(_ExperimentRoot):
    """The generic part of an experiment. A file is read with ``experiment_model(kind)``: these
    fields, with the benchmark's [benchmark] model and the top-level tables the benchmark owns
    (τ²: [user], [judge]) after ``run``."""

    name: str | None = None
    description: str | None = None
    benchmark: Any = None
    run: RunSettings = RunSettings()
    channel: ChannelSettings = ChannelSettings()
    roles: dict[Role, RoleConfig] = {}
    prices: dict[str, Price] = {}
    analysis: AnalysisSettings = AnalysisSettings()
    arms: list[ArmSettings] = Field(min_length=1)


_MODELS: dict[str, type[_ExperimentRoot]] = {}
bench_registry.on_change(_MODELS.clear)


def experiment_model(kind: str) -> type[_ExperimentRoot]:
    """The experiment model of a benchmark kind (ConfigError for an unknown kind)."""
    model = _MODELS.get(kind)
    if model is None:
        fields: dict[str, Any] = {}
        for name, info in Experiment.model_fields.items():
            if name == "benchmark":
                fields[name] = (bench_registry.settings_model(kind), ...)
            else:
                fields[name] = (info.annotation, info)
            if name == "run":
                fields.update({t: (m, m()) for t, m in bench_registry.tables(kind).items()})
        model = create_model(f"Experiment_{kind}", __base__=_ExperimentRoot, **fields)
        _MODELS[kind] = model
    return model


def benchmark_kind(raw: dict) -> str:
    """The benchmark kind an experiment file names (the default when it names none)."""
    table = raw.get("benchmark")
    kind = table.get("kind", bench_registry.DEFAULT_KIND) if isinstance(table, dict) else bench_registry.DEFAULT_KIND
    return kind if isinstance(kind, str) else repr(kind)


# ------------------------------------------------------------------------------------- errors

_FIELDS: dict[str, type[BaseModel]] = {
    "run": RunSettings, "analysis": AnalysisSettings, "channel": ChannelSettings, "arms": ArmSettings, "agent": AgentSettings, "roles": RoleConfig,
}


def _where(loc: tuple, data: dict) -> str:
    parts: list[str] = []
    for i, p in enumerate(loc):
        if isinstance(p, int) and parts and parts[-1] == "arms":
            arms = data.get("arms")
            name = arms[p].get("name") if isinstance(arms, list) and p < len(arms) and isinstance(arms[p], dict) else None
            parts[-1] = f"arms[{p}]" + (f" (arm {name!r})" if isinstance(name, str) else "")
        elif isinstance(p, int):
            parts[-1] = f"{parts[-1]}[{p}]" if parts else f"[{p}]"
        elif p in ("[key]",) or (isinstance(p, str) and p.startswith(("function-", "list[", "dict["))):
            continue
        else:
            parts.append(str(p))
    return ".".join(parts) or "(top level)"


def _suggest(loc: tuple, top: type[BaseModel]) -> str:
    bad = str(loc[-1])
    parents = [str(p) for p in loc[:-1] if isinstance(p, str)]
    model = None
    if not parents:
        model = top
    else:
        model = _FIELDS.get(parents[-1])
        if model is None and len(parents) == 1:  # a benchmark's table ([benchmark], [user], …)
            ann = top.model_fields[parents[0]].annotation if parents[0] in top.model_fields else None
            model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if len(parents) >= 2 and parents[-2] == "roles":
            model = RoleConfig
    if model is None:
        return ""
    close = difflib.get_close_matches(bad, list(model.model_fields), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def format_errors(exc: ValidationError, source: str, data: dict, model: type[BaseModel] = Experiment) -> str:
    """Like ``config.format_validation_error``, with arm names in the location and a suggestion
    for a misspelt setting (``model``: the experiment model the file was read with)."""
    def line(err: dict) -> str:
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown setting{_suggest(loc, model)} (the settings are listed in {DOCS})"
        elif err["type"] == "missing":
            msg = "required, but missing"
        return f"{_where(loc, data)}: {msg}"
    return format_validation_error(exc, f"{source}: invalid experiment", line)


# a number or a yes/no written as something else that pydantic's lax mode would convert silently
# (trials = "4", send_seed = "true", max_steps = 4.0): refused, naming the field
_STRICT_TYPES = {"int_type": "a whole number", "float_type": "a number", "bool_type": "true or false"}


def loose_values(model: type[BaseModel], data: dict, source: str) -> str | None:
    """The message for the file's values that only lax validation accepts (a number in quotes,
    a whole number written as 4.0, a yes/no as a string), or None when every value has its type.
    ``data`` has passed lax validation; only the types of numbers and yes/no are checked strictly
    (a path stays a string, as TOML writes it)."""
    try:
        model.model_validate(data, strict=True)
    except ValidationError as exc:
        lines: dict[str, str] = {}
        for err in exc.errors():
            want = _STRICT_TYPES.get(err["type"])
            if want is None:
                continue
            loc = tuple(p for p in err["loc"] if p not in ("int", "float", "bool", "str"))
            where = _where(loc, data)
            value = err.get("input")
            shown = f'"{value}" (a string)' if isinstance(value, str) else repr(value)
            hint = f"; write it without quotes: {loc[-1]} = {value.strip()}" if _bare(value, err["type"]) else ""
            lines.setdefault(where, f"  - {where}: expected {want}, got {shown}{hint}")
        if lines:
            return "\n".join([f"{source}: invalid experiment", *lines.values()])
    return None


def _bare(value: object, kind: str) -> bool:
    """``value`` is a string that, unquoted, is a TOML value of the wanted kind."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if kind == "bool_type":
        return text in ("true", "false")
    try:
        int(text) if kind == "int_type" else float(text)
    except ValueError:
        return False
    return True

