"""A prompt known to be cut is never a valid result (issue 23, item 10).

Ollama's OpenAI-compatible endpoint cuts a prompt longer than its window and answers 200. The
truncation watch's own rules need a previous request to compare with, so a trial whose only long
request was its first (a short gold conversation: the agent answers once, the user stops) used to
be stored as a valid pass. The run now learns the server's window as the doctor does (Ollama's
``/api/ps``, ``/api/show``) and holds every role's first request against it.

Real HTTP to the gold-scripting endpoint with the Ollama personality, real τ²-bench airline data,
the real CLI and store."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from agentrig.channel.servers import LLAMA_CPP, OLLAMA, VLLM, ServerInfo
from agentrig.cli import app
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.trial.truncation import TruncationWatch
from agentrig.types import Usage

KEY = "sk-window-truncation-test-1a2b3c4d"
KEY_ENV = "AGENTRIG_WINDOW_TRUNCATION_KEY"


def airline(tmp_path: Path, base_url: str, data: Path, *, name: str, num_tasks: int, trials: int) -> Path:
    text = f"""
    name = "{name}"
    [benchmark]
    kind = "tau2"
    data = "{data}"
    domains = ["airline"]
    num_tasks = {num_tasks}
    [run]
    trials = {trials}
    concurrency = 8
    max_steps = 200
    [user]
    kind = "llm"
    [judge]
    nl_assertions = "never"
    [channel]
    base_url = "{base_url}"
    api_key_env = "{KEY_ENV}"
    model = "gold"
    max_attempts = 2
    backoff_base_s = 0.001
    timeout_s = 20
    [[arms]]
    name = "gold"
    """
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(path: Path) -> tuple[int, dict]:
    res = CliRunner(env={KEY_ENV: KEY}).invoke(app, ["run", str(path), "--json"])
    assert "Traceback" not in res.output, res.output
    return res.exit_code, json.loads(res.stdout)


def records(run_dir: str) -> list:
    with Store.open(Path(run_dir) / "trials.sqlite", create=False) as store:
        return list(store.records())


def ollama_gold(data: Path, window: int) -> ThreadedFakeEndpoint:
    ep = GoldEndpoint(data, api_key=KEY, personality="ollama-small-window", record=True)
    ep.personality.window = window
    return ThreadedFakeEndpoint(ep)


def test_ten_airline_tasks_on_a_2048_window_store_no_valid_trial(tmp_path, tau2_root):
    with ollama_gold(tau2_root, 2048) as server:
        code, doc = run(airline(tmp_path, server.base_url, tau2_root, name="cut", num_tasks=10, trials=4))
        asked = [q.path for q in server.endpoint.requests if q.path.startswith("/api/")]
    assert code != 0 and doc["status"] == "fatal" and doc["error"]["code"] == "PROMPT_TRUNCATED"
    assert "OLLAMA_CONTEXT_LENGTH" in doc["error"]["fix"]
    recs = records(doc["run_dir"])
    assert recs and not [r.key.label() for r in recs if r.verdict.valid]  # never a valid result
    by_window = [r for r in recs if "first request is about" in (r.verdict.invalid_cause or "")]
    assert by_window, [r.verdict.invalid_cause for r in recs]
    cause = by_window[0].verdict.invalid_cause
    assert cause.startswith("PROMPT_TRUNCATED: ") and "Ollama's context window of 2,048 tokens" in cause
    assert "context_length in GET /api/ps" in cause
    event = next(e for e in by_window[0].trajectory.events if e.kind == "prompt_truncated")
    assert event.data["window"] == 2048 and "OLLAMA_CONTEXT_LENGTH" in event.data["fix"]
    # the window is asked once per endpoint and model, not once per trial
    assert asked.count("/api/ps") == 1 and asked.count("/api/version") == 1


def test_a_window_that_fits_keeps_every_gold_trial_valid(tmp_path, tau2_root):
    with ollama_gold(tau2_root, 131072) as server:
        code, doc = run(airline(tmp_path, server.base_url, tau2_root, name="roomy", num_tasks=3, trials=1))
    assert code == 0 and doc["status"] == "done", doc
    recs = records(doc["run_dir"])
    assert len(recs) == 3 and all(r.verdict.valid and r.verdict.reward == 1.0 for r in recs)
    assert not any(e.kind == "prompt_truncated" for r in recs for e in r.trajectory.events)


# ------------------------------------------------------------------ the rule itself, per server
BIG = [{"role": "system", "content": "policy " * 2000}, {"role": "user", "content": "hi"}]  # ~3,500 tokens


def test_a_first_request_over_a_silently_cutting_window_is_cut_whatever_the_count():
    ollama = ServerInfo(kind=OLLAMA, window=2048, window_source="num_ctx in POST /api/show")
    for usage in (Usage(prompt_tokens=2048, reported=True), Usage(prompt_tokens=1700, reported=True), Usage(reported=False)):
        cut = TruncationWatch().check("agent", BIG, usage, None, ollama)
        assert cut is not None and cut.code == "PROMPT_TRUNCATED", usage
        assert "2,048 tokens" in cut.message and "num_ctx in POST /api/show" in cut.message
        assert "OLLAMA_CONTEXT_LENGTH" in cut.fix and "rerun the same command" in cut.fix


def test_the_window_rule_spares_fitting_prompts_later_requests_and_servers_that_refuse():
    small = [{"role": "user", "content": "hello"}]
    ollama = ServerInfo(kind=OLLAMA, window=2048)
    assert TruncationWatch().check("agent", small, Usage(prompt_tokens=10, reported=True), None, ollama) is None
    # servers that refuse a prompt past their window: an answer means it fitted (the estimate was high)
    for kind in (VLLM, LLAMA_CPP):
        info = ServerInfo(kind=kind, window=2048)
        assert TruncationWatch().check("agent", BIG, Usage(prompt_tokens=2000, reported=True), None, info) is None
    # no known window: the rule does not apply
    assert TruncationWatch().check("agent", BIG, Usage(prompt_tokens=3000, reported=True), None, ServerInfo()) is None
    # only the role's first request of the trial is held against the window (later ones by growth)
    watch = TruncationWatch()
    assert watch.check("agent", small, Usage(prompt_tokens=10, reported=True), None, ollama) is None
    assert watch.check("agent", BIG, Usage(prompt_tokens=3500, reported=True), None, ollama) is None
