"""Ctrl-C on a τ² run (issue 31, item 1), and the executor's side of every Ctrl-C.

- SIGINT to `agentrig run`'s process group, 20 times: as the store has just been opened (planning,
  the first trials starting), while trials play, right as one is stored; fresh runs and resumed
  ones. Every time exit
  130 within the deadline, nothing made after the signal stored, no invalid attempt.
- A trial whose cancellation is swallowed — Python 3.11's ``asyncio.wait_for`` returns what it
  awaited when that ended in the same instant as the cancellation (a sandbox killed by the same
  Ctrl-C), and the trial then comes back as an invalid attempt — is neither stored nor allowed to
  keep the run going: once seen, its worker went on playing the queue and the run never ended.
"""

from __future__ import annotations

import asyncio
import os
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentrig.run import experiment
from agentrig.run.executor import Executor, Stats, close_channels, make_channels
from agentrig.run.session import open_run, plan
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.types import TrialRecord, Verdict

from tests.interrupt_support import interrupt_at_start_play_and_store

KEY = "sk-ctrl-c-test-0f1e2d3c4b5a6978"
KEY_ENV = "AGENTRIG_CTRL_C_KEY"
TIMES = 20


def _experiment(tmp_path: Path, name: str, base_url: str, *, trials: int = 60, concurrency: int = 3) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(f"""
        name = "{name}"
        [benchmark]
        domains = ["bikeshop"]
        task_ids = ["rent_city_bike", "refuse_cancel_active_rental"]
        [run]
        trials = {trials}
        concurrency = {concurrency}
        max_steps = 20
        dir = "{tmp_path / 'runs' / name}"
        [user]
        kind = "scripted"
        [judge]
        nl_assertions = "never"
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        max_attempts = 2
        backoff_base_s = 0.001
        timeout_s = 10
        [roles.agent]
        model = "fake-model"
        [[arms]]
        name = "llm"
        """), encoding="utf-8")
    return path


@pytest.mark.slow
def test_ctrl_c_stops_a_tau2_run_at_every_phase(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
    env.update({KEY_ENV: KEY})
    with ThreadedFakeEndpoint(api_key=KEY, delay_s=0.05) as slow:
        interrupt_at_start_play_and_store(TIMES, lambda i: _experiment(tmp_path, f"tau{i}", slow.base_url), tmp_path,
                                          env=env, start_jitter_s=0.3)


class _SwallowsCancellation(Executor):
    """``play`` as a trial plays when its cancellation is swallowed (see the module docstring)."""

    async def play(self, spec):
        started = datetime.now(timezone.utc).isoformat()
        try:
            return await super().play(spec)
        except asyncio.CancelledError:
            ctx = self.context(spec)
            return TrialRecord(key=spec.key, run_id=self.run_id, seed=spec.seed, attempt=spec.attempt,
                               started_at=started, duration_s=0.0, trajectory=ctx.trajectory,
                               verdict=Verdict(valid=False, termination="sandbox_error",
                                               invalid_cause="sandbox: the sandbox is not running (it ended or was killed)"))


async def test_a_swallowed_cancellation_neither_stores_nor_keeps_the_run_going(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ThreadedFakeEndpoint(api_key=KEY, delay_s=0.05) as slow:
        r = experiment.load(_experiment(tmp_path, "swallow", slow.base_url, trials=30, concurrency=3))
        run = open_run(r)
        channels = make_channels(r, run.run_id)
        try:
            ex = _SwallowsCancellation(r, run.store, run.run_id, channels, Stats())
            task = asyncio.ensure_future(ex.run(plan(r, run.store)))
            while run.store.counts()["valid"] < 2:
                await asyncio.sleep(0.01)
            at_stop = run.store.counts()
            ex.request_stop()  # what Ctrl-C's handler does
            try:  # a hang is the failure (the workers waited on the queue forever)
                async with asyncio.timeout(30):
                    outcome = await task
            except TimeoutError:
                pytest.fail("the run did not end after the stop")
            after = run.store.counts()
        finally:
            await close_channels(channels)
            run.close()
    assert outcome.status == "interrupted"
    assert after["invalid"] == 0  # the swallowed trials came back invalid: dropped, not stored
    assert after["valid"] == at_stop["valid"]  # nothing stored after the stop
