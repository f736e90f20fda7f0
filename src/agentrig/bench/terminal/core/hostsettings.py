"""The host's package-index settings for builds (``[sandbox] build_network = "host-settings"``).

``build_network = "auto"`` (the default) is resolved here, once (``resolve_build_network``):
"host-settings" when the host has any package-index settings (``host_index_settings``: a pip
configuration file or ``PIP_*`` variables, a CA bundle named by ``PIP_CERT``/``REQUESTS_CA_BUNDLE``/
``SSL_CERT_FILE``/``NODE_EXTRA_CA_CERTS``, an npm configuration), else plain network (True).

pip's configuration (``/etc/pip.conf`` or ``$PIP_CONFIG_FILE``) and ``PIP_*`` variables, npm's
(``host_npm_binds``: the user's ``~/.npmrc`` or ``$NPM_CONFIG_USERCONFIG``, the global npmrc,
``npm_config_*`` variables, its ``cafile`` and node's ``NODE_EXTRA_CA_CERTS`` pointed at the bound
bundle), the CA bundle (``$PIP_CERT`` or ``/etc/ssl/certs/ca-certificates.crt``) and apt's proxy
options. A build
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
from typing import Literal, Mapping

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


def host_settings_binds(mount: str = MOUNT, ca_only: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """(ro binds host -> inside, env) giving a build step the host's package-index settings,
    bound under `mount`: pip's configuration file and PIP_* variables, npm's, and the CA bundle
    for pip and every other TLS client (OpenSSL's SSL_CERT_FILE, curl, git, node, uv).
    ``ca_only``: the CA bundle and the variables naming it, nothing else — what a trial gets under
    ``build_network = "auto"`` (``SandboxSettings.trial_host_settings``): pip's and npm's
    configuration may hold an index's token, and an agent reads every file of its trial."""
    binds: dict[str, str] = {}
    env = {} if ca_only else {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    pip_conf = None if ca_only else host_pip_config()
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
    if ca_only:
        return binds, env
    npm_binds, npm_env = host_npm_binds(mount, env.get("SSL_CERT_FILE"))
    binds.update(npm_binds)
    env.update(npm_env)
    return binds, env


# ---- npm ---------------------------------------------------------------------------------------

# npm_config_* variables that name a path of the host (or where npm keeps its own state): never passed on
_NPM_HOST_PATHS = {"userconfig", "globalconfig", "cafile", "prefix", "cache", "nodedir", "init-module", "tmp"}


def _npm_env_key(name: str) -> str | None:
    """The npm setting a variable sets (``npm_config_fetch_retries`` -> ``fetch-retries``), or None."""
    if not name.lower().startswith("npm_config_"):
        return None
    return name[len("npm_config_"):].lower().replace("_", "-") or None


def _npm_env(name: str) -> str | None:
    return next((v for k, v in os.environ.items() if _npm_env_key(k) == name and v), None)


def host_npmrc() -> str | None:
    """The host's npm user configuration (``$NPM_CONFIG_USERCONFIG`` or ``~/.npmrc``), if there is one."""
    path = _npm_env("userconfig") or os.path.expanduser("~/.npmrc")
    return path if os.path.isfile(path) else None


def host_global_npmrc() -> str | None:
    """The host's global npmrc (``$NPM_CONFIG_GLOBALCONFIG``, else ``PREFIX/etc/npmrc`` of the host's
    node — npm's own default — else ``/etc/npmrc``), if there is one."""
    candidates = [_npm_env("globalconfig")]
    prefix = _npm_env("prefix")
    node = shutil.which("node")
    if prefix:
        candidates.append(os.path.join(prefix, "etc", "npmrc"))
    if node:
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(node))), "etc", "npmrc"))
    candidates.append("/etc/npmrc")
    return next((c for c in candidates if c and os.path.isfile(c)), None)


def host_npm_binds(mount: str = MOUNT, bundle: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(ro binds host -> inside, env) giving npm inside a build step or trial the host's npm
    settings: its user and global npmrc bound read-only under `mount` (named by
    ``NPM_CONFIG_USERCONFIG``/``NPM_CONFIG_GLOBALCONFIG``), its ``npm_config_*`` variables but those
    naming a host path, and — with `bundle` (the CA bundle as bound inside) — npm's ``cafile`` and
    node's ``NODE_EXTRA_CA_CERTS`` pointed at it (an npmrc's ``cafile`` names a file of the host:
    inside, the same path is the root's own bundle, without the host's authorities); a host
    ``NODE_EXTRA_CA_CERTS`` that is another file is bound too. Nothing is written anywhere."""
    binds: dict[str, str] = {}
    env = {k: v for k, v in os.environ.items()
           if (key := _npm_env_key(k)) is not None and key not in _NPM_HOST_PATHS}
    for host, name, var in ((host_npmrc(), "npmrc", "NPM_CONFIG_USERCONFIG"),
                            (host_global_npmrc(), "npmrc-global", "NPM_CONFIG_GLOBALCONFIG")):
        if host:
            binds[host] = f"{mount}/{name}"
            env[var] = f"{mount}/{name}"
    if bundle:
        env["NPM_CONFIG_CAFILE"] = bundle
        extra = os.environ.get("NODE_EXTRA_CA_CERTS")
        if extra and os.path.isfile(extra) and os.path.realpath(extra) != os.path.realpath(CA_BUNDLE) \
                and os.path.realpath(extra) != os.path.realpath(os.environ.get("PIP_CERT") or CA_BUNDLE):
            binds[extra] = f"{mount}/node-extra-ca.crt"
            env["NODE_EXTRA_CA_CERTS"] = f"{mount}/node-extra-ca.crt"
        else:
            env["NODE_EXTRA_CA_CERTS"] = bundle
    return binds, env


def _npm_values_into_file(into: Path, env: dict[str, str], mount: str) -> dict[str, str]:
    """For a container build: the host's ``npm_config_*`` values of `env` written into the npmrc
    copied into `into` (a build argument is recorded in the image's history), the rest returned."""
    values = {k: v for k, v in env.items() if _npm_env_key(k) is not None and not v.startswith(mount + "/")}
    if not values:
        return env
    rc = into / "npmrc"
    text = rc.read_text() if rc.is_file() else ""
    lines = [f"{_npm_env_key(k)}={v}" for k, v in values.items()]
    rc.write_text(text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(lines) + "\n")
    rc.chmod(0o600)
    return {**{k: v for k, v in env.items() if k not in values}, "NPM_CONFIG_USERCONFIG": f"{mount}/npmrc"}


def host_npm_registry_hosts() -> set[str]:
    """The hosts of the npm registries the host's npm settings name (``registry``, ``@scope:registry``):
    registries this machine is meant to reach, as npm's own."""
    import re

    urls = [v for k, v in os.environ.items() if (key := _npm_env_key(k)) and key.endswith("registry")]
    for path in (host_npmrc(), host_global_npmrc()):
        try:
            text = Path(path).read_text(errors="replace") if path else ""
        except OSError:
            continue
        urls += [m.group(1) for m in re.finditer(r"(?m)^\s*(?:@[\w.-]+:)?registry\s*=\s*(\S+)", text)]
    return {m.group(1).lower() for u in urls for m in [re.match(r"https?://(?:[^@/]+@)?([^/:]+)", u)] if m}


def container_settings(into: Path, mount: str, ca_only: bool = False) -> dict[str, str]:
    """Write the host's settings as files into the directory `into` (to be mounted read-only at
    `mount` for a container build) and return the build's environment, which names only paths under
    `mount`: the host's PIP_* values go into the pip configuration written there (a build argument
    is recorded in the image's history; a value such as an index URL with a token must not be),
    apt's proxy into an apt configuration (``APT_CONFIG``). ``ca_only``: the CA bundle alone
    (``host_settings_binds``)."""
    binds, env = host_settings_binds(mount, ca_only)
    into.mkdir(parents=True, exist_ok=True)
    for host, inside in binds.items():
        shutil.copyfile(host, into / os.path.basename(inside))
    env = _npm_values_into_file(into, env, mount)
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
    apt = [] if ca_only else host_apt_options()
    if apt:
        (into / "apt.conf").write_text("\n".join(apt) + "\n")
        out["APT_CONFIG"] = f"{mount}/apt.conf"
    return out


# ------------------------------------------------------------------------ build_network = "auto"

CA_VARIABLES = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
# pip's and npm's configuration files outside the home directory (pip: site-wide; npm: global, builtin)
SYSTEM_FILES = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "/etc/npmrc", "/usr/etc/npmrc", "/usr/local/etc/npmrc")


def host_index_settings(environ: Mapping[str, str] | None = None, home: str | Path | None = None,
                        system_files: tuple[str, ...] = SYSTEM_FILES) -> list[str]:
    """What of the host's package-index settings there is — the names of the files and variables,
    never their values (an index URL may hold a token): pip's configuration files and ``PIP_*``
    variables, a CA bundle a variable of ``CA_VARIABLES`` names (an existing file), npm's
    configuration (``~/.npmrc``, ``NPM_CONFIG_USERCONFIG``, ``npm_config_*`` variables, a global
    npmrc). ``PIP_CONFIG_FILE=/dev/null`` means, as for pip, no pip configuration file at all.
    `environ`, `home` and `system_files` default to this process's (a test gives its own)."""
    env = os.environ if environ is None else environ
    home_dir = Path(home) if home is not None else Path(env.get("HOME") or Path.home())
    found = [name for name in sorted(env) if name.startswith("PIP_") and name not in ("PIP_CONFIG_FILE", "PIP_CERT")]
    pip_file = env.get("PIP_CONFIG_FILE")
    pip_files = [] if pip_file == os.devnull else [pip_file] if pip_file else []
    if pip_file != os.devnull:
        pip_files += [f for f in system_files if os.path.basename(f) == "pip.conf"]
        pip_files += [str(home_dir / ".config" / "pip" / "pip.conf"), str(home_dir / ".pip" / "pip.conf")]
    npm_files = [env.get("NPM_CONFIG_USERCONFIG") or env.get("npm_config_userconfig") or str(home_dir / ".npmrc"),
                 *(f for f in system_files if os.path.basename(f) == "npmrc")]
    found += [f for f in dict.fromkeys(p for p in [*pip_files, *npm_files] if p) if os.path.isfile(f)]
    found += [name for name in CA_VARIABLES if env.get(name) and os.path.isfile(env[name])]
    found += sorted(name for name in env if name.lower().startswith("npm_config_"))
    return found


def host_ca_bundle(environ: Mapping[str, str] | None = None) -> str | None:
    """The CA bundle this host's TLS clients are pointed at: the first existing file a variable of
    ``CA_VARIABLES`` names, else the system bundle (``CA_BUNDLE``) when there is one."""
    env = os.environ if environ is None else environ
    named = [env[name] for name in CA_VARIABLES if env.get(name) and os.path.isfile(env[name])]
    return named[0] if named else (CA_BUNDLE if os.path.isfile(CA_BUNDLE) else None)


def resolve_build_network(value: bool | str, environ: Mapping[str, str] | None = None,
                          home: str | Path | None = None,
                          system_files: tuple[str, ...] = SYSTEM_FILES) -> bool | Literal["host-settings"]:
    """``[sandbox] build_network`` as the builds use it: "auto" becomes "host-settings" when the
    host has package-index settings (``host_index_settings``), else True; any other value is kept."""
    if value != "auto":
        return value  # type: ignore[return-value]
    return "host-settings" if host_index_settings(environ, home, system_files) else True
