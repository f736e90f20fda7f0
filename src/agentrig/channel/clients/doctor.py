"""``agentrig doctor --from FORMAT:PATH``: another client's file, checked.

It names the values the file gives (never the key: its variable, length and fingerprint), runs the
usual doctor on them (through the OpenAI-style base URL of the same endpoint: agentrig speaks chat
completions today) and adds what goes wrong in that kind of file:

    CLIENT_VARS_MISMATCH   ANTHROPIC_* in an OpenAI-style client, OPENAI_* in Claude Code
    KEY_NOT_PASSED         the key's variable is not in the environment the client starts with
    KEY_NOT_EXPORTED       a .env line without `export`: a shell that sources it keeps it to itself
    KEY_NOT_A_NAME         Codex env_key holds a key instead of a variable's name
    KEY_MALFORMED          a placeholder, a newline or spaces around the key, CRLF line endings
    WIRE_API_UNSERVED      the wire the client speaks (Responses, Anthropic Messages) is not served
    BASE_URL_DOUBLED_V1, BASE_URL_NO_V1, BASE_URL_FULL_PATH   against that client's base-URL rule
    MODEL_LOOKS_LOCAL      a checkpoint directory or a .gguf file given as the model id
    MODEL_NO_PREFIX        a litellm model name without its provider prefix (openai/…)
    PROVIDER_MISSING       Codex model_provider names no [model_providers.X] table
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel

from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.errors import Diagnosis
from agentrig.redact import redact, redact_url
from agentrig.channel.client import normalize_base_url
from agentrig.channel.clients.files import (
    BASE_RULE,
    CODEX_LAST_CHAT,
    _VERSION_TAIL,
    ClientFile,
    FoundValue,
    parse_from,
    read_client_file,
)
from agentrig.channel.doctor.diagnose import EndpointReport, diagnose
from agentrig.channel.doctor.preflight import _PLACEHOLDER, Check, _bad, _ms, _ok

_LOCAL_MODEL = re.compile(r"^(?:/|\./|\.\./|~|[A-Za-z]:\\)|\.(?:gguf|safetensors|bin|pt|pth|ckpt|onnx)$|"
                          r"(?:^|/)checkpoint[-_]\d+/?$|(?:^|/)(?:checkpoints|ckpts?|outputs?)/", re.I)
_FLAG = re.compile(r"^[A-Z_]+(?::|$)")  # ClientFile.notes entries that are findings for file_checks, not notes
CLIENT = {"codex": "Codex", "claude-code": "Claude Code", "mini-swe-agent": "mini-swe-agent", "env": "the openai SDK"}


class FileSummary(BaseModel):
    format: str
    path: str
    base_url_rule: str
    values: list[FoundValue]
    notes: list[str] = []


class FromReport(BaseModel):
    ok: bool
    file: FileSummary
    checks: list[Check]  # what this kind of file gets wrong
    endpoint: EndpointReport | None  # the usual doctor on the file's values


# --------------------------------------------------------------------------------- file checks
def file_checks(cf: ClientFile, env: Mapping[str, str]) -> list[Check]:
    out: list[Check] = []
    who, path = CLIENT[cf.format], cf.path
    out += _vars_checks(cf, who)
    out += _key_checks(cf, env, who)
    for note in cf.notes:
        if note.startswith("PROVIDER_MISSING:"):
            pid = note.split(":", 1)[1]
            out.append(_bad("file", Diagnosis("PROVIDER_MISSING", f"model_provider = {pid!r} but {path} has no [model_providers.{pid}] table",
                                              f"add [model_providers.{pid}] with base_url, env_key and wire_api, or fix model_provider")))
        elif note == "MODEL_NO_PREFIX":
            out.append(_bad("file", Diagnosis("MODEL_NO_PREFIX", f"model name {cf.model_written!r} has no litellm provider prefix: litellm "
                                              "cannot tell it is meant for an OpenAI-compatible endpoint",
                                              f"write {cf.model_field}: openai/{cf.model_written}")))
    if cf.base_url is None:
        out.append(_bad("file", Diagnosis("BASE_URL_INVALID", f"{path} sets no base URL ({cf.base_field})",
                                          f"set {cf.base_field}; its rule: {BASE_RULE[cf.format][1]}")))
    else:
        out += _base_checks(cf)
    if cf.model and _LOCAL_MODEL.search(cf.model):
        out.append(_bad("file", Diagnosis("MODEL_LOOKS_LOCAL", f"{cf.model_field} = {cf.model!r} looks like a local path (a checkpoint or a "
                                          "weights file), not a model id a server answers to",
                                          "use the id the server lists at GET /models (vLLM: --served-model-name; llama.cpp: --alias)")))
    if not cf.model:
        out.append(_bad("file", Diagnosis("MODEL_NOT_FOUND", f"{path} sets no model ({cf.model_field or 'model'})",
                                          "set the model in the file, or give --model")))
    return out


def _vars_checks(cf: ClientFile, who: str) -> list[Check]:
    names = set(cf.variables)
    if cf.format == "claude-code":
        wrong = sorted(n for n in names if n.startswith("OPENAI_"))
        if not wrong:
            return []
        lost = "ANTHROPIC_BASE_URL" not in names
        return [_bad("file", Diagnosis("CLIENT_VARS_MISMATCH",
                     f"{', '.join(wrong)} set in {cf.path}, but Claude Code reads only ANTHROPIC_* variables"
                     + (": with no ANTHROPIC_BASE_URL it calls api.anthropic.com" if lost else ""),
                     "write the endpoint's root as env.ANTHROPIC_BASE_URL and its key as env.ANTHROPIC_AUTH_TOKEN "
                     "(or apiKeyHelper); remove the OPENAI_* entries"), status="fail" if lost else "warn")]
    if cf.wire == "anthropic":  # a litellm anthropic/ model: ANTHROPIC_* is right there
        return []
    wrong = sorted(n for n in names if n.startswith(("ANTHROPIC_", "CLAUDE_")))
    host = urlsplit(cf.base_url or "").hostname or ""
    fatal = (cf.key_var or "").startswith("ANTHROPIC_") or host == "api.anthropic.com"
    if not wrong and not fatal:
        return []
    what = ", ".join(wrong) or f"the base URL {redact_url(cf.base_url or '')}"
    return [_bad("file", Diagnosis("CLIENT_VARS_MISMATCH",
                 f"{what} in {cf.path}, but {who} speaks the OpenAI API and never reads Anthropic settings"
                 + (": its requests would carry an Anthropic key or go to Anthropic's API" if fatal else ""),
                 "use the endpoint's OpenAI-compatible base URL (…/v1) and an OPENAI-style key variable; "
                 "ANTHROPIC_* variables belong in Claude Code's settings"), status="fail" if fatal else "warn")]


def _key_checks(cf: ClientFile, env: Mapping[str, str], who: str) -> list[Check]:
    out: list[Check] = []
    if "ENV_KEY_NOT_A_NAME" in cf.notes:
        out.append(_bad("file", Diagnosis("KEY_NOT_A_NAME", f"{cf.key_field} holds what looks like a key, not the NAME of a variable",
                                          "write env_key = \"GATEWAY_API_KEY\" (a name) and export GATEWAY_API_KEY=<your key>; "
                                          "then replace the key, which now sits in a file")))
        return out
    key, var = cf.key, cf.key_var
    if cf.key_where == "environment" and not key:
        out.append(_bad("file", Diagnosis("KEY_NOT_PASSED", f"{who} reads the key from ${var} ({cf.key_field}), which is not set in "
                                          "this environment: a process started from here would get no key",
                                          f"export {var}=<your key> in the shell that starts {who} (`export`, not a bare assignment); "
                                          f"for a container pass it: docker run -e {var} …")))
    if cf.key_where == "file" and cf.format in ("env", "mini-swe-agent") and var:
        in_env = env.get(var)
        if in_env is None:
            bare = not cf.variables.get(var, False)
            out.append(Check(name="file", status="warn", code="KEY_NOT_EXPORTED",
                             message=f"{var} is set in {cf.path} but not in this environment: a child process (or a container) sees it "
                                     f"only if it loads the file itself" + (" — the line has no `export`, so `. FILE` keeps it in the shell" if bare else ""),
                             fix=f"set -a; . {cf.path}; set +a (exports every line), or docker run --env-file {cf.path}, "
                                 "or load it in the script (python-dotenv)"))
        elif key is not None and in_env != key:
            out.append(Check(name="file", status="warn", code="KEY_CONFLICT",
                             message=f"the environment's {var} is not the one in {cf.path}; python-dotenv keeps the environment's "
                                     "unless override=True, a shell that sources the file takes the file's",
                             fix=f"unset {var} or make both the same key"))
    if key is not None:
        where = f"{cf.key_field} ({'in ' + cf.path if cf.key_where == 'file' else '$' + str(var)})"
        if key != key.strip():
            nl = "a newline" if ("\n" in key or "\r" in key) else "spaces"
            out.append(_bad("file", Diagnosis("KEY_MALFORMED", f"the key in {where} has {nl} around it ({len(key)} characters); "
                                              "it is sent as is and rejected", "remove the whitespace around the key")))
        elif _PLACEHOLDER.search(key.strip()):
            out.append(_bad("file", Diagnosis("KEY_MALFORMED", f"{where} holds a placeholder, not a key",
                                              f"put the real key in {var}" + (" (export it; keep it out of the file)" if cf.key_where == "file" else ""))))
    if cf.crlf and cf.format in ("env", "mini-swe-agent") and cf.key_where == "file":
        out.append(_bad("file", Diagnosis("KEY_MALFORMED", f"{cf.path} has Windows line endings: a shell that sources it keeps a \\r "
                                          "at the end of every value, the key included", f"sed -i 's/\\r$//' {cf.path}")))
    return out


def _base_checks(cf: ClientFile) -> list[Check]:
    base = normalize_base_url(cf.base_url or "")
    path = urlsplit(base).path
    field, rule = cf.base_field, BASE_RULE[cf.format][1]
    if re.search(r"/v1/v1(?:/|$)", path):
        fixed = re.sub(r"(/v1)(?:/v1)+", r"\1", base)
        fixed = _VERSION_TAIL.sub("", fixed) if cf.format == "claude-code" else fixed
        return [_bad("file", Diagnosis("BASE_URL_DOUBLED_V1", f"{field} = {redact_url(base)} has /v1 twice ({rule})",
                                       f"{field} = \"{redact_url(fixed)}\""))]
    tail = re.search(r"/(?:chat/completions|completions|responses|messages|models)$", path)
    if tail:
        fixed = base[: -len(tail.group(0))]
        fixed = _VERSION_TAIL.sub("", fixed) if cf.format == "claude-code" else fixed
        return [_bad("file", Diagnosis("BASE_URL_FULL_PATH", f"{field} = {redact_url(base)} ends in {tail.group(0)}, which {CLIENT[cf.format]} "
                                       f"appends itself ({rule})", f"{field} = \"{redact_url(fixed)}\""))]
    if cf.format == "claude-code" and _VERSION_TAIL.search(path):
        return [_bad("file", Diagnosis("BASE_URL_DOUBLED_V1", f"{field} = {redact_url(base)} ends in a version path: Claude Code would "
                                       f"POST {redact_url(base)}/v1/messages ({rule})",
                                       f"{field} = \"{redact_url(_VERSION_TAIL.sub('', base))}\""))]
    return []


# -------------------------------------------------------------------------------- wire probes
async def probe_wire(cf: ClientFile, base: str, key: str, timeout_s: float) -> Check | None:
    """One request in the wire the client speaks, when it is not chat completions."""
    if cf.wire == "responses":
        url, body = base + "/responses", {"model": cf.model, "input": "Reply with the single word OK.", "max_output_tokens": 16}
        headers, api = {"Authorization": f"Bearer {key}"}, "the OpenAI Responses API"
    elif cf.wire == "anthropic" and cf.format == "claude-code":
        url = base + "/messages"
        body = {"model": cf.model, "max_tokens": 16, "messages": [{"role": "user", "content": "Reply with the single word OK."}]}
        headers = {"Authorization": f"Bearer {key}", "x-api-key": key, "anthropic-version": "2023-06-01"}
        api = "the Anthropic Messages API"
    else:
        return None
    shown = redact_url(url)
    t0 = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=timeout_s, trust_env=True) as client:
            r = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        return _bad("wire", Diagnosis("UNREACHABLE", f"POST {shown}: {redact(str(exc) or type(exc).__name__)}",
                                      "check the endpoint; the chat checks above name the network fault"), latency_ms=_ms(time.perf_counter() - t0))
    ms = _ms(time.perf_counter() - t0)
    text = redact(r.text[:300])
    try:
        data = r.json()
    except ValueError:
        data = None
    later = "agentrig itself can still reach this endpoint through chat completions ([channel] wire = \"chat\")"
    if r.status_code in (404, 405) and not re.search(r"model", text, re.I):
        fix = (f"use a gateway that serves /v1/responses, or Codex {CODEX_LAST_CHAT} or older with wire_api = \"chat\""
               if cf.wire == "responses" else
               "put a gateway that serves the Anthropic Messages API (/v1/messages) in front of this endpoint (e.g. a LiteLLM proxy)")
        return _bad("wire", Diagnosis("WIRE_API_UNSERVED", f"{CLIENT[cf.format]} speaks {api}, and POST {shown} answered {r.status_code}: "
                                      f"this endpoint does not serve it ({cf.wire_field}); {later}", fix), latency_ms=ms)
    if r.status_code in (401, 403):
        return _bad("wire", Diagnosis("AUTH_REJECTED", f"POST {shown} answered {r.status_code}: {text}",
                                      f"check the key {CLIENT[cf.format]} sends ({cf.key_field})"), latency_ms=ms)
    if r.status_code == 404:
        return _bad("wire", Diagnosis("MODEL_NOT_FOUND", f"POST {shown} answered 404 for model {cf.model!r}: {text}",
                                      "use a model id the endpoint serves in this API"), latency_ms=ms)
    kind = data.get("type") if isinstance(data, dict) else None
    obj = data.get("object") if isinstance(data, dict) else None
    if r.status_code == 200 and (kind == "message" or obj == "response"):
        return _ok("wire", f"POST {shown} answered in {api}; {later}", ms)
    return _bad("wire", Diagnosis("BAD_RESPONSE", f"POST {shown} answered {r.status_code}, not a reply of {api}: {text}",
                                  f"check that the endpoint serves {api}"), latency_ms=ms)


# ------------------------------------------------------------------------------------- driver
def _client_fix(cf: ClientFile, ep: EndpointReport) -> list[Check]:
    """The usual BASE_URL_PATH finding, said in the file's own terms."""
    out: list[Check] = []
    for c in ep.checks:
        m = re.search(r'base_url = "([^"]+)"', c.fix or "") if c.code == "BASE_URL_PATH" else None
        if not m:
            continue
        found = m.group(1)
        written = _VERSION_TAIL.sub("", found) if cf.format == "claude-code" else found
        c.fix = f"in {cf.path}: {cf.base_field} = \"{written}\""
        base = normalize_base_url(cf.openai_base() or "")
        if found == base + "/v1" or (found.endswith("/v1") and not _VERSION_TAIL.search(urlsplit(base).path)):
            out.append(_bad("file", Diagnosis("BASE_URL_NO_V1", f"{cf.base_field} = {redact_url(cf.base_url or '')} lacks /v1: the server "
                                              f"answers at {redact_url(found)}, and {CLIENT[cf.format]} adds only the endpoint's own path "
                                              f"(rule: {BASE_RULE[cf.format][1]})", c.fix)))
    return out


async def doctor_from(spec: str, env: Mapping[str, str] | None = None, *, model: str | None = None,
                      timeout_s: float | None = None) -> FromReport:
    env = dict(os.environ if env is None else env)
    fmt, path = parse_from(spec)
    cf = read_client_file(fmt, path, env)
    if model:
        cf.model = cf.model_written = model
        cf.model_field = "--model"
    checks = file_checks(cf, env)
    summary = FileSummary(format=fmt, path=str(path), base_url_rule=f"{BASE_RULE[fmt][0]}: {BASE_RULE[fmt][1]}",
                          values=cf.values, notes=[n for n in cf.notes if not _FLAG.match(n)])
    base = cf.openai_base()
    endpoint = None
    if base is not None and "ENV_KEY_NOT_A_NAME" not in cf.notes:
        var = cf.key_var or ("ANTHROPIC_AUTH_TOKEN" if fmt == "claude-code" else "OPENAI_API_KEY")
        key = cf.key
        if key is not None and key.strip() and key != key.strip():  # found above; see whether the rest works
            key = key.strip()
            summary.notes.append("the endpoint checks below ran with the key stripped of its whitespace")
        denv = {**env, var: key} if key is not None else {k: v for k, v in env.items() if k != var}
        collapsed = re.sub(r"(/v1)(?:/v1)+", r"\1", base) if cf.format == "claude-code" else base
        cfg = ChannelConfig(channel=ChannelSettings(base_url=collapsed, model=cf.model, api_key_env=var, timeout_s=timeout_s))
        rr = cfg.resolve("agent", denv)
        endpoint = await diagnose(rr, [f"{fmt} file"], denv)
        checks += _client_fix(cf, endpoint)
        ready = {c.name: c.status for c in endpoint.checks}
        if key and cf.model and ready.get("network") == "pass" and ready.get("key") != "fail":
            wire = await probe_wire(cf, normalize_base_url(collapsed), key, rr.timeout_s)
            if wire is not None:
                checks.append(wire)
    ok = all(c.status != "fail" for c in checks) and (endpoint is None or endpoint.ok) and base is not None
    return FromReport(ok=ok, file=summary, checks=checks, endpoint=endpoint)


def report_json(report: FromReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2)


def doctor_from_command(spec: str, *, model: str | None, timeout_s: float | None, as_json: bool, console) -> int:
    import asyncio
    import sys

    from agentrig.channel.doctor.console import print_from_doctor

    report = asyncio.run(doctor_from(spec, model=model, timeout_s=timeout_s))
    if as_json:
        sys.stdout.write(report_json(report) + "\n")
    else:
        print_from_doctor(report, console)
    return 0 if report.ok else 1
