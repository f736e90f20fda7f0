"""Compose files beyond Terminal-Bench's one-service template, on real bwrap sandboxes:

- the agent's ``extra_hosts`` and ``dns`` are written into the trial's ``/etc/hosts`` and
  ``/etc/resolv.conf`` as Docker writes them (the host's files untouched);
- services beside the agent's that the task builds (a mock web server) run as sibling sandboxes
  in the trial's own network namespace: the agent reaches them by name, the host never sees their
  ports, the trial has no network unless allowed (with it: slirp4netns, the host's loopback
  unreachable), and nothing of them outlives the trial;
- services from a registry's image, and the local sandbox, are ``needs_services`` naming why.

Small tasks made here (tmp_path); never a time asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from agentrig.bench.terminal.availability import task_support
from agentrig.bench.terminal.tasks.compose import read_compose
from agentrig.bench.terminal.tasks.compose_check import check_compose
from agentrig.bench.terminal.sandbox import TaskBuildError, open_sandbox
from agentrig.bench.terminal.sandbox.services import service_argv
from agentrig.bench.terminal.sandbox.runtime_files import hosts_text, resolv_text
from agentrig.bench.terminal.sandbox.slirp import slirp_binary
from agentrig.bench.terminal.tasks.taskfile import load_task

from .run_support import agentrig, write_task
from .sandbox_support import needs_root_bwrap, settings
from .test_dockerfile import TEMPLATE_COMPOSE

# Terminal-Bench's template, built from client/, started once the server is healthy
CLIENT = TEMPLATE_COMPOSE.replace("      dockerfile: Dockerfile", "      context: client\n      dockerfile: Dockerfile") + \
    "    depends_on:\n      server:\n        condition: service_healthy\n"

SERVER = textwrap.indent(textwrap.dedent("""\
    server:
      build:
        context: server
        dockerfile: Dockerfile
      image: ${T_BENCH_TASK_DOCKER_NAME_PREFIX}__server
      container_name: ${T_BENCH_TASK_DOCKER_NAME_PREFIX}__server
      command: [ "python3", "./site.py" ]
      ports:
        - "8000"
      healthcheck:
        test: [ "CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8000')" ]
        interval: 10s
        timeout: 5s
        retries: 1
    """), "  ")

SITE = textwrap.dedent("""\
    import os
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            body = ("books from the server " + os.environ.get("GREETING", "")).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

    HTTPServer(("", 8000), Page).serve_forever()
    """)

SOLUTION = "#!/bin/bash\npython3 -c \"import urllib.request; print(urllib.request.urlopen('http://server:8000').read().decode())\" > /app/out.txt\n"
TEST = "from pathlib import Path\n\ndef test_out():\n    assert Path('/app/out.txt').read_text().startswith('books from the server')\n"


def services_task(root: Path, task_id: str = "scraper", *, compose: str | None = None, site: str = SITE,
                  base: str = "python:3.11-slim"):
    """A task shaped like Terminal-Bench's simple-web-scraper: a client and a server it builds."""
    # the server's command carries a token of this task: its processes are told from those of other
    # runs of these tests on the same machine
    default = (CLIENT + SERVER + "    environment:\n      GREETING: hello\n").replace(
        '"./site.py" ]', f'"./site.py", "{uuid.uuid4().hex[:12]}" ]')
    d = write_task(root, task_id, solution=SOLUTION, test=TEST, files={"docker-compose.yaml": compose or default})
    (d / "Dockerfile").unlink()
    (d / "client").mkdir()
    (d / "client" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /app\n")
    (d / "server").mkdir()
    (d / "server" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /srv\nCOPY site.py .\nEXPOSE 8000\nCMD [\"python3\", \"site.py\"]\n")
    (d / "server" / "site.py").write_text(site)
    return load_task(d)


def _alive_in_pid_namespace(inode: int) -> list[int]:
    """Host pids of the live (not zombie) processes in the pid namespace `inode`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino == inode and \
                        "State:\tZ" not in Path(f"/proc/{entry}/status").read_text():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _server_processes(task) -> list[int]:
    """The processes of this task's server (its command's token in their command line)."""
    return _processes_with(read_compose(task.compose).services["server"].command[-1])


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


# -- reading the file ----------------------------------------------------------------------------

def test_the_compose_file_is_read_as_docker_reads_it(tmp_path):
    task = services_task(tmp_path)
    compose = read_compose(task.compose)
    assert compose.agent == "client" and [s.name for s in compose.others] == ["server"]
    server = compose.services["server"]
    assert server.ports == [8000] and server.command[:2] == ["python3", "./site.py"]
    assert server.environment == {"GREETING": "hello"}
    assert server.healthcheck is not None and server.healthcheck.interval_s == 10 and server.healthcheck.retries == 1
    assert server.healthcheck.command()[:2] == ["python3", "-c"]
    assert server.dockerfile == (task.path / "server" / "Dockerfile").resolve()
    assert compose.hostnames() == ["server"]  # the container_name with ${…} is not a name anyone resolves
    # Docker's rules for what a service runs
    assert service_argv(server, ["/entry.sh"], ["python3", "x.py"]) == ["/entry.sh", *server.command]
    bare = server.model_copy(update={"command": None})
    assert service_argv(bare, None, ["python3", "x.py"]) == ["python3", "x.py"]
    assert service_argv(bare.model_copy(update={"entrypoint": ["/e"]}), ["/old"], ["python3", "x.py"]) == ["/e"]
    # depends_on orders the start
    path = tmp_path / "order.yaml"
    path.write_text("services:\n  client:\n    build: .\n  web:\n    build: .\n    depends_on: [db]\n  db:\n    build: .\n")
    assert [s.name for s in read_compose(path).start_order()] == ["db", "web"]


def test_which_sandboxes_run_services_and_why_not(tmp_path):
    task = services_task(tmp_path)
    for kind in ("bwrap", "podman", "docker"):
        assert task_support(task, kind, network=False).ok, task_support(task, kind).reason
    found = task_support(task, "local")
    assert found.exclusion == "needs_services" and "server (builds server)" in found.reason
    assert "the local sandbox starts no service beside the agent's (bwrap, podman and docker do)" in found.reason
    # a service from a registry's image: excluded everywhere, naming the image
    pulled = services_task(tmp_path, "pulled", compose=CLIENT + "  db:\n    image: postgres:15\n")
    for kind in ("bwrap", "podman", "docker", "local"):
        found = task_support(pulled, kind)
        assert found.exclusion == "needs_services", kind
        if kind in ("bwrap", "podman", "docker"):
            assert "service 'db' runs the image postgres:15 from a registry, not one the task builds" in found.reason
    # what a service uses that no sandbox honours is named
    odd = services_task(tmp_path, "odd", compose=CLIENT + SERVER + "    privileged: true\n")
    assert "service 'server' uses privileged" in task_support(odd, "bwrap").reason
    clash = services_task(tmp_path, "clash", compose=CLIENT + SERVER + SERVER.replace("  server:", "  server2:"))
    assert "services server, server2 all listen on port 8000" in task_support(clash, "bwrap").reason
    # the agent's extra_hosts and dns are honoured now (they were needs_container)
    path = tmp_path / "hosts.yaml"
    path.write_text(CLIENT + "    dns: [192.0.2.1]\n    extra_hosts: ['example.com:131.25.18.2']\n")
    assert check_compose(path, "bwrap") is None
    hosts = write_task(tmp_path, "hosts", files={"docker-compose.yaml": TEMPLATE_COMPOSE + "    dns: [192.0.2.1]\n"})
    local = task_support(load_task(hosts), "local")  # it would use this machine's files: said, not ignored
    assert local.exclusion == "needs_container" and "sets dns, which the local sandbox cannot give" in local.reason
    assert task_support(load_task(hosts), "bwrap").ok and task_support(load_task(hosts), "podman").ok


def test_tasks_show_names_the_services_beside_the_agents(tmp_path):
    services_task(tmp_path)
    shown = agentrig("tasks", "show", "scraper", "--bench", "terminal", "--tasks", tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "service beside the agent's: server (builds server · port 8000 · ready by its healthcheck)" in shown.stdout
    doc = json.loads(agentrig("tasks", "show", "scraper", "--bench", "terminal", "--tasks", tmp_path, "--json").stdout)
    assert doc["services"] == [{"name": "server", "runs": "builds server", "ports": [8000], "ready_by": "healthcheck"}]


def test_etc_files_are_written_as_docker_writes_them():
    hosts = hosts_text("sandbox", [("example.com", "131.25.18.2"), ("v6.example", "::2")], ["server"])
    lines = hosts.splitlines()
    assert lines[:2] == ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    assert lines[-4:] == ["131.25.18.2\texample.com", "::2\tv6.example", "127.0.0.1\tserver", "127.0.1.1\tsandbox"]
    assert hosts_text("server", [], ["server"]).splitlines()[-1] == "127.0.0.1\tserver"  # a service: its name once
    host = "# generated\nsearch corp.example\nnameserver 127.0.0.53\nnameserver 10.1.2.3\noptions edns0 trust-ad\n"
    assert resolv_text(None, host) == "search corp.example\nnameserver 10.1.2.3\noptions edns0 trust-ad\n"
    assert resolv_text(["192.0.2.1"], host) == "search corp.example\nnameserver 192.0.2.1\noptions edns0 trust-ad\n"
    assert resolv_text(None, "nameserver 127.0.0.53\n") == "nameserver 8.8.8.8\nnameserver 8.8.4.4\n"


# -- real sandboxes --------------------------------------------------------------------------------

@needs_root_bwrap()
def test_extra_hosts_and_dns_reach_the_trial_and_not_the_host(tmp_path):
    compose = (CLIENT.replace("    depends_on:\n      server:\n        condition: service_healthy\n", "")
               + "    dns:\n      - 192.0.2.1\n    extra_hosts:\n      - \"example.com:131.25.18.2\"\n")
    d = write_task(tmp_path, "hosts", files={"docker-compose.yaml": compose})
    (d / "client").mkdir()
    (d / "client" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    task = load_task(d)
    host_hosts, host_resolv = Path("/etc/hosts").read_bytes(), Path("/etc/resolv.conf").read_bytes()

    async def main():
        box = await open_sandbox(task, settings(tmp_path))
        try:
            hosts = await box.run("getent hosts example.com; cat /etc/resolv.conf", 30)
            rewrite = await box.run("echo '127.0.0.1 localhost' > /etc/hosts && cat /etc/hosts", 30)  # writable, as Docker's
            return hosts, rewrite
        finally:
            await box.close()

    hosts, rewrite = asyncio.run(main())
    assert hosts.exit_code == 0, hosts.output
    assert "131.25.18.2     example.com" in hosts.output and "nameserver 192.0.2.1" in hosts.output
    assert rewrite.output.strip() == "127.0.0.1 localhost"
    assert Path("/etc/hosts").read_bytes() == host_hosts and Path("/etc/resolv.conf").read_bytes() == host_resolv


class _HostPage(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"the host's own server")

    def log_message(self, *_args):
        pass


@needs_root_bwrap()
@pytest.mark.parametrize("network", [False, True])
def test_a_service_runs_beside_the_agent_in_the_trials_own_network(tmp_path, network):
    if network and slirp_binary() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("slirp4netns missing in CI")
        pytest.skip("slirp4netns is not installed")
    task = services_task(tmp_path)
    host_server = HTTPServer(("127.0.0.1", 0), _HostPage)  # on the host's loopback: never reachable from a trial
    threading.Thread(target=host_server.serve_forever, daemon=True).start()
    port = host_server.server_address[1]
    fetch = "python3 -c \"import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())\""

    async def main():
        box = await open_sandbox(task, settings(tmp_path, network=network), label="svc")
        services = list(box.attached)
        service_pids = [s.sandbox.init_pid for s in services if hasattr(s, "sandbox")]
        pid_namespaces = [os.stat(f"/proc/{pid}/ns/pid").st_ino for pid in service_pids]
        slirps = [s._proc.pid for s in services if type(s).__name__ == "Slirp"]
        assert len(slirps) == (1 if network else 0)
        try:
            page = await box.run(f"{fetch} http://server:8000", 30)
            host_loopback = await box.run(f"{fetch} http://127.0.0.1:{port}", 30)
            via_gateway = await box.run(f"{fetch} http://10.0.2.2:{port}", 30)
            interfaces = await box.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort", 30)
            hosts = await box.run("getent hosts server", 30)
            # the service's port is in the trial's network namespace, not the host's
            netns = {os.stat(f"/proc/{pid}/ns/net").st_ino for pid in (box.init_pid, *service_pids)}
            return page, host_loopback, via_gateway, interfaces, hosts, pid_namespaces, netns, slirps
        finally:
            await box.close()

    try:
        page, host_loopback, via_gateway, interfaces, hosts, pid_namespaces, netns, slirps = asyncio.run(main())
    finally:
        host_server.shutdown()
    assert len(netns) == 1 and netns != {os.stat("/proc/self/ns/net").st_ino}
    assert page.exit_code == 0 and page.output.strip() == "books from the server hello", page.output
    assert hosts.output.split() == ["127.0.0.1", "server"]
    assert host_loopback.exit_code != 0 and "the host's own server" not in host_loopback.output
    assert via_gateway.exit_code != 0 and "the host's own server" not in via_gateway.output
    assert interfaces.output.split() == (["lo", "tap0"] if network else ["lo"])
    assert len(pid_namespaces) == 1
    # torn down with the trial: no process of the service's sandbox, no server, no slirp4netns
    assert not _alive_in_pid_namespace(pid_namespaces[0])
    assert not _server_processes(task)
    assert not [pid for pid in slirps if os.path.exists(f"/proc/{pid}") and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()]
    assert not list((tmp_path / "cache" / "trials").iterdir())


@needs_root_bwrap()
def test_a_service_that_dies_is_the_tasks_fault_and_leaves_nothing(tmp_path):
    crash = "import sys\nprint('cannot open the bookstore database', flush=True)\nsys.exit(3)\n"
    task = services_task(tmp_path, "crash", site=crash)

    async def main():
        await open_sandbox(task, settings(tmp_path))

    with pytest.raises(TaskBuildError) as caught:
        asyncio.run(main())
    assert "service 'server' exited 3 before it was ready" in str(caught.value)
    assert "cannot open the bookstore database" in str(caught.value)
    assert caught.value.exclusion is None  # a broken task
    assert not _server_processes(task)
    assert not list((tmp_path / "cache" / "trials").iterdir())


@needs_root_bwrap()
def test_the_audit_plays_a_task_with_a_service(tmp_path):
    from agentrig.bench.terminal.audit import audit_task

    task = services_task(tmp_path)
    row = asyncio.run(audit_task(task, settings(tmp_path)))
    assert row.status == "ok", (row.reason, row.oracle)
    assert not _server_processes(task)


@needs_root_bwrap()
def test_a_services_own_build_failing_is_found_before_the_run(tmp_path):
    # agentrig run builds the selected tasks' layers before it plays anything: the services' too
    from agentrig.bench.terminal.availability import build_check

    task = services_task(tmp_path)
    dockerfile = task.path / "server" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("EXPOSE 8000", "RUN echo the mirror is down && exit 2\nEXPOSE 8000"))
    broken = asyncio.run(build_check([task], settings(tmp_path)))
    assert broken[task.id].startswith("broken_task: service 'server': Dockerfile line 4: RUN exited 2")
    assert "the mirror is down" in broken[task.id]
    assert asyncio.run(build_check([services_task(tmp_path, "fine")], settings(tmp_path))) == {}


@needs_root_bwrap()
def test_a_killed_runner_leaves_no_service_running(tmp_path):
    # the services' bwrap die with the runner (--die-with-parent), slirp4netns with it (--exit-fd)
    import signal
    import subprocess
    import sys
    import time

    if slirp_binary() is None:
        pytest.skip("slirp4netns is not installed")
    task = services_task(tmp_path)
    script = tmp_path / "runner.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, os, time
        from pathlib import Path
        from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
        from agentrig.bench.terminal.tasks.taskfile import load_task

        async def main():
            box = await open_sandbox(load_task(Path({str(task.path)!r})),
                                     SandboxSettings(cache_dir=Path({str(tmp_path / 'cache')!r}), network=True))
            slirp = [c for c in box.attached if type(c).__name__ == "Slirp"][0]
            print(slirp._proc.pid, flush=True)
            time.sleep(600)

        asyncio.run(main())
    """))
    runner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        slirp_pid = int(runner.stdout.readline())
        assert _server_processes(task)  # the server runs
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()

    def running() -> list[int]:
        alive = _server_processes(task)
        if os.path.exists(f"/proc/{slirp_pid}") and "State:\tZ" not in Path(f"/proc/{slirp_pid}/status").read_text():
            alive.append(slirp_pid)
        return alive

    for _ in range(200):  # the kernel ends them once their parent is gone: wait for it, bounded
        if not running():
            break
        time.sleep(0.05)
    assert running() == []
