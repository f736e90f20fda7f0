"""The ``[benchmark]`` table of AppWorld (kind = "appworld").

    [benchmark]
    kind = "appworld"
    data = "~/appworld"          # the root holding data/ (what `appworld download data` made);
                                 # default: $APPWORLD_ROOT. Relative paths: to the experiment file
    dataset = "dev"              # train | dev | test_normal | test_challenge
    task_ids = ["50e1ac9_1"]     # optional: only these tasks (of the dataset)
    num_tasks = 10               # optional: the first N selected tasks
    python = "…/bin/python"      # optional: the python of AppWorld's environment
                                 # (default: the one `agentrig appworld setup` made)
    workers = 4                  # worker processes, one world each (pooled, reused across trials)
    execute_timeout_s = 100      # AppWorld's own limit on one code execution
    output_limit = 20000         # characters of one execution's output shown to the agent
    random_seed = 100            # AppWorld's seed for its APIs (its default)
    worker_grace_s = 30          # seconds a worker may take beyond execute_timeout_s before it counts
                                 # as hung (killed; the trial is invalid and replayed)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentrig.types import Strict

DATASETS = ("train", "dev", "test_normal", "test_challenge")


class AppWorldSettings(Strict):
    kind: Literal["appworld"]
    data: str | None = None
    dataset: Literal["train", "dev", "test_normal", "test_challenge"] = "dev"
    task_ids: list[str] | None = None
    num_tasks: int | None = Field(None, ge=1)
    python: str | None = None
    workers: int = Field(4, ge=1, le=64)
    execute_timeout_s: int = Field(100, ge=1)
    output_limit: int = Field(20000, ge=200)
    random_seed: int = 100
    worker_grace_s: float = Field(30.0, gt=0)
