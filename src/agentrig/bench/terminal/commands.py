"""``agentrig tasks list|show --bench terminal`` and ``agentrig audit --bench terminal``.

    agentrig tasks list --bench terminal [--tasks DIR] [--skip-invalid] [--json]
    agentrig tasks show --bench terminal TASK_ID [--tasks DIR] [--json]
    agentrig audit --bench terminal [--tasks DIR] [--task-ids a,b] [--config EXP.toml] [--sandbox bwrap]
                   [--root image|host] [--network harness|task|true|false] [--build-network auto|host-settings|true|false]
                   [--memory-mb N] [--cpus N] [--cache-dir DIR] [--concurrency 4] [--task-timeout 1800] [--json]

``tasks list`` shows per task which sandbox kinds can run it and, when one cannot, why
(``needs_container`` / ``needs_network``), and whether the docker / podman daemons answer here.
``--tasks`` defaults to the built-in tasks. The audit's settings (``--config`` and the sandbox flags)
are ``audit_config.py``'s; a task that cannot be read is its ``invalid`` verdict, and the exit code is
0 once every task has its verdict (1: bad input to the audit itself).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from agentrig.cli_errors import user_errors
from agentrig.errors import ConfigError
from agentrig.tables import FitTable, output_console

from .core.base import SANDBOX_KINDS

tasks_app = typer.Typer(help="Browse terminal tasks (Terminal-Bench 1 and Harbor directories).", no_args_is_help=True,
                        pretty_exceptions_enable=False, add_completion=False)

TasksOpt = typer.Option(None, "--tasks", help="a directory of task directories (default: the built-in tasks)")
JsonOpt = typer.Option(False, "--json", help="print JSON instead of a table")


def _load(tasks_dir: Optional[Path], skip_invalid: bool = False, task_ids: list[str] | None = None):
    from .tasks.taskfile import builtin_tasks_dir, load_tasks

    return load_tasks(tasks_dir or builtin_tasks_dir(), task_ids=task_ids, skip_invalid=skip_invalid)


def _engines() -> dict[str, str | None]:
    """docker / podman: None when the engine answers (docker's daemon; podman needs none), else why not."""
    from .sandbox.docker import engine_problem

    async def probe() -> dict[str, str | None]:
        found = await asyncio.gather(*(engine_problem(k) for k in ("docker", "podman")))
        return dict(zip(("docker", "podman"), found))

    return asyncio.run(probe())


def _support_rows(tasks: list[Any], engines: dict[str, str | None] | None = None) -> list[dict[str, Any]]:
    """Per task and sandbox kind: ``ok`` (the task can run in that kind) and ``usable_here`` (and the
    kind's engine answers on this machine: docker / podman per ``engines``)."""
    from .availability import task_support

    rows = []
    for t in tasks:
        kinds = {}
        for kind in SANDBOX_KINDS:
            s = task_support(t, kind)
            problem = (engines or {}).get(kind)
            kinds[kind] = {"ok": s.ok, "reason": s.reason, "usable_here": s.ok and problem is None}
        rows.append({"id": t.id, "format": t.format, "difficulty": t.difficulty, "category": t.category,
                     "agent_timeout_s": t.agent_timeout_s, "test_timeout_s": t.test_timeout_s, "sandboxes": kinds})
    return rows


@tasks_app.command("list")
@user_errors
def tasks_list(
    tasks_dir: Optional[Path] = TasksOpt,
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="list malformed tasks apart instead of stopping"),
    json_out: bool = JsonOpt,
) -> None:
    """List terminal tasks: format, difficulty, and which sandbox kinds can run each (and why not)."""
    tasks, invalid = _load(tasks_dir, skip_invalid)
    engines = _engines()
    rows = _support_rows(tasks, engines)
    if json_out:
        print(json.dumps({"tasks": rows, "invalid": [i.model_dump(mode="json") for i in invalid],
                          "engines": engines}, ensure_ascii=False))
        return
    out = output_console()
    table = FitTable(Text(f"{len(rows)} terminal task(s)"), boxed=True)
    for col in ("task", "format", "difficulty", "category", *SANDBOX_KINDS):
        table.add_column(col)
    for r in rows:
        cells = [("yes" if s["usable_here"] else "no engine here" if s["ok"] else (s["reason"] or "no").split(":", 1)[0])
                 for s in r["sandboxes"].values()]
        table.add_row(Text(r["id"]), r["format"], r["difficulty"] or "-", r["category"] or "-", *cells)
    table.print(out)
    reasons = {(r["id"], s["reason"]) for r in rows for s in r["sandboxes"].values() if not s["ok"] and s["reason"]}
    for task_id, reason in sorted(reasons):
        kinds = [k for r in rows if r["id"] == task_id for k, s in r["sandboxes"].items() if s["reason"] == reason]
        out.print(Text(f"{task_id} ({', '.join(kinds)}): {reason}"))
    for kind, problem in engines.items():
        out.print(Text(f"{kind}: " + (("`podman info` answers (no daemon needed)" if kind == "podman" else "the client and a daemon answer")
                                      if problem is None else
                                      f"cannot be used here ({problem})"), style="dim"))
    for bad in invalid:
        out.print(Text(f"invalid: {bad.task_id}: {bad.file}: {bad.field}: {bad.problem} (fix: {bad.fix})", style="red"))


@tasks_app.command("show")
@user_errors
def tasks_show(
    task_id: str = typer.Argument(..., help="the task's directory name"),
    tasks_dir: Optional[Path] = TasksOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Show one terminal task: its instruction, limits, solution, tests, and the sandboxes that can run it."""
    tasks, _ = _load(tasks_dir, task_ids=[task_id])
    task = tasks[0]
    row = _support_rows([task])[0]
    from .sandbox.task_image import task_image

    image = task_image(task)
    services = _services_of(task)
    binds, shown = _binds_of(task)
    doc = {**task.model_dump(mode="json", exclude={"extra"}), "sandboxes": row["sandboxes"], "image": image,
           "services": services, "binds": binds, "binds_show_tests": shown}
    if json_out:
        print(json.dumps(doc, ensure_ascii=False, default=str))
        return
    out: Console = output_console()
    out.print(Text(f"{task.id}  ({task.format}, {task.difficulty or '-'}, {task.category or '-'})", style="bold"))
    out.print(Text(task.instruction))
    out.print(Text(f"agent timeout {task.agent_timeout_s:g} s · test timeout {task.test_timeout_s:g} s · workdir "
                   f"{task.workdir} · network {'allowed' if task.allow_internet else 'none'}"
                   + (" · tests run in the agent's shell" if task.run_tests_in_same_shell else "")))
    if task.solution_script is not None:
        solution = str(task.solution_script.relative_to(task.path))
    else:
        solution = f"solution.yaml, {len(task.solution or [])} step(s)" if task.solution else "none"
    out.print(Text(f"solution: {solution}"))
    out.print(Text(f"image: {image['base'] or '-'} → {image['image']}"
                   + (f" · substituted: {image['substituted']}" if image["substituted"] else "")))
    for service in services:
        ports = ", ".join(str(p) for p in service["ports"])
        out.print(Text(f"service beside the agent's: {service['name']} ({service['runs']}"
                       + (f" · port {ports}" if ports else "") + f" · ready by its {service['ready_by']})"))
    for bind in binds:
        out.print(Text(f"bind: {bind['written']} (each trial gets its own copy at {bind['target']}"
                       + (", read-only)" if bind["read_only"] else "; what it writes there stays in the trial)")))
    if shown:
        out.print(Text(f"warning: the agent can read {', '.join(shown)} through the compose file's binds "
                       "(the task's authors chose it; Docker shows them too)", style="yellow"))
    tests = sorted(str(p.relative_to(task.path)) for p in (task.tests_dir.rglob("*") if task.tests_dir else [])
                   if p.is_file() and "__pycache__" not in p.parts)
    out.print(Text(f"tests: {', '.join(tests) or 'none'}" + (f" (run by {task.run_tests.name})" if task.run_tests else "")))
    for kind, s in row["sandboxes"].items():
        out.print(Text(f"{kind}: " + ("can run it" if s["ok"] else f"cannot: {s['reason']}"),
                       style="green" if s["ok"] else "yellow"))


def _binds_of(task) -> tuple[list[dict], list[str]]:
    """The compose file's binds of the task's folder, and what of its tests and solution they show
    the agent (([], []) without one, or when a volume is not honoured: the sandboxes say why)."""
    if task.compose is None:
        return [], []
    from .tasks.compose import ComposeError
    from .tasks.compose_volumes import agent_binds, what_binds_show

    try:
        binds = agent_binds(task.compose)
    except ComposeError:
        return [], []
    return [b.model_dump(mode="json") for b in binds], what_binds_show(binds, task)


def _services_of(task) -> list[dict]:
    """The services its compose file runs beside the agent's ([] without one, or when unreadable)."""
    if task.compose is None:
        return []
    from .tasks.compose import ComposeError, read_compose

    try:
        return read_compose(task.compose).described()
    except ComposeError:
        return []


def audit_command(
    ctx: typer.Context,
    tasks_dir: Optional[Path] = typer.Option(None, "--tasks", help="a directory of task directories (default: the "
                                             "experiment's [benchmark] tasks with --config, else the built-in tasks)"),
    task_ids: Optional[str] = typer.Option(None, "--task-ids", help="comma-separated task ids (default: the "
                                           "experiment's [benchmark] task_ids with --config, else every task)"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="an experiment TOML: its [sandbox] table "
                                          "(checked as `agentrig run` checks it) and [benchmark] tasks; the flags below override it"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="[sandbox] kind: bwrap (default), local, docker, podman"),
    root: Optional[str] = typer.Option(None, "--root", help="[sandbox] root (bwrap): 'image' (default: a root built from "
                                       "packages for the task's FROM) or 'host' (the host's root stands in)"),
    network: Optional[str] = typer.Option(None, "--network", help="[sandbox] network of the trials: true, false, task "
                                          "(the task's allow_internet, as `agentrig run` plays it: a TB1 task offline) or "
                                          "harness (default: as the task's own harness plays it — every TB1 task with the "
                                          "network, a Harbor task as its allow_internet says)"),
    build_network: Optional[str] = typer.Option(None, "--build-network", help="[sandbox] build_network: auto (default: "
                                                "host-settings when this host has package-index settings, else true), "
                                                "host-settings, true, false"),
    memory_mb: Optional[int] = typer.Option(None, "--memory-mb", min=16, help="[sandbox] memory_mb of each trial"),
    cpus: Optional[float] = typer.Option(None, "--cpus", min=0.01, help="[sandbox] cpus of each trial"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="[sandbox] cache_dir: the build cache "
                                             "(default: the user cache dir)"),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="tasks audited at once"),
    task_timeout: float = typer.Option(1800.0, "--task-timeout", min=1.0,
                                       help="seconds one task's audit may take (builds and both trials); past it: timeout"),
    json_out: bool = JsonOpt,
) -> None:
    """Audit terminal tasks: per task, does the oracle pass (else: broken task) and does doing nothing fail
    (else: lenient task)? One line per task as it is known; the totals at the end. A task that cannot be
    read is its own verdict (invalid), never the audit's end. Exit code 0 when every task has its verdict."""
    import sys

    from .audit import AUDIT_STATUSES, audit_tasks
    from .audit_config import audit_setup

    setup = audit_setup(config, (ctx.obj or {}).get("load_experiment"), tasks_dir=tasks_dir,
                        task_ids=[t.strip() for t in task_ids.split(",") if t.strip()] if task_ids else None,
                        sandbox=sandbox, root=root, network=network, build_network=build_network,
                        memory_mb=memory_mb, cpus=cpus, cache_dir=cache_dir)
    settings = setup.settings
    tasks, invalid = _load(setup.tasks_dir, skip_invalid=True, task_ids=setup.task_ids)  # a bad task is its verdict
    total = len(tasks) + len(invalid)
    build = settings.build_mode()
    said = lambda v: json.dumps(v).strip('"')  # noqa: E731 - true/false as in the TOML
    shown = {"kind": settings.kind, "root": settings.root,
             "network": ("harness" if setup.harness else "task") if settings.network is None else said(settings.network),
             "build_network": said(settings.build_network) + ("" if settings.build_network == build else f" → {said(build)}")}
    out = output_console()
    # the table goes to stdout at the end; the lines as they come go to stderr under --json (stdout stays one document)
    live = Console(file=sys.stderr, highlight=False, soft_wrap=True) if json_out else out
    live.print(Text("auditing " + f"{total} task(s): " + " · ".join(f"{k} {v}" for k, v in shown.items())
                    + (f" (from {setup.source})" if setup.source else ""), style="dim"))
    style = {"ok": "green", "broken": "red", "lenient": "red", "excluded": "yellow", "invalid": "red", "error": "red",
             "base_substituted": "yellow", "timeout": "red"}
    done = [0]

    def fmt(o: Any) -> str:
        if o is None:
            return "-"
        return "invalid" if not o.valid else f"{o.reward:g} ({o.failure_mode or o.termination})"

    def line(r: Any) -> None:
        done[0] += 1
        live.print(Text.assemble(f"[{done[0]}/{total}] ", (f"{r.status:<8}", style.get(r.status, "red")),
                                 f" {r.task_id}  oracle {fmt(r.oracle)} · noop {fmt(r.noop)} · {r.duration_s:.0f} s — {r.reason}"))

    rows = asyncio.run(audit_tasks(tasks, settings, concurrency, task_timeout_s=task_timeout, on_result=line,
                                   invalid=invalid, harness=setup.harness))
    order = {t: i for i, t in enumerate(setup.task_ids or sorted(r.task_id for r in rows))}
    rows.sort(key=lambda r: order.get(r.task_id, len(order)))
    counts = {s: sum(r.status == s for r in rows) for s in AUDIT_STATUSES}
    if json_out:
        print(json.dumps({"sandbox": settings.kind, "root": settings.root, "config": str(setup.source) if setup.source else None,
                          "settings": {**settings.model_dump(mode="json"), "build_network_resolved": build,
                                       "network_as": shown["network"]},
                          "summary": counts, "tasks": [r.model_dump(mode="json") for r in rows]}, ensure_ascii=False))
        return
    table = FitTable(Text(f"terminal audit of {len(rows)} task(s) under {settings.kind}"), boxed=True)
    for col in ("task", "oracle", "noop", "status", "why"):
        table.add_column(col, wrap=col == "why")
    for r in rows:
        table.add_row(Text(r.task_id), fmt(r.oracle), fmt(r.noop), Text(r.status.upper() if r.status != "ok" else "ok",
                      style=style.get(r.status, "red")), Text(r.reason))
    table.print(out)
    out.print(Text(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no task"))


def sandbox_doctor(kind: str | None, as_json: bool) -> int:
    """``agentrig doctor --sandbox [KIND]``: each kind's checks (``sandbox.sandbox_check``).

    Exit code 0 when the kind asked for works here (without KIND: when some isolating kind —
    bwrap, docker or podman — works); a missing cgroup controller is a warning (the memory and
    process bounds are then not enforced), not a failure."""
    from .sandbox import sandbox_check

    if kind is not None and kind not in SANDBOX_KINDS:
        raise ConfigError(f"unknown sandbox kind {kind!r}.\n  fix: use one of {', '.join(SANDBOX_KINDS)}")
    kinds = [kind] if kind else list(SANDBOX_KINDS)

    async def probe() -> list[list[Any]]:
        return list(await asyncio.gather(*(sandbox_check(k) for k in kinds)))

    found = dict(zip(kinds, asyncio.run(probe())))
    warn_only = {"cgroups"}
    works = {k: all(f.ok for f in fs if f.check not in warn_only) for k, fs in found.items()}
    ok = works[kind] if kind else any(works.get(k) for k in ("bwrap", "docker", "podman"))
    if as_json:
        print(json.dumps({"ok": ok, "kinds": {k: {"works": works[k], "checks": [f.model_dump() for f in fs]}
                                               for k, fs in found.items()}}, indent=2))
        return 0 if ok else 1
    out = output_console()
    for k, fs in found.items():
        out.print(Text(f"\n{k}: " + ("works here" if works[k] else "cannot be used here"),
                       style="bold green" if works[k] else "bold red"))
        for f in fs:
            mark, style = ("✓", "green") if f.ok else (("!", "yellow") if f.check in warn_only else ("✗", "red"))
            out.print(Text.assemble((f"  {mark} ", style), f"{f.check:<8} {f.detail}"))
    if kind is None:
        out.print(Text("\n" + ("an isolating sandbox works here" if ok else
                              "no isolating sandbox works here: terminal tasks can only run with [sandbox] kind = \"local\""),
                       style="green" if ok else "red"))
    return 0 if ok else 1
