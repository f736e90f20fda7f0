"""The podman sandbox for real: Debian's podman with runc, on a base root built from packages and
imported as the task's FROM image (no registry here). Skipped where podman or mmdebstrap is
missing, except in CI (env CI=true), where missing tools fail the test. The offline tool chain's
test runs on docker too (``container_engine``: docker's own rule, test_sandbox_docker.py's)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentrig.bench.terminal.images import resolve_base
from agentrig.bench.terminal.sandbox import build_plan, open_sandbox, sandbox_check
from agentrig.bench.terminal.sandbox.container_images import import_base, remove_task_images
from agentrig.bench.terminal.sandbox import engine
from agentrig.bench.terminal.sandbox.engine import engine_cli

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.bench.terminal.verifier import verify

from .docker_support import container_engine, docker_base  # noqa: F401 - fixtures
from .podman_support import (  # noqa: F401 - base_image: a fixture
    BASE,
    base_image,
    killed_runner,
    need_podman,
    owned_containers,
    owned_images,
    podman,
    volumes,
)
from .sandbox_support import make_task, settings


def _containers() -> list[str]:
    return owned_containers()


async def test_the_doctor_asks_podman_itself():
    """podman needs no daemon: the doctor reports what `podman info` says (its version and runtime)."""
    need_podman()
    [finding] = await sandbox_check("podman")
    assert finding.ok and finding.check == "engine", finding
    assert "runtime runc" in finding.detail and finding.detail.startswith("podman "), finding.detail


async def test_podman_trial_container_timeout_kills_the_group_and_leaves_nothing(tmp_path, base_image):
    task = make_task(tmp_path, f"FROM {base_image}\nRUN echo built > /built\n")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
    try:
        result = await sandbox.run("cat /built; pwd; python --version; cat /etc/debian_version", 60)
        assert result.output.splitlines()[:2] == ["built", "/app"], result.output
        assert result.output.splitlines()[2].startswith("Python 3"), result.output
        timed = await sandbox.run("(sleep 1000 & sleep 1001) ; sleep 1002", 1)
        assert timed.timed_out
        left = await sandbox.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '", 30)
        assert "sleep 100" not in left.output, left.output  # the whole process group was killed
    finally:
        await sandbox.close()
    assert sandbox.name not in _containers()


async def test_containers_of_a_killed_runner_are_reaped_by_the_next(tmp_path, base_image):
    """A runner killed by SIGKILL leaves its container; the next sandbox start removes it (its owner
    pid is dead), and leaves a live owner's container alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    from agentrig.bench.terminal.sandbox.docker import OWNER_LABEL, _boot_id

    cli = engine_cli("podman")
    for name, owner in (("agentrig-orphan-test", dead.pid), ("agentrig-live-test", os.getpid())):
        subprocess.run([*cli, "run", "-d", "--name", name, "--label", f"{OWNER_LABEL}={owner}@{_boot_id()}",
                        base_image, "sleep", "infinity"], check=True, stdout=subprocess.DEVNULL)
    try:
        task = make_task(tmp_path, f"FROM {base_image}\n")
        engine._REAPED.clear()  # this process may have reaped a moment ago: the next start reaps again
        sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
        await sandbox.close()
        left = _containers()
        assert "agentrig-orphan-test" not in left and "agentrig-live-test" in left
    finally:
        for name in ("agentrig-orphan-test", "agentrig-live-test"):  # one by one: podman 4.3 stops at a missing one
            subprocess.run([*cli, "rm", "-f", "-t", "0", name], capture_output=True)


# ---- base images imported when the pull fails, host settings, teardown, the verifier ---------


async def test_a_base_image_that_cannot_be_pulled_is_imported_from_its_root(tmp_path, base_image):
    """No registry answers here: FROM a TB base tag the engine lacks is our root imported under
    that very name (labelled with its recipe's key, TB's WORKDIR /app), and the task builds on it."""
    ref = f"{BASE}:agentrig-test-{os.getpid()}"
    podman("rmi", ref)
    task = make_task(tmp_path, f"FROM {ref}\nRUN echo on-our-root > /marker\n", task_id="import-probe")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
    try:
        result = await sandbox.run("cat /marker; pwd; cat /etc/debian_version", 60)
        assert result.output.splitlines()[:2] == ["on-our-root", "/app"], result.output
        label = podman("image", "inspect", "--format", '{{index .Labels "agentrig.base"}} {{.Config.WorkingDir}}', ref)
        recipe = resolve_base(ref)
        assert label.stdout.split() == [recipe.key(), "/app"], label.stdout
    finally:
        await sandbox.close()
        remove_task_images()
        podman("rmi", ref)


async def test_a_from_pinned_by_digest_builds_on_the_root_imported_under_its_name(tmp_path, base_image, capsys):
    """FROM name:tag@sha256:… (TB's parallel-particle-simulator) that cannot be pulled: an engine tags
    no image by digest, so the root is imported under name:tag and the build's FROM names that
    (the task's own Dockerfile untouched); a second build finds the import and pulls nothing."""
    from agentrig.bench.terminal.sandbox.container_images import _renamed_froms, qualified

    tag = f"{BASE}:agentrig-digest-{os.getpid()}"
    ref = f"{tag}@sha256:{'ab' * 32}"
    assert qualified(ref) == tag and qualified("ubuntu:24.04@sha256:00") == "docker.io/library/ubuntu:24.04"
    assert _renamed_froms(f"FROM --platform=linux/amd64 {ref} AS a\nRUN x\n", {ref: tag}) == \
        f"FROM --platform=linux/amd64 {tag} AS a\nRUN x\n"
    podman("rmi", tag)
    dockerfile = f"FROM {ref}\nRUN echo pinned > /marker\n"
    task = make_task(tmp_path, dockerfile, task_id="digest-probe")
    try:
        for _ in range(2):
            sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
            try:
                result = await sandbox.run("cat /marker; pwd", 60)
            finally:
                await sandbox.close()
            assert result.output.splitlines()[:2] == ["pinned", "/app"], result.output
            remove_task_images()
        assert capsys.readouterr().err.count("importing base image") == 1  # once, then found under its name
        label = podman("image", "inspect", "--format", '{{index .Labels "agentrig.base"}}', tag)
        assert label.stdout.strip() == resolve_base(ref).key()
        assert (tmp_path / "digest-probe" / "Dockerfile").read_text() == dockerfile
    finally:
        remove_task_images()
        podman("rmi", tag)


async def test_host_package_settings_reach_a_podman_build_and_stay_out_of_the_image(tmp_path, base_image, monkeypatch):
    """build_network = "host-settings": `RUN pip install` of a small pure-Python package builds
    (the host's pip configuration and CA bundle reach the build), and nothing of them is in the
    image: no mount point, no PIP_* in its ENV, no host value in its history or files."""
    monkeypatch.setenv("PIP_TIMEOUT", "181.5")  # a distinctive host PIP_* value
    task = make_task(tmp_path, f"FROM {base_image}\nRUN pip install --no-cache-dir six "
                               "&& if pip config list | grep -q '181[.]5'; then touch /saw-host-pip-settings; fi\n",
                     task_id="pip-probe")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman", build_network="host-settings"))
    try:
        result = await sandbox.run("python -c 'import six; print(six.__version__)'; ls /saw-host-pip-settings; "
                                   "ls -a / /dev; env | grep ^PIP_ || echo no-pip-env", 60)
        assert result.exit_code == 0, result.output
        assert "/saw-host-pip-settings" in result.output and "no-pip-env" in result.output, result.output
        assert "agentrig-host-settings" not in result.output, result.output
        tag = next(t for t in owned_images(os.getpid()) if "pip-probe" in t)
        inspect = podman("image", "inspect", "--format", "{{.Config.Env}}", tag).stdout
        assert "PIP_" not in inspect and "APT_CONFIG" not in inspect, inspect
        history = podman("history", "--no-trunc", "--format", "{{.CreatedBy}}", tag).stdout
        assert "181.5" not in history and "/etc/ssl" not in history, history
        export = subprocess.run(f"{' '.join(engine_cli('podman'))} export {sandbox.name} | tar -t", shell=True,
                                capture_output=True, text=True)
        assert export.returncode == 0 and "etc/passwd" in export.stdout
        assert "agentrig-host-settings" not in export.stdout
    finally:
        await sandbox.close()
        remove_task_images()


async def test_teardown_leaves_nothing_and_what_a_killed_runner_left_is_reaped(tmp_path, base_image):
    """close() removes the container and its anonymous volumes, the runner's exit its task images;
    a runner killed by SIGKILL leaves its container and image, and the next sandbox start removes both."""
    volumes_before = set(volumes())
    task_dir = make_task(tmp_path, f"FROM {base_image}\nVOLUME /data\nRUN echo x > /x\n", task_id="killed-runner").path
    pid = killed_runner(tmp_path, task_dir, tmp_path / "c1",
                        'TerminalTask(id="killed-runner", path=d, format="tb1", instruction="x", '
                        'dockerfile=d / "Dockerfile", tests_dir=d / "tests")')
    assert owned_containers(pid) and owned_images(pid)  # left behind by the kill
    task = make_task(tmp_path, f"FROM {base_image}\nVOLUME /data\n", task_id="next-runner")
    engine._REAPED.clear()  # as a new runner's first start
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
    assert owned_containers(pid) == [] and owned_images(pid) == []  # reaped by the next start
    assert sandbox.name in owned_containers(os.getpid())
    await sandbox.close()
    assert sandbox.name not in owned_containers()
    assert remove_task_images() and owned_images(os.getpid()) == []
    assert set(volumes()) <= volumes_before  # the anonymous /data volumes went with their containers


@pytest.mark.parametrize("solve", [True, False], ids=["oracle", "noop"])
async def test_the_offline_test_tool_chain_runs_in_a_container(tmp_path, container_engine, solve):
    """A built-in task whose run-tests.sh is TB's template (curl, uv from astral.sh — no network
    here): on podman and on docker, the verifier enters the container and runs agentrig's Python on
    the tests, as under bwrap; the solution passes, doing nothing fails, a fake test the agent
    planted is not run."""
    task = next(t for t in load_tasks(builtin_tasks_dir())[0] if t.id == "csv-region-totals")
    import_base(build_plan(task).base, container_engine.kind)
    sandbox = await open_sandbox(task, settings(tmp_path, kind=container_engine.kind))
    try:
        await sandbox.run("mkdir -p /tests && printf 'def test_fake():\\n    pass\\n' > /tests/test_outputs.py", 30)
        if solve:
            await sandbox.copy_in(task.solution_script, "/oracle/solution.sh")
            assert (await sandbox.run("bash /oracle/solution.sh", 120)).exit_code == 0
        if container_engine.kind == "podman":  # docker's verifier binds only as root (test_sandbox_docker)
            assert sandbox.binds_verifier
        result = await verify(sandbox, task, network=False)
    finally:
        await sandbox.close()
        remove_task_images()
    assert result.offline or container_engine.kind == "docker", result
    assert result.failure_mode == ("submitted" if solve else "wrong_output"), result
    assert result.resolved is solve and "test_fake" not in (result.output or "")


def test_images_build_import_names_the_image_as_the_from_line_does(base_image):
    """`agentrig images build --import podman REF`: the root imported under REF (a short name under
    its docker.io/library name, which FROM finds too), once; a wrong engine is a one-line error."""
    from .run_support import agentrig

    ref = f"{BASE}:agentrig-cli-{os.getpid()}"
    try:
        first = agentrig("images", "build", "--import", "podman", ref)
        assert first.returncode == 0, first.stderr
        assert f"(imported into podman as {ref})" in first.stdout and "importing base image" in first.stderr
        fmt = '{{index .Labels "agentrig.base"}} {{.Config.WorkingDir}} {{.Config.Cmd}}'
        assert podman("image", "inspect", "--format", fmt, ref).stdout.split() == [resolve_base(ref).key(), "/app", "[python3]"]
        again = agentrig("images", "build", "--import", "podman", ref)
        assert again.returncode == 0 and "importing" not in again.stderr  # already there, from the same recipe
    finally:
        podman("rmi", ref)
    bad = agentrig("images", "build", "--import", "kubernetes", BASE)
    assert bad.returncode == 1 and bad.stderr.strip() == "error: --import 'kubernetes': the engine is podman or docker"
    from agentrig.bench.terminal.sandbox.container_images import qualified

    assert qualified("ubuntu:24.04") == "docker.io/library/ubuntu:24.04" and qualified(BASE) == BASE
    assert qualified("user/img:1") == "docker.io/user/img:1" and qualified("localhost/x:1") == "localhost/x:1"


async def test_a_failed_build_is_not_retried_by_the_other_trials_of_the_run(tmp_path, base_image):
    """The task's own build fails: broken_task for this trial and, without building again, the next
    (the step prints the time in nanoseconds: a second build would say another)."""
    from agentrig.bench.terminal.sandbox import TaskBuildError

    task = make_task(tmp_path, f"FROM {base_image}\nRUN date +%s%N && exit 3\n", task_id="broken-build")
    messages = []
    for _ in range(2):
        with pytest.raises(TaskBuildError) as caught:
            await open_sandbox(task, settings(tmp_path, kind="podman"))
        assert caught.value.exclusion is None and "exit status 3" in str(caught.value)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert not [t for t in owned_images(os.getpid()) if "broken-build" in t]  # no image of a failed build


def test_images_rm_removes_the_root_and_the_images_imported_from_it(tmp_path, monkeypatch, base_image):
    """`agentrig images rm REF`: the root's directory and every podman image labelled as imported
    from it go; images imported from other roots stay (a root and two images made for the test)."""
    from agentrig.bench.terminal.sandbox.container_images import BASE_LABEL

    monkeypatch.setenv("AGENTRIG_IMAGES_DIR", str(tmp_path / "images"))
    key, other = f"test{os.getpid()}a", f"test{os.getpid()}b"
    root = tmp_path / "images" / key
    (root / "root").mkdir(parents=True)
    (root / "meta.json").write_text(json.dumps({"key": key, "recipe": {"ref": "debian:agentrig-test", "suite": "bookworm"}}))
    (tmp_path / "empty").mkdir()
    made = []
    for label, name in ((key, f"localhost/agentrig-rm-test-a:{os.getpid()}"), (other, f"localhost/agentrig-rm-test-b:{os.getpid()}")):
        tar = subprocess.run(["tar", "-C", str(tmp_path / "empty"), "-c", "."], capture_output=True, check=True).stdout
        subprocess.run([*engine_cli("podman"), "import", "-q", "--change", f"LABEL {BASE_LABEL}={label}", "-", name],
                       input=tar, capture_output=True, check=True)
        made.append(name)
    try:
        from .run_support import agentrig

        listed = agentrig("images", "list")
        assert f"imported into podman as {made[0]}" in listed.stdout, listed.stdout
        done = agentrig("images", "rm", "debian:agentrig-test")
        assert done.returncode == 0, done.stderr
        assert f"removed {key}" in done.stdout and f"removed the podman image {made[0]}" in done.stdout, done.stdout
        assert not root.exists()
        assert podman("image", "exists", made[0]).returncode != 0 and podman("image", "exists", made[1]).returncode == 0
    finally:
        for name in made:
            podman("rmi", name)


async def test_the_audit_frees_a_tasks_images_as_its_audit_ends(tmp_path, base_image):
    # Terminal-Bench's 94 tasks' images held until the audit's exit filled this machine's disk
    # (tens of GB): each task is audited once, so its images go when its audit ends
    from agentrig.bench.terminal.audit import audit_one
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .podman_support import owned_images
    from .run_support import write_task

    write_task(tmp_path / "tasks", "freed", dockerfile=f"FROM {base_image}\nWORKDIR /app\nRUN echo built > /built\n")
    row = await audit_one(load_task(tmp_path / "tasks" / "freed"), settings(tmp_path, kind="podman"), 600)
    assert row.status == "ok", row.reason
    assert not [tag for tag in owned_images(os.getpid()) if "agentrig-task-freed:" in tag]
