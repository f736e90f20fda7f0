"""The files a container engine writes into every container: ``/etc/hosts``, ``/etc/hostname``,
``/etc/resolv.conf``.

Docker and podman never take these from the image: each container (and each ``RUN`` step of a
build) gets its own, so ``localhost`` resolves in every image — also in a root built from packages,
which has no ``/etc/hosts`` at all (mmdebstrap writes none, and copies the build host's
``hostname`` and ``resolv.conf``). A bwrap sandbox on a built root gets the same three files in
its own writable layer before it starts; they shadow whatever the image has, the trial may edit
them, and a build drops them from the layer it keeps (``RUN`` changes to them are not kept by
Docker either). On the host's root (``root = "host"``) the host's own files stay.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

NAMES = ("hosts", "hostname", "resolv.conf")
HOST_RESOLV = Path("/etc/resolv.conf")


def hosts_text(hostname: str) -> str:
    """Docker's ``/etc/hosts`` for a container: loopback names, the IPv6 multicast names, and the
    container's own hostname (on loopback: the sandbox shares the host's network or has none)."""
    return (
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\n"
        "ff00::0\tip6-mcastprefix\n"
        "ff02::1\tip6-allnodes\n"
        "ff02::2\tip6-allrouters\n"
        f"127.0.1.1\t{hostname}\n"
    )


def write_runtime_files(etc_upper: Path, hostname: str) -> None:
    """Write the engine's three files into a sandbox's ``/etc`` upper layer (before it starts);
    ``resolv.conf`` is the host's at this moment, as Docker copies it at container start."""
    etc_upper.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        _clear(etc_upper / name)
    (etc_upper / "hosts").write_text(hosts_text(hostname))
    (etc_upper / "hostname").write_text(hostname + "\n")
    resolv = ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        resolv = HOST_RESOLV.read_text()
    (etc_upper / "resolv.conf").write_text(resolv)
    for name in NAMES:
        (etc_upper / name).chmod(0o644)


def drop_runtime_files(etc_upper: Path) -> None:
    """Remove the three files from a build's ``/etc`` layer (also a whiteout a step left for one)."""
    for name in NAMES:
        _clear(etc_upper / name)


def _clear(path: Path) -> None:
    if path.is_symlink() or path.exists():
        with contextlib.suppress(IsADirectoryError, OSError):
            path.unlink()
