"""podman gives a task the verdict bwrap gives it: what a bwrap trial on a built root gets, a podman
trial gets too (real podman with runc, base images imported from roots built from packages; skipped
where podman is missing, failed in CI). Each test is one cause that once made the verdicts differ
on Terminal-Bench's real tasks (docs/terminal.md, "The same tasks on podman")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import open_sandbox
from agentrig.bench.terminal.sandbox.container_images import SETTINGS_MOUNT
from agentrig.bench.terminal.core.hostsettings import CA_BUNDLE
from agentrig.bench.terminal.verifier import verify

from .podman_support import BASE, base_image, podman  # noqa: F401 - base_image is a fixture
from .sandbox_support import built_heredocs, make_task, settings


async def test_a_podman_trial_with_the_network_fetches_with_the_hosts_package_settings(tmp_path, base_image):
    """build_network = "host-settings" and a trial with the network: the trial's commands get the
    host's pip configuration and CA bundle (a solution's `pip install` reaches the registries as the
    build's did, as on bwrap), mounted read-only for this trial only — nothing in the container's
    layer, the files gone after close; a trial without the network gets none of it."""
    task = make_task(tmp_path, f"FROM {base_image}\n", task_id="trial-settings")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman", network=True, build_network="host-settings"))
    try:
        fetched = await sandbox.run("pip download --no-deps --no-cache-dir -d /tmp/dl six && ls /tmp/dl", 240)
        assert fetched.exit_code == 0 and "six-" in fetched.output, fetched.output
        seen = await sandbox.run('echo "$PIP_CERT $SSL_CERT_FILE"; touch /dev/.agentrig-host-settings/x 2>&1 || echo read-only', 30)
        assert seen.output.split()[:2] == [f"{SETTINGS_MOUNT}/ca.crt"] * 2 and "read-only" in seen.output, seen.output
        if os.path.isfile(CA_BUNDLE) and not os.environ.get("PIP_CERT"):
            bundle = await sandbox.run(f"cat {SETTINGS_MOUNT}/ca.crt", 30)
            assert bundle.output.strip() == Path(CA_BUNDLE).read_text().strip()
        settings_dir = sandbox._settings_dir
        assert settings_dir and os.path.isdir(settings_dir)
        diff = podman("diff", sandbox.name)
        assert diff.returncode == 0 and "agentrig-host-settings" not in diff.stdout, diff.stdout
    finally:
        await sandbox.close()
    assert not os.path.exists(settings_dir)
    offline = await open_sandbox(task, settings(tmp_path, kind="podman", network=False, build_network="host-settings"))
    try:
        none = await offline.run(f"env | grep -c '^PIP_\\|SSL_CERT_FILE'; ls {SETTINGS_MOUNT} 2>&1", 30)
        assert none.output.split()[0] == "0" and "No such file" in none.output, none.output
    finally:
        await offline.close()


async def test_a_test_script_with_the_images_own_pip_and_pytest_runs_on_the_images_python(tmp_path, base_image):
    """Terminal-Bench's `pip install pytest` then `pytest` (no uv): in a container with the network
    the script runs as written on the image's Python, so the tests import what the build installed
    there (`RUN pip install six`; agentrig's own Python has no six) — as bwrap plays it on a root
    built for the image (the verifier's pip reaches the registries with the trial's host settings)."""
    run_tests = "#!/bin/bash\npip install pytest\npytest $TEST_DIR/test_outputs.py -rA\n"
    test = "import six\n\n\ndef test_the_build_installed_six():\n    assert six.__file__.startswith('/usr/')\n"
    task = make_task(tmp_path, f"FROM {base_image}\nRUN pip install --no-cache-dir six\n", task_id="image-pip-chain",
                     files={"run-tests.sh": run_tests, "tests/test_outputs.py": test})
    task = task.model_copy(update={"run_tests": task.path / "run-tests.sh", "test_timeout_s": 300.0})
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman", network=True, build_network="host-settings"))
    try:
        result = await verify(sandbox, task, network=True)
    finally:
        await sandbox.close()
    assert result.resolved and result.failure_mode == "submitted", (result.failure_mode, result.output[-1500:])
    assert not result.offline and any("the image's Python" in n for n in result.notes), result.notes
    assert [t.name for t in result.tests] == ["test_the_build_installed_six"]


@pytest.mark.parametrize("kind", ["podman", "bwrap"])
async def test_dockerfile_heredocs_build_the_same_files_on_podman_as_on_bwrap(tmp_path, base_image, kind):
    """BuildKit's heredocs (TB's intrusion-detection writes its logs with `COPY <<EOT /app/logs/…`):
    podman 4.3's builder reads none of them, so agentrig rewrites them for it (containerfile.py);
    the image then holds what bwrap's replay of the same Dockerfile makes — the files, their
    content and modes, the scripts' effects."""
    if kind == "bwrap" and os.geteuid() != 0:
        pytest.skip("the bwrap sandbox enters namespaces with setns: needs root (CI runs as root)")
    await built_heredocs(tmp_path, BASE, kind=kind, root="image")


def test_a_dockerfile_without_heredocs_is_built_as_written(tmp_path):
    from agentrig.bench.terminal.sandbox.containerfile import without_heredocs

    assert without_heredocs("FROM debian:bookworm\nRUN echo $((1<<2)) && cat <<< word\n", tmp_path) is None
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("kind", ["podman", "bwrap"])
def test_the_oracle_submits_once_what_it_typed_ahead_has_run(tmp_path, base_image, kind):
    """A solution.yaml whose last entry is typed with `block: false` and 0.01 s (TB's
    new-encrypt-command): Terminal-Bench's tests spend seconds on their own setup before they read
    anything, agentrig's verifier does not, so the oracle waits for its typed-ahead commands to end
    before it submits — the tests see their result on either sandbox, never a race."""
    if kind == "bwrap" and os.geteuid() != 0:
        pytest.skip("the bwrap sandbox enters namespaces with setns: needs root (CI runs as root)")
    from .run_support import experiment, records, run_json, write_task

    steps = ("- command: sleep 2; echo late > /app/late.txt\n  block: false\n  min_timeout_sec: 0.01\n"
             "- command: cat /app/late.txt >> /app/copy.txt\n  block: false\n  min_timeout_sec: 0.01\n")
    test = ("from pathlib import Path\n\ndef test_late():\n    assert Path('/app/copy.txt').read_text() == 'late\\n'\n")
    tasks = tmp_path / "tasks"
    write_task(tasks, "typed-late", dockerfile=f"FROM {BASE}\nWORKDIR /app\n", solution=None, solution_yaml=steps,
               test=test)
    arms = '[[arms]]\nname = "oracle"\nagent = { kind = "oracle" }\n'
    path = experiment(tmp_path, "typed-late", arms, cache=tmp_path / "cache", tasks=tasks,
                      sandbox=f'kind = "{kind}"\nroot = "image"')
    [rec] = records(run_json(path)["run_dir"])
    assert rec.verdict.reward == 1.0, rec.verdict.reward_info.notes
    [waited] = [e.data for e in rec.trajectory.events if e.kind == "typed_ahead"]
    assert waited["ended"] is True


def test_a_failed_container_build_is_read_at_its_failing_steps_output():
    # podman ends a failed build with "Error: building at STEP "RUN …": …", which names the step
    # without its output: the verdict reads the output under the last "STEP n/m:" header (TB's
    # build-tcc-qemu: its wget of kernel.org, after a long apt-get install, is needs_network)
    from agentrig.bench.terminal.core.base import SandboxError, TaskBuildError
    from agentrig.bench.terminal.sandbox.container_images import build_error

    apt = "STEP 3/9: RUN apt-get install -y qemu-system\n" + "Setting up qemu-system-x86 ...\n" * 200
    wget = ("STEP 4/9: RUN wget https://cdn.kernel.org/pub/linux/kernel/v6.x/linux-6.9.tar.xz\n"
            "Resolving cdn.kernel.org (cdn.kernel.org)... failed: Name or service not known.\n"
            "wget: unable to resolve host address 'cdn.kernel.org'\n"
            'Error: building at STEP "RUN wget https://cdn.kernel.org/pub/linux/kernel/v6.x/linux-6.9.tar.xz": '
            "while running runtime: exit status 4\n")
    found = build_error("podman", apt + wget, "host-settings")
    assert isinstance(found, TaskBuildError) and found.exclusion == "needs_network"
    assert str(found).startswith("podman build failed: it could not reach cdn.kernel.org")
    assert str(found).rstrip().endswith("exit status 4")
    full = build_error("podman", apt + "STEP 4/9: RUN make\nwrite error: No space left on device\n"
                       'Error: building at STEP "RUN make": exit status 2\n', True)
    assert isinstance(full, SandboxError) and "disk is full" in str(full)
    mirror = build_error("podman", apt + "STEP 4/9: RUN apt-get update\nW: Failed to fetch http://deb.debian.org/debian/"
                         "dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'\n"
                         'Error: building at STEP "RUN apt-get update": exit status 100\n', True)
    assert isinstance(mirror, SandboxError) and "deb.debian.org" in str(mirror)
    quiet = build_error("podman", apt + "STEP 4/9: RUN wget -q https://dl-cdn.alpinelinux.org/alpine/x.iso -O /app/a.iso\n"
                        'Error: building at STEP "RUN wget -q https://dl-cdn.alpinelinux.org/alpine/x.iso -O /app/a.iso": '
                        "while running runtime: exit status 4\n", True)  # TB's qemu-startup: a quiet wget says only its status
    assert isinstance(quiet, TaskBuildError) and quiet.exclusion == "needs_network"
    assert "could not reach dl-cdn.alpinelinux.org: wget exited 4" in str(quiet)
    own = build_error("podman", apt + 'STEP 4/9: RUN exit 3\nError: building at STEP "RUN exit 3": exit status 3\n', True)
    assert isinstance(own, TaskBuildError) and own.exclusion is None
    assert str(own).startswith("podman build failed at STEP 4/9: RUN exit 3:\n")  # the audit's line names the step


def test_a_failures_detail_keeps_its_first_line_and_its_end():
    from agentrig.bench.terminal.episode import clip_detail

    detail = "podman build failed: it could not reach x\n" + "Setting up y ...\n" * 300 + "Error: exit status 4"
    clipped = clip_detail(detail)
    assert len(clipped) <= 1000 and clipped.startswith("podman build failed: it could not reach x\n…\n")
    assert clipped.endswith("Error: exit status 4") and clip_detail("short") == "short"


def test_the_images_a_copy_from_names_are_found_apart_from_the_files_own_stages():
    # TB's conda-env-conflict-resolution copies /opt/conda from a Miniconda image; podman 4.3's
    # builder pulls no such image itself ("no stage or image found with that name"): agentrig pulls
    # it first, and one that cannot be pulled is needs_network naming it, as a FROM is
    from agentrig.bench.terminal.sandbox.container_images import copy_from_images

    text = ("FROM golang:1.22 AS build\nRUN go build -o /x .\nFROM ghcr.io/laude-institute/t-bench/python-3-13\n"
            "COPY --from=build /x /usr/local/bin/x\nCOPY --from=0 /x /y\n"
            "COPY --chown=root --from=continuumio/miniconda3:25.1.1-2 /opt/conda /opt/conda\n"
            "COPY --from=${BASE} /a /b\ncopy --from=\"busybox:1.36\" /bin/sh /sh\n")
    assert copy_from_images(text) == ["continuumio/miniconda3:25.1.1-2", "busybox:1.36"]

