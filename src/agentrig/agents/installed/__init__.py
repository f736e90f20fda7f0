"""Installed agents' tool roots: each agent (mini-swe-agent, Codex CLI, Claude Code) installed once
into a cached directory keyed by kind and version, which a sandbox mounts read-only at any path —
the task's image is not changed. ``toolroot.py``: the cache, ``ensure_tool_root`` / ``list_tool_roots``
/ ``remove_tool_root``; ``python.py``: mini-swe-agent's relocatable CPython; ``npm.py``: Codex's and
Claude Code's native binaries; ``elf.py``: shared-library closures and glibc versions;
``records.py``: each agent's own record (mini's trajectory, Codex's ``--json`` events, Claude Code's
``stream-json``) read into the trial's conversation, aligned with the measuring proxy's calls;
``cli_config.py``: Codex's ``config.toml``; ``conversation.py``: Codex or Claude Code held in one
conversation, turn by turn, on this host (τ²'s agent); ``install_arms``: an experiment's agents
installed before a run.
"""

from __future__ import annotations

from .common import ToolInstallError
from .toolroot import (
    DEFAULT_VERSIONS,
    ToolRoot,
    agents_dir,
    ensure_tool_root,
    image_problem,
    list_tool_roots,
    remove_tool_root,
)

__all__ = ["DEFAULT_VERSIONS", "ToolInstallError", "ToolRoot", "agents_dir", "ensure_tool_root", "image_problem",
           "list_tool_roots", "remove_tool_root"]
