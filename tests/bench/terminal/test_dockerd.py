"""The Docker daemon the docker sandbox's tests use (tests/dockerd.py, scripts/start-dockerd.sh):
started when none answers, recorded by its PID and stopped by whoever started it alone; without
dockerd the tests skip, or fail under CI / AGENTRIG_REQUIRE_DOCKER=1; agentrig finds its own
daemon's socket when no other is set (sandbox/engine.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from agentrig.bench.terminal.sandbox.engine import engine_cli

from ...dockerd import need_docker


def test_a_daemon_of_our_own_is_started_recorded_and_stopped_by_its_pid_alone(docker_daemon, monkeypatch):
    """No daemon answers on the directory's socket: start-dockerd.sh starts one there (data-root,
    exec-root, pidfile, socket under the directory) and says its PID; a second user finds it
    answering and starts nothing; only the starter stops it, by that PID, once the other is done."""
    import shutil
    import tempfile

    from ...dockerd import DockerDaemon

    need_docker(docker_daemon)
    if os.geteuid() != 0:
        pytest.skip("dockerd needs root")
    if os.path.exists("/var/run/docker.sock"):
        pytest.skip("a system daemon's socket is there: the script would use it")
    # a bridge of its own, no iptables rules: the session daemon's docker0 and rules are left alone
    # (--bridge=none would delete docker0 under the session's daemon)
    bridge = f"ar-dt{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", "name", bridge, "type", "bridge"], check=True)
    subprocess.run(["ip", "addr", "add", "10.213.77.1/24", "dev", bridge], check=True)
    monkeypatch.delenv("DOCKER_HOST", raising=False)  # not the session's daemon: one of this test's own
    monkeypatch.setenv("DOCKERD_FLAGS", f"--bridge={bridge} --iptables=false --ip-masq=false")
    directory = tempfile.mkdtemp(prefix="ar-dockerd-", dir="/tmp")  # a short path: unix sockets' 108 bytes
    try:
        with DockerDaemon(directory) as first:
            assert first.problem is None and first.host == f"unix://{directory}/docker.sock", first.problem
            assert first.started and open(f"{directory}/dockerd.pid").read().strip() == str(first.started)
            assert os.environ["DOCKER_HOST"] == first.host
            version = subprocess.run(["docker", "-H", first.host, "version", "--format", "{{.Server.Version}}"],
                                     capture_output=True, text=True, timeout=60)
            assert version.returncode == 0 and version.stdout.strip(), version.stderr
            with DockerDaemon(directory) as second:
                assert second.host == first.host and second.started is None
            os.kill(first.started, 0)  # the second user left it running
        with pytest.raises(ProcessLookupError):
            os.kill(first.started, 0)  # stopped by its starter
        assert "DOCKER_HOST" not in os.environ
        assert subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True)


def test_without_dockerd_the_script_says_so_and_the_tests_skip_or_fail_under_ci(tmp_path, monkeypatch):
    from ...dockerd import DockerDaemon, SCRIPT

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    if os.path.exists("/var/run/docker.sock") or os.path.exists("/usr/bin/dockerd"):
        pytest.skip("a system daemon or a dockerd in /usr/bin: nothing is missing here")
    done = subprocess.run([str(SCRIPT), str(tmp_path / "d")], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("start-dockerd.sh: no dockerd on PATH (Debian: apt-get install docker.io"), done.stderr
    missing = DockerDaemon(tmp_path / "d")
    missing.problem = done.stderr.splitlines()[0]
    for ci, outcome in (("", pytest.skip.Exception), ("true", pytest.fail.Exception)):
        monkeypatch.setenv("CI", ci)
        monkeypatch.delenv("AGENTRIG_REQUIRE_DOCKER", raising=False)
        with pytest.raises(outcome, match="no dockerd on PATH"):
            need_docker(missing)
    monkeypatch.setenv("CI", "")
    monkeypatch.setenv("AGENTRIG_REQUIRE_DOCKER", "1")
    with pytest.raises(pytest.fail.Exception):
        need_docker(missing)


def test_agentrigs_own_socket_is_found_when_no_other_is_set(tmp_path, monkeypatch):
    import socket

    if os.path.exists("/var/run/docker.sock"):
        pytest.skip("a system daemon's socket is there: docker's own choice stands")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert engine_cli("docker") == ["env", "DOCKER_BUILDKIT=0", "docker"]  # none there yet
    (tmp_path / "agentrig" / "dockerd").mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "agentrig" / "dockerd" / "docker.sock"))
        assert engine_cli("docker") == ["env", "DOCKER_BUILDKIT=0", f"DOCKER_HOST=unix://{tmp_path}/agentrig/dockerd/docker.sock", "docker"]
        monkeypatch.setenv("DOCKER_HOST", "unix:///elsewhere.sock")
        assert engine_cli("docker") == ["env", "DOCKER_BUILDKIT=0", "DOCKER_HOST=unix:///elsewhere.sock", "docker"]
