"""The package registries this machine reaches, in test scripts: reading a script as the shell
splits it (``shellread.py``), naming what each fetch reaches (``fetches.py``), and npm through the
host's settings as pip (``sandbox/hostsettings.py``).

The lines read are the exact lines of Terminal-Bench's aider-polyglot adapter scripts that the
reader once took wrong (shell syntax as a package name, a tolerated fetch as a need, npm's
registry as any host); the task folders are made here, one per rule.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from agentrig.bench.terminal.core.fetches import fetch_of
from agentrig.bench.terminal.core.hostsettings import container_settings, host_settings_binds
from agentrig.bench.terminal.core.shellread import units
from agentrig.bench.terminal.tasks.testscripts import rewrite_script

from .podman_support import base_image  # noqa: F401 - a fixture: TB's python-3-13 imported into podman
from .run_support import agentrig, write_task
from .sandbox_support import needs_root_bwrap

PYT, PYM, PY = "PYTEST_CMD", "PYTEST_M_CMD", "PYTHON_CMD"
PIP_CHAIN = "pip3 install --no-cache-dir pytest 2>/dev/null || pip install --no-cache-dir pytest"
CARGO_TOLERATED = "cargo add regex 2>/dev/null || true"
NPM = "npm install"


def _script(*lines: str) -> str:
    return "#!/bin/bash\nset -Eeuo pipefail\ncd /app\n" + "\n".join(lines) + "\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n"


# ---- reading: the exact lines ------------------------------------------------------------------


def test_a_pip_line_with_a_fallback_is_two_installs_of_pytest_not_a_package_named_or():
    for online in (False, True):
        r = rewrite_script(_script(PIP_CHAIN), PYT, PYM, PY, fetch=online)
        assert r.needs_network is None, r.needs_network
        assert r.bootstrap == [PIP_CHAIN] and not r.fetch  # agentrig's pytest: nothing to fetch
        assert f": # agentrig offline verifier: {PIP_CHAIN}" in r.text
    # a package agentrig lacks, in the same shape: fetched once with the network (the package, not `||`)
    missing = PIP_CHAIN.replace("pytest", "definitely-not-installed-pkg")
    online = rewrite_script(_script(missing), PYT, PYM, PY, fetch=True)
    assert list(online.fetch.values()) == [["definitely-not-installed-pkg"]] and online.needs_network is None
    offline = rewrite_script(_script(missing), PYT, PYM, PY)
    assert "'definitely-not-installed-pkg'" in offline.needs_network and "'||'" not in offline.needs_network


def test_npm_install_is_npms_registry_reached_with_the_network():
    offline = rewrite_script(_script(NPM), PYT, PYM, PY)
    assert offline.needs_network.startswith("needs the network: npm install fetches from npm's registry "
                                            "(registry.npmjs.org), which a sandbox with the network reaches here")
    online = rewrite_script(_script(NPM), PYT, PYM, PY, fetch=True)
    assert online.needs_network is None
    assert any("with the network, fetching from npm's registry" in n for n in online.notes), online.notes
    for words in (["npm", "ci"], ["npm", "install", "-g", "jest@29"], ["sudo", "npm", "i", "left-pad"]):
        assert fetch_of(words).registry == "npm's registry", words
    assert fetch_of(["npx", "jest"]).maybe and fetch_of(["npm", "test"]) is None


def test_a_fetch_the_script_tolerates_excludes_nothing():
    for line in (CARGO_TOLERATED, "if npm install; then echo ok; fi", "curl -fsS https://crates.io/x -o /tmp/x || echo skipped",
                 "! git clone https://github.com/a/b.git"):
        r = rewrite_script(_script(line), PYT, PYM, PY)
        assert r.needs_network is None, (line, r.needs_network)
        assert any("which the script tolerates" in n for n in r.notes), (line, r.notes)
    # what only fetches what is missing (`cargo test`, `go test`) is played, never guessed
    assert rewrite_script(_script("cargo test --verbose", "go mod tidy"), PYT, PYM, PY).needs_network is None
    # the fallback of a tolerated fetch is itself required
    chain = rewrite_script(_script("npm ci 2>/dev/null || npm install"), PYT, PYM, PY)
    assert chain.needs_network and "npm install fetches from npm's registry" in chain.needs_network


def test_a_host_beyond_the_registries_is_named():
    cases = {"curl -fsSL https://deb.nodesource.com/setup_20.x | bash -": "deb.nodesource.com",
             "x=$(curl -s https://golang.org/VERSION?m=text) && echo $x": "golang.org",
             'bash -c "git clone https://github.com/a/b.git /tmp/b"': "github.com",
             "cargo add regex": "crates.io"}
    for line, host in cases.items():
        r = rewrite_script(_script(line), PYT, PYM, PY)
        assert r.needs_network and f"{host}, a host beyond the package registries" in r.needs_network, (line, r.needs_network)


def test_words_are_split_as_the_shell_splits_them():
    assert [(u.text, u.tolerated) for u in units(PIP_CHAIN)] == [
        ("pip3 install --no-cache-dir pytest", True), ("pip install --no-cache-dir pytest", False)]
    assert [u.text for u in units('echo "npm install" >&2; cat <<EOF > /tmp/x')] == ["echo npm install", "cat"]
    nested = [u for u in units("v=$(curl -s https://golang.org/x | head -1) || true") if u.nested]
    assert nested and nested[0].commands[0][:3] == ["curl", "-s", "https://golang.org/x"] and nested[0].tolerated
    for quiet in ('echo "curl https://example.org"', "curl -s http://localhost:8000/health", "curl 127.0.0.1:5000",
                  "command -v npm >/dev/null 2>&1", "# npm install"):
        assert rewrite_script(_script(quiet), PYT, PYM, PY).needs_network is None, quiet


def test_npms_own_words_for_a_registry_it_could_not_reach_are_read():
    from agentrig.bench.terminal.core.netfail import network_failure, registry_outage

    for reason in ("getaddrinfo EAI_AGAIN registry.npmjs.org", "self-signed certificate in certificate chain"):
        out = ("npm error code X\nnpm error request to https://registry.npmjs.org/is-odd failed, "
               f"reason: {reason}\nnpm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n")
        why = network_failure(out, "npm install")
        assert why and why.startswith("could not reach registry.npmjs.org: npm error request to"), why
        assert registry_outage(why) == "registry.npmjs.org"  # this machine's plumbing, never the task's need


def test_the_npm_registry_the_hosts_npmrc_names_is_a_registry_this_machine_reaches(tmp_path, monkeypatch):
    from agentrig.bench.terminal.core.netfail import registry_outage

    rc = tmp_path / "user.npmrc"
    rc.write_text("registry=https://npm.mirror.example/\n@corp:registry=https://npm.corp.example/npm/\n")
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(rc))
    for host in ("npm.mirror.example", "npm.corp.example"):
        assert registry_outage(f"could not reach {host}: npm error request to https://{host}/x failed") == host
    assert registry_outage("could not reach github.com: fatal: unable to access") is None


# ---- npm through the host's settings -----------------------------------------------------------


def test_npm_gets_the_hosts_npmrc_and_ca_bound_never_its_values_in_a_containers_environment(tmp_path, monkeypatch):
    rc = tmp_path / "user.npmrc"
    rc.write_text("fetch-retries=4\n")
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(rc))
    monkeypatch.setenv("npm_config_fetch_retry_mintimeout", "12345")
    binds, env = host_settings_binds("/m")
    assert binds[str(rc)] == "/m/npmrc" and env["NPM_CONFIG_USERCONFIG"] == "/m/npmrc"
    if "SSL_CERT_FILE" in env:  # a CA bundle on this host: npm's cafile and node's extra CAs are it
        assert env["NPM_CONFIG_CAFILE"] == env["NODE_EXTRA_CA_CERTS"] == "/m/ca.crt"
    out = container_settings(tmp_path / "into", "/dev/m")
    assert "12345" not in json.dumps(out) and out["NPM_CONFIG_USERCONFIG"] == "/dev/m/npmrc"
    written = (tmp_path / "into" / "npmrc").read_text()
    assert "fetch-retries=4" in written and "fetch-retry-mintimeout=12345" in written
    assert all(v.startswith("/dev/m/") or not k.lower().startswith("npm_config") for k, v in out.items())


# ---- task folders: what `tasks list` says, and trials played for real ---------------------------


def test_a_trial_under_auto_gets_the_ca_bundle_alone_never_a_config_that_may_hold_a_token(tmp_path, monkeypatch):
    from agentrig.bench.terminal.core.base import SandboxSettings

    pip_conf, rc = tmp_path / "pip.conf", tmp_path / "host.npmrc"
    pip_conf.write_text("[global]\nindex-url = https://user:secret@index.example/simple\n")
    rc.write_text("//registry.example/:_authToken=secret\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(pip_conf))
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(rc))
    monkeypatch.setenv("PIP_INDEX_URL", "https://user:secret@index.example/simple")
    binds, env = host_settings_binds("/m", ca_only=True)
    assert sorted(binds.values()) == ["/m/ca.crt"] and "secret" not in json.dumps(env)
    assert env["SSL_CERT_FILE"] == env["NODE_EXTRA_CA_CERTS"] == "/m/ca.crt"
    full, _ = host_settings_binds("/m")
    assert "/m/pip.conf" in full.values()  # the build's (explicit "host-settings" trials' too)
    written = tmp_path / "container"
    out = container_settings(written, "/m", ca_only=True)
    assert sorted(p.name for p in written.iterdir()) == ["ca.crt"] and "secret" not in json.dumps(out)
    assert SandboxSettings(build_network="auto").trial_host_settings() == "ca"  # this host has settings
    assert SandboxSettings(build_network="host-settings").trial_host_settings() == "all"
    assert SandboxSettings(build_network=True).trial_host_settings() is None


def _task(tasks: Path, task_id: str, script: str, **kw) -> Path:
    return write_task(tasks, task_id, files={"run-tests.sh": script}, **kw)


def test_tasks_list_names_the_host_beyond_the_registries_and_lets_tolerated_fetches_run(tmp_path):
    tasks = tmp_path / "tasks"
    _task(tasks, "beyond", _script("curl -fsSL https://crates.io/api/v1/crates/regex -o /tmp/regex.json"))
    _task(tasks, "tolerated", _script(CARGO_TOLERATED))
    _task(tasks, "pip-chain", _script(PIP_CHAIN))
    _task(tasks, "npm", _script(NPM))
    proc = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks, "--json")
    assert proc.returncode == 0, proc.stderr
    bwrap = {t["id"]: t["sandboxes"]["bwrap"] for t in json.loads(proc.stdout)["tasks"]}
    assert bwrap["tolerated"]["ok"] and bwrap["pip-chain"]["ok"], bwrap
    assert bwrap["beyond"]["reason"].startswith("needs_network: run-tests.sh: needs the network: curl fetches from "
                                                "crates.io, a host beyond the package registries")
    assert "npm's registry (registry.npmjs.org)" in bwrap["npm"]["reason"]


def test_pip_fallback_chains_and_tolerated_fetches_play(tmp_path):
    # played offline as `agentrig run` plays a TB1 task (--network task): the pip line is agentrig's
    # pytest, the fetch fails and is let fail
    tasks = tmp_path / "tasks"
    _task(tasks, "pip-chain", _script(PIP_CHAIN))
    _task(tasks, "tolerated", _script("curl -fsS https://crates.io/api/v1/crates/regex -o /tmp/regex.json 2>/dev/null || true",
                                      CARGO_TOLERATED))
    proc = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache", "--json",
                    "--network", "task")
    assert proc.returncode == 0, proc.stderr
    rows = {t["task_id"]: t for t in json.loads(proc.stdout)["tasks"]}
    assert {k: v["status"] for k, v in rows.items()} == {"pip-chain": "ok", "tolerated": "ok"}, rows


NPM_TESTS = """#!/bin/bash
cd /app
npm install --no-audit --no-fund --no-save is-odd@3.0.1 2>&1 | tail -5
npm config get fetch-retries
echo "=========================== short test summary info ============================"
if node "$TEST_DIR/check.js"; then echo "PASSED check.js::test_same_as_is_odd"; else echo "FAILED check.js::test_same_as_is_odd"; fi
"""
NPM_CHECK = """const isOdd = require('/app/node_modules/is-odd');
const mine = require('/app/odd.js');
for (const n of [1, 2, 3, 10, 11]) {
  if (mine(n) !== isOdd(n)) { console.error('differs at', n); process.exit(1); }
}
"""


@needs_root_bwrap()
@pytest.mark.slow
async def test_an_npm_install_in_the_tests_plays_through_the_hosts_npm_settings(tmp_path, monkeypatch):
    """A task whose tests `npm install` a small real package from npm's registry: with the network
    and the host's settings the oracle gets 1 and doing nothing 0; npm in the trial read the host's
    npmrc (bound read-only); without the network the task is excluded naming npm's registry."""
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.availability import task_support
    from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
    from agentrig.bench.terminal.tasks.taskfile import load_task

    rc = tmp_path / "host.npmrc"
    rc.write_text("fetch-retries=4\n")
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(rc))
    task_dir = write_task(tmp_path / "tasks", f"npm-{uuid.uuid4().hex[:6]}",
                          dockerfile="FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends "
                                     "nodejs npm\nWORKDIR /app\n",
                          solution="#!/bin/bash\necho 'module.exports = (n) => n % 2 === 1;' > /app/odd.js\n",
                          files={"run-tests.sh": NPM_TESTS},
                          test_timeout=600)  # an npm install from the registry: minutes on a loaded machine
    (task_dir / "tests" / "check.js").write_text(NPM_CHECK)
    task = load_task(task_dir)
    settings = SandboxSettings(cache_dir=tmp_path / "cache", root="image", network=True, build_network="host-settings")
    row = await audit_task(task, settings)
    assert row.status == "ok", row.reason  # oracle 1, no-op 0: the package came from the registry
    sandbox = await open_sandbox(task, settings)
    try:
        seen = await sandbox.run("npm config get fetch-retries; ls /.agentrig-host-settings", 120)
    finally:
        await sandbox.close()
    assert seen.output.split()[0] == "4", seen.output  # the host's npmrc, not npm's default (2)
    assert "npmrc" in seen.output
    # under "auto" (the default) a trial gets the CA bundle alone: the npmrc may hold a token
    sandbox = await open_sandbox(task, settings.model_copy(update={"build_network": "auto"}))
    try:
        seen = await sandbox.run("npm config get fetch-retries; ls /.agentrig-host-settings; npm view is-odd@3.0.1 version", 120)
    finally:
        await sandbox.close()
    assert seen.output.split()[:3] == ["2", "ca.crt", "3.0.1"], seen.output  # npm's default; the registry reached
    offline = task_support(task, "bwrap", network=False)
    assert not offline.ok and "npm's registry (registry.npmjs.org)" in offline.reason


async def test_the_hosts_npm_settings_reach_a_podman_build_as_files_and_stay_out_of_the_image(tmp_path, monkeypatch,
                                                                                               base_image):  # noqa: F811
    """A podman build with build_network = "host-settings": the host's npmrc, with its
    ``npm_config_*`` values written in, is a file of the build's settings mount — npm's
    ``NPM_CONFIG_USERCONFIG`` names it — and nothing of it is in the image's ENV, history or files."""
    import os
    import subprocess

    from agentrig.bench.terminal.sandbox import open_sandbox
    from agentrig.bench.terminal.sandbox.container_images import remove_task_images
    from agentrig.bench.terminal.sandbox.engine import engine_cli

    from .podman_support import owned_images, podman
    from .sandbox_support import make_task, settings

    base = base_image
    rc = tmp_path / "host.npmrc"
    rc.write_text("fetch-retries=4\n")
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(rc))
    monkeypatch.setenv("npm_config_fetch_retry_maxtimeout", "98765")  # a distinctive host npm_config_* value
    # the values are computed in the step, so that its own text (in the image's history) does not hold them
    task = make_task(tmp_path, f"FROM {base}\nRUN grep -q \"^fetch-retries=$((2 + 2))$\" \"$NPM_CONFIG_USERCONFIG\" && "
                               "grep -q \"^fetch-retry-maxtimeout=$((98000 + 765))$\" \"$NPM_CONFIG_USERCONFIG\" && "
                               "touch /saw-host-npm-settings\n", task_id="npm-probe")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman", build_network="host-settings"))
    try:
        result = await sandbox.run("ls /saw-host-npm-settings; env | grep -i ^npm_config || echo no-npm-env", 60)
        assert result.exit_code == 0 and "no-npm-env" in result.output, result.output
        tag = next(t for t in owned_images(os.getpid()) if "npm-probe" in t)
        inspect = podman("image", "inspect", "--format", "{{.Config.Env}}", tag).stdout
        assert "NPM_CONFIG" not in inspect.upper(), inspect
        history = podman("history", "--no-trunc", "--format", "{{.CreatedBy}}", tag).stdout
        assert "98765" not in history and "fetch-retries=4" not in history, history
        export = subprocess.run(f"{' '.join(engine_cli('podman'))} export {sandbox.name} | tar -t", shell=True,
                                capture_output=True, text=True)
        files = export.stdout.splitlines()
        assert export.returncode == 0 and "saw-host-npm-settings" in files
        assert not [f for f in files if f.endswith("npmrc") or "agentrig-host-settings" in f], files
    finally:
        await sandbox.close()
        remove_task_images()
