"""The doctor: checks an (endpoint, model) pair before anyone spends on a run.

Checks, in order (a check whose prerequisite failed is skipped):
  key       KEY_MISSING, KEY_MALFORMED
  base_url  BASE_URL_INVALID
  network   UNREACHABLE, TLS_ERROR
  models    AUTH_REJECTED, BASE_URL_PATH (probes the usual mistakes and names the URL that works)
  model     MODEL_NOT_FOUND (with the closest ids served)
  chat      RATE_LIMITED, QUOTA_EXHAUSTED, TIMEOUT, BAD_RESPONSE, SERVER_ERROR, BAD_REQUEST
  tools     NO_TOOL_SUPPORT (a warning), TOOL_ARGS_INVALID (a warning)
The key is never shown, not even in part: only its variable's name and its length.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
import socket
import ssl
import time
import urllib.request
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import openai
from pydantic import BaseModel

from ..config import ChannelConfig, ResolvedRole
from ..errors import Diagnosis
from ..redact import read_secret, redact, redact_url
from .client import build_params, make_client, missing_key, normalize_base_url, send_once
from .faults import EXHAUSTED_CODES, auth_rejected, model_not_found, server_message

Status = Literal["pass", "warn", "fail"]
ORDER = ("key", "base_url", "network", "models", "model", "chat", "tools")


class Check(BaseModel):
    name: str
    status: Status
    code: str | None = None
    message: str
    fix: str | None = None
    latency_ms: float | None = None


class EndpointReport(BaseModel):
    base_url: str
    model: str | None
    roles: list[str]
    checks: list[Check] = []
    skipped: list[str] = []

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


class DoctorReport(BaseModel):
    ok: bool
    endpoints: list[EndpointReport]


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


# ------------------------------------------------------------------------------------- models
async def _get_models(base: str, key: str, timeout_s: float) -> tuple[int | None, object, str, float]:
    """(status, parsed body or None, error text, seconds); status None = no HTTP answer."""
    client = make_client(base, key, timeout_s)
    t0 = time.perf_counter()
    try:
        raw = await client.models.with_raw_response.list()
        content = raw.http_response.content
        try:
            return raw.http_response.status_code, json.loads(content), "", time.perf_counter() - t0
        except ValueError:
            return raw.http_response.status_code, None, content[:200].decode("utf-8", "replace"), time.perf_counter() - t0
    except openai.APIStatusError as exc:
        return exc.status_code, exc.body, exc.response.text, time.perf_counter() - t0
    except openai.APITimeoutError:
        return None, None, f"no answer within {timeout_s:g}s", time.perf_counter() - t0
    except openai.APIConnectionError as exc:
        return None, None, redact(str(exc.__cause__ or exc)), time.perf_counter() - t0
    finally:
        await client.close()


def _model_ids(body: object) -> list[str] | None:
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        return [m["id"] for m in body["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if isinstance(body, dict) and isinstance(body.get("models"), list):  # some servers
        return [m.get("id") or m.get("name") for m in body["models"] if isinstance(m, dict) and (m.get("id") or m.get("name"))]
    return None


def path_candidates(base: str) -> list[str]:
    """Base URLs to try when ``base`` answers 404: the usual mistakes, most likely first."""
    parts = urlsplit(base)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    out: list[str] = []
    for suffix in ("/chat/completions", "/completions", "/models", "/chat"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            out.append(root + path)
            break
    collapsed = re.sub(r"(/v1)(?:/v1)+", r"\1", path)
    if collapsed != path:
        out.append(root + collapsed)
    path = collapsed
    if not re.search(r"/v\d+(?:beta)?$", path):
        out.append(root + path + "/v1")
    else:
        out.append(root + re.sub(r"/v\d+(?:beta)?$", "", path))
    out += [root + "/v1", root + "/api/v1", root + "/openai/v1"]
    seen, result = {normalize_base_url(base)}, []
    for c in out:
        c = normalize_base_url(c)
        if c not in seen:
            seen.add(c)
            result.append(c)
    return result


async def _probe(base: str, key: str, timeout_s: float) -> str | None:
    for cand in path_candidates(base):
        status, body, _, _ = await _get_models(cand, key, timeout_s)
        if status == 200 and _model_ids(body) is not None:
            return cand
        if status in (401, 403):  # the path exists; the key is another matter
            return cand
    return None


async def check_models(base: str, key: str, key_env: str, timeout_s: float) -> tuple[Check, list[str] | None]:
    status, body, text, secs = await _get_models(base, key, timeout_s)
    ms = _ms(secs)
    shown = redact_url(base)
    if status is None:
        code = "TIMEOUT" if text.startswith("no answer") else "UNREACHABLE"
        return _bad("models", Diagnosis(code, f"GET {shown}/models: {text}.{_proxy_note()}", EXHAUSTED_CODES["timeout" if code == "TIMEOUT" else "connection"][2]), latency_ms=ms), None
    if status in (401, 403):
        return _bad("models", auth_rejected(status, key_env, server_message(body, text)), latency_ms=ms), None
    ids = _model_ids(body) if status == 200 else None
    if status == 404 or (status == 200 and ids is None):
        what = "404 Not Found" if status == 404 else "200 but not a model list (a web page or another API?)"
        found = await _probe(base, key, timeout_s)
        if found:
            return _bad("models", Diagnosis(
                "BASE_URL_PATH", f"GET {shown}/models answered {what}; {redact_url(found)} is the base URL that works",
                f"set base_url = \"{redact_url(found)}\""), latency_ms=ms), None
        return _bad("models", Diagnosis(
            "BASE_URL_PATH", f"GET {shown}/models answered {what}, and none of the usual corrections "
            f"({', '.join(redact_url(c) for c in path_candidates(base)[:4])}) serves a model list",
            "look up the provider's OpenAI-compatible base URL (it usually ends in /v1)"), latency_ms=ms), None
    if status == 429:
        return _bad("models", Diagnosis("RATE_LIMITED", f"GET {shown}/models answered 429: {server_message(body, text)}",
                                        EXHAUSTED_CODES["rate_limited"][2]), latency_ms=ms), None
    if status >= 400:
        return _bad("models", Diagnosis("SERVER_ERROR" if status >= 500 else "BAD_REQUEST",
                                        f"GET {shown}/models answered {status}: {server_message(body, text)}",
                                        "check the endpoint's status; run the doctor again later"), latency_ms=ms), None
    return _ok("models", f"GET {shown}/models lists {len(ids or [])} model(s)", ms), ids


def closest_models(model: str, ids: list[str], n: int = 5) -> list[str]:
    lower = model.lower()
    contains = [i for i in ids if lower in i.lower() or i.lower().split("/")[-1] == lower.split("/")[-1]]
    fuzzy = difflib.get_close_matches(model, ids, n=n, cutoff=0.4)
    out: list[str] = []
    for i in contains + fuzzy:
        if i not in out:
            out.append(i)
    return out[:n]


# --------------------------------------------------------------------------------- chat, tools
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "record_answer",
        "description": "Record the final answer.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string", "description": "The answer."}},
                       "required": ["answer"]},
    },
}


def _fault_check(name: str, out, rr: ResolvedRole) -> Check:
    f = out.fault
    ms = _ms(out.latency_s)
    if f.fatal is not None:
        return _bad(name, f.fatal.diagnosis, latency_ms=ms)
    code, what, fix = EXHAUSTED_CODES.get(f.cause, ("CHANNEL_FAILED", "the call failed", "run the doctor again"))
    if f.cause == "rate_limited":
        wait = f" and asked to wait {f.retry_after_s:g}s" if f.retry_after_s is not None else ""
        what = f"the endpoint answered 429 Too Many Requests{wait}"
    detail = f": {f.detail}" if f.detail else ""
    return _bad(name, Diagnosis(code, f"{what}{detail}", fix), latency_ms=ms)


async def check_chat(client: openai.AsyncOpenAI, rr: ResolvedRole, headers: dict[str, str]) -> Check:
    params = build_params(rr, [{"role": "user", "content": "Reply with the single word OK."}], None)
    out = await send_once(client, rr, params, headers, rr.timeout_s)
    if out.completion is None:
        return _fault_check("chat", out, rr)
    c = out.completion
    if not (c.message.content or "").strip() and not c.message.tool_calls:
        return Check(name="chat", status="warn", code="EMPTY_REPLY", latency_ms=_ms(out.latency_s),
                     message=f"the model answered with no text (finish_reason={c.finish_reason})",
                     fix="a reasoning model may need a larger max_tokens for this role")
    u = c.usage
    tokens = f" ({u.prompt_tokens}+{u.completion_tokens} tokens)" if u.reported else " (no usage reported)"
    return _ok("chat", f"a one-line completion came back{tokens}", _ms(out.latency_s))


async def check_tools(client: openai.AsyncOpenAI, rr: ResolvedRole, headers: dict[str, str]) -> Check:
    messages = [{"role": "user", "content": "Call record_answer with the answer 'OK'."}]
    forced = {"type": "function", "function": {"name": "record_answer"}}
    params = build_params(rr, messages, [_PROBE_TOOL], forced)
    out = await send_once(client, rr, params, headers, rr.timeout_s)
    fix = 'use a model that supports function calling, or the agent\'s text mode (tool_mode = "text")'
    if out.completion is None:
        f = out.fault
        if f.fatal is not None and f.fatal.diagnosis.code == "BAD_REQUEST":
            return Check(name="tools", status="warn", code="NO_TOOL_SUPPORT", latency_ms=_ms(out.latency_s),
                         message=f"the endpoint rejected a request with tools ({f.status}): {f.detail}", fix=fix)
        return _fault_check("tools", out, rr)
    calls = out.completion.message.tool_calls
    if not calls:
        return Check(name="tools", status="warn", code="NO_TOOL_SUPPORT", latency_ms=_ms(out.latency_s),
                     message="the model ignored a forced tool call and answered with text", fix=fix)
    if calls[0].arguments_error:
        return Check(name="tools", status="warn", code="TOOL_ARGS_INVALID", latency_ms=_ms(out.latency_s),
                     message=f"the model called the tool but {calls[0].arguments_error}",
                     fix="expect format errors with this model; the agent shows them to the model and counts them")
    return _ok("tools", f"the model made the forced tool call ({calls[0].name})", _ms(out.latency_s))


# ------------------------------------------------------------------------------------- driver
async def diagnose(rr: ResolvedRole, roles: list[str], env: Mapping[str, str] | None = None) -> EndpointReport:
    env = os.environ if env is None else env
    report = EndpointReport(base_url=redact_url(normalize_base_url(rr.base_url)), model=rr.model, roles=roles)
    checks = report.checks
    timeout = rr.timeout_s

    def skip_rest(after: str, why: str) -> EndpointReport:
        rest = [n for n in ORDER[ORDER.index(after) + 1:] if n not in {c.name for c in checks}]
        report.skipped = [f"{n} ({why})" for n in rest]
        return report

    checks.append(check_key(rr.api_key_env, env))
    checks.append(check_base_url(rr.base_url))
    if checks[-1].status == "fail":
        return skip_rest("base_url", "needs a valid base URL")
    base = normalize_base_url(rr.base_url)
    checks.append(await check_network(base, timeout))
    if checks[-1].status == "fail":
        return skip_rest("network", "needs a reachable endpoint")
    if checks[0].status == "fail":
        return skip_rest("network", "needs a key")
    key = env[rr.api_key_env]
    models_check, ids = await check_models(base, key, rr.api_key_env, timeout)
    checks.append(models_check)
    if models_check.status == "fail":
        return skip_rest("models", "needs GET /models to work")
    if not rr.model:
        checks.append(Check(name="model", status="fail", code="MODEL_NOT_FOUND", message="no model is configured",
                            fix="give --model, or set `model` in [roles.X] / [channel]"))
        return skip_rest("model", "needs a model")
    close = closest_models(rr.model, ids or [])
    listed = ids is None or rr.model in ids
    headers = {**rr.headers, "X-Agentrig-Role": "doctor"}
    client = make_client(base, key, timeout)
    try:
        chat = await check_chat(client, rr, headers)
        if chat.code == "MODEL_NOT_FOUND" or (not listed and chat.status == "fail"):
            checks.append(_bad("model", model_not_found(rr.model, report.base_url, "", close)))
            if chat.code == "MODEL_NOT_FOUND":
                return skip_rest("model", "needs a model the endpoint serves")
        elif listed:
            checks.append(_ok("model", f"'{rr.model}' is served by the endpoint"))
        else:
            checks.append(Check(name="model", status="warn", code="MODEL_UNLISTED",
                                message=f"'{rr.model}' is not in GET /models but the endpoint answers for it (an alias?)",
                                fix=f"prefer a listed id{': ' + ', '.join(close) if close else ''}"))
        checks.append(chat)
        if chat.status == "fail":
            return skip_rest("chat", "needs a working chat completion")
        checks.append(await check_tools(client, rr, headers))
    finally:
        await client.close()
    return report


def endpoint_groups(config: ChannelConfig, env: Mapping[str, str] | None = None) -> list[tuple[ResolvedRole, list[str]]]:
    """Distinct (endpoint, model) pairs of the configured roles, each with its roles."""
    groups: dict[tuple, tuple[ResolvedRole, list[str]]] = {}
    for role in config.configured_roles():
        rr = config.resolve(role, env)
        ident = (normalize_base_url(rr.base_url), rr.api_key_env, rr.model)
        if ident in groups:
            groups[ident][1].append(role)
        else:
            groups[ident] = (rr, [role])
    return list(groups.values())


async def run_doctor(config: ChannelConfig, env: Mapping[str, str] | None = None) -> DoctorReport:
    groups = endpoint_groups(config, env)
    reports = await asyncio.gather(*(diagnose(rr, roles, env) for rr, roles in groups))
    return DoctorReport(ok=all(r.ok for r in reports), endpoints=list(reports))
