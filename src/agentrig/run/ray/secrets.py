"""Keys for the Ray workers: through the job's runtime env, sealed, so that no log holds them.

Ray's runtime-env agent writes a job's ``env_vars`` to its log on every node, in clear. So the
driver puts each key there *sealed*: XORed with a one-time pad of random bytes drawn for this run
(``AGENTRIG_SEALED_<VAR>``). The pads reach the workers with their creation (the actor's
constructor, kept in Ray's memory, never logged); a worker unseals the keys into the environment
its channels read (``Channel(env=…)``), not into ``os.environ``, so a sandbox never inherits them.
The log holds only sealed values, which say nothing about the key without the pad.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping

PREFIX = "AGENTRIG_SEALED_"


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def seal(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the runtime env's variables, the workers' pads) for ``env`` (variable → secret value)."""
    sealed: dict[str, str] = {}
    pads: dict[str, str] = {}
    for name, value in env.items():
        raw = value.encode()
        pad = secrets.token_bytes(len(raw))
        sealed[PREFIX + name] = base64.urlsafe_b64encode(_xor(raw, pad)).decode()
        pads[name] = base64.urlsafe_b64encode(pad).decode()
    return sealed, pads


def unseal(pads: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The secret values, from the sealed variables of ``environ`` and the pads."""
    out: dict[str, str] = {}
    for name, pad in pads.items():
        sealed = environ.get(PREFIX + name)
        if sealed is not None:
            out[name] = _xor(base64.urlsafe_b64decode(sealed), base64.urlsafe_b64decode(pad)).decode(errors="replace")
    return out
