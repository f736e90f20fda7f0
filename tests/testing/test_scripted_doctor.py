"""Issue 23.8: `agentrig doctor` against the project's own scripted endpoints (gold, solution) passes,
as it does against any server that calls tools (it was a 400 "X-Agentrig-Role is 'doctor'")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
KEY_ENV, KEY = "AGENTRIG_SCRIPTED_DOCTOR_KEY", "sk-scripted-doctor-0123456789"


@pytest.mark.parametrize("make,model", [(lambda: GoldEndpoint(None, api_key=KEY), "gold"),
                                        (lambda: SolutionEndpoint(None, api_key=KEY), "solution")],
                         ids=["gold", "solution"])
def test_doctor_passes_against_a_scripted_endpoint(make, model):
    with ThreadedFakeEndpoint(make()) as srv:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
        env[KEY_ENV] = KEY
        p = subprocess.run([AGENTRIG, "doctor", "--base-url", srv.base_url, "--model", model, "--api-key-env", KEY_ENV],
                           capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "X-Agentrig-Role" not in p.stdout and "all endpoints ready" in p.stdout
    assert "NO_TOOL" not in p.stdout  # it calls the doctor's tools like a server with tool support
