"""The ``[benchmark]`` table of terminal tasks (kind = "terminal").

    [benchmark]
    kind = "terminal"
    tasks = "path/to/tasks"      # a directory of task directories (Terminal-Bench 1 and Harbor,
                                 # mixed); default: the built-in tasks shipped with agentrig
    task_ids = ["hello-world"]   # optional: only these tasks
    num_tasks = 5                # optional: the first N selected tasks
    skip_invalid = false         # true: list malformed tasks and go on without them
    command_timeout_s = 180      # per-command timeout of the agent phase (cut to the agent's time left)

Relative paths are relative to the experiment file (``rel_path``); ``sandbox_settings`` gives the
experiment's ``[sandbox]`` table with its paths made so (a run's and ``agentrig audit --config``'s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agentrig.types import Strict

from .core.base import SandboxSettings


class TerminalSettings(Strict):
    kind: Literal["terminal"]
    tasks: str | None = None
    task_ids: list[str] | None = None
    num_tasks: int | None = Field(None, ge=1)
    skip_invalid: bool = False
    command_timeout_s: float = Field(180.0, gt=0)


def rel_path(source: Path, value: str | Path) -> Path:
    """A path of the experiment file `source`: absolute as written, else relative to the file."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else (source.parent / p).resolve()


def sandbox_settings(exp: Any, source: Path) -> SandboxSettings:
    """The experiment's [sandbox] table, its paths made absolute (relative to the experiment file)."""
    sb: SandboxSettings = exp.sandbox
    update: dict[str, Any] = {}
    if sb.cache_dir is not None:
        update["cache_dir"] = rel_path(source, sb.cache_dir)
    if sb.bwrap_path is not None:
        update["bwrap_path"] = rel_path(source, sb.bwrap_path)
    return sb.model_copy(update=update) if update else sb
