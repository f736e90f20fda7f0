"""Loading an experiment file (models and the file format: ``experiment_settings.py``) and
resolving it: ``load_experiment`` parses and checks the file; ``resolve`` reads the data (tasks,
splits), builds each arm's channel configuration and checks that every role that needs a model
has one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from agentrig.agents.base import AgentSettings
from agentrig.bench.tau import data as tau_data
from agentrig.bench.tau.judge import needs_nl_judge
from agentrig.bench.tau.taskmodel import Task
from agentrig.config import ROLES, ChannelConfig, RoleConfig, read_toml
from agentrig.errors import ConfigError, DataError
from agentrig.plugins.base import PluginSettings

from .experiment_settings import ArmSettings, Experiment, format_errors


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
