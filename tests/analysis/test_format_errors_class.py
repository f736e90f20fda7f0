"""Format errors are their own failure class, not "Ran out": a model that answers in prose (the
fake endpoint's "OK") never gives the text-mode τ² agent or the bash agent an action, the trial
ends by its format errors, and `analyze` (JSON and tables) and the report file it under "Format
errors". Real CLI, real HTTP endpoint, real store (the bash agent: real bwrap sandboxes)."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

KEY = "sk-format-errors-test-5f6e7d8c9b"
KEY_ENV = "AGENTRIG_FORMAT_ERRORS_KEY"


def _cli(*args: str):
    return CliRunner(env={KEY_ENV: KEY, "COLUMNS": "200"}).invoke(app, list(args))


def _channel(base_url: str) -> str:
    return f"""
    [channel]
    base_url = "{base_url}"
    api_key_env = "{KEY_ENV}"
    model = "fake-model"
    max_attempts = 2
    backoff_base_s = 0.001
    timeout_s = 20
    """


def _check_class(run_dir: Path, arms: list[str], termination: str, tmp_path: Path) -> None:
    res = _cli("analyze", str(run_dir), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    for arm in arms:
        a = doc["arms"][arm]
        assert a["overall"]["terminations"] == {termination: a["overall"]["valid"]}
        classes = {c["id"]: c for c in a["failures"]["classes"]}
        assert classes["format_errors"]["label"] == "Format errors"
        assert classes["format_errors"]["primary"] == a["failures"]["failed"] > 0
        assert classes.get("ran_out", {}).get("any", 0) == 0
        assert classes.get("limits_exceeded", {}).get("any", 0) == 0
    text = _cli("analyze", str(run_dir)).stdout
    for arm in arms:
        block = text.split(f"failure classes: {arm} ")[1]
        assert re.search(r"\n\s*Format errors\s+\d+\s+\d+", block), block[:400]
        assert not re.search(r"\n\s*Ran out\s", block.split("failure classes:")[0])
    res = _cli("report", str(run_dir), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 0, res.output
    assert "Format errors" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_tau2_text_agent_format_errors_are_their_own_class(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY) as server:
        text = f"""
        name = "prose"
        [benchmark]
        domains = ["bikeshop"]
        task_ids = ["rent_city_bike", "extend_city_rental"]
        [run]
        trials = 2
        [user]
        kind = "scripted"
        [judge]
        nl_assertions = "never"
        {_channel(server.base_url)}
        [[arms]]
        name = "text"
        agent = {{ kind = "llm", tool_mode = "text", max_format_errors = 2 }}
        """
        path = tmp_path / "exp.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        res = _cli("run", str(path), "--json")
    assert res.exit_code == 0, res.output
    _check_class(Path(json.loads(res.stdout)["run_dir"]), ["text"], "too_many_format_errors", tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root")
def test_bash_agent_format_errors_are_their_own_class(tmp_path):
    arms = "".join(f'\n[[arms]]\nname = "{m}"\nagent = {{ kind = "bash", tool_mode = "{m}" }}\n'
                   for m in ("native", "text"))
    with ThreadedFakeEndpoint(api_key=KEY) as server:
        text = textwrap.dedent(f"""
        name = "prose-bash"
        [benchmark]
        kind = "terminal"
        task_ids = ["write-marker"]
        [sandbox]
        cache_dir = "{tmp_path / 'cache'}"
        [run]
        trials = 1
        concurrency = 2
        dir = "{tmp_path / 'runs' / 'prose-bash'}"
        """) + textwrap.dedent(_channel(server.base_url)) + arms
        path = tmp_path / "bash.toml"
        path.write_text(text, encoding="utf-8")
        res = _cli("run", str(path), "--json")
    assert res.exit_code == 0, res.output
    _check_class(Path(json.loads(res.stdout)["run_dir"]), ["native", "text"], "format_errors", tmp_path)
