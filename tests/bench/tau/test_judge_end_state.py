"""The judge reads a trial's own end state for domains without a sync rule; it must give exactly
what τ²-bench's replay of the trajectory gives (a fresh state, the state-changing calls again)."""

from __future__ import annotations

import pytest

from agentrig.bench.tau.verdict import details_of
from agentrig.agents.base import AgentSettings
from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.judge import trial_tool_calls
from agentrig.bench.tau.replay import judge_state
from agentrig.bench.tau.user import UserSettings
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.bench.tau.episode import Limits, play_trial
from agentrig.types import TrialKey


def _cases(root, domain, limit):
    tasks = load_tasks(root, domain)
    return tasks[:limit]


@pytest.mark.parametrize("domain,limit", [("bikeshop", 16), ("airline", 8), ("retail", 8), ("mock", 10)])
@pytest.mark.parametrize("drop_p", [0.0, 1.0])
async def test_end_state_judgement_equals_the_replay(domain, limit, drop_p, request):
    root = None if domain == "bikeshop" else request.getfixturevalue("tau2_root")
    spec, ddir = get_domain(domain), domain_dir(root, domain)
    assert spec.sync is None  # these domains take the direct path
    policy = load_policy(root, domain)
    for task in _cases(root, domain, limit):
        ctx = TrialContext(key=TrialKey(arm="a", domain=domain, task_id=task.id, trial=0), task=task,
                           bench=TauTrial(spec, ddir, policy), seed=5)
        record = await play_trial(ctx, agent=AgentSettings(kind="flaky-gold", drop_p=drop_p),
                                  user=UserSettings(kind="scripted"), plugins=[], limits=Limits(), nl_judge="never")
        calls = trial_tool_calls(record.trajectory.messages, record.trajectory.history_len)
        replayed = judge_state(spec, ddir, task, calls)
        info = record.verdict.reward_info
        assert details_of(info).db_match == replayed.db_match, task.id
        assert info.components["DB"] == replayed.db_reward, task.id
        assert info.components["ENV_ASSERTION"] == replayed.env_reward, task.id
        assert [a.met for a in details_of(info).env_assertions] == replayed.env_assertions, task.id
