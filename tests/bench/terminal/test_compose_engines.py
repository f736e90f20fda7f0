"""Compose files beyond the one-service template on real podman (Debian's, with runc) and real docker
(Debian's docker.io), each test once on each engine: the agent's ``extra_hosts`` and ``dns``; a
service the task builds running in the agent container's network namespace, reached by name,
removed with the trial — and reaped after a runner killed by SIGKILL; on docker, its entrypoint as
docker takes one. podman's tests skip where podman, runc or mmdebstrap is missing, except in CI
(env CI=true); docker's skip only where no daemon can be started, and fail instead under CI or
AGENTRIG_REQUIRE_DOCKER=1 (tests/dockerd.py)."""

from __future__ import annotations

import json
import os

import pytest

from agentrig.bench.terminal.audit import audit_task
from agentrig.bench.terminal.sandbox import TaskBuildError, engine, open_sandbox
from agentrig.bench.terminal.tasks.taskfile import load_task

from .docker_support import container_engine, docker, docker_base  # noqa: F401 - container_engine, docker_base: fixtures
from .podman_support import base_image, killed_runner  # noqa: F401 - base_image: a fixture
from .run_support import write_task
from .sandbox_support import settings
from .test_compose_services import CLIENT, services_task

FETCH = "python3 -c \"import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())\""


async def test_a_service_runs_in_the_agent_containers_network_and_goes_with_it(tmp_path, container_engine):
    task = services_task(tmp_path, base=container_engine.base)
    sandbox = await open_sandbox(task, settings(tmp_path, kind=container_engine.kind))
    try:
        service = sandbox.attached[0].name
        page = await sandbox.run(f"{FETCH} http://server:8000", 60)
        interfaces = await sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort", 30)
        inspected = json.loads(container_engine.cli("inspect", service).stdout)[0]
        agent_id = json.loads(container_engine.cli("inspect", sandbox.name).stdout)[0]["Id"]
        assert service in container_engine.owned_containers(os.getpid())
    finally:
        await sandbox.close()
    assert page.exit_code == 0 and page.output.strip() == "books from the server hello", page.output
    assert interfaces.output.split() == ["lo"]  # no network unless allowed, for the service too
    assert inspected["HostConfig"]["NetworkMode"] == f"container:{agent_id}"
    assert inspected["Config"]["Labels"]["agentrig.service"] == "server"
    assert sandbox.name not in container_engine.owned_containers() and service not in container_engine.owned_containers()


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


async def test_extra_hosts_and_dns_reach_the_container(tmp_path, container_engine):
    compose = (CLIENT.replace("    depends_on:\n      server:\n        condition: service_healthy\n", "")
               + "    dns:\n      - 192.0.2.1\n    extra_hosts:\n      - \"example.com:131.25.18.2\"\n")
    d = write_task(tmp_path, "hosts", files={"docker-compose.yaml": compose})
    (d / "client").mkdir()
    (d / "client" / "Dockerfile").write_text(f"FROM {container_engine.base}\nWORKDIR /app\n")
    # the host's own /etc/hosts names never reach a container (podman's default copies them in)
    host_names = {name for line in open("/etc/hosts").read().splitlines() if line.strip() and not line.startswith("#")
                  for name in line.split()[1:] if "localhost" not in name and not name.startswith("ip6-")}
    for network in (False, True):  # podman refuses --dns without a network: the file is written then
        sandbox = await open_sandbox(load_task(d), settings(tmp_path, kind=container_engine.kind, network=network))
        try:
            out = await sandbox.run("getent hosts example.com; cat /etc/resolv.conf", 30)
            hosts = await sandbox.run("cat /etc/hosts", 30)
        finally:
            await sandbox.close()
        assert "131.25.18.2     example.com" in out.output and "nameserver 192.0.2.1" in out.output, (network, out.output)
        assert "127.0.0.1\tlocalhost" in hosts.output.splitlines()
        assert not {w for line in hosts.output.splitlines() for w in line.split()[1:]} & host_names, hosts.output


async def test_the_audit_plays_a_task_with_a_service(tmp_path, container_engine):
    row = await audit_task(services_task(tmp_path, base=container_engine.base), settings(tmp_path, kind=container_engine.kind))
    assert row.status == "ok", (row.reason, row.oracle)
    assert container_engine.owned_containers(os.getpid()) == []


async def test_a_killed_runners_trial_and_service_containers_are_reaped(tmp_path, container_engine):
    task = services_task(tmp_path, base=container_engine.base)
    pid = killed_runner(tmp_path, task.path, tmp_path / "c1", kind=container_engine.kind)
    left = container_engine.owned_containers(pid)
    assert len(left) == 2  # the trial's container and its service's, which depends on it
    engine._REAPED.clear()  # as a new runner's first start
    reaped = await engine.reap_orphans(engine.engine_cli(container_engine.kind))
    assert set(left) <= set(reaped) and container_engine.owned_containers(pid) == []


async def test_a_service_that_cannot_start_is_the_tasks_fault_and_leaves_nothing(tmp_path, container_engine):
    task = services_task(tmp_path, base=container_engine.base)
    task.compose.write_text(task.compose.read_text().replace('command: [ "python3", "./site.py"', 'command: [ "/no/such/server"'))
    with pytest.raises(TaskBuildError) as caught:
        await open_sandbox(task, settings(tmp_path, kind=container_engine.kind))
    assert "service 'server' cannot start its command" in str(caught.value) and "/no/such/server" in str(caught.value)
    assert caught.value.exclusion is None  # a broken task, not an invalid trial
    assert container_engine.owned_containers(os.getpid()) == []
