"""Decisions (issue 26): one wrong argument of many is another decision; normalised values are not."""

from __future__ import annotations

import pytest

from agentrig.analysis.decisions import (decision_instability, decision_key, groups, normalise, parting_step,
                                         same_decision)
from agentrig.analysis.instability import consistency
from agentrig.analysis.instability_report import fork_step

SCHEMA = {"book": {"type": "object", "properties": {
    "user_id": {"type": "string"}, "amount": {"type": "number"}, "nights": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    "legs": {"type": "array", "items": {"type": "string"}},
    "insurance": {"type": "string", "default": "no"}}}}


def _call(**arguments):
    return {"kind": "tool", "name": "book", "arguments": arguments}


def _eleven(**changed):
    args = {f"a{i}": f"v{i}" for i in range(11)}
    return _call(**{**args, **changed})


def test_one_wrong_argument_of_eleven_counts_as_a_wrong_tool():
    right, wrong = _eleven(), _eleven(a7="v7-typo")
    assert not same_decision(right, wrong)
    actions = [right, right, right, wrong, wrong, right]
    other_tool = [right, right, right, {**wrong, "name": "cancel"}, {**wrong, "name": "cancel"}, right]
    assert decision_instability(actions) == decision_instability(other_tool) == pytest.approx(2 / 6)
    # the graded similarity (secondary) barely moves: 1 wrong argument of 11
    assert 1 - consistency(right, actions[1:]) < 0.05


def test_values_are_normalised_by_type_whitespace_and_set_order():
    a = _call(user_id="  mia_li_3668 ", amount=3, nights="2", tags=["x", "y"], legs=["A", "B"])
    b = _call(user_id="mia_li_3668", amount=3.0, nights=2, tags=["y", "x"], legs=["A", "B"], insurance="no")
    assert same_decision(a, b, SCHEMA)
    assert not same_decision(a, {**b, "arguments": {**b["arguments"], "legs": ["B", "A"]}}, SCHEMA)  # a sequence
    assert not same_decision(a, {**b, "arguments": {**b["arguments"], "insurance": "yes"}}, SCHEMA)
    assert not same_decision(a, b)  # without the schema "2" (a string) is not 2, and list order counts
    assert normalise({"x": "a  b\n c", "n": None}) == {"x": "a b c"}
    assert normalise(True) is True and normalise(1.0) == 1 and isinstance(normalise(1.0), int)
    assert not same_decision(_call(x=True), _call(x=1))  # a boolean is never a number


def test_texts_paraphrases_and_code():
    said = {"kind": "text", "text": "Your booking is confirmed."}
    assert same_decision(said, {"kind": "text", "text": "confirmed, your booking is"})
    assert not same_decision(said, {"kind": "text", "text": "Let me look into something else first."})
    cmd = {"kind": "text", "text": "Step 2.\n\n```bash\necho ok > /app/out.txt\n```"}
    assert not same_decision(cmd, {"kind": "text", "text": "Step 2.\n\n```bash\necho ok > noise-/app/out.txt\n```"})
    assert same_decision(cmd, {"kind": "text", "text": "Now step 2.\n```bash\necho  ok > /app/out.txt\n```"})
    assert not same_decision(said, _call())
    assert groups([said, _call(), said, _call(a=1)]) == [0, 1, 0, 2]


def test_where_reruns_part():
    a, b = _eleven(), _eleven(a3="wrong")
    keys = lambda *acts: [decision_key(x) for x in acts]  # noqa: E731
    assert parting_step([keys(a, a, a), keys(a, b, a)]) == 1
    assert parting_step([keys(a, a), keys(a, a)]) is None
    assert parting_step([keys(a), keys(a, a)]) == 1  # one stopped deciding while the other went on
    assert parting_step([keys(a, b)]) is None
    assert fork_step([[a, a, a], [a, b, a]]) == 1  # instability's fork step is the same definition
