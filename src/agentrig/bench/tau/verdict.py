"""τ²-bench's judgement in agentrig's verdict: its reward components, its terminations, and the record
of each check (``Tau2Details``, kept in ``RewardInfo.details``; ``details_of`` reads it back typed).

Runs stored before the store's schema 2 kept these fields at the top of ``reward_info``;
``types.RewardInfo`` reads them into ``details``, so ``details_of`` serves old and new records alike.
"""

from __future__ import annotations

from typing import Any

from agentrig.types import RewardInfo, Strict

__all__ = ["COMPONENTS", "SCORED_TERMINATIONS", "TERMINATIONS", "ActionCheck", "AssertionCheck", "Tau2Details",
           "TextCheck", "details_of", "reward_info"]


class ActionCheck(Strict):
    action_id: str | None = None
    requestor: str = "assistant"
    name: str
    arguments: dict[str, Any] = {}
    compare_args: list[str] | None = None
    write: bool | None = None  # the gold tool changes state
    matched: bool


class AssertionCheck(Strict):
    env_type: str
    func_name: str
    arguments: dict[str, Any] = {}
    assert_value: bool = True
    message: str | None = None
    met: bool
    problem: str | None = None


class TextCheck(Strict):
    """A COMMUNICATE item or an NL assertion and whether it was met."""

    text: str
    met: bool
    justification: str | None = None


COMPONENTS = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")


# termination reasons (τ²-bench's names where it has one; the last three are every benchmark's)
TERMINATIONS = (
    "user_stop",        # the user simulator said ###STOP### / ###TRANSFER### / ###OUT-OF-SCOPE###
    "agent_transfer",   # the agent called transfer_to_human_agents
    "agent_stop",       # the agent said ###STOP###
    "max_steps",
    "too_many_errors",  # max_errors tool errors in total
    "too_many_format_errors",  # text mode: consecutive replies that were not one JSON action
    "timeout",          # the trial's wall-clock limit
    "agent_error",      # the agent sent an empty message / could not produce one
    "user_error",       # the user simulator sent an empty message
    "context_overflow",  # the conversation outgrew the model's context window mid-trial (valid, reward 0)
    "limits_exceeded",  # a Python agent, Codex or Claude Code reached its arm's step_limit / token_limit / cost_limit (at its proxy)
    "channel_error",    # a model call failed after retries: the trial is invalid
)
SCORED_TERMINATIONS = ("user_stop", "agent_transfer", "agent_stop")


class Tau2Details(Strict):
    """What τ²'s judge checked: the end-state DB match (whole, agent side, user side) and every
    env assertion, gold action, COMMUNICATE item and NL assertion with whether it was met."""

    db_match: bool | None = None
    agent_db_match: bool | None = None
    user_db_match: bool | None = None
    env_assertions: list[AssertionCheck] = []
    action_checks: list[ActionCheck] = []
    communicate_checks: list[TextCheck] = []
    nl_assertions: list[TextCheck] = []


def details_of(info: RewardInfo | None) -> Tau2Details:
    """The τ² checks of a verdict's reward info (empty for a trial that was not judged)."""
    if info is None or not info.details:
        return Tau2Details()
    return Tau2Details.model_validate(info.details)


def reward_info(*, details: Tau2Details, **fields: Any) -> RewardInfo:
    """A τ² ``RewardInfo``: the generic fields, and the checks in ``details``."""
    return RewardInfo(**fields, details=details.model_dump(mode="json"))
