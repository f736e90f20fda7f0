"""One exception tree for agentrig.

    AgentrigError                 anything agentrig raises on purpose; has a message a person can act on
    ├── ConfigError               a bad experiment file, setting or command-line option
    ├── DataError                 a malformed or missing benchmark file (names file, task id, field)
    └── ChannelError              a model call that did not produce a completion
        ├── RetriesExhausted      transient faults (429, 5xx, timeouts, bad bodies) outlasted the
        │                         attempt bound or the deadline: the trial is invalid, not failed
        └── FatalChannelError     retrying cannot help; a run stops at once
            ├── AuthError             401/403
            ├── EndpointNotFound      404 on the path: the base URL is wrong
            ├── ModelNotFound         the endpoint does not serve the model id
            ├── QuotaExhausted        429 whose error says the quota or credit is used up
            ├── ContextOverflow       the request is longer than the model's context (``prompt_tokens``
            │                         and ``window`` when the server named them); inside a trial the
            │                         episode turns one that is not the role's first request into the
            │                         ending ``context_overflow`` (a valid trial, reward 0)
            └── BadRequest            400/422 with the server's message
        PromptTruncated           the server answered, but its usage shows it cut the request (a
                                  window smaller than the prompt): the trial is invalid

Inside a trial, control flow (not errors of agentrig's; trial/envelope.py catches them):

    AgentStop                     an agent that cannot go on ends its trial with a termination
                                  (e.g. ``format_errors``): the trial is valid and scores 0

Every ChannelError carries a ``Diagnosis`` (code, message, fix) shared with ``agentrig doctor``.
Messages never contain a key: server text is passed through ``agentrig.redact`` first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Diagnosis:
    code: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}\n  fix: {self.fix}"


class AgentStop(Exception):
    """Raised by an agent that cannot go on (e.g. text mode: too many unusable replies in a row).
    The trial envelope ends the trial with ``termination`` (one of ``types.GENERIC_TERMINATIONS`` or the
    benchmark's own); the trial is valid and scores 0."""

    def __init__(self, termination: str, detail: str = ""):
        super().__init__(detail or termination)
        self.termination = termination
        self.detail = detail


class AgentrigError(Exception):
    """Base of every error agentrig raises on purpose; ``str(err)`` is meant for a person."""


class ConfigError(AgentrigError):
    """A bad experiment file, setting or option."""


class DataError(AgentrigError):
    """A malformed or missing benchmark data file."""


class ChannelError(AgentrigError):
    """A model call that produced no completion. ``attempts``: the failed attempts;
    ``elapsed_s``: the call's wall time from its first attempt to the failure, waits included
    (set by the channel)."""

    elapsed_s: float = 0.0

    def __init__(self, diagnosis: Diagnosis, *, status: int | None = None, attempts: list | None = None):
        super().__init__(str(diagnosis))
        self.diagnosis = diagnosis
        self.status = status
        self.attempts = attempts or []

    @property
    def code(self) -> str:
        return self.diagnosis.code


class RetriesExhausted(ChannelError):
    """Transient faults outlasted the attempt bound or the deadline."""


class FatalChannelError(ChannelError):
    """Retrying cannot help; the run must stop."""


class AuthError(FatalChannelError):
    pass


class EndpointNotFound(FatalChannelError):
    pass


class ModelNotFound(FatalChannelError):
    pass


class QuotaExhausted(FatalChannelError):
    pass


class ContextOverflow(FatalChannelError):
    """The request does not fit the model's context window. ``prompt_tokens`` / ``window``: the
    sizes the server named (None when it named none). ``first``: set by the trial's context when
    the role had made no successful call in this trial before (the window is too small for the
    task: the run stops); otherwise the conversation outgrew the window mid-trial."""

    prompt_tokens: int | None = None
    window: int | None = None
    first: bool = True
    request_chars: int | None = None  # the refused request's characters, messages + tools (set in a trial)


class PromptTruncated(ChannelError):
    """The server answered 200, but the ``usage.prompt_tokens`` it reported shows that it cut the
    request to fit a window smaller than the prompt (Ollama's default window does this silently)."""


class BadRequest(FatalChannelError):
    pass


def format_validation_error(exc: Any, head: str, line: Callable[[dict], str], *, limit: int | None = None) -> str:
    """The one pydantic error formatter: ``head``, then one ``  - …`` line per error of ``exc`` (a
    pydantic ValidationError) as ``line(err)`` words it (the caller names the file/field and the
    fix); past ``limit`` errors, one ``… N more`` line."""
    errs = exc.errors()
    shown = errs if limit is None else errs[:limit]
    lines = [head, *(f"  - {line(err)}" for err in shown)]
    if limit is not None and len(errs) > limit:
        lines.append(f"  - … {len(errs) - limit} more")
    return "\n".join(lines)
