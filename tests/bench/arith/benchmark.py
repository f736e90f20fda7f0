"""The "arith" benchmark: each task is a sum, the agent answers, equality judges.

    [benchmark] kind = "arith", count   (ArithSettings)

It imports agentrig's seam, trial envelope, types and testing base, never another benchmark; it is
registered with one line, ``register("arith", "tests.bench.arith.benchmark:ArithBenchmark",
exceptions="tests.bench.arith.benchmark")``.

Its own exceptions, each under a node of ``agentrig/errors.py``'s tree (drawn as there; this module
is named by ``exceptions=`` in its registry line):

    DataError
    └── SumsError           tests/bench/arith/benchmark  a task list that holds no sum (names the setting)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field

from agentrig.benchmark import Benchmark, Limits, Selection, json_sha
from agentrig.errors import DataError
from agentrig.trial.envelope import play_in_envelope
from agentrig.types import FailureLabel, Message, RewardInfo, TrialRecord, Verdict


class SumsError(DataError):
    """The selected tasks hold no sum."""


class ArithTask(BaseModel):
    id: str
    a: int
    b: int


class ArithSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["arith"]
    count: int = Field(4, ge=0)  # 0: its own DataError (SumsError), one line at the CLI


def tasks(count: int) -> list[ArithTask]:
    return [ArithTask(id=f"sum{i}", a=7 * i + 3, b=11 * i + 5) for i in range(count)]


def task_of(task_id: str) -> ArithTask | None:
    """The task of an id (``sum<i>``), None for another id."""
    index = task_id.removeprefix("sum")
    return tasks(int(index) + 1)[-1] if task_id.startswith("sum") and index.isdigit() else None


class ArithBenchmark(Benchmark):
    kind = "arith"
    settings_model = ArithSettings
    agent_kinds = ("llm", "gold", "noop")
    failure_classes = {"wrong_sum": "Wrong sum", "no_answer": "No answer", "other": "Other"}
    component_names = ("answer",)

    def select(self, exp: Any, source: Path) -> Selection:
        selected = [("sums", t) for t in tasks(exp.benchmark.count)]
        if not selected:
            raise SumsError("benchmark.count: selects no sum\n  fix: set count = 1 or more")
        return Selection(selected)

    def comparability(self, r: Any) -> dict[str, Any]:
        return {"tasks": {f"{g}/{t.id}": json_sha(t.model_dump()) for g, t in r.tasks}}

    async def play(self, r: Any, ctx: Any, arm: Any, limits: Limits, attempt: int = 0) -> TrialRecord:
        # the trial envelope (trial/envelope.py) does the rest: the clock, channel faults → invalid,
        # the record — a new benchmark writes only the body that plays and judges
        task = ctx.task
        question = f"What is {task.a} + {task.b}? Reply with the number only."
        msgs = ctx.trajectory.messages

        async def body() -> Verdict:
            msgs.append(Message(role="user", content=question, turn=0))
            if arm.agent.kind == "llm":
                done, call = await ctx.complete("agent", [{"role": "user", "content": question}])
                answer = (done.message.content or "").strip()
            else:
                answer, call = (str(task.a + task.b) if arm.agent.kind == "gold" else ""), None
            msgs.append(Message(role="assistant", content=answer, turn=1, call=call))
            reward = 1.0 if answer == str(task.a + task.b) else 0.0
            info = RewardInfo(reward=reward, reward_basis=["answer"], components={"answer": reward})
            return Verdict(reward=reward, termination="answered" if answer else "no_answer", reward_info=info)

        return await play_in_envelope(ctx, body, attempt=attempt)

    def classify(self, record: TrialRecord, context: Any) -> FailureLabel:
        cls = "no_answer" if record.verdict.termination == "no_answer" else "wrong_sum"
        answer = record.trajectory.messages[-1].content
        return FailureLabel(primary=cls, classes=[cls], components=["answer"],
                            termination=record.verdict.termination, evidence={cls: [f"answered {answer!r}"]})

    def action_sequence(self, record: TrialRecord) -> tuple:
        return tuple(("answer", m.content or "") for m in record.trajectory.messages if m.role == "assistant")

    def tasks_app(self) -> typer.Typer:
        app = typer.Typer(add_completion=False)

        @app.command("list")
        def list_(count: int = typer.Option(4, "--count")) -> None:
            """List the sums."""
            for t in tasks(count):
                print(f"{t.id}: {t.a} + {t.b}")

        @app.command("show")
        def show(task_id: str = typer.Argument(...)) -> None:
            print(task_id)

        return app

    def scripted_endpoint(self, **settings: Any) -> Any:
        from .scripted import ArithEndpoint

        return ArithEndpoint(**settings)
