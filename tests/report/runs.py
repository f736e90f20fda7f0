"""Runs for the report tests: real runs of the reference agents on the built-in domain, and a copy
of one with a tampered trial (model and tool text that tries to become markup or code)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentrig.commands.run import run_command
from agentrig.store.store import Store
from agentrig.types import Attempt, Message, ModelCall, PluginEvent, ToolCall, TrialRecord, Verdict

SCRIPT_TEXT = "</script><script>window.__pwned=1</script> please book it"
IMG_TEXT = '<img src=x onerror="window.__pwned=2"> no such bike'
EVENT_TEXT = "<svg onload=window.__pwned=3>"
TAMPERED = ("noop", "bikeshop", "rent_city_bike", 0)
INVALID_ONLY = ("flaky-gold", "bikeshop", "rent_city_bike", 1)  # stored only as an invalid attempt
REPLAYED = ("gold", "bikeshop", "rent_city_bike", 1)  # an invalid attempt, then the valid replay
INVALID_CAUSE = "retries_exhausted: 503 ×6"


def experiment(trials: int = 2, num_tasks: int | None = None, arms: str | None = None) -> str:
    tasks = f"num_tasks = {num_tasks}\n" if num_tasks else ""
    arms = arms or """
[[arms]]
name = "gold"
agent = { kind = "gold" }

[[arms]]
name = "flaky-gold"
agent = { kind = "flaky-gold", drop_p = 0.4 }

[[arms]]
name = "noop"
agent = { kind = "noop" }
"""
    return f"""name = "report-test"

[benchmark]
domains = ["bikeshop"]
{tasks}
[run]
trials = {trials}
seed = 7
concurrency = 8

[user]
kind = "scripted"

[judge]
nl_assertions = "never"
{arms}"""


def make_run(where: Path, *, trials: int = 2, num_tasks: int | None = None, arms: str | None = None,
             name: str = "run") -> Path:
    """A run of ``experiment(...)`` in ``where/name`` (a report labels its arms ``NAME:ARM``)."""
    where.mkdir(parents=True, exist_ok=True)
    toml = where / "exp.toml"
    toml.write_text(experiment(trials, num_tasks, arms), encoding="utf-8")
    run_dir = where / name
    assert run_command(toml, run_dir=run_dir, as_json=True) == 0
    return run_dir


def tamper(record: TrialRecord) -> TrialRecord:
    """The same trial with hostile text in a user message, a tool call, a tool result, reasoning
    and a plug-in event."""
    msgs = record.trajectory.messages
    first_user = next(i for i, m in enumerate(msgs) if m.role == "user")
    msgs[first_user].content = SCRIPT_TEXT
    turn = len(msgs)
    msgs.append(Message(role="assistant", turn=turn, reasoning="<b>bold?</b> & </script>",
                        tool_calls=[ToolCall(id="x1", name="get_bike<i>", arguments={"q": "<script>alert(1)</script>"},
                                             arguments_raw='{"q": "<script>alert(1)</script>"}')]))
    msgs.append(Message(role="tool", turn=turn + 1, tool_call_id="x1", requestor="assistant", error=True,
                        content=IMG_TEXT))
    record.trajectory.events.append(PluginEvent(plugin="probe", turn=turn, kind="note", data={"html": EVENT_TEXT}))
    return record


def spoiled(record: TrialRecord) -> TrialRecord:
    """The same trial as an invalid attempt: the channel failed after a few messages."""
    traj = record.trajectory.model_copy(update={
        "messages": record.trajectory.messages[:2],
        "model_calls": [ModelCall(role="agent", purpose="agent", turn=2, model="m", error="retries_exhausted",
                                  attempts=[Attempt(cause="server_error", status=503)] * 6)]})
    return record.model_copy(update={"trajectory": traj, "verdict": Verdict(
        valid=False, invalid_cause=INVALID_CAUSE, termination="channel_error")})


def tampered_copy(run_dir: Path, target: Path) -> Path:
    """A copy of ``run_dir`` (config, meta, every record) whose TAMPERED trial is tampered, whose
    INVALID_ONLY trial is only an invalid attempt and whose REPLAYED trial was replayed once."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(run_dir / "config.json", target / "config.json")
    config = json.loads((target / "config.json").read_text())
    config["run_dir"] = str(target)
    (target / "config.json").write_text(json.dumps(config))
    with Store.open(run_dir / "trials.sqlite", create=False) as src, Store.open(target / "trials.sqlite") as dst:
        for name in ("run", "comparability"):
            value = src.get_meta(name)
            if value is not None:
                dst.set_meta(name, value)
        dst.set_meta("config", config)
        for rec in src.records():
            k = rec.key
            key = (k.arm, k.domain, k.task_id, k.trial)
            if key == TAMPERED:
                rec = tamper(rec)
            elif key == INVALID_ONLY:
                rec = spoiled(rec)
            elif key == REPLAYED:
                dst.append(spoiled(rec))
                rec = rec.model_copy(update={"attempt": 1})
            dst.append(rec)
    return target
