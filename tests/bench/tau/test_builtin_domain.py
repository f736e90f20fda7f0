"""The built-in bikeshop domain: data in tau2-bench's formats, gold replay, tools, schemas."""

from __future__ import annotations

import json

import pytest

from agentrig.bench.tau import data
from agentrig.bench.tau.domains import available_domains, get_domain
from agentrig.bench.tau.domains.bikeshop import DATA_DIR, BikeshopTools
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import judge_state, replay_gold
from agentrig.bench.tau.state import fresh_copy

SPEC = get_domain("bikeshop")
TASKS = data.load_tasks(None, "bikeshop")
BY_ID = {t.id: t for t in TASKS}
WRITE_TOOLS = {s.name for s in BikeshopTools.tool_specs() if s.write}

# the write each refusal task forbids: doing it must cost the DB component
FORBIDDEN = {
    "refuse_cancel_active_rental": ("cancel_rental", {"rental_id": "RN-20955"}),
    "refuse_ebike_minor": ("book_rental", {"customer_id": "CU-5362", "bike_id": "BK-EB-01", "start_date": "2025-06-21",
                                           "end_date": "2025-06-21", "payment_method_id": "card_5362"}),
    "refuse_cancel_repair_in_progress": ("cancel_repair", {"repair_id": "WO-5520"}),
    "refuse_caller_not_account_holder": ("cancel_rental", {"rental_id": "RN-20902"}),
}


def writes_of(task) -> list[str]:
    return [a.name for a in task.gold_actions if a.name in WRITE_TOOLS]


@pytest.fixture()
def env() -> Environment:
    return Environment.fresh(SPEC)


def call_ok(env: Environment, name: str, **args):
    out = env.call("assistant", name, args)
    assert not out.error, out.text
    return out.result


def call_err(env: Environment, name: str, **args) -> str:
    before = fresh_copy(env.agent_state())
    out = env.call("assistant", name, args)
    assert out.error, out.text
    assert out.text.startswith("Error: ")
    assert env.agent_state() == before, f"{name} changed the state although it failed"
    return out.text


# ---- data files, in tau2-bench's formats ---------------------------------------------------------


def test_registered_and_shipped_inside_the_package():
    assert "bikeshop" in available_domains()
    assert SPEC.builtin_dir == DATA_DIR
    for name in ("db.json", "policy.md", "tasks.json", "split_tasks.json"):
        assert (DATA_DIR / name).is_file(), name
    assert data.domain_dir(None, "bikeshop") == DATA_DIR


def test_found_without_the_data_root_holding_it(tau2_root):
    assert not (tau2_root / "domains" / "bikeshop").exists()
    assert data.domain_dir(tau2_root, "bikeshop") == DATA_DIR
    assert [t.id for t in data.load_tasks(tau2_root, "bikeshop")] == list(BY_ID)


def test_task_file_uses_only_tau2_keys(tau2_root):
    """Every key of our tasks.json is one that tau2-bench's own task files use at that level."""
    seen: dict[str, set] = {k: set() for k in ("task", "criteria", "action", "assertion", "scenario", "instructions", "initial")}
    for domain in ("airline", "retail", "telecom", "mock"):
        for t in json.loads((tau2_root / "domains" / domain / "tasks.json").read_text()):
            seen["task"] |= set(t)
            seen["scenario"] |= set(t["user_scenario"])
            if isinstance(t["user_scenario"]["instructions"], dict):
                seen["instructions"] |= set(t["user_scenario"]["instructions"])
            seen["initial"] |= set(t.get("initial_state") or {})
            ec = t.get("evaluation_criteria") or {}
            seen["criteria"] |= set(ec)
            for a in ec.get("actions") or []:
                seen["action"] |= set(a)
            for a in ec.get("env_assertions") or []:
                seen["assertion"] |= set(a)
    ours = json.loads((DATA_DIR / "tasks.json").read_text())
    for t in ours:
        assert set(t) <= seen["task"], t["id"]
        assert set(t["user_scenario"]) <= seen["scenario"]
        ins = t["user_scenario"]["instructions"]
        assert isinstance(ins, dict) and set(ins) == seen["instructions"], t["id"]
        assert set(t["initial_state"] or {}) <= seen["initial"]
        ec = t["evaluation_criteria"]
        assert set(ec) <= seen["criteria"]
        for a in ec["actions"]:
            assert set(a) <= seen["action"]
        for a in ec.get("env_assertions") or []:
            assert set(a) <= seen["assertion"]
    splits = json.loads((DATA_DIR / "split_tasks.json").read_text())
    upstream = json.loads((tau2_root / "domains" / "airline" / "split_tasks.json").read_text())
    assert type(splits) is type(upstream) and all(isinstance(v, list) for v in splits.values())


def test_tasks_validate_and_are_complete():
    assert len(TASKS) >= 12
    for t in TASKS:
        ins = t.user_scenario.instructions
        assert not isinstance(ins, str), t.id
        assert ins.domain == "bikeshop"
        assert ins.reason_for_call and ins.known_info and ins.task_instructions, t.id
        assert t.user_scenario.persona, t.id
        assert t.description and t.description.purpose, t.id
        assert t.evaluation_criteria is not None and "DB" in t.reward_basis, t.id
        assert t.gold_actions, t.id
        ids = [a.action_id for a in t.gold_actions]
        assert len(set(ids)) == len(ids), t.id
        for a in t.gold_actions:
            assert BikeshopTools.has_tool(a.name), (t.id, a.name)


def test_task_coverage():
    crit = {t.id: t.evaluation_criteria for t in TASKS}
    assert any(len(writes_of(t)) == 1 for t in TASKS), "a permitted single write"
    assert sum(len(writes_of(t)) >= 2 for t in TASKS) >= 2, "compound requests"
    assert any(c.communicate_info for c in crit.values())
    assert any(c.nl_assertions for c in crit.values())
    assert any("NL_ASSERTION" in t.reward_basis for t in TASKS)
    assert any("ACTION" in t.reward_basis for t in TASKS)
    assert any(c.env_assertions for c in crit.values())
    assert any(t.initial_state and t.initial_state.initialization_data for t in TASKS)
    assert any(t.initial_state and t.initial_state.initialization_actions for t in TASKS)
    assert set(FORBIDDEN) <= set(BY_ID)


def test_splits():
    splits = data.load_splits(None, "bikeshop")
    assert set(splits) == {"base", "train", "test"}
    assert splits["base"] == [t.id for t in TASKS]
    assert not set(splits["train"]) & set(splits["test"])
    assert sorted(splits["train"] + splits["test"]) == sorted(splits["base"])
    assert [t.id for t in data.select_tasks(None, "bikeshop", split="test")] == splits["test"]


def test_policy_text():
    policy = data.load_policy(None, "bikeshop")
    for rule in ("Verify identity", "14 days", "18 or older", "Mondays", "cancellation fee", "transfer_to_human_agents"):
        assert rule in policy, rule


# ---- gold replay and judging -------------------------------------------------------------------


@pytest.mark.parametrize("task_id", list(BY_ID))
def test_gold_replays_cleanly(task_id):
    replay = replay_gold(SPEC, None, BY_ID[task_id])
    assert [a.name for a in replay.actions if a.error] == []
    assert replay.init_problems == []
    assert replay.ok and all(replay.env_assertions)
    assert replay.judgement.db_reward == 1.0 and replay.judgement.env_reward == 1.0


@pytest.mark.parametrize("task_id", list(FORBIDDEN))
def test_refusal_tasks_have_no_write_and_punish_the_forbidden_one(task_id):
    task = BY_ID[task_id]
    assert writes_of(task) == []
    assert "DB" in task.reward_basis
    assert judge_state(SPEC, None, task, []).db_reward == 1.0
    name, args = FORBIDDEN[task_id]
    env = Environment.fresh(SPEC)
    assert not env.call("assistant", name, args).error, "the tool allows it: only the policy forbids it"
    assert judge_state(SPEC, None, task, [("assistant", name, args)]).db_reward == 0.0


@pytest.mark.parametrize("task_id", [t.id for t in TASKS if writes_of(t)])
def test_doing_nothing_fails_tasks_that_need_a_write(task_id):
    judgement = judge_state(SPEC, None, BY_ID[task_id], [])
    assert judgement.db_reward == 0.0 or judgement.env_reward == 0.0


def test_a_wrong_write_fails_a_write_task():
    task = BY_ID["extend_capped_at_14_days"]  # the customer asks for 18 days; policy caps at 14
    too_long = [("assistant", "extend_rental", {"rental_id": "RN-20977", "new_end_date": "2025-07-05"})]
    assert judge_state(SPEC, None, task, too_long).db_reward == 0.0
    compound = BY_ID["swap_road_for_ebike"]
    only_cancel = [("assistant", "cancel_rental", {"rental_id": "RN-20871"})]
    judgement = judge_state(SPEC, None, compound, only_cancel)
    assert judgement.db_reward == 0.0 and judgement.env_assertions == [True, False]


def test_compound_order_does_not_matter():
    task = BY_ID["swap_road_for_ebike"]
    book, cancel = [("assistant", a.name, a.arguments) for a in task.gold_actions if a.name in WRITE_TOOLS][::-1]
    assert book[1] == "book_rental"
    assert judge_state(SPEC, None, task, [book, cancel]).db_reward == 1.0
    repair = BY_ID["book_repair_not_on_monday"]  # the other service first: same work order
    calls = [
        ("assistant", "book_repair", {"customer_id": "CU-5733", "own_bike_id": "OB-5733-1",
                                      "service_code": "GEAR-INDEX", "dropoff_date": "2025-06-17"}),
        ("assistant", "add_repair_service", {"repair_id": "WO-5546", "service_code": "BRAKE-BLEED"}),
    ]
    assert judge_state(SPEC, None, repair, calls).db_reward == 1.0


def test_initialization_data_moves_the_shop_date():
    task = BY_ID["late_cancel_club_no_fee"]
    env = Environment.fresh(SPEC)
    env.set_state(task, strict=True)
    assert call_ok(env, "get_today") == {"today": "2025-06-19", "weekday": "Thursday"}
    assert env.agent_state()["rentals"]["RN-20933"]["status"] == "returned"
    # the same cancellation by a non-member that day costs one day
    env.agent_state()["customers"]["CU-4417"]["membership"] = "none"
    assert call_ok(env, "cancel_rental", rental_id="RN-20871")["cancellation_fee"] == 45


def test_initialization_action_takes_the_bike_out_of_service():
    env = Environment.fresh(SPEC)
    env.set_state(BY_ID["road_bike_in_maintenance"], strict=True)
    free = call_ok(env, "search_available_bikes", category="road", start_date="2025-06-28", end_date="2025-06-29")
    assert [b["bike_id"] for b in free] == ["BK-RD-01", "BK-RD-03"]


# ---- schemas -----------------------------------------------------------------------------------


def test_tool_schemas():
    specs = {s.name: s for s in BikeshopTools.tool_specs()}
    assert len(specs) >= 8 and len(WRITE_TOOLS) >= 4
    assert WRITE_TOOLS == {"book_rental", "cancel_rental", "extend_rental", "book_repair",
                           "add_repair_service", "cancel_repair", "update_customer_phone"}
    assert "transfer_to_human_agents" in specs and not specs["transfer_to_human_agents"].write
    for name, spec in specs.items():
        assert spec.description and "Args:" not in spec.description, name
        props = spec.parameters["properties"]
        for pname, prop in props.items():
            assert prop.get("description"), (name, pname)
            assert prop.get("type") in ("string", "integer"), (name, pname)
        assert sorted(spec.parameters.get("required", [])) == sorted(props), name
        schema = spec.openai_schema()
        assert schema["function"]["name"] == name
    for func in ("set_bike_status", "assert_rental_status", "assert_store_credit_balance", "assert_bike_booked",
                 "assert_repair_quote", "assert_no_open_rentals"):
        assert not BikeshopTools.has_tool(func) and callable(getattr(BikeshopTools, func))


# ---- tools: reads ------------------------------------------------------------------------------


def test_get_today_comes_from_the_db(env):
    assert call_ok(env, "get_today") == {"today": "2025-06-12", "weekday": "Thursday"}
    env.agent_state()["shop"]["today"] = "2025-06-16"
    assert call_ok(env, "get_today")["weekday"] == "Monday"


def test_find_customer(env):
    assert call_ok(env, "find_customer_by_email", email=" Marta.Ruiz@FASTMAIL.com ") == "CU-4417"
    assert env.call("assistant", "find_customer_by_email", {"email": "marta.ruiz@fastmail.com"}).text == "CU-4417"
    assert call_ok(env, "find_customer_by_phone", phone="(415) 555 0133") == "CU-5190"
    assert call_err(env, "find_customer_by_email", email="nobody@example.com") == "Error: Customer not found"
    assert call_err(env, "find_customer_by_phone", phone="415-555-9999") == "Error: Customer not found"


def test_get_details(env):
    c = call_ok(env, "get_customer_details", customer_id="CU-5190")
    assert c["payment_methods"]["credit_5190"]["balance"] == 120
    assert c["rental_ids"] == ["RN-20933", "RN-20940"]
    assert call_ok(env, "get_bike_details", bike_id="BK-EB-03")["daily_rate"] == 70
    assert call_ok(env, "get_rental_details", rental_id="RN-20871")["total"] == 122
    assert call_ok(env, "get_repair_details", repair_id="WO-5520")["quote"] == 160
    assert call_err(env, "get_customer_details", customer_id="CU-0001") == "Error: Customer CU-0001 not found"
    assert call_err(env, "get_bike_details", bike_id="BK-XX-99") == "Error: Bike BK-XX-99 not found"
    assert call_err(env, "get_rental_details", rental_id="RN-1") == "Error: Rental RN-1 not found"
    assert call_err(env, "get_repair_details", repair_id="WO-1") == "Error: Repair order WO-1 not found"
    assert "missing 1 required" in call_err(env, "get_customer_details")  # an error result, not a crash


def test_search_available_bikes(env):
    def ids(category, start, end):
        return [b["bike_id"] for b in call_ok(env, "search_available_bikes", category=category, start_date=start, end_date=end)]

    # MTB-01 and MTB-02 are booked that weekend, MTB-03 is in maintenance
    assert ids("mountain", "2025-06-14", "2025-06-15") == []
    assert ids("mountain", "2025-06-16", "2025-06-16") == ["BK-MTB-01", "BK-MTB-02"]
    assert ids("city", "2025-06-16", "2025-06-17") == ["BK-CTY-02", "BK-CTY-03"]  # CTY-01 out until the 16th
    assert ids("ebike", "2025-06-14", "2025-06-25") == ["BK-EB-03"]
    assert "Unknown category 'bmx'" in call_err(env, "search_available_bikes", category="bmx", start_date="2025-06-20", end_date="2025-06-21")
    assert "not a valid date" in call_err(env, "search_available_bikes", category="city", start_date="20/06/2025", end_date="2025-06-21")
    assert "is before start_date" in call_err(env, "search_available_bikes", category="city", start_date="2025-06-21", end_date="2025-06-20")


def test_quote_rental(env):
    q = call_ok(env, "quote_rental", customer_id="CU-4417", bike_id="BK-RD-03", start_date="2025-06-20", end_date="2025-06-22")
    assert (q["days"], q["gross"], q["discount"], q["total"]) == (3, 180, 18, 162)
    q = call_ok(env, "quote_rental", customer_id="CU-5023", bike_id="BK-RD-03", start_date="2025-06-20", end_date="2025-06-22")
    assert q["discount"] == 0 and q["total"] == 180
    assert "not found" in call_err(env, "quote_rental", customer_id="CU-5023", bike_id="BK-NOPE", start_date="2025-06-20", end_date="2025-06-22")


def test_list_repair_services(env):
    services = call_ok(env, "list_repair_services")
    assert {s["code"] for s in services} >= {"FLAT-FIX", "TUNE-BASIC", "BRAKE-BLEED", "GEAR-INDEX", "EBIKE-DIAG"}
    assert all(isinstance(s["price"], int) for s in services)


def test_transfer(env):
    assert env.call("assistant", "transfer_to_human_agents", {"summary": "bent derailleur"}).text == "Transfer successful"


# ---- tools: rentals ----------------------------------------------------------------------------


def test_book_rental(env):
    r = call_ok(env, "book_rental", customer_id="CU-5840", bike_id="BK-CTY-01", start_date="2025-06-19",
                end_date="2025-06-20", payment_method_id="card_5840")
    assert r["rental_id"] == "RN-20982" and r["status"] == "reserved" and r["total"] == 50
    assert r["created_date"] == "2025-06-12"
    assert r["charges"] == [{"amount": 50, "payment_method_id": "card_5840", "note": "rental"}]
    assert env.agent_state()["customers"]["CU-5840"]["rental_ids"][-1] == "RN-20982"
    assert "not available" in call_err(env, "book_rental", customer_id="CU-5023", bike_id="BK-CTY-01",
                                       start_date="2025-06-20", end_date="2025-06-21", payment_method_id="card_5023")
    # store credit pays when it covers the total: 12 less the 1 dollar club discount
    r = call_ok(env, "book_rental", customer_id="CU-4417", bike_id="BK-KID-02", start_date="2025-06-14",
                end_date="2025-06-14", payment_method_id="credit_4417")
    assert r["rental_id"] == "RN-20983" and r["total"] == 11
    assert env.agent_state()["customers"]["CU-4417"]["payment_methods"]["credit_4417"]["balance"] == 19


@pytest.mark.parametrize("args, message", [
    ({"bike_id": "BK-RD-03", "payment_method_id": "credit_5601"}, "not enough"),
    ({"start_date": "2025-06-11", "end_date": "2025-06-12"}, "in the past"),
    ({"start_date": "2025-06-16", "end_date": "2025-06-17"}, "closed on Mondays"),
    ({"bike_id": "BK-MTB-03"}, "not available"),
    ({"payment_method_id": "card_4417"}, "Payment method card_4417 not found for customer CU-5601"),
    ({"end_date": "2025-06-19"}, "is before start_date"),
    ({"start_date": "2025-6-20"}, "not a valid date"),
    ({"customer_id": "CU-9"}, "Customer CU-9 not found"),
])
def test_book_rental_errors(env, args, message):
    base = {"customer_id": "CU-5601", "bike_id": "BK-MTB-01", "start_date": "2025-06-20", "end_date": "2025-06-21",
            "payment_method_id": "card_5601"}
    assert message in call_err(env, "book_rental", **{**base, **args})


def test_cancel_rental_refunds(env):
    # 13 days ahead, paid with store credit: everything back as store credit
    r = call_ok(env, "cancel_rental", rental_id="RN-20940")
    assert r["status"] == "cancelled" and r["cancellation_fee"] == 0
    assert r["refunds"] == [{"amount": 165, "payment_method_id": "credit_5190", "note": "cancellation"}]
    assert env.agent.assert_store_credit_balance("CU-5190", 285)
    # starts tomorrow, no membership: first day kept
    r = call_ok(env, "cancel_rental", rental_id="RN-20902")
    assert r["cancellation_fee"] == 40 and r["refunds"][0]["amount"] == 80
    # starts tomorrow, club member: no fee
    r = call_ok(env, "cancel_rental", rental_id="RN-20960")
    assert r["cancellation_fee"] == 0 and r["refunds"][0]["amount"] == 99
    # a one-day rental cancelled late: the fee is all of it, nothing refunded
    env.agent_state()["shop"]["today"] = "2025-06-21"
    r = call_ok(env, "cancel_rental", rental_id="RN-20970")
    assert r["cancellation_fee"] == 12 and r["refunds"] == []
    assert "cancelled and cannot be cancelled" in call_err(env, "cancel_rental", rental_id="RN-20940")
    assert "returned and cannot be cancelled" in call_err(env, "cancel_rental", rental_id="RN-20811")
    assert "not found" in call_err(env, "cancel_rental", rental_id="RN-00000")


def test_extend_rental(env):
    r = call_ok(env, "extend_rental", rental_id="RN-20933", new_end_date="2025-06-18")
    assert (r["end_date"], r["days"], r["total"]) == ("2025-06-18", 9, 225)
    assert r["charges"][-1] == {"amount": 50, "payment_method_id": "card_5190", "note": "extension"}
    r = call_ok(env, "extend_rental", rental_id="RN-20977", new_end_date="2025-07-01")  # club: 175 less 17
    assert r["charges"][-1]["amount"] == 158 and r["days"] == 14
    assert "must be after" in call_err(env, "extend_rental", rental_id="RN-20933", new_end_date="2025-06-18")
    assert "returned and cannot be extended" in call_err(env, "extend_rental", rental_id="RN-20850", new_end_date="2025-06-30")
    # paid with store credit: 3 more days (165) exceed the 120 left
    assert "not enough" in call_err(env, "extend_rental", rental_id="RN-20940", new_end_date="2025-06-30")
    call_ok(env, "book_rental", customer_id="CU-5840", bike_id="BK-CTY-01", start_date="2025-06-20",
            end_date="2025-06-20", payment_method_id="card_5840")
    assert "not available from 2025-06-19 to 2025-06-21" in call_err(env, "extend_rental", rental_id="RN-20933", new_end_date="2025-06-21")
    assert "not a valid date" in call_err(env, "extend_rental", rental_id="RN-20933", new_end_date="tomorrow")


# ---- tools: repairs and account ----------------------------------------------------------------


def test_book_repair(env):
    r = call_ok(env, "book_repair", customer_id="CU-5733", own_bike_id="OB-5733-1", service_code="TUNE-BASIC",
                dropoff_date="2025-06-14")
    # Saturday + 2 days is a Monday: ready on the Tuesday
    assert (r["repair_id"], r["quote"], r["ready_date"], r["status"]) == ("WO-5546", 65, "2025-06-17", "booked")
    assert env.agent_state()["customers"]["CU-5733"]["repair_ids"][-1] == "WO-5546"
    assert "already has an open work order, WO-5546" in call_err(
        env, "book_repair", customer_id="CU-5733", own_bike_id="OB-5733-1", service_code="FLAT-FIX", dropoff_date="2025-06-20")
    assert "not one of customer CU-5733's bikes" in call_err(
        env, "book_repair", customer_id="CU-5733", own_bike_id="OB-4417-1", service_code="FLAT-FIX", dropoff_date="2025-06-20")
    assert "Service PAINT not found" in call_err(
        env, "book_repair", customer_id="CU-5733", own_bike_id="OB-5733-2", service_code="PAINT", dropoff_date="2025-06-20")
    assert "closed on Mondays" in call_err(
        env, "book_repair", customer_id="CU-5733", own_bike_id="OB-5733-2", service_code="FLAT-FIX", dropoff_date="2025-06-23")
    assert "in the past" in call_err(
        env, "book_repair", customer_id="CU-5733", own_bike_id="OB-5733-2", service_code="FLAT-FIX", dropoff_date="2025-06-01")


def test_add_repair_service(env):
    r = call_ok(env, "add_repair_service", repair_id="WO-5512", service_code="FLAT-FIX")
    assert r["services"] == ["FLAT-FIX", "TUNE-BASIC"] and r["quote"] == 80 and r["ready_date"] == "2025-06-19"
    r = call_ok(env, "add_repair_service", repair_id="WO-5537", service_code="TUNE-FULL")  # Fri + 4 days = Tue
    assert r["quote"] == 155 and r["ready_date"] == "2025-06-17"
    assert "already on repair order" in call_err(env, "add_repair_service", repair_id="WO-5512", service_code="FLAT-FIX")
    assert "ready; services can no longer be added" in call_err(env, "add_repair_service", repair_id="WO-5531", service_code="FLAT-FIX")
    assert "Service NOPE not found" in call_err(env, "add_repair_service", repair_id="WO-5512", service_code="NOPE")


def test_cancel_repair(env):
    assert call_ok(env, "cancel_repair", repair_id="WO-5540")["status"] == "cancelled"
    assert "cancelled and cannot be cancelled" in call_err(env, "cancel_repair", repair_id="WO-5540")
    assert "ready and cannot be cancelled" in call_err(env, "cancel_repair", repair_id="WO-5531")
    assert "collected and cannot be cancelled" in call_err(env, "cancel_repair", repair_id="WO-5502")


def test_update_customer_phone(env):
    assert call_ok(env, "update_customer_phone", customer_id="CU-5023", phone="415-555-0187")["phone"] == "415-555-0187"
    assert call_ok(env, "find_customer_by_phone", phone="415-555-0187") == "CU-5023"
    assert "must look like" in call_err(env, "update_customer_phone", customer_id="CU-5023", phone="5550187")
    assert "already on another customer's account" in call_err(env, "update_customer_phone", customer_id="CU-5023", phone="415-555-0142")


def test_assertion_and_initialization_functions(env):
    tk = env.agent
    assert tk.assert_rental_status("RN-20955", "active") is True
    assert tk.assert_rental_status("RN-20955", "reserved") is False
    assert tk.assert_bike_booked("BK-RD-02", "CU-4417", "2025-06-20", "2025-06-22") is True
    assert tk.assert_bike_booked("BK-RD-02", "CU-4417", "2025-06-20", "2025-06-21") is False
    assert tk.assert_repair_quote("WO-5520", 160) is True
    assert tk.assert_no_open_rentals("CU-5488") is False
    assert tk.assert_no_open_rentals("CU-5362") is True
    env.run_function("assistant", "set_bike_status", {"bike_id": "BK-CTY-03", "status": "maintenance"})
    assert env.agent_state()["bikes"]["BK-CTY-03"]["status"] == "maintenance"
    with pytest.raises(Exception, match="Unknown bike status"):
        env.run_function("assistant", "set_bike_status", {"bike_id": "BK-CTY-03", "status": "stolen"})


def test_each_trial_gets_its_own_state():
    a, b = Environment.fresh(SPEC), Environment.fresh(SPEC)
    call_ok(a, "cancel_rental", rental_id="RN-20940")
    assert b.agent_state()["rentals"]["RN-20940"]["status"] == "reserved"
    assert Environment.fresh(SPEC).agent_state() == b.agent_state()
