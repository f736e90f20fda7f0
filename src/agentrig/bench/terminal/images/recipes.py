"""Recipes for base images: what a task's ``FROM`` line stands for, built from Debian packages.

``resolve_base(ref)`` maps an image reference (TB's ``ghcr.io/laude-institute/t-bench/python-3-13``
and ``ubuntu-24-04``, ``python:3.x[-slim][-<suite>]``, ``debian:<suite>[-slim]``,
``ubuntu:<version>``) to a ``BaseRecipe`` or None. What the real images have and tasks rely on is
taken from their public Dockerfiles: TB's images are ``python:3.13-slim-bookworm`` /
``ubuntu:24.04`` plus ``tmux asciinema`` and ``WORKDIR /app``; the official python images have
``python``/``pip`` on PATH, ``LANG=C.UTF-8`` and ``CMD ["python3"]``, the non-slim ones the
buildpack-deps tools (git, curl, a C compiler). Where we substitute (Debian for Ubuntu, the
suite's Python for another version) the recipe says so in ``substituted``.

A python image keeps its own Debian suite (the tag's; bookworm by default) and that suite's
Python stands in for another version, said in ``substituted`` — unless the suite's Python is newer
than the image's: then the suite with the nearest Python (``python_suite``: 3.8 → bullseye's 3.9).
The image's Python is laid out as the official images have it (``python_layout``): a Python
environment at ``/usr/local`` (``python``/``pip`` in ``/usr/local/bin``, packages in
``/usr/local/lib/python3.X/site-packages``, pip installed by pip itself), which sees none of the
Python libraries Debian's own packages install (asciinema's) — in the real image those belong to
Debian's separate Python. Where another Python stands in, the real image's version paths lead to it
(``python_alias``: ``/usr/local/lib/python3.13`` → the stand-in's).

Ubuntu bases are built from Ubuntu's own archive when ``$AGENTRIG_UBUNTU_ARCHIVE`` names it
(``distro = "ubuntu"``, nothing substituted; ``ubuntu.py``); otherwise Debian stands in, said so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

from pydantic import BaseModel, Field

RECIPE_FORMAT = "1"
# fields added after format 1: in the key only when set, so roots built before them keep their keys
LATER_FIELDS = ("python_layout", "recommends", "python_alias", "distro", "mirror")
PYTHON_LAYOUT = "official-3"  # what builder lays over Debian's Python (the hook, _python_layout); bump when it changes
SUITE_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
DEFAULT_SUITE = "bookworm"  # the suite this machine's Debian mirror serves; ubuntu and bare python tags map to it
UBUNTU_NAMES = {"20.04": "focal", "22.04": "jammy", "24.04": "noble", "24.10": "oracular", "25.04": "plucky"}
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Ubuntu's own archive (a mirror of it): when set, Ubuntu bases are built from it — the real
# distribution, nothing substituted; unset, Debian stands in (this machine's registries are Debian's)
UBUNTU_ARCHIVE_ENV = "AGENTRIG_UBUNTU_ARCHIVE"
# the official python images ship the interpreter's headers (Python.h): tests build C extensions with them
# no python3-pip: the image's Python is a virtual environment at /usr/local (builder.PYTHON_AT_LOCAL)
# with pip installed from the wheel python3-venv ships, as the official images have theirs
PYTHON_PACKAGES = ["python3", "python3-venv", "python3-dev", "python-is-python3", "ca-certificates", "netbase"]
BUILDPACK_PACKAGES = ["git", "curl", "wget", "build-essential", "procps", "openssh-client", "xz-utils", "unzip"]
TB_PACKAGES = ["tmux", "asciinema"]
TB_PREFIX = "ghcr.io/laude-institute/t-bench/"


class BaseRecipe(BaseModel):
    """How to build one base root: a suite (Debian's, or Ubuntu's from its archive), packages, and the image's metadata."""

    ref: str  # the image reference it stands for, as written in the FROM line
    suite: str  # the suite mmdebstrap builds (Debian's; Ubuntu's codename when distro is "ubuntu")
    distro: str | None = None  # None: Debian; "ubuntu": built from Ubuntu's archive (`mirror`)
    mirror: str | None = None  # the archive's URL when not Debian's
    packages: list[str] = Field(default_factory=list)
    recommends: bool = False  # install the packages' Recommends too, as the image's own `apt-get install -y` does
    python: bool = False  # python/pip on PATH and pip installs (no EXTERNALLY-MANAGED refusal)
    python_layout: str | None = None  # the official images' /usr/local layout over Debian's Python (PYTHON_LAYOUT)
    # the real image's Python version when another stands in: its paths (/usr/local/lib/python3.13,
    # /usr/local/bin/python3.13) lead to the stand-in's, so a Dockerfile that names them acts on them
    python_alias: str | None = None
    workdir: str = "/"  # the image's WORKDIR
    env: dict[str, str] = Field(default_factory=dict)
    cmd: list[str] = Field(default_factory=lambda: ["bash"])
    shell: list[str] = Field(default_factory=lambda: ["/bin/sh", "-c"])  # the Dockerfile SHELL for RUN
    substituted: str | None = None  # what differs from the real image (shown by `tasks show`, audit: base_substituted)
    # the real image's package archive when the stand-in's differs (Ubuntu's, another Debian suite's):
    # a solution's apt-get asking for what only that archive has fails for the substitution
    archive: str | None = None

    def image_changes(self) -> list[str]:
        """The image's metadata as Dockerfile lines (``podman/docker import --change`` each)."""
        lines = [f"ENV {name}={json.dumps(value)}" for name, value in self.env.items()]
        return [*lines, f"WORKDIR {self.workdir}", f"CMD {json.dumps(self.cmd)}", f"SHELL {json.dumps(self.shell)}"]

    def key(self) -> str:
        """The cache key: everything that changes the built tree (not the ref: two refs may share a root)."""
        body = self.model_dump(exclude={"ref", "substituted", "archive"})
        for name in LATER_FIELDS:
            if body.get(name) in (None, False):  # unset: the keys built before it stay
                body.pop(name, None)
        return hashlib.sha256(json.dumps([RECIPE_FORMAT, body], sort_keys=True).encode()).hexdigest()[:16]


def python_suite(version: str, suite: str | None) -> str | None:
    """The Debian suite to build a ``python:<version>`` image on. The image's own suite (the tag's,
    default bookworm) keeps its tools (openssl, apt's packages) — unless its Python is newer than
    the image's: then the suite whose Python is nearest (a tie keeps the image's suite), since the
    pinned packages of an older Python have no wheels for a much newer one (TB's fix-pandas-version:
    pandas 1.3 for Python 3.8 builds on bullseye's 3.9, not on bookworm's 3.11). An older Python
    than the image's stays: a newer suite would change the tools' behaviour (TB's
    openssl-selfsigned-cert reads OpenSSL 3.0's output; trixie has 3.5) for a version few tasks
    need. None: no such suite."""
    wanted = suite or DEFAULT_SUITE
    if wanted not in SUITE_PYTHON:
        return None

    def minor(name: str) -> int:
        return int(SUITE_PYTHON[name].split(".")[1])

    target = int(version.split(".")[1])
    if minor(wanted) <= target:
        return wanted
    # a tie keeps the image's suite, else the newer of the two (nearer the image's own)
    return min(SUITE_PYTHON, key=lambda name: (abs(minor(name) - target), name != wanted, -minor(name)))


def _python(version: str, variant: str, suite: str | None, ref: str) -> BaseRecipe | None:
    chosen = python_suite(version, suite)
    if chosen is None:
        return None
    python = SUITE_PYTHON[chosen]
    notes = []
    if python != version:
        notes.append(f"Python {python} (Debian {chosen}'s) stands in for Python {version}")
    if suite is not None and chosen != suite:  # a tag without a suite names none (the image's default moves)
        notes.append(f"Debian {chosen} stands in for Debian {suite}"
                     + (f" (its Python {python} is the image's)" if python == version else " (its Python is nearer)"))
    packages = list(PYTHON_PACKAGES)
    if variant != "slim":
        packages += BUILDPACK_PACKAGES
    env = {"PATH": PATH, "LANG": "C.UTF-8", "PYTHON_VERSION": python}
    return BaseRecipe(ref=ref, suite=chosen, packages=packages, python=True, python_layout=PYTHON_LAYOUT, env=env,
                      cmd=["python3"], substituted="; ".join(notes) or None,
                      python_alias=version if python != version else None,
                      archive=f"Debian {suite}'s" if suite is not None and chosen != suite else None)


def ubuntu_archive() -> str | None:
    """Ubuntu's archive to build Ubuntu bases from (``$AGENTRIG_UBUNTU_ARCHIVE``), or None."""
    return (os.environ.get(UBUNTU_ARCHIVE_ENV) or "").strip().rstrip("/") or None


def _ubuntu(version: str, ref: str) -> BaseRecipe | None:
    """The real Ubuntu release `version` (``24.04`` or its codename) from Ubuntu's archive, when one
    is set; None otherwise (or for ``latest``, whose release moves): Debian then stands in."""
    archive = ubuntu_archive()
    codename = UBUNTU_NAMES.get(version, version if version in UBUNTU_NAMES.values() else None)
    if archive is None or codename is None:
        return None
    return BaseRecipe(ref=ref, suite=codename, distro="ubuntu", mirror=archive, env={"PATH": PATH})


def resolve_base(image_ref: str) -> BaseRecipe | None:
    """The recipe for a FROM reference, or None when we have none (the caller decides what then)."""
    ref = image_ref.strip()
    name = ref.split("@", 1)[0]
    for prefix in ("docker.io/library/", "docker.io/", "library/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.startswith(TB_PREFIX):
        kind = name[len(TB_PREFIX):].split(":", 1)[0]
        match = re.fullmatch(r"python-3-(\d+)", kind)
        recipe = _python(f"3.{match.group(1)}", "slim", "bookworm", ref) if match else None  # python:3.X-slim-bookworm
        if recipe is not None:
            recipe.packages += TB_PACKAGES
            recipe.workdir = "/app"
            return recipe
        match = re.fullmatch(r"ubuntu-(\d\d)-(\d\d)", kind)
        if match:
            version = f"{match.group(1)}.{match.group(2)}"
            exact = _ubuntu(version, ref)
            if exact is not None:  # TB's Dockerfile over the real ubuntu:<version>
                return exact.model_copy(update={"packages": list(TB_PACKAGES), "recommends": True, "workdir": "/app"})
            # TB's Dockerfile: FROM ubuntu:<version>, `apt-get install -y tmux asciinema` (with their
            # Recommends: python3's pull in ca-certificates and openssl), WORKDIR /app
            return BaseRecipe(ref=ref, suite=DEFAULT_SUITE, packages=TB_PACKAGES, recommends=True, workdir="/app",
                              env={"PATH": PATH}, substituted=f"Debian {DEFAULT_SUITE} stands in for Ubuntu {version}",
                              archive=f"Ubuntu {version}'s")
        return None
    repo, _, tag = name.partition(":")
    tag = tag or "latest"
    if repo == "python":
        match = re.fullmatch(r"(3\.\d+)(?:\.\d+)?(?:-(slim))?(?:-(bullseye|bookworm|trixie))?(?:-(slim))?", tag)
        if not match:
            return None
        return _python(match.group(1), match.group(2) or match.group(4) or "", match.group(3), ref)
    if repo == "debian":
        match = re.fullmatch(r"(bullseye|bookworm|trixie|11|12|13|stable)(?:-slim)?(?:-\d+)?", tag)
        if not match:
            return None
        suite = {"11": "bullseye", "12": "bookworm", "13": "trixie", "stable": DEFAULT_SUITE}.get(match.group(1), match.group(1))
        return BaseRecipe(ref=ref, suite=suite, env={"PATH": PATH})
    if repo == "ubuntu":
        if tag not in UBUNTU_NAMES and tag not in UBUNTU_NAMES.values() and tag != "latest":
            return None
        exact = _ubuntu(tag, ref)
        if exact is not None:
            return exact
        return BaseRecipe(ref=ref, suite=DEFAULT_SUITE, env={"PATH": PATH},
                          substituted=f"Debian {DEFAULT_SUITE} stands in for Ubuntu {tag}", archive=f"Ubuntu {tag}'s")
    return None
