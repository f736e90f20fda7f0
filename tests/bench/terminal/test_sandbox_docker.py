"""The docker sandbox for real, tested as podman's is: Debian's docker.io (dockerd 20.10 with runc,
overlay2) — the daemon that answers, else agentrig's own started for the session — on base images
imported from roots built from packages (no registry here). Skipped only where no daemon can be
started; under CI (CI=true) or AGENTRIG_REQUIRE_DOCKER=1 that fails instead. The tests that are the
same on both engines run on each: the offline tool chain (test_sandbox_podman.py), services
(test_compose_engines.py)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from agentrig.bench.terminal.images import resolve_base
from agentrig.bench.terminal.sandbox import engine, open_sandbox, sandbox_check
from agentrig.bench.terminal.sandbox.container_images import import_base, imported_images, remove_task_images
from agentrig.bench.terminal.sandbox.engine import OWNER_LABEL, _boot_id, engine_cli
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks

from ...dockerd import need_docker
from .docker_support import docker, docker_base, owned_containers, owned_images, volumes  # noqa: F401 - docker_base: a fixture
from .podman_support import BASE, killed_runner
from .sandbox_support import built_heredocs, make_task, settings


async def test_the_doctor_asks_the_daemon(docker_daemon):
    """The doctor reports what the daemon says (its version, runtime and storage driver)."""
    need_docker(docker_daemon)
    [finding] = await sandbox_check("docker")
    assert finding.ok and finding.check == "daemon", finding
    assert finding.detail.startswith("docker ") and "runtime runc" in finding.detail, finding.detail


async def test_without_a_daemon_the_doctor_says_so(tmp_path, monkeypatch):
    """No daemon on the socket DOCKER_HOST names: one clear problem, not a traceback."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    [finding] = await sandbox_check("docker")
    assert not finding.ok
    assert finding.detail.startswith(("docker client found but no daemon answers", "no docker client")), finding.detail


async def test_a_base_image_is_imported_labelled_with_its_recipe(tmp_path, docker_base):
    """`docker import` has no -q (podman's has): the root is imported under the FROM name, labelled
    with its recipe's key, with the image's WORKDIR and CMD; listed as imported; a task builds on it."""
    ref = f"{BASE}:agentrig-test-{os.getpid()}"
    docker("rmi", ref)
    try:
        assert import_base(ref, "docker") == ref
        fmt = '{{index .Config.Labels "agentrig.base"}} {{.Config.WorkingDir}} {{.Config.Cmd}}'
        assert docker("image", "inspect", "--format", fmt, ref).stdout.split() == [resolve_base(ref).key(), "/app", "[python3]"]
        assert (resolve_base(ref).key(), ref) in imported_images("docker")
        task = make_task(tmp_path, f"FROM {ref}\nRUN echo on-our-root > /marker\n", task_id="import-probe")
        sandbox = await open_sandbox(task, settings(tmp_path, kind="docker"))
        try:
            result = await sandbox.run("cat /marker; pwd", 60)
        finally:
            await sandbox.close()
        assert result.output.splitlines()[:2] == ["on-our-root", "/app"], result.output
    finally:
        remove_task_images()
        docker("rmi", ref)


async def test_a_timeout_kills_the_group_and_close_leaves_nothing(tmp_path, docker_base):
    """The task's limits reach the container (docker's --pids-limit, --memory); a timeout kills the
    command's whole process group; close removes the container and its anonymous volumes."""
    volumes_before = set(volumes())
    task = make_task(tmp_path, f"FROM {docker_base}\nVOLUME /data\nRUN echo built > /built\n")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker", pids=321, memory_mb=700))
    try:
        result = await sandbox.run("cat /built; pwd; python --version", 60)
        assert result.output.splitlines()[:2] == ["built", "/app"], result.output
        assert result.output.splitlines()[2].startswith("Python 3"), result.output
        limits = docker("inspect", "--format", "{{.HostConfig.PidsLimit}} {{.HostConfig.Memory}}", sandbox.name).stdout.split()
        assert limits == ["321", str(700 * 1024 * 1024)], limits
        timed = await sandbox.run("(sleep 1000 & sleep 1001) ; sleep 1002", 1)
        assert timed.timed_out
        left = await sandbox.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '", 30)
        assert "sleep 100" not in left.output, left.output
        assert sandbox.name in owned_containers(os.getpid())
    finally:
        await sandbox.close()
    assert sandbox.name not in owned_containers()
    assert set(volumes()) <= volumes_before  # the anonymous /data volume went with its container


async def test_the_persistent_shell_keeps_cd_and_export_in_one_docker_exec(tmp_path, docker_base):
    """shell = "persistent": one `docker exec -i` bash keeps the directory and the variables; a
    timeout ends that shell and the next command starts a fresh one at the workdir."""
    sandbox = await open_sandbox(make_task(tmp_path, f"FROM {docker_base}\nWORKDIR /app\n", task_id="shell"),
                                 settings(tmp_path, kind="docker", shell="persistent"))
    try:
        await sandbox.run("mkdir -p /tmp/place && cd /tmp/place && export MARK=kept", 30)
        kept = await sandbox.run("pwd; echo $MARK", 30)
        failing = await sandbox.run("false", 30)
        timed = await sandbox.run("sleep 100", 1)
        fresh = await sandbox.run("pwd; echo ${MARK:-gone}", 30)
    finally:
        await sandbox.close()
    assert kept.output == "/tmp/place\nkept\n" and kept.exit_code == 0, kept.output
    assert failing.exit_code == 1 and timed.timed_out
    assert fresh.output == "/app\ngone\n", fresh.output


async def test_what_a_killed_runner_left_is_reaped_by_the_next(tmp_path, docker_base):
    """A runner killed by SIGKILL leaves its container and task image (docker lists labels unlike
    podman: ps has no label map, images none); the next sandbox start removes both, and leaves a
    live owner's container alone."""
    task_dir = make_task(tmp_path, f"FROM {docker_base}\nRUN echo x > /x\n", task_id="killed-runner").path
    pid = killed_runner(tmp_path, task_dir, tmp_path / "c1",
                        'TerminalTask(id="killed-runner", path=d, format="tb1", instruction="x", '
                        'dockerfile=d / "Dockerfile", tests_dir=d / "tests")', kind="docker")
    assert owned_containers(pid) and owned_images(pid)  # left behind by the kill
    live = f"agentrig-live-test-{os.getpid()}"
    subprocess.run([*engine_cli("docker"), "run", "-d", "--name", live, "--label", f"{OWNER_LABEL}={os.getpid()}@{_boot_id()}",
                    docker_base, "sleep", "infinity"], check=True, stdout=subprocess.DEVNULL)
    try:
        engine._REAPED.clear()  # as a new runner's first start
        sandbox = await open_sandbox(make_task(tmp_path, f"FROM {docker_base}\n", task_id="next-runner"),
                                     settings(tmp_path, kind="docker"))
        await sandbox.close()
        assert owned_containers(pid) == [] and owned_images(pid) == []
        assert live in owned_containers(os.getpid())
    finally:
        docker("rm", "-f", live)


async def test_the_sandbox_holds_no_network_no_tests_no_writes_outside(tmp_path, docker_base):
    """Without the network the container has only loopback (with it, a route out); the agent sees
    no /tests and not the task's directory; what it writes stays in its container."""
    task = make_task(tmp_path, f"FROM {docker_base}\n", task_id="holds")
    marker = f"/agentrig-docker-escape-{os.getpid()}"
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker"))
    try:
        nets = await sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort; cat /proc/net/route | wc -l", 30)
        hidden = await sandbox.run(f"ls /tests 2>&1; ls {task.path} 2>&1; grep -rl test_secret /app /tmp /root /home /run "
                                   f"/mnt 2>/dev/null; touch {marker} {tmp_path}/escape 2>&1; echo done", 60)
        await sandbox.copy_in(task.tests_dir, "/tests")
        after = await sandbox.run_verifier("cat /tests/test_outputs.py", 30, env={}, extra_ro_binds={})
    finally:
        await sandbox.close()
    assert nets.output.split() == ["lo", "1"], nets.output  # loopback only; the route table's header alone
    assert "test_outputs.py" not in hidden.output and hidden.output.count("No such file") >= 2, hidden.output
    assert hidden.output.strip().endswith("done")
    assert not os.path.exists(marker) and not (tmp_path / "escape").exists()
    assert "def test_secret" in after.output
    online = await open_sandbox(task, settings(tmp_path, kind="docker", network=True))
    try:
        routes = await online.run("tail -n +2 /proc/net/route | wc -l", 30)
    finally:
        await online.close()
    assert int(routes.output.strip()) >= 1, routes.output


async def test_a_docker_trial_with_the_network_fetches_with_the_hosts_package_settings(tmp_path, docker_base):
    """build_network = "host-settings" and a trial with the network: as on podman, the trial's
    commands get the host's pip configuration and CA bundle, mounted read-only for this trial only
    (nothing in the container's layer: `docker diff`), the files gone after close."""
    from agentrig.bench.terminal.sandbox.container_images import SETTINGS_MOUNT

    task = make_task(tmp_path, f"FROM {docker_base}\n", task_id="trial-settings")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker", network=True, build_network="host-settings"))
    try:
        fetched = await sandbox.run("pip download --no-deps --no-cache-dir -d /tmp/dl six && ls /tmp/dl", 240)
        seen = await sandbox.run(f'echo "$PIP_CERT"; touch {SETTINGS_MOUNT}/x 2>&1 || echo read-only', 30)
        settings_dir = sandbox._settings_dir
        assert settings_dir and os.path.isdir(settings_dir)
        diff = docker("diff", sandbox.name)
    finally:
        await sandbox.close()
    assert fetched.exit_code == 0 and "six-" in fetched.output, fetched.output
    assert seen.output.split()[0] == f"{SETTINGS_MOUNT}/ca.crt" and "read-only" in seen.output, seen.output
    assert diff.returncode == 0 and "agentrig-host-settings" not in diff.stdout, diff.stdout
    assert not os.path.exists(settings_dir)


async def test_the_verifier_gets_read_only_and_writable_binds_in_the_container(tmp_path, docker_base):
    """As root the container's init is visible (init_pid: its host PID), so the verifier enters it
    with binds (``nsutil``): read-only or writable as asked, hidden from what the agent runs, the
    forged file under a writable bind unseen — as under bwrap and podman."""
    tools, out = tmp_path / "tools", tmp_path / "verifier-out"
    tools.mkdir(), out.mkdir()
    (tools / "tool.txt").write_text("trusted\n")
    sandbox = await open_sandbox(make_task(tmp_path, f"FROM {docker_base}\n", task_id="binds"), settings(tmp_path, kind="docker"))
    try:
        if os.geteuid() != 0:
            assert sandbox.init_pid is None and not sandbox.binds_verifier
            pytest.skip("the verifier enters the container's namespaces: needs root (CI runs as root)")
        state = docker("inspect", "--format", "{{.State.Pid}} {{.Id}}", sandbox.name).stdout.split()
        assert sandbox.init_pid == int(state[0]) and sandbox.binds_verifier
        assert state[1] in open(f"/proc/{sandbox.init_pid}/cgroup").read()  # the container's own init
        from agentrig.bench.terminal.sandbox.docker import _cgroup_files

        joined = _cgroup_files(str(sandbox.init_pid))  # the verifier joins the container's pids/memory/cpu cgroups
        assert joined and all(state[1] in path for path in joined), joined
        if os.path.isdir("/sys/fs/cgroup/pids"):  # v1 or hybrid (this machine): the pids controller's own file
            assert any(path.startswith("/sys/fs/cgroup/pids/") for path in joined), joined
        await sandbox.run("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt", 30)  # a forged reward
        result = await sandbox.run_verifier(
            "cat /opt/vtools/tool.txt; echo x > /opt/vtools/tool.txt || echo refused; ls /logs/verifier; "
            "echo 0.5 > /logs/verifier/reward.txt", 30, env={"TEST_DIR": "/tests"},
            extra_ro_binds={str(tools): "/opt/vtools"}, rw_binds={str(out): "/logs/verifier"})
        seen = await sandbox.run("ls /opt/vtools 2>/dev/null | wc -l; cat /logs/verifier/reward.txt", 30)
    finally:
        await sandbox.close()
    assert "trusted" in result.output and "refused" in result.output, result.output
    assert "reward.txt" not in result.output.split("refused", 1)[1]
    assert (out / "reward.txt").read_text() == "0.5\n" and (tools / "tool.txt").read_text() == "trusted\n"
    assert seen.output == "0\n1\n"


async def test_dockerfile_heredocs_build_the_same_files_on_docker(tmp_path, docker_base):
    """Docker's classic builder reads no heredocs and has no named build contexts nor COPY --chmod:
    agentrig rewrites them (the files an image of their own), and the image holds what podman's
    and bwrap's builds of the same Dockerfile make (sandbox_support.HEREDOCS)."""
    await built_heredocs(tmp_path, docker_base, kind="docker")
    assert not [t for t in owned_images(os.getpid()) if "agentrig-heredocs" in t]  # the files' image went


async def test_a_failed_docker_build_is_the_tasks_and_not_built_again(tmp_path, docker_base):
    """The classic builder's "Step n/m :" and "returned a non-zero code: N" are read as podman's
    lines are: broken_task naming the step, and the run's other trials end the same way unbuilt."""
    from agentrig.bench.terminal.sandbox import TaskBuildError

    task = make_task(tmp_path, f"FROM {docker_base}\nRUN date +%s%N && exit 3\n", task_id="broken-build")
    messages = []
    for _ in range(2):
        with pytest.raises(TaskBuildError) as caught:
            await open_sandbox(task, settings(tmp_path, kind="docker"))
        assert caught.value.exclusion is None
        assert re.match(r"docker build failed at STEP \d+/\d+: RUN date .*:\nSending build context", str(caught.value)), str(caught.value)[:300]  # (a build with the host settings has their steps first)
        assert "non-zero code: 3" in str(caught.value)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert not [t for t in owned_images(os.getpid()) if "broken-build" in t]


def test_docker_build_output_is_read_at_its_failing_step():
    from agentrig.bench.terminal.sandbox.container_images import build_error

    out = ("Step 1/3 : FROM x\n ---> 1\nStep 2/3 : RUN apt-get install -y q\n" + "Setting up q ...\n" * 50 +
           "Step 3/3 : RUN wget -q https://cdn.kernel.org/x.tar.xz\n ---> Running in 2\n"
           "The command '/bin/sh -c wget -q https://cdn.kernel.org/x.tar.xz' returned a non-zero code: 4\n")
    found = build_error("docker", out, True)
    assert found.exclusion == "needs_network" and "could not reach cdn.kernel.org: wget exited 4" in str(found), str(found)


BUILTIN_SAMPLE = ("csv-region-totals", "harbor-service-config", "read-only-tour")


@pytest.mark.superseded_by("test_the_audit_of_every_builtin_task_is_the_same_on_docker_as_on_podman")
async def test_docker_gives_the_builtin_tasks_podmans_verdicts(tmp_path, docker_daemon):
    """The audit (oracle solves, doing nothing fails) of a few built-in tasks — TB's and Harbor's
    formats, three base images — gives on docker what it gives on podman (all 15: the slow test)."""
    from agentrig.bench.terminal.audit import audit_one

    from .podman_support import need_podman

    need_docker(docker_daemon)
    need_podman()
    tasks = {t.id: t for t in load_tasks(builtin_tasks_dir())[0] if t.id in BUILTIN_SAMPLE}
    verdicts = {}
    for kind in ("podman", "docker"):
        for task_id, task in sorted(tasks.items()):
            row = await audit_one(task, settings(tmp_path / kind, kind=kind), 600)
            verdicts[kind, task_id] = (row.status, *((o.reward, o.failure_mode) if o else None for o in (row.oracle, row.noop)))
    for task_id in tasks:
        assert verdicts["docker", task_id] == verdicts["podman", task_id], (task_id, verdicts)
    assert verdicts["docker", "csv-region-totals"][0] == "ok" and verdicts["docker", "read-only-tour"][0] == "lenient"


@pytest.mark.slow
def test_the_audit_of_every_builtin_task_is_the_same_on_docker_as_on_podman(tmp_path, docker_daemon):
    """`agentrig audit --bench terminal --sandbox docker` on the 15 built-in tasks (once 15 of 15
    `error`: every base image's import failed on `docker import -q`) gives each task podman's
    verdict: the same status, the same oracle and no-op outcomes."""
    import json

    from .podman_support import need_podman
    from .run_support import agentrig

    need_docker(docker_daemon)
    need_podman()
    found = {}
    for kind in ("podman", "docker"):
        done = agentrig("audit", "--bench", "terminal", "--sandbox", kind, "--concurrency", "2", "--json",
                        "--cache-dir", str(tmp_path / kind))
        doc = json.loads(done.stdout)
        found[kind] = {row["task_id"]: (row["status"], *((o or {}).get("failure_mode") for o in (row["oracle"], row["noop"])))
                       for row in doc["tasks"]}
    assert len(found["docker"]) == 15 and found["docker"] == found["podman"], found
    assert sum(status == "ok" for status, *_ in found["docker"].values()) >= 13, found["docker"]



async def test_host_package_settings_reach_a_docker_build_and_stay_out_of_the_image(tmp_path, docker_base, monkeypatch):
    """build_network = "host-settings" on docker, whose classic builder mounts nothing: `RUN pip
    install` builds (the host's pip configuration and CA bundle reach it; through this machine's
    TLS-intercepting proxy it fails without them), a stage ending as another user removes them too,
    and the final image has nothing of them: not in its filesystem, ENV or history, the image of the
    settings files is gone — and on an experimental daemon (`--squash`) no layer holds a copy."""
    import asyncio
    import tarfile

    from agentrig.bench.terminal.sandbox.container_images import experimental

    monkeypatch.setenv("PIP_TIMEOUT", "181.5")  # a distinctive host PIP_* value
    task = make_task(tmp_path, f"FROM {docker_base}\nRUN pip install --no-cache-dir six "
                               "&& if pip config list | grep -q '181[.]5'; then touch /saw-host-pip-settings; fi\n"
                               "USER nobody\n", task_id="docker-pip-probe")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker", build_network="host-settings"))
    try:
        result = await sandbox.run("python -c 'import six; print(six.__version__)'; ls /saw-host-pip-settings; "
                                   "ls -a /; env | grep -E '^(PIP_|SSL_CERT|APT_CONFIG)' || echo no-pip-env", 60)
        assert result.exit_code == 0, result.output
        assert "/saw-host-pip-settings" in result.output and "no-pip-env" in result.output, result.output
        assert "agentrig-host-settings" not in result.output, result.output
        tag = next(t for t in owned_images(os.getpid()) if "docker-pip-probe" in t)
        assert not [t for t in owned_images(os.getpid()) if "agentrig-settings-" in t]
        inspect = docker("image", "inspect", "--format", "{{.Config.Env}} {{.Config.User}}", tag).stdout
        assert "PIP_" not in inspect and "APT_CONFIG" not in inspect and inspect.split()[-1] == "nobody", inspect
        history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", tag).stdout
        assert "181.5" not in history and "/etc/ssl" not in history, history
        export = subprocess.run(f"{' '.join(engine_cli('docker'))} export {sandbox.name} | tar -t", shell=True,
                                capture_output=True, text=True)
        assert export.returncode == 0 and "etc/passwd" in export.stdout
        assert "agentrig-host-settings" not in export.stdout
        if await experimental(engine_cli("docker")):  # squashed: no layer has a copy of them
            saved = tmp_path / "saved.tar"
            assert docker("save", "-o", str(saved), tag).returncode == 0
            with tarfile.open(saved) as outer:
                layers = [m for m in outer.getmembers() if m.name.endswith("layer.tar")]
                names = [n for m in layers for n in tarfile.open(fileobj=outer.extractfile(m)).getnames()]
            assert any(n.endswith("saw-host-pip-settings") for n in names)
            assert not [n for n in names if "agentrig-host-settings" in n or "ca.crt" in n or "pip.conf" in n]
            comment = docker("history", "--no-trunc", "--format", "{{.Comment}}", tag).stdout
            unsquashed = re.search(r"merge (sha256:[0-9a-f]+) to", comment)
            assert unsquashed and docker("image", "inspect", unsquashed.group(1)).returncode != 0, comment
        else:
            await asyncio.sleep(0)
    finally:
        await sandbox.close()
        remove_task_images()
