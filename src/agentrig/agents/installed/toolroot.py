"""The cached tool roots of installed agents: one directory per (kind, version), installed once.

``ensure_tool_root(kind, version)`` returns the root, installing it first when it is missing.
Installs are serialised per key by an ``flock`` on ``<cache>/.locks/<kind>-<version>.lock`` (two trials,
two processes never install twice); a root is built in ``<cache>/.partial-<kind>-<version>-<pid>``,
renamed into place and only then given its marker file (``agentrig-tool.json``: kind, version,
entry, size, installed time). A directory without the marker is half-made: it is never used, and
the next install under the lock removes it.

The cache is ``$AGENTRIG_AGENTS_DIR``, else ``$XDG_CACHE_HOME/agentrig/agents`` (default
``~/.cache/agentrig/agents``). A root runs inside any task image when bound read-only at any
absolute path: ``<mount>/<entry>`` is the agent's command (how each kind manages it: ``python.py``
and ``npm.py``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Optional

from agentrig.errors import ConfigError
from agentrig.types import Strict

from .common import Progress, human_size, remove_tree, tree_size

DEFAULT_VERSIONS: dict[str, str] = {"mini-swe-agent": "2.4.6", "codex": "0.169.0", "claude-code": "2.1.328"}
MARKER = "agentrig-tool.json"
ENV_DIR = "AGENTRIG_AGENTS_DIR"
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+\-]{0,63}")


class ToolRoot(Strict):
    """One installed agent: ``path`` is the directory on the host; ``entry`` the agent's command
    relative to it (run it as ``<where the root is mounted>/<entry>``)."""

    kind: str
    version: str
    path: Path
    entry: str
    size: int  # bytes on disk
    installed_at: str  # ISO 8601, UTC
    install_s: float = 0.0  # how long the install took
    how: str = ""  # how the root runs inside any image (e.g. "CPython 3.11.7 with its own loader and libraries")
    glibc_floor: Optional[str] = None  # the oldest glibc the image must have ("2.26"); None: needs none

    def command(self, mount: str) -> str:
        """The agent's command when the root is mounted at ``mount`` inside the sandbox."""
        return f"{mount.rstrip('/')}/{self.entry}"


def agents_dir(explicit: Path | None = None) -> Path:
    """Where tool roots are cached (see the module's docstring)."""
    if explicit is not None:
        return Path(explicit).expanduser()
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentrig" / "agents"


def _installers() -> dict:
    from . import npm, python

    return {"mini-swe-agent": python.install_mini, "codex": npm.install_codex, "claude-code": npm.install_claude}


def check_kind_version(kind: str, version: str | None) -> str:
    """The version to install (the kind's default when None); a ConfigError for an unknown kind or
    a version that is not a version string."""
    if kind not in DEFAULT_VERSIONS:
        raise ConfigError(f"agent.kind: {kind!r} is not an installed agent "
                          f"(fix: use one of {', '.join(DEFAULT_VERSIONS)})")
    if version is None:
        return DEFAULT_VERSIONS[kind]
    if not _VERSION.fullmatch(version):
        raise ConfigError(f"agent.version: {version!r} is not a version "
                          f"(fix: a released version of {kind} such as {DEFAULT_VERSIONS[kind]}, or leave it out)")
    return version


def root_path(kind: str, version: str, cache: Path | None = None) -> Path:
    return agents_dir(cache) / f"{kind}-{version}"


def read_root(path: Path) -> ToolRoot | None:
    """The tool root at ``path`` if it is complete (has its marker), else None."""
    try:
        data = json.loads((path / MARKER).read_text(encoding="utf-8"))
        return ToolRoot(**{**data, "path": path})
    except (OSError, ValueError, TypeError):
        return None


@contextlib.contextmanager
def _locked(lock: Path):
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _partials(base: Path, kind: str, version: str) -> list[Path]:
    """The half-made installs of exactly this kind and version (``.partial-<kind>-<version>-<pid>``)."""
    pattern = re.compile(rf"\.partial-{re.escape(kind)}-{re.escape(version)}-\d+")
    return [p for p in base.glob(".partial-*") if pattern.fullmatch(p.name)]


def _readable_by_all(root: Path) -> None:
    """Whatever the umask, any user of the sandbox (a task's USER) may read and run the root."""
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, os.stat(dirpath).st_mode | 0o555)
        for name in files:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))


def ensure_tool_root(kind: str, version: str | None = None, progress: Progress | None = None, *,
                     cache: Path | None = None, _installers_override: dict | None = None) -> ToolRoot:
    """The tool root of ``kind`` at ``version`` (its default when None), installed first when missing.

    Raises ConfigError (unknown kind, or a version its registry does not have: names
    ``agent.version``) or ToolInstallError (the install failed: no npm, no network, …); either way
    nothing half-made is left behind."""
    version = check_kind_version(kind, version)
    installers = _installers_override or _installers()
    target = root_path(kind, version, cache)
    found = read_root(target)
    if found is not None:
        return found
    say = progress or (lambda _m: None)
    with _locked(target.parent / ".locks" / f"{kind}-{version}.lock"):
        found = read_root(target)  # another process finished it while we waited
        if found is not None:
            return found
        for stale in _partials(target.parent, kind, version):  # a killed install's leftovers (we hold the lock)
            remove_tree(stale)
        if target.exists():  # renamed but never marked: half-made
            remove_tree(target)
        partial = target.parent / f".partial-{kind}-{version}-{os.getpid()}"
        partial.mkdir(parents=True)
        started = time.monotonic()
        try:
            info = installers[kind](partial, version, say, target)
            _readable_by_all(partial)
            os.rename(partial, target)
        except BaseException:
            remove_tree(partial)
            raise
        size = tree_size(target)
        root = ToolRoot(kind=kind, version=version, path=target, entry=info["entry"], size=size,
                        installed_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                        install_s=round(time.monotonic() - started, 1), how=info.get("how", ""),
                        glibc_floor=info.get("glibc_floor"))
        tmp = target / f".{MARKER}.tmp"
        tmp.write_text(json.dumps(root.model_dump(mode="json", exclude={"path"}), indent=2) + "\n", encoding="utf-8")
        os.rename(tmp, target / MARKER)
        say(f"installed {kind} {version}: {human_size(size)} in {root.install_s:.0f} s")
        return root


def install_arms(arms: list, kinds: tuple[str, ...], progress: Progress | None = None) -> None:
    """Install (or find cached) the tool root of every arm whose agent is one of ``kinds``, once per
    kind and version, before a run; a failed install is a ConfigError naming the arm's agent."""
    from agentrig.errors import AgentrigError

    seen: set[tuple[str, str | None]] = set()
    for arm in arms:
        a = arm.agent
        if a.kind not in kinds or (a.kind, a.version) in seen:
            continue
        seen.add((a.kind, a.version))
        try:
            ensure_tool_root(a.kind, a.version, progress=progress)
        except AgentrigError as exc:
            raise ConfigError(f"arm {arm.name!r}: agent {a.kind!r} could not be installed: {exc}") from None


def list_tool_roots(cache: Path | None = None) -> list[ToolRoot]:
    """Every complete tool root in the cache, by kind then version."""
    base = agents_dir(cache)
    if not base.is_dir():
        return []
    roots = [r for p in sorted(base.iterdir()) if p.is_dir() and not p.name.startswith(".")
             if (r := read_root(p)) is not None]
    return sorted(roots, key=lambda r: (r.kind, r.version))


def remove_tool_root(kind: str, version: str | None = None, cache: Path | None = None) -> list[Path]:
    """Remove the tool root of ``kind`` at ``version`` (every installed version when None) and any
    half-made copy of it; the paths removed (none: nothing was installed)."""
    check_kind_version(kind, version)
    base = agents_dir(cache)
    if version is not None:
        versions = [version]
    else:  # every version there, complete or half-made
        names = [p.name for p in base.iterdir()] if base.is_dir() else []
        versions = sorted({n[len(kind) + 1:] for n in names if n.startswith(f"{kind}-")} |
                          {m[1] for n in names if (m := re.fullmatch(rf"\.partial-{re.escape(kind)}-(.+)-\d+", n))})
    removed = []
    for v in versions:
        target = root_path(kind, v, cache)
        with _locked(base / ".locks" / f"{kind}-{v}.lock"):
            for stale in _partials(base, kind, v):
                remove_tree(stale)
            if target.exists():
                remove_tree(target)
                removed.append(target)
    return removed


def image_problem(tool: ToolRoot, image_root: Path) -> str | None:
    """Why ``tool`` cannot run in the image whose root is ``image_root`` (its glibc older than the
    tool's floor, or none at all), or None when it can."""
    if tool.glibc_floor is None:
        return None
    from .elf import image_glibc, version_tuple

    have = image_glibc(image_root)
    if have is None:
        return (f"{tool.kind} {tool.version} needs glibc ≥ {tool.glibc_floor}, and the image has no glibc "
                "(fix: use a Debian- or Ubuntu-based image)")
    if version_tuple(have) < version_tuple(tool.glibc_floor):
        return (f"{tool.kind} {tool.version} needs glibc ≥ {tool.glibc_floor}, and the image has {have} "
                "(fix: use a newer base image, or another agent version)")
    return None
