"""One exception tree for agentrig: every exception class of the package, where it lives (the
module under ``agentrig/``) and what it means. ``tests/test_errors_tree.py`` checks this drawing
against the code: a new exception class must be drawn here, under its real base — or, a
benchmark's own, in its benchmark's drawing (below).

    Exception                                                 (Python's)
    ├── AgentrigError               errors                    raised on purpose, with a message a person can act on;
    │   │                                                     at the CLI: one line on stderr, exit 1 (cli_errors.py)
    │   ├── ConfigError             errors                    user error: a bad experiment file, setting or option
    │   ├── DataError               errors                    user error: a malformed or missing benchmark file
    │   │                                                     (names the file, the task id, the field)
    │   ├── RunDirBusy              store/owner               user error: another process holds the run directory
    │   │                                                     (its owner lock); names the holder's pid, host, command
    │   ├── ToolInstallError        agents/installed/common   an installed agent's tool root could not be made (no npm
    │   │                                                     or pip, the registry unreachable): names the step, the fix
    │   └── InfrastructureFault     errors                    the machinery under a trial failed, never the agent:
    │       │                                                 the trial is invalid and replayed (trial/envelope.py)
    │       ├── ChannelError        errors                    a model call that did not produce a completion
    │       │   ├── RetriesExhausted    errors                transient faults (429, 5xx, timeouts, bad bodies)
    │       │   │                                             outlasted the attempt bound or the deadline: invalid
    │       │   ├── PromptTruncated     errors                the server answered, but its usage shows it cut the
    │       │   │                                             request (a window smaller than the prompt): invalid
    │       │   └── FatalChannelError   errors                retrying cannot help: the run stops at once
    │       │       ├── AuthError           errors            401/403
    │       │       ├── EndpointNotFound    errors            404 on the path: the base URL is wrong
    │       │       ├── ModelNotFound       errors            the endpoint does not serve the model id
    │       │       ├── QuotaExhausted      errors            429 whose error says the quota or credit is used up
    │       │       ├── BadRequest          errors            400/422 with the server's message
    │       │       ├── EndpointDown        channel/breaker   an outage outlasted ``outage_wait_s``
    │       │       └── ContextOverflow     errors            the request is longer than the model's context
    │       │                                                 (``prompt_tokens``, ``window`` when the server named
    │       │                                                 them); not on the role's first request in a trial,
    │       │                                                 it ends the trial ``context_overflow`` (valid, 0)
    │       └── OutageTimeout       trial/envelope            the agent's time ran out while an outage held its calls
    └── Signal                      errors                    control flow, not an error: caught by agentrig's own
        │                                                     code, which turns it into something else
        ├── AgentStop               errors                    an agent that cannot go on ends its trial with a
        │                                                     termination (e.g. ``format_errors``): valid, scores 0
        ├── Malformed               channel/parse             a body that is not a completion: a transient fault
        ├── _Fatal                  run/executor              a fatal channel error carried out of the trial's task
        │                                                     with its role and trial, to stop the run
        ├── BadBody (ValueError)    agents/proxy/inbound      an agent's request the measuring proxy cannot read: an
        │                                                     HTTP 400 in the agent's wire
        ├── GoldRequestError        testing/_scripted         a request a scripted endpoint cannot answer: an HTTP 400
        └── ReplyError (ValueError) testing/_fake_bodies      a test's scripted reply that is not a reply: an HTTP 500

A benchmark's own exceptions hang under these nodes too (DataError: its malformed task files and
broken task builds; InfrastructureFault: its sandbox, worker or judge that failed; Signal: its
control flow), drawn in its own package — the module its registry entry names with
``exceptions=`` (``agentrig/benchmark.py``; τ², terminal and AppWorld: their ``benchmark.py``) —
so that adding a benchmark touches nothing here.

A class with two bases names the second in parentheses. Code that catches ``AgentrigError`` (the
CLI, the report, the doctor's reading of an experiment) catches the infrastructure faults too;
inside a trial they never get that far: the envelope turns each into an invalid verdict, and a
``FatalChannelError`` stops the run before. Every ChannelError carries a ``Diagnosis`` (code,
message, fix) shared with ``agentrig doctor``. Messages never contain a key: server text is passed
through ``agentrig.redact`` first.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Diagnosis:
    code: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}\n  fix: {self.fix}"


class Signal(Exception):
    """Control flow, not an error: raised to be caught by agentrig's own code a frame or a few up,
    which turns it into something else (a termination, a tool's error text, a retried fault, an
    HTTP error of a test endpoint). It never reaches a person as it is."""


class AgentStop(Signal):
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


class InfrastructureFault(AgentrigError):
    """The machinery under a trial failed (the channel, a sandbox, a benchmark's worker or judge):
    never the agent's failure. Inside a trial the envelope (``trial/envelope.py``) makes the trial
    invalid and the executor replays it; a ``FatalChannelError`` stops the run."""


class ChannelError(InfrastructureFault):
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


def close_matches(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """The few options genuinely close to a mistyped ``word``, best first: difflib's similarity
    ratio ≥ 0.6, or one starts with the other (the shorter having 3 characters or more). When more
    than ``n`` options tie for the best ratio, none stands out and none is offered ("2" among
    the ids 0–49 is as close to "12" as to "20", "21" … "29")."""
    options = list(dict.fromkeys(options))
    low = word.lower()
    scored = []
    for o in options:
        ol = o.lower()
        ratio = difflib.SequenceMatcher(None, low, ol).ratio()
        if min(len(low), len(ol)) >= 3 and (ol.startswith(low) or low.startswith(ol)):
            ratio = max(ratio, 0.6) + 1.0
        if ratio >= 0.6:
            scored.append((ratio, o))
    if not scored:
        return []
    scored.sort(key=lambda x: -x[0])
    if sum(r == scored[0][0] for r, _ in scored) > n:
        return []
    return [o for _, o in scored[:n]]


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """ "did you mean 'x'? " (or "'x' or 'y'"), or "" when nothing is close."""
    close = close_matches(word, options)
    return f"did you mean {' or '.join(map(repr, close))}? " if close else ""


def suggestions(unknown: list[str], options: Iterable[str]) -> str:
    """What each unknown name was probably meant to be: "did you mean 'x'?" for one name,
    "did you mean: 'a' → 'x'; 'b' → 'y'" for several (those with a close option), "" for none."""
    options = list(options)
    if len(unknown) == 1:
        return did_you_mean(unknown[0], options).strip()
    hints = [f"{u!r} → {' or '.join(map(repr, close))}" for u in unknown[:5] if (close := close_matches(u, options))]
    return f"did you mean: {'; '.join(hints)}" if hints else ""
