"""The doctor's checks of what the agent really sends, and of the context window.

  server  which server answers (``servers.py``), with its window when it tells it
  tools   the agent's own request shape: its ``tool_choice`` (the role's setting), a tool list as
          large as the experiment's, a prompt that needs a tool. AUTO_TOOL_CHOICE_OFF (fail: vLLM
          without automatic tool choice refuses it), NO_TOOL_SUPPORT (the server refuses tools),
          NO_TOOL_CALLS (warning: a text answer on every try)
  prompt  two prompts of known, different lengths: ``usage.prompt_tokens`` must grow with them.
          PROMPT_TRUNCATED (fail: the count stops short, at a round number: the server cut the
          prompt and answered 200, e.g. Ollama's default window)
  window  the server's window against the experiment's largest first request (system prompt,
          tools, first message, estimated) plus max_tokens. CONTEXT_TOO_SMALL (warning; a failure on
          a server that cuts rather than refuses, Ollama, when the first request alone is over it:
          the run would make every such trial invalid)
Sizes are estimated without a tokenizer: about 4 characters a token.
"""

from __future__ import annotations

import re
from typing import Any

import openai
from pydantic import BaseModel

from agentrig.config import ResolvedRole
from agentrig.channel.client import build_params, send_once
from agentrig.channel.doctor.preflight import Check, _ms, _ok
from agentrig.channel.servers import (
    LLAMA_CPP_PYTHON,
    ServerInfo,
    estimate_tokens,
    fix_auto_tool_choice,
    fix_jinja,
    fix_no_tool_calls,
    fix_window,
    stopped_growing,
)

AUTO_TOOL_CHOICE_OFF, NO_TOOL_CALLS, NO_TOOL_SUPPORT = "AUTO_TOOL_CHOICE_OFF", "NO_TOOL_CALLS", "NO_TOOL_SUPPORT"
PROMPT_TRUNCATED, CONTEXT_TOO_SMALL = "PROMPT_TRUNCATED", "CONTEXT_TOO_SMALL"
TRIES = 3
_AUTO_REFUSED = re.compile(r"enable-auto-tool-choice|tool-call-parser|auto.{0,10}tool.?choice", re.I)


class RequestShape(BaseModel):
    """What the experiment's agent sends first, for the doctor to send alike."""

    where: str  # e.g. "arm base, domain airline"
    tools: list[dict] = []  # the largest tool list a native-mode arm sends ([] if none)
    tools_where: str = ""  # whose tools those are
    first_request_tokens: int  # system prompt + tools + first message, estimated
    max_tokens: int | None = None
    # an agent we did not write (e.g. "Codex CLI 0.169.0"): its real first request as its proxy
    # forwards it (``agent_request.py`` sends it as it is), or why it could not be had
    agent: str = ""
    messages: list[dict] = []
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    problem: str | None = None
    problem_code: str | None = None
    fix: str | None = None


def largest(shapes: list[RequestShape]) -> RequestShape | None:
    """One shape for the doctor from several first requests: the largest request (with its
    max_tokens), sent with the largest tool list among them (and whose tools those are)."""
    best: RequestShape | None = None
    tools, tools_where = [], ""
    for shape in shapes:
        if len(shape.tools) > len(tools):
            tools, tools_where = list(shape.tools), shape.tools_where
        if best is None or shape.first_request_tokens + (shape.max_tokens or 0) > \
                best.first_request_tokens + (best.max_tokens or 0):
            best = shape
    return None if best is None else best.model_copy(update={"tools": tools, "tools_where": tools_where})


def _tool(name: str, description: str, **props: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in props.items()},
                       "required": list(props)}}}


# a customer-service agent's tools, as many as a τ² domain has: used when no experiment is given
REPRESENTATIVE_TOOLS = [
    _tool("get_order_details", "Get the status and items of an order.", order_id="The order id, such as '#W1234567'."),
    _tool("get_user_details", "Get a user's profile and orders.", user_id="The user id."),
    _tool("find_user_id_by_email", "Find a user id by email.", email="The email address."),
    _tool("find_user_id_by_name_zip", "Find a user id by name and zip code.", first_name="First name.",
          last_name="Last name.", zip="Zip code."),
    _tool("get_product_details", "Get a product and its variants.", product_id="The product id."),
    _tool("list_all_product_types", "List the product types and their ids."),
    _tool("cancel_pending_order", "Cancel a pending order.", order_id="The order id.",
          reason="'no longer needed' or 'ordered by mistake'."),
    _tool("modify_pending_order_address", "Change the shipping address of a pending order.", order_id="The order id.",
          address="The new address."),
    _tool("return_delivered_order_items", "Return items of a delivered order.", order_id="The order id.",
          item_ids="Comma-separated item ids.", payment_method_id="Where the refund goes."),
    _tool("exchange_delivered_order_items", "Exchange items of a delivered order.", order_id="The order id.",
          item_ids="Comma-separated item ids.", new_item_ids="Comma-separated new item ids."),
    _tool("modify_user_address", "Change a user's default address.", user_id="The user id.", address="The address."),
    _tool("calculate", "Evaluate an arithmetic expression.", expression="The expression, such as '2 * 3'."),
    _tool("transfer_to_human_agents", "Hand the conversation to a human agent.", summary="A summary of the issue."),
    _tool("think", "Think step by step; no effect on the world.", thought="The thought."),
]


def _choice_label(rr: ResolvedRole) -> str:
    return "no tool_choice" if rr.tool_choice == "omit" else f'tool_choice="{rr.tool_choice}"'


async def check_agent_tools(client: openai.AsyncOpenAI, rr: ResolvedRole, headers: dict[str, str],
                            shape: RequestShape | None, info: ServerInfo) -> Check:
    tools = shape.tools if shape and shape.tools else REPRESENTATIVE_TOOLS
    what = f"the agent's request ({_choice_label(rr)}, {len(tools)} tools" + (
        f" of {shape.tools_where})" if shape and shape.tools else ", a representative list)")
    target = tools[0]["function"]["name"]
    messages = [{"role": "user", "content": f"Please call the {target} tool now. Do not reply in text: make the "
                                            "tool call, making up plausible arguments where you need them."}]
    params = build_params(rr, messages, tools)
    latency = 0.0
    for _ in range(TRIES):
        out = await send_once(client, rr, params, headers, rr.timeout_s)
        latency += out.latency_s
        if out.completion is None:
            return _tool_fault(out, rr, what, info)
        calls = out.completion.message.tool_calls
        if calls:
            return _ok("tools", f"the model called {calls[0].name} with {what}", _ms(latency))
    return Check(name="tools", status="warn", code=NO_TOOL_CALLS, latency_ms=_ms(latency),
                 message=f"the model answered in text on all {TRIES} tries with {what}, although the prompt needs a "
                         f"tool: the agent would make no tool calls",
                 fix=fix_no_tool_calls(info, rr.tool_choice))


def _tool_fault(out, rr: ResolvedRole, what: str, info: ServerInfo) -> Check:
    f = out.fault
    detail = f.detail or (f.fatal.diagnosis.message if f.fatal else "")
    said = f"{f.status}: {detail}" if f.status else detail
    ms = _ms(out.latency_s)
    if f.status == 400 and _AUTO_REFUSED.search(detail):
        return Check(name="tools", status="fail", code=AUTO_TOOL_CHOICE_OFF, latency_ms=ms,
                     message=f"{info.label} refused {what} ({said}): every agent step would fail",
                     fix=fix_auto_tool_choice(info))
    if "--jinja" in detail:
        return Check(name="tools", status="fail", code=NO_TOOL_SUPPORT, latency_ms=ms,
                     message=f"{info.label} refused a request with tools ({said})", fix=fix_jinja())
    if f.fatal is not None and f.fatal.diagnosis.code == "BAD_REQUEST":
        return Check(name="tools", status="warn", code=NO_TOOL_SUPPORT, latency_ms=ms,
                     message=f"the endpoint rejected {what} ({said})",
                     fix='use a model that supports function calling, or the agent\'s text mode (tool_mode = "text")')
    code = f.fatal.diagnosis.code if f.fatal is not None else ("SERVER_ERROR" if (f.status or 0) >= 500 else "CHANNEL_FAILED")
    fix = "check the server's log for this request; run the doctor again"
    if info.kind == LLAMA_CPP_PYTHON and rr.tool_choice == "required":
        fix = ('set tool_choice = "auto" for the role: llama-cpp-python\'s chatml-function-calling handles only '
               '"auto" and a named tool')
    return Check(name="tools", status="fail", code=code, latency_ms=ms,
                 message=f"{what} failed ({said or 'no detail'})", fix=fix)


# ------------------------------------------------------------------------------------ context
_FILLER = ("The quick brown fox jumps over the lazy dog while the patient clerk counts every parcel on the shelf. ")


def _round(n: int) -> bool:
    return n >= 256 and (n & (n - 1) == 0 or n % 1024 == 0 or n % 1000 == 0)


async def check_prompt_growth(client: openai.AsyncOpenAI, rr: ResolvedRole, headers: dict[str, str],
                              shape: RequestShape | None, info: ServerInfo) -> Check:
    """PROMPT_TRUNCATED when ``prompt_tokens`` does not grow with the prompt."""
    # longer than the experiment's first request, and than the window when the server tells it:
    # past its window a server must refuse the prompt, not cut it
    big = max(4000, int(1.25 * shape.first_request_tokens) if shape else 8000,
              info.window + 500 if info.window and info.window < 32000 else 0)
    big = min(big, 32500)
    sizes = (200, big)  # tokens, estimated
    counts: list[int] = []
    latency = 0.0
    for n in sizes:
        text = (_FILLER * (n * 4 // len(_FILLER) + 1))[: n * 4]
        messages = [{"role": "user", "content": f"{text}\n\nReply with the single word OK."}]
        params = build_params(rr, messages, None)
        out = await send_once(client, rr, params, headers, max(rr.timeout_s, 120.0))
        latency += out.latency_s
        if out.completion is None:
            f = out.fault
            if f.fatal is not None and f.fatal.diagnosis.code == "CONTEXT_OVERFLOW":
                return _ok("prompt", f"{info.label} refused a ~{n}-token prompt as too long (it reports an overflow "
                                     f"instead of cutting the prompt)", _ms(latency))
            return Check(name="prompt", status="warn", code=None, latency_ms=_ms(latency),
                         message=f"a ~{n}-token prompt failed ({f.status or ''} {f.detail}); prompt truncation not checked",
                         fix="run the doctor again")
        u = out.completion.usage
        if not u.reported or not u.prompt_tokens:
            return _ok("prompt", "the endpoint reports no usage: prompt truncation cannot be checked", _ms(latency))
        counts.append(u.prompt_tokens)
    small, large = counts
    if stopped_growing(sizes[1] - sizes[0], small, large, share=0.5):
        at = ", a round number" if _round(large) else ""
        window = f"; its window is {info.window} tokens ({info.window_source})" if info.window else ""
        return Check(name="prompt", status="fail", code=PROMPT_TRUNCATED, latency_ms=_ms(latency),
                     message=f"prompts of ~{sizes[0]} and ~{sizes[1]} tokens were counted as {small} and {large}"
                             f"{at}: {info.label} cut the longer prompt and answered 200 (the start of a τ² "
                             f"conversation, its policy, would vanish without an error){window}",
                     fix=fix_window(info, shape.first_request_tokens + (shape.max_tokens or 0) if shape else None))
    return _ok("prompt", f"prompt_tokens grows with the prompt ({small} → {large} for ~{sizes[0]} → ~{sizes[1]} "
                         "tokens): no silent truncation", _ms(latency))


def check_window(rr: ResolvedRole, shape: RequestShape | None, info: ServerInfo) -> Check:
    """CONTEXT_TOO_SMALL when the experiment's largest first request does not fit the window."""
    if info.window is None:
        return _ok("window", f"{info.label} does not tell its context window; overflow is caught at run time")
    if shape is None:
        return _ok("window", f"the context window is {info.window} tokens ({info.window_source}); "
                             "give --config to compare it with the experiment's requests")
    limit = shape.max_tokens or 0
    needed = shape.first_request_tokens + limit
    parts = f"~{shape.first_request_tokens} tokens" + (f" + max_tokens {limit}" if limit else "")
    whose = f"{shape.agent}'s first request ({shape.where}" if shape.agent else \
        f"the experiment's largest first request ({shape.where}"
    if needed > info.window:
        # a server that cuts rather than refuses (Ollama): a first request over its window is cut in
        # every trial, which the run makes invalid (trial/truncation.py) — no valid trial would come of it
        cut = info.cuts_silently and shape.first_request_tokens > info.window
        # an agent's real request (its own system prompt and tools, which no setting of ours makes
        # smaller) over the window: every trial's first call is refused or cut
        alone = bool(shape.agent) and shape.first_request_tokens > info.window
        too_small = f"; the window is too small for {shape.agent}: every trial's first call would be " + (
            "cut (each trial invalid)" if info.cuts_silently else "refused") if alone else ""
        return Check(name="window", status="fail" if cut or alone else "warn", code=CONTEXT_TOO_SMALL,
                     message=f"{whose}: system prompt, tools and first message, {parts}) needs ~{needed} tokens; "
                             f"{info.label}'s window is {info.window} tokens ({info.window_source})" + (
                                 too_small or (f"; {info.label} would cut it and answer, so every such trial would "
                                               "be invalid" if cut else "")),
                     fix=fix_window(info, needed))
    return _ok("window", f"{whose}, {parts}) fits the {info.window}-token window ({info.window_source})")


def server_check(info: ServerInfo) -> Check:
    if info.kind is None:
        return _ok("server", "an OpenAI-compatible server (not one agentrig recognises: generic fixes)")
    version = f" {info.version}" if info.version else ""
    window = f"; window {info.window} tokens" if info.window else ""
    return _ok("server", f"{info.kind}{version} (recognised by {info.evidence}){window}")
