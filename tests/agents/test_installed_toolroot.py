"""The cache of installed agents' tool roots: one install per (kind, version) under a lock, nothing
half-made ever used or left behind, clear errors for an unknown kind or version, and the
``agentrig agents`` commands. The installers here are tiny stand-ins (the real ones are proved in
test_installed_sandbox.py), except where the registry's own answer is the point."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.agents.installed import ToolInstallError, ToolRoot, ensure_tool_root, image_problem, list_tool_roots
from agentrig.agents.installed import remove_tool_root
from agentrig.agents.installed.toolroot import MARKER, agents_dir
from agentrig.cli import app
from agentrig.errors import ConfigError


def _fake(dest: Path, version: str, say, final: Path) -> dict:
    """A stand-in installer: writes a launcher, counts its calls in $FAKE_COUNT, takes its time."""
    say(f"installing fake {version}")
    (dest / "bin").mkdir()
    (dest / "bin" / "fake").write_text("#!/bin/sh\necho fake\n")
    (dest / "bin" / "fake").chmod(0o700)  # as a umask of 077 leaves it
    (dest / "bin").chmod(0o700)
    with open(os.environ["FAKE_COUNT"], "a") as fh:
        fh.write("x")
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0.3")))
    return {"entry": "bin/fake", "how": "a test's stand-in"}


def _broken(dest: Path, version: str, say, final: Path) -> dict:
    (dest / "half").write_text("made")
    raise ToolInstallError("npm install failed: the registry is unreachable")


FAKE = {"codex": _fake}


def _ensure(cache: Path, version: str = "0.0.1") -> str:
    return str(ensure_tool_root("codex", version, cache=cache, _installers_override=FAKE).path)


@pytest.fixture
def count(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "count"
    monkeypatch.setenv("FAKE_COUNT", str(path))
    return path


def test_two_processes_asking_at_once_install_once_and_get_the_same_root(tmp_path, count, monkeypatch):
    monkeypatch.setenv("FAKE_SLEEP", "1.0")
    cache = tmp_path / "agents"
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        paths = pool.starmap(_ensure, [(cache,)] * 3)
    assert count.read_text() == "x"  # one install, however many asked
    assert len(set(paths)) == 1 and Path(paths[0]) == cache / "codex-0.0.1"
    root = ensure_tool_root("codex", "0.0.1", cache=cache, _installers_override=FAKE)
    assert count.read_text() == "x"  # and later asks find it
    assert (root.kind, root.version, root.entry, root.how) == ("codex", "0.0.1", "bin/fake", "a test's stand-in")
    assert root.size == len("#!/bin/sh\necho fake\n")  # the root's files at install time (the marker came after)
    assert root.command("/run/agentrig/tool/") == "/run/agentrig/tool/bin/fake"
    modes = [oct(p.stat().st_mode & 0o777) for p in (root.path / "bin", root.path / "bin" / "fake")]
    assert modes == ["0o755", "0o755"]  # any user of the sandbox (a task's USER) may run it
    marker = json.loads((root.path / MARKER).read_text())
    assert marker["kind"] == "codex" and marker["version"] == "0.0.1" and marker["size"] == root.size and marker["installed_at"]
    assert sorted(p.name for p in cache.iterdir()) == [".locks", "codex-0.0.1"]


def test_an_install_says_where_it_goes_and_its_size_when_done(tmp_path, count, monkeypatch):
    from agentrig.agents.installed.common import installing_line

    monkeypatch.setenv("HOME", str(tmp_path))
    said: list[str] = []
    ensure_tool_root("codex", "0.0.1", said.append, cache=tmp_path / "agents", _installers_override=FAKE)
    assert said[0] == "installing fake 0.0.1"
    assert said[-1].startswith("installed codex 0.0.1: 20 B in ") and said[-1].endswith(" s")
    assert installing_line("codex", "0.169.0", tmp_path / "agents" / "codex-0.169.0", "npm") == \
        "installing codex 0.169.0 into ~/agents/codex-0.169.0 (npm) …"
    said.clear()
    ensure_tool_root("codex", "0.0.1", said.append, cache=tmp_path / "agents", _installers_override=FAKE)
    assert said == []  # installed already: nothing to say


def test_two_trials_of_one_process_asking_at_once_install_once(tmp_path, count, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("FAKE_SLEEP", "0.5")
    with ThreadPoolExecutor(3) as pool:  # as trials do, each from its own thread (asyncio.to_thread)
        paths = list(pool.map(_ensure, [tmp_path / "agents"] * 3))
    assert count.read_text() == "x" and len(set(paths)) == 1


def test_a_failed_install_leaves_nothing_and_says_why(tmp_path, count):
    cache = tmp_path / "agents"
    with pytest.raises(ToolInstallError, match="registry is unreachable"):
        ensure_tool_root("codex", "0.0.1", cache=cache, _installers_override={"codex": _broken})
    assert [p.name for p in cache.iterdir()] == [".locks"] and list_tool_roots(cache) == []


def _killed_mid_install(cache: Path) -> None:
    os.environ["FAKE_SLEEP"] = "60"
    _ensure(cache)


def test_an_install_killed_midway_is_never_used_and_the_next_one_starts_afresh(tmp_path, count):
    cache = tmp_path / "agents"
    proc = multiprocessing.get_context("fork").Process(target=_killed_mid_install, args=(cache,))
    proc.start()
    deadline = time.monotonic() + 30
    while not count.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert count.exists(), "the first install did not start"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    partial = list(cache.glob(".partial-codex-0.0.1-*"))
    assert partial and list_tool_roots(cache) == []  # half-made: there, but never listed or used
    root = ensure_tool_root("codex", "0.0.1", cache=cache, _installers_override=FAKE)
    assert count.read_text() == "xx" and (root.path / MARKER).is_file()
    assert not list(cache.glob(".partial-*"))  # the killed install's leftovers are gone


def test_a_root_renamed_but_never_marked_is_rebuilt(tmp_path, count):
    cache = tmp_path / "agents"
    (cache / "codex-0.0.1" / "bin").mkdir(parents=True)  # as if killed between the rename and the marker
    assert list_tool_roots(cache) == []
    root = ensure_tool_root("codex", "0.0.1", cache=cache, _installers_override=FAKE)
    assert count.read_text() == "x" and (root.path / "bin" / "fake").is_file()
    assert [r.version for r in list_tool_roots(cache)] == ["0.0.1"]


def test_list_and_remove(tmp_path, count):
    cache = tmp_path / "agents"
    (cache / ".partial-codex-0.0.1-beta-4242").mkdir(parents=True)  # another version's install under way: not ours
    for v in ("0.0.1", "0.0.2"):
        ensure_tool_root("codex", v, cache=cache, _installers_override=FAKE)
    assert [(r.kind, r.version) for r in list_tool_roots(cache)] == [("codex", "0.0.1"), ("codex", "0.0.2")]
    assert remove_tool_root("codex", "0.0.1", cache=cache) == [cache / "codex-0.0.1"]
    assert [r.version for r in list_tool_roots(cache)] == ["0.0.2"]
    assert remove_tool_root("codex", "0.0.1", cache=cache) == []
    assert (cache / ".partial-codex-0.0.1-beta-4242").is_dir()
    (cache / "codex-0.0.3").mkdir()  # half-made: removed with every version too
    assert remove_tool_root("codex", cache=cache) == [cache / "codex-0.0.2", cache / "codex-0.0.3"]  # every version
    assert list_tool_roots(cache) == [] and not list(cache.glob("codex-*")) and not list(cache.glob(".partial-*"))


def test_the_cache_follows_the_override_then_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTRIG_AGENTS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert agents_dir() == tmp_path / "xdg" / "agentrig" / "agents"
    monkeypatch.setenv("AGENTRIG_AGENTS_DIR", str(tmp_path / "mine"))
    assert agents_dir() == tmp_path / "mine"
    assert agents_dir(tmp_path / "given") == tmp_path / "given"


def test_an_unknown_kind_or_a_malformed_version_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"agent\.kind: 'aider' is not an installed agent .*mini-swe-agent, codex, claude-code"):
        ensure_tool_root("aider", cache=tmp_path)
    with pytest.raises(ConfigError, match=r"agent\.version: '1\.0; rm -rf /' is not a version"):
        ensure_tool_root("codex", "1.0; rm -rf /", cache=tmp_path)
    assert not tmp_path.joinpath("codex-1.0; rm -rf ").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_version_npm_does_not_have_is_a_config_error_and_leaves_nothing(tmp_path):
    with pytest.raises(ConfigError) as info:
        ensure_tool_root("codex", "0.0.0-no-such-version", cache=tmp_path)
    message = str(info.value)
    assert message.startswith("agent.version: codex has no version '0.0.0-no-such-version' on the npm registry")
    assert "npm view @openai/codex versions" in message
    assert [p.name for p in tmp_path.iterdir()] == [".locks"]


def test_a_version_pip_does_not_have_is_a_config_error_and_leaves_nothing(tmp_path):
    with pytest.raises(ConfigError) as info:
        ensure_tool_root("mini-swe-agent", "0.0.999", cache=tmp_path)
    message = str(info.value)
    assert message.startswith("agent.version: mini-swe-agent has no version '0.0.999' on the package index")
    assert "2.4.6" in message or "leave `version` out" in message
    assert [p.name for p in tmp_path.iterdir()] == [".locks"]


def test_image_problem_compares_the_images_glibc_with_the_floor(tmp_path):
    image = tmp_path / "image"
    (image / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (image / "lib").symlink_to("usr/lib")
    (image / "usr/lib/x86_64-linux-gnu/libc-2.31.so").write_bytes(
        b"\x7fELF...GNU C Library (Ubuntu GLIBC 2.31-0ubuntu9) stable release version 2.31.\n...")
    (image / "usr/lib/x86_64-linux-gnu/libc.so.6").symlink_to("/lib/x86_64-linux-gnu/libc-2.31.so")  # absolute, inside the image
    tool = ToolRoot(kind="claude-code", version="9", path=tmp_path, entry="bin/claude", size=1, installed_at="x",
                    glibc_floor="2.17")
    assert image_problem(tool, image) is None
    newer = tool.model_copy(update={"glibc_floor": "2.34"})
    assert image_problem(newer, image) == ("claude-code 9 needs glibc ≥ 2.34, and the image has 2.31 "
                                           "(fix: use a newer base image, or another agent version)")
    assert "the image has no glibc" in image_problem(newer, tmp_path / "empty")
    assert image_problem(tool.model_copy(update={"glibc_floor": None}), tmp_path / "empty") is None


def test_the_agents_commands(tmp_path, count, monkeypatch):
    cache = tmp_path / "agents"
    monkeypatch.setenv("AGENTRIG_AGENTS_DIR", str(cache))
    runner = CliRunner()
    result = runner.invoke(app, ["agents", "list"])
    assert result.exit_code == 0 and "no agents installed yet" in result.output
    result = runner.invoke(app, ["agents", "install", "aider"])
    assert result.exit_code == 1 and "agent.kind: 'aider' is not an installed agent" in result.output
    assert "Traceback" not in result.output
    ensure_tool_root("codex", "0.0.1", cache=cache, _installers_override=FAKE)
    result = runner.invoke(app, ["agents", "install", "codex", "--version", "0.0.1"])  # there already: nothing to do
    assert result.exit_code == 0 and f"codex 0.0.1: {cache / 'codex-0.0.1'}" in result.output and count.read_text() == "x"
    listed = json.loads(runner.invoke(app, ["agents", "list", "--json"]).output)
    assert [(r["kind"], r["version"], r["entry"], r["path"]) for r in listed] == [
        ("codex", "0.0.1", "bin/fake", str(cache / "codex-0.0.1"))]
    result = runner.invoke(app, ["agents", "list"])
    assert result.output.split()[:2] == ["codex", "0.0.1"] and str(cache / "codex-0.0.1") in result.output
    result = runner.invoke(app, ["agents", "rm", "codex", "--version", "0.0.1"])
    assert result.exit_code == 0 and f"removed {cache / 'codex-0.0.1'}" in result.output
    result = runner.invoke(app, ["agents", "rm", "codex"])
    assert result.exit_code == 0 and "codex is not installed; nothing removed" in result.output


def test_an_installers_output_in_an_error_keeps_no_registry_credentials():
    from agentrig.agents.installed.common import tail

    out = ("npm http fetch GET 401 https://ci-bot:s3cr3t-t0ken@registry.example/@openai%2fcodex\n"
           "npm error code E401\nnpm error Unable to authenticate")
    said = tail(out)
    assert "s3cr3t-t0ken" not in said and "ci-bot" not in said
    assert "https://[redacted]@registry.example/@openai%2fcodex | npm error code E401" in said

