"""The memory bank and its tools, BM25, the decision format and the settings (no model calls)."""

from __future__ import annotations

import pytest

from agentrig.errors import ConfigError
from agentrig.plugins import REGISTRY, build_plugin
from agentrig.plugins.base import PluginSettings
from agentrig.plugins.memory import MemorySettings, parse_settings, prompts
from agentrig.plugins.memory.bank import STATUS_MAX_CHARS, TOOL_NAMES, TOOLS, Bank
from agentrig.plugins.memory.bm25 import BM25Index, terms

from .conftest import ctx_for


def test_tools_are_the_four_of_the_issue_as_openai_function_schemas():
    assert TOOL_NAMES == ("memory_update_status", "memory_save_knowledge", "memory_save_procedural", "memory_delete")
    assert [t["function"]["name"] for t in TOOLS] == list(TOOL_NAMES)
    for t in TOOLS:
        params = t["function"]["parameters"]
        assert t["type"] == "function" and params["type"] == "object"
        assert params["required"] == list(params["properties"]) and len(params["required"]) == 1
    assert TOOLS[3]["function"]["parameters"]["required"] == ["memory_id"]


def test_entries_get_short_ids_and_their_step_and_ids_are_never_reused():
    bank = Bank()
    assert bank.apply("memory_save_knowledge", {"content": "Customer is Diego, email d@x.net"}, 0) == (True, "saved as K1")
    assert bank.apply("memory_save_procedural", {"content": "search_available_bikes needs dates"}, 2) == (True, "saved as P1")
    assert bank.apply("memory_save_knowledge", {"content": "Wants size M"}, 3) == (True, "saved as K2")
    assert bank.knowledge["K2"].step == 3 and bank.procedural["P1"].step == 2
    assert bank.apply("memory_delete", {"memory_id": "K2"}, 4) == (True, "deleted K2")
    assert bank.apply("memory_save_knowledge", {"content": "Wants size L"}, 4) == (True, "saved as K3")
    assert list(bank.knowledge) == ["K1", "K3"]
    assert bank.apply("memory_delete", {"memory_id": " p1 "}, 5) == (True, "deleted P1")
    assert bank.size() == {"knowledge": 2, "procedural": 0, "status_chars": 0}
    assert "K2" not in bank.index and "K3" in bank.index


def test_status_is_overwritten_and_cut_at_2000_characters_with_a_note():
    bank = Bank()
    ok, result = bank.apply("memory_update_status", {"content": "first"}, 0)
    assert ok and bank.status == "first" and "5 characters" in result
    ok, result = bank.apply("memory_update_status", {"content": "x" * 2500}, 1)
    assert ok and bank.status == "x" * STATUS_MAX_CHARS == "x" * 2000
    assert "cut" in result and "2500" in result and "2000" in result
    ok, _ = bank.apply("memory_update_status", {"content": ""}, 2)
    assert ok and bank.status == ""
    assert len(bank) == 0  # the status is not an entry


def test_long_entries_are_cut_and_the_result_says_so():
    bank = Bank(max_entry_chars=30)
    ok, result = bank.apply("memory_save_knowledge", {"content": "y" * 45}, 0)
    assert ok and bank.knowledge["K1"].content == "y" * 30
    assert result.startswith("saved as K1") and "30 of 45" in result


@pytest.mark.parametrize("name, arguments, words", [
    ("memory_forget", {"memory_id": "K1"}, ["no tool", "memory_delete"]),
    ("memory_save_knowledge", None, ["not a JSON object", "(bad json)"]),
    ("memory_save_knowledge", {}, ["`content`"]),
    ("memory_save_procedural", {"content": 12}, ["`content`"]),
    ("memory_save_knowledge", {"content": "   "}, ["empty"]),
    ("memory_update_status", {"text": "x"}, ["`content`"]),
    ("memory_delete", {"memory_id": "K9"}, ["no entry 'K9'"]),
    ("memory_delete", {"id": "K1"}, ["`memory_id`"]),
    ("memory_delete", {"memory_id": 1}, ["`memory_id`"]),
])
def test_bad_calls_are_errors_the_model_can_read_and_change_nothing(name, arguments, words):
    bank = Bank()
    bank.apply("memory_save_knowledge", {"content": "kept"}, 0)
    bank.apply("memory_update_status", {"content": "notes"}, 0)
    before = (bank.status, dict(bank.knowledge), dict(bank.procedural), bank.version)
    ok, result = bank.apply(name, arguments, 1, "bad json")
    assert not ok and result.startswith("error:")
    for w in words:
        assert w in result
    assert (bank.status, dict(bank.knowledge), dict(bank.procedural), bank.version) == before


def test_bm25_ranks_shared_rare_terms_first_and_follows_deletions():
    idx = BM25Index()
    idx.add("K1", "customer email diego.alvarez@example.net")
    idx.add("K2", "the customer wants a city bike size M")
    idx.add("K3", "the customer pays with a Discover card")
    idx.add("P1", "search_available_bikes failed: start_date and end_date are required")
    assert terms("HAT-123 user_id Élan") == ["hat", "123", "user", "id", "élan"]
    assert idx.top(terms("which card? discover"), 1) == ["K3"]
    assert idx.top(terms("search bikes end_date"), 2)[0] == "P1"
    scores = idx.scores(terms("customer discover"))
    assert scores["K3"] > scores["K1"] > 0  # 'discover' is rare, 'customer' is everywhere
    idx.remove("K3")
    assert "K3" not in idx.scores(terms("discover")) and idx.top(terms("discover"), 3, positive_only=True) == []
    # a tie (no shared term) goes to the newer entry
    assert idx.top(terms("zeppelin"), 2) == ["P1", "K2"]
    # the same term once each: the shorter entry ranks first; ``keys`` restricts the ranking
    assert idx.top(terms("customer"), 5, keys=["K1", "K2"]) == ["K1", "K2"]


def test_bm25_matches_the_formula_on_a_small_case():
    import math

    idx = BM25Index(k1=1.5, b=0.75)
    idx.add("a", "red red blue")
    idx.add("b", "green")
    n, df, avg = 2, 1, 2.0
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    norm = 1.5 * (1 - 0.75 + 0.75 * 3 / avg)
    assert idx.scores(["red"])["a"] == pytest.approx(idf * 2 * 2.5 / (2 + norm))
    assert idx.scores(["red"])["b"] == 0.0


@pytest.mark.parametrize("content, parsed, reminder", [
    ("<no_intervention/>", "no_intervention", None),
    ("<no_intervention />", "no_intervention", None),
    ("<context_for_action>The customer asked for size M.</context_for_action>", "reminder",
     "The customer asked for size M."),
    ("Thinking...\n<context_for_action>\n  Two tries failed.\n</context_for_action>", "reminder", "Two tries failed."),
    ("<context_for_action>  </context_for_action>", "empty", None),
    ("<context_for_action>x</context_for_action><no_intervention/>", "conflicting", None),
    ("I would remind the agent about the size", "unparseable", None),
    ("<context_for_action>unterminated", "unparseable", None),
    (None, "unparseable", None),
])
def test_decision_parsing_treats_everything_but_a_reminder_as_silence(content, parsed, reminder):
    assert prompts.parse_decision(content) == (parsed, reminder)


def test_settings_defaults_and_errors_naming_the_setting():
    s = parse_settings({})
    assert (s.mode, s.interval, s.window, s.injection, s.retrieval_k, s.max_output_chars) == (
        "selective", 1, 8, "transient_system", 5, 1000)
    assert s.placement == "system" and parse_settings({"injection": "user_append"}).placement == "user_append"
    for options, words in [({"interval": 0}, ["`interval`", ">= 1"]), ({"window": 0}, ["`window`"]),
                           ({"mode": "everything"}, ["`mode`", "selective, full_bank, always_inject, advisor, retrieval"]),
                           ({"injection": "system"}, ["`injection`", "transient_system, user_append"]),
                           ({"interval": "2"}, ["`interval`"]), ({"interval": 1.5}, ["`interval`"]),
                           ({"retrieval_k": 0}, ["`retrieval_k`"]), ({"budget": 3}, ["`budget`", "not a setting"])]:
        with pytest.raises(ConfigError) as err:
            parse_settings(options, "arm 'm'")
        for w in words:
            assert w in str(err.value), (options, str(err.value))
        assert str(err.value).startswith("arm 'm': ")
    assert isinstance(parse_settings({"mode": "retrieval", "retrieval_k": 3}), MemorySettings)


def test_the_registered_factory_needs_the_memory_role_and_checks_settings_when_building():
    factory = REGISTRY["memory"]
    assert factory.roles == ("memory",)
    with pytest.raises(ConfigError, match="`interval`"):
        build_plugin(PluginSettings(kind="memory", interval=0), None)
    assert factory.check(PluginSettings(kind="memory", mode="advisor")).mode == "advisor"
    # built for a trial, the error names the arm
    with pytest.raises(ConfigError) as err:
        build_plugin(PluginSettings(kind="memory", window=0), ctx_for(None))
    assert str(err.value).startswith("arm 'mem': ") and "`window`" in str(err.value)
    plugin = build_plugin(PluginSettings(kind="memory", mode="retrieval"), ctx_for(None))
    assert plugin.name == "memory" and plugin.settings.mode == "retrieval" and len(plugin.bank) == 0
