"""A side of an A/B comparison: ``RUN_DIR[:ARM]`` opened into its per-task counts and config, and
the guidelines-leakage check of sides (``agentrig compare`` and the report's A/B section share it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentrig.analysis import compare as cmp
from agentrig.analysis.config_diff import SideConfig
from agentrig.errors import ConfigError
from agentrig.store.rundir import STORE_FILE, open_run_dir


@dataclass
class LoadedSide:
    side: cmp.Side
    counts: cmp.Counts
    config: SideConfig


def split_side(spec: str) -> tuple[Path, str | None]:
    """``RUN_DIR[:ARM]`` → (run dir, arm or None). A directory whose name holds ':' still works."""
    whole = Path(spec).expanduser()
    if (whole / STORE_FILE).is_file() or whole.is_dir():
        return whole, None
    head, sep, arm = spec.rpartition(":")
    if sep and head and arm and not whole.exists():
        return Path(head).expanduser(), arm  # a file or a missing path: open_run_dir names the problem
    return whole, None  # open_run_dir names the problem


def _arm_names(config: dict) -> list[str]:
    return [a["name"] for a in (config.get("experiment") or {}).get("arms", []) if "name" in a]


def load_side(spec: str, which: str) -> LoadedSide:
    run_dir, arm = split_side(spec)
    store, config = open_run_dir(run_dir)
    try:
        arms = _arm_names(config)
        if arm is None:
            if len(arms) != 1:
                choices = ", ".join(f"{run_dir}:{a}" for a in arms)
                raise ConfigError(f"side {which} ({spec}): the run has {len(arms)} arms ({', '.join(arms)}); "
                                  f"name one after a colon: {choices}")
            arm = arms[0]
        elif arm not in arms:
            raise ConfigError(f"side {which} ({spec}): no arm {arm!r} in {run_dir}; its arms: {', '.join(arms)}")
        rows = store.verdict_rows(arm=arm, valid=True)
        counts = cmp.task_counts((r.domain, r.task_id, r.reward) for r in rows)
        comparability = store.get_meta("comparability")
    finally:
        store.close()
    trials = ((config.get("experiment") or {}).get("run") or {}).get("trials")
    label = f"{run_dir}:{arm}"
    side = cmp.Side(label=label, run_dir=str(run_dir), arm=arm, run_id=config.get("run_id"),
                    trials=trials, tasks=len(counts), valid_trials=sum(n for n, _ in counts.values()))
    return LoadedSide(side, counts, SideConfig(label, arm, config, comparability))


def leakage(*sides: LoadedSide) -> list[str]:
    """Warnings for sides whose guidelines were derived from tasks they are evaluated on."""
    out: list[str] = []
    for s in sides:
        out += cmp.guideline_leakage(s.side.label, s.config.comparability, s.side.arm, s.counts)
    return out
