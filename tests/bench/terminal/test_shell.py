"""Shells and output bounds with real host processes (no sandbox): the parts every kind shares."""

from __future__ import annotations

import asyncio
import os

from agentrig.bench.terminal.shell import PersistentShell, ansi_c_quote
from agentrig.bench.terminal.shell import OutputCap, run_process, subprocess_spawn

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8"}


def test_output_cap_keeps_head_and_tail_with_the_count():
    cap = OutputCap(100)
    cap.feed("H" * 30)
    for _ in range(1000):
        cap.feed("m" * 10_000)
    cap.feed("T" * 30)
    text, omitted = cap.result()
    total = 30 + 10_000_000 + 30
    assert omitted == total - 100
    assert text.startswith("H" * 30 + "m" * 20) and text.endswith("m" * 20 + "T" * 30)
    assert f"[... {omitted} characters omitted ...]" in text


def test_output_cap_keeps_small_output_whole_and_decodes_split_utf8():
    cap = OutputCap(100)
    data = "héllo ✓\n".encode()
    for i in range(len(data)):
        cap.feed_bytes(data[i:i + 1])
    assert cap.result() == ("héllo ✓\n", 0)


async def test_run_process_returns_exit_code_and_interleaved_output(tmp_path):
    result = await run_process(subprocess_spawn(["bash", "-c", "echo out; echo err >&2; exit 7"], ENV, str(tmp_path)),
                               timeout_s=30, limit=1000)
    assert result.exit_code == 7 and result.output == "out\nerr\n" and not result.timed_out


async def test_run_process_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    result = await run_process(subprocess_spawn(["bash", "-c", f"sleep 1000 & echo $! > {pidfile}; wait"], ENV),
                               timeout_s=1, limit=1000)
    assert result.timed_out and result.exit_code is None
    pid = int(pidfile.read_text())

    def gone() -> bool:
        try:
            return "State:\tZ" in open(f"/proc/{pid}/status").read()
        except FileNotFoundError:
            return True

    # SIGKILLed: on a loaded machine it may still show running a moment before the kernel ends it
    for _ in range(200):
        if gone():
            break
        await asyncio.sleep(0.05)
    assert gone()


async def test_a_huge_output_is_streamed_not_held(tmp_path):
    result = await run_process(subprocess_spawn(["bash", "-c", "head -c 10000000 /dev/zero | tr '\\0' x"], ENV),
                               timeout_s=60, limit=2000)
    assert result.omitted_chars == 10_000_000 - 2000 and len(result.output) < 2100


def test_ansi_c_quote_round_trips_through_bash():
    import subprocess

    text = "echo 'a' \"b\" $HOME `x` \\ \n ✓"
    out = subprocess.run(["bash", "-c", f"printf %s {ansi_c_quote(text)}"], capture_output=True, text=True).stdout
    assert out == text


async def test_persistent_shell_on_the_host_keeps_state_and_survives_tricky_commands(tmp_path):
    shell = PersistentShell(subprocess_spawn(["bash"], ENV, str(tmp_path)), limit=1000)
    try:
        await shell.run("cd /tmp && export X=1", 30)
        result = await shell.run("pwd; echo $X; printf 'no newline'", 30)
        assert result.output == "/tmp\n1\nno newline" and result.exit_code == 0
        quoted = await shell.run("echo \"it's\" 'a \"test\"'; (exit 4)", 30)
        assert quoted.output == "it's a \"test\"\n" and quoted.exit_code == 4
        reads = await shell.run("cat; echo after", 30)  # stdin is /dev/null, not the protocol
        assert reads.output == "after\n"
        env = await shell.run("echo $ONLY", 30, env={"ONLY": "given"})
        assert env.output == "given\n"
        ended = await shell.run("exit 3", 30)
        assert ended.exit_code == 3 and ended.note
        again = await shell.run("echo back; pwd", 30)
        assert again.output == f"back\n{tmp_path}\n"
    finally:
        await shell.close()


def test_output_cap_keeps_a_line_of_the_omitted_middle_that_shows_a_fetch_failing():
    # an apt-get install's long output buries the wget after it: the line saying the host could not be
    # reached is kept after the marker (the agent and the audit still see it); the rest stays left out
    cap = OutputCap(200)
    cap.feed("Reading package lists...\n" * 10)
    cap.feed("Unpacking libfoo ...\n" * 3000)
    cap.feed("Resolving dl.google.com (dl.google.com)... failed: Temporary fail")
    cap.feed("ure in name resolution.\nwget: unable to resolve host address 'dl.google.com'\n")
    cap.feed("Setting up libbar ...\n" * 3000)
    text, omitted = cap.result()
    assert omitted > 100_000 and f"[... {omitted} characters omitted ...]" in text
    assert ("[kept from the part left out: Resolving dl.google.com (dl.google.com)... failed: Temporary failure in "
            "name resolution.]\n[kept from the part left out: wget: unable to resolve host address 'dl.google.com']\n") in text
    assert "Unpacking libfoo" not in text.split("omitted ...]")[1]
    from agentrig.bench.terminal.core.netfail import network_failure

    assert "could not reach dl.google.com" in network_failure(text)


def test_output_cap_keeps_nothing_more_when_the_failing_line_is_shown_or_absent():
    shown = OutputCap(10_000)
    shown.feed("curl: (6) Could not resolve host: example.org\n")
    assert shown.result() == ("curl: (6) Could not resolve host: example.org\n", 0)
    quiet = OutputCap(100)
    for _ in range(100):
        quiet.feed("all fine here\n" * 10)
    assert "kept from the part left out" not in quiet.result()[0]
