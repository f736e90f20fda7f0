"""The doctor's local checks: the key, the base URL and the network (no HTTP request yet)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
import time
import urllib.request
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel

from agentrig.errors import Diagnosis
from agentrig.redact import read_secret, redact, redact_url
from agentrig.channel.client import missing_key

Status = Literal["pass", "warn", "fail"]


class Check(BaseModel):
    name: str
    status: Status
    code: str | None = None
    message: str
    fix: str | None = None
    latency_ms: float | None = None


def _ok(name: str, message: str, latency_ms: float | None = None) -> Check:
    return Check(name=name, status="pass", message=message, latency_ms=latency_ms)


def _bad(name: str, d: Diagnosis, status: Status = "fail", latency_ms: float | None = None) -> Check:
    return Check(name=name, status=status, code=d.code, message=redact(d.message), fix=redact(d.fix),
                 latency_ms=latency_ms)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# ---------------------------------------------------------------------------------------- key
_PLACEHOLDER = re.compile(
    r"^<.*>$|^\{.*\}$|^\$\{?\w+\}?$|your.{0,12}key|key.{0,6}here|^x{4,}$|x{8,}|^\*+$|\.\.\.|"
    r"^(?:changeme|change[-_]me|replace[-_ ]?me|todo|tbd|none|null|undefined|placeholder|sk-x+)$|insert.{0,12}key",
    re.I,
)


def check_key(env_var: str, env: Mapping[str, str]) -> Check:
    value = read_secret(env_var, env)
    if value is None or not value.strip():
        return _bad("key", missing_key(env_var))
    n = len(value)
    problem = None
    if value != value.strip():
        where = "a newline" if "\n" in value or "\r" in value else "spaces"
        problem = f"${env_var} has {where} around the key"
        fix = f"set it again without them, e.g. export {env_var}=\"$(printf %s \"${env_var}\" | tr -d '[:space:]')\""
    elif value[0] in "'\"`" or value[-1] in "'\"`":
        problem = f"${env_var} includes quote characters"
        fix = f"remove the quotes from the value of {env_var} (in a .env file write KEY=value without quotes)"
    elif _PLACEHOLDER.search(value):
        problem = f"${env_var} holds a placeholder, not a key"
        fix = f"put your real key in {env_var}"
    elif any(ord(c) < 33 or ord(c) > 126 for c in value):
        problem = f"${env_var} contains spaces or non-ASCII characters, which cannot be sent in a header"
        fix = f"copy the key again into {env_var}; it should be one line of printable ASCII"
    if problem:
        return _bad("key", Diagnosis("KEY_MALFORMED", f"{problem} ({n} characters)", fix))
    return _ok("key", f"${env_var} is set ({n} characters)")


# ----------------------------------------------------------------------------------- base url
_WEB_PAGE = re.compile(r"\.(?:html?|php|aspx?|jsp)$|/(?:docs?|playground|dashboard|console|chat)/?$", re.I)
_CONSOLE_HOSTS = {"platform.openai.com", "chat.openai.com", "chatgpt.com", "console.anthropic.com",
                  "aistudio.google.com", "openrouter.ai/docs"}


def check_base_url(url: str) -> Check:
    shown = redact_url(url)
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError as exc:
        return _bad("base_url", Diagnosis("BASE_URL_INVALID", f"{shown} is not a URL ({exc})",
                                          "write it as http(s)://host[:port]/path, e.g. https://api.openai.com/v1"))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _bad("base_url", Diagnosis(
            "BASE_URL_INVALID", f"{shown} has no http:// or https:// scheme and host",
            f"write the full URL, e.g. https://{url.strip().lstrip('/') or 'api.openai.com/v1'}"))
    if parts.query or parts.fragment:
        return _bad("base_url", Diagnosis(
            "BASE_URL_INVALID", f"{shown} has a query string or fragment; a base URL has neither",
            "remove everything from '?' or '#'; put a key in api_key_env's variable, and extra parameters in extra_body"))
    if parts.hostname in _CONSOLE_HOSTS or _WEB_PAGE.search(parts.path):
        return _bad("base_url", Diagnosis(
            "BASE_URL_INVALID", f"{shown} looks like a web page, not an API base URL",
            "use the provider's API base URL (usually https://<api host>/v1), not its website or docs page"))
    return _ok("base_url", f"{shown} is well formed")


# ------------------------------------------------------------------------------------ network
def _proxy_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.upper() in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY") and v}


def _proxy_for(url: str) -> str | None:
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass_environment(parts.hostname or ""):
        return proxy
    return None


def _proxy_note() -> str:
    env = _proxy_env()
    if not env:
        return ""
    return " Proxy settings in effect: " + ", ".join(f"{k}={redact_url(v) if 'PROXY' in k.upper() and k.upper() != 'NO_PROXY' else v}" for k, v in sorted(env.items())) + "."


async def check_network(url: str, timeout_s: float) -> Check:
    parts = urlsplit(url.strip())
    host, https = parts.hostname or "", parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    proxy = _proxy_for(url)
    if proxy:
        return _ok("network", f"requests go through the proxy {redact_url(proxy)}; not checked directly")
    fix_net = ("check the host and port in the base URL, that the server is running, and your network"
               + (" and proxy settings (HTTP_PROXY / HTTPS_PROXY / NO_PROXY)" if _proxy_env() else ""))
    t0 = time.perf_counter()
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout_s)
    except (socket.gaierror, UnicodeError):
        return _bad("network", Diagnosis("UNREACHABLE", f"the host name {host} could not be resolved (DNS).{_proxy_note()}", fix_net), latency_ms=_ms(time.perf_counter() - t0))
    except TimeoutError:
        return _bad("network", Diagnosis("UNREACHABLE", f"resolving {host} took longer than {timeout_s:g}s.{_proxy_note()}", fix_net), latency_ms=_ms(time.perf_counter() - t0))
    ctx = ssl.create_default_context() if https else None
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ctx, server_hostname=host if https else None), timeout_s)
        writer.close()
        try:
            await writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass
    except ssl.SSLCertVerificationError as exc:
        return _bad("network", Diagnosis(
            "TLS_ERROR", f"the TLS certificate of {host}:{port} was not accepted ({exc.verify_message})",
            "if a company proxy or a self-signed server sits in between, point SSL_CERT_FILE at its CA bundle; "
            "otherwise check the host name"), latency_ms=_ms(time.perf_counter() - t0))
    except ssl.SSLError as exc:
        return _bad("network", Diagnosis(
            "TLS_ERROR", f"the TLS handshake with {host}:{port} failed ({exc.reason or exc})",
            "if the server speaks plain HTTP (most local servers do), use http:// instead of https://"),
            latency_ms=_ms(time.perf_counter() - t0))
    except ConnectionRefusedError:
        return _bad("network", Diagnosis("UNREACHABLE", f"connection refused at {host}:{port}: nothing listens there.{_proxy_note()}",
                                         "start the server, or fix the port in the base URL"), latency_ms=_ms(time.perf_counter() - t0))
    except TimeoutError:
        return _bad("network", Diagnosis("UNREACHABLE", f"no answer from {host}:{port} within {timeout_s:g}s.{_proxy_note()}", fix_net),
                    latency_ms=_ms(time.perf_counter() - t0))
    except OSError as exc:
        return _bad("network", Diagnosis("UNREACHABLE", f"{host}:{port} cannot be reached ({exc.strerror or exc}).{_proxy_note()}", fix_net),
                    latency_ms=_ms(time.perf_counter() - t0))
    what = "TCP and TLS" if https else "TCP"
    return _ok("network", f"{host}:{port} accepts {what} connections", _ms(time.perf_counter() - t0))
