"""Which model server answers, what its context window is, and each server's own fixes.

The doctor names the server when it can tell, from what the server already shows:

- ``GET {base}/models``: vLLM lists ``owned_by "vllm"`` and ``max_model_len``; llama.cpp's
  ``llama-server`` ``owned_by "llamacpp"``; llama-cpp-python ``owned_by "me"`` with ``permissions``;
  SGLang ``owned_by "sglang"``; Ollama ``owned_by "library"`` (or the model's namespace);
- the response headers: ``Server: llama.cpp``;
- side routes at the server's root: llama.cpp's ``/props`` (``default_generation_settings.n_ctx``),
  Ollama's ``/api/version``, then ``/api/ps`` (the window actually allocated, ``context_length``)
  or ``/api/show`` (``num_ctx`` in ``parameters``; ``model_info``'s ``context_length`` is the length
  the model was trained for, not the window Ollama gives it).

A server that shows none of these is "an OpenAI-compatible server" and gets the generic fixes.

vLLM, llama.cpp, llama-cpp-python and SGLang refuse a prompt longer than their window (an error
the channel turns into ``CONTEXT_OVERFLOW``); Ollama's OpenAI-compatible endpoint cuts it to the
window and answers 200. So a request the size estimate (``estimate_tokens``: about 4 characters a
token, the doctor's) puts over a known window was cut when a server that does not refuse answered it
(``cuts_silently``; the run's truncation watch, ``trial/truncation.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

VLLM, LLAMA_CPP, LLAMA_CPP_PYTHON, OLLAMA, SGLANG = "vLLM", "llama.cpp", "llama-cpp-python", "Ollama", "SGLang"
REFUSES_OVERFLOW = frozenset({VLLM, LLAMA_CPP, LLAMA_CPP_PYTHON, SGLANG})  # an error past the window, never a cut


def estimate_tokens(messages: list[dict], tools: list[dict] | None = None) -> int:
    """A request's size in tokens without a tokenizer: about 4 characters a token over the
    messages' text and the tools' JSON, plus 4 tokens of template per message."""
    chars = sum(len(m.get("content") or "") if isinstance(m.get("content"), str) else 0 for m in messages)
    if tools:
        chars += len(json.dumps(tools, separators=(",", ":")))
    return chars // 4 + 4 * len(messages)


GROWTH_MIN_TOKENS = 12  # a prompt that grew by this many tokens (estimated: 48 characters) clearly grew


def stopped_growing(grew_tokens: float, before: int, after: int, *, share: float) -> bool:
    """Silent truncation told from usage alone, the one rule of the doctor and the run: a prompt
    that grew by a clear margin (``grew_tokens``, estimated at ~4 characters a token) while the
    server's ``prompt_tokens`` grew by no more than ``share`` of that was cut to the server's window
    (``before`` / ``after``: the counts of the shorter and the longer prompt).

    The doctor sends two prompts of known sizes, one far longer than the other (``share`` 0.5: any
    tokenizer counts at least half the estimated growth of plain prose). The run compares a
    conversation's consecutive requests, whose growth can be text a tokenizer packs densely (a
    progress bar of repeated characters), so it asks that the count did not grow at all
    (``share`` 0: ``trial/truncation.py``)."""
    return grew_tokens >= GROWTH_MIN_TOKENS and after - before <= share * grew_tokens


class ServerInfo(BaseModel):
    kind: str | None = None  # one of the names above, None = not recognised
    evidence: str = ""  # how it was recognised
    version: str | None = None
    window: int | None = None  # context window in tokens, when the server tells it
    window_source: str = ""  # where the window was read

    @property
    def label(self) -> str:
        return self.kind or "the server"

    @property
    def cuts_silently(self) -> bool:
        """A server whose window is known and that does not refuse a longer prompt: what it answers
        past its window was cut to fit (Ollama)."""
        return self.window is not None and self.kind not in REFUSES_OVERFLOW


def root_of(base: str) -> str:
    """The server's root: the base URL without its trailing ``/v1`` (or ``/api/v1``…)."""
    parts = urlsplit(base)
    path = re.sub(r"/(?:api/)?v\d+(?:beta)?/?$", "", parts.path.rstrip("/"))
    return f"{parts.scheme}://{parts.netloc}{path}"


def from_models(body: object, model: str | None, headers: dict[str, str] | None = None) -> ServerInfo:
    """What the model list and the headers alone tell."""
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    entries = body.get("data") if isinstance(body, dict) else None
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    entry = next((e for e in entries if e.get("id") == model), entries[0] if entries else {})
    owner = str(entry.get("owned_by") or "")
    if owner == "vllm" or "max_model_len" in entry:
        window = entry.get("max_model_len")
        return ServerInfo(kind=VLLM, evidence=f"GET /models: owned_by {owner!r}, max_model_len",
                          window=window if isinstance(window, int) else None,
                          window_source="max_model_len in GET /models")
    if owner == "llamacpp" or "llama.cpp" in headers.get("server", ""):
        return ServerInfo(kind=LLAMA_CPP, evidence="GET /models: owned_by 'llamacpp'" if owner == "llamacpp"
                          else "the Server: llama.cpp header")
    if owner == "me" and "permissions" in entry:
        return ServerInfo(kind=LLAMA_CPP_PYTHON, evidence="GET /models: owned_by 'me' with 'permissions'")
    if owner == "sglang":
        return ServerInfo(kind=SGLANG, evidence="GET /models: owned_by 'sglang'")
    return ServerInfo(evidence=f"owned_by {owner!r}" if owner else "")


# A fetch: ``(method, url, json body or None) -> (status, headers, body bytes)``, or None when the
# server could not be reached. ``identify`` asks through one: its own httpx client by default (the
# doctor's), the channel's connection pool in a run (``sdk_fetch``: no second client to set up).
Fetch = Callable[[str, str, Any], Awaitable["tuple[int, dict[str, str], bytes] | None"]]


def _httpx_fetch(client: Any) -> Fetch:
    import httpx

    async def fetch(method: str, url: str, body: Any = None) -> tuple[int, dict[str, str], bytes] | None:
        try:
            r = await client.request(method, url, json=body)
        except (httpx.HTTPError, OSError):
            return None
        return r.status_code, dict(r.headers), r.content
    return fetch


def sdk_fetch(client: Any, timeout_s: float) -> Fetch:
    """A fetch through the channel's own SDK client (its pool, its key): an error status is an
    answer here, not an exception."""
    import openai

    from .wires.chat import _RAW

    async def fetch(method: str, url: str, body: Any = None) -> tuple[int, dict[str, str], bytes] | None:
        options: dict[str, Any] = {"timeout": timeout_s}
        try:
            if method == "GET":
                raw = await client.get(url, cast_to=_RAW, options=options)
            else:
                raw = await client.post(url, cast_to=_RAW, body=body, options=options)
        except openai.APIStatusError as exc:
            return exc.status_code, dict(exc.response.headers), exc.response.content
        except (openai.APIConnectionError, OSError):  # APITimeoutError included
            return None
        return raw.status_code, dict(raw.headers), raw.content
    return fetch


async def _get_json(fetch: Fetch, method: str, url: str, body: Any = None) -> object | None:
    got = await fetch(method, url, body)
    if got is None or got[0] != 200:
        return None
    try:
        return json.loads(got[2])
    except ValueError:
        return None


def _num_ctx(parameters: object) -> int | None:
    m = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.M) if isinstance(parameters, str) else None
    return int(m.group(1)) if m else None


async def identify(base: str, key: str, model: str | None, timeout_s: float, fetch: Fetch | None = None) -> ServerInfo:
    """The server behind ``base``: from the model list and its headers first, then the side routes
    it might have. Never raises: a server that tells nothing is simply not recognised. ``fetch``:
    how to ask (default: a client of its own with ``key``)."""
    if fetch is not None:
        return await _identify(base, model, fetch)
    import httpx

    auth = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(timeout=timeout_s, headers=auth, trust_env=True) as client:
        return await _identify(base, model, _httpx_fetch(client))


async def _identify(base: str, model: str | None, fetch: Fetch) -> ServerInfo:
    got = await fetch("GET", base.rstrip("/") + "/models", None)
    try:
        body, headers = (json.loads(got[2]) if got[0] == 200 else None), got[1]
    except (TypeError, ValueError):  # no answer (None), or a body that is not JSON
        body, headers = None, {}
    info = from_models(body, model, headers)
    if info.kind in (VLLM, LLAMA_CPP_PYTHON, SGLANG):
        return info
    root = root_of(base)
    props = await _get_json(fetch, "GET", root + "/props")
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    if isinstance(settings, dict) or info.kind == LLAMA_CPP:
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if not isinstance(n_ctx, int) and isinstance(props, dict):
            n_ctx = props.get("n_ctx")
        evidence = info.evidence or "GET /props"
        return ServerInfo(kind=LLAMA_CPP, evidence=evidence,
                          version=props.get("build_info") if isinstance(props, dict) else None,
                          window=n_ctx if isinstance(n_ctx, int) else None,
                          window_source="n_ctx in GET /props" if isinstance(n_ctx, int) else "")
    version = await _get_json(fetch, "GET", root + "/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        out = ServerInfo(kind=OLLAMA, evidence="GET /api/version", version=version["version"])
        ps = await _get_json(fetch, "GET", root + "/api/ps")
        for m in (ps.get("models") or []) if isinstance(ps, dict) else []:
            if isinstance(m, dict) and model in (m.get("name"), m.get("model")) \
                    and isinstance(m.get("context_length"), int):
                out.window, out.window_source = m["context_length"], "context_length in GET /api/ps"
                return out
        show = await _get_json(fetch, "POST", root + "/api/show", {"model": model})
        n_ctx = _num_ctx(show.get("parameters")) if isinstance(show, dict) else None
        if n_ctx:
            out.window, out.window_source = n_ctx, "num_ctx in POST /api/show"
        return out
    return info


# ----------------------------------------------------------------------------------- fixes
def fix_auto_tool_choice(info: ServerInfo) -> str:
    if info.kind in (None, VLLM):
        return ("restart vLLM with --enable-auto-tool-choice --tool-call-parser <parser> (the parser of the model's "
                "family: hermes, llama3_json, mistral, …); or the agent's text mode (tool_mode = \"text\")")
    return 'enable automatic tool choice on the server, or use the agent\'s text mode (tool_mode = "text")'


def fix_no_tool_calls(info: ServerInfo, tool_choice: str) -> str:
    generic = 'use the agent\'s text mode (tool_mode = "text") or a model that calls tools'
    if info.kind == LLAMA_CPP_PYTHON:
        if tool_choice == "omit":
            return ('set tool_choice = "auto" for the role: with chat_format chatml-function-calling, llama-cpp-python '
                    "shows the model its tools only when the request carries a tool_choice; or " + generic)
        return ("start llama-cpp-python with a chat_format that supports tools (--chat_format chatml-function-calling, "
                "or the model's own function-calling format); or " + generic)
    if info.kind == LLAMA_CPP:
        return "restart llama-server with --jinja (tool calls need the model's Jinja chat template); or " + generic
    if info.kind == OLLAMA:
        return "use a model with the 'tools' capability (ollama show <model>); or " + generic
    if info.kind == VLLM:
        return "check vLLM's --tool-call-parser matches the model's family; or " + generic
    return generic


def fix_jinja() -> str:
    return ("restart llama-server with --jinja (tool calls need the model's Jinja chat template), or use the "
            "agent's text mode (tool_mode = \"text\")")


def fix_window(info: ServerInfo, needed: int | None = None) -> str:
    size = f" (at least {needed})" if needed else ""
    if info.kind == OLLAMA:
        return (f"give Ollama a larger window{size}: OLLAMA_CONTEXT_LENGTH=<tokens> ollama serve, or "
                "PARAMETER num_ctx <tokens> in a Modelfile (ollama create); the OpenAI-compatible endpoint "
                "cannot set num_ctx per request")
    if info.kind == LLAMA_CPP:
        return f"restart llama-server with a larger context: -c <tokens> (--ctx-size){size}"
    if info.kind == LLAMA_CPP_PYTHON:
        return f"restart llama-cpp-python with a larger --n_ctx{size}"
    if info.kind == VLLM:
        return f"restart vLLM with a larger --max-model-len{size} (the model's own limit permitting)"
    if info.kind == SGLANG:
        return f"restart SGLang with a larger --context-length{size}"
    return f"serve the model with a larger context window{size}, or use a model that has one"
