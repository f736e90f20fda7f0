"""A compose file whose agent service binds the task's own folder (LiveCodeBench-Pro's ``./:/app``,
a ``./data:/data:ro``): bwrap, podman and docker give the trial a private copy of each source at its
target — a file that exists only through the bind is read there, a write stays in the trial (the
task's folder on the host is never modified), ``:ro`` refuses writes; a source outside the task's
folder, a named volume or a host path stays ``needs_container`` naming the mount.

Small tasks made here (tmp_path); podman's and docker's tests are marked as test_compose_engines.py's."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest

from agentrig.bench.terminal.audit import audit_task
from agentrig.bench.terminal.tasks.compose import ComposeError
from agentrig.bench.terminal.tasks.compose_check import check_compose
from agentrig.bench.terminal.tasks.compose_volumes import agent_binds, what_binds_show
from agentrig.bench.terminal.availability import task_support
from agentrig.bench.terminal.sandbox import TaskBuildError, open_sandbox
from agentrig.bench.terminal.tasks.taskfile import load_task

from .docker_support import container_engine, docker_base  # noqa: F401 - fixtures
from .podman_support import base_image  # noqa: F401 - a fixture
from .run_support import agentrig, write_task
from .sandbox_support import needs_root_bwrap, settings

COMPOSE = """services:
  client:
    container_name: ${{COMPOSE_PROJECT_NAME}}
    build:
      context: .
      dockerfile: Dockerfile
    working_dir: /app
    volumes:
      - ${{T_BENCH_TASK_LOGS_PATH}}:${{T_BENCH_CONTAINER_LOGS_PATH}}
{volumes}    command: ["sleep", "infinity"]
"""
BINDS = "      - ./:/app\n      - ./data:/data:ro\n"
# the answer exists only in the task's folder: the image never copies it
SOLUTION = "#!/bin/bash\ncp /data/answer.txt /app/out.txt\n"
TEST = ("from pathlib import Path\n\ndef test_out():\n"
        "    assert Path('/app/out.txt').read_text().strip() == 'forty-two'\n")


def bound_task(root: Path, task_id: str = "binds", *, volumes: str = BINDS, base: str = "python:3.11-slim"):
    """A task whose agent service binds its folder at /app and its data/ read-only at /data."""
    # as LiveCodeBench-Pro's: a PATH that extends the base image's (${PATH} is the image's own)
    dockerfile = (f"FROM {base}\nENV PATH=\"/opt/tool/bin:${{PATH}}\"\nWORKDIR /app\n"
                  "RUN mkdir -p /opt/tool/bin && echo from-the-image > /app/image.txt\n")
    d = write_task(root, task_id, dockerfile=dockerfile,
                   solution=SOLUTION, test=TEST, files={"docker-compose.yaml": COMPOSE.format(volumes=volumes)})
    (d / "data").mkdir()
    (d / "data" / "answer.txt").write_text("forty-two\n")
    return load_task(d)


def _fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


PROBE = ("cat /data/answer.txt; ls /app; test -e /app/image.txt && echo image-shown; "
         "echo trial > /app/written.txt && echo wrote-app; echo more >> /app/data/answer.txt && echo wrote-app-data; "
         "touch /data/new.txt 2>&1 || echo refused-ro; cat /app/data/answer.txt")


def _check_probe(output: str) -> None:
    lines = output.splitlines()
    assert lines[0] == "forty-two", output  # only through the bind
    assert {"task.yaml", "solution.sh", "tests", "data", "docker-compose.yaml"} <= set(lines), output  # ./ at /app
    assert "image-shown" not in lines, output  # the bind hides the image's /app, as Docker's does
    assert "wrote-app" in lines and "wrote-app-data" in lines, output  # read-write
    assert "Read-only file system" in output and "refused-ro" in lines, output  # :ro
    assert lines[-2:] == ["forty-two", "more"], output


# -- which volumes are honoured, and where ---------------------------------------------------

def test_binds_of_the_tasks_folder_are_honoured_and_others_are_named(tmp_path):
    task = bound_task(tmp_path)
    binds = agent_binds(task.compose)
    assert [(b.target, b.read_only, b.source) for b in binds] == [
        ("/app", False, task.path.resolve()), ("/data", True, (task.path / "data").resolve())]
    for kind in ("bwrap", "podman", "docker"):
        assert check_compose(task.compose, kind) is None
        assert task_support(task, kind).ok, task_support(task, kind).reason
    local = task_support(task, "local")
    assert not local.ok and local.reason.startswith("needs_container: service 'client' in docker-compose.yaml mounts ./:/app")
    assert what_binds_show(binds, task) == ["tests", "solution.sh"]  # ./ shows them, as Docker would

    (tmp_path / "shared").mkdir()
    for number, (volume, why) in enumerate([
        ("../shared:/shared", "outside the task's folder"),
        ("/etc:/host-etc:ro", "outside the task's folder"),
        ("~/.ssh:/root/.ssh", "the host's home"),
        ("cache:/cache", "named volume"),
        ("/anonymous", "anonymous volume"),
        ("./data:/data:nocopy", "option nocopy"),
        ("./data:relative", "not an absolute path"),
        ("${HOME}/x:/x", "names the variable HOME"),
    ]):
        other = bound_task(tmp_path, f"other{number}", volumes=f"      - \"{volume}\"\n")
        for kind in ("bwrap", "podman", "docker"):
            support = task_support(other, kind)
            assert not support.ok and support.reason.startswith(f"needs_container: service 'client' mounts {volume} ("), \
                (volume, kind, support.reason)
            assert why in support.reason, (volume, support.reason)


def test_the_long_syntax_and_a_path_that_resolves_inside_are_binds_of_the_folder(tmp_path):
    folder = tmp_path / "long"
    long = (f"      - type: bind\n        source: {folder}/data\n        target: /data\n        read_only: true\n"
            "      - {type: bind, source: ./sub/../, target: /app}\n")
    task = bound_task(tmp_path, "long", volumes=long)
    assert sorted((b.target, b.read_only) for b in agent_binds(task.compose)) == [("/app", False), ("/data", True)]
    volume = bound_task(tmp_path, "vol", volumes="      - {type: volume, source: cache, target: /cache}\n")
    with pytest.raises(ComposeError, match="is a volume mount"):
        agent_binds(volume.compose)


def test_tasks_show_names_the_bind_and_warns_that_it_shows_the_tests(tmp_path):
    bound_task(tmp_path)
    out = agentrig("tasks", "show", "--bench", "terminal", "binds", "--tasks", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "bind: ./:/app" in out.stdout and "bind: ./data:/data:ro" in out.stdout
    assert "warning: the agent can read tests, solution.sh through the compose file's binds" in " ".join(out.stdout.split())


# -- bwrap, for real ------------------------------------------------------------------------

@needs_root_bwrap()
def test_bwrap_gives_the_trial_a_private_copy_of_the_tasks_folder(tmp_path):
    task = bound_task(tmp_path)
    before = _fingerprint(task.path)

    async def main():
        sandbox = await open_sandbox(task, settings(tmp_path))
        try:
            return await sandbox.run(PROBE, 60)
        finally:
            await sandbox.close()

    result = asyncio.run(main())
    _check_probe(result.output)
    assert _fingerprint(task.path) == before  # nothing the trial wrote reached the host's folder


@needs_root_bwrap()
def test_the_audit_plays_a_task_that_binds_its_folder(tmp_path):
    task = bound_task(tmp_path)
    before = _fingerprint(task.path)
    row = asyncio.run(audit_task(task, settings(tmp_path)))
    assert row.status == "ok", (row.reason, row.oracle)  # the oracle read /data/answer.txt; the noop failed
    assert _fingerprint(task.path) == before


@needs_root_bwrap()
def test_a_source_outside_the_folder_is_never_played(tmp_path):
    (tmp_path / "secret").mkdir()
    task = bound_task(tmp_path, "outside", volumes="      - ../secret:/secret\n")

    async def main():
        await open_sandbox(task, settings(tmp_path))

    with pytest.raises(TaskBuildError) as caught:
        asyncio.run(main())
    assert caught.value.exclusion == "needs_container"
    assert "mounts ../secret:/secret" in str(caught.value)


# -- podman and docker ----------------------------------------------------------------------

async def test_a_container_gets_a_private_copy_of_the_tasks_folder(tmp_path, container_engine):
    task = bound_task(tmp_path, base=container_engine.base)
    before = _fingerprint(task.path)
    sandbox = await open_sandbox(task, settings(tmp_path, kind=container_engine.kind))
    try:
        result = await sandbox.run(PROBE, 60)
    finally:
        await sandbox.close()
    _check_probe(result.output)
    assert _fingerprint(task.path) == before


async def test_the_audit_plays_a_task_that_binds_its_folder_in_a_container(tmp_path, container_engine):
    task = bound_task(tmp_path, base=container_engine.base)
    row = await audit_task(task, settings(tmp_path, kind=container_engine.kind))
    assert row.status == "ok", (row.reason, row.oracle)


async def test_a_container_never_binds_a_source_outside_the_folder(tmp_path, container_engine):
    (tmp_path / "secret").mkdir()
    task = bound_task(tmp_path, "outside", volumes="      - ../secret:/secret\n", base=container_engine.base)
    with pytest.raises(TaskBuildError) as caught:
        await open_sandbox(task, settings(tmp_path, kind=container_engine.kind))
    assert caught.value.exclusion == "needs_container" and "mounts ../secret:/secret" in str(caught.value)
    assert container_engine.owned_containers(os.getpid()) == []
