"""The warm verifier (sandbox/warm.py + pytest_server.py) next to the cold command, in real bwrap sandboxes.

A task's test prints what its process sees (namespaces, capabilities, cgroups, environment,
interpreter flags, mounts); the same trial state is verified warm and cold and the two must
agree. The agent's attempts to change the warm verifier's pytest (a planted ``pytest.py``,
``conftest.py``, ``sitecustomize``, a site-packages in its layer at the verifier Python's paths)
have no effect; doubts (a deleted bash, a missing working directory under the template's
``$PWD`` check) fall back to the cold command. The plans (which tasks qualify) are checked
without a sandbox.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sysconfig
import time
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.staging import stage_tests, verifier_python
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task
from agentrig.bench.terminal.verifier import verify

from .sandbox_support import needs_root_bwrap

BUILTIN = builtin_tasks_dir()
SETUP = ("#!/bin/bash\napt-get update\napt-get install -y curl\ncurl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\n"
         "source $HOME/.local/bin/env\n\nif [ \"$PWD\" = \"/\" ]; then\n    echo \"Error: no WORKDIR.\"\n    exit 1\nfi\n\n"
         "uv init\nuv add pytest==8.4.1\n")
SPLIT_RUN = "#!/bin/bash\n\nsource $TEST_DIR/setup-uv-pytest.sh\n\nbash $TEST_DIR/run-uv-pytest.sh\n"

FACTS_TEST = r'''
import json, locale, os, random, socket, sys

def test_facts():
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    mounts = [l.split()[4] + " " + l.split()[5].split(",")[0] for l in open("/proc/self/mountinfo")]
    facts = {
        "init": open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode(),
        "ppid": os.getppid(), "uid": os.getuid(), "hostname": socket.gethostname(), "cwd": os.getcwd(),
        "caps": {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")},
        "cgroup": sorted(l.split(":", 1)[1] for l in open("/proc/self/cgroup").read().split()),
        "env": dict(os.environ), "path": sys.path, "executable": sys.executable,
        "flags": [sys.flags.no_user_site, sys.flags.safe_path, sys.flags.ignore_environment, sys.flags.isolated,
                  sys.flags.utf8_mode, locale.setlocale(locale.LC_CTYPE)],
        "mounts": sorted(m for m in mounts if m.split()[0] in ("/tests", sys.prefix, sys.base_prefix)),
        "tests_writable": os.access("/tests", os.W_OK), "random": random.random(),
    }
    print("FACTS " + json.dumps(facts))
'''


def _task(root: Path, name: str, test_py: str, run_tests: str | None = None, scripts: dict[str, str] | None = None,
          dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\n"):
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "task.yaml").write_text("instruction: nothing to do\n")
    (d / "Dockerfile").write_text(dockerfile)
    (d / "tests" / "test_outputs.py").write_text(test_py)
    for file, text in (scripts or {}).items():
        (d / "tests" / file).write_text(text)
    if run_tests is not None:
        (d / "run-tests.sh").write_text(run_tests)
    return load_task(d)


async def _verify(task, cache: Path, *, warm: bool, agent_cmds: list[str] = ()):
    box = await open_sandbox(task, SandboxSettings(cache_dir=cache, warm_verifier=warm))
    try:
        for cmd in agent_cmds:
            await box.run(cmd, timeout_s=30)
        return await verify(box, task, network=False)
    finally:
        await box.close()


def _facts(output: str) -> dict:
    line = next(ln for ln in output.splitlines() if ln.startswith("FACTS "))
    facts = json.loads(line[len("FACTS "):])
    facts["cgroup"] = [re.sub(r"/c\d+$", "/c#", c) for c in facts["cgroup"]]  # each command its own pids cgroup
    facts["cgroup"] = [re.sub(r"/agentrig/[^/]+-\d+(?=/|$)", "/agentrig/TRIAL", c) for c in facts["cgroup"]]  # each trial its own
    return facts


# ---- which plans are plain pytest runs (no sandbox) ------------------------------------------


def _plan(task, tmp_path: Path):
    python, _ = verifier_python()
    return stage_tests(task, tmp_path / "staged", python, network=False)


def test_plain_pytest_plans(tmp_path):
    plain = _plan(load_task(BUILTIN / "write-marker"), tmp_path)
    assert plain.env == {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    assert plain.pytest_args[-2:] == ["/tests/test_outputs.py", "-rA"] and not plain.strict_cwd and plain.shlvl == 0
    template = _plan(load_task(BUILTIN / "csv-region-totals"), tmp_path)  # one run-tests.sh, the $PWD check
    assert template.pytest_args[-2:] == ["/tests/test_outputs.py", "-rA"] and template.strict_cwd and template.shlvl == 1
    split = _plan(load_task(BUILTIN / "word-frequency"), tmp_path)  # sources a setup, runs a second script
    assert split.pytest_args[-2:] == ["/tests/test_outputs.py", "-rA"] and split.strict_cwd and split.shlvl == 2
    harbor = _plan(load_task(BUILTIN / "harbor-dedupe-emails"), tmp_path)
    assert harbor.pytest_args is None and harbor.env == {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.mark.parametrize("script", [
    "#!/bin/bash\necho preparing\nuv run pytest $TEST_DIR/test_outputs.py -rA\n",  # another command
    "#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -rA -k 'a or b'\n",  # quoting
    "#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -rA\necho done\n",  # a command after it
    "#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -rA > /logs/out.txt\n",  # a redirection
    "#!/bin/bash\nexport FOO=1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n",
])
def test_scripts_that_do_more_than_pytest_stay_cold(tmp_path, script):
    plan = _plan(_task(tmp_path, "more", "def test_a():\n    pass\n", run_tests=script), tmp_path)
    assert plan.offline and plan.pytest_args is None


def test_a_provided_pytest_plugin_keeps_autoload(tmp_path):
    script = "#!/bin/bash\nuv add pytest==8.4.1 pytest-asyncio\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"
    plan = _plan(_task(tmp_path, "plugin", "def test_a():\n    pass\n", run_tests=script), tmp_path)
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in plan.env and plan.pytest_args is None
    assert any("autoload stays on" in n and "pytest-asyncio" in n for n in plan.notes)


# ---- warm and cold in real sandboxes ---------------------------------------------------------


@needs_root_bwrap()
@pytest.mark.parametrize("layout,base", [("plain", "ubuntu:24.04"), ("split-template", "ubuntu:24.04"),
                                         ("plain", "ghcr.io/laude-institute/t-bench/python-3-13:20250620")])
async def test_warm_and_cold_tests_see_the_same_process_state(tmp_path, layout, base):
    """On a built root: Ubuntu's image and the python images (whose PYTHON_VERSION the interpreter
    never reads); the image's own bash is the one the warm verifier checks for."""
    kw = {} if layout == "plain" else {"run_tests": SPLIT_RUN, "scripts": {
        "setup-uv-pytest.sh": SETUP, "run-uv-pytest.sh": "#!/bin/bash\n\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"}}
    task = _task(tmp_path, "facts", FACTS_TEST, dockerfile=f"FROM {base}\nWORKDIR /app\nENV TZ=UTC APP_MODE=probe\n", **kw)
    cache = tmp_path / "cache"
    warm = [await _verify(task, cache, warm=True) for _ in range(2)]
    cold = await _verify(task, cache, warm=False)
    assert all(r.warm and r.resolved for r in warm) and not cold.warm and cold.resolved, cold.output[-2000:]
    w, w2, c = _facts(warm[0].output), _facts(warm[1].output), _facts(cold.output)
    assert w["random"] != w2["random"]  # reseeded in every fork
    for facts in (w, c):
        facts.pop("random")
    # the one known difference: under run-tests.sh the cold pytest's parent is the script's bash
    cold_parent = c.pop("ppid")
    assert w.pop("ppid") == 0 and (cold_parent == 0 if layout == "plain" else cold_parent > 1)
    assert w == c
    assert c["init"] == "/bin/sh" and c["hostname"] == "sandbox" and c["cwd"] == "/app"
    assert c["caps"]["CapEff"] == c["caps"]["CapBnd"] != "000001ffffffffff" and c["caps"]["NoNewPrivs"] == "1"
    assert c["env"]["APP_MODE"] == "probe" and c["env"]["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert c["env"]["SHLVL"] == ("0" if layout == "plain" else "2")
    assert c["tests_writable"] and c["flags"][:4] == [1, True, 0, 0]
    assert c["flags"][4:] == [0, "C.UTF-8"] and c["env"]["LANG"] == "C.UTF-8"  # UTF-8 mode off: LANG is set
    for result in (*warm, cold):
        assert "PytestDeprecationWarning" not in result.output and "asyncio" not in result.output


@needs_root_bwrap()
async def test_the_agent_cannot_alter_the_warm_verifiers_pytest(tmp_path):
    """Planted pytest modules, conftest files, an ini, sitecustomize and .pth files at the verifier
    Python's own paths in the agent's layer: the warm verifier runs the real tests, which fail."""
    task = load_task(BUILTIN / "write-marker")
    venv_site, stdlib = sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]
    hook = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
            "    o = yield\n    o.get_result().outcome = 'passed'\n")
    fake = "print('HIJACKED')\nraise SystemExit(0)\n"
    plant = {"/app/pytest.py": fake, "/app/conftest.py": hook, "/conftest.py": hook, "/pytest.ini": "[pytest]\naddopts = -p conftest\n",
             f"{venv_site}/sitecustomize.py": fake, f"{venv_site}/zz_hijack.pth": "import os; print('HIJACKED')\n",
             f"{venv_site}/pytest/__init__.py": fake, f"{venv_site}/_pytest/main.py": fake,
             f"{stdlib}/sitecustomize.py": fake, "/tests/conftest.py": hook}
    cmds = [f"mkdir -p {Path(p).parent} && echo {base64.b64encode(text.encode()).decode()} | base64 -d > {p}"
            for p, text in plant.items()]
    cmds.append("cat " + " ".join(plant))  # they are there, in the agent's layer
    box = await open_sandbox(task, SandboxSettings(cache_dir=tmp_path / "cache"))
    try:
        for cmd in cmds:
            res = await box.run(cmd, timeout_s=30)
            assert res.exit_code == 0, (cmd, res.output)
        assert "HIJACKED" in res.output
        result = await verify(box, task, network=False)
    finally:
        await box.close()
    assert result.warm and not result.resolved and result.failure_mode == "wrong_output", result.output[-2000:]
    assert [t.name for t in result.tests] == ["test_marker_file"] and "HIJACKED" not in result.output


@needs_root_bwrap()
async def test_doubts_fall_back_to_the_cold_command(tmp_path):
    cache = tmp_path / "cache"
    no_bash = await _verify(load_task(BUILTIN / "write-marker"), cache, warm=True,
                            agent_cmds=["rm -f /usr/bin/bash /bin/bash"])
    assert not no_bash.warm and no_bash.failure_mode == "broke_environment" and no_bash.exit_code == 127
    scripts = {"setup-uv-pytest.sh": SETUP, "run-uv-pytest.sh": "#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"}
    task = _task(tmp_path, "workdir", "def test_a():\n    pass\n", run_tests=SPLIT_RUN, scripts=scripts,
                 dockerfile="FROM ubuntu:24.04\nWORKDIR /app/work\n")
    kept = await _verify(task, cache, warm=True)
    assert kept.warm and kept.resolved, kept.output[-2000:]
    no_workdir = await _verify(task, cache, warm=True, agent_cmds=["rm -rf /app/work"])
    assert not no_workdir.warm and not no_workdir.resolved and "Error: no WORKDIR." in no_workdir.output
    solved = await _verify(load_task(BUILTIN / "write-marker"), cache, warm=True,
                           agent_cmds=["echo agentrig-ok > /app/marker.txt"])
    assert solved.warm and solved.resolved


@needs_root_bwrap()
async def test_a_warm_run_is_killed_at_the_test_timeout(tmp_path):
    task = _task(tmp_path, "slow", "import subprocess, time\n\ndef test_slow():\n"
                 "    subprocess.Popen(['sleep', '300'])\n    time.sleep(60)\n")
    (task.path / "task.yaml").write_text("instruction: x\nmax_test_timeout_sec: 2\n")
    task = load_task(task.path)
    box = await open_sandbox(task, SandboxSettings(cache_dir=tmp_path / "cache"))
    try:
        result = await verify(box, task, network=False)
        left = await box.run("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^sleep 300 $' || true",
                             timeout_s=30)  # the image has no ps
    finally:
        await box.close()
    assert result.warm and result.timed_out and result.failure_mode == "test_timeout"
    assert left.output.strip() == "0"


def test_the_server_holds_no_key_of_the_runner(monkeypatch):
    from agentrig.bench.terminal.sandbox import warm

    monkeypatch.setenv("AGENTRIG_TEST_API_KEY", "sk-warm-verifier-secret-1234")
    warm._stop()  # a server started earlier in this process would not show it either way
    warm.prestart()
    server = warm._SERVER
    assert server is not None and server.alive()
    environ = b""
    for _ in range(200):  # Popen returns as the exec closes our pipe, a moment before the new environment is set up
        environ = Path(f"/proc/{server.proc.pid}/environ").read_bytes()
        if environ:
            break
        time.sleep(0.01)
    assert b"sk-warm-verifier-secret" not in environ and b"AGENTRIG_TEST_API_KEY" not in environ
    assert environ.split(b"\0")[:3] and os.fsencode("PYTEST_DISABLE_PLUGIN_AUTOLOAD=1") in environ.split(b"\0")
