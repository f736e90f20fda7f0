"""AppWorld's commands: ``agentrig appworld setup|doctor|synthetic`` and
``agentrig tasks list|show --bench appworld``.

    agentrig appworld setup [--env DIR]          # AppWorld's venv: pip install appworld, appworld install
    agentrig appworld doctor [--data DIR]        # environment ready? data there? every task readable? a world opens?
    agentrig appworld synthetic DIR              # a small synthetic data/ tree (no download; for trying it out)
    agentrig tasks list --bench appworld [--data DIR] [--dataset dev]
    agentrig tasks show --bench appworld TASK_ID [--data DIR]
    agentrig audit --bench appworld [--data DIR] [--dataset dev]   # per task: oracle passes? no-op fails?

``agentrig doctor --bench appworld`` is the same check as ``agentrig appworld doctor``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from agentrig.cli_errors import user_errors
from agentrig.errors import AgentrigError, ConfigError

from . import env as aw_env
from .data import DOWNLOAD_FIX, ENV_VAR, dataset_ids, load_task, load_tasks, resolve_root, root_problem, task_problem
from .settings import DATASETS

out = Console(highlight=False)
appworld_app = typer.Typer(help="AppWorld: its environment, a readiness check, synthetic data.", no_args_is_help=True,
                           pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
tasks_app = typer.Typer(help="AppWorld's tasks.", no_args_is_help=True, pretty_exceptions_enable=False,
                        add_completion=False, rich_markup_mode=None)

DataOpt = typer.Option(None, "--data", help=f"the AppWorld root holding data/ (default: ${ENV_VAR})")
EnvOpt = typer.Option(None, "--env", help=f"the venv for AppWorld (default: ${aw_env.ENV_VAR} or ~/.cache/agentrig/appworld-env)")
PythonOpt = typer.Option(None, "--python", help="the python of an AppWorld environment made another way")


@appworld_app.command("setup")
@user_errors
def setup_command(env: Optional[Path] = EnvOpt,
                  base_python: Optional[str] = typer.Option(None, "--base-python", help="the python >= 3.11 to make the venv with")) -> None:
    """Make AppWorld's own environment: a venv, `pip install appworld`, `appworld install` (offline)."""
    where = (env or aw_env.default_env()).expanduser().resolve()
    out.print(f"AppWorld environment: {where}")
    try:
        status = aw_env.setup(where, base_python=base_python)
    except (OSError, Exception) as exc:  # noqa: BLE001 - a failed pip or venv: say which step
        raise AgentrigError(f"setting up the AppWorld environment at {where} failed: {exc}\n"
                            "  fix: check that pip can reach the package index (pip config), then run the command again") from None
    if not status.ok:
        raise AgentrigError(f"{status.problem}\n  fix: {status.fix}")
    out.print(f"ready: appworld {status.appworld} ({status.python})")
    if env is not None and env.expanduser().resolve() != aw_env.default_env().resolve():
        out.print(escape(f"use it with: export {aw_env.ENV_VAR}={where}   (or [benchmark] python = \"{status.python}\")"))


@appworld_app.command("synthetic")
@user_errors
def synthetic_command(root: Path = typer.Argument(..., help="where to write data/ and synthetic.json"),
                      python: Optional[str] = PythonOpt) -> None:
    """Build a small synthetic AppWorld data/ tree in the real shape, with AppWorld's own code (five tasks, two apps)."""
    from .synthetic import build

    py = aw_env.resolve_python(python)
    status = aw_env.check(py)
    if not status.ok:
        raise ConfigError(f"{status.problem}\n  fix: {status.fix}")
    build(py, root)
    out.print(f"wrote {root.resolve() / 'data'} (datasets: {', '.join(DATASETS)}); try: export {ENV_VAR}={root.resolve()}")


def doctor(data: str | None, python: str | None, as_json: bool = False, console: Console | None = None) -> int:
    """Check the AppWorld environment, the data, and that a world opens; print each problem's fix. 0: ready."""
    console = console or out
    checks: list[dict] = []
    py = aw_env.resolve_python(python)
    status = aw_env.check(py)
    checks.append({"check": "environment", "ok": status.ok,
                   "detail": f"appworld {status.appworld} at {py}" if status.ok else status.problem, "fix": status.fix})
    root = None
    try:
        root = resolve_root(data, where="--data" if data else "[benchmark] data")
        ids = {d: len(dataset_ids(root, d)) for d in DATASETS if (root / "data" / "datasets" / f"{d}.txt").is_file()}
        checks.append({"check": "data", "ok": bool(ids), "detail": f"{root}/data: " + ", ".join(f"{d} {n}" for d, n in ids.items()),
                       "fix": None if ids else DOWNLOAD_FIX})
    except AgentrigError as exc:
        checks.append({"check": "data", "ok": False, "detail": str(exc).split("\n")[0], "fix": DOWNLOAD_FIX})
    good: str | None = None
    if root is not None and checks[-1]["ok"]:
        tasks_check, good = _tasks_check(root)
        checks.append(tasks_check)
    if status.ok and root is not None and good is not None:
        checks.append(_world_check(py, root, good))
    ok = all(c["ok"] for c in checks)
    if as_json:
        sys.stdout.write(json.dumps({"ok": ok, "checks": checks}, indent=2) + "\n")
    else:
        for c in checks:
            mark = "[green]✓[/]" if c["ok"] else "[red]✗[/]"  # as every other check agentrig prints
            console.print(f"{mark} {escape(c['check'])}: {escape(str(c['detail']))}", soft_wrap=True)
            if not c["ok"] and c.get("fix"):
                console.print(f"      fix: {escape(c['fix'])}", soft_wrap=True)
        console.print("AppWorld is ready." if ok else "AppWorld is not ready (see the fixes above).")
    return 0 if ok else 1


def _tasks_check(root: Path) -> tuple[dict, str | None]:
    """Every task of every dataset read cheaply (its specs.json, its metadata.json): each unreadable
    file named. Returns the check and the first whole task (for the world check), if any."""
    ids = list(dict.fromkeys(i for d in DATASETS if (root / "data" / "datasets" / f"{d}.txt").is_file()
                             for i in dataset_ids(root, d)))
    if not ids:
        return {"check": "tasks", "ok": False, "detail": "no task listed in any dataset", "fix": DOWNLOAD_FIX}, None
    problems = {t: p for t in ids if (p := task_problem(root, t)) is not None}
    good = next((t for t in ids if t not in problems), None)
    if not problems:
        return {"check": "tasks", "ok": True, "fix": None, "detail": f"{len(ids)} task(s) read"}, good
    shown = "; ".join(list(problems.values())[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
    fix = ("restore the file(s) named from a fresh download — `appworld download data --root NEWDIR` "
           "(in the AppWorld environment), then copy them over or point [benchmark] data / "
           f"${ENV_VAR} at NEWDIR — or remove those task ids from {root}/data/datasets/*.txt")
    return {"check": "tasks", "ok": False, "fix": fix, "bad": sorted(problems),
            "detail": f"{len(problems)} of {len(ids)} task(s) unreadable: {shown}"}, good


def _world_check(python: Path, root: Path, first: str) -> dict:
    from .pool import EngineError, WorkerError, WorkerPool

    async def probe() -> dict:
        pool = WorkerPool(python, root, 1)
        try:
            async with pool.lease() as w:
                opened = await w.call("open", task_id=first, exec_timeout_s=30, timeout_s=120)
                await w.call("execute", code="apis.supervisor.show_profile()", timeout_s=60)
                return {"check": "world", "ok": True, "fix": None,
                        "detail": f"task {first} opened in {opened.get('open_s', 0):.2f} s (worker import "
                                  f"{w.info.get('import_s')} s)"}
        finally:
            pool.close()

    try:
        import asyncio

        return asyncio.run(probe())
    except (WorkerError, EngineError) as exc:
        return {"check": "world", "ok": False, "detail": f"task {first} did not open: {exc}",
                "fix": f"{aw_env.SETUP_FIX}; if it persists, download the data again ({DOWNLOAD_FIX})"}


@appworld_app.command("doctor")
@user_errors
def doctor_command(data: Optional[str] = DataOpt, python: Optional[str] = PythonOpt,
                   as_json: bool = typer.Option(False, "--json", help="print the checks as JSON")) -> None:
    """Say whether AppWorld's environment and data are ready, and how to fix each problem."""
    raise typer.Exit(doctor(data, python, as_json))


@tasks_app.command("list")
@user_errors
def list_command(data: Optional[str] = DataOpt,
                 dataset: str = typer.Option("dev", "--dataset", help=f"one of {', '.join(DATASETS)}")) -> None:
    """List a dataset's tasks: id, scenario, difficulty, apps, instruction."""
    root = resolve_root(data, where="--data")
    for t in load_tasks(root, dataset):
        out.print(f"{t.id}  scenario {t.scenario}  difficulty {t.difficulty}  apps {t.num_apps}  {t.instruction[:90]}",
                  markup=False, soft_wrap=True)


@tasks_app.command("show")
@user_errors
def show_command(task_id: str = typer.Argument(...), data: Optional[str] = DataOpt) -> None:
    """Show one task in full (as JSON)."""
    root = resolve_root(data, where="--data")
    if not (root / "data" / "tasks" / task_id).is_dir():
        raise ConfigError(f"no task {task_id!r} under {root}/data/tasks.\n  fix: list them with `agentrig tasks list --bench appworld`")
    sys.stdout.write(json.dumps(load_task(root, task_id).model_dump(), indent=2, ensure_ascii=False) + "\n")


@user_errors
def audit_command(data: Optional[str] = DataOpt,
                  dataset: str = typer.Option("dev", "--dataset", help=f"one of {', '.join(DATASETS)}"),
                  python: Optional[str] = PythonOpt,
                  as_json: bool = typer.Option(False, "--json", help="print the rows as JSON")) -> None:
    """Per task, in AppWorld's own engine: does the oracle (the task's solution) pass, does doing
    nothing fail? A task a no-op passes is lenient; one whose solution fails is broken here."""
    from .pool import EngineError, WorkerError, WorkerPool

    root = resolve_root(data, where="--data")
    py = aw_env.resolve_python(python)
    status = aw_env.check(py)
    if not status.ok:
        raise ConfigError(f"{status.problem}\n  fix: {status.fix}")
    tasks = load_tasks(root, dataset)

    async def audit() -> list[dict]:
        from .data import solution_code

        rows = []
        pool = WorkerPool(py, root, 1)
        try:
            async with pool.lease() as w:
                for t in tasks:
                    row: dict = {"task": t.id, "oracle": None, "noop": None}
                    try:
                        code = solution_code(root, t.id)
                        if code is not None:
                            await w.call("open", task_id=t.id, exec_timeout_s=100, raise_on_failure=False, timeout_s=300)
                            await w.call("execute", code=code, timeout_s=160)
                            row["oracle"] = bool((await w.call("evaluate", timeout_s=300))["success"])
                        await w.call("open", task_id=t.id, exec_timeout_s=100, timeout_s=300)
                        row["noop"] = bool((await w.call("evaluate", timeout_s=300))["success"])
                    except EngineError as exc:
                        row["error"] = str(exc)[:300]
                    rows.append(row)
        finally:
            pool.close()
        return rows

    import asyncio

    try:
        rows = asyncio.run(audit())
    except WorkerError as exc:
        raise AgentrigError(f"{exc}\n  fix: check the environment with `agentrig doctor --bench appworld`") from None
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    word = {True: "passes", False: "fails", None: "—"}
    for r in rows:
        note = (" (lenient: a no-op passes)" if r["noop"] else "") + (" (broken: its solution fails)" if r["oracle"] is False else "")
        out.print(f"{r['task']}  oracle {word[r['oracle']]}  noop {word[r['noop']]}{note}"
                  + (f"  error: {r['error']}" if r.get("error") else ""), markup=False, soft_wrap=True)
    lenient = sum(1 for r in rows if r["noop"])
    out.print(f"{len(rows)} task(s); {lenient} lenient; {sum(1 for r in rows if r['oracle'] is None)} without a solution",
              markup=False)


__all__ = ["appworld_app", "audit_command", "doctor", "root_problem", "tasks_app"]
