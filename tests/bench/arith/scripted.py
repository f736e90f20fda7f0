"""The "arith" benchmark's scripted endpoint, on agentrig's scripted-responder base
(``agentrig.testing._scripted``): the agent of a trial gets its task's sum, named by the
``X-Agentrig-Task`` header — or, with ``flaky=N``, a sum off by one for every request whose seed
(the trial's, sent with every call) is a multiple of N: a known share of flaky trials."""

from __future__ import annotations

from typing import Any

from agentrig.testing._scripted import GoldRequestError, ScriptedResponder
from agentrig.testing.fake_endpoint import FakeEndpoint

from .benchmark import task_of


def wrong_on(seed: int, flaky: int) -> bool:
    """The endpoint answers wrong for these trial seeds."""
    return flaky > 0 and seed % flaky == 0


class ArithResponder(ScriptedResponder):
    name = "arith endpoint"
    roles = ("agent",)

    def __init__(self, flaky: int = 0):
        self.flaky = flaky

    def play(self, role: str, body: dict, headers: Any) -> dict:
        task = task_of(headers["X-Agentrig-Task"])
        if task is None:
            raise GoldRequestError(f"unknown task {headers['X-Agentrig-Task']!r}; the arith tasks are sum0, sum1, …")
        return {"content": str(task.a + task.b + (1 if wrong_on(body.get("seed", 1), self.flaky) else 0))}


class ArithEndpoint(FakeEndpoint):
    """A FakeEndpoint whose replies play each arith task's sum (see the module docstring)."""

    def __init__(self, *, flaky: int = 0, **kwargs: Any):
        self.sums = ArithResponder(flaky)
        super().__init__(responder=self.sums, **kwargs)
