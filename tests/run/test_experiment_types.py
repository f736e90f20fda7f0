"""An experiment file's numbers and yes/no values have their TOML types: `trials = "4"` (a number
in quotes), `max_steps = 4.0` (a whole number as a float) or `send_seed = "true"` are refused
before anything is played, one line per field naming it — not converted silently. Paths stay
strings, as TOML writes them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentrig.errors import ConfigError
from agentrig.run import experiment

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
HEAD = """
[benchmark]
domains = ["bikeshop"]
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
"""
ARM = '\n[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n'


def _load(tmp_path: Path, text: str) -> str:
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        experiment.load(path)
    return str(info.value)


@pytest.mark.parametrize("table, line, where", [
    ("[run]", 'trials = "4"', "run.trials"),
    ("[run]", 'seed = "300"', "run.seed"),
    ("[run]", 'concurrency = "8"', "run.concurrency"),
    ("[run]", "max_steps = 4.0", "run.max_steps"),
    ("[run]", 'trial_timeout_s = "100"', "run.trial_timeout_s"),
    ("[run]", 'max_cost = "5"', "run.max_cost"),
    ("[run]", 'max_tokens = "1000"', "run.max_tokens"),
    ("[run]", 'send_seed = "true"', "run.send_seed"),
    ("[analysis]", 'instability_threshold = "0.2"', "analysis.instability_threshold"),
    ("[channel]", 'timeout_s = "30"', "channel.timeout_s"),
    ("[roles.agent]", 'temperature = "0.5"', "roles.agent.temperature"),
])
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(tmp_path, table, line, where):
    extra = f"\n{table}\n{line}\n"
    head = HEAD.replace("[user]", extra + "[user]") if table == "[run]" else HEAD + extra
    msg = _load(tmp_path, head + ARM)
    assert str(tmp_path / "exp.toml") in msg and f"{where}: expected" in msg, msg
    assert len([ln for ln in msg.splitlines() if ln.startswith("  - ")]) == 1, msg


def test_the_benchmark_and_arm_fields_too(tmp_path):
    msg = _load(tmp_path, HEAD.replace('domains = ["bikeshop"]', 'domains = ["bikeshop"]\nnum_tasks = "3"')
                + '\n[[arms]]\nname = "f"\nagent = { kind = "flaky-gold", drop_p = "0.3" }\n')
    assert 'benchmark.num_tasks: expected a whole number, got "3" (a string); write it without quotes: num_tasks = 3' in msg
    assert "arms[0] (arm 'f').agent.drop_p: expected a number" in msg


def test_the_cli_refuses_with_exit_1(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(HEAD.replace("[user]", '[run]\ntrials = "4"\n[user]') + ARM, encoding="utf-8")
    p = subprocess.run([AGENTRIG, "run", str(path), "--dir", str(tmp_path / "run")], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert 'run.trials: expected a whole number, got "4" (a string); write it without quotes: trials = 4' in p.stderr
    assert not (tmp_path / "run").exists()  # nothing played


def test_well_typed_values_still_load(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(HEAD.replace("[user]", "[run]\ntrials = 2\ntrial_timeout_s = 100\nmax_cost = 5\n[user]")
                    + "\n[channel]\ntimeout_s = 30\n" + ARM, encoding="utf-8")  # an integer where a float goes: fine
    r = experiment.load(path)
    assert r.exp.run.trials == 2 and r.exp.run.trial_timeout_s == 100.0
