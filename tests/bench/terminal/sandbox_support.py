"""Helpers for the sandbox tests: real task directories and real bwrap sandboxes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.taskmodel import TerminalTask


def needs_root_bwrap() -> pytest.MarkDecorator:
    return pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root (CI runs as root)")


def make_task(tmp_path: Path, dockerfile: str | None = None, files: dict[str, str] | None = None,
              task_id: str = "probe", **fields) -> TerminalTask:
    task_dir = tmp_path / task_id
    (task_dir / "tests").mkdir(parents=True, exist_ok=True)
    (task_dir / "tests" / "test_outputs.py").write_text("def test_secret():\n    assert True\n")
    for name, text in (files or {}).items():
        (task_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / name).write_text(text)
    if dockerfile is not None:
        (task_dir / "Dockerfile").write_text(dockerfile)
    return TerminalTask(id=task_id, path=task_dir, format="tb1", instruction="probe",
                        dockerfile=task_dir / "Dockerfile" if dockerfile is not None else None,
                        tests_dir=task_dir / "tests", **fields)


def settings(tmp_path: Path, **overrides) -> SandboxSettings:
    return SandboxSettings(cache_dir=tmp_path / "cache", **overrides)


HEREDOCS = """FROM {base}
WORKDIR /app
COPY <<EOT logs/auth.log
Apr 10 08:15:45 server sshd[1235]: Failed password for root
  an indented line
EOT
COPY --chmod=755 <<'EOF' /usr/local/bin/
#!/bin/sh
echo from-a-copied-script
EOF
RUN <<EOF
set -e
echo "run-heredoc $((6 * 7))" > /app/run.txt
EOF
RUN cat <<-EOT > /app/shell.txt && echo appended >> /app/shell.txt
\tinside
\tEOT
"""


async def built_heredocs(tmp_path: Path, base: str, **overrides) -> None:
    """HEREDOCS built FROM `base` in the sandbox `overrides` ask for: the image holds the files, their
    content and modes, the scripts' effects — the same on every sandbox."""
    task = make_task(tmp_path, HEREDOCS.format(base=base), task_id="heredocs")
    sandbox = await open_sandbox(task, settings(tmp_path, **overrides))
    try:
        result = await sandbox.run("cat logs/auth.log; stat -c %a logs/auth.log /usr/local/bin/EOF; EOF; "
                                   "cat run.txt shell.txt", 60)
    finally:
        await sandbox.close()
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "Apr 10 08:15:45 server sshd[1235]: Failed password for root", "  an indented line", "644", "755",
        "from-a-copied-script", "run-heredoc 42", "inside", "appended"], result.output


async def opened(task: TerminalTask, tmp_path: Path, **overrides):
    return await open_sandbox(task, settings(tmp_path, **overrides))


def host_pids_in_namespace(init_pid: int) -> list[tuple[int, str]]:
    """(host pid, cmdline) of every process in the sandbox's pid namespace."""
    target = os.stat(f"/proc/{init_pid}/ns/pid").st_ino
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino == target:
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                    found.append((int(entry), cmd))
            except OSError:
                continue
    return found
