"""Silent truncation: each answer's prompt_tokens against the request's size and the role's
previous count — cut prompts are caught, honest servers (no usage, cached tokens, counts that
leave cached tokens out) are not."""

from __future__ import annotations

from agentrig.trial.truncation import MAX_CHARS_PER_TOKEN, TruncationWatch, request_chars
from agentrig.types import Usage

POLICY = "Always check the customer's identity before changing a booking. " * 200  # ~12,800 characters


def convo(turns: int) -> list[dict]:
    out = [{"role": "system", "content": POLICY}]
    for i in range(turns):
        out += [{"role": "user", "content": f"Please change booking {i} to the later flight, thank you."},
                {"role": "assistant", "content": f"Booking {i} is changed; anything else?"}]
    return out


def honest(messages: list[dict]) -> int:
    return request_chars(messages) // 4


def test_an_honest_server_is_never_flagged_over_a_growing_conversation():
    watch = TruncationWatch()
    for turn in range(1, 30):
        messages = convo(turn)
        assert watch.check("agent", messages, Usage(prompt_tokens=honest(messages), completion_tokens=9)) is None


def test_a_count_under_the_size_bound_is_a_cut_prompt():
    messages = convo(1)
    floor = request_chars(messages) // MAX_CHARS_PER_TOKEN
    problem = TruncationWatch().check("agent", messages, Usage(prompt_tokens=floor - 100))
    assert problem is not None and problem.code == "PROMPT_TRUNCATED"
    assert f"{floor - 100:,} prompt tokens" in problem.message and "num_ctx" in problem.fix


def test_a_count_that_stops_growing_is_a_cut_prompt():
    watch = TruncationWatch()
    assert watch.check("agent", convo(1), Usage(prompt_tokens=2048)) is None  # plausible on its own
    problem = watch.check("agent", convo(2), Usage(prompt_tokens=2048))
    assert problem is not None and "did not grow (2,048 → 2,048)" in problem.message


def test_roles_are_watched_apart():
    watch = TruncationWatch()
    assert watch.check("agent", convo(3), Usage(prompt_tokens=honest(convo(3)))) is None
    assert watch.check("user", convo(4), Usage(prompt_tokens=honest(convo(4)))) is None  # first of its role


def test_no_usage_and_cached_tokens_are_never_flagged():
    watch = TruncationWatch()
    for turn in range(1, 6):  # a server that sends no usage at all
        assert watch.check("agent", convo(turn), Usage(prompt_tokens=0, completion_tokens=0, reported=False)) is None
    watch = TruncationWatch()
    for turn in range(1, 6):  # OpenAI-style: prompt_tokens counts everything, cached_tokens a part of it
        total = honest(convo(turn))
        assert watch.check("agent", convo(turn), Usage(prompt_tokens=total, cached_tokens=total - 40)) is None
    watch = TruncationWatch()
    for turn in range(1, 6):  # a proxy that reports the cached part apart from prompt_tokens
        total = honest(convo(turn))
        assert watch.check("agent", convo(turn), Usage(prompt_tokens=40, cached_tokens=total - 40)) is None


def test_a_server_that_counts_only_uncached_tokens_is_not_flagged():
    """Small, varying counts (only the new part of the prompt) are not a window's ceiling."""
    watch = TruncationWatch()
    assert watch.check("agent", convo(1), Usage(prompt_tokens=honest(convo(1)))) is None
    for turn in range(2, 8):
        assert watch.check("agent", convo(turn), Usage(prompt_tokens=30 + turn)) is None


def test_tools_count_half_and_think_blocks_not_at_all():
    messages = [{"role": "assistant", "content": "<think>" + "x" * 5000 + "</think>Done."}]
    assert request_chars(messages) == len("Done.")
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"description": "y" * 30_000}}}]
    messages = [{"role": "user", "content": "hi " * 3000}]  # 9,000 characters: about 2,250 tokens
    # a server that does not render the tools counts only the messages: not a cut prompt
    assert TruncationWatch().check("agent", messages, Usage(prompt_tokens=2250), tools) is None
    # counting less than (messages + half the tools) / 12 at its ceiling, it cut the prompt
    assert TruncationWatch().check("agent", messages, Usage(prompt_tokens=1500), tools) is not None
