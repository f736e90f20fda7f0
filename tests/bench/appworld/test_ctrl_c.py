"""Ctrl-C on an AppWorld run (issue 31, item 1): SIGINT to `agentrig run`'s process group, 20
times — as the store has just been opened (the workers starting), while trials play (the agent's
code and the tests run in the workers), right as one is stored; fresh runs and resumed ones.
Every time exit 130 within the deadline, nothing made after the signal stored, no invalid attempt
(a worker lost to the stop is the interruption's, never a stored attempt). The model is the
AppWorld endpoint (the solution's code, as an LLM agent would send it), in this process."""

from __future__ import annotations

import os
import random

import pytest

from agentrig.testing.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

from tests.interrupt_support import assert_clean_stop, interrupt, rows, when_stored

from .test_appworld_runs import KEY, KEY_ENV, experiment

TIMES = 20


@pytest.mark.slow
def test_ctrl_c_stops_an_appworld_run_at_every_phase(tmp_path, synthetic_root, appworld_python):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
    env.update({KEY_ENV: KEY})
    rng = random.Random(31)
    arms = {"native": ('{ kind = "llm" }', "appworld-solution")}
    with ThreadedFakeEndpoint(endpoint=AppWorldEndpoint(synthetic_root, api_key=KEY)) as served:
        toml = None
        for i in range(TIMES):
            if i % 5 == 0:  # a fresh run; the next four resume it
                name = f"aw{i}"
                toml = experiment(tmp_path / f"{name}.toml", name, synthetic_root, appworld_python, served.base_url,
                                  arms, trials=30, concurrency=1, workers=1,
                                  extra=f'dir = "{tmp_path / "runs" / name}"')
            assert toml is not None
            store = tmp_path / "runs" / toml.stem / "trials.sqlite"
            phase = ("start", "playing", "stored")[i % 3]
            if phase == "start":
                until = lambda v, s=store: v.holds_open(s)  # noqa: E731
                jitter = rng.uniform(0.0, 1.0)
            else:
                until = when_stored(len(rows(store)) + 1)
                jitter = rng.uniform(0.05, 0.6) if phase == "playing" else 0.0
            result = interrupt(["run", toml], store, until, env=env, jitter_s=jitter, workdir=tmp_path)
            assert_clean_stop(result, f"#{i} {toml.stem} {phase}")
