"""Context trouble in real runs (`agentrig run`, real HTTP to the fake endpoint's server
personalities, real store): an overflow on a task's first request stops the run with both sizes;
one in the middle of a trial ends it `context_overflow` (valid, reward 0, never retried); a server
that silently cuts prompts makes trials invalid `PROMPT_TRUNCATED` and the run stops early."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.personalities import estimate_prompt_tokens

KEY = "sk-context-run-test-5a4b3c2d1e0f"
KEY_ENV = "AGENTRIG_CONTEXT_RUN_KEY"
TASKS = '["rent_city_bike", "refuse_cancel_active_rental", "extend_city_rental"]'


def experiment(tmp_path: Path, base_url: str, *, name: str, task_ids: str = TASKS, trials: int = 1) -> Path:
    text = f"""
    name = "{name}"
    [benchmark]
    domains = ["bikeshop"]
    task_ids = {task_ids}
    [run]
    trials = {trials}
    concurrency = 1
    max_steps = 30
    [user]
    kind = "scripted"
    [judge]
    nl_assertions = "never"
    [channel]
    base_url = "{base_url}"
    api_key_env = "{KEY_ENV}"
    max_attempts = 4
    backoff_base_s = 0.001
    timeout_s = 10
    [roles.agent]
    model = "fake-model"
    [[arms]]
    name = "llm"
    """
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(path: Path) -> tuple[int, dict, str]:
    res = CliRunner(env={KEY_ENV: KEY}).invoke(app, ["run", str(path), "--json"])
    assert "Traceback" not in res.output
    return res.exit_code, json.loads(res.stdout), " ".join(res.stderr.split())


def chat_requests(server: ThreadedFakeEndpoint) -> list:
    return [q for q in server.endpoint.requests if q.path.endswith("/chat/completions")]


def records(run_dir: str) -> list:
    with Store.open(Path(run_dir) / "trials.sqlite", create=False) as store:
        return list(store.records())


@pytest.mark.parametrize("personality, status, window_text", [
    ("llama-cpp-overflow", 400, "the window is 300 tokens"),
    ("llama-cpp-overflow-old", 500, "the window is not named by the server"),
])
def test_a_first_request_that_does_not_fit_stops_the_run_with_both_sizes(tmp_path, personality, status, window_text):
    with ThreadedFakeEndpoint(api_key=KEY, personality=personality) as server:
        server.endpoint.personality.window = 300
        code, doc, stderr = run(experiment(tmp_path, server.base_url, name="small"))
        sent = chat_requests(server)
    assert code == 1 and doc["status"] == "fatal"
    error = doc["error"]
    assert error["code"] == "CONTEXT_TOO_SMALL" and error["role"] == "agent"
    assert window_text in error["message"] and "first request of role 'agent'" in error["message"]
    needed = estimate_prompt_tokens(sent[0].json)
    if status == 400:  # llama.cpp names the request's size: the server's count is quoted
        assert f"needs {needed:,} tokens (the server's count)" in error["message"]
    else:  # the old form names no number: the request's own estimate
        assert "needs about" in error["message"] and "characters of messages and tools" in error["message"]
    assert "--ctx-size" in error["fix"] and "num_ctx" in error["fix"]
    assert len(sent) == 1  # never retried (the 500 form included), and no further trial started
    assert doc["stored"] == 0 and doc["arms"]["llm"]["valid"] == 0
    assert "CONTEXT_TOO_SMALL" in stderr and "rerun the same command" in stderr


@pytest.mark.parametrize("personality, names_window", [
    ("llama-cpp-overflow", True), ("llama-cpp-overflow-old", False), ("llama-cpp-python-chatml", True),
])
def test_an_overflow_mid_trial_ends_it_context_overflow_valid_and_unretried(tmp_path, personality, names_window):
    with ThreadedFakeEndpoint(api_key=KEY, personality=personality) as server:
        # a probe run with a window nothing reaches: how large the agent's requests grow
        server.endpoint.personality.window = 10**7
        code, doc, _ = run(experiment(tmp_path, server.base_url, name="probe", task_ids='["rent_city_bike"]'))
        assert code == 0 and doc["arms"]["llm"]["valid"] == 1
        sizes = [estimate_prompt_tokens(q.json) for q in chat_requests(server)]
        first, largest = sizes[0], max(sizes)
        assert largest > first + 20, sizes  # the conversation grows
        server.endpoint.reset()
        server.endpoint.personality.window = (first + largest) // 2
        code, doc, _ = run(experiment(tmp_path, server.base_url, name="mid", task_ids='["rent_city_bike"]', trials=2))
        sent = chat_requests(server)
    assert code == 0 and doc["status"] == "done" and doc["error"] is None
    arm = doc["arms"]["llm"]
    assert (arm["valid"], arm["invalid"], arm["mean_reward"], arm["retries"]) == (2, 0, 0.0, 0)
    recs = records(doc["run_dir"])
    assert [r.verdict.termination for r in recs] == ["context_overflow", "context_overflow"]
    for r in recs:
        assert r.verdict.valid and r.verdict.reward == 0.0
        refused = [c for c in r.trajectory.model_calls if c.error]
        assert [c.error for c in refused] == ["CONTEXT_OVERFLOW"] and len(refused[0].attempts) == 1
        event = next(e for e in r.trajectory.events if e.kind == "context_overflow")
        if names_window:
            assert event.data["window"] == (first + largest) // 2 and event.data["prompt_tokens"] > event.data["window"]
        else:  # the old 500 "Context size has been exceeded." names no number
            assert event.data["window"] is None and "Context size has been exceeded" in event.data["detail"]
    overflowing = [q for q in sent if estimate_prompt_tokens(q.json) >= (first + largest) // 2]
    assert len(overflowing) == 2  # one refused request per trial: nothing retried
    res = CliRunner().invoke(app, ["analyze", doc["run_dir"], "--json"])
    assert res.exit_code == 0, res.output
    failures = json.loads(res.stdout)["arms"]["llm"]["failures"]
    classes = {c["id"]: c for c in failures["classes"]}
    assert classes["context_overflow"]["label"] == "Context overflow"
    assert classes["context_overflow"]["primary"] == failures["failed"] == 2
    assert classes["ran_out"]["any"] == 0


def test_silently_cut_prompts_make_trials_invalid_and_stop_the_run_early(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY, personality="ollama-small-window") as server:
        server.endpoint.personality.window = 600
        code, doc, stderr = run(experiment(tmp_path, server.base_url, name="ollama"))
    assert code == 1 and doc["status"] == "fatal"
    error = doc["error"]
    assert error["code"] == "PROMPT_TRUNCATED" and error["role"] == "agent"
    assert "2 of the first 3 trial attempts" in error["message"]
    # the run learned the server and its window (/api/ps): the fix is Ollama's own
    assert "num_ctx" in error["fix"] and "OLLAMA_CONTEXT_LENGTH" in error["fix"] and "window of 600 tokens" in error["message"]
    arm = doc["arms"]["llm"]
    assert arm["valid"] == 0 and arm["invalid_attempts"] == 2  # the third task was never played
    recs = records(doc["run_dir"])
    assert len(recs) == 2
    for r in recs:
        assert not r.verdict.valid and r.verdict.invalid_cause.startswith("PROMPT_TRUNCATED: ")
        cut = next(e for e in r.trajectory.events if e.kind == "prompt_truncated")
        assert cut.data["role"] == "agent" and cut.data["prompt_tokens"] == 600
    assert "PROMPT_TRUNCATED" in stderr


def test_an_honest_server_never_looks_truncated(tmp_path):
    """The plain fake endpoint (and the same server personality with a window that fits) counts
    every prompt in full: no trial is invalid, no truncation event."""
    with ThreadedFakeEndpoint(api_key=KEY) as plain, \
            ThreadedFakeEndpoint(api_key=KEY, personality="ollama-small-window") as roomy:
        roomy.endpoint.personality.window = 10**7
        for server, name in ((plain, "plain"), (roomy, "roomy")):
            code, doc, _ = run(experiment(tmp_path, server.base_url, name=name, trials=2))
            assert code == 0 and doc["arms"]["llm"]["valid"] == 6 and doc["arms"]["llm"]["invalid_attempts"] == 0
            for r in records(doc["run_dir"]):
                assert not any(e.kind == "prompt_truncated" for e in r.trajectory.events)


@pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root")
def test_a_terminal_task_whose_first_request_does_not_fit_stops_the_run(tmp_path):
    """The bash agent cannot elide anything before its first answer: the run stops, both sizes."""
    with ThreadedFakeEndpoint(api_key=KEY, personality="llama-cpp-overflow") as server:
        server.endpoint.personality.window = 300
        text = f"""
        name = "bash-small"
        [benchmark]
        kind = "terminal"
        task_ids = ["write-marker"]
        [sandbox]
        cache_dir = "{tmp_path / 'cache'}"
        [run]
        trials = 2
        concurrency = 1
        [channel]
        base_url = "{server.base_url}"
        api_key_env = "{KEY_ENV}"
        model = "fake-model"
        max_attempts = 4
        backoff_base_s = 0.001
        [[arms]]
        name = "bash"
        agent = {{ kind = "bash", tool_mode = "native" }}
        """
        path = tmp_path / "bash.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        code, doc, _ = run(path)
        sent = chat_requests(server)
    assert code == 1 and doc["status"] == "fatal" and doc["error"]["code"] == "CONTEXT_TOO_SMALL"
    assert "the window is 300 tokens" in doc["error"]["message"] and "(the server's count)" in doc["error"]["message"]
    assert len(sent) == 1 and doc["stored"] == 0


def test_the_early_stop_needs_most_of_the_first_attempts():
    from agentrig.run.executor import truncation_stop

    assert truncation_stop(truncated=1, seen=1, planned=1)  # a one-trial run: its only trial
    assert not truncation_stop(truncated=1, seen=2, planned=3) and truncation_stop(truncated=2, seen=2, planned=3)
    assert not truncation_stop(truncated=2, seen=4, planned=50) and truncation_stop(truncated=3, seen=4, planned=50)
    assert not truncation_stop(truncated=3, seen=6, planned=50)  # past the first five: no early stop
