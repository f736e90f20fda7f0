"""Planning, resume, comparability, invalid replays and fatal stops — real store, real endpoints."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentrig.errors import ConfigError
from agentrig.run import experiment, snapshot
from agentrig.store import rundir
from agentrig.run.executor import Executor, Stats, close_channels, make_channels, trial_seed
from agentrig.run.session import open_run, plan, summarize
from agentrig.testing.fake_endpoint import Fault, FakeEndpoint

from tests.support import KEY, KEY_ENV


REFERENCE = """
name = "ref"
[benchmark]
domains = ["bikeshop"]
[run]
trials = {trials}
concurrency = 4
max_steps = {max_steps}
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
[[arms]]
name = "noop"
agent = {{ kind = "noop" }}
"""


def llm_exp(base_url: str, *, key_env: str = KEY_ENV, retries: int = 3, arms: str = "", concurrency: int = 1,
            task_ids: str = '["rent_city_bike", "refuse_cancel_active_rental"]') -> str:
    return f"""
name = "llm"
[benchmark]
domains = ["bikeshop"]
task_ids = {task_ids}
[run]
trials = 1
concurrency = {concurrency}
max_invalid_retries = {retries}
max_steps = 20
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
max_attempts = 2
backoff_base_s = 0.001
backoff_max_s = 0.01
timeout_s = 5
[roles.agent]
model = "fake-model"
{arms}
[[arms]]
name = "llm"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


async def play_all(r, run, **kw):
    channels = make_channels(r, run.run_id)
    try:
        ex = Executor(r, run.store, run.run_id, channels, Stats(), **kw)
        return await ex.run(plan(r, run.store)), ex.stats
    finally:
        await close_channels(channels)


def test_trial_seed_is_stable_per_trial_and_shared_by_arms():
    s = trial_seed(300, "airline", "7", 2)
    assert s == trial_seed(300, "airline", "7", 2) and 0 <= s < 2**31
    seeds = {trial_seed(300, "airline", "7", t) for t in range(50)}
    assert len(seeds) == 50
    assert trial_seed(301, "airline", "7", 2) != s and trial_seed(300, "retail", "7", 2) != s


async def test_resume_skips_valid_trials_and_more_trials_play_only_the_new_ones(tmp_path):
    path = write(tmp_path, REFERENCE.format(trials=1, max_steps=200))
    r = experiment.load(path)
    run = open_run(r)
    try:
        assert run.created and len(plan(r, run.store)) == 32
        outcome, stats = await play_all(r, run)
        assert (outcome.status, outcome.stored, stats.valid, stats.invalid) == ("done", 32, 32, 0)
        assert plan(r, run.store) == []  # the same command again: nothing to play
        rows = run.store.verdict_rows()
        assert len(rows) == 32 and {x.arm for x in rows} == {"gold", "noop"}
        gold = [x for x in rows if x.arm == "gold"]
        assert all(x.reward == 1.0 for x in gold)
        by_key = {(x.domain, x.task_id, x.trial): x.seed for x in rows if x.arm == "noop"}
        assert all(by_key[(x.domain, x.task_id, x.trial)] == x.seed for x in gold)  # paired seeds
        summary = summarize(r, run.store)
        assert summary["gold"]["pass_1"] == 1.0 and summary["gold"]["valid"] == 16
        assert summary["noop"]["mean_reward"] < 1.0
    finally:
        run.close()

    r2 = experiment.load(write(tmp_path, REFERENCE.format(trials=3, max_steps=200)))
    run = open_run(r2)
    try:
        assert not run.created and run.dir == r.run_dir
        specs = plan(r2, run.store)
        assert len(specs) == 64 and {s.key.trial for s in specs} == {1, 2}
        assert [s.key.trial for s in specs[:32]] == [1] * 32  # interleaved: trial 1 everywhere first
        outcome, _ = await play_all(r2, run)
        assert outcome.stored == 64 and run.store.counts()["valid"] == 96
        assert len(run.store.verdict_rows()) == 96  # nothing stored twice
    finally:
        run.close()


def test_incomparable_config_is_refused_with_the_differences_and_force_makes_a_new_dir(tmp_path):
    path = write(tmp_path, REFERENCE.format(trials=1, max_steps=200))
    r = experiment.load(path)
    open_run(r).close()
    changed = REFERENCE.format(trials=1, max_steps=50).replace('{ kind = "noop" }', '{ kind = "noop", policy = "default", parallel_tool_calls = true }')
    r2 = experiment.load(write(tmp_path, changed))
    with pytest.raises(ConfigError) as info:
        open_run(r2)
    msg = str(info.value)
    assert "limits.max_steps: 200 → 50" in msg
    assert "arms.noop.agent.parallel_tool_calls: false → true" in msg
    assert "--force" in msg and str(r.run_dir) in msg

    forced = open_run(r2, force=True)
    try:
        assert forced.dir == r.run_dir.with_name("ref-2") and forced.created
        assert "ref-2" in (forced.note or "") and "new run" in forced.note
    finally:
        forced.close()
    again = open_run(r2, force=True)  # --force again resumes the forced run
    try:
        assert again.dir == r.run_dir.with_name("ref-2") and not again.created
    finally:
        again.close()
    # more trials, a new arm: still comparable with the first run
    more = REFERENCE.format(trials=4, max_steps=200) + '[[arms]]\nname = "flaky"\nagent = { kind = "flaky-gold", drop_p = 0.5 }\n'
    ok = open_run(experiment.load(write(tmp_path, more)))
    try:
        assert ok.dir == r.run_dir
        assert "flaky" in ok.store.get_meta("comparability")["arms"]
    finally:
        ok.close()


def test_differences_treat_new_arms_and_tasks_as_additions_but_not_new_settings():
    old = {"arms": {"a": {"roles": {"agent": {"model": "m", "extra_body": {}}}}}, "tasks": {"d/1": "x"},
           "limits": {"max_steps": 200}}
    new = {"arms": {"a": {"roles": {"agent": {"model": "m", "extra_body": {"reasoning": "high"}},
                                    "judge": {"model": "j"}}}, "b": {}},
           "tasks": {"d/1": "x", "d/2": "y"}, "limits": {"max_steps": 200}}
    diffs = rundir.differences(old, new)
    assert diffs == ['arms.a.roles.agent.extra_body.reasoning: (absent) → "high"']
    new["tasks"]["d/1"] = "changed"
    assert 'tasks.d/1: "x" → "changed"' in rundir.differences(old, new)
    merged = rundir.merged(old, {**old, "arms": {**old["arms"], "b": {"z": 1}}})
    assert set(merged["arms"]) == {"a", "b"}


async def test_a_trial_spoiled_by_500s_is_invalid_then_replayed_until_valid(tmp_path, monkeypatch, fake):
    monkeypatch.setenv(KEY_ENV, KEY)
    r = experiment.load(write(tmp_path, llm_exp(fake.base_url, task_ids='["rent_city_bike"]')))
    # max_attempts = 2: four 500s spoil the first two plays of the trial; the third succeeds
    fake.push(*[Fault("server_error", status=500)] * 4)
    run = open_run(r)
    try:
        outcome, stats = await play_all(r, run)
        assert outcome.status == "done"
        rows = run.store.verdict_rows()
        assert [(x.attempt, x.valid) for x in rows] == [(0, False), (1, False), (2, True)]
        assert all("SERVER_ERROR" in (x.invalid_cause or "") for x in rows[:2])
        assert (stats.valid, stats.invalid, stats.invalid_attempts, stats.replays, stats.failed) == (1, 0, 2, 2, 1)
        assert rows[2].termination == "user_stop"
        assert plan(r, run.store) == []
    finally:
        run.close()


async def test_invalid_after_its_replays_stays_invalid_and_is_not_a_failure(tmp_path, monkeypatch, fake):
    monkeypatch.setenv(KEY_ENV, KEY)
    r = experiment.load(write(tmp_path, llm_exp(fake.base_url, retries=1, task_ids='["rent_city_bike"]')))
    fake.push(*[Fault("server_error", status=503)] * 4)
    run = open_run(r)
    try:
        outcome, stats = await play_all(r, run)
        assert outcome.status == "done"
        assert (stats.valid, stats.invalid, stats.failed, stats.finished) == (0, 1, 0, 1)
        s = summarize(r, run.store)["llm"]
        assert (s["valid"], s["invalid"], s["invalid_attempts"], s["mean_reward"]) == (0, 1, 2, None)
        assert any("SERVER_ERROR" in c for c in s["invalid_causes"])
        # a rerun plays it again, numbering attempts on from the stored ones
        specs = plan(r, run.store)
        assert [(sp.key.task_id, sp.attempt) for sp in specs] == [("rent_city_bike", 2)]
        outcome, stats = await play_all(r, run)
        assert stats.valid == 1 and summarize(r, run.store)["llm"]["invalid"] == 0
    finally:
        run.close()


async def test_fatal_401_stops_the_run_and_keeps_the_finished_trials(tmp_path, monkeypatch, fake):
    wrong = "sk-wrong-key-0000111122223333"
    monkeypatch.setenv(KEY_ENV, wrong)
    gold = '[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n'
    text = llm_exp(fake.base_url, task_ids='["rent_city_bike", "refuse_cancel_active_rental", "extend_city_rental"]')
    r = experiment.load(write(tmp_path, text.replace("[[arms]]\nname = \"llm\"", gold + "[[arms]]\nname = \"llm\"")))
    run = open_run(r)
    try:
        outcome, stats = await play_all(r, run)
        assert outcome.status == "fatal" and outcome.fatal.code == "AUTH_REJECTED"
        assert outcome.fatal_role == "agent" and outcome.fatal_trial.startswith("llm/bikeshop/")
        rows = run.store.verdict_rows()
        assert rows and all(x.arm == "gold" and x.valid for x in rows)  # the gold trial before it is kept
        chat = [q for q in fake.requests if q.path.endswith("/chat/completions")]
        assert len(chat) == 1  # stopped at once: no other trial tried the rejected key
    finally:
        run.close()
    for f in r.run_dir.rglob("*"):
        if f.is_file():
            assert wrong.encode() not in f.read_bytes(), f


async def test_an_endpoint_that_stays_down_stops_the_run_instead_of_piling_up_invalid_trials(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    async with FakeEndpoint(api_key=KEY, fault_rate=1.0, fault_kinds=("server_error",)) as down:
        text = llm_exp(down.base_url, task_ids='["rent_city_bike"]').replace("trials = 1", "trials = 6")
        r = experiment.load(write(tmp_path, text))
        run = open_run(r)
        try:
            outcome, stats = await play_all(r, run)
            assert outcome.status == "stalled" and "SERVER_ERROR" in outcome.stalled_cause
            assert outcome.stored == 12 == stats.invalid_attempts  # stall_limit(1): 12 in a row, then stop
            assert run.store.counts()["valid"] == 0
        finally:
            run.close()


def test_a_changed_memory_prompt_makes_a_memory_arm_incomparable(tmp_path, monkeypatch):
    from agentrig.plugins.memory import prompts

    exp = REFERENCE.format(trials=1, max_steps=200).replace(
        '[[arms]]\nname = "gold"',
        '[roles.memory]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n[[arms]]\nname = "gold"') + (
        '[[arms]]\nname = "mem"\nagent = { kind = "gold" }\nplugins = [{ kind = "memory" }]\n')
    r = experiment.load(write(tmp_path, exp))
    run = open_run(r)
    try:
        stored = run.store.get_meta("comparability")["arms"]
        assert "prompts_sha" in stored["mem"]["plugins"][0]
        assert stored["gold"]["plugins"] == []  # arms without plug-ins: the snapshot as before
    finally:
        run.close()
    open_run(experiment.load(write(tmp_path, exp))).close()  # the same texts: comparable
    monkeypatch.setattr(prompts, "REMINDER_HEAD", prompts.REMINDER_HEAD + " (reworded)")
    with pytest.raises(ConfigError) as info:
        open_run(experiment.load(write(tmp_path, exp)))
    assert "arms.mem.plugins" in str(info.value) and "prompts_sha" in str(info.value)
