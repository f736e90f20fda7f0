"""The files a container engine writes into every container: ``/etc/hosts``, ``/etc/hostname``,
``/etc/resolv.conf``.

Docker and podman never take these from the image: each container (and each ``RUN`` step of a
build) gets its own, so ``localhost`` resolves in every image — also in a root built from packages,
which has no ``/etc/hosts`` at all (mmdebstrap writes none, and copies the build host's
``hostname`` and ``resolv.conf``). A bwrap sandbox on a built root gets the same three files in
its own writable layer before it starts; they shadow whatever the image has, the trial may edit
them, and a build drops them from the layer it keeps (``RUN`` changes to them are not kept by
Docker either). On the host's root (``root = "host"``) the host's own files stay, unless the
compose file asks for its own (``extra_hosts``, ``dns``, services beside the agent's).

As Docker writes them: ``/etc/hosts`` is its default records, then the compose file's
``extra_hosts`` (``ADDRESS<TAB>NAME``), then the names of the services beside the agent's (all at
127.0.0.1: they share the trial's network namespace), then the sandbox's own hostname;
``/etc/resolv.conf`` is the host's without its loopback name servers (unreachable from a
container; Google's public ones when none is left), or with the compose file's ``dns`` servers
instead of the host's (its ``search`` and ``options`` kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

NAMES = ("hosts", "hostname", "resolv.conf")
HOST_RESOLV = Path("/etc/resolv.conf")


DEFAULT_DNS = ("8.8.8.8", "8.8.4.4")  # Docker's when the host has no name server a container reaches
SERVICE_ADDRESS = "127.0.0.1"  # the services beside the agent's: in the trial's one network namespace


def hosts_text(hostname: str, extra_hosts: Sequence[tuple[str, str]] = (), service_names: Sequence[str] = ()) -> str:
    """Docker's ``/etc/hosts`` for a container: loopback names, the IPv6 multicast names, the
    compose file's ``extra_hosts`` (name, address), the services' names, and the container's own
    hostname (on loopback: the sandbox shares the host's network or has its own)."""
    lines = [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "ff00::0\tip6-mcastprefix",
        "ff02::1\tip6-allnodes",
        "ff02::2\tip6-allrouters",
    ]
    lines += [f"{address}\t{name}" for name, address in extra_hosts]
    lines += [f"{SERVICE_ADDRESS}\t{name}" for name in service_names]
    if hostname not in service_names:
        lines.append(f"127.0.1.1\t{hostname}")
    return "\n".join(lines) + "\n"


def resolv_text(dns: Sequence[str] | None = None, host_text: str | None = None) -> str:
    """``/etc/resolv.conf`` as Docker writes it from the host's (`host_text`, default the file now)."""
    if host_text is None:
        host_text = ""
        with contextlib.suppress(OSError, UnicodeDecodeError):
            host_text = HOST_RESOLV.read_text()
    servers, searches, options = [], [], []
    for line in host_text.splitlines():
        words = line.split()
        if not words or words[0].startswith(("#", ";")):
            continue
        if words[0] == "nameserver" and len(words) > 1:
            servers.append(words[1])
        elif words[0] in ("search", "domain"):
            searches.append(" ".join(words))
        elif words[0] == "options":
            options.append(" ".join(words))
    if dns:
        servers = list(dns)
    else:
        servers = [s for s in servers if not (s.startswith("127.") or s == "::1")] or list(DEFAULT_DNS)
    return "\n".join([*searches, *(f"nameserver {s}" for s in servers), *options]) + "\n"


def write_runtime_files(etc_upper: Path, hostname: str, *, extra_hosts: Sequence[tuple[str, str]] = (),
                        service_names: Sequence[str] = (), dns: Sequence[str] | None = None) -> None:
    """Write the engine's three files into a sandbox's ``/etc`` upper layer (before it starts);
    ``resolv.conf`` is made from the host's at this moment, as Docker makes it at container start."""
    etc_upper.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        _clear(etc_upper / name)
    (etc_upper / "hosts").write_text(hosts_text(hostname, extra_hosts, service_names))
    (etc_upper / "hostname").write_text(hostname + "\n")
    (etc_upper / "resolv.conf").write_text(resolv_text(dns))
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
