"""`agentrig run`'s exit code tells a script the truth (docs/experiments.md, Exit codes): a run in which
an arm ended with no valid trial is not a success (3), while a run whose arms all have valid trials
exits 0 — even when some trials were replayed or failed on the agent's side."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from agentrig.commands.run import EXIT_NO_VALID_TRIAL

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
KEY_ENV = "AGENTRIG_EXIT_CODES_KEY"


def _free_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


EXP = """
name = "exits"
[benchmark]
domains = ["bikeshop"]
task_ids = ["rent_city_bike", "refuse_cancel_active_rental"]
[run]
trials = 1
max_invalid_retries = 1
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[channel]
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "{key_env}"
max_attempts = 1
backoff_base_s = 0.001
timeout_s = 2
[roles.agent]
model = "m"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
{llm_arm}
"""


def _run(tmp_path: Path, llm: bool) -> subprocess.CompletedProcess:
    exp = tmp_path / "exp.toml"
    exp.write_text(textwrap.dedent(EXP.format(port=_free_port(), key_env=KEY_ENV,
                                              llm_arm='[[arms]]\nname = "llm"' if llm else "")))
    return subprocess.run([AGENTRIG, "run", str(exp)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, KEY_ENV: "local"})


def test_an_arm_with_no_valid_trial_is_not_a_success(tmp_path):
    res = _run(tmp_path, llm=True)  # the llm arm's endpoint refuses every connection
    assert res.returncode == EXIT_NO_VALID_TRIAL == 3, res.stderr[-2000:]
    assert "arm(s) llm ended with no valid trial" in res.stderr and "Traceback" not in res.stderr
    assert "gold" not in res.stderr.split("ended with no valid trial")[0].split("error:")[-1]


def test_arms_that_all_have_valid_trials_exit_0(tmp_path):
    res = _run(tmp_path, llm=False)  # only the reference arm: every trial valid (no endpoint needed)
    assert res.returncode == 0, res.stderr[-2000:]


def test_a_fatal_channel_error_stops_the_run_with_exit_1(tmp_path):
    from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

    with ThreadedFakeEndpoint(api_key="local") as srv:  # serves fake-model, not the arm's "m1-typo"
        exp = tmp_path / "exp.toml"
        text = textwrap.dedent(EXP.format(port=0, key_env=KEY_ENV, llm_arm='[[arms]]\nname = "llm"'))
        text = text.replace("http://127.0.0.1:0/v1", srv.base_url).replace('model = "m"', 'model = "m1-typo"')
        exp.write_text(text)
        res = subprocess.run([AGENTRIG, "run", str(exp)], capture_output=True, text=True, timeout=300,
                             env={**os.environ, KEY_ENV: "local"})
    assert res.returncode == 1, res.stderr[-2000:]
    assert "MODEL_NOT_FOUND" in res.stderr and "fatal channel error" in res.stderr and "Traceback" not in res.stderr
