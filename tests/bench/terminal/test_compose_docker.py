"""Compose files on real docker (Debian's docker.io, as test_compose_podman.py on podman): a service
the task builds runs in the agent container's network namespace, reached by name, removed with the
trial, reaped after a runner killed by SIGKILL; its entrypoint as docker takes one; the agent's
extra_hosts and dns. Skipped only where no daemon can be started (failed under CI)."""

from __future__ import annotations

import json
import os

import pytest

from agentrig.bench.terminal.audit import audit_task
from agentrig.bench.terminal.sandbox import TaskBuildError, engine, open_sandbox
from agentrig.bench.terminal.taskfile import load_task

from .docker_support import docker, docker_base, owned_containers  # noqa: F401 - docker_base: a fixture
from .podman_support import killed_runner
from .run_support import write_task
from .sandbox_support import settings
from .test_compose_podman import FETCH
from .test_compose_services import CLIENT, services_task


async def test_a_service_runs_in_the_agent_containers_network_and_goes_with_it(tmp_path, docker_base):
    task = services_task(tmp_path, base=docker_base)
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker"))
    try:
        service = sandbox.attached[0].name
        page = await sandbox.run(f"{FETCH} http://server:8000", 60)
        interfaces = await sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort", 30)
        inspected = json.loads(docker("inspect", service).stdout)[0]
        agent_id = json.loads(docker("inspect", sandbox.name).stdout)[0]["Id"]
        assert service in owned_containers(os.getpid())
    finally:
        await sandbox.close()
    assert page.exit_code == 0 and page.output.strip() == "books from the server hello", page.output
    assert interfaces.output.split() == ["lo"]  # no network unless allowed, for the service too
    assert inspected["HostConfig"]["NetworkMode"] == f"container:{agent_id}"
    assert inspected["Config"]["Labels"]["agentrig.service"] == "server"
    assert sandbox.name not in owned_containers() and service not in owned_containers()


async def test_a_services_entrypoint_is_one_executable_and_its_arguments_lead(tmp_path, docker_base):
    """Compose's entrypoint list on docker (whose --entrypoint is one executable, not podman's JSON
    array): the service runs ENTRYPOINT[0] with the rest of it, then the command."""
    compose = services_task(tmp_path, "probe").compose.read_text().replace(
        'command: [ "python3", "./site.py"', 'entrypoint: [ "python3", "-u" ]\n    command: [ "./site.py"')
    task = services_task(tmp_path, "entry", compose=compose, base=docker_base)
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker"))
    try:
        page = await sandbox.run(f"{FETCH} http://server:8000", 60)
        argv = docker("inspect", "--format", "{{json .Config.Entrypoint}} {{json .Config.Cmd}}", sandbox.attached[0].name).stdout
    finally:
        await sandbox.close()
    assert page.exit_code == 0 and "books from the server" in page.output, page.output
    assert argv.split(" ", 1)[0] == '["python3"]' and json.loads(argv.split(" ", 1)[1])[:2] == ["-u", "./site.py"], argv


async def test_the_audit_plays_a_task_with_a_service_on_docker(tmp_path, docker_base):
    row = await audit_task(services_task(tmp_path, base=docker_base), settings(tmp_path, kind="docker"))
    assert row.status == "ok", (row.reason, row.oracle)
    assert owned_containers(os.getpid()) == []


async def test_a_killed_runners_trial_and_service_containers_are_reaped(tmp_path, docker_base):
    task = services_task(tmp_path, base=docker_base)
    pid = killed_runner(tmp_path, task.path, tmp_path / "c1", kind="docker")
    left = owned_containers(pid)
    assert len(left) == 2  # the trial's container and its service's, which depends on it
    engine._REAPED.clear()
    reaped = await engine.reap_orphans(engine.engine_cli("docker"))
    assert set(left) <= set(reaped) and owned_containers(pid) == []


async def test_a_service_that_cannot_start_is_the_tasks_fault_and_leaves_nothing(tmp_path, docker_base):
    task = services_task(tmp_path, base=docker_base)
    task.compose.write_text(task.compose.read_text().replace('command: [ "python3", "./site.py"', 'command: [ "/no/such/server"'))
    with pytest.raises(TaskBuildError) as caught:
        await open_sandbox(task, settings(tmp_path, kind="docker"))
    assert "service 'server' cannot start its command" in str(caught.value) and "/no/such/server" in str(caught.value)
    assert caught.value.exclusion is None
    assert owned_containers(os.getpid()) == []


async def test_extra_hosts_and_dns_reach_the_container(tmp_path, docker_base):
    compose = (CLIENT.replace("    depends_on:\n      server:\n        condition: service_healthy\n", "")
               + "    dns:\n      - 192.0.2.1\n    extra_hosts:\n      - \"example.com:131.25.18.2\"\n")
    d = write_task(tmp_path, "hosts", files={"docker-compose.yaml": compose})
    (d / "client").mkdir()
    (d / "client" / "Dockerfile").write_text(f"FROM {docker_base}\nWORKDIR /app\n")
    for network in (False, True):
        sandbox = await open_sandbox(load_task(d), settings(tmp_path, kind="docker", network=network))
        try:
            out = await sandbox.run("getent hosts example.com; cat /etc/resolv.conf; cat /etc/hosts", 30)
        finally:
            await sandbox.close()
        assert "131.25.18.2" in out.output and "example.com" in out.output, (network, out.output)
        assert "nameserver 192.0.2.1" in out.output and "127.0.0.1\tlocalhost" in out.output, (network, out.output)
