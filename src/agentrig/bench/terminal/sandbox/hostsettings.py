"""The host's package-index settings for builds (``[sandbox] build_network = "host-settings"``).

pip's configuration (``/etc/pip.conf`` or ``$PIP_CONFIG_FILE``) and ``PIP_*`` variables, the CA
bundle (``$PIP_CERT`` or ``/etc/ssl/certs/ca-certificates.crt``) and apt's proxy options. A build
gets them for its steps only — files bound read-only at a mount point, variables naming them —
and never keeps them: bwrap removes the mount point from the layer (``build.py``); a container
build mounts them under ``/dev``, which is the build's own tmpfs, and passes only those paths as
build arguments (``container_settings``), so nothing of them is in the image's layers or its
``ENV``.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

MOUNT = "/.agentrig-host-settings"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def host_apt_options() -> list[str]:
    """The host's apt proxy settings as apt configuration lines (``Acquire::http::Proxy "…";``)."""
    try:
        out = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    opts = []
    for line in out.splitlines():
        name = line.split(" ", 1)[0]
        if name.startswith("Acquire::") and ("Proxy" in name or name.endswith("Check-Valid-Until")):
            opts.append(line.rstrip(";") + ";")
    return opts


def host_pip_config() -> str | None:
    """The host's pip configuration file (``$PIP_CONFIG_FILE`` or ``/etc/pip.conf``), if there is one."""
    path = os.environ.get("PIP_CONFIG_FILE") or "/etc/pip.conf"
    return path if os.path.isfile(path) else None


def host_settings_binds(mount: str = MOUNT) -> tuple[dict[str, str], dict[str, str]]:
    """(ro binds host -> inside, env) giving a build step the host's package-index settings,
    bound under `mount`: pip's configuration file and PIP_* variables, and the CA bundle for pip
    and every other TLS client (OpenSSL's SSL_CERT_FILE, curl, git, node, uv)."""
    binds, env = {}, {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    pip_conf = host_pip_config()
    if pip_conf:
        binds[pip_conf] = f"{mount}/pip.conf"
        env["PIP_CONFIG_FILE"] = f"{mount}/pip.conf"
    for ca in (os.environ.get("PIP_CERT"), CA_BUNDLE):
        if ca and os.path.isfile(ca):
            binds[ca] = f"{mount}/ca.crt"
            bundle = f"{mount}/ca.crt"  # pip, requests, OpenSSL (python, uv), curl, git, node
            env.update(PIP_CERT=bundle, REQUESTS_CA_BUNDLE=bundle, SSL_CERT_FILE=bundle, CURL_CA_BUNDLE=bundle,
                       GIT_SSL_CAINFO=bundle, NODE_EXTRA_CA_CERTS=bundle, UV_NATIVE_TLS="1")
            break
    return binds, env


def container_settings(into: Path, mount: str) -> dict[str, str]:
    """Write the host's settings as files into the directory `into` (to be mounted read-only at
    `mount` for a container build) and return the build's environment, which names only paths under
    `mount`: the host's PIP_* values go into the pip configuration written there (a build argument
    is recorded in the image's history; a value such as an index URL with a token must not be),
    apt's proxy into an apt configuration (``APT_CONFIG``)."""
    binds, env = host_settings_binds(mount)
    into.mkdir(parents=True, exist_ok=True)
    for host, inside in binds.items():
        shutil.copyfile(host, into / os.path.basename(inside))
    extra = {k: v for k, v in env.items() if k.startswith("PIP_") and not v.startswith(mount + "/")}
    out = {k: v for k, v in env.items() if k not in extra}
    if extra:
        conf = configparser.RawConfigParser()
        if (into / "pip.conf").is_file():
            conf.read(into / "pip.conf")
        if not conf.has_section("global"):
            conf.add_section("global")
        for name, value in extra.items():  # pip reads PIP_FOO_BAR as the option foo-bar
            conf.set("global", name[4:].lower().replace("_", "-"), value)
        with open(into / "pip.conf", "w") as handle:
            conf.write(handle)
        out["PIP_CONFIG_FILE"] = f"{mount}/pip.conf"
    apt = host_apt_options()
    if apt:
        (into / "apt.conf").write_text("\n".join(apt) + "\n")
        out["APT_CONFIG"] = f"{mount}/apt.conf"
    return out
