"""A refused connection is named "connection refused" at run time, as the doctor names it — not
``ConnectTimeout`` (the label the SDK's aiohttp transport wraps it in). Real closed ports, real
HTTP, the real CLI."""

from __future__ import annotations

import json
import re
import socket
import textwrap

import pytest
from typer.testing import CliRunner

from agentrig.channel import Channel
from agentrig.channel.faults import connection_detail
from agentrig.cli import app
from agentrig.errors import RetriesExhausted
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import Fault

from .conftest import KEY_ENV, make_config

MSG = [{"role": "user", "content": "hello"}]
DOUBLED = re.compile(r"(?<![-\w])(at|the|a|to|of|in)\s+\1\b", re.I)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_refused_connection_is_named_so_in_every_attempt(env):
    port = _closed_port()
    async with Channel(make_config(f"http://127.0.0.1:{port}/v1", max_attempts=2), env=env) as ch:
        with pytest.raises(RetriesExhausted) as caught:
            await ch.complete("agent", MSG)
    err = caught.value
    assert err.code == "UNREACHABLE"
    for a in err.attempts:
        assert a.cause == "connection"
        assert a.detail == f"connection refused at 127.0.0.1:{port}: nothing listens there"
    assert "ConnectTimeout" not in str(err) and "connection refused at 127.0.0.1" in str(err)
    assert err.elapsed_s > 0 and err.elapsed_s >= sum(a.latency_s + a.wait_s for a in err.attempts)  # consistency: not a time bound


async def test_a_dropped_connection_is_named_so(fake, env):
    fake.push(Fault("disconnect"))
    async with Channel(make_config(fake.base_url, timeout_s=5), env=env) as ch:
        c = await ch.complete("agent", MSG)
    first = c.attempts[0]
    assert first.cause == "connection" and "closed the connection without answering" in first.detail
    assert "Timeout" not in first.detail


def test_connection_detail_names_the_root_cause_through_wrappers():
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed")
        except OSError as inner:
            raise TimeoutError("ConnectTimeout: Cannot connect to host") from inner
    except TimeoutError as outer:
        wrapped = outer
    assert connection_detail(wrapped, "http://10.0.0.5:8080/v1") == \
        "connection refused at 10.0.0.5:8080: nothing listens there"
    try:
        raise socket.gaierror(-2, "Name or service not known")
    except socket.gaierror as exc:
        assert connection_detail(exc, "https://no-such-host.example/v1").startswith(
            "the host name no-such-host.example could not be resolved")


def test_the_run_and_the_doctor_say_the_same_about_a_refused_connection(tmp_path):
    port = _closed_port()
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(f"""
        name = "refused"
        [benchmark]
        domains = ["bikeshop"]
        task_ids = ["rent_city_bike"]
        [run]
        trials = 1
        max_invalid_retries = 0
        [user]
        kind = "scripted"
        [judge]
        nl_assertions = "never"
        [channel]
        base_url = "http://127.0.0.1:{port}/v1"
        api_key_env = "{KEY_ENV}"
        max_attempts = 2
        backoff_base_s = 0.001
        [roles.agent]
        model = "fake-model"
        [[arms]]
        name = "llm"
        """), encoding="utf-8")
    runner = CliRunner(env={KEY_ENV: "local", "COLUMNS": "250"})
    run = runner.invoke(app, ["run", str(path)])
    assert run.exit_code == 3, run.output  # the arm has no valid trial (docs/experiments.md, Exit codes)
    said = " ".join(run.stdout.split())
    assert f"connection refused at 127.0.0.1:{port}: nothing listens there" in said
    assert "ConnectTimeout" not in run.output and not DOUBLED.search(said)
    with Store.open(tmp_path / "runs" / "refused" / "trials.sqlite", create=False) as store:
        (rec,) = list(store.records())
    (call,) = rec.trajectory.model_calls
    assert not rec.verdict.valid and call.error == "UNREACHABLE"
    assert {a.detail for a in call.attempts} == {f"connection refused at 127.0.0.1:{port}: nothing listens there"}
    assert call.retries == 1 and call.latency_s > 0  # recorded, not zero: not a time bound
    doctor = runner.invoke(app, ["doctor", "--config", str(path), "--json"])
    assert doctor.exit_code == 1, doctor.output
    text = json.dumps(json.loads(doctor.stdout))
    assert "connection refused" in text and "ConnectTimeout" not in text and not DOUBLED.search(text)


async def test_the_doctor_names_a_dropped_models_connection_too(fake):
    from agentrig.channel.doctor.diagnose import diagnose
    from agentrig.config import ChannelConfig, ChannelSettings

    from .conftest import KEY

    # the aiohttp transport sends an idempotent GET again once after a disconnect: two drops
    fake.push(Fault("disconnect", on="models"), Fault("disconnect", on="models"))
    rr = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model",
                                               timeout_s=5)).resolve("agent", env={})
    report = await diagnose(rr, ["agent"], {KEY_ENV: KEY})
    models = next(c for c in report.checks if c.name == "models")
    assert models.status == "fail" and models.code == "UNREACHABLE", models
    assert "closed the connection without answering" in models.message and "no answer within" not in models.message
