"""Acceptance of issue 4 through the real stack: experiment TOML → `agentrig run` (a subprocess)
→ LLM agent, LLM user and NL judge, all through the channel to the gold-scripting endpoint (its
own process, `python -m agentrig.bench.tau.scripted.gold_endpoint`) → episode → judge → SQLite store.

- every task of the shared τ²-bench data ends with reward 1.0 where the gold can earn it; the
  tasks whose gold replay is not clean, or whose reward basis the gold cannot earn, are listed
  below with the reason and checked for exactly that outcome;
- the same with 20% of the requests answered by 429 / 500 / a malformed body: every trial valid
  and correct, the retries counted in the store;
- SIGKILL in the middle of a run, then the same command again: the run completes, every trial
  is stored valid exactly once, the trials finished before the kill are kept as they were;
- the API key (a distinctive value) appears nowhere in the run directory, sqlite files included
  (and not in the decompressed trial records either).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from agentrig.bench.tau.data import domain_dir, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.replay import replay_gold
from agentrig.store.store import Store
from agentrig.testing.store_watch import valid_count

from tests.support import EndpointProcess

KEY_ENV = "AGENTRIG_GOLD_RUN_KEY"
KEY = "sk-goldrun-Zq7Vw3Kp9TnX4bLm8RsY2cJd"
DOMAINS = ("airline", "retail", "telecom", "mock")
ARM = "gold-llm"

# Tasks of the shared data whose GOLD cannot earn their reward basis — tau2-bench v1.0.1 scores
# the gold trajectory 0 on them. Checked: such a trial ends valid with reward 0 and the component
# named here is the one that fails. (So 226 of the 228 tasks reach 1.0 with the gold.)
GOLD_CANNOT_EARN = {
    ("mock", "update_task_with_history_and_env_assertions"): (
        "ENV_ASSERTION",
        "no gold actions, yet its env assertion wants task_2 'completed'; the message history only "
        "created task_2, so the gold (doing nothing) fails it. An agent that completes task_2 earns "
        "it: the basis is ENV_ASSERTION only"),
    ("mock", "update_task_with_user_tools"): (
        "ENV_ASSERTION",
        "its env assertion wants the user's notif_1 'read', but its gold actions hold no user "
        "dismiss_notification, so the gold user leaves it unread. No trajectory earns this task: a "
        "user who dismisses it makes the user-side state differ from the gold state (DB 0)"),
}
# Tasks whose gold replay is not clean (a gold action errors) but whose basis the gold still
# earns. Checked: reward 1.0, and the failing actions are the ones named here.
_READ = "a read-only gold lookup fails (a wrong e-mail / product / order id first), which changes no state"
GOLD_ERRORS_OK = {
    **{("retail", t): (_READ, "get_product_details") for t in ("2", "3", "4")},
    **{("retail", t): (_READ, "find_user_id_by_email") for t in ("35", "37", "54")},
    **{("retail", t): (_READ, "get_order_details") for t in ("46", "47")},
    ("retail", "67"): (_READ, "find_user_id_by_name_zip"),
    ("retail", "105"): (
        "the gold exchange fails ('Insufficient gift card balance') before changing anything; the "
        "gold state and the replayed trajectory fail alike, so DB still matches (tau2-bench v1.0.x "
        "scores it; newer versions would refuse to certify the DB match)",
        "exchange_delivered_order_items"),
}


# ------------------------------------------------------------------------------------ helpers


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTRIG_GOLD"))}
    env.update({KEY_ENV: KEY, "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def _agentrig() -> list[str]:
    exe = Path(sys.executable).with_name("agentrig")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from agentrig.cli import main; main()"]


class GoldServer(EndpointProcess):
    """The gold endpoint as its own process (CLI), with a key read from KEY_ENV."""

    def __init__(self, root: Path, *extra: str):
        super().__init__("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(root), "--api-key-env", KEY_ENV, *extra, env=_env())


def write_experiment(path: Path, base_url: str, root: Path, *, domains=DOMAINS, trials=1, concurrency=12,
                     name="gold") -> Path:
    path.write_text(f"""
name = "{name}"

[benchmark]
data = "{root}"
domains = {json.dumps(list(domains))}
split = "all"

[run]
trials = {trials}
seed = 4242
concurrency = {concurrency}
max_invalid_retries = 3

[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
max_concurrency = 64

[[arms]]
name = "{ARM}"
agent = {{ kind = "llm", tool_mode = "native" }}
""", encoding="utf-8")
    return path


def agentrig_run(toml: Path, timeout: float = 240) -> dict:
    done = subprocess.run([*_agentrig(), "run", str(toml), "--json"], capture_output=True, text=True,
                          timeout=timeout, env=_env())
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def planned_keys(root: Path, domains, trials: int) -> set[tuple]:
    return {(ARM, d, t.id, i) for d in domains for t in load_tasks(root, d) for i in range(trials)}


def assert_no_key(run_dir: Path) -> None:
    needles = [KEY.encode(), KEY[8:24].encode()]
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".sqlite") for p in files), files
    for p in files:
        raw = p.read_bytes()
        for needle in needles:
            assert needle not in raw, f"the API key (or a piece of it) is in {p}"
    # the trial records are stored zlib-compressed: look inside them too
    for p in files:
        if not p.name.endswith(".sqlite"):
            continue
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            for (blob,) in conn.execute("SELECT record FROM trials"):
                text = zlib.decompress(blob)
                assert all(n not in text for n in needles), f"the API key is in a trial record of {p}"
            for (value,) in conn.execute("SELECT value FROM meta"):
                assert all(n not in value.encode() for n in needles), f"the API key is in the meta of {p}"
        finally:
            conn.close()


def _earns(task, replay) -> tuple[bool, str | None]:
    """Whether the gold trajectory earns the task's basis (and the first component it misses)."""
    j = replay.judgement
    for c in (str(b) for b in task.reward_basis):
        if c == "DB" and not j.db_match:
            return False, c
        if c == "ENV_ASSERTION" and j.env_reward != 1.0:
            return False, c
        if c == "COMMUNICATE" and any("," in s for s in task.evaluation_criteria.communicate_info or []):
            return False, c  # tau2 strips commas from the message only: such a string is never found
    return True, None


@pytest.fixture(scope="module")
def expectations(tau2_root):
    """(domain, task id) -> expected reward, from the gold replay, with the listed exceptions checked."""
    out = {}
    for d in DOMAINS:
        spec, ddir = get_domain(d), domain_dir(tau2_root, d)
        for task in load_tasks(tau2_root, d):
            replay = replay_gold(spec, ddir, task)
            earns, missed = _earns(task, replay)
            key = (d, task.id)
            if not earns:
                assert key in GOLD_CANNOT_EARN, f"{key}: the gold misses {missed}; list it in GOLD_CANNOT_EARN with why"
                assert GOLD_CANNOT_EARN[key][0] == missed
            elif not replay.ok:
                assert key in GOLD_ERRORS_OK, f"{key}: its gold replay is not clean; list it with the reason"
                failed = {a.name for a in replay.actions if a.error}
                assert failed == {GOLD_ERRORS_OK[key][1]}, (key, failed)
            out[key] = (1.0 if earns else 0.0, missed)
    return out


def check_run(run_dir: Path, expectations: dict, keys: set[tuple]) -> list:
    """Every planned trial stored valid exactly once, with the expected reward; returns the rows."""
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows()
        records = {(r.key.domain, r.key.task_id): r for r in store.records(valid=True)}
    valid = [r for r in rows if r.valid]
    assert len(valid) == len({r.key for r in valid}), "a trial is stored valid twice"
    assert {r.key for r in valid} == keys
    wrong = []
    for r in valid:
        want, missed = expectations[(r.domain, r.task_id)]
        if r.reward != want:
            info = records[(r.domain, r.task_id)].verdict.reward_info
            wrong.append((r.domain, r.task_id, r.reward, r.termination, info and info.components))
        elif missed is not None:
            comps = records[(r.domain, r.task_id)].verdict.reward_info.components
            assert comps[missed] == 0.0, (r.key, comps)
        assert r.termination in ("user_stop", "agent_transfer"), (r.key, r.termination)
    assert not wrong, f"{len(wrong)} trial(s) off the gold's reward: {wrong[:5]}"
    return rows


# ------------------------------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def gold_server(tau2_root):
    server = GoldServer(tau2_root)
    yield server
    server.stop()


@pytest.mark.slow
def test_every_task_earns_what_its_gold_earns(tau2_root, gold_server, expectations, tmp_path):
    toml = write_experiment(tmp_path / "gold.toml", gold_server.base_url, tau2_root)
    out = agentrig_run(toml)
    assert out["status"] == "done"
    keys = planned_keys(tau2_root, DOMAINS, 1)
    run_dir = Path(out["run_dir"])
    rows = check_run(run_dir, expectations, keys)
    assert not any(not r.valid for r in rows)
    by_domain = {d: sum(1 for r in rows if r.domain == d and r.reward == 1.0) for d in DOMAINS}
    assert by_domain["telecom"] == len(load_tasks(tau2_root, "telecom"))  # user-side tool calls included
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
        rec = next(r for r in store.records() if r.key.domain == "telecom")
    assert {c["role"] for c in calls} == {"agent", "user", "judge"}
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in calls)
    assert any(m.role == "user" and m.tool_calls for m in rec.trajectory.messages)  # the user acted
    assert_no_key(run_dir)


@pytest.mark.slow
def test_under_20_percent_faults_every_trial_valid_and_correct(tau2_root, expectations, tmp_path):
    server = GoldServer(tau2_root, "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                        "--seed", "20")
    try:
        toml = write_experiment(tmp_path / "faults.toml", server.base_url, tau2_root, concurrency=16, name="faults")
        out = agentrig_run(toml)
    finally:
        server.stop()
    assert out["status"] == "done"
    run_dir = Path(out["run_dir"])
    rows = check_run(run_dir, expectations, planned_keys(tau2_root, DOMAINS, 1))
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
    retries = sum(r.retries for r in rows)
    assert retries > 0 and out["arms"][ARM]["retries"] > 0
    causes = {c for row in calls for c in (row["retry_causes"] or "").split(",") if c}
    assert {"rate_limited", "server_error", "malformed"} <= causes, causes
    # about a fifth of the attempts failed: retries ~ 0.25 per successful call
    assert 0.1 < retries / len(calls) < 0.5, (retries, len(calls))
    assert_no_key(run_dir)


def test_sigkill_mid_run_then_rerun_completes_without_loss_or_duplicates(tau2_root, expectations, tmp_path):
    domains, trials = ("airline", "mock"), 2
    server = GoldServer(tau2_root, "--delay-ms", "15")
    try:
        toml = write_experiment(tmp_path / "kill.toml", server.base_url, tau2_root, domains=domains, trials=trials,
                                concurrency=8, name="kill")
        keys = planned_keys(tau2_root, domains, trials)
        db = tmp_path / "runs" / "kill" / "trials.sqlite"
        proc = subprocess.Popen([*_agentrig(), "run", str(toml), "--json"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=_env())
        deadline = time.monotonic() + 120
        while valid_count(db) < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        with Store.open(db, create=False) as store:
            before = {r.key: r.started_at for r in store.verdict_rows(valid=True)}
        assert 12 <= len(before) < len(keys), len(before)

        out = agentrig_run(toml)
    finally:
        server.stop()
    assert out["status"] == "done"
    assert out["played"] == len(keys) - len(before)
    rows = check_run(db.parent, expectations, keys)  # each planned trial valid exactly once, correct
    after = {r.key: r.started_at for r in rows if r.valid}
    assert all(after[k] == v for k, v in before.items())  # finished trials kept, not replayed
    assert_no_key(db.parent)


@pytest.mark.parametrize("where", ["file", "record", "meta"])
def test_the_key_scan_finds_a_planted_key(tmp_path, where):
    """assert_no_key must see a key in a plain file, inside a compressed record and in the meta."""
    db = tmp_path / "trials.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE trials (record BLOB)")
    conn.execute("CREATE TABLE meta (value TEXT)")
    conn.execute("INSERT INTO trials VALUES (?)", (zlib.compress(
        (f'{{"auth": "{KEY}"}}' if where == "record" else "{}").encode()),))
    conn.execute("INSERT INTO meta VALUES (?)", (f"key={KEY}" if where == "meta" else "{}",))
    conn.commit()
    conn.close()
    if where == "file":
        (tmp_path / "config.json").write_text(json.dumps({"note": KEY[8:24]}))
    else:  # the meta text is stored plainly: only the record case hides the key from a byte scan
        assert where != "record" or KEY.encode() not in db.read_bytes()
    with pytest.raises(AssertionError, match="API key"):
        assert_no_key(tmp_path)
