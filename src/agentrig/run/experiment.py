"""The experiment file: what to play (benchmark, tasks), how often (trials), with what (arms).

    name = "airline-gpt41"               # default: the file's stem; names the run directory

    [benchmark]
    kind = "tau2"
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

    [user]                               # the user simulator (agentrig.bench.tau.user.UserSettings)
    kind = "llm"

    [judge]
    nl_assertions = "auto"               # "auto": judge every task with nl_assertions when a judge
                                         # model is set; "basis": only where NL_ASSERTION is in the
                                         # reward basis (τ²-bench's rule, cheaper); "never"

    [channel] / [roles.agent|user|memory|judge] / [prices."model"]    # as in docs/channel.md

    [[arms]]
    name = "baseline"                    # unique; letters, digits, - _ .
    agent = { kind = "llm", tool_mode = "native" }          # AgentSettings (or an [arms.agent] table)
    roles.agent = { model = "openai/gpt-4.1", temperature = 0.0 }  # over [roles.agent]/[channel]
    plugins = [{ kind = "memory", budget = 3 }]

Relative paths (``data``, ``dir``, an agent ``prompt`` file) are relative to the experiment file.
``load_experiment`` parses and checks the file; ``resolve`` reads the data (tasks, splits), builds
each arm's channel configuration and checks that every role that needs a model has one.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentrig.agents.base import AgentSettings
from agentrig.bench.tau import data as tau_data
from agentrig.bench.tau.judge import needs_nl_judge
from agentrig.bench.tau.taskmodel import Task
from agentrig.bench.tau.user import UserSettings
from agentrig.config import ROLES, ChannelConfig, ChannelSettings, Price, Role, RoleConfig, read_toml
from agentrig.errors import ConfigError, DataError
from agentrig.plugins.base import PluginSettings


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME_RULE = "1-64 characters: letters, digits, '-', '_', '.', starting with a letter or digit"
DOCS = "docs/experiments.md"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchmarkSettings(_Strict):
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


class RunSettings(_Strict):
    trials: int = Field(1, ge=1, le=100_000)
    seed: int = 300
    concurrency: int = Field(4, ge=1, le=4096)
    max_steps: int = Field(200, ge=1)
    max_errors: int = Field(10, ge=1)
    trial_timeout_s: float | None = Field(1800.0, gt=0)
    max_invalid_retries: int = Field(3, ge=0, le=100)
    dir: str | None = None
    send_seed: bool = True


class JudgeSettings(_Strict):
    nl_assertions: Literal["auto", "basis", "never"] = "auto"


class ArmSettings(_Strict):
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


class Experiment(_Strict):
    name: str | None = None
    description: str | None = None
    benchmark: BenchmarkSettings
    run: RunSettings = RunSettings()
    user: UserSettings = UserSettings()
    judge: JudgeSettings = JudgeSettings()
    channel: ChannelSettings = ChannelSettings()
    roles: dict[Role, RoleConfig] = {}
    prices: dict[str, Price] = {}
    arms: list[ArmSettings] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str | None) -> str | None:
        if v is not None and not NAME_RE.match(v):
            raise ValueError(f"name {v!r} is not usable as a directory name ({NAME_RULE})")
        return v

    @model_validator(mode="after")
    def _unique_arms(self) -> "Experiment":
        seen: set[str] = set()
        for arm in self.arms:
            if arm.name in seen:
                raise ValueError(f"two [[arms]] are named {arm.name!r}; give every arm its own name")
            seen.add(arm.name)
        return self

    def user_kind(self) -> str:
        return self.user.kind


# ------------------------------------------------------------------------------------- errors

_FIELDS: dict[str, type[BaseModel]] = {
    "benchmark": BenchmarkSettings, "run": RunSettings, "judge": JudgeSettings, "channel": ChannelSettings,
    "arms": ArmSettings, "agent": AgentSettings, "roles": RoleConfig, "user": UserSettings,
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


def _suggest(loc: tuple) -> str:
    bad = str(loc[-1])
    parents = [str(p) for p in loc[:-1] if isinstance(p, str)]
    model = None
    if not parents:
        model = Experiment
    else:
        model = _FIELDS.get(parents[-1])
        if len(parents) >= 2 and parents[-2] == "roles":
            model = RoleConfig
    if model is None:
        return ""
    close = difflib.get_close_matches(bad, list(model.model_fields), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def format_errors(exc: ValidationError, source: str, data: dict) -> str:
    """Like ``config.format_validation_error``, with arm names in the location and a suggestion
    for a misspelt setting."""
    lines = [f"{source}: invalid experiment"]
    for err in exc.errors():
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown setting{_suggest(loc)} (the settings are listed in {DOCS})"
        elif err["type"] == "missing":
            msg = "required, but missing"
        lines.append(f"  - {_where(loc, data)}: {msg}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- loading


def load_experiment(path: str | Path) -> tuple[Experiment, Path]:
    """The parsed experiment and the absolute path of its file."""
    source = Path(path).expanduser().resolve()
    raw = read_toml(source)
    if "arms" in raw and isinstance(raw["arms"], dict):
        raise ConfigError(f"{source}: `arms` must be an array of tables: write [[arms]] (two brackets) per arm")
    try:
        exp = Experiment.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, str(source), raw)) from None
    return exp, source


@dataclass
class ArmPlan:
    """One arm, resolved: its agent, plug-ins and the channel configuration its trials use."""

    name: str
    agent: AgentSettings
    plugins: list[PluginSettings]
    channel: ChannelConfig
    roles_needed: list[str]


@dataclass
class Resolved:
    """An experiment with its data read: the tasks to play and each arm's channel."""

    exp: Experiment
    source: Path
    data_root: Path | None
    tasks: list[tuple[str, Task]]  # (domain, task), in file order per domain
    arms: list[ArmPlan]
    run_dir: Path
    splits: dict[str, str | None] = field(default_factory=dict)  # the split used per domain

    @property
    def name(self) -> str:
        return self.exp.name or self.source.stem


def _rel(source: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else (source.parent / p).resolve()


def _data_root(exp: Experiment, source: Path) -> Path | None:
    if exp.benchmark.data:
        return tau_data.resolve_data_root(_rel(source, exp.benchmark.data))
    if os.environ.get(tau_data.ENV_VAR):
        return tau_data.resolve_data_root(None)
    return None  # fine for built-in domains; domain_dir names the fix for the others


def _select(exp: Experiment, source: Path, root: Path | None) -> tuple[list[tuple[str, Task]], dict[str, str | None]]:
    b = exp.benchmark
    ids = b.task_ids
    if isinstance(ids, list) and len(b.domains) > 1:
        raise ConfigError(f"{source}: benchmark.task_ids is a list but {len(b.domains)} domains are selected.\n"
                          "  fix: name the ids per domain: task_ids = { airline = [\"0\"], retail = [\"3\"] }")
    if isinstance(ids, dict):
        extra = sorted(set(ids) - set(b.domains))
        if extra:
            raise ConfigError(f"{source}: benchmark.task_ids names domain(s) {', '.join(extra)} that are not in "
                              f"benchmark.domains ({', '.join(b.domains)}).\n  fix: add them to domains or drop them")
    if len(set(b.domains)) != len(b.domains):
        raise ConfigError(f"{source}: benchmark.domains lists a domain twice")
    out: list[tuple[str, Task]] = []
    splits: dict[str, str | None] = {}
    for domain in b.domains:
        from agentrig.bench.tau.domains import get_domain

        get_domain(domain)  # an unknown domain: ConfigError listing the known ones
        wanted = ids if isinstance(ids, list) else (ids or {}).get(domain)
        split = b.split
        if split == "all":
            split = None
        elif split is None and not wanted:
            split = "base" if "base" in tau_data.load_splits(root, domain) else None
        try:
            tasks = tau_data.select_tasks(root, domain, split=split, task_ids=wanted or None)
        except DataError as exc:
            raise DataError(f"{source}: benchmark of domain {domain!r}: {exc}") from None
        if b.num_tasks is not None:
            tasks = tasks[: b.num_tasks]
        if not tasks:
            raise ConfigError(f"{source}: no task selected in domain {domain!r}.\n  fix: check split / task_ids")
        splits[domain] = split
        out.extend((domain, t) for t in tasks)
    return out, splits


def _merge_role(base: RoleConfig | None, over: RoleConfig | None) -> RoleConfig | None:
    if over is None:
        return base
    merged = base.model_dump(exclude_none=True) if base is not None else {}
    for name, value in over.model_dump(exclude_none=True).items():
        if name in ("headers", "headers_from_env", "extra_body"):
            merged[name] = {**merged.get(name, {}), **value}
        else:
            merged[name] = value
    return RoleConfig(**merged)


def arm_channel(exp: Experiment, arm: ArmSettings) -> ChannelConfig:
    """[channel] + [roles.X] with the arm's ``roles.X`` overrides on top."""
    roles = {}
    for role in ROLES:
        merged = _merge_role(exp.roles.get(role), arm.roles.get(role))
        if merged is not None:
            roles[role] = merged
    return ChannelConfig(channel=exp.channel, roles=roles, prices=exp.prices)


def _plugin_roles(p: PluginSettings) -> set[str]:
    from agentrig import plugins

    factory = plugins.REGISTRY.get(p.kind)
    roles = getattr(factory, "roles", None)
    return set(roles) if roles is not None else {"memory"}


def roles_needed(exp: Experiment, arm: ArmSettings, tasks: list[tuple[str, Task]]) -> list[str]:
    """The roles whose model calls this arm's trials make."""
    need: set[str] = set()
    if arm.agent.kind == "llm":
        need.add("agent")
    if exp.user_kind() == "llm":
        need.add("user")
    for p in arm.plugins:
        need |= _plugin_roles(p)
    if exp.judge.nl_assertions != "never" and any(needs_nl_judge(t) for _, t in tasks):
        need.add("judge")
    return [r for r in ROLES if r in need]


def _check_arm(exp: Experiment, source: Path, arm: ArmSettings, cfg: ChannelConfig,
               tasks: list[tuple[str, Task]], need: list[str]) -> None:
    from agentrig import plugins

    where = f"{source}: arm {arm.name!r}"
    known = plugins.available()
    for p in arm.plugins:
        if p.kind not in known:
            raise ConfigError(f"{where}: unknown plug-in kind {p.kind!r}.\n"
                              f"  fix: use one of: {', '.join(known) or '(no plug-ins are installed)'}")
        check = getattr(plugins.REGISTRY[p.kind], "check", None)
        if check is not None:  # the plug-in's own settings, checked before anything is played
            check(p, where)
    a = arm.agent
    if a.prompt != "default":
        path = Path(a.prompt)
        if not path.is_file():
            raise ConfigError(f"{where}: agent.prompt file {path} not found.\n"
                              "  fix: give a text file (relative to the experiment file) or \"default\"")
    for domain in sorted({d for d, _ in tasks}):
        if a.policy not in tau_data.policy_variants(domain):
            raise ConfigError(f"{where}: agent.policy {a.policy!r} is not a policy of domain {domain!r}.\n"
                              f"  fix: use one of: {', '.join(tau_data.policy_variants(domain))}")
    for role in need:
        if cfg.resolve(role).model:
            continue
        why = {
            "agent": f"its agent kind is {a.kind!r}",
            "user": "the user simulator is an LLM ([user] kind = \"llm\")",
            "memory": f"its plug-in(s) {', '.join(p.kind for p in arm.plugins)} call the memory role",
            "judge": "task(s) " + ", ".join(sorted({f"{d}/{t.id}" for d, t in tasks
                                                  if needs_nl_judge(t)})[:5])
                     + " have nl_assertions and NL_ASSERTION in their reward basis",
        }[role]
        fix = {
            "agent": "set `model` in [roles.agent] (or the arm's roles.agent, or [channel]), "
                     "or use a reference agent (kind = \"gold\" / \"noop\")",
            "user": "set `model` in [roles.user] (or [channel]), or use the scripted user ([user] kind = \"scripted\")",
            "memory": "set `model` in [roles.memory] (or the arm's roles.memory, or [channel])",
            "judge": "set `model` in [roles.judge] (or [channel]), or [judge] nl_assertions = \"never\" "
                     "(those components are then not computed)",
        }[role]
        raise ConfigError(f"{where}: the {role} role has no model, but {why}.\n  fix: {fix}")


def resolve(exp: Experiment, source: Path, run_dir: str | Path | None = None) -> Resolved:
    """Read the data and check the experiment as a whole (before anything is played)."""
    root = _data_root(exp, source)
    tasks, splits = _select(exp, source, root)
    if exp.user.kind == "llm":  # "tau2" guidelines without the files: a ConfigError naming the fix
        from agentrig.bench.tau.user_prompts import resolve_guidelines

        resolve_guidelines(exp.user.guidelines, root, False)
    arms: list[ArmPlan] = []
    for arm in exp.arms:
        agent = arm.agent
        if agent.prompt != "default":
            agent = agent.model_copy(update={"prompt": str(_rel(source, agent.prompt))})
            arm = arm.model_copy(update={"agent": agent})
        cfg = arm_channel(exp, arm)
        need = roles_needed(exp, arm, tasks)
        _check_arm(exp, source, arm, cfg, tasks, need)
        arms.append(ArmPlan(arm.name, agent, list(arm.plugins), cfg, need))
    name = exp.name or source.stem
    if run_dir is not None:
        directory = Path(run_dir).expanduser().resolve()
    elif exp.run.dir:
        directory = _rel(source, exp.run.dir)
    else:
        directory = (source.parent / "runs" / name).resolve()
    return Resolved(exp, source, root, tasks, arms, directory, splits)


def load(path: str | Path, run_dir: str | Path | None = None) -> Resolved:
    exp, source = load_experiment(path)
    return resolve(exp, source, run_dir)
