"""Ctrl-C on an AppWorld run (issue 31, item 1): SIGINT to `agentrig run`'s process group, 20
times — as the store has just been opened (the workers starting), while trials play (the agent's
code and the tests run in the workers), right as one is stored; fresh runs and resumed ones.
Every time exit 130 within the deadline, nothing made after the signal stored, no invalid attempt
(a worker lost to the stop is the interruption's, never a stored attempt). The model is the
AppWorld endpoint (the solution's code, as an LLM agent would send it), in this process."""

from __future__ import annotations

import os

import pytest

from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

from tests.interrupt_support import interrupt_at_start_play_and_store

from .test_appworld_runs import KEY, KEY_ENV, experiment

TIMES = 20


@pytest.mark.slow
def test_ctrl_c_stops_an_appworld_run_at_every_phase(tmp_path, synthetic_root, appworld_python):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
    env.update({KEY_ENV: KEY})
    arms = {"native": ('{ kind = "llm" }', "appworld-solution")}

    def fresh(i: int):
        name = f"aw{i}"
        return experiment(tmp_path / f"{name}.toml", name, synthetic_root, appworld_python, served.base_url, arms,
                          trials=30, concurrency=1, workers=1, extra=f'dir = "{tmp_path / "runs" / name}"')

    with ThreadedFakeEndpoint(endpoint=AppWorldEndpoint(synthetic_root, api_key=KEY)) as served:
        interrupt_at_start_play_and_store(TIMES, fresh, tmp_path, env=env, start_jitter_s=1.0)
