"""A lost Ray worker is counted by its kind (issue 26 §5): ``invalid_cause`` is ``worker_lost``
whatever Ray's message (which names the actor), the message kept as ``invalid_detail``; the run's
summary counts every lost worker under the one cause."""

from __future__ import annotations

import time
from collections import Counter

from agentrig.run.ray.executor import WORKER_LOST, lost_record
from agentrig.run.executor import TrialSpec
from agentrig.types import TrialKey


class ActorDiedError(Exception):
    """Stands for Ray's exception: only its name and text are read."""


def test_lost_workers_share_one_cause_and_keep_their_message():
    records = []
    for i, actor in enumerate(("a1b2c3", "d4e5f6", "0789ab")):
        spec = TrialSpec(key=TrialKey(arm="a", domain="airline", task_id=str(i), trial=0), task=None, arm=None,
                         seed=i, attempt=0)
        exc = ActorDiedError(f"The actor died unexpectedly before finishing this task.\n\tactor_id: {actor}")
        records.append(lost_record(spec, "run-1", exc, time.perf_counter()))
    assert Counter(r.verdict.invalid_cause for r in records) == Counter({WORKER_LOST: 3})
    assert all(not r.verdict.valid and r.verdict.termination == WORKER_LOST for r in records)
    details = [r.verdict.invalid_detail for r in records]
    assert len(set(details)) == 3 and all("ActorDiedError: The actor died unexpectedly" in d for d in details)
