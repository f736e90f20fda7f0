"""Did a command fail because a fetch could not reach its host? Read from its output.

A task's build step, or its solution, may fetch from hosts this machine cannot reach (here: only
the package registries are reachable; elsewhere: a proxy, a firewall, a dead mirror). When its
output shows the tools' own words for it — curl's "Could not resolve host", wget's "unable to
resolve host address", pip's "Could not fetch URL", git's "unable to access", a refused or
timed-out connection, a TLS chain the tool cannot verify — ``network_failure`` names the host(s)
and quotes that line, so the task is reported as needing the network it could not get
(``needs_network``), not as a broken task or a stand-in base's fault.

A certificate the tool could not verify (``CERTIFICATE_VERIFY_FAILED``, curl's "SSL certificate
problem", npm's ``SELF_SIGNED_CERT_IN_CHAIN`` / ``UNABLE_TO_GET_ISSUER_CERT_LOCALLY``, apt's
"Certificate verification failed" …) is a fetch that failed too; its host is read from the line,
else from the output's other certificate lines (pip names it two lines on, npm on the line after its
code), else from the command, else the registry of the tool that fetched (pip: PyPI, npm: npm's
registry). Against a package registry this machine reaches (``registry_outage``) it is this
machine's TLS settings — a certificate authority of this machine's (a TLS-inspecting gateway) that
the sandbox lacked — never the task's need of the network: ``settings_fault`` says so, with the fix.
Against a host beyond the registries it stays ``needs_network``, naming the host.
"""

from __future__ import annotations

import re

from .hostsettings import host_ca_bundle, host_npm_registry_hosts, host_pip_config

# a TLS client's words for a certificate it could not verify: Python's ssl (pip, requests), curl,
# git, npm/node, apt (GnuTLS), Go, rustls (uv, cargo)
_CERTIFICATE = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|SSL certificate problem"
    r"|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE"
    r"|unable to get local issuer certificate|self[- ]signed certificate in certificate chain"
    r"|Certificate verification failed|x509: certificate signed by unknown authority|invalid peer certificate",
    re.IGNORECASE,
)
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
    r"|Connection timed out"
    r"|Connection refused"
    r"|Could not connect to|couldn.t connect to"
    r"|Failed to fetch https?://"
    r"|getaddrinfo ENOTFOUND|ECONNREFUSED|ETIMEDOUT"
    r"|error sending request for url"  # Rust's reqwest: selenium-manager, uv, cargo
    r"|request to https?://\S+ failed, reason:"  # npm's fetch: EAI_AGAIN, a certificate it cannot verify …
    # Python's requests/urllib3 giving up on a host it could not connect to (a timeout, DNS, TLS)
    r"|Max retries exceeded with url: .*Caused by (?:NewConnectionError|ConnectTimeoutError|NameResolutionError"
    r"|ProxyError|SSLError)"
    r"|" + _CERTIFICATE.pattern,
    re.IGNORECASE,
)
FETCH_FAILURE = _FAILURES  # for OutputCap: lines of an omitted middle that show a fetch failing are kept
_IPV4 = r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])"  # a host given by its address (an external judge's)
_URL_HOST = re.compile(r"(?:https?|git|ftp)://(?:[^@/\s'\"]+@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,}|" + _IPV4 + ")")
_BARE_HOST = re.compile(r"(?:host(?: address)?|resolve host:?|Resolving)\s*=?\s*[‘'\"]?([A-Za-z0-9.-]+\.[A-Za-z]{2,})",
                        re.IGNORECASE)  # urllib3's HTTPSConnectionPool(host='pypi.org', …) too
_POOL_HOST = re.compile(r"ConnectionPool\(host='([^']+)'")  # urllib3's (requests'): HTTPConnectionPool(host='…', port=…)
# apt's and curl's words naming the host they could not connect to: "Could not connect to
# deb.debian.org:80 (…)", "Unable to connect to deb.debian.org:http:", "Failed to connect to x.org port 443"
_CONNECT_HOST = re.compile(r"(?:Could not connect to|Unable to connect to|Failed to connect to)\s+([A-Za-z0-9.-]+\.[A-Za-z]{2,})",
                           re.IGNORECASE)


def hosts_in(text: str) -> list[str]:
    """The hosts named by URLs (or by a resolver's message) in `text`, in order, once each."""
    found: list[str] = []
    for m in [*_URL_HOST.finditer(text), *_BARE_HOST.finditer(text), *_POOL_HOST.finditer(text),
              *_CONNECT_HOST.finditer(text)]:
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
            if _CERTIFICATE.search(line):
                line, hosts = _certificate_line(line, output, command)
            else:
                hosts = hosts_in(line) or hosts_in(command)
            quoted = _quoted(_METER.sub("", line.strip()))
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


# the registry a package tool fetches from when nothing it printed names one
_TOOL_REGISTRY = ((re.compile(r"(^|[\s;&|(/])(pip[\d.]*|uv|poetry|pipx)\s"), "pypi.org"),
                  (re.compile(r"(^|[\s;&|(/])(npm|npx|yarn|pnpm)\s"), "registry.npmjs.org"))


def _quoted(line: str, limit: int = 200) -> str:
    """The line within `limit` characters; a certificate failure's words kept in it when they come
    later (urllib3's "HTTPSConnectionPool(host='pypi.org', …) … CERTIFICATE_VERIFY_FAILED")."""
    found = _CERTIFICATE.search(line)
    if len(line) <= limit or found is None or found.end() <= limit:
        return line[:limit]
    head = line[: limit // 2 - 3]
    return f"{head} … {line[found.start():found.start() + limit // 2]}"


def _certificate_line(line: str, output: str, command: str) -> tuple[str, list[str]]:
    """(the line to quote, its hosts) for a certificate failure first seen on `line`: the first
    certificate line of the output that names a host (pip's "Could not fetch URL https://pypi.org/…"
    after its retry warnings; npm's "request to https://registry.npmjs.org/… failed" after its code),
    else `line` with the command's hosts, else the fetching tool's registry."""
    if hosts_in(line):
        return line, hosts_in(line)
    for other in output.splitlines():
        if _CERTIFICATE.search(other) and hosts_in(other):
            return other, hosts_in(other)
    hosts = hosts_in(command) or [registry for tool, registry in _TOOL_REGISTRY if tool.search(command + " ")][:1]
    return line, hosts


def certificate_failure(unreached: str | None) -> bool:
    """``network_failure``'s finding is a certificate the fetching tool could not verify."""
    return bool(unreached) and bool(_CERTIFICATE.search(unreached or ""))


# the words every message of ``settings_fault`` holds (the audit tells this machine's fault by them)
TLS_SETTINGS = "this machine's TLS settings"


def settings_fault(unreached: str | None, build_network: bool | str) -> str | None:
    """When ``network_failure``'s finding `unreached` is a certificate failure against a package
    registry this machine reaches: why it is this machine's TLS settings and not the task's, with
    the fix (the builds and networked trials had the host's CA bundle — ``build_network`` resolved
    is "host-settings" — or not); else None."""
    if not certificate_failure(unreached):
        return None
    registry = registry_outage(unreached)
    if registry is None:
        return None

    bundle = host_ca_bundle()
    named = f"this machine's CA bundle: {bundle}" if bundle else "no CA bundle found here: name one in PIP_CERT"
    if build_network == "host-settings":
        fix = (f"the sandbox had this machine's settings ({named}); name the bundle holding the authority this "
               "machine's TLS gateway signs with in PIP_CERT or SSL_CERT_FILE")
    else:
        fix = f'set [sandbox] build_network = "auto" (the default) or "host-settings" ({named})'
    text = unreached or ""
    found = _CERTIFICATE.search(text)
    said = text[found.start():found.start() + 60].rstrip(" )") if found else ""
    return (f"{TLS_SETTINGS}, not the task's: the sandbox could not verify the certificate of the package registry "
            f"{registry} ({said}…), whose authority is this machine's; fix: {fix}")


# The package registries this machine is expected to reach (Debian's mirror as the base roots are
# built from it, PyPI, npm), and the hosts of the host's own pip index settings.
REGISTRY_HOSTS = frozenset({"deb.debian.org", "security.debian.org", "pypi.org", "files.pythonhosted.org",
                            "registry.npmjs.org"})


def _pip_index_hosts() -> set[str]:
    import configparser
    import os


    urls = [os.environ.get("PIP_INDEX_URL", ""), *os.environ.get("PIP_EXTRA_INDEX_URL", "").split()]
    config = configparser.ConfigParser()
    try:
        config.read([p for p in (host_pip_config(), os.path.expanduser("~/.config/pip/pip.conf")) if p])
    except configparser.Error:
        pass
    for section in config.sections():
        urls += [config.get(section, key, fallback="") for key in ("index-url", "extra-index-url")]
    return {h for url in urls for h in hosts_in(url)}


def _npm_registry_hosts() -> set[str]:

    return host_npm_registry_hosts()


# a line of a test that fetches: the command or call, then the hosts it names (URLs, or a bare
# domain after curl/wget: `curl example.com`)
_FETCH_CALL = re.compile(r"\b(?:curl|wget|requests\.(?:get|post|head|put)|urlopen|urlretrieve|httpx\.(?:get|post|Client)"
                         r"|git\s+clone|aiohttp)\b")
_PRIVATE = (".local", ".internal", ".lan", ".localdomain", ".home.arpa")  # names a task's own network gives
_AFTER_TOOL = re.compile(r"\b(?:curl|wget)\s+(?:-\S+\s+(?:\d+\s+)?)*['\"]?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b")


# a URL given as a name's value in code: `BASE = "http://…"`, `os.environ.get("BASE_URL", "http://…")`
_URL_VALUE = re.compile(r"(?:^\s*[A-Za-z_][\w.]*\s*(?::\s*\w+\s*)?=\s*|(?:environ\.get|getenv)\s*\([^)]*,\s*)"
                        r"[rbfu]?['\"](?:https?|ftp)://")


def fetched_hosts(text: str) -> list[str]:
    """The remote hosts the lines of `text` (a test's source) fetch from: URLs and bare domains on
    lines that call curl, wget, requests, urllib, httpx or git clone — not hosts in prose — and,
    when some line fetches, the URLs the code gives a name (``BASE = os.environ.get("BASE_URL",
    "http://38.80.122.117:8081")``, then ``requests.get(f"{BASE}/health")``)."""
    found: list[str] = []
    fetches = any(_FETCH_CALL.search(line) for line in text.splitlines() if not line.lstrip().startswith("#"))
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not (_FETCH_CALL.search(line) or (fetches and _URL_VALUE.search(line))):
            continue
        for host in [*(m.group(1).lower() for m in _URL_HOST.finditer(line)),
                     *(m.group(1).lower() for m in _AFTER_TOOL.finditer(line))]:
            if not _LOCAL.match(host) and not host.endswith(_PRIVATE) and host not in found:
                found.append(host)
    return found


# an HTTP client's words for an error status from a URL (requests' raise_for_status, httpx's)
_HTTP_ERROR = re.compile(r"\b(\d{3}) (?:Client|Server) Error: [^\n]*? for url: ?'?(\S+)|"
                         r"Client error '(\d{3})[^']*' for url '([^']+)'")


def http_errors(output: str) -> dict[str, str]:
    """{host: the line} for each remote host an HTTP client in `output` got an error status from
    (requests' "404 Client Error: Not Found for url: http://38.80.122.117:8081/health")."""
    found: dict[str, str] = {}
    for m in _HTTP_ERROR.finditer(output):
        url = m.group(2) or m.group(4) or ""
        line = re.sub(r"^E\s+", "", output[output.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip())  # pytest's "E   "
        for host in hosts_in(url):
            if not _LOCAL.match(host) and host not in found:
                found[host] = _quoted(line)
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
    registries = REGISTRY_HOSTS | _pip_index_hosts() | _npm_registry_hosts()
    return next((h for h in (p.strip() for p in named.split(",")) if h in registries), None)
