"""Reading terminal tasks from disk: Terminal-Bench 1 (``task.yaml``) and Harbor (``task.toml``).

A task is a directory; its id is the directory's name. ``load_tasks(root)`` reads every task
directory under `root` (both formats mixed; `root` may also be one task directory). A malformed
task raises one ``TaskFileError`` naming the file, the field and the fix (so does one whose reading
raises anything else: an unreadable file, a value the task model refuses); with
``skip_invalid=True`` the malformed ones are returned in a list and loading goes on.

Terminal-Bench 1 layout::

    task.yaml            instruction, difficulty, category, tags, parser_name (pytest; any name
                         loads, one Terminal-Bench lacks is the task's `unsupported` verdict),
                         max_agent_timeout_sec (360), max_test_timeout_sec (60),
                         run_tests_in_same_shell (false); every other key is kept in `extra`
    Dockerfile and/or docker-compose.yaml
    solution.sh | solution.yaml   (a list of {command, block, min_timeout_sec, append_enter})
    run-tests.sh         optional; without it the verifier runs pytest on tests/test_outputs.py
    tests/               test_outputs.py and whatever the tests need

Harbor layout::

    task.toml            [metadata] difficulty/category/tags, [agent] timeout_sec,
                         [verifier] timeout_sec (600)/env, [environment] docker_image, cpus,
                         memory_mb (or memory = "2G"), allow_internet (true), network_mode ...
    instruction.md
    environment/Dockerfile (or environment/docker-compose.yaml)
    solution/solve.sh
    tests/test.sh        writes /logs/verifier/reward.txt or reward.json
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from agentrig.errors import DataError, suggestions

from .taskmodel import DEFAULT_AGENT_TIMEOUT_S, DEFAULT_TEST_TIMEOUT_S, SolutionStep, TerminalTask

HARBOR_VERIFIER_TIMEOUT_S = 600.0
HARBOR_REWARD_PARSER = "reward-file"


class TaskFileError(DataError):
    """A malformed task: names the file, the field and the fix."""

    def __init__(self, path: Path, field: str, problem: str, fix: str):
        self.path, self.field, self.problem, self.fix = Path(path), field, problem, fix
        super().__init__(f"{path}: {field}: {problem}\n  fix: {fix}")


class InvalidTask(BaseModel):
    task_id: str
    path: Path
    file: Path
    field: str
    problem: str
    fix: str


def _num(value: Any, path: Path, field: str, default: float | None) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskFileError(path, field, f"{value!r} is not a positive number of seconds",
                            f"write a number such as {default or 60:g}")
    return float(value)


def _str_list(value: Any, path: Path, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise TaskFileError(path, field, f"{value!r} is not a list of strings", f'write e.g. {field} = ["shell", "text"]')
    return [str(v).strip().rstrip(",") for v in value]


def _opt_str(value: Any, path: Path, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TaskFileError(path, field, f"{value!r} is not a string", f"write {field} as a string")


def _workdir(dockerfile: Path | None) -> str:
    """The last WORKDIR of the Dockerfile (absolute), or /app (Terminal-Bench's convention)."""
    if dockerfile is None or not dockerfile.is_file():
        return "/app"
    wd = "/"
    seen = False
    for line in dockerfile.read_text(errors="replace").splitlines():
        m = re.match(r"\s*WORKDIR\s+(\S+)", line, re.IGNORECASE)
        if m:
            arg = m.group(1).strip("\"'")
            wd = arg if arg.startswith("/") else (wd.rstrip("/") + "/" + arg)
            seen = True
    return wd if seen else "/app"


def _compose_dockerfile(compose: Path) -> Path | None:
    """The Dockerfile the compose file's first service builds (context + dockerfile), if readable."""
    try:
        data = yaml.safe_load(compose.read_text(errors="replace")) or {}
        services = data.get("services") or {}
        svc = services.get("client") or next(iter(services.values()), {}) or {}
        build = svc.get("build")
    except (yaml.YAMLError, AttributeError, StopIteration):
        return None
    if isinstance(build, str):
        ctx, name = build, "Dockerfile"
    elif isinstance(build, dict):
        ctx, name = str(build.get("context", ".")), str(build.get("dockerfile", "Dockerfile"))
    else:
        return None
    path = (compose.parent / ctx / name).resolve()
    return path if path.is_file() else None


def _read_solution_yaml(path: Path) -> list[SolutionStep]:
    try:
        data = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise TaskFileError(path, "(syntax)", f"not valid YAML ({_yaml_where(exc)})", "fix the YAML syntax") from None
    if not isinstance(data, list) or not data:
        raise TaskFileError(path, "(top level)", "must be a non-empty list of steps",
                            "write items like '- command: ls -la' with optional block, min_timeout_sec, append_enter")
    steps = []
    for i, item in enumerate(data):
        where = f"[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("command"), str):
            raise TaskFileError(path, f"{where}.command", "missing or not a string", "give each step a 'command: ...' string")
        unknown = set(item) - {"command", "block", "min_timeout_sec", "append_enter"}
        if unknown:
            raise TaskFileError(path, f"{where}.{sorted(unknown)[0]}", "unknown field",
                                "use only command, block, min_timeout_sec, append_enter")
        for key in ("block", "append_enter"):
            if key in item and not isinstance(item[key], bool):
                raise TaskFileError(path, f"{where}.{key}", f"{item[key]!r} is not true/false", f"write {key}: true or false")
        mt = item.get("min_timeout_sec", 0)
        if isinstance(mt, bool) or not isinstance(mt, (int, float)) or mt < 0:
            raise TaskFileError(path, f"{where}.min_timeout_sec", f"{mt!r} is not a number >= 0", "write e.g. min_timeout_sec: 0.1")
        steps.append(SolutionStep(command=item["command"], block=item.get("block", True),
                                  min_timeout_sec=float(mt), append_enter=item.get("append_enter", True)))
    return steps


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "syntax error"
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else str(problem)


def _load_tb1(task_dir: Path) -> TerminalTask:
    path = task_dir / "task.yaml"
    try:
        data = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise TaskFileError(path, "(syntax)", f"not valid YAML ({_yaml_where(exc)})", "fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise TaskFileError(path, "(top level)", "must be a mapping of fields", "start with 'instruction: |-' and the task text")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskFileError(path, "instruction", "missing or empty", "add 'instruction: |-' followed by the task text")
    # any name loads: one no Terminal-Bench parser has makes the task `unsupported` (taskmodel.support)
    parser = data.get("parser_name", "pytest")
    if not isinstance(parser, str) or not parser.strip():
        raise TaskFileError(path, "parser_name", f"{parser!r} is not a parser's name",
                            "write e.g. parser_name: pytest (Terminal-Bench's parsers: pytest, swebench, swelancer, "
                            "sweperf, mlebench)")
    same_shell = data.get("run_tests_in_same_shell", False)
    if not isinstance(same_shell, bool):
        raise TaskFileError(path, "run_tests_in_same_shell", f"{same_shell!r} is not true/false", "write true or false")
    compose = task_dir / "docker-compose.yaml"
    if not compose.is_file():
        compose = task_dir / "docker-compose.yml"
    dockerfile = task_dir / "Dockerfile"
    dockerfile = dockerfile if dockerfile.is_file() else (_compose_dockerfile(compose) if compose.is_file() else None)
    sol_sh, sol_yaml = task_dir / "solution.sh", task_dir / "solution.yaml"
    tests = task_dir / "tests"
    run_tests = task_dir / "run-tests.sh"
    if not run_tests.is_file() and not (tests / "test_outputs.py").is_file():
        raise TaskFileError(task_dir, "run-tests.sh", "the task has neither run-tests.sh nor tests/test_outputs.py",
                            "add tests/test_outputs.py (pytest tests) or a run-tests.sh that runs the tests")
    known = {"instruction", "difficulty", "category", "tags", "parser_name", "max_agent_timeout_sec",
             "max_test_timeout_sec", "run_tests_in_same_shell"}
    return TerminalTask(
        id=task_dir.name, path=task_dir, format="tb1", instruction=instruction,
        difficulty=_opt_str(data.get("difficulty"), path, "difficulty"),
        category=_opt_str(data.get("category"), path, "category"),
        tags=_str_list(data.get("tags"), path, "tags"), parser_name=parser,
        agent_timeout_s=_num(data.get("max_agent_timeout_sec"), path, "max_agent_timeout_sec", DEFAULT_AGENT_TIMEOUT_S),
        test_timeout_s=_num(data.get("max_test_timeout_sec"), path, "max_test_timeout_sec", DEFAULT_TEST_TIMEOUT_S),
        run_tests_in_same_shell=same_shell,
        dockerfile=dockerfile, compose=compose if compose.is_file() else None, workdir=_workdir(dockerfile),
        solution=_read_solution_yaml(sol_yaml) if (not sol_sh.is_file() and sol_yaml.is_file()) else None,
        solution_script=sol_sh if sol_sh.is_file() else None,
        tests_dir=tests if tests.is_dir() else None, run_tests=run_tests if run_tests.is_file() else None,
        allow_internet=False,
        extra={k: v for k, v in data.items() if k not in known},
    )


def _table(data: dict, name: str, path: Path) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise TaskFileError(path, f"[{name}]", "is not a table", f"write it as a [{name}] table")
    return value


def _memory_mb(env: dict, path: Path) -> int | None:
    if "memory_mb" in env:
        value = env["memory_mb"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise TaskFileError(path, "[environment].memory_mb", f"{value!r} is not a positive integer", "write e.g. memory_mb = 2048")
        return value
    if "memory" in env:  # Harbor's older spelling: "2G", "512M"
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([GMK])\s*", str(env["memory"]).upper())
        if not m:
            raise TaskFileError(path, "[environment].memory", f"{env['memory']!r} is not a size", 'write memory_mb = 2048 (or memory = "2G")')
        return int(float(m.group(1)) * {"G": 1024, "M": 1, "K": 1 / 1024}[m.group(2)])
    return 2048  # Harbor's default


def _load_harbor(task_dir: Path) -> TerminalTask:
    path = task_dir / "task.toml"
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, "(syntax)", f"not valid TOML ({exc})", "fix the TOML syntax") from None
    meta, agent = _table(data, "metadata", path), _table(data, "agent", path)
    verifier, env = _table(data, "verifier", path), _table(data, "environment", path)
    instr_path = task_dir / "instruction.md"
    if not instr_path.is_file() or not instr_path.read_text(errors="replace").strip():
        raise TaskFileError(instr_path, "instruction.md", "missing or empty", "write the task's instruction in instruction.md")
    venv = verifier.get("env", {})
    if not isinstance(venv, dict) or not all(isinstance(v, str) for v in venv.values()):
        raise TaskFileError(path, "[verifier].env", "is not a table of strings", 'write e.g. env = { MODE = "strict" }')
    allow = env.get("allow_internet", True)
    if not isinstance(allow, bool):
        raise TaskFileError(path, "[environment].allow_internet", f"{allow!r} is not true/false", "write true or false")
    if env.get("network_mode") == "no-network":
        allow = False
    cpus = env.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
        raise TaskFileError(path, "[environment].cpus", f"{cpus!r} is not a positive number", "write e.g. cpus = 1")
    image = _opt_str(env.get("docker_image"), path, "[environment].docker_image")
    envdir = task_dir / "environment"
    dockerfile = envdir / "Dockerfile"
    compose = envdir / "docker-compose.yaml"
    test_sh = task_dir / "tests" / "test.sh"
    if not test_sh.is_file():
        raise TaskFileError(task_dir, "tests/test.sh", "missing", "add tests/test.sh that writes /logs/verifier/reward.txt")
    solve = task_dir / "solution" / "solve.sh"
    known_top = {"metadata", "agent", "verifier", "environment"}
    return TerminalTask(
        id=task_dir.name, path=task_dir, format="harbor", instruction=instr_path.read_text(errors="replace"),
        difficulty=_opt_str(meta.get("difficulty"), path, "[metadata].difficulty"),
        category=_opt_str(meta.get("category"), path, "[metadata].category"),
        tags=_str_list(meta.get("tags"), path, "[metadata].tags"), parser_name=HARBOR_REWARD_PARSER,
        agent_timeout_s=_num(agent.get("timeout_sec"), path, "[agent].timeout_sec", DEFAULT_AGENT_TIMEOUT_S),
        test_timeout_s=_num(verifier.get("timeout_sec"), path, "[verifier].timeout_sec", HARBOR_VERIFIER_TIMEOUT_S),
        dockerfile=dockerfile if dockerfile.is_file() else None, compose=compose if compose.is_file() else None,
        docker_image=image, workdir=_workdir(dockerfile if dockerfile.is_file() else None),
        solution_script=solve if solve.is_file() else None,
        tests_dir=task_dir / "tests", run_tests=test_sh, verifier_env=dict(venv), allow_internet=allow,
        cpus=float(cpus) if cpus is not None else None, memory_mb=_memory_mb(env, path),
        extra={**{k: v for k, v in data.items() if k not in known_top},
               **{f"metadata.{k}": v for k, v in meta.items() if k not in ("difficulty", "category", "tags")},
               **{f"environment.{k}": v for k, v in env.items()
                  if k not in ("docker_image", "cpus", "memory_mb", "memory", "allow_internet")}},
    )


def task_format(task_dir: Path) -> str | None:
    has_yaml, has_toml = (task_dir / "task.yaml").is_file(), (task_dir / "task.toml").is_file()
    if has_yaml and has_toml:
        return "both"
    return "tb1" if has_yaml else ("harbor" if has_toml else None)


def load_task(task_dir: Path) -> TerminalTask:
    """One task directory, in either format; raises TaskFileError when it is malformed."""
    task_dir = Path(task_dir)
    fmt = task_format(task_dir)
    if fmt == "both":
        raise TaskFileError(task_dir, "task.yaml/task.toml", "has both a Terminal-Bench task.yaml and a Harbor task.toml",
                            "keep one of them")
    if fmt is None:
        raise TaskFileError(task_dir, "task.yaml", "is not a task directory (no task.yaml or task.toml)",
                            "point at a Terminal-Bench (task.yaml) or Harbor (task.toml) task directory")
    return _load_tb1(task_dir) if fmt == "tb1" else _load_harbor(task_dir)


def load_tasks(root: Path, task_ids: list[str] | None = None, num_tasks: int | None = None,
               skip_invalid: bool = False) -> tuple[list[TerminalTask], list[InvalidTask]]:
    """Every task under `root` (or `root` itself when it is one task), selected and in id order."""
    root = Path(root)
    if not root.is_dir():
        raise TaskFileError(root, "tasks", "is not a directory", "point [benchmark] tasks at a directory of task directories")
    if task_format(root):
        dirs = [root]
    else:
        dirs = sorted((d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".") and task_format(d)),
                      key=lambda d: d.name)
    if not dirs:
        raise TaskFileError(root, "tasks", "holds no task directory (none has a task.yaml or task.toml)",
                            "point [benchmark] tasks at a directory of Terminal-Bench or Harbor tasks")
    if task_ids is not None:
        by_id = {d.name: d for d in dirs}
        missing = [t for t in task_ids if t not in by_id]
        if missing:
            hint = suggestions(missing, by_id)
            raise TaskFileError(root, "task_ids", f"no task named {', '.join(map(repr, missing))} among its "
                                f"{len(by_id)} tasks" + (f"; {hint}" if hint else ""),
                                f"use ids from: {', '.join(sorted(by_id)[:20])}" + (" …" if len(by_id) > 20 else ""))
        dirs = [by_id[t] for t in dict.fromkeys(task_ids)]
    tasks: list[TerminalTask] = []
    invalid: list[InvalidTask] = []
    for d in dirs:
        if num_tasks is not None and len(tasks) >= num_tasks:
            break
        try:
            tasks.append(load_task(d))
        except Exception as exc:  # noqa: BLE001 - any failure to read one task is that task's, named
            bad = exc if isinstance(exc, TaskFileError) else _unreadable(d, exc)
            if not skip_invalid:
                raise bad from None
            invalid.append(InvalidTask(task_id=d.name, path=d, file=bad.path, field=bad.field,
                                       problem=bad.problem, fix=bad.fix))
    return tasks, invalid


def _unreadable(task_dir: Path, exc: Exception) -> TaskFileError:
    """A ``TaskFileError`` for a task whose reading raised something else: a file it cannot open
    (``OSError``), a value the task model refuses (pydantic's ``ValidationError``: the field named)."""
    from pydantic import ValidationError

    file = task_dir / ("task.toml" if task_format(task_dir) == "harbor" else "task.yaml")
    if isinstance(exc, ValidationError) and exc.errors():
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        return TaskFileError(file, field, f"{err['msg']} (got {err.get('input')!r})"[:300], f"give {field} a valid value")
    if isinstance(exc, OSError):
        return TaskFileError(Path(exc.filename or file), "(reading)", f"cannot be read ({exc.strerror or exc})",
                             "make the task's files readable")
    return TaskFileError(file, "(reading)", f"reading it failed: {type(exc).__name__}: {exc}"[:300],
                         "fix the task's files")


def builtin_tasks_dir() -> Path:
    """The directory of the built-in tasks shipped with agentrig."""
    return Path(__file__).parent.parent / "builtin"
