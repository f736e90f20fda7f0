"""Reading a stored terminal trial for the exports (``export``: mini-SWE-agent, ``export_tb``:
Terminal-Bench): its events, the verifier's result, the failure mode, the submission, tokens."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentrig.agents.bash_prompts import SUBMIT_SENTINEL

# the reference agents: they call no model (every other kind — bash, the installed agents — has the agent role's)
MODEL_LESS = ("oracle", "flaky-oracle", "noop")
# agentrig failure modes after which the tests' result could not be read
_UNREADABLE = ("test_timeout", "parse_error", "broke_environment")


def _events(record: Any, plugin: str, kind: str) -> list[dict]:
    return [e.data for e in record.trajectory.events if (e.plugin, e.kind) == (plugin, kind)]


def verifier_result(record: Any) -> dict:
    found = _events(record, "verifier", "result")
    return found[-1] if found else {}


def failure_mode(record: Any) -> str:
    info = record.verdict.reward_info
    return (info.notes.get("failure_mode") if info is not None else None) or record.verdict.termination


def submission(record: Any) -> str:
    """The submitted text: the ``agent``/``submit`` event; for trials stored before that event
    existed, the output after the sentinel line of the last observation that holds it."""
    found = _events(record, "agent", "submit")
    if found:
        return str(found[-1].get("submission", ""))
    if record.verdict.termination != "submitted":
        return ""
    mark = f"output:\n{SUBMIT_SENTINEL}\n"
    for m in reversed(record.trajectory.messages):
        if m.role in ("tool", "user") and mark in (m.content or ""):
            return (m.content or "").split(mark, 1)[1]
    return ""


def _tokens(record: Any) -> tuple[int, int]:
    calls = record.trajectory.model_calls
    return sum(c.usage.prompt_tokens for c in calls), sum(c.usage.completion_tokens for c in calls)


def _iso(start: datetime, seconds: float) -> str:
    return (start + timedelta(seconds=max(seconds, 0.0))).isoformat()


def _instructions(config: dict, ids: set[str]) -> dict[str, str]:
    from .tasks.taskfile import load_tasks

    root = config.get("data_root")
    if not root or not Path(root).is_dir():
        return {}
    try:
        tasks, _ = load_tasks(Path(root), skip_invalid=True)
    except Exception:  # noqa: BLE001 - the tasks moved or changed: the export goes on without them
        return {}
    return {t.id: t.instruction for t in tasks if t.id in ids}
