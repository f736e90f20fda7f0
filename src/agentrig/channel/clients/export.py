"""``agentrig channel export``: one channel written as another client's file, without the key.

Each client appends its own path to the base URL (see ``clientfiles.BASE_RULE``), so the URL is
written in that client's form: with /v1 for Codex, litellm and the openai SDK, without it for
Claude Code. Where the client names the key's variable (Codex ``env_key``, Claude Code's
``apiKeyHelper``) the file names it; otherwise the file carries a commented placeholder and the
one command that sets the variable the client reads.
"""

from __future__ import annotations

import json

import yaml
from pydantic import BaseModel

from agentrig.config import ResolvedRole
from agentrig.errors import ConfigError
from agentrig.channel.client import normalize_base_url
from agentrig.channel.clients.files import _VERSION_TAIL, CODEX_LAST_CHAT, FORMATS


class Export(BaseModel):
    text: str
    key_command: str | None  # the one command that makes the key reach the client
    notes: list[str] = []


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def client_base(fmt: str, base_url: str) -> str:
    """``base_url`` (an OpenAI-style base, usually …/v1) in the form ``fmt`` appends its paths to."""
    base = normalize_base_url(base_url)
    if fmt == "claude-code":
        return _VERSION_TAIL.sub("", base)
    return base


def export_client_file(fmt: str, rr: ResolvedRole, wire: str = "chat") -> Export:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown --format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not rr.model:
        raise ConfigError(f"no model for role {rr.role!r}: give --model, or set `model` in [roles.{rr.role}] or [channel]")
    var, base, model = rr.api_key_env, client_base(fmt, rr.base_url), rr.model
    notes: list[str] = []
    if rr.extra_body:
        notes.append(f"extra_body ({', '.join(sorted(rr.extra_body))}) has no equivalent in a {fmt} file and is not written")
    head = f"written by `agentrig channel export --format {fmt}` for role {rr.role!r}; no key in this file"
    if fmt == "codex":
        if wire == "anthropic":
            raise ConfigError("Codex speaks the OpenAI Responses API (wire_api \"responses\"), not the Anthropic Messages API")
        lines = [f"# {head}",
                 f"# Codex reads the key from ${var} (env_key) and appends /responses to base_url."]
        if wire != "responses":  # agentrig reaches this endpoint by chat completions: /responses is not known to work
            lines += [f"# This channel speaks chat completions. Codex after {CODEX_LAST_CHAT} speaks only the Responses API:",
                      "# check that the endpoint serves POST <base_url>/responses with",
                      "# `agentrig doctor --from codex:THIS_FILE`. If it does not, use Codex "
                      f"{CODEX_LAST_CHAT} or older and wire_api = \"chat\"."]
            notes.append(f"wire_api = \"responses\", the only value current Codex accepts; this channel speaks chat "
                         f"completions, so check POST {base}/responses with `agentrig doctor --from codex:FILE` "
                         f"(an endpoint without it needs Codex {CODEX_LAST_CHAT} or older and wire_api = \"chat\")")
        lines += [f"model = {_toml_str(model)}", 'model_provider = "agentrig"', "",
                  "[model_providers.agentrig]", 'name = "agentrig channel"', f"base_url = {_toml_str(base)}",
                  f"env_key = {_toml_str(var)}", 'wire_api = "responses"']
        if wire != "responses":
            lines.append(f'# wire_api = "chat"   # in its place: Codex {CODEX_LAST_CHAT} and older only')
        if rr.headers:
            lines.append("http_headers = { " + ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in rr.headers.items()) + " }")
        if rr.headers_from_env:
            lines.append("env_http_headers = { " + ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in rr.headers_from_env.items()) + " }")
        command = f"export {var}=<your key>   # in the shell that starts codex (a container: docker run -e {var})"
        return Export(text="\n".join(lines) + "\n", key_command=command, notes=notes)
    if fmt == "claude-code":
        env = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model}
        if rr.headers:
            env["ANTHROPIC_CUSTOM_HEADERS"] = "\n".join(f"{k}: {v}" for k, v in rr.headers.items())
        if rr.headers_from_env:
            notes.append("headers_from_env is not written: Claude Code's ANTHROPIC_CUSTOM_HEADERS holds values, not variable names")
        if wire != "anthropic":
            notes.append(f"Claude Code sends Anthropic Messages requests (POST {base}/v1/messages): the gateway must serve them; "
                         "agentrig checks that with `agentrig doctor --from claude-code:FILE`")
        data = {"apiKeyHelper": f'printf %s "${var}"', "env": env}
        command = f"export {var}=<your key>   # in the shell that starts claude; apiKeyHelper prints it"
        return Export(text=json.dumps(data, indent=2) + "\n", key_command=command, notes=notes)
    if wire == "anthropic":
        raise ConfigError(f"a {fmt} file for the openai SDK cannot carry an Anthropic Messages channel")
    command = "export OPENAI_API_KEY=<your key>" if var == "OPENAI_API_KEY" else f'export OPENAI_API_KEY="${var}"'
    if fmt == "mini-swe-agent":
        kwargs: dict = {"api_base": base}
        if rr.headers:
            kwargs["extra_headers"] = dict(rr.headers)
        if rr.headers_from_env:
            notes.append("headers_from_env is not written: litellm's extra_headers holds values, not variable names")
        body = yaml.safe_dump({"model": {"model_name": f"openai/{model}", "cost_tracking": "ignore_errors",
                                         "model_kwargs": kwargs}}, sort_keys=False)
        text = (f"# {head}\n# merge this model section into your mini-swe-agent config. litellm's openai provider\n"
                f"# reads the key from OPENAI_API_KEY: {command}\n# OPENAI_API_KEY=<your key>\n{body}")
        return Export(text=text, key_command=command, notes=notes)
    # env
    if rr.headers or rr.headers_from_env:
        notes.append("headers are not written: the openai SDK reads no header variables")
    text = (f"# {head}\n# the openai SDK appends /chat/completions to OPENAI_BASE_URL; it reads the key from\n"
            f"# OPENAI_API_KEY: {command}\n# OPENAI_API_KEY=<your key>\n"
            f"OPENAI_BASE_URL={base}\n# read by your script, not by the SDK:\nOPENAI_MODEL={model}\n")
    return Export(text=text, key_command=command, notes=notes)


