"""The bwrap sandbox with real bwrap processes: isolation, timeouts, output bounds, network, builds."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from agentrig.bench.terminal.sandbox import SandboxError, TaskBuildError, open_sandbox
from agentrig.bench.terminal.sandbox.bwrap import BwrapSandbox, new_trial_dir
from agentrig.bench.terminal.sandbox.cgroup import available as cgroup_problem

from .sandbox_support import host_pids_in_namespace, make_task, needs_root_bwrap, opened, settings

pytestmark = needs_root_bwrap()


async def test_a_forked_sleeper_and_a_daemon_are_killed_at_the_timeout(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path)
    try:
        result = await sandbox.run(
            "setsid sleep 1001 & echo $! > /tmp/pids; nohup sleep 1002 >/dev/null 2>&1 & echo $! >> /tmp/pids;"
            " echo started; sleep 1003", timeout_s=1)
        assert result.timed_out and result.exit_code is None
        assert "started" in result.output
        left = [cmd for _, cmd in host_pids_in_namespace(sandbox.init_pid) if cmd.startswith("sleep 100")]
        assert left == []
        check = await sandbox.run("for p in $(cat /tmp/pids); do kill -0 $p 2>/dev/null && echo alive $p; done; echo checked", 10)
        assert check.exit_code == 0 and "alive" not in check.output and "checked" in check.output
    finally:
        await sandbox.close()


async def test_a_background_child_holding_the_pipe_does_not_hold_the_call(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path)
    try:
        result = await sandbox.run("sleep 300 & echo launched", timeout_s=60)
        assert not result.timed_out and result.exit_code == 0 and result.output == "launched\n"
        # it was not a timeout: the background job keeps running, as in a container
        listing = await sandbox.run("ps -eo args", 30)
        assert "sleep 300" in listing.output.splitlines()
    finally:
        await sandbox.close()


async def test_ten_megabytes_of_output_are_cut_with_the_count(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path, output_limit=1000)
    try:
        result = await sandbox.run("echo BEGIN; head -c 10000000 /dev/zero | tr '\\0' a; echo; echo END", 60)
        total = len("BEGIN\n") + 10_000_000 + len("\nEND\n")
        assert result.exit_code == 0
        assert result.omitted_chars == total - 1000
        assert result.output.startswith("BEGIN\naaa") and result.output.endswith("aaa\nEND\n")
        assert f"[... {total - 1000} characters omitted ...]" in result.output
        assert len(result.output) < 1100
    finally:
        await sandbox.close()


async def test_writes_and_deletions_stay_in_the_trial_layer(tmp_path):
    probe = "agentrig-probe-" + os.urandom(4).hex()
    task = make_task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt ./\n", {"data.txt": "original\n"})
    sandbox = await opened(task, tmp_path)
    trial_dir = sandbox.trial_dir
    try:
        script = (f"echo x > /usr/{probe} && echo x > /etc/{probe} && echo x > /root/{probe} && mkdir /{probe}"
                  f" && rm /etc/hostname && rm -rf /usr/share/doc/bash && echo changed > /app/data.txt && echo ok")
        result = await sandbox.run(script, 30)
        assert result.output.strip().endswith("ok"), result.output
        again = await sandbox.run(f"cat /usr/{probe} /app/data.txt; ls /etc/hostname 2>&1", 30)
        assert "x\nchanged\n" in again.output and "No such file" in again.output  # it persists within the trial
    finally:
        await sandbox.close()
    for path in (f"/usr/{probe}", f"/etc/{probe}", f"/root/{probe}", f"/{probe}"):
        assert not os.path.exists(path)
    assert os.path.exists("/etc/hostname") and os.path.isdir("/usr/share/doc/bash")
    assert (task.path / "data.txt").read_text() == "original\n"
    assert not trial_dir.exists()
    second = await opened(task, tmp_path)  # a new trial starts from the built image, not the last trial
    try:
        result = await second.run(f"cat /app/data.txt; ls /usr/{probe} 2>&1", 30)
        assert result.output.startswith("original\n") and "No such file" in result.output
    finally:
        await second.close()


async def test_keep_keeps_the_trial_layer(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path, keep=True)
    await sandbox.run("echo kept > /usr/kept-file; echo app > /app/out.txt", 30)
    await sandbox.close()
    assert (sandbox.trial_dir / "upper" / "usr" / "kept-file").read_text() == "kept\n"
    assert (sandbox.trial_dir / "upper" / "app" / "out.txt").read_text() == "app\n"


class _Server:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.sendall(b"hello\n")
            conn.close()


async def test_no_network_unless_allowed(tmp_path):
    server = _Server()
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{server.port} && head -n1 <&3"
    try:
        closed = await opened(make_task(tmp_path), tmp_path)
        try:
            result = await closed.run(probe, 30)
            assert result.exit_code != 0 and "hello" not in result.output
            assert "refused" in result.output.lower() or "unreachable" in result.output.lower()
            ifaces = await closed.run("cat /proc/net/dev", 30)
            assert "eth" not in ifaces.output and "lo:" in ifaces.output
        finally:
            await closed.close()
        assert server.accepted == 0
        allowed = await opened(make_task(tmp_path, allow_internet=True), tmp_path)
        try:
            result = await allowed.run(probe, 30)
            assert result.exit_code == 0 and "hello" in result.output
        finally:
            await allowed.close()
        assert server.accepted == 1
    finally:
        server.sock.close()


async def test_the_tests_are_not_visible_during_the_agent_phase(tmp_path):
    task = make_task(tmp_path)
    sandbox = await opened(task, tmp_path)
    try:
        result = await sandbox.run(
            f"ls /tests 2>&1; ls {task.path} 2>&1; grep -rl test_secret /app /tmp /root /home /run /mnt 2>/dev/null; echo done", 120)
        assert "test_outputs.py" not in result.output and result.output.count("No such file") == 2
        assert result.output.strip().endswith("done")
        await sandbox.copy_in(task.tests_dir, "/tests")
        after = await sandbox.run_verifier("cat /tests/test_outputs.py", 30, env={}, extra_ro_binds={})
        assert "def test_secret" in after.output
    finally:
        await sandbox.close()


async def test_verifier_binds_are_read_only_or_writable_as_asked(tmp_path):
    tools, out = tmp_path / "tools", tmp_path / "verifier-out"
    tools.mkdir(), out.mkdir()
    (tools / "tool.txt").write_text("trusted\n")
    sandbox = await opened(make_task(tmp_path), tmp_path)
    try:
        await sandbox.run("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt", 30)  # a forged reward
        result = await sandbox.run_verifier(
            "cat /opt/vtools/tool.txt; echo x > /opt/vtools/tool.txt || echo refused; ls /logs/verifier; echo 0.5 > /logs/verifier/reward.txt",
            30, env={"TEST_DIR": "/tests"}, extra_ro_binds={str(tools): "/opt/vtools"}, rw_binds={str(out): "/logs/verifier"})
        assert "trusted" in result.output and "refused" in result.output
        assert "reward.txt" not in result.output.split("refused", 1)[1]  # the forged file is hidden
        assert (out / "reward.txt").read_text() == "0.5\n" and (tools / "tool.txt").read_text() == "trusted\n"
        # the binds live in the verifier's own mount namespace: a loop the agent left running
        # writes to its own /logs/verifier, never to the verifier's
        # (written by rename, so a reader never sees the file between `>`'s truncation and the write)
        await sandbox.run("setsid nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/.r;"
                          " mv -f /logs/verifier/.r /logs/verifier/reward.txt; sleep 0.01; done' >/dev/null 2>&1 &", 30)
        again = await sandbox.run_verifier("sleep 0.3; cat /logs/verifier/reward.txt; echo 0.25 > /logs/verifier/reward.txt; sleep 0.3",
                                           30, env={}, extra_ro_binds={}, rw_binds={str(out): "/logs/verifier"})
        assert again.output == "0.5\n" and (out / "reward.txt").read_text() == "0.25\n"
        seen = await sandbox.run("ls /opt/vtools | wc -l; cat /logs/verifier/reward.txt", 30)
        assert seen.output == "0\n1\n"
    finally:
        await sandbox.close()


async def test_persistent_shell_keeps_cd_and_export_stateless_does_not(tmp_path):
    task = make_task(tmp_path)
    persistent = await opened(task, tmp_path, shell="persistent")
    try:
        await persistent.run("mkdir -p /tmp/place && cd /tmp/place && export MARK=kept", 30)
        result = await persistent.run("pwd; echo $MARK", 30)
        assert result.output == "/tmp/place\nkept\n" and result.exit_code == 0
        failing = await persistent.run("false", 30)
        assert failing.exit_code == 1
        timed = await persistent.run("sleep 100", 1)
        assert timed.timed_out and timed.note
        fresh = await persistent.run("pwd; echo ${MARK:-gone}", 30)
        assert fresh.output == "/app\ngone\n"
    finally:
        await persistent.close()
    stateless = await opened(task, tmp_path)
    try:
        await stateless.run("cd /tmp && export MARK=kept", 30)
        result = await stateless.run("pwd; echo ${MARK:-gone}", 30)
        assert result.output == "/app\ngone\n"
    finally:
        await stateless.close()


async def test_killing_everything_inside_does_not_kill_the_sandbox(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path)
    try:
        await sandbox.run("kill -9 -1; true", 30)
        result = await sandbox.run("echo still-here", 30)
        assert result.output == "still-here\n"
    finally:
        await sandbox.close()


async def test_a_sandbox_that_cannot_start_raises_sandbox_error(tmp_path):
    with pytest.raises(SandboxError, match="cannot start bwrap"):
        await opened(make_task(tmp_path), tmp_path, bwrap_path=tmp_path / "no-such-bwrap")
    impossible = BwrapSandbox(trial_dir=new_trial_dir(tmp_path / "cache", "bad"), layer_dir=None, workdir="/",
                              env={}, network=False, ro_binds={str(tmp_path / "missing"): "/x"})
    with pytest.raises(SandboxError, match="bwrap did not start"):
        await impossible.start()
    assert not impossible.trial_dir.exists()


async def test_build_runs_once_per_task_and_is_reused(tmp_path):
    from agentrig.bench.terminal.sandbox import build_plan
    from agentrig.bench.terminal.sandbox.build import ensure_layer

    task = make_task(tmp_path, "FROM ubuntu:24.04\nRUN echo built >> /usr/local/share/agentrig-build-count\n"
                               "WORKDIR /app\nCOPY data.txt ./\nENV MODE=built\n", {"data.txt": "v1\n"})
    first = await ensure_layer(task, build_plan(task), settings(tmp_path))
    second = await ensure_layer(task, build_plan(task), settings(tmp_path))
    assert first.built and not second.built and first.path == second.path
    sandbox = await opened(task, tmp_path)
    try:
        result = await sandbox.run("cat /usr/local/share/agentrig-build-count; cat data.txt; echo $MODE", 30)
        assert result.output == "built\nv1\nbuilt\n"  # the RUN ran exactly once
    finally:
        await sandbox.close()
    (task.path / "data.txt").write_text("v2\n")
    third = await ensure_layer(task, build_plan(task), settings(tmp_path))
    assert third.built and third.path != first.path


async def test_a_build_step_failing_on_a_full_disk_is_the_hosts_fault(tmp_path):
    # a real ENOSPC (writing /dev/full), as a RUN step gets it when this machine's disk is full:
    # the sandbox's fault (the trial invalid, replayed), never the task's broken_task
    full = make_task(tmp_path, "FROM ubuntu:24.04\nRUN head -c 4096 /dev/zero > /dev/full\n", task_id="full")
    with pytest.raises(SandboxError, match="disk is full") as info:
        await open_sandbox(full, settings(tmp_path))
    assert not isinstance(info.value, TaskBuildError) and "line 2: RUN exited 1" in str(info.value)


async def test_a_failing_build_step_is_the_tasks_fault(tmp_path):
    broken = make_task(tmp_path, "FROM ubuntu:24.04\nRUN echo about to fail && exit 3\n", task_id="broken")
    with pytest.raises(TaskBuildError, match="line 2: RUN exited 3") as info:
        await open_sandbox(broken, settings(tmp_path))
    assert info.value.exclusion is None and "about to fail" in str(info.value)
    offline = make_task(tmp_path, "FROM ubuntu:24.04\nRUN curl -fsS https://example.com/ > /x\n", task_id="offline")
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(offline, settings(tmp_path, build_network=False))
    assert info.value.exclusion == "needs_network"
    missing = make_task(tmp_path, "FROM ubuntu:24.04\nCOPY nowhere.txt /app/\n", task_id="missing")
    with pytest.raises(TaskBuildError, match="nowhere.txt"):
        await open_sandbox(missing, settings(tmp_path))
    outside = make_task(tmp_path, "FROM node:20-alpine\n", task_id="node")
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(outside, settings(tmp_path))
    assert info.value.exclusion == "needs_container"


async def test_commands_see_no_host_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    sandbox = await opened(make_task(tmp_path), tmp_path)
    try:
        result = await sandbox.run("env; ls -a /root; grep -c CapEff /proc/self/status", 30)
        assert "sk-test-must-not-leak" not in result.output and "OPENAI" not in result.output
        assert ".pyenv" not in result.output  # the host's /root is not shown
    finally:
        await sandbox.close()


@pytest.mark.skipif(cgroup_problem() is not None, reason=f"no writable cgroups here: {cgroup_problem()}")
async def test_memory_and_process_bounds(tmp_path):
    sandbox = await opened(make_task(tmp_path), tmp_path, memory_mb=64, pids=40)
    try:
        hog = await sandbox.run("python3 -c 'a = bytearray(400 * 2**20); print(len(a))'", 60)
        assert hog.exit_code == 137 and hog.oom_killed and str(400 * 2**20) not in hog.output
        small = await sandbox.run("python3 -c 'a = bytearray(8 * 2**20); print(len(a))'", 60)
        assert small.exit_code == 0 and not small.oom_killed
        forks = await sandbox.run(
            "python3 -c '\nimport os, time\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n"
            "            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(\"refused after\", n)\n'", 60)
        assert "refused after" in forks.output
        assert int(forks.output.split()[-1]) < 40
    finally:
        await sandbox.close()


async def test_the_doctor_check_starts_a_sandbox(tmp_path):
    from agentrig.bench.terminal.sandbox import sandbox_check

    findings = {f.check: f for f in await sandbox_check("bwrap", settings(tmp_path))}
    assert findings["binary"].ok and findings["start"].ok, findings
    assert findings["cgroups"].ok == (cgroup_problem() is None)
    unknown = await sandbox_check("qemu")
    assert not unknown[0].ok and "bwrap" in unknown[0].detail


async def test_concurrent_first_trials_build_once(tmp_path):
    import asyncio

    task = make_task(tmp_path, "FROM ubuntu:24.04\nRUN echo once >> /usr/local/share/agentrig-build-count\n")
    sandboxes = await asyncio.gather(*(opened(task, tmp_path) for _ in range(3)))
    try:
        outputs = [await s.run("cat /usr/local/share/agentrig-build-count", 30) for s in sandboxes]
        assert [o.output for o in outputs] == ["once\n"] * 3
        assert len(list((tmp_path / "cache" / "layers").glob("*/meta.json"))) == 1
    finally:
        for sandbox in sandboxes:
            await sandbox.close()


async def test_a_build_step_that_cannot_reach_a_package_registry_is_the_hosts_fault(tmp_path):
    # apt's words when this machine's Debian mirror is down (printed here: an outage cannot be made
    # on demand): with the network, the plumbing's fault (invalid, replayed); a host beyond the
    # registries stays the task's need (needs_network); without the network, needs_network too
    from agentrig.bench.terminal.core.netfail import registry_outage

    outage = ("RUN echo \"W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  "
              "Temporary failure resolving 'deb.debian.org'\" && exit 100\n")
    down = make_task(tmp_path, "FROM ubuntu:24.04\n" + outage, task_id="mirror-down")
    with pytest.raises(SandboxError, match="the package registry deb.debian.org could not be reached") as info:
        await open_sandbox(down, settings(tmp_path))
    assert not isinstance(info.value, TaskBuildError)
    beyond = make_task(tmp_path, "FROM ubuntu:24.04\nRUN echo \"fatal: unable to access 'https://github.com/x/y.git/': "
                       "Could not resolve host: github.com\" && exit 128\n", task_id="beyond")
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(beyond, settings(tmp_path))
    assert info.value.exclusion == "needs_network" and "github.com" in str(info.value)
    with pytest.raises(TaskBuildError):  # the task's (a SandboxError would not be caught here)
        await open_sandbox(make_task(tmp_path, "FROM ubuntu:24.04\n" + outage, task_id="offline-down"),
                           settings(tmp_path, build_network=False))
    assert registry_outage("could not reach pypi.org, github.com: x") == "pypi.org"
    assert registry_outage("could not reach github.com: x") is None and registry_outage(None) is None
