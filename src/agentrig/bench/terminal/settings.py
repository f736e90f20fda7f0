"""The ``[benchmark]`` table of terminal tasks (kind = "terminal").

    [benchmark]
    kind = "terminal"
    tasks = "path/to/tasks"      # a directory of task directories (Terminal-Bench 1 and Harbor,
                                 # mixed); default: the built-in tasks shipped with agentrig
    task_ids = ["hello-world"]   # optional: only these tasks
    num_tasks = 5                # optional: the first N selected tasks
    skip_invalid = false         # true: list malformed tasks and go on without them
    command_timeout_s = 180      # per-command timeout of the agent phase (cut to the agent's time left)

Relative paths are relative to the experiment file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentrig.types import Strict


class TerminalSettings(Strict):
    kind: Literal["terminal"]
    tasks: str | None = None
    task_ids: list[str] | None = None
    num_tasks: int | None = Field(None, ge=1)
    skip_invalid: bool = False
    command_timeout_s: float = Field(180.0, gt=0)
