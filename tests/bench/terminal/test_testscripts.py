"""The offline rewriting of Terminal-Bench / Harbor test scripts (tool-chain bootstrap -> agentrig's pytest).

The rewritten scripts are also executed for real with bash, in a scratch directory, to show that
they run without the network and report what pytest reports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentrig.bench.terminal.tasks.testscripts import rewrite_script

PYT, PYM, PY = "PYTEST_CMD", "PYTEST_M_CMD", "PYTHON_CMD"

TEMPLATE_OLD = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh
source $HOME/.local/bin/env
if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi
uv venv .tbench-testing
source .tbench-testing/bin/activate
uv pip install pytest==8.4.1
uv run pytest $TEST_DIR/test_outputs.py -rA
"""

HARBOR_UVX = """#!/bin/bash
set -e
apt-get update > /dev/null 2>&1
apt-get install -y --no-install-recommends curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source "$HOME/.local/bin/env"
set +e
uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
status=$?
if [ $status -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def _commands(text: str) -> list[str]:
    return [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith(("#", ":"))]


def test_template_bootstrap_dropped_and_pytest_redirected():
    r = rewrite_script(TEMPLATE_OLD, PYT, PYM, PY)
    assert r.changed and r.needs_network is None
    cmds = _commands(r.text)
    assert f"{PYT} $TEST_DIR/test_outputs.py -rA" in cmds
    assert not any(w in c for c in cmds for w in ("apt-get", "curl", "uv ", "activate"))
    assert 'if [ "$PWD" = "/" ]; then' in cmds  # the script's own logic stays


def test_harbor_uvx_pattern_keeps_reward_logic():
    r = rewrite_script(HARBOR_UVX, PYT, PYM, PY)
    assert r.needs_network is None
    cmds = _commands(r.text)
    assert f"{PYT} /tests/test_outputs.py -rA" in cmds  # the ctrf report flag is dropped
    assert any("--ctrf" in n for n in r.notes)
    assert any("reward.txt" in c for c in cmds)


def test_python_module_form_and_uv_run_python():
    r = rewrite_script("python3 -m pytest -q /tests\nuv run python /tests/check.py\n", PYT, PYM, PY)
    assert _commands(r.text) == [f"{PYM} -q /tests", f"{PY} -s /tests/check.py"]


def test_extra_packages_need_the_network_unless_provided():
    r = rewrite_script("uv add pytest==8.4.1 definitely-not-installed-pkg==1.0\nuv run pytest t.py\n", PYT, PYM, PY)
    assert r.needs_network and "definitely-not-installed-pkg" in r.needs_network
    ok = rewrite_script("uv add pytest==8.4.1 numpy\nuv run pytest t.py\n", PYT, PYM, PY)  # agentrig has numpy
    assert ok.needs_network is None and any("numpy" in n for n in ok.notes)


def test_editable_and_requirements_installs_are_a_verdict_not_a_crash():
    """SWE-bench-style scripts (`pip install -e .`, `-r requirements.txt`) crashed the reader with
    "A distribution name is required"; now they are a needs_network verdict naming what is installed."""
    cases = {"pip install -e .": "editable project .", "pip install --editable=/app": "editable project /app",
             "python -m pip install -e. --no-deps": "editable project .",
             "uv pip install -r requirements.txt": "requirements file requirements.txt",
             "pip3 install -rreq-dev.txt": "requirements file req-dev.txt",
             "pip install --requirement /tests/reqs.txt": "requirements file /tests/reqs.txt"}
    for line, named in cases.items():
        r = rewrite_script(f"#!/bin/bash\ncd /app\n{line}\npytest /tests/t.py\n", PYT, PYM, PY)
        assert r.needs_network and named in r.needs_network, (line, r.needs_network)


def test_other_network_use_is_reported():
    for line in ("curl -fsSL https://example.org/data.json -o /tmp/d.json",
                 "apt-get install -y jq", "git clone https://example.org/r.git", "uv sync", "pip install requests-xyz-none"):
        r = rewrite_script(f"#!/bin/bash\n{line}\npytest /tests/t.py\n", PYT, PYM, PY)
        assert r.needs_network, line


def test_mentions_are_not_network_use():
    text = ('#!/bin/bash\necho "if this fails, curl the logs"\n'
            'if ! command -v uv &> /dev/null; then\n  echo "uv missing"\nfi\n'
            "cat <<'EOF' > /tmp/note\npip install nothing here\nEOF\n")
    assert rewrite_script(text, PYT, PYM, PY).needs_network is None


def test_custom_script_without_pytest_is_left_alone():
    text = "#!/bin/bash\npython3 /tests/check.py && echo 1 > /logs/verifier/reward.txt\n"
    r = rewrite_script(text, PYT, PYM, PY)
    assert not r.changed and r.needs_network is None and r.text == text


def test_rewritten_template_really_runs_offline(tmp_path):
    """Run the rewritten Harbor script with bash: no network tool runs, pytest reports, reward written."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_outputs.py").write_text("def test_ok():\n    assert True\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    script = HARBOR_UVX.replace("/tests/", f"{tests}/").replace("/logs/verifier/", f"{logs}/")
    py = sys.executable
    r = rewrite_script(script, f"{py} -s -P -m pytest -p no:cacheprovider", f"{py} -s -m pytest", py)
    (tmp_path / "run.sh").write_text(r.text)
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}  # no curl, no apt, no uv reachable
    proc = subprocess.run(["/bin/bash", str(tmp_path / "run.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "PASSED" in proc.stdout and "short test summary info" in proc.stdout, proc.stdout + proc.stderr
    assert (logs / "reward.txt").read_text().strip() == "1"
    (tests / "test_outputs.py").write_text("def test_bad():\n    assert False\n")
    subprocess.run(["/bin/bash", str(tmp_path / "run.sh")], cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert (logs / "reward.txt").read_text().strip() == "0"
    assert os.environ.get("PATH")  # the test itself left the real environment alone


def test_with_the_network_missing_packages_are_fetched_and_the_tool_chain_stays_ours():
    # a sandbox with the network: the uv bootstrap still becomes agentrig's Python (astral.sh may be
    # out of reach where only package registries are), packages agentrig lacks are fetched once into
    # a directory the verifier binds and puts on PYTHONPATH, and an apt-get install of a test tool runs
    text = ("#!/bin/bash\napt-get update\napt-get install -y curl expect\n"
            "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\nuv init\n"
            "uv add pytest==8.4.1 numpy toolz==1.0.0\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    offline = rewrite_script(text, PYT, PYM, PY)
    assert offline.needs_network and "expect" in offline.needs_network
    r = rewrite_script(text, PYT, PYM, PY, fetch=True)
    assert r.needs_network is None
    lines = r.text.splitlines()
    assert "apt-get update" in lines and "apt-get install -y curl expect" in lines  # kept: expect is a test tool
    assert any(ln.startswith(": # agentrig offline verifier: curl -LsSf https://astral.sh") for ln in lines)
    [(target, reqs)] = r.fetch.items()
    assert reqs == ["toolz==1.0.0"]  # numpy and pytest: agentrig has them
    fetch = next(ln for ln in lines if "PYTHONPATH" in ln)
    assert fetch.startswith(f"export PYTHONPATH={target}${{PYTHONPATH:+:$PYTHONPATH}}  # agentrig: uv add")
    assert lines[-1].startswith(PYT)
    editable = rewrite_script("#!/bin/bash\npip install -e .\npytest /tests/t.py\n", PYT, PYM, PY, fetch=True)
    assert editable.needs_network and "editable project ." in editable.needs_network  # then: the script as written


def test_uv_add_in_a_packaged_project_makes_the_project_importable(tmp_path):
    # TB's cross-entropy-method: /app holds a pyproject.toml with a [build-system]; the template's
    # `uv add pytest` installs that project into uv's environment, so the tests import it. The
    # rewritten script, run for real by bash from such a directory, gives the tests the project
    # (flat or src layout); from a directory without one, or without the flag, it adds nothing
    from agentrig.bench.terminal.tasks.staging import packaged_project

    script = "#!/bin/bash\nuv init\nuv add pytest==8.4.1\necho \"path=$PYTHONPATH\"\n"
    r = rewrite_script(script, PYT, PYM, PY, packaged_project=True)
    assert r.needs_network is None and any("packaged project" in n for n in r.notes)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[build-system]\nrequires = ['setuptools']\n\n[project]\nname = 'p'\n")
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "pyproject.toml").write_text("[project]\nname = 'app'\n")  # what `uv init` writes: not installed
    env = {"PATH": os.environ["PATH"]}
    ran = subprocess.run(["bash", "-c", r.text], cwd=tmp_path / "proj", capture_output=True, text=True, env=env)
    assert f"path={tmp_path / 'proj'}/src:{tmp_path / 'proj'}\n" in ran.stdout
    ran = subprocess.run(["bash", "-c", r.text], cwd=tmp_path / "bare", capture_output=True, text=True, env=env)
    assert "path=\n" in ran.stdout
    assert "export PYTHONPATH" not in rewrite_script(script, PYT, PYM, PY).text

    class Task:
        path = tmp_path / "proj"
        build_context = None

    assert packaged_project(Task())
    Task.path = tmp_path / "bare"
    assert not packaged_project(Task())
