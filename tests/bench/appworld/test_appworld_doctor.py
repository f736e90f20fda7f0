"""`agentrig doctor --config` on an AppWorld experiment whose arm plays a Python agent (the example
in examples/python_agents/): the agent really starts on the first task (its world opened in a
worker) against a stub, its first request is sent to the endpoint as it is, and a vLLM
``--max-model-len`` too small for it fails naming the arm and the flag; a big window passes. The
real console script, the real AppWorld worker, real HTTP to the FakeEndpoint."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.personalities import make_personality

from tests.channel.conftest import KEY, KEY_ENV
from tests.channel.test_cli_doctor import agentrig

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python_agents"


def doctor(tmp_path: Path, root: Path, python: Path, window: int):
    with ThreadedFakeEndpoint(api_key=KEY, personality=make_personality("vllm", window=window)) as srv:
        path = tmp_path / "aw.toml"
        path.write_text(textwrap.dedent(f"""\
            name = "aw-doctor"
            [benchmark]
            kind = "appworld"
            data = "{root}"
            dataset = "dev"
            python = "{python}"
            workers = 1
            [channel]
            base_url = "{srv.base_url}"
            api_key_env = "{KEY_ENV}"
            model = "fake-model"
            timeout_s = 20
            [[arms]]
            name = "mine"
            agent = {{ kind = "python", entry = "appworld_agent:make", path = ["{EXAMPLES}"] }}
            """), encoding="utf-8")
        p = agentrig("doctor", "--config", str(path), "--json", env_extra={KEY_ENV: KEY, "COLUMNS": "200"}, timeout=600)
    assert "Traceback" not in p.stderr, p.stderr
    assert KEY not in p.stdout + p.stderr
    checks = {c["name"]: c for c in json.loads(p.stdout)["endpoints"][0]["checks"] if c["name"] in ("agent", "window")}
    return p, checks


def test_a_small_vllm_window_fails_for_the_python_agent_and_a_big_one_passes(tmp_path, synthetic_root, appworld_python):
    p, checks = doctor(tmp_path, synthetic_root, appworld_python, 256)
    assert p.returncode == 1, p.stdout
    c = checks["agent"]
    assert (c["status"], c["code"]) == ("fail", "CONTEXT_TOO_SMALL"), c
    assert "arm mine, task " in c["message"] and "Python agent appworld_agent:make" in c["message"]
    assert "--max-model-len" in c["fix"]
    p, checks = doctor(tmp_path, synthetic_root, appworld_python, 65536)
    assert p.returncode == 0, p.stdout
    assert checks["agent"]["status"] == "pass" and checks["window"]["status"] == "pass", checks
