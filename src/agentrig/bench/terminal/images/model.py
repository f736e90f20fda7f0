"""What a base root is built from: ``BaseRecipe`` (a suite, packages, the image's metadata) and its cache key.

``recipes.py`` (TB's images, python, debian, ubuntu) and ``official.py`` (buildpack-deps, node,
golang, rust, openjdk, eclipse-temurin, gcc) make recipes; ``builder.py`` builds them.
"""

from __future__ import annotations

import hashlib
import json
import os

from pydantic import BaseModel, Field

RECIPE_FORMAT = "1"
# fields added after format 1: in the key only when set, so roots built before them keep their keys
LATER_FIELDS = ("python_layout", "recommends", "python_alias", "distro", "mirror", "links", "dirs", "user", "locales",
                "python_packages")
# the Debian suites the official images' tags name by number or by role (debian's `13.0-slim`,
# buildpack-deps' `stable-curl`): the roles as the official images have them now (trixie is stable)
DEBIAN_NUMBERS = {"11": "bullseye", "12": "bookworm", "13": "trixie"}
DEBIAN_ROLES = {"oldoldstable": "bullseye", "oldstable": "bookworm", "stable": "trixie"}
UBUNTU_NAMES = {"20.04": "focal", "22.04": "jammy", "24.04": "noble", "24.10": "oracular", "25.04": "plucky"}
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Ubuntu's own archive (a mirror of it): when set, Ubuntu bases are built from it — the real
# distribution, nothing substituted; unset, Debian stands in (this machine's registries are Debian's)
UBUNTU_ARCHIVE_ENV = "AGENTRIG_UBUNTU_ARCHIVE"


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
    # Python packages installed into that environment from the wheels Debian ships (/usr/share/python-wheels),
    # as the real image has them beside pip: the python images before 3.12 have setuptools and wheel
    python_packages: list[str] = Field(default_factory=list)
    workdir: str = "/"  # the image's WORKDIR
    env: dict[str, str] = Field(default_factory=dict)
    cmd: list[str] = Field(default_factory=lambda: ["bash"])
    shell: list[str] = Field(default_factory=lambda: ["/bin/sh", "-c"])  # the Dockerfile SHELL for RUN
    substituted: str | None = None  # what differs from the real image (shown by `tasks show`, audit: base_substituted)
    # the real image's package archive when the stand-in's differs (Ubuntu's, another Debian suite's):
    # a solution's apt-get asking for what only that archive has fails for the substitution
    archive: str | None = None
    # where the real image has its language (official.py): symlinks made in the root, path -> target
    # (a target's glob is resolved in the root: /usr/lib/jvm/java-17-openjdk-*), and directories with their modes
    links: dict[str, str] = Field(default_factory=dict)
    dirs: dict[str, int] = Field(default_factory=dict)
    user: str | None = None  # the image's user (uid and gid 1000, a home, bash): node's `node`
    locales: list[str] = Field(default_factory=list)  # locales generated in the root (eclipse-temurin's en_US.UTF-8)

    def image_changes(self) -> list[str]:
        """The image's metadata as Dockerfile lines (``podman/docker import --change`` each)."""
        lines = [f"ENV {name}={json.dumps(value)}" for name, value in self.env.items()]
        return [*lines, f"WORKDIR {self.workdir}", f"CMD {json.dumps(self.cmd)}", f"SHELL {json.dumps(self.shell)}"]

    def key(self) -> str:
        """The cache key: everything that changes the built tree (not the ref: two refs may share a root)."""
        body = self.model_dump(exclude={"ref", "substituted", "archive"})
        for name in LATER_FIELDS:
            if body.get(name) in (None, False, {}, []):  # unset: the keys built before it stay
                body.pop(name, None)
        return hashlib.sha256(json.dumps([RECIPE_FORMAT, body], sort_keys=True).encode()).hexdigest()[:16]


def ubuntu_archive() -> str | None:
    """Ubuntu's archive to build Ubuntu bases from (``$AGENTRIG_UBUNTU_ARCHIVE``), or None."""
    return (os.environ.get(UBUNTU_ARCHIVE_ENV) or "").strip().rstrip("/") or None
