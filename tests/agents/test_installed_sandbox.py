"""The installed agents' tool roots are relocatable, for real: each is installed once (into the shared
cache, ``agentrig agents install``'s, for they are big) and then run, bound read-only at
``/run/agentrig/tool``, inside bwrap sandboxes of built task images with no network — Debian
bullseye-slim (glibc 2.31, older than the host's) and bookworm-slim (glibc 2.36), neither with a
Python, and Ubuntu 24.04 (glibc 2.39, its own Python 3.12) — where the host's install path does
not exist. mini-swe-agent runs a real episode with its own
deterministic model, and the command it runs sees the image's Python and environment, not ours."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from agentrig.agents.installed import DEFAULT_VERSIONS, ensure_tool_root, image_problem
from agentrig.agents.installed.elf import image_glibc

from ..bench.terminal.sandbox_support import make_task, needs_root_bwrap, opened
from ..bench.terminal.test_images import UBUNTU_ARCHIVE, _need_mmdebstrap, _need_ubuntu_archive

pytestmark = [needs_root_bwrap(), pytest.mark.slow]

MOUNT = "/run/agentrig/tool"
IMAGES = {"bullseye-slim": "debian:bullseye-slim", "bookworm-slim": "debian:bookworm-slim",
          "ubuntu-24.04": "ghcr.io/laude-institute/t-bench/ubuntu-24-04"}
LEAKS = ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")

# mini's own deterministic model: one command that reports what the agent's commands see, then submit
PROBE = {"model": {"outputs": [
    {"role": "assistant", "content": "look", "extra": {"actions": [{"command": (
        "{ echo \"PY=$(command -v python3 || echo none)\"; "
        "python3 -c 'import sys; print(\"PREFIX=\" + sys.prefix)' 2>&1; env; } > /tmp/probe.out 2>&1")}]}},
    {"role": "assistant", "content": "done", "extra": {"actions": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}},
]}}


@pytest.fixture(scope="session")
def tool_roots():
    """Each kind at its pinned version, installed once (nothing to do when the cache has it)."""
    return {kind: ensure_tool_root(kind) for kind in DEFAULT_VERSIONS}


@pytest.fixture(params=sorted(IMAGES))
def image(request, monkeypatch):
    _need_mmdebstrap()
    if request.param == "ubuntu-24.04":
        _need_ubuntu_archive()
        monkeypatch.setenv("AGENTRIG_UBUNTU_ARCHIVE", UBUNTU_ARCHIVE)
    return IMAGES[request.param]


async def _run_in(image: str, tmp_path: Path, script: str, binds: dict[str, str]):
    """``script`` in a fresh sandbox of ``image`` (no network), the binds read-only; (result, image root)."""
    task = make_task(tmp_path, f"FROM {image}\n", task_id=f"tool-{uuid.uuid4().hex[:6]}")
    sandbox = await opened(task, tmp_path, root="image", network=False)
    try:
        assert sandbox.network is False
        result = await sandbox.run_verifier(script, 300, {}, binds)
        return result, sandbox.base_root
    finally:
        await sandbox.close()


async def test_mini_swe_agent_runs_from_the_tool_root_and_its_commands_see_the_images_python(tool_roots, image, tmp_path):
    root = tool_roots["mini-swe-agent"]
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "probe.yaml").write_text(json.dumps(PROBE))  # YAML is a superset of JSON
    pyver = next((root.path / "python" / "bin").glob("python3.*")).name  # the interpreter's launcher
    script = (
        f"test ! -e {root.path} && echo HOST-PATH-ABSENT; touch {MOUNT}/x 2>/dev/null || echo READ-ONLY; "
        f"{MOUNT}/python/bin/python3 -I -c "
        "'import sys, ssl, socket, sqlite3, ctypes, subprocess, pydantic_core, numpy, tokenizers; "
        "socket.getaddrinfo(\"localhost\", 80); print(\"OURS\", sys.executable, sys.prefix); "
        "print(\"CHILD\", subprocess.run([sys.executable, \"-c\", \"import sys; print(sys.prefix)\"], "
        "capture_output=True, text=True).stdout.strip()); "
        f"print(\"FOREIGN\", sorted({{p for p in (l.split()[-1] for l in open(\"/proc/self/maps\")) if \".so\" in p "
        f"and not p.startswith(\"{MOUNT}/\")}}))'; "
        "ln -s /run/agentrig/tool/bin/mini /tmp/mini && /tmp/mini --help >/dev/null 2>&1 && echo VIA-SYMLINK; "
        f"PATH={MOUNT}/bin:$PATH mini --help >/dev/null 2>&1 && echo VIA-PATH; "
        f"{MOUNT}/{root.entry} --help > /tmp/help.txt 2>&1; echo \"HELP=$?\"; grep -c 'Usage: mini' /tmp/help.txt; "
        "export MSWEA_CONFIGURED=true MSWEA_GLOBAL_CONFIG_DIR=/tmp/mini-config MSWEA_COST_TRACKING=ignore_errors; "
        f"{MOUNT}/{root.entry} -m deterministic --model-class deterministic -c mini.yaml -c /run/agentrig/probe/probe.yaml "
        "-t probe --yolo --exit-immediately -l 0 -o /tmp/traj.json > /tmp/run.txt 2>&1; echo \"RUN=$?\"; "
        "tail -5 /tmp/run.txt; echo ---; cat /tmp/probe.out")
    result, image_root = await _run_in(image, tmp_path, script, {str(root.path): MOUNT, str(probe): "/run/agentrig/probe"})
    out = result.output
    assert "HOST-PATH-ABSENT" in out and "READ-ONLY" in out, out
    assert f"OURS {MOUNT}/python/bin/{pyver} {MOUNT}/python\n" in out, out  # the prefix found from where it is mounted
    assert f"CHILD {MOUNT}/python\n" in out, out  # sys.executable starts our Python again, through the loader
    assert "FOREIGN []\n" in out, out  # every library it loaded (C library, libssl, extension modules') is the root's
    assert "VIA-SYMLINK" in out and "VIA-PATH" in out, out
    assert "HELP=0\n1\n" in out and "RUN=0\n" in out, out
    seen = out.split("---\n", 1)[1]
    image_python = (image_root / "usr/bin/python3").exists()
    if image_python:  # the image's own python3, not ours
        assert "PY=/usr/bin/python3\n" in seen and "PREFIX=/usr\n" in seen, seen
    else:  # bookworm-slim has none
        assert "PY=none\n" in seen, seen
    env = dict(line.split("=", 1) for line in seen.splitlines() if "=" in line and line.split("=", 1)[0].isidentifier())
    assert not [name for name in LEAKS if name in env], env
    # nothing of the tool root in the commands' environment (bash sets `_` to the program it runs: mini itself)
    assert not [k for k, v in env.items() if MOUNT in v and k != "_"], env


async def test_codex_runs_from_the_tool_root(tool_roots, image, tmp_path):
    root = tool_roots["codex"]
    rg = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-path/rg"
    script = (f"{MOUNT}/{root.entry} --version; echo \"RC=$?\"; {MOUNT}/{root.entry} --help | grep -c 'exec'; "
              f"{MOUNT}/{rg} --version | head -1")
    result, _ = await _run_in(image, tmp_path, script, {str(root.path): MOUNT})
    assert f"codex-cli {root.version}\nRC=0\n" in result.output, result.output
    assert "ripgrep" in result.output, result.output
    assert root.glibc_floor is None  # static: any image


async def test_claude_code_runs_from_the_tool_root(tool_roots, image, tmp_path):
    root = tool_roots["claude-code"]
    script = ("export DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 "
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1 CLAUDE_CONFIG_DIR=/tmp/claude; "
              f"{MOUNT}/{root.entry} --version; echo \"RC=$?\"; {MOUNT}/{root.entry} --help | grep -c -- '--print'")
    result, image_root = await _run_in(image, tmp_path, script, {str(root.path): MOUNT})
    assert f"{root.version} (Claude Code)\nRC=0\n" in result.output, result.output
    assert root.glibc_floor == "2.17" and image_glibc(image_root) in ("2.31", "2.36", "2.39")
    assert image_problem(root, image_root) is None
