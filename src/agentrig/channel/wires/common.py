"""What the wire modules share: the text of a chat message's content (the proxy reads an agent's
with it too), and the classification of an error answer by the APIs that are not chat completions
(``classify_api``: the chat wire's rules plus what they say differently — Anthropic's
``not_found_error`` for a model, its credit-balance 400, a 404 on the wire's own path)."""

from __future__ import annotations

from typing import Any

from agentrig.channel.faults import _QUOTA, Fault, classify_status, model_fault, quota_fault, server_message
from agentrig.config import ResolvedRole
from agentrig.errors import Diagnosis, EndpointNotFound


def text_of(content: Any, sep: str = "", image: str | None = None) -> str:
    """A message's content as text: a string, or a list of parts — their ``text``, joined by `sep`.
    With `image` (the proxy reading what an agent sent: ``agents/proxy/inbound.py``) a bare string
    part and a refusal's text count too, and an image part stands as `image`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(t for t in (_part_text(p, image) for p in content) if t is not None)
    return str(content)


def _part_text(part: Any, image: str | None) -> str | None:
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return part["text"]
    if image is None:
        return None
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        if part.get("type") in ("image", "input_image", "image_url"):
            return image
        if part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            return part["refusal"]
    return None


def error_type(body: Any) -> str:
    """The ``type`` of an error body: Anthropic's ``{"type": "error", "error": {"type": ...}}``
    and OpenAI's ``{"error": {"type": ..., "code": ...}}`` alike."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("type") or err.get("code") or "")
    return ""


def classify_api(status: int, body: Any, headers: Any, rr: ResolvedRole, path: str) -> Fault:
    fault = classify_status(status, body, headers, model=rr.model, key_env=rr.api_key_env, base_url=rr.base_url)
    message = server_message(body)
    said = f" The server said: {message}" if message else ""
    if isinstance(fault.fatal, EndpointNotFound):
        generic = message.strip(" .").lower() in ("", "not found", "404: not found")
        if error_type(body) == "not_found_error" and not generic:  # Anthropic: "model: claude-…"
            return model_fault(status, message, rr.model, rr.base_url)
        return Fault("fatal", status, message, fatal=EndpointNotFound(Diagnosis(
            "BASE_URL_PATH", f"POST {path} at {rr.base_url} answered 404 Not Found: this endpoint does not serve "
            f"the {rr.wire} wire at that path.{said}",
            f"check that the endpoint serves {path} (or use wire = \"chat\" if it only serves chat completions); "
            "run `agentrig doctor`"), status=status))
    if status == 400 and fault.fatal is not None and _QUOTA.search(message):  # Anthropic's "credit balance is too low"
        return quota_fault(status, message, "the endpoint refuses requests because the account's credit is used up.")
    return fault
