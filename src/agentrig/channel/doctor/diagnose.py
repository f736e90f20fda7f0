"""The doctor: checks an (endpoint, model) pair before anyone spends on a run.

Checks, in order (a check whose prerequisite failed is skipped):
  key       KEY_MISSING, KEY_MALFORMED
  base_url  BASE_URL_INVALID
  network   UNREACHABLE, TLS_ERROR
  models    AUTH_REJECTED, BASE_URL_PATH (probes the usual mistakes and names the URL that works)
  model     MODEL_NOT_FOUND (with the closest ids served)
  chat      RATE_LIMITED, QUOTA_EXHAUSTED, TIMEOUT, BAD_RESPONSE, SERVER_ERROR, BAD_REQUEST
  server    which server answers (vLLM, llama.cpp, llama-cpp-python, Ollama, SGLang) and its window
  tools     the agent's own request: AUTO_TOOL_CHOICE_OFF, NO_TOOL_SUPPORT, NO_TOOL_CALLS (a warning)
  forced    a forced tool call: NO_TOOL_SUPPORT (a warning), TOOL_ARGS_INVALID (a warning)
  agent     an installed agent's real first request, sent as it is (one per agent on the endpoint):
            CONTEXT_TOO_SMALL, the tools faults, AGENT_NOT_INSTALLED (a warning) (``agent_request.py``)
  prompt    PROMPT_TRUNCATED (prompt_tokens does not grow with the prompt)
  window    CONTEXT_TOO_SMALL (a warning: the experiment's first request does not fit; a failure when an
            installed agent's real first request alone does not)
(server, tools, prompt, window: ``checks.py`` and ``servers.py``.)
The key is never shown, not even in part: only its variable's name and its length.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import openai
from pydantic import BaseModel

from agentrig.config import ChannelConfig, ResolvedRole
from agentrig.errors import Diagnosis
from agentrig.redact import redact, redact_url
from agentrig.channel.client import build_params, make_client, normalize_base_url, send_once
from agentrig.channel.doctor.preflight import (
    Check,
    _bad,
    _ms,
    _ok,
    _proxy_note,
    check_base_url,
    check_key,
    check_network,
)
from agentrig.channel.faults import (
    EXHAUSTED_CODES,
    auth_rejected,
    connection_detail,
    model_not_found,
    refused,
    server_message,
)
from agentrig.channel.doctor.checks import (
    RequestShape,
    check_agent_tools,
    check_prompt_growth,
    check_window,
    largest,
    server_check,
)
from agentrig.channel.doctor.agent_request import check_agent_request
from agentrig.channel.servers import identify
from agentrig.channel.wires import wire_module

ORDER = ("key", "base_url", "network", "models", "model", "chat", "server", "tools", "forced", "agent", "prompt",
         "window")


class EndpointReport(BaseModel):
    base_url: str
    model: str | None
    wire: str = "chat"
    roles: list[str]
    uses: list[str] = []  # "arm: role" for each arm's role on this endpoint (``doctor --config`` of an experiment)
    checks: list[Check] = []
    skipped: list[str] = []

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


class DoctorReport(BaseModel):
    ok: bool
    endpoints: list[EndpointReport]


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
    except openai.APITimeoutError as exc:
        elapsed = time.perf_counter() - t0
        if refused(exc) or elapsed < 0.9 * timeout_s:  # aiohttp's label for a refused or dropped connection
            return None, None, redact(connection_detail(exc, base)), elapsed
        return None, None, f"no answer within {timeout_s:g}s", elapsed
    except openai.APIConnectionError as exc:
        return None, None, redact(connection_detail(exc, base)), time.perf_counter() - t0
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


def _models_check(api: str):
    """The models check for a wire's model-listing API (``MODELS`` of its module)."""
    if api == "anthropic":
        from agentrig.channel.doctor.wire_models import check_models_anthropic  # the Anthropic SDK only when asked

        return check_models_anthropic
    if api == "openai":
        return check_models
    raise ValueError(f"unknown model-listing API {api!r}: expected 'openai' or 'anthropic'")


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
    """The second line: can the model call a tool at all when the request forces it?"""
    messages = [{"role": "user", "content": "Call record_answer with the answer 'OK'."}]
    forced = {"type": "function", "function": {"name": "record_answer"}}
    params = build_params(rr, messages, [_PROBE_TOOL], forced)
    out = await send_once(client, rr, params, headers, rr.timeout_s)
    fix = 'use a model that supports function calling, or the agent\'s text mode (tool_mode = "text")'
    if out.completion is None:
        f = out.fault
        if f.fatal is not None and f.fatal.diagnosis.code == "BAD_REQUEST":
            return Check(name="forced", status="warn", code="NO_TOOL_SUPPORT", latency_ms=_ms(out.latency_s),
                         message=f"the endpoint rejected a request with tools ({f.status}): {f.detail}", fix=fix)
        return _fault_check("forced", out, rr)
    calls = out.completion.message.tool_calls
    if not calls:
        return Check(name="forced", status="warn", code="NO_TOOL_SUPPORT", latency_ms=_ms(out.latency_s),
                     message="the model ignored a forced tool call and answered with text", fix=fix)
    if calls[0].arguments_error:
        return Check(name="forced", status="warn", code="TOOL_ARGS_INVALID", latency_ms=_ms(out.latency_s),
                     message=f"the model called the tool but {calls[0].arguments_error}",
                     fix="expect format errors with this model; the agent shows them to the model and counts them")
    return _ok("forced", f"the model made the forced tool call ({calls[0].name})", _ms(out.latency_s))


# ------------------------------------------------------------------------------------- driver
async def diagnose(rr: ResolvedRole, roles: list[str], env: Mapping[str, str] | None = None,
                   shape: RequestShape | None = None, uses: list[str] | None = None,
                   agents: list[RequestShape] | None = None) -> EndpointReport:
    """``shape``: what the experiment's agent sends first (``--config``); None = a representative request.
    ``agents``: the real first requests of the installed agents that use this endpoint (each sent as it is)."""
    agents = agents or []
    env = os.environ if env is None else env
    report = EndpointReport(base_url=redact_url(normalize_base_url(rr.base_url)), model=rr.model, wire=rr.wire,
                            roles=roles, uses=uses or [])
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
    # the model list the wire's servers have (its module's MODELS); the later checks speak the wire (send_once)
    models_check, ids = await _models_check(wire_module(rr.wire).MODELS)(base, key, rr.api_key_env, timeout)
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
        info = await identify(base, key, rr.model, timeout)
        checks.append(server_check(info))
        checks.append(await check_agent_tools(client, rr, headers, shape, info))
        checks.append(await check_tools(client, rr, headers))
        for agent in agents:
            checks.append(await check_agent_request(client, rr, headers, agent, info))
        real = [a for a in agents if not a.problem]
        checks.append(await check_prompt_growth(client, rr, headers, largest([*([shape] if shape else []), *real]), info))
        if shape is not None or not real or info.window is None:
            checks.append(check_window(rr, shape or largest(real), info))
        if info.window is not None:
            checks.extend(check_window(rr, agent, info) for agent in real)
    finally:
        await client.close()
    return report


def endpoint_groups(config: ChannelConfig, env: Mapping[str, str] | None = None) -> list[tuple[ResolvedRole, list[str]]]:
    """Distinct (endpoint, model) pairs of the configured roles, each with its roles."""
    groups: dict[tuple, tuple[ResolvedRole, list[str]]] = {}
    for role in config.configured_roles():
        rr = config.resolve(role, env)
        ident = (normalize_base_url(rr.base_url), rr.api_key_env, rr.model, rr.tool_choice, rr.wire)
        if ident in groups:
            groups[ident][1].append(role)
        else:
            groups[ident] = (rr, [role])
    return list(groups.values())


async def run_doctor(config: ChannelConfig | None, env: Mapping[str, str] | None = None,
                     shapes: Mapping[str, RequestShape] | None = None,
                     targets: list[tuple[ResolvedRole, list[str], list[str]]] | None = None) -> DoctorReport:
    """``shapes``: role (or ``"ARM: role"``) → what the experiment sends first on it (the agent's request, …);
    ``targets``: (settings, roles, uses) to check instead of the configured roles of ``config``
    (an experiment's arms: ``run/doctor_targets.py``)."""
    if targets is None:
        targets = [(rr, roles, []) for rr, roles in endpoint_groups(config or ChannelConfig(), env)]
    shapes = shapes or {}

    def shape_of(roles: list[str], uses: list[str]) -> tuple[RequestShape | None, list[RequestShape]]:
        """The first requests of the arms that use this endpoint (``"ARM: role"`` keys), else the
        experiment's for the role; and apart, the installed agents' real ones (each checked as it is)."""
        for r in roles:
            mine = [shapes[u] for u in uses if u.endswith(f": {r}") and u in shapes]
            if mine:
                return largest([s for s in mine if not s.agent]), [s for s in mine if s.agent]
            if r in shapes:
                return shapes[r], []
        return None, []

    async def one(rr: ResolvedRole, roles: list[str], uses: list[str]) -> EndpointReport:
        shape, agents = shape_of(roles, uses)
        return await diagnose(rr, roles, env, shape, uses, agents)

    reports = await asyncio.gather(*(one(rr, roles, uses) for rr, roles, uses in targets))
    return DoctorReport(ok=all(r.ok for r in reports), endpoints=list(reports))
