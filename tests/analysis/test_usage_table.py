"""``agentrig usage RUN --by model,hour``: a real run through the gold-scripting endpoint (with
rate limits, so some calls take several requests), reconciled against the endpoint's own request log
— as a user reconciles agentrig with a gateway's console."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY = "sk-usage-test-00112233445566778899"
KEY_ENV = "AGENTRIG_USAGE_TEST_KEY"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))

EXPERIMENT = """\
name = "usage"
[benchmark]
domains = ["bikeshop"]
num_tasks = 3
[run]
trials = 2
seed = 5
concurrency = 4
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"
backoff_base_s = 0.01
backoff_max_s = 0.05
[prices."gold"]
input = 1.5
output = 6.0
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
"""


def agentrig(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *args], env={**os.environ, KEY_ENV: KEY, "COLUMNS": "160"},
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """(run directory, the endpoint's chat requests by X-Agentrig-Role, UTC hours the run spanned)."""
    where = tmp_path_factory.mktemp("usage")
    endpoint = GoldEndpoint(None, api_key=KEY, record=True, fault_rate=0.15, fault_kinds=("rate_limit",), seed=3)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = where / "usage.toml"
        exp.write_text(EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        t0 = time.time()
        done = agentrig("run", str(exp), "--json", "--dir", str(where / "run"))
        t1 = time.time()
        assert done.returncode == 0, done.stderr
        chats = [r for r in endpoint.requests if r.path.endswith("/chat/completions") and r.headers.get("x-agentrig-run")]
    hours = {datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:00") for t in (t0, t1)}
    return where / "run", Counter(r.headers.get("x-agentrig-role") for r in chats), hours


def test_requests_per_role_match_the_endpoints_log(played):
    run, logged, hours = played
    p = agentrig("usage", str(run), "--by", "role,model,hour", "--json")
    assert p.returncode == 0, p.stderr
    table = json.loads(p.stdout)
    per_role = Counter()
    for row in table["rows"]:
        per_role[row["key"]["role"]] += row["requests"]
        assert row["key"]["model"] == "gold" and row["key"]["hour"] in hours
    assert set(logged) == {"agent", "user"} and sum(logged.values()) > 20
    assert per_role == logged  # every HTTP request the endpoint saw, retries included
    total = table["total"]
    assert total["requests"] > total["calls"]  # the rate limits were retried: more requests than calls
    assert total["estimated_time"] == 0  # every call carries its send time
    expected = (total["prompt_tokens"] * 1.5 + total["completion_tokens"] * 6.0) / 1e6
    assert total["cost_usd"] == pytest.approx(expected) and total["prompt_tokens"] > 0


def test_csv_rows_add_up_to_the_total(played):
    run, logged, _ = played
    p = agentrig("usage", str(run), "--csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert list(rows[0])[:2] == ["model", "hour"]
    assert sum(int(r["requests"]) for r in rows) == sum(logged.values())
    table = json.loads(agentrig("usage", str(run), "--json").stdout)
    assert sum(int(r["prompt_tokens"]) for r in rows) == table["total"]["prompt_tokens"]


def test_people_get_a_table_and_a_role_filter(played):
    run, logged, _ = played
    p = agentrig("usage", str(run), "--by", "model", "--role", "user")
    assert p.returncode == 0 and "usage by model" in p.stdout and "total" in p.stdout
    j = json.loads(agentrig("usage", str(run), "--by", "model", "--role", "user", "--json").stdout)
    assert j["total"]["requests"] == logged["user"]


@pytest.mark.parametrize(("args", "needle"), [(["--by", "model,minute"], "--by 'model,minute'"), ([], "not a run directory")])
def test_bad_input_is_one_clear_error(tmp_path, played, args, needle):
    run = played[0] if args else tmp_path
    p = agentrig("usage", str(run), *args)
    assert p.returncode == 1 and needle in p.stderr and "Traceback" not in p.stderr
