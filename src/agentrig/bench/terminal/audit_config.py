"""The settings ``agentrig audit --bench terminal`` plays its trials with: a run's, no hidden ones.

``--config EXP.toml`` gives the experiment's ``[sandbox]`` table — the file read and checked by the
loader ``agentrig run`` uses (handed to the command by the ``agentrig audit`` dispatcher,
``commands/tasks.py``: the same messages for a bad table, exit code 1) — and its ``[benchmark]``
``tasks`` and ``task_ids`` as the defaults of ``--tasks`` / ``--task-ids``. The sandbox flags
(``--sandbox``, ``--root``, ``--network``, ``--build-network``, ``--memory-mb``, ``--cpus``,
``--cache-dir``) set the same ``[sandbox]`` fields and override the file; what neither sets keeps
``SandboxSettings``' default (``build_network = "auto"`` among them), as in a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from agentrig.errors import ConfigError, format_validation_error

from .core.base import SANDBOX_KINDS, SandboxSettings
from .settings import rel_path, sandbox_settings

NETWORK_VALUES = {"true": True, "false": False, "task": None, "harness": None}
BUILD_NETWORK_VALUES = {"auto": "auto", "host-settings": "host-settings", "true": True, "false": False}


@dataclass
class AuditSetup:
    settings: SandboxSettings
    tasks_dir: Path | None  # None: the built-in tasks
    task_ids: list[str] | None
    source: Path | None  # the experiment file, with --config
    harness: bool = True  # the network left to the task: its harness's (audit.as_harness), not a run's default


def _choice(flag: str, value: str | None, allowed: dict[str, Any]) -> Any:
    if value not in allowed:
        raise ConfigError(f"{flag} {value!r}: not a value of it.\n  fix: use one of {', '.join(allowed)}")
    return allowed[value]


def audit_setup(config: Path | None, load_experiment: Callable[[Path], tuple[Any, Path]] | None, *,
                tasks_dir: Path | None = None, task_ids: list[str] | None = None, sandbox: str | None = None,
                root: str | None = None, network: str | None = None, build_network: str | None = None,
                memory_mb: int | None = None, cpus: float | None = None, cache_dir: Path | None = None) -> AuditSetup:
    """The audit's sandbox settings and tasks: the experiment's (``config``, read by
    ``load_experiment``), the flags over them (ConfigError naming the flag or the file's field)."""
    base: dict[str, Any] = {}
    source = None
    if config is not None:
        if load_experiment is None:  # only the `agentrig audit` dispatcher hands the loader on
            raise ConfigError("--config: this command was not started by `agentrig audit`, which reads the "
                              "experiment file.\n  fix: run `agentrig audit --bench terminal --config EXP.toml`")
        exp, source = load_experiment(config)
        if exp.benchmark.kind != "terminal":
            raise ConfigError(f"{source}: [benchmark] kind = {exp.benchmark.kind!r}: `agentrig audit --bench terminal "
                              "--config` takes a terminal experiment's [sandbox].\n  fix: give an experiment of "
                              '[benchmark] kind = "terminal", or drop --config')
        sb = sandbox_settings(exp, source)  # its paths made absolute, as a run makes them
        base = sb.model_dump()
        if tasks_dir is None and exp.benchmark.tasks:
            tasks_dir = rel_path(source, exp.benchmark.tasks)
        if task_ids is None and exp.benchmark.task_ids:
            task_ids = list(exp.benchmark.task_ids)
    flags: dict[str, Any] = {}
    if sandbox is not None:
        if sandbox not in SANDBOX_KINDS:
            raise ConfigError(f"--sandbox {sandbox!r}: unknown sandbox kind.\n  fix: use one of {', '.join(SANDBOX_KINDS)}")
        flags["kind"] = sandbox
    if root is not None:
        if root not in ("image", "host"):
            raise ConfigError(f"--root {root!r}: not a root.\n  fix: use 'image' or 'host'")
        flags["root"] = root
    if network is not None:
        flags["network"] = _choice("--network", network, NETWORK_VALUES)
    # unset by the file and the flags (or --network harness): each task gets its harness's network;
    # --network task: agentrig run's default (a TB1 task offline)
    harness = network != "task" and flags.get("network", base.get("network")) is None
    if build_network is not None:
        flags["build_network"] = _choice("--build-network", build_network, BUILD_NETWORK_VALUES)
    for name, value in (("memory_mb", memory_mb), ("cpus", cpus), ("cache_dir", cache_dir)):
        if value is not None:
            flags[name] = value
    try:
        settings = SandboxSettings.model_validate({**base, **flags})
    except ValidationError as exc:  # a flag's value the settings refuse (the file's were checked by the loader)
        raise ConfigError(format_validation_error(exc, "the audit's sandbox flags",
                                                  lambda e: f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg']}")) from None
    return AuditSetup(settings=settings, tasks_dir=tasks_dir, task_ids=task_ids, source=source, harness=harness)
