"""AppWorld's task data, read from its ``data/`` tree without importing AppWorld.

    ROOT/data/datasets/<dataset>.txt          one task id a line (``<scenario>_<n>``, maybe ``:tag``)
    ROOT/data/tasks/<id>/specs.json           instruction, supervisor, datetime, db_version
    ROOT/data/tasks/<id>/ground_truth/        metadata.json (difficulty, num_apps,
                                              num_solution_code_lines), evaluation.py, and for
                                              train/dev the solution (solution.py in generator form,
                                              compiled_solution.py: a module whose solution(apis,
                                              requester) the oracle calls, as AppWorld's verify does)

The root comes from ``[benchmark] data``, else ``$APPWORLD_ROOT``; a missing tree is a
``ConfigError`` that names ``appworld download data``.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from pydantic import BaseModel

from agentrig.errors import ConfigError, DataError

ENV_VAR = "APPWORLD_ROOT"
DOWNLOAD_FIX = ("download it once with AppWorld's own command: `appworld download data --root DIR` "
                "(in the AppWorld environment: see `agentrig appworld setup`), then set [benchmark] data = \"DIR\" "
                f"or export {ENV_VAR}=DIR")


class AppWorldTask(BaseModel):
    """One AppWorld task as agentrig sees it (the world itself lives in the worker)."""

    id: str
    scenario: str
    instruction: str
    datetime: str = ""
    supervisor: dict[str, str] = {}
    difficulty: int | None = None
    num_apps: int | None = None
    num_solution_code_lines: int | None = None
    dataset: str | None = None


def scenario_of(task_id: str) -> str:
    """AppWorld's scenario (generator) id: ``50e1ac9_1`` → ``50e1ac9``."""
    return task_id.split(":")[0].rsplit("_", 1)[0]


def resolve_root(value: str | Path | None, base: Path | None = None, where: str = "[benchmark] data") -> Path:
    """The data root: ``value`` (relative to ``base``; ``where`` names it in errors), else
    $APPWORLD_ROOT; checked to hold data/."""
    if value is None:
        value = os.environ.get(ENV_VAR)
        where = f"${ENV_VAR}"
        if not value:
            raise ConfigError(f"no AppWorld data: set [benchmark] data or ${ENV_VAR}.\n  fix: {DOWNLOAD_FIX}")
    root = Path(value).expanduser()
    if not root.is_absolute() and base is not None:
        root = (base / root).resolve()
    if root.name == "data" and (root / "tasks").is_dir():
        root = root.parent
    problem = root_problem(root)
    if problem:
        raise ConfigError(f"{where} = {str(value)!r}: {problem}.\n  fix: {DOWNLOAD_FIX}")
    return root


def root_problem(root: Path) -> str | None:
    """What is missing from an AppWorld data root (None: it looks complete)."""
    data = root / "data"
    if not data.is_dir():
        return f"{data} does not exist"
    for part in ("tasks", "datasets", "base_dbs", "api_docs"):
        if not (data / part).is_dir():
            return f"{data / part} does not exist (an incomplete download?)"
    return None


def dataset_ids(root: Path, dataset: str) -> list[str]:
    path = root / "data" / "datasets" / f"{dataset}.txt"
    if not path.is_file():
        have = sorted(p.stem for p in (root / "data" / "datasets").glob("*.txt"))
        raise ConfigError(f"{path}: no such dataset file.\n  fix: use one of: {', '.join(have) or '(none)'}")
    return [line.split(":")[0].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_task(root: Path, task_id: str, dataset: str | None = None) -> AppWorldTask:
    folder = root / "data" / "tasks" / task_id
    try:
        specs = json.loads((folder / "specs.json").read_text(encoding="utf-8"))
        meta_path = folder / "ground_truth" / "metadata.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        sup = specs.get("supervisor") or specs.get("main_user") or {}
        return AppWorldTask(id=task_id, scenario=scenario_of(task_id), instruction=specs["instruction"],
                            datetime=str(specs.get("datetime", "")),
                            supervisor={k: str(v) for k, v in sup.items() if isinstance(v, (str, int))},
                            difficulty=meta.get("difficulty"), num_apps=meta.get("num_apps"),
                            num_solution_code_lines=meta.get("num_solution_code_lines"), dataset=dataset)
    except FileNotFoundError as exc:
        raise DataError(f"{folder}: the task is incomplete ({exc.filename} is missing).\n  fix: {DOWNLOAD_FIX}") from None
    except (ValueError, KeyError) as exc:
        raise DataError(f"{folder}/specs.json: unreadable ({type(exc).__name__}: {exc})") from None


def load_tasks(root: Path, dataset: str, task_ids: list[str] | None = None,
               num_tasks: int | None = None) -> list[AppWorldTask]:
    ids = dataset_ids(root, dataset)
    if task_ids:
        unknown = [t for t in task_ids if t not in ids]
        if unknown:
            raise ConfigError(f"[benchmark] task_ids: {', '.join(unknown[:5])} not in the {dataset!r} dataset "
                              f"({len(ids)} tasks).\n  fix: list them with `agentrig tasks list --bench appworld "
                              f"--dataset {dataset}`, or choose their dataset")
        ids = [t for t in ids if t in set(task_ids)]
    if num_tasks:
        ids = ids[:num_tasks]
    return [load_task(root, t, dataset) for t in ids]


CANARY_PREFIX = "# Canary String:"
SOLUTION_FILES = ("compiled_solution.py", "solution.py")
TASK_KEYS = ("instruction", "supervisor", "datetime", "db_version")  # what AppWorld's Task.load reads


def solution_code(root: Path, task_id: str) -> str | None:
    """The program that plays the task's ground-truth solution as AppWorld's own ``verify`` does: the
    whole ``compiled_solution.py`` (else ``solution.py``) — its imports and helpers too, without its
    canary line, as ``GroundTruth.load`` reads it — then ``solution(apis, requester)``. None when the
    task ships no solution (test sets)."""
    gt = root / "data" / "tasks" / task_id / "ground_truth"
    for name in SOLUTION_FILES:
        path = gt / name
        if not path.is_file():
            continue
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        if any(isinstance(node, ast.FunctionDef) and node.name == "solution" for node in tree.body):
            code = "\n".join(line for line in source.splitlines() if not line.startswith(CANARY_PREFIX)).strip()
            return code + "\n\nsolution(apis, requester)\n"
    return None


def task_problem(root: Path, task_id: str) -> str | None:
    """What is wrong with a task's files, cheaply (its specs.json read, and its metadata.json when
    there is one), naming the file; None: it looks whole."""
    folder = root / "data" / "tasks" / task_id
    specs = folder / "specs.json"
    if not specs.is_file():
        return f"{specs} is missing"
    try:
        doc = json.loads(specs.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{specs} is not readable JSON ({type(exc).__name__}: {str(exc)[:120]})"
    if not isinstance(doc, dict):
        return f"{specs} is not a JSON object"
    missing = [k for k in TASK_KEYS if k not in doc and not (k == "supervisor" and "main_user" in doc)]
    if missing:
        return f"{specs} lacks {', '.join(missing)}"
    meta = folder / "ground_truth" / "metadata.json"
    if meta.is_file():
        try:
            json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return f"{meta} is not readable JSON ({type(exc).__name__}: {str(exc)[:120]})"
    return None
