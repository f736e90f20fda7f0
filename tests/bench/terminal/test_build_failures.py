"""Why a build failed, when the failing step's own output names no host (issue 33: general rules,
checked on Terminal-Bench's aider-polyglot tasks after being written): the same verdict on bwrap
and on podman/docker.

1. a step that fails after an earlier step's fetch could not reach its host and the step went on
   (``curl … | sh``: the pipe's status is sh's) is ``needs_network`` naming that host;
2. a failing step whose command reads as a fetch from a host beyond the registries that this machine
   cannot resolve (``add-apt-repository``, whose traceback names no host) is ``needs_network``
   naming the host; a host that resolves leaves the failure the task's;
3. a build on a stand-in base whose apt cannot find a package the real image's archive has is
   ``base_substituted``, naming the packages and the archive;

and a test that fetches from a host given by its address, in a default (LiveCodeBench-Pro's external
judge: ``os.environ.get("BASE_URL", "http://38.80.122.117:8081")``), names that host.
"""

from __future__ import annotations

import os

import pytest

from agentrig.bench.terminal.sandbox import open_sandbox
from agentrig.bench.terminal.core.base import SandboxError, TaskBuildError

from .podman_support import BASE, base_image  # noqa: F401 - base_image is a fixture
from .sandbox_support import make_task, needs_root_bwrap, settings

# what the real builds printed (aider-polyglot's Dockerfiles on Debian bookworm standing in for jammy)
RUSTUP = "RUN curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
DEADSNAKES = ("RUN apt-get update && apt-get install -y     software-properties-common     && add-apt-repository "
              "ppa:deadsnakes/ppa     && apt-get update     && apt-get install -y     python3.11")
TRACEBACK = """  File "/usr/lib/python3/dist-packages/softwareproperties/ppa.py", line 113, in lpteam
    self._lpteam = self.lp.people(self.teamname)
                   ^^^^^^^^^^^^^^
AttributeError: 'NoneType' object has no attribute 'people'
"""
APT_JAVA = """Fetched 15.8 MB in 3s (6305 kB/s)
Reading package lists...
Reading package lists...
Building dependency tree...
Reading state information...
E: Unable to locate package openjdk-21-jdk
"""


def _podman(*steps: tuple[str, str], status: int) -> str:
    """A podman build's output: each (step, its output), the last one failing with `status`."""
    total = len(steps) + 1
    out = "STEP 1/%d: FROM buildpack-deps:jammy\n" % total
    for n, (step, said) in enumerate(steps, start=2):
        out += f"STEP {n}/{total}: {step}\n{said}"
    return out + f'Error: building at STEP "{steps[-1][0]}": while running runtime: exit status {status}\n'


def test_an_earlier_steps_fetch_that_went_on_is_the_later_failures_cause_on_podman_and_docker():
    from agentrig.bench.terminal.sandbox.container_images import build_error

    out = _podman((RUSTUP, "curl: (6) Could not resolve host: sh.rustup.rs\n"), ('ENV PATH="/root/.cargo/bin:${PATH}"', ""),
                  ("RUN rustc --version && cargo --version", "/bin/sh: 1: rustc: not found\n"), status=127)
    found = build_error("podman", out, "host-settings")
    assert isinstance(found, TaskBuildError) and found.exclusion == "needs_network", found
    assert str(found).startswith("podman build failed: STEP 2/4 went on after a fetch that failed: it could not reach "
                                 "sh.rustup.rs: curl: (6) Could not resolve host: sh.rustup.rs"), str(found)[:300]
    docker = out.replace("STEP ", "Step ").replace("/4: ", "/4 : ").replace(
        'Error: building at STEP "RUN rustc --version && cargo --version": while running runtime: exit status 127',
        "The command '/bin/sh -c rustc --version && cargo --version' returned a non-zero code: 127")
    found = build_error("docker", docker, "host-settings")
    assert isinstance(found, TaskBuildError) and found.exclusion == "needs_network" and "sh.rustup.rs" in str(found)
    # an earlier fetch from a registry this machine reaches: the plumbing's, as for the failing step's own
    mirror = _podman(("RUN apt-get update || true", "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/"
                      "InRelease  Temporary failure resolving 'deb.debian.org'\n"),
                     ("RUN apt-get install -y cmake", "E: Unable to locate package cmake\n"), status=100)
    assert isinstance(build_error("podman", mirror, True), SandboxError)
    # a COPY that fails is not an earlier fetch's doing
    copy = (_podman((RUSTUP, "curl: (6) Could not resolve host: sh.rustup.rs\n"), ("COPY workspace/ ./", ""), status=1)
            .replace("exit status 1", "copier: stat: \"/workspace\": no such file or directory"))
    assert isinstance(found := build_error("podman", copy, True), TaskBuildError) and found.exclusion is None, found
    # no earlier fetch failed: the task's, as before
    own = build_error("podman", _podman(("RUN true", ""), ("RUN rustc --version", "rustc: not found\n"), status=127), True)
    assert isinstance(own, TaskBuildError) and own.exclusion is None


def test_add_apt_repository_reads_as_a_fetch_from_launchpad_or_its_urls_host():
    from agentrig.bench.terminal.core.fetches import fetch_of

    assert fetch_of(["add-apt-repository", "-y", "ppa:deadsnakes/ppa"]).host == "ppa.launchpadcontent.net"
    assert fetch_of(["sudo", "apt-add-repository", "deb http://apt.example.org/ubuntu jammy main"]).host == "apt.example.org"
    assert fetch_of(["add-apt-repository", "--remove", "ppa:deadsnakes/ppa"]) is None
    assert fetch_of(["add-apt-repository", "universe"]) is None  # a component of the archive it has


def test_a_failing_steps_command_names_the_host_it_fetches_only_when_this_machine_cannot_resolve_it():
    from agentrig.bench.terminal.core.buildfail import command_fetch
    from agentrig.bench.terminal.core.netfail import unresolvable
    from agentrig.bench.terminal.sandbox.container_images import build_error

    found = command_fetch("apt-get update && add-apt-repository 'deb http://ppa.unresolvable.invalid/ubuntu jammy main'"
                          " && apt-get install -y python3.11")
    assert found == ("could not reach ppa.unresolvable.invalid: add-apt-repository fetches from ppa.unresolvable.invalid, "
                     "which this machine cannot reach (it cannot resolve ppa.unresolvable.invalid)")
    assert command_fetch("curl -sSf http://192.0.2.1/x.sh | sh && make") is None  # an address resolves: the task's
    assert command_fetch("pip install six && false") is None  # a registry's
    assert command_fetch("cargo build --release") is None  # fetches only maybe: reading cannot decide
    # the real step and output: needs_network naming Launchpad where this machine cannot resolve it
    err = build_error("podman", _podman((DEADSNAKES, TRACEBACK), status=1), "host-settings")
    if unresolvable(["ppa.launchpadcontent.net"]):
        assert isinstance(err, TaskBuildError) and err.exclusion == "needs_network", err
        assert "add-apt-repository fetches from ppa.launchpadcontent.net, which this machine cannot reach" in str(err)
    else:
        assert isinstance(err, TaskBuildError) and err.exclusion is None


def test_a_build_on_a_stand_in_whose_archive_lacks_a_package_names_it_and_the_archive():
    from agentrig.bench.terminal.audit import _archive_lacks

    substituted = "Debian bookworm stands in for Ubuntu 22.04"
    for detail in ("Dockerfile line 13: RUN exited 100:\n" + APT_JAVA,  # bwrap's
                   "podman build failed at STEP 3/9: RUN apt-get install -y openjdk-21-jdk:\n" + APT_JAVA):
        assert _archive_lacks("the build", detail, substituted, "Ubuntu 22.04's") == (
            "the build needs packages the stand-in base's archive does not have (openjdk-21-jdk: Ubuntu 22.04's "
            "archive has them; Debian bookworm stands in for Ubuntu 22.04)")
    assert _archive_lacks("the build", APT_JAVA, "Python 3.11 stands in for 3.12", None) is None  # the same archive
    assert "rustc: not found" not in (_archive_lacks("the build", "rustc: not found", substituted, "x") or "")


def test_a_tests_fetch_from_an_address_given_as_a_default_is_named(tmp_path):
    from agentrig.bench.terminal.audit import _tests_fetch
    from agentrig.bench.terminal.core.netfail import fetched_hosts

    code = ('import os, requests\n\nBASE = os.environ.get("BASE_URL", "http://203.0.113.7:8081")\n'
            'DOCS = "see http://docs.example.org for the judge"\n\n'
            'def test_external_judge():\n    r = requests.get(f"{BASE}/health", timeout=5)\n    r.raise_for_status()\n')
    assert fetched_hosts(code) == ["203.0.113.7"]  # not the prose's host
    assert fetched_hosts(code.replace("requests.get", "helper")) == []  # no line fetches: a URL is only a value
    task = make_task(tmp_path, "FROM python:3.11-slim\n")
    (task.tests_dir / "test_outputs.py").write_text(code)
    output = ("E   requests.exceptions.HTTPError: 404 Client Error: Not Found for url: http://203.0.113.7:8081/health\n"
              "FAILED tests/test_outputs.py::test_external_judge - requests.exceptions.HTTPE...\n")
    assert _tests_fetch(task, True, output) == (
        "tests fetch 203.0.113.7, a host beyond the package registries, which they could not reach (an HTTP error "
        "came back: requests.exceptions.HTTPError: 404 Client Error: Not Found for url: http://203.0.113.7:8081/health)")
    assert _tests_fetch(task, True, "E   AssertionError: wrong answer\n") is None  # the tests' own failure
    assert _tests_fetch(task, False, "") == "tests fetch 203.0.113.7, which they could not reach (the trial had no network)"


FAKE_ADD_APT = """#!/bin/sh
# add-apt-repository as it dies when Launchpad cannot be reached: a traceback naming no host
echo "Traceback (most recent call last):" >&2
echo "AttributeError: 'NoneType' object has no attribute 'people'" >&2
exit 1
"""


async def _build_error(tmp_path, dockerfile: str, task_id: str, **overrides) -> Exception:
    task = make_task(tmp_path, dockerfile, task_id=task_id, files={"add-apt-repository": FAKE_ADD_APT})
    with pytest.raises((TaskBuildError, SandboxError)) as caught:
        sandbox = await open_sandbox(task, settings(tmp_path, root="image", build_network=True, **overrides))
        await sandbox.close()
    return caught.value


@pytest.mark.parametrize("kind", ["podman", "bwrap"])
async def test_both_rules_give_the_same_verdict_on_podman_as_on_bwrap(tmp_path, base_image, kind):
    """Real builds: an earlier step whose fetch could not resolve its host goes on (its pipe's status
    is sh's), a later step fails; a failing add-apt-repository (made to die as the real one does
    here) of a host this machine cannot resolve; the same with a host that resolves (an address):
    the task's."""
    if kind == "bwrap" and os.geteuid() != 0:
        pytest.skip("the bwrap sandbox enters namespaces with setns: needs root (CI runs as root)")
    earlier = (f"FROM {BASE}\nRUN python3 -c \"import urllib.request as u; u.urlopen('https://unresolvable.invalid/x')\" | sh\n"
               "RUN rustc --version\n")
    err = await _build_error(tmp_path, earlier, "earlier-fetch", kind=kind)
    assert isinstance(err, TaskBuildError) and err.exclusion == "needs_network", err
    assert "went on after a fetch that failed: it could not reach unresolvable.invalid" in str(err), str(err)[:400]
    apt = (f"FROM {BASE}\nCOPY add-apt-repository /usr/local/bin/add-apt-repository\n"
           "RUN chmod 755 /usr/local/bin/add-apt-repository\n"
           "RUN add-apt-repository -y 'deb http://{host}/ubuntu jammy main' && apt-get update\n")
    err = await _build_error(tmp_path, apt.replace("{host}", "ppa.unresolvable.invalid"), "add-apt", kind=kind)
    assert isinstance(err, TaskBuildError) and err.exclusion == "needs_network", err
    assert ("it could not reach ppa.unresolvable.invalid: add-apt-repository fetches from ppa.unresolvable.invalid, "
            "which this machine cannot reach") in str(err), str(err)[:400]
    err = await _build_error(tmp_path, apt.replace("{host}", "192.0.2.1"), "add-apt-resolves", kind=kind)
    assert isinstance(err, TaskBuildError) and err.exclusion is None, err


@needs_root_bwrap()
@pytest.mark.slow
async def test_curl_piped_to_sh_that_could_not_resolve_then_a_failing_step_is_needs_network_on_a_stand_in(tmp_path):
    """aider-polyglot's Rust tasks' shape on buildpack-deps:jammy (Debian stands in): the real curl
    cannot resolve the host, sh runs nothing and exits 0, the next step fails with 127 — the build
    needs the network, whether or not the base is substituted."""
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task
    from .test_images import _need_mmdebstrap

    _need_mmdebstrap()
    dockerfile = ("FROM buildpack-deps:jammy\nRUN curl --proto '=https' -sSf https://unresolvable.invalid/x | sh -s -- -y\n"
                  "RUN rustc --version\nWORKDIR /app\n")
    task = load_task(write_task(tmp_path / "tasks", "rustup-shape", dockerfile=dockerfile))
    row = await audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", root="image", build_network="host-settings",
                                                 network=True))
    assert row.status == "excluded" and row.reason.startswith("needs_network: Dockerfile line 3: RUN exited 127: "
                                                              "Dockerfile line 2 went on after a fetch that failed: it "
                                                              "could not reach unresolvable.invalid: curl: (6) Could not "
                                                              "resolve host: unresolvable.invalid"), row.reason


@needs_root_bwrap()
async def test_an_ubuntu_only_package_in_the_build_is_base_substituted_naming_it_and_the_archive(tmp_path, monkeypatch):
    """FROM ubuntu:24.04 on Debian bookworm standing in (no Ubuntu archive set): apt finds no
    ubuntu-pro-client; the stand-in's archive's fault, named, never "the build fails"."""
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task

    monkeypatch.delenv("AGENTRIG_UBUNTU_ARCHIVE", raising=False)
    dockerfile = ("FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends ubuntu-pro-client\n"
                  "WORKDIR /app\n")
    task = load_task(write_task(tmp_path / "tasks", "ubuntu-only-build", dockerfile=dockerfile))
    row = await audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", root="image", build_network="host-settings"))
    assert row.status == "base_substituted", row.reason
    assert row.reason == ("the build needs packages the stand-in base's archive does not have (ubuntu-pro-client: "
                          "Ubuntu 24.04's archive has them; Debian bookworm stands in for Ubuntu 24.04)"), row.reason
