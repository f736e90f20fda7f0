"""Loading an experiment file (models and the file format: ``experiment_settings.py``) and
resolving it: ``load_experiment`` parses and checks the file (with the model of its benchmark
kind); ``resolve`` has the benchmark (``benchmark.py``) select its tasks, builds each arm's channel
configuration and checks that every role that needs a model has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrig.agents.base import AgentSettings
from agentrig.benchmark import Benchmark, get_benchmark
from agentrig.config import ROLES, ChannelConfig, RoleConfig, merge_layers, read_toml
from agentrig.errors import ConfigError
from agentrig.plugins.base import PluginSettings

from .experiment_settings import ArmSettings, Experiment, benchmark_kind, experiment_model, format_errors, loose_values


# ------------------------------------------------------------------------------------- loading


def load_experiment(path: str | Path) -> tuple[Experiment, Path]:
    """The parsed experiment and the absolute path of its file."""
    source = Path(path).expanduser().resolve()
    raw = read_toml(source)
    if "arms" in raw and isinstance(raw["arms"], dict):
        raise ConfigError(f"{source}: `arms` must be an array of tables: write [[arms]] (two brackets) per arm")
    try:
        model = experiment_model(benchmark_kind(raw))
    except ConfigError as exc:
        raise ConfigError(f"{source}: benchmark.kind: {exc}") from None
    try:
        exp = model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, str(source), raw, model)) from None
    loose = loose_values(model, raw, str(source))  # trials = "4": a type lax validation would convert
    if loose:
        raise ConfigError(loose)
    return exp, source  # type: ignore[return-value]


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
    tasks: list[tuple[str, Any]]  # (domain, task) in file order per domain (TrialKey.domain)
    arms: list[ArmPlan]
    run_dir: Path
    splits: dict[str, str | None] = field(default_factory=dict)  # the split used per domain
    bench: Benchmark | None = None  # the benchmark that plays the tasks (benchmark.py)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the benchmark's, per run
    excluded: dict[str, str] = field(default_factory=dict)  # "domain/id" → why the benchmark left it out

    @property
    def benchmark(self) -> Benchmark:
        return self.bench if self.bench is not None else get_benchmark(self.exp.benchmark.kind)

    @property
    def name(self) -> str:
        return self.exp.name or self.source.stem


def rel_path(source: Path, value: str) -> Path:
    """A path of the experiment file: relative paths are relative to the file."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else (source.parent / p).resolve()


def _merge_role(base: RoleConfig | None, over: RoleConfig | None) -> RoleConfig | None:
    if over is None:
        return base
    return RoleConfig(**merge_layers(base, over))


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


def _plugin_paths(p: PluginSettings, source: Path) -> PluginSettings:
    """A plug-in's settings with its file paths made absolute (relative to the experiment file),
    when the plug-in has any (``with_paths``)."""
    from agentrig import plugins

    plugins.available()  # the built-in plug-ins register themselves
    with_paths = getattr(plugins.REGISTRY.get(p.kind), "with_paths", None)
    return with_paths(p, source) if with_paths is not None else p


def _python_agent_paths(agent: AgentSettings, source: Path) -> AgentSettings:
    """A Python agent's ``path`` directories and its ``python`` (when it is a path, not a command
    name found on PATH) relative to the experiment file; the same object when there are none."""
    update: dict[str, Any] = {}
    if agent.path:
        update["path"] = [str(rel_path(source, p)) for p in agent.path]
    if agent.python and ("/" in agent.python or agent.python.startswith("~")):
        # not resolved: a venv's bin/python is a symlink, and the venv is found from its own path
        p = Path(agent.python).expanduser()
        update["python"] = str(p if p.is_absolute() else source.parent / p)
    return agent.model_copy(update=update) if update else agent


def roles_needed(exp: Experiment, arm: ArmSettings, tasks: list[tuple[str, Any]],
                 bench: Benchmark | None = None) -> list[str]:
    """The roles whose model calls this arm's trials make: the agent's, the plug-ins', and
    those of the benchmark's own participants (τ²: the user simulator, the NL judge)."""
    bench = bench if bench is not None else get_benchmark(exp.benchmark.kind)
    need: set[str] = set()
    if arm.agent.kind == "llm":
        need.add("agent")
    need |= bench.roles_needed(exp, arm, tasks)
    for p in arm.plugins:
        need |= _plugin_roles(p)
    return [r for r in ROLES if r in need]


def _check_arm(exp: Experiment, source: Path, arm: ArmSettings, cfg: ChannelConfig,
               tasks: list[tuple[str, Any]], need: list[str], bench: Benchmark) -> None:
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
    bench.check_arm(exp, where, arm, tasks)
    for role in need:
        if cfg.resolve(role).model:
            continue
        if role == "agent":
            why = f"its agent kind is {a.kind!r}"
            fix = ("set `model` in [roles.agent] (or the arm's roles.agent, or [channel]), "
                   "or use a reference agent (kind = \"gold\" / \"noop\")")
        elif role in bench.roles_needed(exp, arm, tasks):
            why, fix = bench.role_reason(exp, role, arm, tasks)
        else:
            why = f"its plug-in(s) {', '.join(p.kind for p in arm.plugins)} call the {role} role"
            fix = f"set `model` in [roles.{role}] (or the arm's roles.{role}, or [channel])"
        raise ConfigError(f"{where}: the {role} role has no model, but {why}.\n  fix: {fix}")


def resolve(exp: Experiment, source: Path, run_dir: str | Path | None = None, *, prepare: bool = True) -> Resolved:
    """Read the data and check the experiment as a whole (before anything is played).
    ``prepare``: build what every selected task needs now (``Benchmark.prepare``; a task whose
    build fails is excluded); ``run --smoke``/``--estimate`` pass False (their trials build what
    they play)."""
    bench = get_benchmark(exp.benchmark.kind)
    selection = bench.select(exp, source)
    tasks = selection.tasks
    arms: list[ArmPlan] = []
    for arm in exp.arms:
        agent = arm.agent
        if agent.prompt != "default":
            agent = agent.model_copy(update={"prompt": str(rel_path(source, agent.prompt))})
            arm = arm.model_copy(update={"agent": agent})
        for field in ("config_file", "mount"):  # an external agent's own files, beside the experiment
            if getattr(agent, field) is not None:
                agent = agent.model_copy(update={field: str(rel_path(source, getattr(agent, field)))})
                arm = arm.model_copy(update={"agent": agent})
        located_agent = _python_agent_paths(agent, source)
        if located_agent is not agent:
            agent = located_agent
            arm = arm.model_copy(update={"agent": agent})
        located = [_plugin_paths(p, source) for p in arm.plugins]
        if located != list(arm.plugins):
            arm = arm.model_copy(update={"plugins": located})
        cfg = arm_channel(exp, arm)
        need = roles_needed(exp, arm, tasks, bench)
        _check_arm(exp, source, arm, cfg, tasks, need, bench)
        arms.append(ArmPlan(arm.name, agent, list(arm.plugins), cfg, need))
    if prepare:  # after every arm is checked: a mistake in one is said before anything is built or installed
        bench.prepare(exp, source, selection)
        tasks = selection.tasks
    bench.check(exp, source, selection)
    name = exp.name or source.stem
    if run_dir is not None:
        directory = Path(run_dir).expanduser().resolve()
    elif exp.run.dir:
        directory = rel_path(source, exp.run.dir)
    else:
        directory = (source.parent / "runs" / name).resolve()
    return Resolved(exp, source, selection.data_root, tasks, arms, directory, selection.splits, bench,
                    excluded=dict(selection.excluded))


def load(path: str | Path, run_dir: str | Path | None = None, *, prepare: bool = True) -> Resolved:
    exp, source = load_experiment(path)
    return resolve(exp, source, run_dir, prepare=prepare)
