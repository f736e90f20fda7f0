"""The serialized contract: every value stored or exported is one of these pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    """The one strict base model: an unknown field is an error (stored records, configs, settings)."""

    model_config = ConfigDict(extra="forbid")


HEADER_MAX = 1000  # characters of an X-Agentrig-* value (telecom task ids run past 200)


class CallContext(Strict):
    """Who is calling: sent as X-Agentrig-* headers so a gateway's log can be reconciled."""

    run: str | None = None
    arm: str | None = None
    domain: str | None = None
    task: str | None = None
    trial: int | None = None
    role: str | None = None

    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in ("run", "arm", "domain", "task", "trial", "role"):
            value = getattr(self, name)
            if value is not None:
                text = str(value)
                if not (text.isascii() and text.isprintable()):  # printable ASCII is 32..126
                    text = "".join(ch for ch in text if 32 <= ord(ch) < 127)
                out[f"X-Agentrig-{name.capitalize()}"] = text[:HEADER_MAX]
        return out


class ToolCall(Strict):
    id: str
    name: str
    arguments: dict[str, Any] | None = None  # None when arguments_error is set
    arguments_raw: str = ""
    arguments_error: str | None = None  # arguments were not a JSON object: shown to the model


class AssistantMessage(Strict):
    content: str | None = None
    tool_calls: list[ToolCall] = []
    reasoning: str | None = None  # reasoning content, when the endpoint returns any
    # provider fields that must be sent back with the message (e.g. reasoning_details)
    extra: dict[str, Any] = {}


class Usage(Strict):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None  # Anthropic's cache_creation_input_tokens (in prompt_tokens)
    reported: bool = True  # False when the endpoint sent no usage

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Attempt(Strict):
    """One HTTP attempt of a call. ``cause`` is None for the attempt that succeeded."""

    cause: str | None = None  # rate_limited, server_error, timeout, connection, malformed, ...
    status: int | None = None
    latency_s: float = 0.0
    wait_s: float = 0.0  # the pause after this attempt before the next one
    detail: str | None = None


def retries_of(attempts: list[Attempt]) -> int:
    """THE definition of a call's retries, read by every view (the run's summary, the store's
    trials and model_calls tables, ``analyze``, the report, the progress line): the attempts that
    were followed by another one, i.e. attempts − 1 — for a call that succeeded and for one that
    failed alike (a call that gave up after ``max_attempts`` = 6 made 5 retries)."""
    return max(0, len(attempts) - 1)


class Completion(Strict):
    role: str
    model: str
    message: AssistantMessage
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0  # from the first attempt's start to the answer, waits included
    attempts: list[Attempt] = []
    request_id: str | None = None

    @property
    def retries(self) -> int:
        return retries_of(self.attempts)


# ---------------------------------------------------------------------------------------------
# Trials: the messages of a conversation, the model calls that produced them, plug-in events,
# the verdict. Stored in the run's SQLite store and exported (JSONL, tau2 results.json).
# ---------------------------------------------------------------------------------------------

MessageRole = Literal["system", "assistant", "user", "tool"]
Requestor = Literal["assistant", "user"]


class Message(Strict):
    """One message of a trial's conversation, in τ²-bench's terms.

    ``assistant`` = the agent under test, ``user`` = the user simulator, ``tool`` = a tool result
    from the environment (``requestor`` says whose call it answers; ``tool_call_id`` which call).
    An assistant or user message carries text OR tool calls (a model may return both; both are
    kept). ``turn`` is the message's index in the conversation (tau2's ``turn_idx``); ``t`` the
    seconds since the trial started; ``call`` the index in ``Trajectory.model_calls`` of the model
    call that produced the message (None for scripted / reference participants and tool results).
    """

    role: MessageRole
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    requestor: Requestor | None = None
    error: bool = False
    reasoning: str | None = None
    extra: dict[str, Any] = {}
    turn: int = 0
    t: float = 0.0
    call: int | None = None

    @property
    def is_tool_call(self) -> bool:
        return bool(self.tool_calls)

    @property
    def text(self) -> str:
        return self.content or ""


class ModelCall(Strict):
    """One call through the channel during a trial (every role: agent, user, memory, judge).

    ``purpose`` says what the call was for: ``agent``, ``user``, ``judge.nl``, ``memory.edit``,
    ``memory.decide`` … ``error`` is the failure code when the call failed (retries exhausted or a
    fatal error): ``attempts`` then holds the failed attempts, ``usage`` is empty and
    ``latency_s`` is the call's wall time over all its attempts and waits, as for an answered call."""

    role: str
    purpose: str
    turn: int = 0
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: list[Attempt] = []
    finish_reason: str | None = None
    request_id: str | None = None
    error: str | None = None
    sent_at: float | None = None  # Unix time (s) the call was sent: `agentrig usage --by hour` bins by it

    @property
    def retries(self) -> int:
        return retries_of(self.attempts)


class PluginEvent(Strict):
    """Something a plug-in did before an agent step (``kind``: e.g. ``memory.trigger``)."""

    plugin: str
    turn: int
    kind: str
    data: dict[str, Any] = {}


class Transient(Strict):
    """Context a plug-in adds to ONE agent call; never stored in the agent's own history.

    ``placement``: ``system`` = an extra system message after the history; ``user_append`` =
    appended to the text of the last user message of that call."""

    text: str
    placement: Literal["system", "user_append"] = "system"
    source: str = ""


class AgentRequest(Strict):
    """One ``agent``-role request of a trial, stored as a change of the trial's previous one, so
    that the exact request of every agent step can be rebuilt (``agentrig instability``):
    ``messages = previous[:keep] + tail``; ``tools`` is the previous request's when ``same_tools``.
    ``params`` are the call's other arguments (``parallel_tool_calls`` …; the seed is not kept)."""

    call: int  # index in Trajectory.model_calls
    keep: int = 0
    tail: list[dict[str, Any]] = []
    same_tools: bool = False
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] = {}


class Trajectory(Strict):
    # the first ``history_len`` messages are the task's own ``message_history`` (already in the
    # initial state: the judge does not replay their tool calls)
    history_len: int = 0
    messages: list[Message] = []
    model_calls: list[ModelCall] = []
    events: list[PluginEvent] = []
    # every agent-role request as a delta of the previous one (trial/context.py records them; empty
    # in trials stored before they were recorded: such trials cannot be resampled)
    agent_requests: list[AgentRequest] = []
    # running counts: tool_errors (τ²-bench's num_errors), invalid_tool_args, unknown_tools,
    # format_errors (text mode), agent_steps, env_calls
    counters: dict[str, int] = {}

    def bump(self, name: str, by: int = 1) -> int:
        self.counters[name] = self.counters.get(name, 0) + by
        return self.counters[name]


# the fields of τ²'s judgement that runs stored before the store's schema 2 kept at the top of
# ``reward_info`` (now in ``details``: bench/tau/verdict.py ``Tau2Details``)
_SCHEMA_1_TAU2_FIELDS = ("db_match", "agent_db_match", "user_db_match", "env_assertions", "action_checks",
                         "communicate_checks", "nl_assertions")


def _plain(value: Any) -> Any:
    """JSON data as a store holds it (pydantic models dumped), so a record reads back equal."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class RewardInfo(Strict):
    """How a trial's reward was computed: its named components, whether or not in ``reward_basis``.

    ``components[c]`` is the component's value, or None when it could not be computed (``notes[c]``
    says why). ``unchecked`` names the components that had nothing to check (τ²: no gold actions, no
    env_assertions …): their value is kept for the reward and the exports, but they were not
    computed — figures show "—" for them and count them in no rate (``computed``). ``reward`` is the
    product over ``reward_basis`` (1.0 for an empty basis) unless the benchmark says otherwise.
    ``details``: the benchmark's own record of its judgement, in its own model (τ²:
    ``bench/tau/verdict.py`` ``Tau2Details`` — DB match, each action, assertion and text check)."""

    reward: float
    reward_basis: list[str] = []
    components: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    unchecked: list[str] = []
    details: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _schema_1(cls, data: Any) -> Any:
        """Records of the store's schema 1 carry τ²'s fields at the top: read them into ``details``."""
        if isinstance(data, dict) and any(k in data for k in _SCHEMA_1_TAU2_FIELDS):
            data = dict(data)
            details = dict(data.get("details") or {})
            for k in _SCHEMA_1_TAU2_FIELDS:
                if k in data:
                    details[k] = _plain(data.pop(k))
            data["details"] = details
        return data

    def computed(self, name: str) -> float | None:
        """The component's value when it was computed; None when it was not (None, or unchecked)."""
        return None if name in self.unchecked else self.components.get(name)


# terminations every benchmark shares (a benchmark names its own beside them: τ², bench/tau/verdict.py)
GENERIC_TERMINATIONS = (
    "timeout",          # the trial's wall-clock limit
    "context_overflow",  # the conversation outgrew the model's context window mid-trial (valid, reward 0)
    "channel_error",    # a model call failed after retries: the trial is invalid
)


class Verdict(Strict):
    """The judgement of one trial. ``valid`` is False when infrastructure spoiled the trial
    (``invalid_cause`` says how); an invalid trial is never an agent failure."""

    reward: float = 0.0
    valid: bool = True
    invalid_cause: str | None = None  # the kind of fault (counted by it), e.g. "worker_lost"
    invalid_detail: str | None = None  # its message, when the kind alone is the cause (e.g. Ray's error text)
    termination: str
    reward_info: RewardInfo | None = None
    failure_class: str | None = None  # filled by analysis


class TrialKey(Strict):
    """A trial's identity, one shape everywhere (store rows, exports, labels, Ray calls, headers).
    ``domain``: the group its task belongs to — τ²'s domain; one fixed name for a benchmark without
    domains (``terminal``, ``appworld``)."""

    arm: str
    domain: str
    task_id: str
    trial: int

    def label(self) -> str:
        return f"{self.arm}/{self.domain}/{self.task_id}#{self.trial}"


class TrialRecord(Strict):
    """Everything stored for one finished trial (one store transaction)."""

    key: TrialKey
    run_id: str
    seed: int
    attempt: int = 0  # 0 = first play; n = the runner's n-th replay after invalid attempts
    started_at: str  # ISO 8601, UTC
    duration_s: float
    trajectory: Trajectory
    verdict: Verdict


class FailureLabel(Strict):
    """Why a valid trial failed, as its benchmark classifies it (``Benchmark.classify``): the primary
    class, secondary ones, the reward components and the evidence behind each class."""

    primary: str
    secondary: list[str] = []
    classes: list[str] = []
    components: list[str] = []
    termination: str
    evidence: dict[str, list[str]] = {}
