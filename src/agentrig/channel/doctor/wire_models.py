"""The doctor's models check for ``wire = "anthropic"``: ``GET /v1/models`` the Anthropic way
(``x-api-key``, ``anthropic-version``, through the official SDK). Every later check (model,
chat, tools, prompt growth) goes through ``send_once``, which speaks the role's wire, so the
codes come out the same for every wire: AUTH_REJECTED (401/403), MODEL_NOT_FOUND (404
``not_found_error``), RATE_LIMITED with the wait the server asked for (429), SERVER_ERROR
(5xx, Anthropic's 529 overloaded).

A gateway that serves ``/v1/messages`` but no model list gets a warning here, not a failure:
the chat check decides.
"""

from __future__ import annotations

import json
import time

import anthropic

from agentrig.errors import Diagnosis
from agentrig.redact import redact, redact_url
from agentrig.channel.faults import EXHAUSTED_CODES, auth_rejected, connection_detail, refused, server_message
from agentrig.channel.doctor.preflight import Check, _bad, _ms, _ok, _proxy_note
from agentrig.channel.wires.anthropic import sdk_base_url


def _ids(body: object) -> list[str] | None:
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        return [m["id"] for m in body["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return None


async def check_models_anthropic(base: str, key: str, key_env: str, timeout_s: float) -> tuple[Check, list[str] | None]:
    root = sdk_base_url(base)
    shown = f"{redact_url(root)}/v1/models"
    client = anthropic.AsyncAnthropic(api_key=key, base_url=root, max_retries=0, timeout=timeout_s)
    t0 = time.perf_counter()
    try:
        raw = await client.models.with_raw_response.list()
        status, text = raw.http_response.status_code, raw.http_response.text
        try:
            body: object = json.loads(raw.http_response.content)
        except ValueError:
            body = None
    except anthropic.APIStatusError as exc:
        status, body, text = exc.status_code, exc.body, exc.response.text
    except anthropic.APIConnectionError as exc:  # timeouts included
        elapsed = time.perf_counter() - t0
        timed_out = isinstance(exc, anthropic.APITimeoutError) and not refused(exc) and elapsed >= 0.9 * timeout_s
        code = "TIMEOUT" if timed_out else "UNREACHABLE"
        what = f"no answer within {timeout_s:g}s" if timed_out else redact(connection_detail(exc, root))
        return _bad("models", Diagnosis(code, f"GET {shown}: {what}.{_proxy_note()}",
                                        EXHAUSTED_CODES["timeout" if timed_out else "connection"][2]),
                    latency_ms=_ms(elapsed)), None
    finally:
        await client.close()
    ms = _ms(time.perf_counter() - t0)
    if status in (401, 403):
        return _bad("models", auth_rejected(status, key_env, server_message(body, text)), latency_ms=ms), None
    ids = _ids(body) if status == 200 else None
    if ids is not None:
        return _ok("models", f"GET {shown} lists {len(ids)} model(s) (the Anthropic wire)", ms), ids
    if status == 429 or status >= 500:
        code = "RATE_LIMITED" if status == 429 else "SERVER_ERROR"
        return _bad("models", Diagnosis(code, f"GET {shown} answered {status}: {server_message(body, text)}",
                                        EXHAUSTED_CODES["rate_limited" if status == 429 else "server_error"][2]),
                    latency_ms=ms), None
    return Check(name="models", status="warn", code="MODELS_UNLISTED", latency_ms=ms,
                 message=f"GET {shown} answered {status} with no model list; the chat check below decides whether "
                         f"{redact_url(root)} serves the Anthropic Messages API",
                 fix="for wire = \"anthropic\" the base URL is the API root the SDK appends /v1/messages to "
                     "(e.g. https://api.anthropic.com, or a gateway's http://host:4000; a trailing /v1 is dropped)"), None
