"""The warm verifier on Harbor tasks: a ``test.sh`` that is one pytest run and the reward file written
from its status is played warm (``tasks/staging.RewardPlan``), with the same reward, exit status and
process state as the cold ``bash /tests/test.sh``; any other script stays cold.

The plans are checked without a sandbox; the rest in real bwrap sandboxes, every case verified
warm and cold on the same final state.
"""

from __future__ import annotations

import base64
import sysconfig
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.staging import stage_tests, verifier_python
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task
from agentrig.bench.terminal.verifier import verify

from .sandbox_support import needs_root_bwrap
from .test_warm_verifier import FACTS_TEST, _facts

BUILTIN = builtin_tasks_dir()
BOOT = ("apt-get update\napt-get install -y curl\ncurl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\n"
        "source $HOME/.local/bin/env\n")
UVX = "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA"
REWARD = "if [ $? -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
PWD_CHECK = 'if [ "$PWD" = "/" ]; then\n    echo "Error: No working directory set."\n    exit 1\nfi\n'
# the Terminal-Bench 2 template: bootstrap, the $PWD check, uvx pytest, the reward from $?
TEMPLATE = "#!/bin/bash\n" + BOOT + PWD_CHECK + UVX + "\n\n" + REWARD
STATUS = ("#!/bin/bash\nset -euo pipefail\n" + BOOT + "mkdir -p /logs/verifier\nset +e\n" + UVX + "\nrc=$?\nset -e\n"
          'if [ "$rc" -ne 0 ]; then\n  echo "0.0" > /logs/verifier/reward.txt\nelse\n  echo "1.0" > /logs/verifier/reward.txt\nfi\n'
          "exit $rc\n")
IF_FORM = ("#!/bin/bash\nif ! command -v uv &> /dev/null; then\n  " + BOOT.replace("\n", "\n  ") + "\nfi\n"
           "cd /tests || exit 1\nif uv run pytest test_outputs.py -rA; then\n  echo 1 > /logs/verifier/reward.txt\n"
           "else\n  echo 0 > /logs/verifier/reward.txt\nfi\nexit 0\n")
STOPS = "#!/bin/bash\nset -e\n" + BOOT + UVX + "\n" + REWARD  # set -e: a failed pytest ends it before the write
PASSING = "def test_a():\n    assert True\n"
FAILING = "def test_a():\n    assert False\n"


def _harbor(root: Path, name: str, test_sh: str, test_py: str = PASSING, workdir: str = "/app", files=None):
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "environment").mkdir()
    (d / "instruction.md").write_text("Nothing to do.\n")
    (d / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n'
                                 '[environment]\nallow_internet = false\n')
    (d / "environment" / "Dockerfile").write_text(f"FROM ubuntu:24.04\nWORKDIR {workdir}\nENV TZ=UTC\n")
    (d / "tests" / "test.sh").write_text(test_sh)
    (d / "tests" / "test_outputs.py").write_text(test_py)
    for file, text in (files or {}).items():
        (d / "tests" / file).write_text(text)
    return load_task(d)


def _plan(task, tmp_path: Path):
    python, _ = verifier_python()
    return stage_tests(task, tmp_path / "staged", python, network=False)


# ---- which test.sh scripts are played warm (no sandbox) ----------------------------------------


def test_the_builtin_harbor_template_is_planned_warm(tmp_path):
    plan = _plan(load_task(BUILTIN / "harbor-dedupe-emails"), tmp_path)
    reward = plan.reward
    assert plan.pytest_args is None and plan.env == {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"} and plan.shlvl == 1
    assert reward.pytest_args[-2:] == ["/tests/test_outputs.py", "-rA"] and "--ctrf" not in reward.pytest_args
    assert (reward.path, reward.passed, reward.failed) == ("/logs/verifier/reward.txt", "1\n", "0\n")
    assert reward.errexit and reward.exit == "last" and reward.programs == ["mkdir"] and reward.cd is None
    for other in ("harbor-backup-archive", "harbor-service-config"):  # no pytest / an image's own python3
        assert _plan(load_task(BUILTIN / other), tmp_path).reward is None


@pytest.mark.parametrize("script, expect", [
    (TEMPLATE, dict(strict=True, passed="1\n", failed="0\n", errexit=False, exit="last", cd=None, programs=["mkdir"])),
    (STATUS, dict(strict=False, passed="1.0\n", failed="0.0\n", errexit=True, exit="pytest", cd=None, programs=["mkdir"])),
    (IF_FORM, dict(strict=False, passed="1\n", failed="0\n", errexit=False, exit="zero", cd="/tests", programs=["mkdir"])),
    (STOPS, dict(strict=False, passed="1\n", failed=None, errexit=True, exit="last", cd=None, programs=["mkdir"])),
    ("#!/bin/bash\nrm -f /logs/verifier/reward.txt\n" + UVX + "\n" + REWARD,
     dict(strict=False, passed="1\n", failed="0\n", errexit=False, exit="last", cd=None, programs=["mkdir", "rm"])),
])
def test_template_variants_are_planned_warm(tmp_path, script, expect):
    plan = _plan(_harbor(tmp_path, "variant", script), tmp_path)
    r = plan.reward
    assert r is not None and plan.offline
    assert (plan.strict_cwd, r.passed, r.failed, r.errexit, r.exit, r.cd, r.programs) == tuple(expect.values())
    assert r.pytest_args[-2:] in (["/tests/test_outputs.py", "-rA"], ["test_outputs.py", "-rA"])


@pytest.mark.parametrize("script", [
    TEMPLATE.replace(UVX, "echo running\n" + UVX),  # output of its own
    TEMPLATE.replace(UVX, UVX + " || true"),  # the status is lost
    TEMPLATE.replace(UVX, UVX + "\nset +e"),  # $? is then set's, not pytest's
    TEMPLATE.replace("echo 1 >", "echo 1 >>"),  # appends
    TEMPLATE.replace("echo 0 > /logs/verifier/reward.txt", "echo 0 > /logs/verifier/reward.json"),
    TEMPLATE.replace("reward.txt", "score.txt"),
    TEMPLATE + "echo done\n",  # a command after the reward
    TEMPLATE + "exit 1\n",
    TEMPLATE.replace(UVX, UVX + "\n" + UVX),  # two pytest runs
    TEMPLATE.replace(UVX, "cd tests\n" + UVX),  # a relative cd
    TEMPLATE.replace(UVX, "python3 -m pytest /tests/test_outputs.py -rA"),  # puts the directory on sys.path
    TEMPLATE.replace(UVX, UVX + " -k 'a or b'"),  # quoting
    TEMPLATE.replace(UVX, "export FOO=1\n" + UVX),
    TEMPLATE.replace("#!/bin/bash\n", "#!/bin/bash\nset -x\n"),  # traces to the output
    TEMPLATE.replace("apt-get install -y curl", "apt-get install -y curl jq"),  # needs the network
])
def test_scripts_that_do_more_stay_cold(tmp_path, script):
    plan = _plan(_harbor(tmp_path, "more", script), tmp_path)
    assert plan.reward is None and plan.pytest_args is None


# ---- warm and cold in real sandboxes ---------------------------------------------------------


async def _verify(task, cache: Path, *, warm: bool, agent_cmds=()):
    box = await open_sandbox(task, SandboxSettings(cache_dir=cache, warm_verifier=warm))
    try:
        for cmd in agent_cmds:
            res = await box.run(cmd, timeout_s=30)
            assert res.exit_code == 0, (cmd, res.output)
        return await verify(box, task, network=False)
    finally:
        await box.close()


def _verdict(result) -> tuple:
    return result.resolved, result.reward, result.failure_mode, result.exit_code, result.detail, result.components


@needs_root_bwrap()
async def test_the_builtin_task_gives_the_same_reward_warm_and_cold(tmp_path):
    task = load_task(BUILTIN / "harbor-dedupe-emails")
    solve = (task.path / "solution" / "solve.sh").read_text()
    for cmds, resolved in (([], False), ([solve], True)):
        warm = await _verify(task, tmp_path / "cache", warm=True, agent_cmds=cmds)
        cold = await _verify(task, tmp_path / "cache", warm=False, agent_cmds=cmds)
        assert warm.warm and not cold.warm
        assert _verdict(warm) == _verdict(cold) and warm.resolved is resolved, (warm.output[-1500:], cold.output[-1500:])
        summary = [ln for ln in warm.output.splitlines() if ln.startswith(("PASSED", "FAILED"))]
        assert summary and summary == [ln for ln in cold.output.splitlines() if ln.startswith(("PASSED", "FAILED"))]


@needs_root_bwrap()
@pytest.mark.parametrize("script", ["template", "status", "if-form", "stops"])
async def test_variants_give_the_same_reward_and_status_warm_and_cold(tmp_path, script):
    text = {"template": TEMPLATE, "status": STATUS, "if-form": IF_FORM, "stops": STOPS}[script]
    for name, test_py in (("pass", PASSING), ("fail", FAILING)):
        task = _harbor(tmp_path, f"{script}-{name}", text, test_py)
        warm = await _verify(task, tmp_path / "cache", warm=True)
        cold = await _verify(task, tmp_path / "cache", warm=False)
        assert warm.warm and not cold.warm, warm.output[-1500:]
        assert _verdict(warm) == _verdict(cold), (warm.output[-1500:], cold.output[-1500:])
        assert warm.resolved is (name == "pass")
        if name == "fail":  # set -e ends `stops` before its write: no reward file, in both
            assert warm.failure_mode == ("parse_error" if script == "stops" else "wrong_output")
            assert warm.exit_code == (1 if script in ("status", "stops") else 0)


@needs_root_bwrap()
@pytest.mark.parametrize("script", ["template", "if-form"])
async def test_warm_and_cold_tests_see_the_same_process_state(tmp_path, script):
    task = _harbor(tmp_path, "facts", TEMPLATE if script == "template" else IF_FORM, FACTS_TEST)
    warm = await _verify(task, tmp_path / "cache", warm=True)
    cold = await _verify(task, tmp_path / "cache", warm=False)
    assert warm.warm and warm.resolved and not cold.warm and cold.resolved, (warm.output[-2000:], cold.output[-2000:])
    w, c = _facts(warm.output), _facts(cold.output)
    for facts in (w, c):
        facts.pop("random")
    assert w.pop("ppid") == 0 and c.pop("ppid") > 1  # the cold pytest's parent is test.sh's bash
    assert w == c
    assert c["cwd"] == ("/app" if script == "template" else "/tests") and c["env"]["SHLVL"] == "1"
    assert c["env"]["PWD"] == c["cwd"] and c["env"]["OLDPWD"] == "/app"
    assert c["caps"]["NoNewPrivs"] == "1" and c["tests_writable"] and c["flags"][:4] == [1, True, 0, 0]


HOOK = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    o = yield\n    o.get_result().outcome = 'passed'\n")
FAKE = "print('HIJACKED')\nraise SystemExit(0)\n"


@needs_root_bwrap()
async def test_planted_files_change_nothing(tmp_path):
    """Planted pytest modules, conftest files, an ini, sitecustomize and .pth files, a reward file
    of the agent's, and agent code the tests import that writes a reward of 1: the failing tests
    give reward 0, warm as cold."""
    venv_site, stdlib = sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]
    plant = {"/app/pytest.py": FAKE, "/app/conftest.py": HOOK, "/conftest.py": HOOK,
             "/pytest.ini": "[pytest]\naddopts = -p conftest\n",
             f"{venv_site}/sitecustomize.py": FAKE, f"{venv_site}/zz_hijack.pth": "import os; print('HIJACKED')\n",
             f"{venv_site}/pytest/__init__.py": FAKE, f"{stdlib}/sitecustomize.py": FAKE, "/tests/conftest.py": HOOK,
             "/logs/verifier/reward.txt": "1\n", "/app/solution.py": "open('/logs/verifier/reward.txt', 'w').write('1\\n')\n"}
    cmds = [f"mkdir -p {Path(p).parent} && echo {base64.b64encode(text.encode()).decode()} | base64 -d > {p}"
            for p, text in plant.items()]
    test_py = "import sys\nsys.path.insert(0, '/app')\nimport solution\n\ndef test_a():\n    assert False\n"
    task = _harbor(tmp_path, "plant", TEMPLATE, test_py)
    warm = await _verify(task, tmp_path / "cache", warm=True, agent_cmds=cmds)
    cold = await _verify(task, tmp_path / "cache", warm=False, agent_cmds=cmds)
    assert warm.warm and not cold.warm
    for result in (warm, cold):
        assert not result.resolved and result.reward == 0.0 and result.failure_mode == "wrong_output", result.output[-2000:]
        assert "HIJACKED" not in result.output and "FAILED" in result.output


@needs_root_bwrap()
async def test_doubts_fall_back_to_the_cold_command(tmp_path):
    cache = tmp_path / "cache"
    # a program the script runs is not the host's (deleted, or replaced in the agent's layer)
    task = _harbor(tmp_path, "mkdir", STATUS)
    gone = await _verify(task, cache, warm=True, agent_cmds=["rm -f /usr/bin/mkdir /bin/mkdir"])
    assert not gone.warm and not gone.resolved and "mkdir" in gone.output
    swapped = await _verify(task, cache, warm=True, agent_cmds=["printf '#!/bin/sh\\nexit 0\\n' > /usr/bin/mkdir"])
    assert not swapped.warm and swapped.resolved
    # the template's $PWD check would stop the script
    task = _harbor(tmp_path, "workdir", TEMPLATE, workdir="/app/work")
    kept = await _verify(task, cache, warm=True)
    assert kept.warm and kept.resolved, kept.output[-1500:]
    no_workdir = await _verify(task, cache, warm=True, agent_cmds=["rm -rf /app/work"])
    assert not no_workdir.warm and no_workdir.failure_mode == "parse_error" and "No working directory set" in no_workdir.output
    # a `cd` that fails
    task = _harbor(tmp_path, "cd", IF_FORM.replace("cd /tests", "cd /srv/missing"))
    missing = await _verify(task, cache, warm=True)
    assert not missing.warm and missing.failure_mode == "parse_error" and "missing" in missing.output
    # a script that does more than the template
    task = _harbor(tmp_path, "more", TEMPLATE.replace(UVX, "echo running tests\n" + UVX))
    more = await _verify(task, cache, warm=True)
    assert not more.warm and more.resolved and "running tests" in more.output


@needs_root_bwrap()
async def test_a_failed_reward_write_fails_alike(tmp_path):
    """The tests leave a directory where the reward file goes: bash's `>` fails, and so does the
    warm child's write: no reward, the same exit status (the `echo` is the script's last command)."""
    test_py = "import os\n\ndef test_a():\n    os.makedirs('/logs/verifier/reward.txt')\n"
    task = _harbor(tmp_path, "dir", TEMPLATE, test_py)
    warm = await _verify(task, tmp_path / "cache", warm=True)
    cold = await _verify(task, tmp_path / "cache", warm=False)
    assert warm.warm and not cold.warm
    assert _verdict(warm) == _verdict(cold) and warm.failure_mode == "parse_error" and warm.exit_code == 1
    assert "reward.txt: Is a directory" in warm.output and "reward.txt: Is a directory" in cold.output
