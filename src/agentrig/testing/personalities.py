"""Server personalities for the fake endpoint: what real model servers do that wrecks a benchmark.

    FakeEndpoint(personality="vllm-no-auto-tool-choice")          # or make_personality(name, window=N)
    python -m agentrig.testing.fake_endpoint --personality ollama-small-window --window 2048

Each personality reproduces one server's status codes, error bodies, model list, side routes and
headers as the server's source and its users' reports show them (studied, not copied):

- ``vllm-no-auto-tool-choice``: vLLM started without ``--enable-auto-tool-choice
  --tool-call-parser``. A named ``tool_choice`` or ``"required"`` works (guided decoding); ``"auto"``,
  or tools with no ``tool_choice`` (vLLM defaults it to ``"auto"``), is a 400 ``BadRequestError``.
  ``/v1/models`` is vLLM's (``owned_by "vllm"``, ``root``, ``max_model_len``); over the window → vLLM's 400.
  ``vllm`` is the same server started with both flags (``"auto"`` works).
- ``llama-cpp-python-chatml``: ``python -m llama_cpp.server`` with ``chat_format =
  chatml-function-calling``. Tools with no ``tool_choice`` (or ``"none"``) are not rendered into the
  prompt, so the model answers in text; ``"auto"`` lets it call; a named choice forces the call;
  ``"required"`` trips the handler's assertion: 500 with an empty message. ``/v1/models`` says
  ``owned_by "me"``. A prompt of ``n_ctx`` tokens or more raises "Requested tokens (N) exceed
  context window of M" inside, which the server's error handler turns into a 400
  ``context_length_exceeded`` ("This model's maximum context length is M tokens. However, you
  requested …").
- ``ollama-small-window``: Ollama's OpenAI-compatible endpoint with a small ``num_ctx`` (2048 by
  default): a longer prompt is cut to the window (the start of the conversation is lost) and
  answered 200 with ``usage.prompt_tokens`` equal to the window. ``/api/version``, ``/api/show``
  (``parameters`` text with ``num_ctx``; ``model_info`` with the *trained* ``<arch>.context_length``),
  ``/api/ps`` (``context_length`` = the window actually allocated), ``/api/tags``, ``GET /``.
  ``ollama-behind-gateway``: the same server behind a gateway (one base URL in front of the
  servers): cut and answered 200 alike, but none of Ollama's routes answer and the model list says
  ``owned_by "openai"``, so only the usage can tell the cut.
- ``llama-cpp-overflow``: llama.cpp's ``llama-server`` (``Server: llama.cpp`` header, ``/props`` with
  ``default_generation_settings.n_ctx``, ``/health``, ``owned_by "llamacpp"``): a prompt of ``n_ctx``
  tokens or more is a 400 ``exceed_context_size_error`` carrying ``n_prompt_tokens`` and ``n_ctx``.
  ``llama-cpp-overflow-old``: older builds, 500 ``server_error`` "Context size has been exceeded.".
  ``llama-cpp-no-jinja``: started without ``--jinja``: any request with tools is a 500
  "tools param requires --jinja flag".
- ``forced-tools-only``: a plain OpenAI-style server whose model calls a tool only when
  ``tool_choice`` is ``"required"`` or names one; with ``"auto"`` it answers in text (as the fake
  does without a personality).
- ``openai-style``: a plain OpenAI-style server whose model honours ``"auto"`` (a healthy endpoint).

Where a personality's model answers on its own (no script, no responder): it calls a tool when it
may (per the server's rules above) and the last message is the user's (the tool named in that
message, else the first tool); otherwise it answers ``OK``. Scripted replies and a responder still
come first, but the server's own rules apply to them (e.g. tool calls are dropped where the server
never showed the model its tools). Token counts: about 4 characters a token (OpenAI's rule of
thumb) over everything the server renders: messages, tool calls and, where rendered, the tools.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable

from ._fake_bodies import example_arguments

__all__ = ["PERSONALITIES", "Personality", "estimate_prompt_tokens", "make_personality", "side_route"]


# ------------------------------------------------------------ the generic OpenAI-style server
JSON = dict[str, Any]
_CREATED = 1_700_000_000


def estimate_prompt_tokens(body: JSON, with_tools: bool = True) -> int:
    """About 4 characters a token over the rendered prompt, plus a few tokens of framing per message."""
    chars, n = 0, 0
    for m in body.get("messages") or ():
        if not isinstance(m, dict):
            continue
        n += 1
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
        for tc in m.get("tool_calls") or ():
            fn = (tc or {}).get("function") or {}
            chars += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    if with_tools and body.get("tools"):
        chars += len(json.dumps(body["tools"], separators=(",", ":")))
    return chars // 4 + 4 * n


def _error(message: str, type_: str, code: Any, param: str | None = None, **extra: Any) -> JSON:
    return {"error": {"message": message, "type": type_, "param": param, "code": code, **extra}}


class Personality:
    """The generic OpenAI-style server; subclasses override what their server does differently.

    ``window``: the context window in tokens (None = unlimited)."""

    name = "openai-style"
    owned_by = "agentrig-fake"
    headers: dict[str, str] = {}

    def __init__(self, window: int | None = None):
        self.window = window if window is not None else self.default_window()

    def default_window(self) -> int | None:
        return None

    # --- what the server exposes
    def models_body(self, models: tuple[str, ...]) -> JSON:
        return {"object": "list", "data": [{"id": m, "object": "model", "created": _CREATED,
                                            "owned_by": self.owned_by} for m in models]}

    def routes(self) -> list[tuple[str, str, Callable[[Any, JSON | None], tuple[int, Any]]]]:
        """Extra root-relative routes: (method, path, handler(endpoint, json body) → (status, body))."""
        return []

    def response_headers(self, path: str) -> dict[str, str]:
        return dict(self.headers)

    # --- how it answers a chat request
    def tools_visible(self, body: JSON) -> bool:
        """Whether the model sees the tools at all."""
        return bool(body.get("tools")) and body.get("tool_choice") != "none"

    def may_call(self, body: JSON) -> bool:
        """Whether the model calls a tool on its own when it may (``"auto"`` honoured)."""
        return self.tools_visible(body)

    def prompt_tokens(self, body: JSON) -> int:
        return estimate_prompt_tokens(body, self.tools_visible(body))

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        """(status, error body) when the server refuses the request before the model runs."""
        return None

    def reply(self, body: JSON) -> JSON:
        """The model's own answer (no script, no responder)."""
        tools = body.get("tools") or []
        choice = body.get("tool_choice")
        if self.tools_visible(body):
            forced = _named(choice)
            if forced is not None:
                fn = next((t.get("function") for t in tools if (t.get("function") or {}).get("name") == forced), None)
                if fn is not None:
                    return _call(fn)
            elif choice == "required" or (self.may_call(body) and _last_role(body) == "user"):
                return _call(_pick_tool(tools, body))
        return {"content": "OK"}

    def shape(self, body: JSON, reply: JSON) -> JSON:
        """The server's rules applied to any reply (scripted, responder or own): drop tool calls the
        model could not have made; report the prompt tokens the server counted."""
        reply = dict(reply)
        if reply.get("tool_calls") and not self.tools_visible(body):
            reply.pop("tool_calls")
            if not reply.get("content"):
                reply["content"] = "OK"
        usage = dict(reply.get("usage") or {})
        usage.setdefault("prompt_tokens", self.prompt_tokens(body))
        reply["usage"] = usage
        return reply


def _named(choice: Any) -> str | None:
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    return None


def _last_role(body: JSON) -> str | None:
    msgs = [m for m in body.get("messages") or () if isinstance(m, dict)]
    return msgs[-1].get("role") if msgs else None


def _pick_tool(tools: list, body: JSON) -> JSON:
    last = next((m for m in reversed(body.get("messages") or []) if isinstance(m, dict) and m.get("role") == "user"), {})
    text = last.get("content") if isinstance(last.get("content"), str) else ""
    fns = [t.get("function") or {} for t in tools if isinstance(t, dict)]
    return next((fn for fn in fns if fn.get("name") and fn["name"] in text), fns[0] if fns else {})


def _call(fn: JSON, call_id: str | None = None) -> JSON:
    call = {"name": fn.get("name"), "arguments": example_arguments(fn.get("parameters"))}
    if call_id:
        call["id"] = call_id
    return {"content": None, "tool_calls": [call]}


def side_route(ep: Any, handler: Callable[[Any, JSON | None], tuple[int, Any]]) -> Callable:
    """An aiohttp handler for a personality's side route (``/props``, ``/api/version``…) on ``ep``."""
    from aiohttp import web

    async def route(request: web.Request) -> web.StreamResponse:
        t0 = ep._enter()
        body, status = None, 400
        try:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return web.json_response({"error": "invalid JSON body"}, status=400)
            status, out = handler(ep, body)
            if isinstance(out, str):
                return web.Response(status=status, text=out, content_type="text/plain")
            return web.json_response(out, status=status)
        finally:
            ep.in_flight -= 1
            if ep.recording:
                ep._record(request, body, True, t0, status)
    return route


AUTO_TOOL_CHOICE_MESSAGE = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


# ------------------------------------------------------------------------------------- vLLM
class Vllm(Personality):
    name = "vllm"
    owned_by = "vllm"
    headers = {"Server": "uvicorn"}
    auto_tool_choice = True

    def default_window(self) -> int | None:
        return 8192

    def models_body(self, models: tuple[str, ...]) -> JSON:
        perm = {"id": "modelperm-fake0", "object": "model_permission", "created": _CREATED,
                "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
                "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False,
                "organization": "*", "group": None, "is_blocking": False}
        return {"object": "list", "data": [{"id": m, "object": "model", "created": _CREATED, "owned_by": "vllm",
                                            "root": m, "parent": None, "max_model_len": self.window,
                                            "permission": [perm]} for m in models]}

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        choice = body.get("tool_choice", "auto" if body.get("tools") else None)
        if body.get("tools") and choice == "auto" and not self.auto_tool_choice:
            return 400, _error(AUTO_TOOL_CHOICE_MESSAGE, "BadRequestError", 400)
        n = self.prompt_tokens(body)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if self.window and n >= self.window:
            return 400, _error(f"This model's maximum context length is {self.window} tokens. However, your request "
                               f"has {n} input tokens. Please reduce the length of the input messages.",
                               "BadRequestError", 400)
        if self.window and limit and n + limit > self.window:
            return 400, _error(f"'max_tokens' or 'max_completion_tokens' is too large: {limit}. This model's maximum "
                               f"context length is {self.window} tokens and your request has {n} input tokens "
                               f"({limit} > {self.window} - {n}).", "BadRequestError", 400)
        return None


class VllmNoAutoToolChoice(Vllm):
    name = "vllm-no-auto-tool-choice"
    auto_tool_choice = False


# --------------------------------------------------------------------------- llama-cpp-python
class LlamaCppPythonChatml(Personality):
    name = "llama-cpp-python-chatml"
    headers = {"Server": "uvicorn"}

    def default_window(self) -> int | None:
        return 8192

    def models_body(self, models: tuple[str, ...]) -> JSON:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "me", "permissions": []}
                                           for m in models]}

    def response_headers(self, path: str) -> dict[str, str]:  # its error-handling route times each answer
        extra = {"openai-processing-ms": "1"} if path.endswith("/chat/completions") else {}
        return {**self.headers, **extra}

    def tools_visible(self, body: JSON) -> bool:  # chatml-function-calling renders tools only with a tool_choice
        choice = body.get("tool_choice")
        return bool(body.get("tools")) and choice not in (None, "none")

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        n = self.prompt_tokens(body)
        if self.window and n >= self.window:
            limit = body.get("max_tokens")
            return 400, _error(
                f"This model's maximum context length is {self.window} tokens. However, you requested "
                f"{(limit or 0) + n} tokens ({n} in the messages, {limit} in the completion). "
                "Please reduce the length of the messages or completion.",
                "invalid_request_error", "context_length_exceeded", "messages")
        if self.tools_visible(body) and body.get("tool_choice") == "required":
            return 500, _error("", "internal_server_error", None)  # the handler's `assert tool_choice == "auto"`
        nulls = [i for i, m in enumerate(body.get("messages") or ())
                 if isinstance(m, dict) and m.get("role") == "assistant" and "content" in m and m["content"] is None]
        if nulls:  # its request model wants a string: pydantic's validation error, answered as a 500
            return 500, _error(f"{len(nulls)} validation error for CreateChatCompletionRequest\n"
                               f"messages.{nulls[0]}.ChatCompletionRequestAssistantMessage.content\n"
                               "  Input should be a valid string [type=string_type, input_value=None]",
                               "internal_server_error", None)
        return None

    def reply(self, body: JSON) -> JSON:
        out = super().reply(body)
        for tc in out.get("tool_calls") or ():
            tc["id"] = f"call__0_{tc['name']}_cmpl-{uuid.uuid4()}"
        return out


# ------------------------------------------------------------------------------------ Ollama
class OllamaSmallWindow(Personality):
    name = "ollama-small-window"
    owned_by = "library"
    version = "0.6.2"
    trained_context = 131072

    def default_window(self) -> int | None:
        return 2048

    def tools_visible(self, body: JSON) -> bool:  # Ollama ignores tool_choice; the model decides
        return bool(body.get("tools"))

    def prompt_tokens(self, body: JSON) -> int:
        n = estimate_prompt_tokens(body, self.tools_visible(body))
        return min(n, self.window) if self.window else n  # cut to the window, answered 200

    def routes(self):
        return [("GET", "/", lambda ep, _: (200, "Ollama is running")),
                ("GET", "/api/version", lambda ep, _: (200, {"version": self.version})),
                ("POST", "/api/show", self._show),
                ("GET", "/api/ps", self._ps),
                ("GET", "/api/tags", self._tags)]

    def _details(self) -> JSON:
        return {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}

    def _show(self, ep, body: JSON | None) -> tuple[int, Any]:
        name = (body or {}).get("model") or (body or {}).get("name")
        if name not in ep.models:
            return 404, {"error": f"model '{name}' not found"}
        return 200, {"license": "", "modelfile": f"# Modelfile generated by \"ollama show\"\nFROM {name}\n",
                     "parameters": f"num_ctx                        {self.window}\n"
                                   "stop                           \"<|eot_id|>\"",
                     "template": "{{ .Prompt }}", "details": self._details(),
                     "model_info": {"general.architecture": "llama", "general.parameter_count": 3212749888,
                                    "llama.context_length": self.trained_context, "llama.embedding_length": 3072},
                     "capabilities": ["completion", "tools"], "modified_at": "2025-01-01T00:00:00Z"}

    def _ps(self, ep, _) -> tuple[int, Any]:
        return 200, {"models": [{"name": m, "model": m, "size": 3_000_000_000, "digest": "0" * 64,
                                 "details": self._details(), "expires_at": "2030-01-01T00:00:00Z",
                                 "size_vram": 0, "context_length": self.window} for m in ep.models[:1]]}

    def _tags(self, ep, _) -> tuple[int, Any]:
        return 200, {"models": [{"name": m, "model": m, "modified_at": "2025-01-01T00:00:00Z", "size": 3_000_000_000,
                                 "digest": "0" * 64, "details": self._details()} for m in ep.models]}


class OllamaBehindGateway(OllamaSmallWindow):
    """The same Ollama behind a gateway (one base URL in front of the servers, e.g. LiteLLM's proxy):
    prompts are still cut to the window and answered 200, but the gateway answers none of Ollama's
    own routes and lists the model as its own, so nothing tells the server or its window."""

    name = "ollama-behind-gateway"
    owned_by = "openai"

    def routes(self):
        return []


# ------------------------------------------------------------------------------ llama.cpp server
class LlamaCppOverflow(Personality):
    name = "llama-cpp-overflow"
    owned_by = "llamacpp"
    headers = {"Server": "llama.cpp"}

    def default_window(self) -> int | None:
        return 4096

    def models_body(self, models: tuple[str, ...]) -> JSON:
        meta = {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576, "n_params": 134515008,
                "size": 138082560}
        return {"object": "list", "data": [{"id": m, "object": "model", "created": _CREATED, "owned_by": "llamacpp",
                                            "meta": meta} for m in models]}

    def routes(self):
        return [("GET", "/props", self._props), ("GET", "/health", lambda ep, _: (200, {"status": "ok"}))]

    def _props(self, ep, _) -> tuple[int, Any]:
        return 200, {"default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": self.window,
                                                     "speculative": False, "is_processing": False,
                                                     "params": {"n_predict": -1, "temperature": 0.8}},
                     "total_slots": 1, "model_path": f"/models/{ep.models[0]}.gguf",
                     "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",
                     "modalities": {"vision": False}, "build_info": "b5000-0000000"}

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        n = self.prompt_tokens(body)
        if self.window and n >= self.window:
            return self.overflow(n)
        return None

    def overflow(self, n: int) -> tuple[int, JSON]:
        return 400, {"error": {"code": 400, "message": f"request ({n} tokens) exceeds the available context size "
                                                      f"({self.window} tokens), try increasing it",
                               "type": "exceed_context_size_error", "n_prompt_tokens": n, "n_ctx": self.window}}


class LlamaCppOverflowOld(LlamaCppOverflow):
    name = "llama-cpp-overflow-old"

    def overflow(self, n: int) -> tuple[int, JSON]:
        return 500, {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}


class LlamaCppNoJinja(LlamaCppOverflow):
    name = "llama-cpp-no-jinja"

    def refuse(self, body: JSON, model: str) -> tuple[int, JSON] | None:
        if body.get("tools"):
            return 500, {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}
        return super().refuse(body, model)


# ----------------------------------------------------------------------------- forced tools only
class ForcedToolsOnly(Personality):
    name = "forced-tools-only"

    def may_call(self, body: JSON) -> bool:
        return False


PERSONALITIES: dict[str, type[Personality]] = {p.name: p for p in (
    Personality, VllmNoAutoToolChoice, Vllm, LlamaCppPythonChatml, OllamaSmallWindow, OllamaBehindGateway,
    LlamaCppOverflow, LlamaCppOverflowOld, LlamaCppNoJinja, ForcedToolsOnly)}


def make_personality(value: "str | Personality | None", window: int | None = None) -> Personality | None:
    """A personality from its name (``window`` overrides its default window), or the object itself."""
    if value is None or isinstance(value, Personality):
        return value
    cls = PERSONALITIES.get(value)
    if cls is None:
        raise ValueError(f"unknown personality {value!r}; expected one of {sorted(PERSONALITIES)}")
    return cls(window)
