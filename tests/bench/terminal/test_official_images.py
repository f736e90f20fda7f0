"""The official images a recipe builds from packages (images/official.py): each family's tags,
what stands in, the real image's layout — and a C++ task on ``buildpack-deps:jammy`` played for real."""

from __future__ import annotations

import os

import pytest

from agentrig.bench.terminal.images import resolve_base
from agentrig.bench.terminal.images.official import buildpack_packages, nearest
from agentrig.bench.terminal.core.base import SandboxError

from .sandbox_support import needs_root_bwrap
from .test_images import UBUNTU_ARCHIVE, _need_mmdebstrap

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.fixture(autouse=True)
def _no_ubuntu_archive(monkeypatch):
    monkeypatch.delenv("AGENTRIG_UBUNTU_ARCHIVE", raising=False)


def test_buildpack_deps_each_suite_and_layer_from_its_dockerfiles_package_lists():
    curl, scm, full = (resolve_base(f"buildpack-deps:bookworm{s}") for s in ("-curl", "-scm", ""))
    assert curl.suite == "bookworm" and curl.packages == ["ca-certificates", "curl", "gnupg", "netbase", "wget", "sq"]
    assert scm.packages == curl.packages + ["git", "mercurial", "openssh-client", "subversion", "procps"]
    assert full.packages[:len(scm.packages)] == scm.packages and {"g++", "libssl-dev", "imagemagick", "make"} <= set(full.packages)
    assert curl.substituted is None and full.cmd == ["bash"] and full.env == {"PATH": PATH}
    assert "sq" not in resolve_base("buildpack-deps:bullseye-curl").packages  # bullseye's list has none
    # trixie's ncurses 5 names are virtual: its real package instead
    trixie = resolve_base("docker.io/library/buildpack-deps:trixie")
    assert "libncurses-dev" in trixie.packages and "libncurses5-dev" not in trixie.packages
    assert resolve_base("buildpack-deps").suite == resolve_base("buildpack-deps:latest").suite == "trixie"
    assert resolve_base("buildpack-deps:scm").packages == buildpack_packages("trixie", "scm")
    for tag in ("alpine", "bookworm-curl-scm", "buster", "jammy-slim", "12"):
        assert resolve_base(f"buildpack-deps:{tag}") is None, tag


def test_ubuntu_buildpack_deps_is_ubuntus_with_its_archive_else_debian_stands_in_said(monkeypatch):
    jammy = resolve_base("buildpack-deps:jammy")
    assert (jammy.suite, jammy.distro) == ("bookworm", None)
    assert jammy.substituted == "Debian bookworm stands in for Ubuntu 22.04" and jammy.archive == "Ubuntu 22.04's"
    assert resolve_base("buildpack-deps:focal-scm").suite == "bullseye"  # the Debian of focal's time
    assert resolve_base("buildpack-deps:noble-curl").substituted == "Debian bookworm stands in for Ubuntu 24.04"
    monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", UBUNTU_ARCHIVE)
    real = resolve_base("buildpack-deps:jammy")
    assert (real.distro, real.suite, real.mirror, real.substituted) == ("ubuntu", "jammy", UBUNTU_ARCHIVE, None)
    assert "tzdata" in real.packages and "sq" not in real.packages  # jammy's own curl layer
    assert "sq" in resolve_base("buildpack-deps:noble-curl").packages
    assert real.key() != jammy.key()


def test_the_language_comes_from_the_suite_whose_version_is_nearest_the_tags():
    assert nearest({"a": ["1"], "b": ["3"]}, "2", "a") == ("a", "1")  # a tie keeps the tag's suite
    assert nearest({"a": ["1"], "b": ["3"]}, "2", None) == ("b", "3")  # … else the newer
    assert nearest({"bookworm": ["11", "12"], "trixie": ["12", "14"]}, "12", None) == ("bookworm", "12")  # its default
    node = resolve_base("node:20")
    assert (node.suite, node.substituted, node.cmd, node.user) == ("trixie", None, ["node"], "node")
    assert {"nodejs", "npm", "g++", "git"} <= set(node.packages) and node.env["NODE_VERSION"] == "20"
    assert resolve_base("node:18.20.4-bookworm").suite == "bookworm" and resolve_base("node:hydrogen").suite == "bookworm"
    slim = resolve_base("node:22-bookworm-slim")
    assert slim.suite == "trixie" and "g++" not in slim.packages
    assert slim.substituted == ("Node.js 20 (Debian trixie's) stands in for Node.js 22; "
                                "Debian trixie stands in for Debian bookworm (its Node.js is nearer)")
    assert slim.archive == "Debian bookworm's"
    for ref in ("node:20-alpine", "node:lts-alpine3.20", "node:20-windowsservercore", "node:20-bookworm-bookworm"):
        assert resolve_base(ref) is None, ref


def test_golang_rust_gcc_lay_their_language_out_where_the_image_has_it():
    go = resolve_base("golang:1.22-bookworm")
    assert go.suite == "trixie" and "golang-1.24-go" in go.packages and "subversion" in go.packages
    assert go.substituted.startswith("Go 1.24 (Debian trixie's) stands in for Go 1.22")
    assert (go.workdir, go.env["GOPATH"], go.env["GOTOOLCHAIN"]) == ("/go", "/go", "local")
    assert go.env["PATH"] == f"/go/bin:/usr/local/go/bin:{PATH}" and go.links == {"/usr/local/go": "/usr/lib/go-1.24"}
    assert resolve_base("golang:1.19").substituted is None and resolve_base("golang:1.15.2-bullseye").suite == "bullseye"
    assert resolve_base("golang:1.22-alpine") is None and resolve_base("golang:1.22-windowsservercore-ltsc2022") is None
    rust = resolve_base("rust:1.85-trixie")
    assert rust.substituted is None and {"rustc", "cargo"} <= set(rust.packages)
    assert (rust.env["CARGO_HOME"], rust.env["RUSTUP_HOME"]) == ("/usr/local/cargo", "/usr/local/rustup")
    assert rust.env["PATH"].startswith("/usr/local/cargo/bin:") and rust.links["/usr/local/cargo/bin/cargo"] == "/usr/bin/cargo"
    assert resolve_base("rust:1.75").substituted == "Rust 1.85 (Debian trixie's) stands in for Rust 1.75"
    assert "imagemagick" not in resolve_base("rust:1-slim-bookworm").packages and resolve_base("rust:alpine") is None
    gcc = resolve_base("gcc:13.2.0")
    assert gcc.suite == "trixie" and "g++-13" in gcc.packages and gcc.links["/usr/local/bin/gcc"] == "/usr/bin/gcc-13"
    assert gcc.substituted is None and gcc.env["GCC_VERSION"] == "13"
    assert resolve_base("gcc:12").suite == "bookworm"  # bookworm's default, trixie's too
    assert resolve_base("gcc:15").substituted == "GCC 14 (Debian trixie's) stands in for GCC 15"
    assert resolve_base("gcc:13-bookworm") is None  # gcc's tags name no suite


def test_openjdk_and_temurin_java_home_and_locale(monkeypatch):
    jdk = resolve_base("openjdk:11-jdk-slim-bullseye")
    assert jdk.suite == "bullseye" and jdk.packages == ["ca-certificates", "p11-kit", "openjdk-11-jdk-headless"]
    assert jdk.env["JAVA_HOME"] == "/usr/local/openjdk-11" and jdk.env["PATH"].startswith("/usr/local/openjdk-11/bin:")
    assert jdk.links == {"/usr/local/openjdk-11": "/usr/lib/jvm/java-11-openjdk-*"} and jdk.cmd == ["jshell"]
    eight = resolve_base("openjdk:8-jre")
    assert eight.substituted == "OpenJDK 11 (Debian bullseye's) stands in for OpenJDK 8" and eight.cmd == ["bash"]
    assert "openjdk-11-jre-headless" in eight.packages and eight.links == {"/usr/local/openjdk-8": "/usr/lib/jvm/java-11-openjdk-*"}
    assert resolve_base("openjdk:17").suite == "bookworm" and resolve_base("openjdk:21-oraclelinux8") is None
    temurin = resolve_base("eclipse-temurin:17-jdk-jammy")
    assert temurin.suite == "bookworm" and temurin.substituted == "Debian bookworm stands in for Ubuntu 22.04"
    assert temurin.env["JAVA_HOME"] == "/opt/java/openjdk" and temurin.env["LC_ALL"] == "en_US.UTF-8"
    assert temurin.locales == ["en_US.UTF-8"] and "openjdk-17-jdk-headless" in temurin.packages
    assert resolve_base("eclipse-temurin:21").suite == "trixie"  # the Debian with JDK 21
    assert resolve_base("eclipse-temurin:21-jdk-alpine") is None and resolve_base("eclipse-temurin:21-ubi9-minimal") is None
    monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", UBUNTU_ARCHIVE)
    real = resolve_base("eclipse-temurin:17-jdk-jammy")
    assert (real.distro, real.suite, real.substituted) == ("ubuntu", "jammy", None)
    assert resolve_base("eclipse-temurin:24-noble").substituted == "OpenJDK 25 (Ubuntu 24.04's) stands in for OpenJDK 24"


def test_the_new_fields_leave_every_earlier_recipes_cache_key_as_it_was():
    # keys of roots built before official.py (this machine's cache has them): they stay valid
    assert resolve_base("ghcr.io/laude-institute/t-bench/python-3-13:20250620").key() == "51ce14351431cba3"
    assert resolve_base("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624").key() == "ff85bec87e3882b9"
    assert resolve_base("python:3.12.9-slim").key() == "33045eff2135ff3d"
    assert resolve_base("python:3.13-slim-bookworm").key() == "d979ca3b46adad8a"
    assert resolve_base("debian:bookworm-slim").key() == "81c3dfef8571a116"
    assert resolve_base("debian:bullseye-slim").key() == "dc24c3de3305b7a5"
    # the python images before 3.12 gained setuptools and wheel: a new root (926a72abc4f90b7f had pip alone)
    assert resolve_base("python:3.11-slim").key() not in ("926a72abc4f90b7f", resolve_base("python:3.12-slim").key())


def test_links_and_directories_are_made_where_the_image_has_them_and_a_missing_target_fails(tmp_path):
    from agentrig.bench.terminal.images.builder import _place

    jvm = tmp_path / "usr/lib/jvm/java-17-openjdk-amd64/bin"
    jvm.mkdir(parents=True)
    recipe = resolve_base("openjdk:17-slim").model_copy(update={"dirs": {"/go/bin": 0o1777}})
    _place(tmp_path, recipe)
    _place(tmp_path, recipe)  # twice: nothing changes, nothing fails
    assert os.readlink(tmp_path / "usr/local/openjdk-17") == "/usr/lib/jvm/java-17-openjdk-amd64"
    assert (tmp_path / "go/bin").stat().st_mode & 0o7777 == 0o1777
    with pytest.raises(SandboxError, match=r"/usr/lib/go-1.24 is not in the root \(the recipe links /usr/local/go"):
        _place(tmp_path, resolve_base("golang:1.24"))


def test_a_failed_build_quotes_apts_own_error_not_only_the_last_lines():
    # this machine's mirror once served bullseye-security's index but 404'd one of its files:
    # the cause is 400 lines before mmdebstrap's last words
    from agentrig.bench.terminal.images.builder import build_error

    lines = ["Get:1 http://deb.debian.org/debian bullseye/main amd64 x"] * 400 + [
        "E: Failed to fetch http://deb.debian.org/debian-security/pool/updates/main/i/imagemagick/x.deb  404  Not Found",
        "E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?",
        "E: setup failed: E: apt-get … install … failed"] + ["I: main() received signal PIPE"] * 8
    message = build_error(lines)
    assert message.startswith("E: Failed to fetch http://deb.debian.org/debian-security/") and "404" in message
    assert "setup failed" not in message and message.endswith("I: main() received signal PIPE")
    assert build_error(["E: one", "two"]) == "E: one\ntwo"  # short: the lines as they are


def test_a_tag_no_recipe_builds_is_needs_container_naming_the_image(tmp_path):
    from agentrig.bench.terminal.tasks.dockerfile import parse_dockerfile

    (tmp_path / "Dockerfile").write_text("FROM node:20-alpine\nRUN true\n")
    plan = parse_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert not plan.supported and plan.reason.startswith("needs_container: Dockerfile line 1: FROM node:20-alpine: "
                                                         "no recipe builds the image node:20-alpine from packages")
    assert "Ubuntu/Debian/Python bases only" not in plan.reason
    (tmp_path / "Dockerfile").write_text("FROM golang:1.22\nRUN go version\n")
    assert parse_dockerfile(tmp_path / "Dockerfile", tmp_path).supported


def test_tasks_show_names_the_image_no_recipe_builds_never_the_hosts_root(tmp_path):
    # `tasks show`/the audit's image line: a Dockerfile bwrap does not replay is not "no Dockerfile"
    from agentrig.bench.terminal.sandbox.task_image import task_image
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task

    alpine = task_image(load_task(write_task(tmp_path, "alpine", dockerfile="FROM node:22-alpine\nWORKDIR /app\n")))
    assert alpine["image"].startswith("not built from packages: Dockerfile line 1: FROM node:22-alpine: no recipe builds")
    assert "host" not in alpine["image"] and alpine["substituted"] is None
    node = task_image(load_task(write_task(tmp_path, "node", dockerfile="FROM node:22-bookworm-slim\nWORKDIR /app\n")))
    assert node["image"] == "a Debian trixie root built from packages (agentrig images)"
    assert node["substituted"].startswith("Node.js 20 (Debian trixie's) stands in for Node.js 22")


def test_an_env_line_reads_the_base_images_own_env(tmp_path):
    # aider-polyglot's Java tasks: `ENV PATH=$JAVA_HOME/bin:$PATH` on buildpack-deps:jammy — `$PATH` is
    # the image's (an empty one left the build without chmod); golang's GOPATH likewise
    from agentrig.bench.terminal.tasks.dockerfile import parse_dockerfile

    (tmp_path / "Dockerfile").write_text("FROM buildpack-deps:jammy\nENV JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64\n"
                                         "ENV PATH=$JAVA_HOME/bin:$PATH\nWORKDIR /app\n")
    plan = parse_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert plan.env["PATH"] == f"/usr/lib/jvm/java-21-openjdk-amd64/bin:{PATH}"
    (tmp_path / "Dockerfile").write_text("FROM golang:1.24\nENV PATH=${GOPATH}/tools:$PATH\nWORKDIR $GOPATH/src/app\n")
    plan = parse_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert plan.env["PATH"] == f"/go/tools:/go/bin:/usr/local/go/bin:{PATH}" and plan.workdir == "/go/src/app"


CMAKE = """cmake_minimum_required(VERSION 3.10)
project(adder CXX)
set(CMAKE_CXX_STANDARD 17)
add_executable(adder_test adder.cpp adder_test.cpp)
"""
RUN_TESTS = """#!/bin/bash
cd /app && cp "$TEST_DIR/adder_test.cpp" . && mkdir -p build && cd build
if cmake .. >/dev/null && make >/dev/null && ./adder_test; then result=PASSED; else result=FAILED; fi
echo "=========================== short test summary info ============================"
echo "$result test_adder"
"""


@needs_root_bwrap()
@pytest.mark.slow
async def test_a_cpp_task_on_buildpack_deps_jammy_runs_its_oracle_1_and_no_op_0(tmp_path):
    # aider-polyglot's C++ tasks' shape: FROM buildpack-deps:jammy, cmake installed by the Dockerfile,
    # the test compiled with cmake and run; Debian bookworm stands in for Ubuntu 22.04 (no archive set)
    from agentrig.bench.terminal.audit import audit_task
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.tasks.taskfile import load_task

    from .run_support import write_task

    _need_mmdebstrap()
    dockerfile = ("FROM buildpack-deps:jammy\n"
                  "RUN apt-get update && apt-get install -y --no-install-recommends cmake && rm -rf /var/lib/apt/lists/*\n"
                  "RUN g++ --version && make --version && git --version\n"
                  "WORKDIR /app\nCOPY workspace/ ./\n")
    task_dir = write_task(tmp_path / "tasks", "cpp-on-buildpack", dockerfile=dockerfile,
                          solution="#!/bin/bash\nsed -i 's/return 0;/return a + b;/' /app/adder.cpp\n",
                          test="", files={"run-tests.sh": RUN_TESTS}, test_timeout=300)
    (task_dir / "tests" / "test_outputs.py").unlink()
    (task_dir / "tests" / "adder_test.cpp").write_text(
        '#include "adder.h"\n#include <cstdio>\nint main() { int r = add(2, 3); std::printf("add(2, 3) = %d\\n", r);'
        ' return r == 5 ? 0 : 1; }\n')
    workspace = task_dir / "workspace"
    workspace.mkdir()
    (workspace / "CMakeLists.txt").write_text(CMAKE)
    (workspace / "adder.h").write_text("int add(int a, int b);\n")
    (workspace / "adder.cpp").write_text('#include "adder.h"\nint add(int a, int b) { return 0; }\n')
    os.chmod(task_dir / "run-tests.sh", 0o755)
    row = await audit_task(load_task(task_dir), SandboxSettings(cache_dir=tmp_path / "cache", root="image",
                                                                build_network="host-settings"))
    assert row.status == "ok", row.reason  # the oracle passes, doing nothing fails
    assert (row.oracle.reward, row.noop.reward) == (1.0, 0.0)
    from agentrig.bench.terminal.images.builder import root_path

    assert (root_path(resolve_base("buildpack-deps:jammy")) / "root/usr/bin/git").exists()  # built once, cached


def test_a_debian_point_release_is_todays_suite_standing_in_said_so():
    """`debian:13.0-slim` is trixie as the mirror serves it today: the pins of a solution written
    against 13.0's archive are the stand-in's to miss (its `archive`), the root is trixie's own."""
    from agentrig.bench.terminal.images import resolve_base

    point, plain = resolve_base("debian:13.0-slim"), resolve_base("debian:13-slim")
    assert point.suite == plain.suite == "trixie" and point.key() == plain.key()
    assert point.substituted == "Debian trixie as this machine's mirror serves it today stands in for Debian 13.0"
    assert point.archive == "Debian 13.0's" and plain.substituted is None and plain.archive is None
    assert "as of 20250811" in resolve_base("debian:bookworm-20250811-slim").substituted
