"""What one command of a script fetches, and from where (read from its words, ``shellread``).

``fetch_of(words)`` says whether a command fetches from the network and from which host:

- from a **package registry** this machine reaches (``registry``): ``pip``/``uv`` installs from
  PyPI, ``npm install``/``npm ci``/``npm install -g``/``pnpm`` from npm's registry, ``apt-get``
  from Debian's mirror — a sandbox with the network reaches them, through the host's settings
  (``hostsettings.py``) when those are needed;
- from a host **beyond** the registries (``crates.io`` for ``cargo add``, ``proxy.golang.org`` for
  ``go get``, the host of a ``curl``/``wget``/``git clone`` URL, Launchpad's
  ``ppa.launchpadcontent.net`` for ``add-apt-repository ppa:…`` …), named;
- or only **maybe** (``maybe``): ``npx``, ``cargo test``, ``go test``, ``go mod download``,
  ``mvn``, ``gradle`` fetch only what is not there yet — reading cannot decide, so the task is
  played and its output judged (``netfail.py`` names a host it could not reach).

A fetch from the machine itself (``curl http://localhost:8000``) is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .netfail import REGISTRY_HOSTS, hosts_in

PYPI, NPM, DEBIAN = "PyPI", "npm's registry", "Debian's mirror"
_REGISTRY_HOST = {PYPI: "pypi.org", NPM: "registry.npmjs.org", DEBIAN: "deb.debian.org"}
_LOOPBACK = re.compile(r"^(localhost|127\.[\d.]+|0\.0\.0\.0|\[?::1\]?)$", re.IGNORECASE)
_PREFIX = {"sudo", "env", "command", "exec", "time", "nohup", "timeout", "xargs"}


@dataclass(frozen=True)
class Fetch:
    what: str  # "npm install", "curl"
    host: str | None  # the host fetched from, when the command names it
    registry: str | None = None  # PYPI / NPM / DEBIAN: one of the registries this machine reaches
    maybe: bool = False  # it fetches only what is not there yet: reading cannot decide

    def where(self) -> str:
        if self.registry:
            return f"{self.registry} ({self.host})"
        return f"{self.host}, a host beyond the package registries" if self.host else "its host"


def _command_words(words: list[str]) -> list[str]:
    """The command and its arguments: without leading assignments and wrappers (``sudo``, ``env``)."""
    w = list(words)
    while w:
        head = w[0].rsplit("/", 1)[-1]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w[0]):
            w = w[1:]
        elif head in _PREFIX:
            if head == "command" and w[1:2] == ["-v"]:
                return []  # only asks whether the command exists
            w = w[1:]
            while w and w[0].startswith("-"):  # the wrapper's own options (sudo -E, timeout -s KILL)
                w = w[1:]
            if head == "timeout" and w and re.match(r"^\d", w[0]):
                w = w[1:]
        else:
            break
    return w


def _url_hosts(args: list[str]) -> list[str]:
    return [h for a in args for h in hosts_in(a)] + [
        m.group(1).lower() for a in args if not a.startswith("-")
        for m in [re.match(r"^([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?:[:/]|$)", a)] if m]


def _remote(what: str, args: list[str]) -> Fetch | None:
    """A fetch of the URLs in `args`: None when it only names this machine (``localhost:8000``)."""
    hosts = [h for h in _url_hosts(args) if not _LOOPBACK.match(h)]
    if not hosts:
        targets = [re.split(r"[:/]", a.split("://", 1)[-1], maxsplit=1)[0] for a in args if not a.startswith("-")]
        if any(_LOOPBACK.match(t) or t.startswith("127.") for t in targets if t):
            return None
    host = hosts[0] if hosts else None
    registry = next((name for name, h in _REGISTRY_HOST.items() if host == h), None)
    if registry is None and host in REGISTRY_HOSTS:
        registry = PYPI if "python" in host or "pypi" in host else DEBIAN if "debian" in host else NPM
    return Fetch(what, host, registry)


LAUNCHPAD_PPA = "ppa.launchpadcontent.net"  # where a PPA's packages are (its key: api.launchpad.net)


def _apt_repository(head: str, args: list[str]) -> Fetch | None:
    """``add-apt-repository ppa:USER/NAME`` fetches from Launchpad (its signing key through
    api.launchpad.net, its index from ppa.launchpadcontent.net); ``add-apt-repository 'deb URL
    SUITE …'`` or a bare URL, from the URL's host; ``--remove`` fetches nothing."""
    if any(a in ("-r", "--remove") for a in args):
        return None
    for arg in (a for a in args if not a.startswith("-")):
        if arg.startswith("ppa:"):
            return Fetch(head, LAUNCHPAD_PPA)
        if "://" in arg:
            return _remote(head, arg.split())
    return None


def fetch_of(words: list[str]) -> Fetch | None:
    """What the command `words` fetches (see the module docstring), or None."""
    w = _command_words(words)
    if not w:
        return None
    head, args = w[0].rsplit("/", 1)[-1], w[1:]
    sub = next((a for a in args if not a.startswith("-")), "")
    if head in ("pip", "pip3") or re.fullmatch(r"pip3\.\d+", head) or (
            re.fullmatch(r"python3?(\.\d+)?", head) and args[:2] == ["-m", "pip"]):
        sub = next((a for a in (args[2:] if args[:2] == ["-m", "pip"] else args) if not a.startswith("-")), "")
        return Fetch(f"pip {sub}", "pypi.org", PYPI) if sub in ("install", "download", "wheel") else None
    if head == "uv":
        if sub in ("add", "sync", "lock") or args[:2] == ["pip", "install"] or args[:2] == ["pip", "sync"]:
            return Fetch(f"uv {sub}", "pypi.org", PYPI)
        if sub == "python" and "install" in args:
            return Fetch("uv python install", "github.com")  # python-build-standalone's releases
        if sub in ("run", "tool"):
            return Fetch(f"uv {sub}", "pypi.org", PYPI, maybe=True)
        return None
    if head == "uvx":
        return Fetch("uvx", "pypi.org", PYPI, maybe=True)
    if head == "npm":
        if sub in ("install", "i", "ci", "add", "update", "up", "upgrade", "install-test", "it", "install-ci-test"):
            return Fetch(f"npm {sub}", _REGISTRY_HOST[NPM], NPM)
        if sub in ("exec", "x", "init", "create"):
            return Fetch(f"npm {sub}", _REGISTRY_HOST[NPM], NPM, maybe=True)
        return None
    if head in ("npx", "pnpx") or (head == "pnpm" and sub == "dlx"):
        return Fetch(head, _REGISTRY_HOST[NPM], NPM, maybe=True)
    if head == "pnpm" and sub in ("install", "i", "add", "update", "up"):
        return Fetch(f"pnpm {sub}", _REGISTRY_HOST[NPM], NPM)
    if head == "yarn" and sub in ("", "install", "add", "upgrade"):
        return Fetch(f"yarn {sub}".strip(), "registry.yarnpkg.com")
    if head in ("apt-get", "apt", "aptitude") and sub in (
            "update", "install", "upgrade", "dist-upgrade", "full-upgrade", "build-dep", "source", "download"):
        return Fetch(f"{head} {sub}", _REGISTRY_HOST[DEBIAN], DEBIAN)
    if head in ("curl", "wget"):
        return _remote(head, args)
    if head == "git" and sub in ("clone", "fetch", "pull", "ls-remote", "submodule"):
        return _remote(f"git {sub}", args) or None
    if head == "cargo":
        if sub in ("add", "install", "fetch", "update", "search"):
            return Fetch(f"cargo {sub}", "crates.io")
        return Fetch(f"cargo {sub}", "crates.io", maybe=True) if sub in (
            "build", "test", "run", "check", "generate-lockfile", "bench", "doc", "clippy") else None
    if head == "go":
        if sub == "get" or (sub == "install" and any("@" in a for a in args)):
            return Fetch(f"go {sub}", "proxy.golang.org")
        return Fetch(f"go {sub}", "proxy.golang.org", maybe=True) if sub in (
            "mod", "test", "build", "run", "install", "vet", "generate") else None
    if head in ("gem", "bundle") and sub in ("install", "update"):
        return Fetch(f"{head} {sub}", "rubygems.org")
    if head in ("conda", "mamba", "micromamba") and sub in ("install", "create", "update"):
        return Fetch(f"{head} {sub}", "conda.anaconda.org")
    if head in ("mvn", "gradle", "gradlew", "sbt", "dotnet"):
        return Fetch(head, None, maybe=True)
    if head in ("add-apt-repository", "apt-add-repository"):
        return _apt_repository(head, args)
    if head in ("rustup", "sdkmanager"):
        return Fetch(head, "static.rust-lang.org" if head == "rustup" else None)
    return None
