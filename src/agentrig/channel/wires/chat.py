"""``wire = "chat"``: chat completions (``POST {base_url}/chat/completions``), the API every
OpenAI-compatible server speaks, through the official SDK's client (the channel's: retries off,
same pool, its auth and error classes).

The body is serialized here and posted as is: the SDK's request-building walks every message and
tool schema of every request (a third of a run's CPU with long conversations), and ``body.dumps``
encodes the tool schemas and long prompts it repeats once; auth, headers, the
connection pool and error classes stay the SDK's.
"""

from __future__ import annotations

from typing import Any

import openai
import openai._response as _sdk_response

from agentrig.channel import body
from agentrig.channel.faults import Fault, classify_status
from agentrig.channel.parse import parse_completion as parse  # noqa: F401 - the wire's parse
from agentrig.config import ResolvedRole

PATH = "/chat/completions"
MODELS = "openai"  # how its servers list their models (the doctor's models check): GET {base}/models, OpenAI's list
STATUS = openai.APIStatusError
TIMEOUT = (openai.APITimeoutError,)
CONNECTION = openai.APIConnectionError
# the HTTP library's Response class the SDK is built on (httpx2 for openai >= 3, httpx before): the raw response
_RAW = (getattr(_sdk_response, "httpx2", None) or getattr(_sdk_response, "httpx")).Response


async def request(client: openai.AsyncOpenAI, rr: ResolvedRole, params: dict[str, Any], headers: dict[str, str],
                  timeout_s: float) -> tuple[bytes, str | None]:
    payload = {**params, **rr.extra_body} if rr.extra_body else params
    data = body.dumps(payload).encode()
    raw = await client.post(PATH, cast_to=_RAW, content=data,
                            options={"headers": {**headers, "Content-Type": "application/json"}, "timeout": timeout_s})
    return raw.content, raw.headers.get("x-request-id")


def classify(status: int, body: Any, headers: Any, rr: ResolvedRole) -> Fault:
    return classify_status(status, body, headers, model=rr.model, key_env=rr.api_key_env, base_url=rr.base_url)
