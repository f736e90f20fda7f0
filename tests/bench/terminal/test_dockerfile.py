"""The Dockerfile subset and the compose template check (real files in tmp_path)."""

from pathlib import Path

from agentrig.bench.terminal.tasks.compose_check import check_compose
from agentrig.bench.terminal.tasks.dockerfile import accepted_base, parse_dockerfile

TEMPLATE_COMPOSE = """services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
      - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return path


def test_terminal_bench_style_dockerfile_is_in_the_subset(tmp_path):
    (tmp_path / "data.txt").write_text("x")
    path = _write(tmp_path, """# a comment
ARG VERSION=1.2
FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620
RUN apt-get update && apt-get install -y \\
    tmux curl \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY data.txt ./
ENV APP_VERSION=${VERSION} GREETING="hello world"
ENV LEGACY some value
USER root
CMD ["bash"]
RUN ["python3", "-c", "print(1)"]
""")
    plan = parse_dockerfile(path, tmp_path)
    assert plan.supported, plan.reason
    assert plan.workdir == "/app" and plan.has_workdir
    assert plan.env == {"APP_VERSION": "1.2", "GREETING": "hello world", "LEGACY": "some value"}
    runs = [s for s in plan.steps if s.op == "RUN"]
    assert runs[0].argv[:2] == ["/bin/sh", "-c"] and "tmux curl" in runs[0].argv[2]
    assert runs[0].uses_network()
    assert runs[1].argv == ["python3", "-c", "print(1)"] and runs[1].cwd == "/app"
    copy = next(s for s in plan.steps if s.op == "COPY")
    assert copy.sources == ["data.txt"] and copy.dest == "/app" and copy.dest_is_dir


def test_outside_the_subset_is_needs_container_with_the_reason(tmp_path):
    cases = {
        "FROM node:20-alpine\n": "no recipe builds the image node:20-alpine",
        "FROM python:3.12-alpine\n": "alpine",
        "FROM ubuntu:24.04 AS build\nRUN true\nFROM ubuntu:24.04\nCOPY --from=build /x /x\n": "second FROM",
        "FROM ubuntu:24.04\nCOPY --from=build /x /x\n": "--from",
        "FROM ubuntu:24.04\nUSER app\n": "USER app",
        "FROM ubuntu:24.04\nADD https://example.com/x.tgz /x\n": "URL",
        "FROM ubuntu:24.04\nRUN --mount=type=cache,target=/root/.cache pip install x\n": "--mount",
        "FROM ubuntu:24.04\nFROBNICATE x\n": "FROBNICATE",
    }
    for text, needle in cases.items():
        plan = parse_dockerfile(_write(tmp_path, text), tmp_path)
        assert not plan.supported, text
        assert plan.reason.startswith("needs_container:") and needle in plan.reason, plan.reason


def test_accepted_bases():
    for image in ("ubuntu:24.04", "debian:bookworm-slim", "python:3.13-slim-bookworm", "python:3",
                  "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest", "docker.io/library/ubuntu",
                  "node:20", "golang:1.22-bookworm", "eclipse-temurin:17-jdk-jammy"):  # a recipe builds these
        assert accepted_base(image), image
    for image in ("alpine:3.20", "node:20-alpine", "python:3.12-alpine", "nvidia/cuda:12.1-base", "scratch"):
        assert not accepted_base(image), image


# tags the official images publish (their generate-stackbrew-library.sh / library files): point
# releases, dated and role tags, variants (a language version picks its suite: node 20 is trixie's);
# and tags no recipe builds
TAGS = {
    "debian:13.0-slim": "trixie", "debian:12.5": "bookworm", "debian:12.11-slim": "bookworm", "debian:11": "bullseye",
    "debian:bookworm-20250811-slim": "bookworm", "debian:trixie-20250811": "trixie", "debian:stable-slim": "trixie",
    "debian:oldstable": "bookworm", "debian:latest": "trixie", "debian": "trixie", "docker.io/library/debian:13.0": "trixie",
    "ubuntu:24.04": "bookworm", "ubuntu:22.04.4": "bookworm", "ubuntu:noble-20250404": "bookworm", "ubuntu:jammy": "bookworm",
    "python:3.11.9-slim-bookworm": "bookworm", "python:3.13.1-slim": "trixie", "python:bookworm": "bookworm",
    "python:slim-bullseye": "bullseye", "index.docker.io/library/python:3.12": "bookworm",
    "buildpack-deps:stable-curl": "trixie", "buildpack-deps:oldstable-scm": "bookworm", "buildpack-deps:oldoldstable": "bullseye",
    "node:20.11.1-bookworm-slim": "trixie", "golang:1.22.5-bookworm": "trixie", "rust:1.85.0-slim-trixie": "trixie",
    "gcc:13.2.0": "trixie", "openjdk:17.0.2-jdk-slim-bullseye": "bullseye", "eclipse-temurin:21.0.5_11-jdk-noble": "trixie",
    "ghcr.io/laude-institute/t-bench/python-3-13:20250620": "bookworm",
    "debian:buster": None, "debian:10.13-slim": None, "debian:sid": None, "debian:bookworm-backports": None,
    "ubuntu:18.04": None, "python:3.12-alpine": None, "python:2.7": None, "buildpack-deps:buster-curl": None,
    "ghcr.io/laude-institute/t-bench/debian-12:latest": None, "alpine:3.20": None, "scratch": None,
}


def test_the_static_check_accepts_exactly_the_bases_a_recipe_builds():
    # accepted_base asks resolve_base: a base the plan accepts is never refused when its root is built
    from agentrig.bench.terminal.images import resolve_base

    for image, suite in TAGS.items():
        recipe = resolve_base(image)
        assert (recipe.suite if recipe else None) == suite, image
        assert accepted_base(image) == (recipe is not None), image
    assert resolve_base("debian:13.0-slim").key() == resolve_base("debian:trixie-slim").key()
    assert resolve_base("ubuntu:22.04.4").substituted == "Debian bookworm stands in for Ubuntu 22.04"


def test_content_hash_follows_copied_files(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("one")
    path = _write(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY src/ ./src\n")
    first = parse_dockerfile(path, tmp_path).content_hash(tmp_path)
    assert parse_dockerfile(path, tmp_path).content_hash(tmp_path) == first
    (tmp_path / "src" / "a.py").write_text("two")
    assert parse_dockerfile(path, tmp_path).content_hash(tmp_path) != first
    (tmp_path / "unrelated.txt").write_text("not copied")
    second = parse_dockerfile(path, tmp_path).content_hash(tmp_path)
    (tmp_path / "unrelated.txt").write_text("still not copied")
    assert parse_dockerfile(path, tmp_path).content_hash(tmp_path) == second


def test_compose_template_counts_as_the_dockerfile_alone(tmp_path):
    path = tmp_path / "docker-compose.yaml"
    path.write_text(TEMPLATE_COMPOSE)
    assert check_compose(path) is None


def test_compose_with_more_services_needs_services_and_features_need_a_container(tmp_path):
    path = tmp_path / "docker-compose.yaml"
    path.write_text(TEMPLATE_COMPOSE + "  db:\n    image: postgres:16\n")
    reason = check_compose(path)
    assert reason.startswith("needs_services:") and "1 service(s) beside the agent's 'client'" in reason
    assert "db (image postgres:16)" in reason
    path.write_text(TEMPLATE_COMPOSE.replace("    command:", "    privileged: true\n    command:"))
    assert "privileged" in check_compose(path)
    path.write_text("services:\n  client:\n    image: ghcr.io/x/y:1\n")
    assert "prebuilt image" in check_compose(path)
    path.write_text("services: [unclosed\n")
    assert check_compose(path).startswith("needs_container: cannot read")


def test_compose_building_from_a_subdirectory_and_for_this_platform_is_the_template(tmp_path):
    # Terminal-Bench tasks that keep their Dockerfile in client/ (context: client) or pin
    # platform: linux/amd64 are the one-service template on a machine of that platform
    from agentrig.bench.terminal.tasks.compose_check import host_platform

    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    path = tmp_path / "docker-compose.yaml"
    sub = TEMPLATE_COMPOSE.replace("      dockerfile: Dockerfile", "      context: client\n      dockerfile: Dockerfile")
    path.write_text(sub)
    assert check_compose(path) is None
    path.write_text(sub.replace("    command:", f"    platform: {host_platform()}\n    command:"))
    assert check_compose(path) is None
    path.write_text(sub.replace("    command:", "    platform: linux/s390x\n    command:"))
    assert "built for linux/s390x; this machine is" in check_compose(path)
    path.write_text(sub.replace("context: client", "context: ../elsewhere"))
    assert "not a Dockerfile of the task's own directories" in check_compose(path)


def test_an_unused_earlier_stage_is_skipped_and_heredocs_are_read(tmp_path):
    # BuildKit builds only the stages the image needs: an earlier FROM nothing copies from is
    # skipped (Terminal-Bench's cross-entropy-method); COPY <<EOT writes the heredoc's body to the
    # file, RUN <<EOF runs it as the script, and a heredoc inside a RUN's command is the shell's
    text = ("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\nRUN exit 1\n"
            "FROM ubuntu:24.04 AS base\nWORKDIR /app\n"
            "COPY <<EOT /app/logs/auth.log\nApr 10 08:12:33 server sshd[1234]: Accepted\n  indented $HOME\nEOT\n"
            "RUN <<EOF\nset -e\necho one > /app/one.txt\nEOF\n"
            "RUN cat <<'DATA' > /app/two.txt\nline\nDATA\n")
    plan = parse_dockerfile(_write(tmp_path, text), tmp_path)
    assert plan.supported, plan.reason
    assert plan.base == "ubuntu:24.04" and "skipped, as BuildKit does" in plan.notes[0]
    runs = [s for s in plan.steps if s.op == "RUN"]
    assert len(runs) == 3 and not any("exit 1" in s.argv[-1] for s in runs)
    assert "Apr 10 08:12:33" in runs[0].argv[-1] and "/app/logs/auth.log" in runs[0].argv[-1]
    assert runs[1].argv[-1] == "set -e\necho one > /app/one.txt\n"
    assert runs[2].argv[-1] == "cat <<'DATA' > /app/two.txt\nline\nDATA"
    import subprocess

    root = tmp_path / "out"
    script = runs[0].argv[-1].replace("/app/", f"{root}/app/")
    subprocess.run(["/bin/sh", "-c", script], check=True)
    assert (root / "app/logs/auth.log").read_text() == "Apr 10 08:12:33 server sshd[1234]: Accepted\n  indented $HOME\n"


def test_the_entrypoint_is_kept_to_start_with_the_sandbox_and_builds_nothing(tmp_path):
    # a container of the image runs its ENTRYPOINT with the compose command (`sleep infinity`) as
    # arguments; the layer does not depend on it
    base = "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\nRUN echo built > /built\n"
    plain = parse_dockerfile(_write(tmp_path, base), tmp_path)
    assert plain.entrypoint is None and plain.start_argv() is None
    exec_form = parse_dockerfile(_write(tmp_path, base + 'ENTRYPOINT ["/usr/local/bin/init.sh"]\nCMD ["bash"]\n'), tmp_path)
    assert exec_form.start_argv() == ["/usr/local/bin/init.sh", "sleep", "infinity"]
    assert exec_form.content_hash(tmp_path) == plain.content_hash(tmp_path)
    shell_form = parse_dockerfile(_write(tmp_path, base + 'SHELL ["/bin/bash", "-c"]\nENTRYPOINT service cron start && exec "$@"\n'), tmp_path)
    assert shell_form.entrypoint == ["/bin/bash", "-c", 'service cron start && exec "$@"']
    cleared = parse_dockerfile(_write(tmp_path, base + 'ENTRYPOINT ["/init"]\nENTRYPOINT []\n'), tmp_path)
    assert not cleared.entrypoint and cleared.start_argv() is None
    staged = parse_dockerfile(_write(tmp_path, 'FROM ubuntu:24.04 AS first\nENTRYPOINT ["/first"]\n' + base), tmp_path)
    assert staged.supported and staged.start_argv() is None  # a new stage starts without the earlier one's


def test_env_reads_the_base_images_own_path(tmp_path):
    # LiveCodeBench-Pro's and aider-polyglot's ENV PATH="/opt/venv/bin:${PATH}": ${PATH} is the base
    # image's (its config's ENV), as Docker expands it — not empty, which would leave RUN without mkdir
    plan = parse_dockerfile(_write(tmp_path, 'FROM ubuntu:24.04\nENV PATH="/opt/venv/bin:${PATH}"\n'
                                             "RUN mkdir -p /oracle\nENV TOOLS=$PATH:/x\n"), tmp_path)
    assert plan.supported, plan.reason
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert plan.env["PATH"] == f"/opt/venv/bin:{path}"
    assert plan.steps[1].env["PATH"] == f"/opt/venv/bin:{path}"  # the RUN's
    assert plan.env["TOOLS"] == f"/opt/venv/bin:{path}:/x"
