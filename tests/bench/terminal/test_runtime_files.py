"""What a container engine gives every container beyond its image, on a root built from packages:
/etc/hosts (localhost resolves: an ssh or HTTP server on localhost is reachable by name),
/etc/hostname, resolv.conf, a /dev/shm anyone may write (real mmdebstrap roots, real bwrap)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agentrig.bench.terminal.images import ensure_base_root, resolve_base
from agentrig.bench.terminal.sandbox.runtime_files import drop_runtime_files, hosts_text, write_runtime_files

from .sandbox_support import make_task, needs_root_bwrap, opened
from .test_images import _need_mmdebstrap

TB_UBUNTU = "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624"


@pytest.fixture(scope="module")
def ubuntu_root() -> Path:
    _need_mmdebstrap()
    return ensure_base_root(resolve_base(TB_UBUNTU))  # cached across sessions in images_dir()


def test_the_runtime_files_shadow_the_images_and_a_build_drops_them(tmp_path):
    etc = tmp_path / "upper" / "etc"
    etc.mkdir(parents=True)
    (etc / "hosts").write_text("10.0.0.1 stale\n")  # what the image (or a step) had: shadowed
    write_runtime_files(etc, "box")
    hosts = (etc / "hosts").read_text()
    assert hosts == hosts_text("box") and "stale" not in hosts
    assert "127.0.0.1\tlocalhost\n" in hosts and "::1\tlocalhost" in hosts and "127.0.1.1\tbox\n" in hosts
    assert (etc / "hostname").read_text() == "box\n"
    assert (etc / "resolv.conf").is_file() and oct((etc / "hosts").stat().st_mode & 0o777) == "0o644"
    (etc / "keep.conf").write_text("a step's own file\n")
    drop_runtime_files(etc)
    assert sorted(p.name for p in etc.iterdir()) == ["keep.conf"]


@needs_root_bwrap()
@pytest.mark.slow
async def test_localhost_resolves_in_builds_and_trials_on_a_built_root(tmp_path, ubuntu_root):
    dockerfile = (f"FROM {TB_UBUNTU}\n"
                  "RUN getent hosts localhost > /app/resolved-in-build\n"
                  "RUN echo '10.9.9.9 planted-by-a-step' >> /etc/hosts\n")
    task = make_task(tmp_path, dockerfile, task_id=f"hosts-{uuid.uuid4().hex[:6]}")
    sandbox = await opened(task, tmp_path, root="image")
    try:
        script = ("cat /app/resolved-in-build; getent hosts planted-by-a-step || echo not-kept; "
                  "getent hosts \"$(hostname)\"; "
                  "(perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => \"127.0.0.1\", "
                  "LocalPort => 8765, Listen => 1, ReuseAddr => 1) or die; $c = $s->accept; print $c \"served\\n\"' &); "
                  "for i in $(seq 50); do (exec 3<>/dev/tcp/localhost/8765 && cat <&3) 2>/dev/null && break; sleep 0.2; done; "
                  "su nobody -s /bin/sh -c 'echo x > /dev/shm/by-nobody' && echo shm-ok; "
                  "echo '10.1.1.1 edited' >> /etc/hosts && getent hosts edited")
        result = await sandbox.run(script, 120)
        layer = sandbox.layer_dir
    finally:
        await sandbox.close()
    out = result.output
    assert "localhost" in out.splitlines()[0], out  # the build's RUN steps resolved localhost
    assert "not-kept" in out  # a step's edit of /etc/hosts is not kept in the layer (nor by Docker)
    assert "127.0.1.1       sandbox" in out  # the sandbox's own hostname resolves
    assert "\nserved\n" in out  # a server on localhost is reached by that name
    assert "shm-ok" in out and "10.1.1.1        edited" in out  # /dev/shm is 1777; the trial may edit /etc/hosts
    assert layer is not None and not (Path(layer) / "upper" / "etc" / "hosts").exists()


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trials_edit_of_etc_hosts_is_its_own(tmp_path, ubuntu_root):
    task = make_task(tmp_path, f"FROM {TB_UBUNTU}\n", task_id=f"hosts2-{uuid.uuid4().hex[:6]}")
    first = await opened(task, tmp_path, root="image")
    try:
        await first.run("echo '10.2.2.2 first-trial' >> /etc/hosts", 60)
        second = await opened(task, tmp_path, root="image")
        try:
            seen = await second.run("getent hosts first-trial || echo absent; getent hosts localhost", 60)
        finally:
            await second.close()
    finally:
        await first.close()
    assert "absent" in seen.output and "localhost" in seen.output
    assert os.path.exists("/etc/hosts") and "first-trial" not in Path("/etc/hosts").read_text()


@needs_root_bwrap()
async def test_the_images_entrypoint_starts_with_the_sandbox_as_a_containers_first_process(tmp_path):
    # TB's cron-broken-network starts cron and loops that break curl from its ENTRYPOINT, which
    # docker/podman run with the compose command (`sleep infinity`) as arguments before the agent
    init = ("#!/bin/sh\necho \"started in $(pwd) with $*\" > /tmp/entrypoint.log\n"
            "(while true; do date > /tmp/heartbeat; sleep 0.2; done) &\nexec \"$@\"\n")
    dockerfile = ("FROM ubuntu:24.04\nWORKDIR /app\nCOPY init.sh /usr/local/bin/init.sh\n"
                  "RUN chmod +x /usr/local/bin/init.sh\nENTRYPOINT [\"/usr/local/bin/init.sh\"]\nCMD [\"bash\"]\n")
    task = make_task(tmp_path, dockerfile, files={"init.sh": init}, task_id=f"entry-{uuid.uuid4().hex[:6]}")
    sandbox = await opened(task, tmp_path)
    try:
        result = await sandbox.run("for i in $(seq 50); do [ -s /tmp/heartbeat ] && break; sleep 0.1; done; "
                                   "cat /tmp/entrypoint.log; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -x 'sleep infinity '", 60)
    finally:
        await sandbox.close()
    assert "started in /app with sleep infinity" in result.output, result.output
    assert "\nsleep infinity \n" in result.output  # the script's exec "$@": the container's command runs on
