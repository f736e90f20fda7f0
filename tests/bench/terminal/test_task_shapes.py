"""Shapes real Terminal-Bench tasks have that no sandbox here can honour, told before the run:

- a compose file with services beside the agent's (a database, an API, a mock server) is
  ``needs_services``, naming each service and what it runs — on every sandbox kind, since none
  starts them; Terminal-Bench's one-service template stays runnable;
- files kept in Git LFS that the copy lacks (pointer files instead of the content) are
  ``missing_files``, naming them; so is a Dockerfile COPY/ADD of a file the task's folder lacks
  (TB2's pytorch-model-recovery: ``COPY weights.pt``), decided before any build, globs and
  directories as Docker resolves them.

Each on a small task made here (tmp_path), read by the real loader, checked by ``task_support``
(what ``tasks list``, ``run`` and ``audit`` use) and by the audit, which plays nothing for them.
"""

from __future__ import annotations

import asyncio
import json
import textwrap

from agentrig.bench.terminal.audit import audit_task
from agentrig.bench.terminal.availability import task_support
from agentrig.bench.terminal.core.base import SANDBOX_KINDS, SandboxSettings
from agentrig.bench.terminal.tasks.taskfile import load_task

from .run_support import agentrig, write_task
from .test_dockerfile import TEMPLATE_COMPOSE

TEMPLATE = TEMPLATE_COMPOSE  # Terminal-Bench's one-service template

WITH_SERVICES = TEMPLATE + textwrap.indent(textwrap.dedent("""\
    api:
      build: ./api
    db:
      image: postgres:15
      environment:
        POSTGRES_PASSWORD: x
    """), "  ")

POINTER = ("version https://git-lfs.github.com/spec/v1\n"
           "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")


def test_a_compose_file_with_services_beside_the_agents_is_needs_services(tmp_path):
    template = load_task(write_task(tmp_path, "template", files={"docker-compose.yaml": TEMPLATE}))
    services = load_task(write_task(tmp_path, "services", files={"docker-compose.yaml": WITH_SERVICES}))
    for kind in SANDBOX_KINDS:
        assert task_support(template, kind).ok, kind
        found = task_support(services, kind)
        assert not found.ok and found.exclusion == "needs_services", (kind, found.reason)
        assert "2 service(s) beside the agent's 'client'" in found.reason
        assert "api (builds ./api)" in found.reason and "db (image postgres:15)" in found.reason


def test_git_lfs_pointers_instead_of_files_are_missing_files(tmp_path):
    task_dir = write_task(tmp_path, "lfs", files={"weights.pt": POINTER, "notes.txt": "a real file\n"})
    (task_dir / "tests" / "expected.bin").write_text(POINTER)
    task = load_task(task_dir)
    for kind in SANDBOX_KINDS:
        found = task_support(task, kind)
        assert not found.ok and found.exclusion == "missing_files", (kind, found.reason)
        assert "tests/expected.bin, weights.pt are Git LFS pointers" in found.reason
        assert "notes.txt" not in found.reason
    whole = load_task(write_task(tmp_path, "whole", files={"weights.pt": "version 2 of the weights\n"}))
    assert task_support(whole, "bwrap").ok


def test_a_copy_of_a_file_the_build_context_lacks_is_missing_files_on_every_kind(tmp_path):
    base = "FROM python:3.11-slim\nWORKDIR /app\n"
    missing = load_task(write_task(tmp_path, "missing", dockerfile=base + "COPY . .\nCOPY model.py ./\nCOPY weights.pt /app/\n",
                                   files={"model.py": "x = 1\n"}))
    unmatched = load_task(write_task(tmp_path, "glob", dockerfile=base + "ARG DATA=data\nCOPY ${DATA}/*.csv /app/data/\n"))
    (tmp_path / "glob" / "data").mkdir()
    (tmp_path / "glob" / "data" / "notes.txt").write_text("not a csv\n")
    for kind in SANDBOX_KINDS:
        found = task_support(missing, kind)
        assert not found.ok and found.exclusion == "missing_files", (kind, found.reason)
        assert found.reason == "missing_files: Dockerfile line 5: COPY weights.pt: no such file in the build context"
        found = task_support(unmatched, kind)  # a glob that matches nothing fails, as in Docker
        assert found.reason == "missing_files: Dockerfile line 4: COPY data/*.csv: no such file in the build context"
    # present files, a directory, a matching glob, `COPY . .`, a URL, another stage's files, a heredoc: all fine
    present = write_task(tmp_path, "present", dockerfile=(
        "FROM python:3.11-slim AS build\nRUN mkdir /out && echo hi > /out/x\nFROM python:3.11-slim\nWORKDIR /app\n"
        "COPY . .\nCOPY [\"model.py\", \"data/\", \"/app/\"]\nADD data/*.csv /app/\nCOPY --from=build /out /out\n"
        "ADD https://example.com/x.tgz /x\nCOPY <<EOF /app/made.txt\nmade\nEOF\n"), files={"model.py": "x = 1\n"})
    (present / "data").mkdir()
    (present / "data" / "a.csv").write_text("1\n")
    assert task_support(load_task(present), "podman").ok


def test_tasks_list_and_the_audit_name_the_cause(tmp_path):
    write_task(tmp_path, "services", files={"docker-compose.yaml": WITH_SERVICES})
    write_task(tmp_path, "lfs", files={"data.csv": POINTER})
    write_task(tmp_path, "copy", dockerfile="FROM python:3.11-slim\nCOPY weights.pt /app/\n")
    proc = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {t["id"]: t["sandboxes"]["bwrap"] for t in json.loads(proc.stdout)["tasks"]}
    assert rows["services"]["reason"].startswith("needs_services: docker-compose.yaml runs 2 service(s)")
    assert rows["lfs"]["reason"].startswith("missing_files: data.csv is a Git LFS pointer")
    copy = "missing_files: Dockerfile line 2: COPY weights.pt: no such file in the build context"
    assert rows["copy"]["reason"] == copy
    settings = SandboxSettings(cache_dir=tmp_path / "cache")
    for task_id, cause in (("services", "needs_services"), ("lfs", "missing_files"), ("copy", copy)):
        row = asyncio.run(audit_task(load_task(tmp_path / task_id), settings))
        assert row.status == "excluded" and row.reason.startswith(cause) and row.oracle is None


def test_a_fetch_that_cannot_reach_its_host_is_needs_network_naming_it(tmp_path):
    # the build had the network (build_network = true) but its host cannot be reached from here:
    # needs_network naming the host and curl's own line, not a broken task nor the base's fault
    from agentrig.bench.terminal.core.netfail import network_failure

    # on TB's python image (Ubuntu's has no curl, as the real one has none): Python's own fetch
    def fetch(url: str, out: str) -> str:
        return f"python3 -c \"import urllib.request as u; u.urlretrieve('{url}', '{out}')\""

    python = "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n"
    write_task(tmp_path, "fetch", dockerfile=python + "RUN " + fetch("https://files.unreachable.invalid/data.tar", "/app/data.tar") + "\n")
    write_task(tmp_path, "solution-fetch", dockerfile=python, solution="#!/bin/bash\n"
               + fetch("https://solution.unreachable.invalid/answer", "/app/out.txt") + "\n")
    settings = SandboxSettings(cache_dir=tmp_path / "cache")
    row = asyncio.run(audit_task(load_task(tmp_path / "fetch"), settings))
    assert row.status == "excluded" and row.reason.startswith("needs_network: Dockerfile line 3: RUN exited"), row.reason
    assert "it could not reach files.unreachable.invalid: socket.gaierror: [Errno -2]" in row.reason
    row = asyncio.run(audit_task(load_task(tmp_path / "solution-fetch"), settings))
    # Python's traceback does not name the host (curl's message would): the cause is said all the same
    assert row.status == "broken" and "its solution could not reach its host: socket.gaierror" in row.reason
    # a build script that goes on after its fetch failed (TB's sanitize-git-repo: `git clone` in a
    # setup.sh without `set -e`): the layer lacks the data, and the broken oracle's reason says why
    write_task(tmp_path, "silent", dockerfile=python + "RUN " + fetch("https://data.unreachable.invalid/repo.tar", "/app/repo.tar")
               + "; echo carrying on\n", solution="#!/bin/bash\ntar -xf /app/repo.tar && echo ok > /app/out.txt\n")
    row = asyncio.run(audit_task(load_task(tmp_path / "silent"), settings))
    assert row.status == "broken"
    assert "its build Dockerfile line 3: could not reach data.unreachable.invalid" in row.reason
    assert network_failure("Successfully installed pillow-11.2.1\n") is None
    quiet = "/bin/sh -c wget -q https://mirror.unreachable.invalid/alpine.iso -O /app/a.iso"
    assert network_failure("", quiet, 4) == "could not reach mirror.unreachable.invalid: wget exited 4 (network failure)"
    assert network_failure("", "/bin/sh -c make all", 4) is None  # exit 4 of another program says nothing
    assert network_failure("ERROR: Could not find a version that satisfies the requirement x") is None
    assert network_failure("Could not fetch URL https://pypi.org/simple/x/: There was a problem") == \
        "could not reach pypi.org: Could not fetch URL https://pypi.org/simple/x/: There was a problem"
    # Rust's reqwest (selenium-manager fetching a browser, uv): TB's run-pdp11-code
    reqwest = "{'code': 65, 'message': 'error sending request for url (https://googlechromelabs.github.io/x.json)'}"
    assert network_failure(reqwest).startswith("could not reach googlechromelabs.github.io: ")


def test_with_the_network_the_tests_fetch_what_agentrig_lacks_and_keep_its_tool_chain(tmp_path):
    # Terminal-Bench's template installs uv from astral.sh, then `uv add` packages for the tests;
    # where only the package registries are reachable, the tool chain stays agentrig's Python and
    # the packages it lacks (toolz here) are fetched from the index into the trial, so the oracle
    # passes and doing nothing fails — without the network the task is needs_network, as before
    run_tests = ("#!/bin/bash\napt-get update\napt-get install -y curl\n"
                 "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\n"
                 "uv init\nuv add pytest==8.4.1 toolz==1.0.0\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    test = ("import toolz\nfrom pathlib import Path\n\ndef test_out():\n"
            "    assert toolz.first(Path('/app/out.txt').read_text().split()) == 'ok'\n")
    write_task(tmp_path, "fetches", test=test, files={"run-tests.sh": run_tests})
    task = load_task(tmp_path / "fetches")
    assert task_support(task, "bwrap").exclusion == "needs_network"
    online = SandboxSettings(cache_dir=tmp_path / "cache", network=True, build_network="host-settings")
    assert task_support(task, "bwrap", network=True).ok
    row = asyncio.run(audit_task(task, online))
    assert row.status == "ok", (row.reason, row.oracle)


def test_a_compose_tmpfs_is_mounted_over_the_image_with_its_size_and_mode(tmp_path):
    # Terminal-Bench's extract-safely mounts /root as a 100 MB tmpfs: bwrap mounts it the same way
    # (the layer's /root hidden, as Docker's tmpfs hides the image's); an option we cannot honour
    # is needs_container naming it, and the local sandbox (no mount of its own) says so
    from agentrig.bench.terminal.sandbox import open_sandbox

    compose = TEMPLATE + "    tmpfs:\n      - /root/scratch:size=1M,mode=750\n"
    write_task(tmp_path, "tmpfs", files={"docker-compose.yaml": compose},
               dockerfile="FROM ubuntu:24.04\nWORKDIR /app\nRUN mkdir -p /root/scratch && echo layer > /root/scratch/old\n")
    task = load_task(tmp_path / "tmpfs")
    assert task_support(task, "bwrap").ok and task_support(task, "local").exclusion == "needs_container"

    async def probe() -> str:
        box = await open_sandbox(task, SandboxSettings(cache_dir=tmp_path / "cache"))
        try:
            result = await box.run("stat -c %a /root/scratch; ls /root/scratch; "
                                   "head -c 2000000 /dev/zero > /root/scratch/big 2>&1 || echo FULL", 60)
        finally:
            await box.close()
        return result.output

    seen = asyncio.run(probe())
    assert seen.split()[0] == "750" and "old" not in seen and "FULL" in seen
    (tmp_path / "tmpfs" / "docker-compose.yaml").write_text(TEMPLATE + "    tmpfs:\n      - /root:exec,size=1M\n")
    found = task_support(load_task(tmp_path / "tmpfs"), "bwrap")
    assert found.exclusion == "needs_container" and "'exec'" in found.reason


def test_on_the_image_root_with_the_network_a_pip_tool_chain_runs_on_the_images_python(tmp_path):
    # `pip install pytest` then `pytest` (no uv): Terminal-Bench's tests run on the image's Python
    # and import what its build installed (RUN pip install mlflow); on a root built for the image,
    # with the network, the script runs as written — staging says so; elsewhere it stays rewritten
    from agentrig.bench.terminal.tasks.staging import stage_tests, verifier_python

    run_tests = "#!/bin/bash\npip install pytest==8.4.1\npytest $TEST_DIR/test_outputs.py -rA\n"
    task = load_task(write_task(tmp_path, "pip-chain", files={"run-tests.sh": run_tests}))
    python, _ = verifier_python()
    image = stage_tests(task, tmp_path / "a", python, network=True, image_python=True)
    assert not image.offline and image.pytest_args is None and image.needs_network is None
    assert any("the image's Python" in n for n in image.notes)
    assert (tmp_path / "a" / "run-tests.sh").read_text() == run_tests  # as written
    host = stage_tests(task, tmp_path / "b", python, network=True, image_python=False)
    assert host.offline and ": # agentrig offline verifier: pip install pytest==8.4.1" in \
        (tmp_path / "b" / "run-tests.sh").read_text()


def test_a_broken_oracle_whose_solution_script_has_no_command_says_so(tmp_path):
    write_task(tmp_path, "empty", solution="#!/bin/bash\n# the solution was lost in this copy\n\n")
    row = asyncio.run(audit_task(load_task(tmp_path / "empty"), SandboxSettings(cache_dir=tmp_path / "cache")))
    assert row.status == "broken" and "its solution.sh has no command (the solution does nothing)" in row.reason


def test_an_oracle_pinning_versions_the_stand_ins_archive_lacks_is_the_stand_ins_fault(tmp_path):
    # TB's parallel-particle-simulator: `apt-get install g++=4:13.2.0-7ubuntu1 …` on Ubuntu 24.04;
    # Debian's archive (the stand-in) has no such version: base_substituted, naming the pins
    solution = "#!/bin/bash\napt-get install -y make=4.3-4.1build2 gzip=1.12-1ubuntu3\necho ok > /app/out.txt\n"
    write_task(tmp_path, "pinned", solution=solution, test="def test_x():\n    assert False\n")
    row = asyncio.run(audit_task(load_task(tmp_path / "pinned"), SandboxSettings(cache_dir=tmp_path / "cache")))
    assert row.status == "base_substituted", row.reason
    assert "pins package versions" in row.reason and "make=4.3-4.1build2" in row.reason
    assert "gzip=1.12-1ubuntu3" in row.reason and "stands in for Ubuntu 24.04" in row.reason


def test_an_oracle_asking_for_packages_only_the_real_bases_archive_has_is_the_stand_ins_fault(tmp_path):
    # TB's broken-networking: its solution fetches Ubuntu 22.04's apt .deb and installs it over the
    # stand-in's; Debian's archive has no ubuntu-keyring to satisfy it: base_substituted, naming it
    solution = "#!/bin/bash\napt-get install -y ubuntu-pro-client\necho ok > /app/out.txt\n"
    write_task(tmp_path, "ubuntu-only", solution=solution, test="def test_x():\n    assert False\n")
    row = asyncio.run(audit_task(load_task(tmp_path / "ubuntu-only"), SandboxSettings(cache_dir=tmp_path / "cache")))
    assert row.status == "base_substituted", row.reason
    assert "needs packages the stand-in base's archive does not have (ubuntu-pro-client: Ubuntu 24.04's archive" \
        in row.reason and "stands in for Ubuntu 24.04" in row.reason
    from agentrig.bench.terminal.audit import _MISSING_PACKAGE

    apt = ("The following packages have unmet dependencies:\n apt : Depends: ubuntu-keyring but it is not installable\n"
           " curl : Depends: libcurl4 (= 7.88.1-10+deb12u15) but it is not going to be installed\n"
           "E: Package 'ubuntu-advantage-tools' has no installation candidate\n")
    assert [n for found in _MISSING_PACKAGE.findall(apt) for n in found if n] == ["ubuntu-keyring", "ubuntu-advantage-tools"]


def test_an_oracle_that_could_not_reach_a_package_registry_with_the_network_is_an_outage_not_the_task(tmp_path):
    # apt's words when this machine's Debian mirror is down, printed by the solution (an outage
    # cannot be made on demand): with the network the trial is the plumbing's (replayed, then the
    # audit's error naming the registry), never the task's needs_network; without it, the task's
    outage = ("#!/bin/bash\necho \"W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  "
              "Temporary failure resolving 'deb.debian.org'\"\nexit 100\n")
    write_task(tmp_path, "mirror-down", solution=outage)
    task = load_task(tmp_path / "mirror-down")
    online = asyncio.run(audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", network=True)))
    assert online.status == "error" and "the package registry deb.debian.org could not be reached" in online.reason
    assert online.oracle is not None and not online.oracle.valid
    offline = asyncio.run(audit_task(task, SandboxSettings(cache_dir=tmp_path / "cache", network=False)))
    assert offline.status == "broken" and "its solution could not reach deb.debian.org" in offline.reason


def test_a_broken_oracle_whose_test_code_fetches_an_unreachable_host_says_so_even_when_its_output_hides_it(tmp_path):
    # TB's cron-broken-network: its tests run `curl example.com > /app/example.html`, and the
    # task's own loops keep replacing curl with a script that prints no host — the test's code
    # names the host this machine cannot resolve; a host in prose or a comment does not count
    from agentrig.bench.terminal.core.netfail import fetched_hosts

    hidden = ("import os\n\n# see https://docs.example.org/why for the format\n"
              "def test_fetch():\n    \"\"\"Fetch the page from example.org, as the task says.\"\"\"\n"
              "    os.popen('curl -sS agentrig-unreachable.invalid > /app/page.html 2>/dev/null').read()\n"
              "    assert open('/app/page.html').read()\n")
    write_task(tmp_path, "hidden", test=hidden)
    row = asyncio.run(audit_task(load_task(tmp_path / "hidden"), SandboxSettings(cache_dir=tmp_path / "cache",
                                                                                 network=True)))
    assert row.status == "broken" and ("its tests fetch agentrig-unreachable.invalid, which they could not reach "
                                       "(this machine cannot resolve it)") in row.reason, row.reason
    assert fetched_hosts(hidden) == ["agentrig-unreachable.invalid"]
    assert fetched_hosts("r = requests.get('https://api.example.com/v1/x')\nrequests.get(f'{BASE}/status')\n"
                         "subprocess.run(['curl', 'http://localhost:8080/'])\nos.system('wget -q mirror.lan.local/x')\n"
                         "os.system('curl --max-time 5 example.net')\n") == ["api.example.com", "example.net"]


def test_a_broken_oracle_whose_tests_could_not_reach_a_remote_host_says_so(tmp_path):
    # TB's cron-broken-network: its test curls example.com (beyond the package registries); a test
    # whose server on localhost is not there is the task's failure, not the network's
    remote = ("import subprocess\n\ndef test_fetch():\n"
              "    assert subprocess.run(['curl', '-sS', 'http://agentrig-unreachable.invalid/']).returncode == 0\n")
    local = ("import subprocess\n\ndef test_fetch():\n"
             "    assert subprocess.run(['curl', '-sS', 'http://localhost:9/']).returncode == 0\n")
    # Debian's image has no curl (nor has Ubuntu's): the task installs it, as TB's tasks do
    curl = ("FROM debian:bookworm-slim\nWORKDIR /app\n"
            "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends curl >/dev/null\n")
    write_task(tmp_path, "remote", test=remote, dockerfile=curl)
    write_task(tmp_path, "local", test=local, dockerfile=curl)
    settings = SandboxSettings(cache_dir=tmp_path / "cache")
    far = asyncio.run(audit_task(load_task(tmp_path / "remote"), settings))
    near = asyncio.run(audit_task(load_task(tmp_path / "local"), settings))
    assert far.status == "broken" and "its tests could not reach agentrig-unreachable.invalid" in far.reason, far.reason
    assert far.oracle is not None and far.oracle.unreached.startswith("tests could not reach")
    assert near.status == "broken" and "could not reach" not in near.reason and near.oracle.unreached is None
    from agentrig.bench.terminal.core.netfail import network_failure

    meter = "  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0curl: (6) Could not resolve host: example.com"
    assert network_failure(meter, remote_only=True) == "could not reach example.com: curl: (6) Could not resolve host: example.com"
    assert network_failure("curl: (7) Failed to connect to localhost port 9: Connection refused", remote_only=True) is None
    assert network_failure("Failed to connect to 127.0.0.1 port 80 via http://127.0.0.1/x", remote_only=True) is None


def test_the_coverage_leaves_out_tasks_without_a_solution_or_needing_the_real_bases_archive():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "perf" / "terminal_coverage.py"
    spec = importlib.util.spec_from_file_location("terminal_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.beyond_registries
    assert out({"verdict": "no_solution", "reason": "its solution.sh has no command"})
    assert out({"verdict": "base_substituted", "reason": "the oracle's solution pins package versions the stand-in "
                                                         "base's archive does not have (…)"})
    assert out({"verdict": "base_substituted", "reason": "the oracle's solution needs packages the stand-in base's "
                                                         "archive does not have (…)"})
    assert out({"verdict": "needs_network", "reason": "…; its tests could not reach example.com: curl: (6) …"})
    assert out({"verdict": "needs_network", "reason": "needs_network: the base image localstack/localstack:4.3 "
                                                      "cannot be pulled (…)"})  # podman: an image from elsewhere
    assert not out({"verdict": "base_substituted", "reason": "the build fails on the stand-in base (…)"})
    assert not out({"verdict": "broken", "reason": "the oracle does not pass (wrong_output)"})


def test_the_coverage_compares_two_runs_verdicts_task_by_task(tmp_path, capsys):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "perf" / "terminal_coverage.py"
    spec = importlib.util.spec_from_file_location("terminal_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = [{"task_id": "a", "verdict": "runs"}, {"task_id": "b", "verdict": "runs"}]
    (tmp_path / "bwrap.json").write_text(json.dumps({"rows": rows}))
    (tmp_path / "same.json").write_text(json.dumps({"rows": rows}))
    (tmp_path / "podman.json").write_text(json.dumps({"rows": [rows[0], {"task_id": "b", "verdict": "broken",
                                                                         "reason": "the oracle does not pass"}]}))
    assert module.compare(tmp_path / "bwrap.json", tmp_path / "same.json") == 0
    assert "2 of 2 tasks with the same verdict in both" in capsys.readouterr().out
    assert module.compare(tmp_path / "bwrap.json", tmp_path / "podman.json") == 1
    out = capsys.readouterr().out
    assert "b: runs (bwrap.json) vs broken (podman.json)" in out and "1 of 2 tasks with the same verdict" in out



def test_the_coverage_calls_an_image_from_elsewhere_one_verdict_on_every_engine():
    """bwrap words it `needs_container` (no recipe builds the image), podman and docker
    `needs_network` (it cannot be pulled): one verdict, `needs_image`, left out of the share."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "perf" / "terminal_coverage.py"
    spec = importlib.util.spec_from_file_location("terminal_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bwrap = {"status": "excluded", "reason": "needs_container: Dockerfile line 1: FROM swebench/sweb.eval:latest: no recipe "
                                             "builds the image swebench/sweb.eval:latest from packages (…)"}
    podman = {"status": "excluded", "reason": "needs_network: the base image swebench/sweb.eval:latest cannot be pulled (…)"}
    other = {"status": "excluded", "reason": "needs_network: Dockerfile line 13: RUN exited 6: it could not reach golang.org: …"}
    assert module.verdict(bwrap) == module.verdict(podman) == "needs_image"
    assert module.verdict(other) == "needs_network"
    assert all(module.beyond_registries({**row, "verdict": module.verdict(row)}) for row in (bwrap, podman, other))
