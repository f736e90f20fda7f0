"""The terminal task model: one shape for Terminal-Bench 1 (task.yaml) and Harbor (task.toml) tasks.

`taskfile.load_task` reads either format into a `TerminalTask`; everything downstream (the
sandboxes, the verifier, the reference agents) sees only this model. `support` says whether a
sandbox kind can run a task, and if not, why (``unsupported`` / ``needs_container`` /
``needs_network`` / ``needs_services`` / ``missing_files``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

TaskFormat = Literal["tb1", "harbor"]

# Terminal-Bench 1 defaults (task.yaml): agent 360 s, tests 60 s.
DEFAULT_AGENT_TIMEOUT_S = 360.0
DEFAULT_TEST_TIMEOUT_S = 60.0


class SolutionStep(BaseModel):
    """One entry of a TB1 ``solution.yaml``: keystrokes sent to the terminal."""

    command: str
    block: bool = True  # wait for the command to finish (False: start it and move on)
    min_timeout_sec: float = 0.0  # at least this long for the command
    append_enter: bool = True  # TB1 sends Enter after the keys; False: keys typed, not run


class TerminalTask(BaseModel):
    id: str
    path: Path  # the task directory
    format: TaskFormat
    instruction: str
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    parser_name: str = "pytest"  # TB1 result parser; Harbor tasks use the reward file
    agent_timeout_s: float = DEFAULT_AGENT_TIMEOUT_S
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    run_tests_in_same_shell: bool = False
    dockerfile: Path | None = None
    compose: Path | None = None
    docker_image: str | None = None  # Harbor [environment] docker_image (a prebuilt image)
    workdir: str = "/app"  # the Dockerfile's WORKDIR when parsed
    solution: list[SolutionStep] | None = None  # solution.yaml steps (TB1 interactive form)
    solution_script: Path | None = None  # solution.sh (TB1) / solution/solve.sh (Harbor)
    tests_dir: Path | None = None  # tests/ — copied in only for the verifier
    run_tests: Path | None = None  # run-tests.sh (TB1) / tests/test.sh (Harbor)
    verifier_env: dict[str, str] = Field(default_factory=dict)
    allow_internet: bool = False
    cpus: float | None = None
    memory_mb: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)  # every other field of the task file, kept

    @property
    def build_context(self) -> Path:
        """The directory a Dockerfile's COPY/ADD paths are relative to."""
        if self.dockerfile is not None:
            return self.dockerfile.parent
        return self.path


class TaskSupport(BaseModel):
    """Whether a sandbox kind can run a task. ``kind`` is the sandbox kind asked about."""

    kind: str
    ok: bool
    reason: str | None = None  # "needs_container: ..." / "needs_network: ..." / "needs_services: ..." / "missing_files: ..." / "unsupported: ..." when not ok

    @property
    def exclusion(self) -> str | None:
        """``needs_container`` / ``needs_network`` / ``needs_services`` / ``missing_files`` /
        ``unsupported`` (the excluded-failure mode), None when ok."""
        if self.ok or not self.reason:
            return None
        return self.reason.split(":", 1)[0].strip()


def support(task: TerminalTask, sandbox_kind: str, network: bool | None = None) -> TaskSupport:
    """Can `sandbox_kind` run `task`? A TB1 task whose ``parser_name`` is none of Terminal-Bench's
    parsers (``unsupported``: no verdict could be read) runs nowhere; a task with Git LFS pointers instead
    of its files, or whose Dockerfile COPYs/ADDs a file its build context lacks (``missing_files``), runs
    nowhere here; a compose file's services beside the agent's run where
    ``compose_check.check_compose`` says they can (else ``needs_services``, naming why); container kinds
    run every other Dockerfile/compose task whose agent service mounts no volume but binds of the
    task's own folder (``compose_volumes.py``; else ``needs_container`` naming the mount).

    Under ``bwrap``/``local`` the Dockerfile must be in the documented subset (helper module
    ``dockerfile``) and the compose file's agent service what ``compose`` honours. Without network
    (``network`` False, or None and the task does not allow it), a run-tests.sh that fetches
    from the network (other than the template we run offline) makes the task ``needs_network``.
    """
    from . import staging  # local import: kept out of the model's import-time dependencies
    from .tb_parsers import unsupported_parser

    unreadable = unsupported_parser(task)
    if unreadable:
        return TaskSupport(kind=sandbox_kind, ok=False, reason=unreadable)
    missing = lfs_pointers(task.path)
    if missing:
        shown = ", ".join(missing[:5]) + (f" … {len(missing) - 5} more" if len(missing) > 5 else "")
        return TaskSupport(kind=sandbox_kind, ok=False,
                           reason=f"missing_files: {shown} {'is a Git LFS pointer' if len(missing) == 1 else 'are Git LFS pointers'}, "
                                  "not the file (fetch them with `git lfs pull` in the task's checkout)")
    if task.dockerfile is not None:  # on every kind: a COPY of a file the task's folder lacks fails any build
        from .dockerfile import missing_sources

        gap = missing_sources(task.dockerfile, task.build_context)
        if gap:
            return TaskSupport(kind=sandbox_kind, ok=False, reason=f"missing_files: {gap}")
    if task.compose is not None:
        from .compose_check import check_compose

        why = check_compose(task.compose, sandbox_kind, network=task.allow_internet if network is None else network)
        if why and why.startswith("needs_services"):  # on every kind: services this sandbox cannot start
            return TaskSupport(kind=sandbox_kind, ok=False, reason=why)
    if sandbox_kind in ("docker", "podman"):
        if task.compose is not None:  # the agent's volumes: binds of the task's folder, else named
            from .compose_check import volumes_problem

            mounts = volumes_problem(task.compose, sandbox_kind)
            if mounts:
                return TaskSupport(kind=sandbox_kind, ok=False, reason=f"needs_container: {mounts}")
        return TaskSupport(kind=sandbox_kind, ok=True)
    if task.docker_image and task.dockerfile is None:
        return TaskSupport(kind=sandbox_kind, ok=False,
                           reason=f"needs_container: a prebuilt image ({task.docker_image}) and no Dockerfile to replay")
    if task.compose is not None and why:
        return TaskSupport(kind=sandbox_kind, ok=False, reason=_prefixed(why))
    if task.dockerfile is not None:
        from .dockerfile import parse_dockerfile

        plan = parse_dockerfile(task.dockerfile, task.build_context)
        if not plan.supported:
            return TaskSupport(kind=sandbox_kind, ok=False, reason=_prefixed(plan.reason or "unsupported Dockerfile"))
    has_net = task.allow_internet if network is None else network
    if not has_net:
        why = staging.needs_network(task)
        if why:
            return TaskSupport(kind=sandbox_kind, ok=False, reason=f"needs_network: {why}")
    return TaskSupport(kind=sandbox_kind, ok=True)


LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
LFS_POINTER_MAX = 1024  # a pointer file is ~130 bytes: larger files are never read


def lfs_pointers(task_dir: Path) -> list[str]:
    """The task's files that are Git LFS pointer files (a checkout without ``git lfs pull``),
    relative to its directory: the real content is not there."""
    found: list[str] = []
    for path in sorted(Path(task_dir).rglob("*")):
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > LFS_POINTER_MAX:
                continue
            with open(path, "rb") as handle:
                if handle.read(len(LFS_POINTER)) == LFS_POINTER:
                    found.append(str(path.relative_to(task_dir)))
        except OSError:
            continue
    return found


def _prefixed(reason: str) -> str:
    return reason if reason.startswith("needs_") else f"needs_container: {reason}"
