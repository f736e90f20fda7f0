"""An agent we did not write never gets the real key, and reaches only its trial's proxy (issue 32).

The agent here is a probe run as `agent = { kind = "command" }` in a real bwrap sandbox (podman:
slow-marked) through `agentrig run`: it gathers everything it can see — its environment, every
process's environment and command line in its `/proc`, the text files of its home, `/root`,
`/tmp`, `/app` and `/etc` — tries to connect to the real endpoint's port, to its proxy, and to the
internet, and sends it all, compressed, to the only model it can reach: its proxy, which forwards
it to the endpoint and records the request in the trial. The test reads the stored request back and
checks that the key (a distinctive value) is in none of it while the probe did see what it should
(its proxy token and address: the probe works); the run directory holds no key either.
"""

from __future__ import annotations

import base64
import json
import subprocess
import zlib
from pathlib import Path

import pytest

from .run_support import experiment, records
from .sandbox_support import needs_root_bwrap
from .test_bash_runs import KEY, KEY_ENV, SolutionServer, _agentrig, assert_no_key

pytestmark = needs_root_bwrap()

PROBE = r'''
import base64, glob, json, os, socket, sys, urllib.request, zlib

def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False

seen = {"env": dict(os.environ), "proc": {}, "files": {}}
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        seen["proc"][path] = open(path, "rb").read().decode("utf-8", "replace")
    except OSError as exc:
        seen["proc"][path] = f"unreadable: {exc}"
for top in ("/run/agentrig/home", "/root", "/tmp", "/app", "/etc"):
    for folder, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if os.path.isfile(path) and os.path.getsize(path) < 262144:
                    seen["files"][path] = open(path, "rb").read().decode("utf-8", "replace")
            except OSError:
                pass
base = os.environ["OPENAI_BASE_URL"]
seen["proxy_reachable"] = reach("127.0.0.1", int(base.rsplit(":", 1)[1].split("/")[0]))
seen["endpoint_reachable"] = reach("127.0.0.1", int(sys.argv[1]))
seen["internet"] = reach("1.1.1.1", 53)
packed = base64.b64encode(zlib.compress(json.dumps(seen).encode())).decode()
body = json.dumps({"model": os.environ["AGENTRIG_MODEL"], "messages": [{"role": "user", "content": "PROBE " + packed}]}).encode()
req = urllib.request.Request(base + "/chat/completions", data=body, headers={
    "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]["message"]["content"])
'''


def _probe_run(tmp_path: Path, sandbox: str) -> tuple[Path, dict]:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    (probe_dir / "probe.py").write_text(PROBE)
    server = SolutionServer()
    try:
        port = server.base_url.rsplit(":", 1)[1].split("/")[0]
        channel = f'[channel]\nbase_url = "{server.base_url}"\napi_key_env = "{KEY_ENV}"\nmodel = "solution"\ntimeout_s = 30\n'
        arms = (f'[[arms]]\nname = "probe"\nagent = {{ kind = "command", run = "python3 {{tool}}/probe.py {port}", '
                f'mount = "{probe_dir}" }}\n')
        toml = experiment(tmp_path, f"probe-{sandbox}", channel + arms, cache=tmp_path / "cache",
                          sandbox=f'kind = "{sandbox}"\nnetwork = false', benchmark='task_ids = ["merge-json-config"]')
        done = _agentrig("run", toml, "--json")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    (record,) = records(run_dir, valid=True)
    (sent,) = [m["content"] for r in record.trajectory.agent_requests for m in r.tail
               if str(m.get("content", "")).startswith("PROBE ")]
    seen = json.loads(zlib.decompress(base64.b64decode(sent[len("PROBE "):])))
    return run_dir, seen


def _check(run_dir: Path, seen: dict) -> None:
    env = seen["env"]
    assert env["OPENAI_API_KEY"].startswith("agentrig-") and env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"]
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert len(seen["proc"]) >= 2 and any("probe.py" in text for text in seen["proc"].values())  # it could look
    assert any(path.startswith("/etc/") for path in seen["files"])
    pieces = [KEY, KEY[9:25]]
    blob = json.dumps(seen)
    assert not any(p in blob for p in pieces), "the real key reached the sandbox"
    assert KEY_ENV not in json.dumps(env)  # not even the variable's name
    assert seen["proxy_reachable"] is True
    assert seen["endpoint_reachable"] is False, "the sandbox reached the real endpoint, not only its proxy"
    assert seen["internet"] is False
    assert_no_key(run_dir)


def test_a_command_agent_sees_no_key_and_reaches_only_its_proxy_on_bwrap(tmp_path):
    _check(*_probe_run(tmp_path, "bwrap"))


@pytest.mark.slow
def test_a_command_agent_sees_no_key_and_reaches_only_its_proxy_on_podman(tmp_path):
    if subprocess.run(["podman", "info"], capture_output=True).returncode != 0:
        pytest.skip("podman does not answer here")
    _check(*_probe_run(tmp_path, "podman"))
