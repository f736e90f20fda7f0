"""Base roots built from packages (real mmdebstrap) and bwrap trials on them (real bwrap)."""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.bench.terminal.images import ensure_base_root, resolve_base
from agentrig.cli import app

from .sandbox_support import make_task, needs_root_bwrap, opened, settings

TB_PYTHON = "ghcr.io/laude-institute/t-bench/python-3-13"


def test_recipes_for_the_bases_tasks_use_say_what_they_substitute():
    tb = resolve_base(TB_PYTHON)
    assert tb is not None and tb.workdir == "/app" and tb.python and "tmux" in tb.packages
    # TB's python-3-13 is python:3.13-slim-bookworm: bookworm's tools, its Python 3.11 standing in
    assert tb.suite == "bookworm" and tb.env["PYTHON_VERSION"] == "3.11" and "asciinema" in tb.packages
    assert tb.substituted == ("Python 3.11 (Debian bookworm's) stands in for Python 3.13; "
                              "no setuptools or wheel, as in the Python 3.13 image")  # decided by the tag's Python
    assert "WORKDIR /app" in tb.image_changes() and 'ENV LANG="C.UTF-8"' in tb.image_changes()
    ubuntu = resolve_base("ubuntu:24.04")
    assert ubuntu is not None and "Ubuntu" in (ubuntu.substituted or "")
    assert resolve_base("python:3.11-slim-bookworm").substituted is None
    assert resolve_base("python:3.11-slim").key() == resolve_base("python:3.11-slim-bookworm").key()
    assert resolve_base("debian:bookworm-slim").suite == "bookworm"
    assert resolve_base("alpine:3.19") is None and resolve_base("nvidia/cuda:12") is None


def test_a_python_image_keeps_its_suite_unless_its_python_is_newer_than_the_images():
    from agentrig.bench.terminal.images.recipes import python_suite

    # the image's suite keeps its tools (openssl's output …); an older Python than the image's stands in
    assert python_suite("3.13", "bookworm") == "bookworm" and python_suite("3.12", None) == "bookworm"
    assert python_suite("3.13", "trixie") == "trixie" and python_suite("3.11", None) == "bookworm"
    # a tag naming no suite gets the suite whose Python is the image's, where one has it
    assert python_suite("3.13", None) == "trixie" and python_suite("3.9", None) == "bullseye"
    # a newer Python than the image's: the nearest suite (old pins have no wheels for a newer Python)
    assert python_suite("3.9", "bookworm") == "bullseye" and python_suite("3.8", "bookworm") == "bullseye"
    assert python_suite("3.10", "bookworm") == "bookworm" and python_suite("3.10", "trixie") == "bookworm"  # a tie keeps the suite
    assert python_suite("3.13", "buster") is None
    old = resolve_base("python:3.8-slim-bookworm")
    assert old.suite == "bullseye" and old.substituted == ("Python 3.9 (Debian bullseye's) stands in for Python 3.8; "
                                                           "Debian bullseye stands in for Debian bookworm (its Python is nearer)")
    assert resolve_base("python:3.9-slim-bookworm").substituted == \
        "Debian bullseye stands in for Debian bookworm (its Python 3.9 is the image's)"
    assert resolve_base("python:3.10-slim").substituted == "Python 3.11 (Debian bookworm's) stands in for Python 3.10"
    assert resolve_base("python:3.13-slim-trixie").substituted is None and resolve_base("python:3.13-slim-trixie").suite == "trixie"
    assert resolve_base("python:3.11-slim").key() == resolve_base("python:3.11-slim-bookworm").key()
    exact = resolve_base("python:3.13-slim")
    assert exact.suite == "trixie" and exact.substituted is None and exact.key() == resolve_base("python:3.13-slim-trixie").key()
    assert resolve_base("python:3").suite == "trixie" and resolve_base("python:3-slim").packages == exact.packages


def test_the_python_layout_enters_only_python_recipes_keys():
    # roots built before the layout existed (ubuntu, debian) keep their cache keys; python ones rebuild
    from agentrig.bench.terminal.images.recipes import BaseRecipe

    ubuntu = resolve_base("ubuntu:24.04")
    assert ubuntu.python_layout is None and "python_layout" not in ubuntu.model_dump(exclude_none=True)
    bare = BaseRecipe(**ubuntu.model_dump(exclude={"python_layout"}))
    assert bare.key() == ubuntu.key()
    python = resolve_base("python:3.11-slim")
    assert python.python_layout and python.key() != python.model_copy(update={"python_layout": None}).key()


def test_a_stand_in_python_answers_to_the_real_images_version_paths(tmp_path):
    # TB's broken-python removes pip from /usr/local/lib/python3.13/site-packages: on the 3.11
    # stand-in that path leads to the environment's own, so the step breaks what it meant to break
    from agentrig.bench.terminal.images.builder import _python_layout

    tb = resolve_base(TB_PYTHON)
    assert tb.python_alias == "3.13" and tb.archive is None  # bookworm is the real image's suite
    exact = resolve_base("python:3.11-slim")
    assert exact.python_alias is None and "python_alias" not in exact.model_dump(exclude_none=True)
    assert resolve_base("python:3.8-slim-bookworm").archive == "Debian bookworm's"
    assert resolve_base("ubuntu:22.04").archive == "Ubuntu 22.04's"
    (tmp_path / "usr/local/lib/python3.11/site-packages/pip").mkdir(parents=True)
    (tmp_path / "usr/local/bin").mkdir(parents=True)
    for name in ("python3", "pip3"):
        (tmp_path / "usr/local/bin" / name).write_text("")
    _python_layout(tmp_path, "3.13")
    _python_layout(tmp_path, "3.13")  # twice: nothing changes, nothing fails
    assert os.readlink(tmp_path / "usr/local/lib/python3.13") == "python3.11"
    assert (tmp_path / "usr/local/lib/python3.13/site-packages/pip").is_dir()
    assert os.readlink(tmp_path / "usr/local/bin/python3.13") == "python3"
    assert os.readlink(tmp_path / "usr/local/bin/pip3.13") == "pip3"


def test_the_python_environment_at_usr_local_gets_the_official_names(tmp_path):
    from agentrig.bench.terminal.images.builder import _python_layout

    local = tmp_path / "usr/local/bin"
    local.mkdir(parents=True)
    (local / "python3").write_text("")
    for name in ("activate", "activate.fish", "Activate.ps1", "pip"):
        (local / name).write_text("")
    _python_layout(tmp_path)
    _python_layout(tmp_path)  # twice: nothing changes, nothing fails
    assert os.readlink(local / "python") == "python3"
    assert sorted(p.name for p in local.iterdir()) == ["pip", "python", "python3"]


def test_a_failed_build_on_a_stand_in_base_is_base_substituted_with_its_line():
    from agentrig.bench.terminal.availability import build_failure
    from agentrig.bench.terminal.core.base import TaskBuildError

    exc = TaskBuildError("Dockerfile line 10: RUN exited 1:\n" + "x" * 2000 + "\nerror: the last words")
    reason = build_failure(exc, resolve_base("python:3.8-slim-bookworm"))
    assert reason.startswith("base_substituted: the build fails on the stand-in base (Python 3.9 (Debian bullseye's) "
                             "stands in for Python 3.8; ")
    assert "Dockerfile line 10: RUN exited 1" in reason and reason.endswith("error: the last words") and len(reason) < 900
    assert build_failure(exc, resolve_base("python:3.11-slim")).startswith("broken_task: Dockerfile line 10")
    assert build_failure(exc).startswith("broken_task: Dockerfile line 10")
    offline = TaskBuildError("Dockerfile line 3: RUN exited 6: it could not reach example.org", exclusion="needs_network")
    assert build_failure(offline, resolve_base("python:3.8")).startswith("needs_network: Dockerfile line 3")


@pytest.mark.slow
def test_tbs_ubuntu_root_has_what_its_apt_get_install_pulls_in_with_recommends():
    # TB's ubuntu-24-04 is `apt-get install -y tmux asciinema` on ubuntu:24.04: with Recommends
    # (python3's bring ca-certificates, hence openssl — a solution decrypts its files with it);
    # mmdebstrap installs none unless told, and the option is not left in the root's apt settings
    _need_mmdebstrap()
    recipe = resolve_base("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")
    assert recipe is not None and recipe.recommends
    assert not resolve_base(TB_PYTHON).recommends
    assert recipe.model_copy(update={"recommends": False}).key() != recipe.key()  # another tree, another root
    root = ensure_base_root(recipe)  # cached across sessions in images_dir()
    assert (root / "usr/bin/openssl").is_file() and (root / "etc/ssl/certs/ca-certificates.crt").is_file()
    assert (root / "usr/bin/tmux").is_file() and (root / "app").is_dir()
    assert not (root / "etc/apt/apt.conf.d/99mmdebstrap").exists()


def test_images_build_rejects_an_unknown_base_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTRIG_IMAGES_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["images", "build", "alpine:3.19"])
    assert result.exit_code == 1 and "no recipe" in result.output and "Traceback" not in result.output
    listed = CliRunner().invoke(app, ["images", "list"])
    assert listed.exit_code == 0 and "no base images" in listed.output


def _need_mmdebstrap() -> None:
    if shutil.which("mmdebstrap") is None:
        if os.environ.get("CI") == "true" or os.environ.get("AGENTRIG_REQUIRE_MMDEBSTRAP") == "1":
            pytest.fail("mmdebstrap is missing: .ci/run / make system-deps install it")
        pytest.skip("mmdebstrap is not installed")


@pytest.fixture(scope="session")
def tb_root() -> Path:
    _need_mmdebstrap()
    return ensure_base_root(resolve_base(TB_PYTHON))  # cached across sessions in images_dir()


def test_setuptools_and_wheel_follow_the_tags_python_not_the_stand_ins():
    assert resolve_base("python:3.11-slim").python_packages == ["setuptools", "wheel"]
    assert resolve_base("python:3.10").python_packages == ["setuptools", "wheel"]  # 3.11 stands in: same answer
    assert "python3-wheel-whl" in resolve_base("python:3.11-slim").packages
    # bullseye's setuptools wheel imports pkg_resources, which Debian ships as a wheel of its own
    assert resolve_base("python:3.9.19-slim").python_packages == ["setuptools", "pkg_resources", "wheel"]
    for ref in ("python:3.12-slim", "python:3.13-slim", "python:3", TB_PYTHON):
        assert resolve_base(ref).python_packages == [], ref
    assert resolve_base("python:3.12-slim").substituted.endswith("no setuptools or wheel, as in the Python 3.12 image")


@needs_root_bwrap()
@pytest.mark.slow
async def test_the_python_images_before_3_12_have_setuptools_and_wheel_and_later_ones_none(tmp_path):
    # the official images install them beside pip up to 3.11 (`pip install pycbc` builds with setuptools);
    # decided by the tag's Python: python:3.13-slim-bookworm has none though bookworm's 3.11 stands in
    _need_mmdebstrap()
    probe = "python -c 'import setuptools, wheel; print(\"have\", setuptools.__version__, wheel.__version__)' 2>&1 | tail -1"
    seen = {}
    for ref in ("python:3.11-slim", "python:3.13-slim-bookworm"):
        task = make_task(tmp_path, f"FROM {ref}\n", task_id=ref.replace(":", "-"))
        sandbox = await opened(task, tmp_path, root="image")
        try:
            seen[ref] = (await sandbox.run(probe, 60)).output
        finally:
            await sandbox.close()
    assert seen["python:3.11-slim"].startswith("have "), seen
    assert "No module named 'setuptools'" in seen["python:3.13-slim-bookworm"], seen


@pytest.fixture()
def planted() -> Iterator[Path]:
    """A file planted in the host's /etc for the test's length: a task must never see it."""
    path = Path("/etc") / f"agentrig-planted-{uuid.uuid4().hex[:8]}"
    path.write_text("host secret\n")
    yield path
    path.unlink()


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trial_sees_the_built_root_not_the_hosts(tmp_path, tb_root, planted):
    # the real image's python3.13 paths lead to the stand-in's Python: a step removing pip there removes it
    task = make_task(tmp_path, f"FROM {TB_PYTHON}\nRUN rm -rf /usr/local/lib/python3.13/site-packages/pip\n")
    sandbox = await opened(task, tmp_path, root="image")
    try:
        seen = await sandbox.run(f"cat {planted}; ls /work 2>&1; python --version; pwd; which tmux asciinema; "
                                 "python3.13 -c 'import sys; print(\"prefix\", sys.prefix)'; "
                                 "python -c 'import pip' 2>&1 | tail -1", 60)
    finally:
        await sandbox.close()
    assert "host secret" not in seen.output
    assert "No such file" in seen.output  # neither the planted file nor the host's /work
    assert "Python 3." in seen.output and "/app\n" in seen.output and "/usr/bin/tmux" in seen.output
    assert "prefix /usr/local\n" in seen.output and "No module named 'pip'" in seen.output


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_task_build_on_the_root_copies_into_app_pip_installs_and_ignores_the_hosts_dpkg_lock(tmp_path, tb_root):
    # an apt-get that reinstalls the interpreter's stdlib (as an upgrade does) leaves pip installing;
    # pip upgrades what it installed (its own RECORD), as in the official image
    dockerfile = (f"FROM {TB_PYTHON}\nCOPY data.txt .\n"
                  "RUN apt-get update && apt-get install -y --no-install-recommends jq\n"
                  "RUN apt-get install -y --reinstall \"$(dpkg -S /usr/lib/python3.*/os.py | cut -d: -f1)\"\n"
                  "RUN pip install --no-cache-dir --upgrade pip six\n")
    task = make_task(tmp_path, dockerfile, files={"data.txt": "payload\n"}, task_id=f"img-{uuid.uuid4().hex[:6]}")
    locks = []
    try:
        for name in ("/var/lib/dpkg/lock", "/var/lib/dpkg/lock-frontend"):
            fd = os.open(name, os.O_CREAT | os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locks.append(fd)
        sandbox = await opened(task, tmp_path, root="image", build_network="host-settings")
    finally:
        for fd in locks:
            os.close(fd)
    try:
        result = await sandbox.run("cat /app/data.txt; python -c 'import six; print(six.__file__)'; jq --version;"
                                   " ls /.agentrig-host-settings 2>&1; which python pip;"
                                   " python -c 'import sys; print(\"prefix\", sys.prefix)'; asciinema --version", 60)
    finally:
        await sandbox.close()
    assert "payload" in result.output and "jq-" in result.output
    # the official image's layout: python and pip in /usr/local/bin, pip installs into its site-packages
    assert "/usr/local/bin/python\n/usr/local/bin/pip\n" in result.output and "prefix /usr/local\n" in result.output
    assert "/usr/local/lib/python3." in result.output and "/site-packages/six.py" in result.output
    assert "asciinema " in result.output  # Debian's Python program keeps its own libraries
    assert "No such file" in result.output  # the host's pip settings were not kept in the layer


def test_tasks_show_names_the_image_and_what_stands_in_for_it(tmp_path):
    from .run_support import agentrig, write_task

    write_task(tmp_path / "tasks", "tb-python", dockerfile=f"FROM {TB_PYTHON}\nCOPY x.txt .\n", files={"x.txt": "x"})
    proc = agentrig("tasks", "show", "--bench", "terminal", "--tasks", tmp_path / "tasks", "tb-python")
    assert proc.returncode == 0, proc.stderr
    assert f"image: {TB_PYTHON}" in proc.stdout and "Python 3.11 (Debian bookworm's) stands in for Python 3.13" in proc.stdout
    builtin = agentrig("tasks", "show", "--bench", "terminal", "shell-session-state")
    assert builtin.returncode == 0 and "Debian bookworm stands in for Ubuntu 24.04" in builtin.stdout


@needs_root_bwrap()
@pytest.mark.slow
async def test_the_verifier_judges_a_task_on_the_built_root(tmp_path, tb_root):
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task

    task = load_task(write_task(tmp_path / "tasks", "on-image", dockerfile=f"FROM {TB_PYTHON}\n"))
    row = await audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", root="image"))
    assert row.status == "ok", row.reason  # the oracle passes, doing nothing fails: verifier and workdir work
    listed = CliRunner().invoke(app, ["images", "list"])
    assert listed.exit_code == 0 and resolve_base(TB_PYTHON).key() in listed.output


@pytest.mark.slow
def test_two_builds_of_one_recipe_at_once_build_it_once_and_rm_removes_it(tmp_path):
    import threading

    _need_mmdebstrap()
    from agentrig.bench.terminal.images import list_roots, remove_roots

    recipe = resolve_base("debian:bookworm-slim")
    said: list[str] = []
    roots: list[Path] = []

    def build() -> None:
        roots.append(ensure_base_root(recipe, said.append, cache=tmp_path))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(roots) == 2 and roots[0] == roots[1] and (roots[0] / "etc/debian_version").is_file()
    assert sum(m.startswith("building") for m in said) == 1
    assert not list(tmp_path.glob(".build-*"))  # built in a temp dir, renamed into place
    assert [m["key"] for m in list_roots(tmp_path)] == [recipe.key()]
    assert remove_roots("debian:bookworm-slim", tmp_path) == [recipe.key()] and list_roots(tmp_path) == []


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trial_with_the_network_fetches_through_the_hosts_package_index_settings(tmp_path, tb_root):
    # build_network = "host-settings" and a trial with the network (an agent that runs `pip install`,
    # as Terminal-Bench's containers have the network): the trial gets the host's pip configuration
    # and CA bundle as the build does; a trial without the network gets nothing of them
    task = make_task(tmp_path, f"FROM {TB_PYTHON}\n", task_id=f"net-{uuid.uuid4().hex[:6]}")
    online = await opened(task, tmp_path, root="image", build_network="host-settings", network=True)
    try:
        fetched = await online.run("pip download --no-deps --no-cache-dir -q six -d /tmp/wheels && ls /tmp/wheels;"
                                   " echo \"ca=$SSL_CERT_FILE\"", 180)
    finally:
        await online.close()
    assert fetched.exit_code == 0, fetched.output
    assert "six-" in fetched.output and "ca=/.agentrig-host-settings/ca.crt" in fetched.output
    offline = await opened(task, tmp_path, root="image", build_network="host-settings", network=False)
    try:
        seen = await offline.run("echo \"ca=$SSL_CERT_FILE\"; ls /.agentrig-host-settings 2>&1", 60)
    finally:
        await offline.close()
    assert "ca=\n" in seen.output and "No such file" in seen.output


@needs_root_bwrap()
@pytest.mark.slow
async def test_the_runs_build_check_builds_on_the_image_root_not_the_hosts(tmp_path, tb_root, planted):
    # `agentrig run` builds the selected tasks' layers before playing (build_check): with root = "image"
    # that build is the trials' own, over the built root — never a build over the host's root
    from agentrig.bench.terminal.availability import build_check
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task

    ok = load_task(write_task(tmp_path / "tasks", "sees-image", dockerfile=(
        f"FROM {TB_PYTHON}\nRUN test ! -e {planted} && test -f /usr/local/pyvenv.cfg\n")))
    failing = load_task(write_task(tmp_path / "tasks", "fails", dockerfile=f"FROM {TB_PYTHON}\nRUN echo boom; exit 3\n"))
    found = await build_check([ok, failing], settings(tmp_path, root="image"))
    assert list(found) == ["fails"]
    assert found["fails"].startswith("base_substituted: the build fails on the stand-in base (Python 3.11 (Debian "
                                     "bookworm's) stands in for Python 3.13; no setuptools or wheel, as in the Python 3.13 image): "
                                         "Dockerfile line 2: RUN exited 3")


UBUNTU_ARCHIVE = "http://archive.ubuntu.com/ubuntu"


def test_with_ubuntus_archive_set_ubuntu_bases_are_the_real_release_unset_debian_stands_in(monkeypatch):
    from agentrig.bench.terminal.images.ubuntu import ubuntu_sources

    monkeypatch.delenv("AGENTRIG_UBUNTU_ARCHIVE", raising=False)
    stand_in = resolve_base("ubuntu:22.04")
    assert stand_in.distro is None and stand_in.substituted == "Debian bookworm stands in for Ubuntu 22.04"
    monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", UBUNTU_ARCHIVE + "/")
    jammy = resolve_base("ubuntu:22.04")
    assert (jammy.distro, jammy.suite, jammy.mirror) == ("ubuntu", "jammy", UBUNTU_ARCHIVE)
    assert jammy.substituted is None and jammy.archive is None and jammy.key() != stand_in.key()
    tb = resolve_base("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")
    assert (tb.suite, tb.packages, tb.recommends, tb.workdir, tb.substituted) == ("noble", ["tmux", "asciinema"], True,
                                                                                  "/app", None)
    assert resolve_base("ubuntu:noble").suite == "noble"
    assert resolve_base("ubuntu:latest").distro is None  # its release moves: Debian stands in, said so
    assert resolve_base(TB_PYTHON).distro is None  # python images are Debian's, as the real ones
    assert ubuntu_sources(jammy) == [
        f"deb {UBUNTU_ARCHIVE} jammy main restricted universe multiverse",
        f"deb {UBUNTU_ARCHIVE} jammy-updates main restricted universe multiverse",
        f"deb {UBUNTU_ARCHIVE} jammy-backports main restricted universe multiverse",
        "deb http://security.ubuntu.com/ubuntu jammy-security main restricted universe multiverse"]
    mirrored = jammy.model_copy(update={"mirror": "http://mirror.example/ubuntu"})
    assert ubuntu_sources(mirrored)[-1] == "deb http://mirror.example/ubuntu jammy-security main restricted universe multiverse"


def _need_ubuntu_archive() -> None:
    import urllib.request

    try:
        urllib.request.urlopen(f"{UBUNTU_ARCHIVE}/dists/noble/InRelease", timeout=15).close()
    except OSError as exc:
        pytest.skip(f"Ubuntu's archive is not reachable from this machine ({exc}): Debian stands in for Ubuntu")


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_trial_on_tbs_ubuntu_image_built_from_ubuntus_archive_is_ubuntu(tmp_path, monkeypatch):
    # the real release: Ubuntu's os-release, its python3.12 refusing pip (PEP 668, as in the real
    # image), the user 'ubuntu' of the official image, TB's tmux and /app; nothing of the host's
    _need_mmdebstrap()
    _need_ubuntu_archive()
    monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", UBUNTU_ARCHIVE)
    task = make_task(tmp_path, "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04\n"
                               "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends jq >/dev/null\n")
    sandbox = await opened(task, tmp_path, root="image", build_network="host-settings")
    try:
        seen = await sandbox.run(". /etc/os-release; echo \"$NAME $VERSION_ID\"; pwd; id -u ubuntu; which tmux jq; "
                                 "ls /usr/lib/python3*/EXTERNALLY-MANAGED", 60)
    finally:
        await sandbox.close()
    assert "Ubuntu 24.04\n/app\n1000\n/usr/bin/tmux\n/usr/bin/jq\n" in seen.output, seen.output
    assert "/usr/lib/python3.12/EXTERNALLY-MANAGED" in seen.output


@pytest.mark.slow
def test_an_ubuntu_archive_that_cannot_be_reached_fails_the_build_naming_it_and_the_way_out(tmp_path, monkeypatch):
    from agentrig.bench.terminal.core.base import SandboxError

    _need_mmdebstrap()
    monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", "http://agentrig-unreachable.invalid/ubuntu")
    recipe = resolve_base("ubuntu:24.04")
    with pytest.raises(SandboxError) as info:
        ensure_base_root(recipe, cache=tmp_path)
    message = str(info.value)
    assert "building base image ubuntu:24.04 failed" in message or "Ubuntu's archive key" in message
    assert "unset" in message and "Debian stand in" in message
    assert not list(tmp_path.glob(".build-*")) and not list(tmp_path.glob(f"{recipe.key()}/meta.json"))
