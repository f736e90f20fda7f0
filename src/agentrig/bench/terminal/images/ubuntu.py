"""Ubuntu bases from Ubuntu's own archive (``$AGENTRIG_UBUNTU_ARCHIVE``): its sources and its key.

The archive's signing key comes through Debian's registry: the ``ubuntu-keyring`` package of
Debian's trixie, downloaded by the host's own apt (its proxy settings) into a private apt state
and verified by apt against the host's Debian archive keyring, then cached beside the roots
(``IMAGES/keyrings/``, by ``builder.ubuntu_keyring`` under its lock). mmdebstrap checks the Ubuntu
archive's Release files with it; the root keeps Ubuntu's own keyring package, so a task's
``apt-get update`` inside checks them too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..core.base import SandboxError

KEYRING_SUITE = "trixie"  # the first Debian release with Ubuntu's keyring package
KEYRING_PACKAGE = "ubuntu-keyring"
KEYRING_FILE = "usr/share/keyrings/ubuntu-archive-keyring.gpg"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
COMPONENTS = "main restricted universe multiverse"  # as the official images' sources
WITH_USER = {"noble", "oracular", "plucky"}  # the official images from 23.04 on have the user 'ubuntu' (uid 1000)
ADD_USER = 'chroot "$1" useradd --create-home --uid 1000 --user-group --comment Ubuntu --shell /bin/bash ubuntu'


def ubuntu_sources(recipe: Any) -> list[str]:
    """The sources the official image has: the release, -updates and -backports from the archive,
    -security from security.ubuntu.com (or the same mirror when it is not Ubuntu's own)."""
    mirror = recipe.mirror
    security = "http://security.ubuntu.com/ubuntu" if "//archive.ubuntu.com/" in mirror + "/" else mirror
    pockets = [recipe.suite, f"{recipe.suite}-updates", f"{recipe.suite}-backports"]
    return [f"deb {mirror} {p} {COMPONENTS}" for p in pockets] + [f"deb {security} {recipe.suite}-security {COMPONENTS}"]


def _apt(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    opts = ["-o", f"Dir::Etc::SourceList={state / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
            "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=1"]
    return subprocess.run(["apt-get", *opts, "-q", *args], cwd=state, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)


def fetch_ubuntu_keyring(target: Path) -> None:
    """Write Ubuntu's archive keyring to `target` (see the module's docstring; the caller holds the
    lock); raises SandboxError naming what failed and the way out."""
    fix = "check the host's apt settings, or unset AGENTRIG_UBUNTU_ARCHIVE to let Debian stand in for Ubuntu"
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb") or not os.path.isfile(DEBIAN_KEYRING):
        raise SandboxError(f"building an Ubuntu base needs Ubuntu's archive key, fetched with the host's apt-get "
                           f"and dpkg-deb checked against {DEBIAN_KEYRING}; this host lacks one of them: {fix}")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        state = Path(tmp)
        (state / "sources.list").write_text(f"deb [signed-by={DEBIAN_KEYRING}] {DEBIAN_MIRROR} {KEYRING_SUITE} main\n")
        for sub in ("lists/partial", "cache/archives/partial"):
            (state / sub).mkdir(parents=True)
        for step in (["update"], ["download", KEYRING_PACKAGE]):
            try:
                proc = _apt(step, state)
            except subprocess.TimeoutExpired:
                raise SandboxError(f"fetching Ubuntu's archive key: apt-get {step[0]} did not end within 600 s "
                                   f"(Debian's mirror unreachable?): {fix}") from None
            if proc.returncode != 0:
                tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
                raise SandboxError(f"fetching Ubuntu's archive key (Debian {KEYRING_SUITE}'s {KEYRING_PACKAGE}) "
                                   f"failed: apt-get {step[0]} exited {proc.returncode}:\n{tail}\n{fix}")
        deb = next(state.glob(f"{KEYRING_PACKAGE}_*.deb"))
        unpacked = subprocess.run(["dpkg-deb", "-x", str(deb), str(state / "x")], capture_output=True, text=True)
        if unpacked.returncode != 0:
            raise SandboxError(f"unpacking {deb.name} failed: {unpacked.stderr.strip()[-300:]}: {fix}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(state / "x" / KEYRING_FILE, target)
    if not target.is_file():
        raise SandboxError(f"Debian {KEYRING_SUITE}'s {KEYRING_PACKAGE} holds no {KEYRING_FILE}: {fix}")
