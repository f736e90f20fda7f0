"""One retry figure everywhere: a run whose calls retry and give up shows the same number of
retries in the run's summary (JSON and the table for people), the store's trials and model_calls
tables, ``analyze``'s usage (and its causes), the report (usage table and outcome grid) and the
JSONL export; a call that gave up after ``max_attempts`` stored ``max_attempts − 1`` retries and
its wall time over all attempts as its latency."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import Fault, ThreadedFakeEndpoint

KEY = "sk-retry-figures-test-0a1b2c3d4e5f"
KEY_ENV = "AGENTRIG_RETRY_FIGURES_KEY"
MAX_ATTEMPTS = 3


def _experiment(tmp_path: Path, base_url: str) -> Path:
    text = f"""
    name = "retries"
    [benchmark]
    domains = ["bikeshop"]
    task_ids = ["rent_city_bike", "refuse_cancel_active_rental"]
    [run]
    trials = 1
    concurrency = 1
    max_steps = 6
    [user]
    kind = "scripted"
    [judge]
    nl_assertions = "never"
    [channel]
    base_url = "{base_url}"
    api_key_env = "{KEY_ENV}"
    max_attempts = {MAX_ATTEMPTS}
    backoff_base_s = 0.001
    backoff_max_s = 0.002
    timeout_s = 10
    [roles.agent]
    model = "fake-model"
    [[arms]]
    name = "llm"
    """
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _cli(*args: str):
    return CliRunner(env={KEY_ENV: KEY, "COLUMNS": "200"}).invoke(app, list(args))


def test_every_view_shows_the_same_retries(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY) as server:
        # concurrency 1: the first task's first call fails MAX_ATTEMPTS times (gives up: the trial is
        # invalid, replayed at the back of the queue); the second task's first call fails twice and
        # then succeeds; the replay finds no fault left
        server.endpoint.push(*[Fault("server_error")] * MAX_ATTEMPTS,
                             Fault("rate_limit", retry_after_ms=5), Fault("server_error"))
        res = _cli("run", str(_experiment(tmp_path, server.base_url)), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    run_dir = Path(doc["run_dir"])
    expected = (MAX_ATTEMPTS - 1) + 2

    # the store: per call and per trial, one definition (attempts − 1)
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows()
        calls = store.model_call_rows()
        records = list(store.records())
    assert [r.valid for r in rows].count(False) == 1 and len(rows) == 3
    assert sum(r.retries for r in rows) == expected
    assert sum(c["retries"] for c in calls) == expected
    assert all(c["retries"] == c["attempts"] - 1 for c in calls)
    failed = [c for rec in records for c in rec.trajectory.model_calls if c.error is not None]
    assert len(failed) == 1
    gave_up = failed[0]
    assert len(gave_up.attempts) == MAX_ATTEMPTS and gave_up.retries == MAX_ATTEMPTS - 1
    # its latency is its wall time: every attempt and every wait between them, not 0.0
    spent = sum(a.latency_s + a.wait_s for a in gave_up.attempts)
    assert gave_up.latency_s > 0 and gave_up.latency_s >= spent
    failed_row = next(c for c in calls if c["error"] is not None)
    assert failed_row["retries"] == MAX_ATTEMPTS - 1 and failed_row["latency_s"] == gave_up.latency_s

    # the run's summary: JSON, then the table for people (a rerun plays nothing and prints it)
    assert doc["arms"]["llm"]["retries"] == expected
    again = _cli("run", str(tmp_path / "exp.toml"))
    assert again.exit_code == 0, again.output
    header = next(line for line in again.stdout.splitlines() if "retries" in line)
    row = next(line for line in again.stdout.splitlines() if line.startswith("llm "))
    assert header.split()[-1] == "retries" and row.split()[-1] == str(expected)

    # analyze: usage per role, its causes, and the reruns (valid trials only)
    res = _cli("analyze", str(run_dir), "--json")
    assert res.exit_code == 0, res.output
    arm = json.loads(res.stdout)["arms"]["llm"]
    roles = arm["usage"]["roles"]
    assert sum(r["retries"] for r in roles) == expected
    assert sum(sum(r["retries_by_cause"].values()) for r in roles) == expected
    agent = next(r for r in roles if r["role"] == "agent")
    assert agent["retries_by_cause"] == {"server_error": MAX_ATTEMPTS - 1 + 1, "rate_limited": 1}
    assert agent["failed"] == 1 and agent["attempts"] == agent["requests"] + expected
    assert sum(r["retries"] for r in arm["reruns"]["reruns"]) == sum(r.retries for r in rows if r.valid)
    res = _cli("analyze", str(run_dir))
    usage_row = next(line for line in res.stdout.splitlines() if re.match(r"\s*llm\s+agent\s", line))
    assert f"{expected} (" in usage_row

    # the report: the usage table and the outcome grid (each cell: the shown attempt's retries)
    res = _cli("report", str(run_dir), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    cell = re.search(r'<td class="l">llm</td><td class="l">agent</td><td class="l">[^<]*</td>'
                     r"<td>\d+</td><td>(\d+)</td><td>\d+</td><td>(\d+)", html)
    assert cell and (int(cell.group(1)), int(cell.group(2))) == (1, expected)
    grid = json.loads(re.search(r'<script type="application/json" id="grid-data">(.*?)</script>', html, re.S)[1])
    shown = {(r.domain, r.task_id): r.retries for r in rows if r.valid}
    cells = {tuple(grid["tasks"][c[0]]): c[8] for c in grid["arms"][0]["cells"]}
    assert cells == shown

    # the JSONL export carries every attempt: attempts − 1 per call adds up to the same number
    res = _cli("export", str(run_dir), "--format", "jsonl", "-o", str(tmp_path / "all.jsonl"))
    assert res.exit_code == 0, res.output
    exported = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert sum(len(c["attempts"]) - 1 for rec in exported for c in rec["trajectory"]["model_calls"]) == expected
    failed_export = [c for rec in exported for c in rec["trajectory"]["model_calls"] if c["error"]]
    assert [c["latency_s"] for c in failed_export] == [gave_up.latency_s]
