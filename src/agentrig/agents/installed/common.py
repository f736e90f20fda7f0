"""What the installers of tool roots share: the install error, the progress line, sizes, and
running an installer's command (pip, npm) with its output kept for the error message."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from agentrig.errors import AgentrigError
from agentrig.redact import REDACTED, redact

Progress = Callable[[str], None]


class ToolInstallError(AgentrigError):
    """An installed agent's tool root could not be made (no npm or pip, the registry unreachable,
    a binary missing from the package): the message names the step and the fix."""


def _display(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if text == home or text.startswith(home + "/") else text


def tree_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") or n >= 100 else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


def remove_tree(path: Path) -> None:
    """Remove a directory, also one whose files were made read-only."""
    def fix(func, target, _exc) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o755)
            os.chmod(target, 0o755)
        with contextlib.suppress(OSError):
            func(target)

    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, onerror=fix)


def installing_line(kind: str, version: str, target: Path, tool: str) -> str:
    """The progress line an installer says first."""
    return f"installing {kind} {version} into {_display(target)} ({tool}) …"


def run_tool(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
             timeout_s: float = 1800) -> subprocess.CompletedProcess:
    """Run an installer's command; its stdout and stderr together in ``.stdout``."""
    try:
        return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ToolInstallError(f"cannot run {argv[0]}: it is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise ToolInstallError(f"{' '.join(argv[:3])} … did not finish within {timeout_s:.0f} s") from None


_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def tail(text: str, lines: int = 6) -> str:
    """The last lines of a command's output, on one line (for an error message), with no registry
    credentials (``https://user:token@host`` loses its ``user:token``) and no known key."""
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return redact(_URL_CREDENTIALS.sub(lambda m: m[1] + REDACTED + "@", " | ".join(kept)))[-600:]
