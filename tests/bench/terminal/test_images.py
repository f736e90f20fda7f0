"""Base roots built from packages (real mmdebstrap) and bwrap trials on them (real bwrap)."""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.bench.terminal.images import ensure_base_root, resolve_base
from agentrig.cli import app

from .sandbox_support import make_task, needs_root_bwrap, opened

TB_PYTHON = "ghcr.io/laude-institute/t-bench/python-3-13"


def test_recipes_for_the_bases_tasks_use_say_what_they_substitute():
    tb = resolve_base(TB_PYTHON)
    assert tb is not None and tb.workdir == "/app" and tb.python and {"tmux", "asciinema"} <= set(tb.packages)
    assert "3.13" in (tb.substituted or "")
    assert "WORKDIR /app" in tb.image_changes() and 'ENV LANG="C.UTF-8"' in tb.image_changes()
    ubuntu = resolve_base("ubuntu:24.04")
    assert ubuntu is not None and "Ubuntu" in (ubuntu.substituted or "")
    assert resolve_base("python:3.11-slim-bookworm").substituted is None
    assert resolve_base("python:3.11-slim").key() == resolve_base("python:3.11-slim-bookworm").key()
    assert resolve_base("debian:bookworm-slim").suite == "bookworm"
    assert resolve_base("alpine:3.19") is None and resolve_base("nvidia/cuda:12") is None


def test_images_build_rejects_an_unknown_base_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTRIG_IMAGES_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["images", "build", "alpine:3.19"])
    assert result.exit_code == 1 and "no recipe" in result.output and "Traceback" not in result.output
    listed = CliRunner().invoke(app, ["images", "list"])
    assert listed.exit_code == 0 and "no base images" in listed.output


def _need_mmdebstrap() -> None:
    if shutil.which("mmdebstrap") is None:
        if os.environ.get("CI") == "true" or os.environ.get("AGENTRIG_REQUIRE_MMDEBSTRAP") == "1":
            pytest.fail("mmdebstrap is missing: .ci/run / make system-deps install it")
        pytest.skip("mmdebstrap is not installed")


@pytest.fixture(scope="session")
def tb_root() -> Path:
    _need_mmdebstrap()
    return ensure_base_root(resolve_base(TB_PYTHON))  # cached across sessions in images_dir()


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trial_sees_the_built_root_not_the_hosts(tmp_path, tb_root):
    planted = Path("/etc") / f"agentrig-planted-{uuid.uuid4().hex[:8]}"
    planted.write_text("host secret\n")
    try:
        task = make_task(tmp_path, f"FROM {TB_PYTHON}\n")
        sandbox = await opened(task, tmp_path, root="image")
        try:
            seen = await sandbox.run(f"cat {planted}; ls /work 2>&1; python --version; pwd; which tmux asciinema", 60)
        finally:
            await sandbox.close()
    finally:
        planted.unlink()
    assert "host secret" not in seen.output
    assert "No such file" in seen.output  # neither the planted file nor the host's /work
    assert "Python 3." in seen.output and "/app\n" in seen.output and "/usr/bin/tmux" in seen.output


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_task_build_on_the_root_copies_into_app_pip_installs_and_ignores_the_hosts_dpkg_lock(tmp_path, tb_root):
    dockerfile = (f"FROM {TB_PYTHON}\nCOPY data.txt .\nRUN pip install --no-cache-dir six\n"
                  "RUN apt-get update && apt-get install -y --no-install-recommends jq\n")
    task = make_task(tmp_path, dockerfile, files={"data.txt": "payload\n"}, task_id=f"img-{uuid.uuid4().hex[:6]}")
    locks = []
    try:
        for name in ("/var/lib/dpkg/lock", "/var/lib/dpkg/lock-frontend"):
            fd = os.open(name, os.O_CREAT | os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locks.append(fd)
        sandbox = await opened(task, tmp_path, root="image", build_network="host-settings")
    finally:
        for fd in locks:
            os.close(fd)
    try:
        result = await sandbox.run("cat /app/data.txt; python -c 'import six; print(six.__name__)'; jq --version;"
                                   " ls /.agentrig-host-settings 2>&1", 60)
    finally:
        await sandbox.close()
    assert "payload" in result.output and "six" in result.output and "jq-" in result.output
    assert "No such file" in result.output  # the host's pip settings were not kept in the layer


def test_tasks_show_names_the_image_and_what_stands_in_for_it(tmp_path):
    from .run_support import agentrig, write_task

    write_task(tmp_path / "tasks", "tb-python", dockerfile=f"FROM {TB_PYTHON}\nCOPY x.txt .\n", files={"x.txt": "x"})
    proc = agentrig("tasks", "show", "--bench", "terminal", "--tasks", tmp_path / "tasks", "tb-python")
    assert proc.returncode == 0, proc.stderr
    assert f"image: {TB_PYTHON}" in proc.stdout and "Python 3.11" in proc.stdout and "3.13" in proc.stdout
    builtin = agentrig("tasks", "show", "--bench", "terminal", "shell-session-state")
    assert builtin.returncode == 0 and "Debian bookworm stands in for Ubuntu 24.04" in builtin.stdout


@needs_root_bwrap()
@pytest.mark.slow
async def test_the_verifier_judges_a_task_on_the_built_root(tmp_path, tb_root):
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.taskfile import load_task

    from .run_support import write_task

    task = load_task(write_task(tmp_path / "tasks", "on-image", dockerfile=f"FROM {TB_PYTHON}\n"))
    row = await audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", root="image"))
    assert row.status == "ok", row.reason  # the oracle passes, doing nothing fails: verifier and workdir work
    listed = CliRunner().invoke(app, ["images", "list"])
    assert listed.exit_code == 0 and resolve_base(TB_PYTHON).key() in listed.output


@pytest.mark.slow
def test_two_builds_of_one_recipe_at_once_build_it_once_and_rm_removes_it(tmp_path):
    import threading

    _need_mmdebstrap()
    from agentrig.bench.terminal.images import list_roots, remove_roots

    recipe = resolve_base("debian:bookworm-slim")
    said: list[str] = []
    roots: list[Path] = []

    def build() -> None:
        roots.append(ensure_base_root(recipe, said.append, cache=tmp_path))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(roots) == 2 and roots[0] == roots[1] and (roots[0] / "etc/debian_version").is_file()
    assert sum(m.startswith("building") for m in said) == 1
    assert not list(tmp_path.glob(".build-*"))  # built in a temp dir, renamed into place
    assert [m["key"] for m in list_roots(tmp_path)] == [recipe.key()]
    assert remove_roots("debian:bookworm-slim", tmp_path) == [recipe.key()] and list_roots(tmp_path) == []


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trial_with_the_network_fetches_through_the_hosts_package_index_settings(tmp_path, tb_root):
    # build_network = "host-settings" and a trial with the network (an agent that runs `pip install`,
    # as Terminal-Bench's containers have the network): the trial gets the host's pip configuration
    # and CA bundle as the build does; a trial without the network gets nothing of them
    task = make_task(tmp_path, f"FROM {TB_PYTHON}\n", task_id=f"net-{uuid.uuid4().hex[:6]}")
    online = await opened(task, tmp_path, root="image", build_network="host-settings", network=True)
    try:
        fetched = await online.run("pip download --no-deps --no-cache-dir -q six -d /tmp/wheels && ls /tmp/wheels;"
                                   " echo \"ca=$SSL_CERT_FILE\"", 180)
    finally:
        await online.close()
    assert fetched.exit_code == 0, fetched.output
    assert "six-" in fetched.output and "ca=/.agentrig-host-settings/ca.crt" in fetched.output
    offline = await opened(task, tmp_path, root="image", build_network="host-settings", network=False)
    try:
        seen = await offline.run("echo \"ca=$SSL_CERT_FILE\"; ls /.agentrig-host-settings 2>&1", 60)
    finally:
        await offline.close()
    assert "ca=\n" in seen.output and "No such file" in seen.output
