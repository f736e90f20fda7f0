"""Did a command fail because a fetch could not reach its host? Read from its output.

A task's build step, or its solution, may fetch from hosts this machine cannot reach (here: only
the package registries are reachable; elsewhere: a proxy, a firewall, a dead mirror). When its
output shows the tools' own words for it — curl's "Could not resolve host", wget's "unable to
resolve host address", pip's "Could not fetch URL", git's "unable to access", a refused or
timed-out connection, a TLS chain the tool cannot verify — ``network_failure`` names the host(s)
and quotes that line, so the task is reported as needing the network it could not get
(``needs_network``), not as a broken task or a stand-in base's fault.
"""

from __future__ import annotations

import re

# the tools' own words for a fetch that did not reach its host (one line each)
_FAILURES = re.compile(
    r"Could not resolve host"
    r"|unable to resolve host address"
    r"|Temporary failure in name resolution"
    r"|Name or service not known"
    r"|Failed to establish a new connection"
    r"|Network is unreachable"
    r"|Failed to connect to \S+ port"
    r"|Could not fetch URL"
    r"|urlopen error"
    r"|fatal: unable to access"
    r"|CERTIFICATE_VERIFY_FAILED"
    r"|SSL certificate problem"
    r"|Connection timed out"
    r"|Connection refused"
    r"|Could not connect to|couldn.t connect to"
    r"|Failed to fetch https?://"
    r"|getaddrinfo ENOTFOUND|ECONNREFUSED|ETIMEDOUT"
    r"|error sending request for url",  # Rust's reqwest: selenium-manager, uv, cargo
    re.IGNORECASE,
)
FETCH_FAILURE = _FAILURES  # for OutputCap: lines of an omitted middle that show a fetch failing are kept
_URL_HOST = re.compile(r"(?:https?|git|ftp)://(?:[^@/\s'\"]+@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_BARE_HOST = re.compile(r"(?:host(?: address)?|resolve host:?|Resolving)\s*[‘'\"]?([A-Za-z0-9.-]+\.[A-Za-z]{2,})", re.IGNORECASE)


def hosts_in(text: str) -> list[str]:
    """The hosts named by URLs (or by a resolver's message) in `text`, in order, once each."""
    found: list[str] = []
    for m in [*_URL_HOST.finditer(text), *_BARE_HOST.finditer(text)]:
        host = m.group(1).lower().rstrip(".")
        if host not in found:
            found.append(host)
    return found


# a quiet fetch (wget -q, curl -s) says nothing: its exit status does — when the command is that fetch
_QUIET_EXITS = {"wget": {4: "wget exited 4 (network failure)"},
                "curl": {6: "curl exited 6 (could not resolve host)", 7: "curl exited 7 (failed to connect)",
                         28: "curl exited 28 (timed out)", 35: "curl exited 35 (TLS handshake failed)"}}


_METER = re.compile(r"^[\d\s:%.-]+(?=[A-Za-z])")  # curl's progress meter in front of its error, on one line
_LOCAL = re.compile(r"^(localhost|ip6-localhost|sandbox|0\.0\.0\.0|127\.[\d.]+|::1|\[::1\])(\.localdomain)?$", re.IGNORECASE)


def network_failure(output: str, command: str = "", exit_code: int | None = None, *,
                    remote_only: bool = False) -> str | None:
    """'could not reach HOST[, HOST]: <the tool's line>' when the output shows a fetch that failed
    to reach its host (or, for a silent wget/curl command, its exit status says so), else None.
    The hosts come from the failing line, else from the command. ``remote_only``: only a line
    naming a host off this machine counts (a test's "Connection refused" from a server on
    localhost that the solution did not start is the task's failure, not the network's)."""
    for line in output.splitlines():
        if _FAILURES.search(line):
            quoted = _METER.sub("", line.strip())[:200]
            hosts = hosts_in(line) or hosts_in(command)
            if remote_only and not [h for h in hosts if not _LOCAL.match(h)]:
                continue
            where = ", ".join(hosts[:3]) if hosts else "its host"
            return f"could not reach {where}: {quoted}"
    if exit_code is not None:
        for tool, codes in _QUIET_EXITS.items():
            if exit_code in codes and re.search(rf"(^|[\s;&|(]){tool}\s", command):
                hosts = hosts_in(command)
                return f"could not reach {', '.join(hosts[:3]) if hosts else 'its host'}: {codes[exit_code]}"
    return None


# The package registries this machine is expected to reach (Debian's mirror as the base roots are
# built from it, PyPI, npm), and the hosts of the host's own pip index settings.
REGISTRY_HOSTS = frozenset({"deb.debian.org", "security.debian.org", "pypi.org", "files.pythonhosted.org",
                            "registry.npmjs.org"})


def _pip_index_hosts() -> set[str]:
    import configparser
    import os

    from .sandbox.hostsettings import host_pip_config  # noqa: PLC0415 - the sandbox package imports this module

    urls = [os.environ.get("PIP_INDEX_URL", ""), *os.environ.get("PIP_EXTRA_INDEX_URL", "").split()]
    config = configparser.ConfigParser()
    try:
        config.read([p for p in (host_pip_config(), os.path.expanduser("~/.config/pip/pip.conf")) if p])
    except configparser.Error:
        pass
    for section in config.sections():
        urls += [config.get(section, key, fallback="") for key in ("index-url", "extra-index-url")]
    return {h for url in urls for h in hosts_in(url)}


# a line of a test that fetches: the command or call, then the hosts it names (URLs, or a bare
# domain after curl/wget: `curl example.com`)
_FETCH_CALL = re.compile(r"\b(?:curl|wget|requests\.(?:get|post|head|put)|urlopen|urlretrieve|httpx\.(?:get|post|Client)"
                         r"|git\s+clone|aiohttp)\b")
_PRIVATE = (".local", ".internal", ".lan", ".localdomain", ".home.arpa")  # names a task's own network gives
_AFTER_TOOL = re.compile(r"\b(?:curl|wget)\s+(?:-\S+\s+(?:\d+\s+)?)*['\"]?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b")


def fetched_hosts(text: str) -> list[str]:
    """The remote hosts the lines of `text` (a test's source) fetch from: URLs and bare domains on
    lines that call curl, wget, requests, urllib, httpx or git clone — not hosts in prose."""
    found: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not _FETCH_CALL.search(line):
            continue
        for host in [*(m.group(1).lower() for m in _URL_HOST.finditer(line)),
                     *(m.group(1).lower() for m in _AFTER_TOOL.finditer(line))]:
            if not _LOCAL.match(host) and not host.endswith(_PRIVATE) and host not in found:
                found.append(host)
    return found


def unresolvable(hosts: list[str], timeout_s: float = 5.0) -> list[str]:
    """The hosts of `hosts` this machine cannot resolve (each asked at most `timeout_s`)."""
    import concurrent.futures
    import socket

    def ask(host: str) -> bool:
        try:
            socket.getaddrinfo(host, 443)
            return True
        except OSError:
            return False

    if not hosts:
        return []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(4, len(hosts)))
    try:
        futures = {host: pool.submit(ask, host) for host in hosts}
        out = []
        for host, future in futures.items():
            try:
                if not future.result(timeout=timeout_s):
                    out.append(host)
            except concurrent.futures.TimeoutError:
                out.append(host)
        return out
    finally:
        pool.shutdown(wait=False)


def registry_outage(unreached: str | None) -> str | None:
    """The registry host a fetch failure names ('could not reach HOST: …', from ``network_failure``)
    when it is one this machine is meant to reach: then it is an outage of this machine's plumbing
    (an invalid trial, replayed), never the task's need of a host beyond the registries."""
    if not unreached or not unreached.startswith("could not reach "):
        return None
    named = unreached[len("could not reach "):].split(":", 1)[0]
    registries = REGISTRY_HOSTS | _pip_index_hosts()
    return next((h for h in (p.strip() for p in named.split(",")) if h in registries), None)
