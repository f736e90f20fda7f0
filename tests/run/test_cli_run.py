"""`agentrig run` / `agentrig export` as a user runs them: real CLI, real endpoints, real store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.errors import DataError
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

KEY = "sk-cli-run-test-9e8d7c6b5a493827"
KEY_ENV = "AGENTRIG_CLI_RUN_KEY"
HEADER_SECRET = "hdr-secret-value-31415926535"
HEADER_ENV = "AGENTRIG_CLI_RUN_HEADER"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))

REFERENCE = """
name = "ref"
[benchmark]
domains = ["bikeshop"]
task_ids = ["rent_city_bike", "refuse_cancel_active_rental", "extend_city_rental"]
[run]
trials = 2
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = { kind = "gold" }
[[arms]]
name = "noop"
agent = { kind = "noop" }
"""


def llm_exp(base_url: str, *, judge: bool = False, task_ids: str = '["rent_city_bike", "refuse_cancel_active_rental"]',
            trials: int = 1, concurrency: int = 2) -> str:
    judge_part = '[roles.judge]\nmodel = "fake-model-mini"\n' if judge else ""
    return f"""
name = "llm"
[benchmark]
domains = ["bikeshop"]
task_ids = {task_ids}
[run]
trials = {trials}
concurrency = {concurrency}
max_steps = 20
[user]
kind = "scripted"
[judge]
nl_assertions = "{'auto' if judge else 'never'}"
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
max_attempts = 2
backoff_base_s = 0.001
timeout_s = 5
headers = {{ "X-Team" = "evals" }}
headers_from_env = {{ "X-Gateway-Token" = "{HEADER_ENV}" }}
[roles.agent]
model = "fake-model"
temperature = 0.0
{judge_part}
[[arms]]
name = "llm"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def cli(*args: str, env: dict | None = None):
    return CliRunner(env=env).invoke(app, list(args))


def flat(text: str) -> str:
    """Console output with rich's line wrapping undone."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def server():
    with ThreadedFakeEndpoint(api_key=KEY) as srv:
        yield srv


def test_run_json_prints_one_object_and_a_rerun_plays_nothing(tmp_path):
    path = write(tmp_path, REFERENCE)
    res = cli("run", str(path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)  # the whole of stdout is one JSON object
    assert set(doc) == {"run_dir", "run_id", "status", "played", "stored", "error", "arms", "report"}
    assert doc["report"] and Path(doc["report"]).is_file()
    assert doc["status"] == "done" and doc["played"] == 12 and doc["stored"] == 12 and doc["error"] is None
    assert Path(doc["run_dir"]) == tmp_path / "runs" / "ref"
    gold, noop = doc["arms"]["gold"], doc["arms"]["noop"]
    assert set(gold) >= {"planned", "valid", "invalid", "mean_reward", "pass_1", "prompt_tokens",
                         "completion_tokens", "retries", "invalid_causes"}
    assert (gold["planned"], gold["valid"], gold["mean_reward"], gold["pass_1"]) == (6, 6, 1.0, 1.0)
    assert noop["valid"] == 6 and noop["mean_reward"] < 1
    again = json.loads(cli("run", str(path), "--json").stdout)
    assert again["played"] == 0 and again["run_id"] == doc["run_id"] and again["arms"] == doc["arms"]
    assert (tmp_path / "runs" / "ref" / "config.json").is_file()


def test_run_prints_a_summary_for_people(tmp_path):
    res = cli("run", str(write(tmp_path, REFERENCE)))
    assert res.exit_code == 0, res.output
    assert "gold" in res.stdout and "6/6" in res.stdout and "1.000" in res.stdout
    assert "run directory:" in res.stdout and "agentrig export" in res.stdout
    assert "12 to play" in res.stderr


def test_bad_experiment_is_one_message_and_exit_1(tmp_path):
    res = cli("run", str(write(tmp_path, REFERENCE + "\n[run2]\nx = 1\n")))
    assert res.exit_code == 1 and "run2: unknown setting" in flat(res.stderr) and "Traceback" not in res.output
    res = cli("run", str(tmp_path / "missing.toml"))
    assert res.exit_code == 1 and "no such file" in flat(res.stderr)


def test_changed_config_is_refused_then_force_starts_a_new_dir(tmp_path):
    path = write(tmp_path, REFERENCE)
    assert cli("run", str(path), "--json").exit_code == 0
    write(tmp_path, REFERENCE.replace("trials = 2", "trials = 2\nmax_errors = 3"))
    res = cli("run", str(path))
    assert res.exit_code == 1 and "limits.max_errors: 10 → 3" in flat(res.stderr) and "--force" in res.stderr
    res = cli("run", str(path), "--force", "--json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["run_dir"] == str(tmp_path / "runs" / "ref-2")
    assert "ref-2" in res.stderr


def test_llm_run_leaves_no_secret_in_the_run_dir(tmp_path, server):
    env = {KEY_ENV: KEY, HEADER_ENV: HEADER_SECRET}
    server.endpoint.reset()
    res = cli("run", str(write(tmp_path, llm_exp(server.base_url))), "--json", env=env)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["arms"]["llm"]["valid"] == 2 and doc["arms"]["llm"]["prompt_tokens"] > 0
    sent = [q for q in server.endpoint.requests if q.path.endswith("/chat/completions")]
    assert sent and all(q.headers.get("x-gateway-token") == HEADER_SECRET for q in sent)  # it was used
    run_dir = Path(doc["run_dir"])
    files = [f for f in run_dir.rglob("*") if f.is_file()]
    assert {f.name for f in files} >= {"config.json", "trials.sqlite"}
    for f in files:
        data = f.read_bytes()
        assert KEY.encode() not in data and HEADER_SECRET.encode() not in data, f
    config = json.loads((run_dir / "config.json").read_text())
    assert config["resolved"]["llm"]["roles"]["agent"]["api_key_env"] == KEY_ENV  # the NAME only
    assert config["resolved"]["llm"]["roles"]["agent"]["headers_from_env"] == {"X-Gateway-Token": f"${HEADER_ENV}"}


def test_fatal_401_exits_1_with_the_doctors_code_and_keeps_finished_trials(tmp_path, server):
    text = llm_exp(server.base_url, task_ids='["rent_city_bike", "refuse_cancel_active_rental", "extend_city_rental"]',
                   concurrency=1)
    text = text.replace('[[arms]]\nname = "llm"', '[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n\n[[arms]]\nname = "llm"')
    res = cli("run", str(write(tmp_path, text)), "--json", env={KEY_ENV: "sk-not-the-right-key-00000", HEADER_ENV: "x"})
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["status"] == "fatal" and doc["error"]["code"] == "AUTH_REJECTED" and doc["error"]["role"] == "agent"
    assert doc["arms"]["gold"]["valid"] == 1 and doc["arms"]["llm"]["valid"] == 0
    assert "AUTH_REJECTED" in res.stderr and "fix:" in res.stderr and "rerun the same command" in flat(res.stderr)
    assert "Traceback" not in res.output


def test_smoke_exercises_every_role_in_its_own_store(tmp_path, server):
    env = {KEY_ENV: KEY, HEADER_ENV: "x"}
    path = write(tmp_path, llm_exp(server.base_url, judge=True, task_ids='["rent_city_bike"]'))
    res = cli("run", str(path), "--smoke", "--json", env=env)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] is True
    arm = doc["arms"][0]
    # [roles.judge] has a model, but the one task has no NL assertion: no trial calls the judge, so
    # it is not probed (issue 31, item 6: a role no arm uses is not checked)
    assert [c["role"] for c in arm["roles"]] == ["agent"] and all(c["status"] == "ok" for c in arm["roles"])
    assert Path(doc["store"]).parent.name == "smoke"
    assert not (tmp_path / "runs" / "llm" / "trials.sqlite").exists()  # never the run's store
    with Store.open(doc["store"], create=False) as s:
        assert s.counts()["valid"] == 1
    res = cli("run", str(path), "--smoke", env={KEY_ENV: "sk-bad-bad-bad-bad-0000", HEADER_ENV: "x"})
    assert res.exit_code == 1
    assert "AUTH_REJECTED" in res.stdout and "smoke check failed" in flat(res.stdout)


def test_export_jsonl_and_tau2(tmp_path):
    path = write(tmp_path, REFERENCE)
    run_dir = Path(json.loads(cli("run", str(path), "--json").stdout)["run_dir"])
    res = cli("export", str(run_dir), "--format", "jsonl")
    assert res.exit_code == 0 and "wrote 12 record(s)" in res.stdout
    lines = (run_dir / "exports" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 12 and json.loads(lines[0])["key"]["arm"] in ("gold", "noop")
    res = cli("export", str(run_dir), "--format", "tau2")
    assert res.exit_code == 1 and "gold, noop" in flat(res.stderr) and "--arm" in res.stderr
    out = tmp_path / "gold.json"
    res = cli("export", str(run_dir), "--format", "tau2", "--arm", "gold", "--out", str(out))
    assert res.exit_code == 0 and "wrote 6 simulation(s)" in res.stdout
    doc = json.loads(out.read_text())
    assert len(doc["simulations"]) == 6 and len(doc["tasks"]) == 3
    assert doc["info"]["num_trials"] == 2 and doc["info"]["environment_info"]["domain_name"] == "bikeshop"
    assert all(s["reward_info"]["reward"] == 1.0 for s in doc["simulations"])
    res = cli("export", str(tmp_path), "--format", "tau2")
    assert res.exit_code == 1 and "not a run directory" in flat(res.stderr)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_a_stopped_run_keeps_its_trials_and_the_rerun_completes_it(tmp_path, sig):
    with ThreadedFakeEndpoint(api_key=KEY, delay_s=0.15) as slow:
        path = write(tmp_path, llm_exp(slow.base_url, task_ids='["rent_city_bike"]', trials=40, concurrency=2))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
        env.update({KEY_ENV: KEY, HEADER_ENV: "x"})
        proc = subprocess.Popen([AGENTRIG, "run", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        store_path = tmp_path / "runs" / "llm" / "trials.sqlite"
        deadline = time.monotonic() + 90  # generous: a loaded machine starts the CLI slowly
        while time.monotonic() < deadline:
            try:  # the run may have created the file but not yet its schema (an empty store is refused)
                with Store.open(store_path, create=False) as s:
                    if s.counts()["valid"] >= 2:
                        break
            except DataError:
                pass
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=90)
        if sig == signal.SIGINT:
            assert proc.returncode == 130, err
            assert "rerun the same command to resume" in flat(err) and "Traceback" not in err
        else:
            assert proc.returncode == -signal.SIGKILL
        with Store.open(store_path, create=False) as s:
            kept = s.counts()["valid"]
        assert 2 <= kept < 40
        slow.endpoint.delay_s = 0.0
        res = cli("run", str(path), "--json", env={KEY_ENV: KEY, HEADER_ENV: "x"})
        doc = json.loads(res.stdout)
        assert res.exit_code == 0 and doc["played"] == 40 - kept and doc["arms"]["llm"]["valid"] == 40
        with Store.open(store_path, create=False) as s:
            rows = s.verdict_rows()
        assert len(rows) == 40 and len({r.key for r in rows}) == 40  # none lost, none stored twice


def test_a_dead_endpoint_stops_the_run_with_exit_1(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY, fault_rate=1.0, fault_kinds=("server_error",)) as down:
        text = llm_exp(down.base_url, task_ids='["rent_city_bike"]', trials=8, concurrency=1)
        res = cli("run", str(write(tmp_path, text)), "--json", env={KEY_ENV: KEY, HEADER_ENV: "x"})
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["status"] == "stalled" and doc["error"]["code"] == "SERVER_ERROR" and doc["stored"] == 12
    assert "endpoint seems down" in flat(res.stderr) and "rerun the same command" in flat(res.stderr)
    assert "role=agent gave up" not in res.stderr  # the channel's per-call warnings do not flood the terminal
