"""``[channel] cache = "replay"``: a trial replays its own answers, never another trial's — real
HTTP to the fake and gold endpoints, the real SQLite cache, the real CLI killed with SIGKILL."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.trial.context import TrialContext
from agentrig.store.replay_cache import CACHE_FILE, ReplayCache
from agentrig.testing.fake_endpoint import FakeEndpoint, ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.types import TrialKey

KEY = "sk-replay-cache-test-0a1b2c3d4e5f6a7b"
KEY_ENV = "AGENTRIG_REPLAY_TEST_KEY"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
HELLO = [{"role": "user", "content": "Which bike should I rent?"}]


def _chat(endpoint) -> list:
    return [r for r in endpoint.requests if r.path.endswith("/chat/completions")]


def test_trials_with_identical_requests_get_their_own_answers_and_replay_them(tmp_path):
    counter = itertools.count(1)

    async def scenario() -> None:
        async with FakeEndpoint(api_key=KEY, responder=lambda body: {"content": f"answer {next(counter)}"}) as fake:
            cfg = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model"))
            async with Channel(cfg, env={KEY_ENV: KEY}) as ch:
                cache = ReplayCache(tmp_path / CACHE_FILE)
                cache.attach({"arm": ch})

                def ctx(trial: int) -> TrialContext:  # the same seed: byte-identical requests
                    return TrialContext(key=TrialKey(arm="arm", domain="bikeshop", task_id="t1", trial=trial),
                                        task=None, seed=11, channel=ch)

                first = [(await ctx(i).complete("agent", HELLO))[0].message.content for i in (0, 1)]
                bodies = [r.json for r in _chat(fake)]
                assert len(bodies) == 2 and bodies[0] == bodies[1]
                assert first[0] != first[1]  # two trials, two independent samples

                # one attempt of trial 0 sending the same request twice: the second is a new call
                c = ctx(0)
                again = [(await c.complete("agent", HELLO))[0].message.content for _ in range(2)]
                assert again[0] == first[0] and again[1] not in first
                assert len(_chat(fake)) == 3
                assert [m.attempts for m in c.trajectory.model_calls][0] == []  # replayed: no HTTP attempt
                assert len(c.trajectory.model_calls[1].attempts) == 1

                # each trial replayed: its own answers, in order, and not one request more
                for trial, want in ((0, [first[0], again[1]]), (1, [first[1]])):
                    c = ctx(trial)
                    got = [(await c.complete("agent", HELLO))[0].message.content for _ in want]
                    assert got == want
                    assert all(m.usage.prompt_tokens > 0 for m in c.trajectory.model_calls)  # usage kept
                assert len(_chat(fake)) == 3
                assert cache.count() == 3
                cache.close()

    os.environ.pop(KEY_ENV, None)
    asyncio.run(scenario())
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(CACHE_FILE))
    assert KEY.encode() not in stored and b"answer 1" in stored


EXPERIMENT = """\
name = "replay"
[benchmark]
domains = ["bikeshop"]
num_tasks = 4
[run]
trials = 2
seed = 9
concurrency = 3
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"
cache = "replay"
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
"""


def _rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_killed_run_resumed_replays_the_prefix_of_its_unfinished_trials(tmp_path):
    endpoint = GoldEndpoint(None, api_key=KEY, record=True, delay_s=0.05)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = tmp_path / "replay.toml"
        exp.write_text(EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        run_dir = tmp_path / "run"
        env = {**os.environ, KEY_ENV: KEY}
        proc = subprocess.Popen([AGENTRIG, "run", str(exp), "--json", "--dir", str(run_dir)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while len(_chat(endpoint)) < 25 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)  # a crash: no chance to clean up
        finally:
            proc.wait(timeout=30)
        first_session = -1  # requests in flight at the kill end on the server side: let them settle
        while first_session != len(_chat(endpoint)):
            first_session = len(_chat(endpoint))
            time.sleep(0.5)
        stored = {tuple(r) for r in _rows(run_dir / "trials.sqlite",
                                          "SELECT arm, domain, task_id, trial FROM trials WHERE valid = 1")}
        cached = _rows(run_dir / CACHE_FILE, "SELECT arm, domain, task_id, trial FROM replay")
        unfinished = [tuple(r) for r in cached if tuple(r) not in stored]
        assert unfinished, "the kill should catch some trial part way"
        assert len(stored) < 8

        done = subprocess.run([AGENTRIG, "run", str(exp), "--json", "--dir", str(run_dir)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["arms"]["gold-llm"]["valid"] == 8
        second = _chat(endpoint)[first_session:]

    calls = _rows(run_dir / "trials.sqlite",
                  "SELECT t.arm, t.domain, t.task_id, t.trial, c.attempts FROM model_calls c "
                  "JOIN trials t ON t.id = c.trial_row")
    new = [r for r in calls if tuple(r[:4]) not in stored]
    replayed = [r for r in new if r[4] == 0]
    # every answer the killed session got for an unfinished trial is replayed, none is asked again
    assert len(replayed) == len(unfinished) > 0
    # the endpoint saw exactly the requests of the calls that were not replayed
    assert len(second) == sum(r[4] for r in new)
    # and the trials that finished before the kill were not played again
    assert all(tuple(r[:4]) not in stored or r[4] > 0 for r in calls)
    cache_bytes = b"".join(p.read_bytes() for p in run_dir.iterdir() if p.name.startswith(CACHE_FILE))
    assert KEY.encode() not in cache_bytes


def test_replay_with_the_ray_executor_is_refused_before_any_directory(tmp_path):
    exp = tmp_path / "ray.toml"
    exp.write_text(EXPERIMENT.format(base_url="http://127.0.0.1:9/v1", key_env=KEY_ENV)
                   .replace("concurrency = 3", 'concurrency = 3\nexecutor = "ray"'), encoding="utf-8")
    p = subprocess.run([AGENTRIG, "run", str(exp), "--dir", str(tmp_path / "run")], env={**os.environ, KEY_ENV: KEY},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert 'channel.cache = "replay" works with run.executor = "local" only' in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "run").exists()
