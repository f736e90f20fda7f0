"""The telecom domain on the real tau2-bench data: gold replay of every task, the phone's state
model, the carrier<->phone sync and each agent tool's error conditions."""

from __future__ import annotations

import json

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.domains.telecom.records import normalize_db, normalize_user_db
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import replay_gold
from agentrig.bench.tau.state import parse_db_file
from agentrig.errors import DataError

SPEC = get_domain("telecom")
CUSTOMER, LINE, NUMBER = "C1001", "L1002", "555-123-2002"  # John Smith, Premium Plan (15 GB)


@pytest.fixture()
def env(tau2_root):
    e = Environment.fresh(SPEC, tau2_root / "domains" / "telecom")
    e.run_function("user", "set_user_info", {"name": "John Smith", "phone_number": NUMBER})
    return e


def agent(env, name, **arguments):
    return env.call("assistant", name, arguments)


def user(env, name, **arguments):
    out = env.call("user", name, arguments)
    assert not out.error, out.text
    return out.text


def fn(env, name, **arguments):
    return env.run_function("user", name, arguments)


def err(env, name, **arguments):
    out = agent(env, name, **arguments)
    assert out.error and out.text.startswith("Error: "), out.text
    return out.text[len("Error: "):]


def device(env):
    return env.user_state()["device"]


def speed(env):
    return user(env, "run_speed_test")


# ---- tool sets --------------------------------------------------------------------------------


def test_tool_sets_and_write_flags():
    agent_tools = {s.name: s.write for s in SPEC.agent_toolkit.tool_specs()}
    assert set(agent_tools) == {
        "get_customer_by_phone", "get_customer_by_id", "get_customer_by_name", "get_details_by_id",
        "suspend_line", "resume_line", "get_bills_for_customer", "send_payment_request",
        "get_data_usage", "enable_roaming", "disable_roaming", "transfer_to_human_agents", "refuel_data",
    }
    assert {n for n, w in agent_tools.items() if w} == {
        "suspend_line", "resume_line", "send_payment_request", "enable_roaming", "disable_roaming", "refuel_data",
    }
    user_tools = {s.name: s.write for s in SPEC.user_toolkit.tool_specs()}
    assert len(user_tools) == 30
    assert {n for n, w in user_tools.items() if w} == {
        "set_network_mode_preference", "toggle_airplane_mode", "reseat_sim_card", "toggle_data",
        "toggle_roaming", "toggle_data_saver_mode", "set_apn_settings", "reset_apn_settings",
        "toggle_wifi", "toggle_wifi_calling", "connect_vpn", "disconnect_vpn",
        "grant_app_permission", "reboot_device", "make_payment",
    }
    # task-only functions are not offered as tools
    assert not SPEC.user_toolkit.has_tool("break_apn_settings")
    assert not SPEC.agent_toolkit.has_tool("set_data_usage")


# ---- gold replay of every task ----------------------------------------------------------------


def test_every_gold_action_succeeds_and_every_env_assertion_holds(tau2_root):
    directory = tau2_root / "domains" / "telecom"
    tasks = load_tasks(tau2_root, "telecom")
    assert tasks
    user_side = 0
    failures = []  # the timing of this replay is in perf/gold_replay.py
    for task in tasks:
        replay = replay_gold(SPEC, directory, task)
        user_side += sum(a.requestor == "user" for a in replay.actions)
        errors = [f"{a.name}: {a.text}" for a in replay.actions if a.error]
        if errors or not all(replay.env_assertions) or replay.init_problems:
            failures.append((task.id, errors, replay.env_assertions, replay.init_problems))
        assert len(replay.env_assertions) == len(task.evaluation_criteria.env_assertions or [])
    assert not failures, failures[:5]
    assert user_side > 0  # most gold fixes are done on the phone


def test_without_the_fix_the_env_assertions_fail(tau2_root):
    """The anchors can fail: with no gold actions, the broken phone of a task stays broken."""
    directory = tau2_root / "domains" / "telecom"
    task = next(t for t in load_tasks(tau2_root, "telecom") if t.evaluation_criteria.env_assertions)
    e = Environment.fresh(SPEC, directory)
    e.set_state(task)
    assert not all(e.check_assertion(a) for a in task.evaluation_criteria.env_assertions)


# ---- the state: structure as tau2's models dump it --------------------------------------------


def test_user_state_has_tau2_structure(tau2_root):
    raw = parse_db_file(tau2_root / "domains" / "telecom" / "user_db.toml")
    state = normalize_user_db(raw)
    assert list(state) == ["device", "surroundings"]
    dev = state["device"]
    assert dev["wifi_ssid"] is None and dev["vpn_details"] is None
    assert dev["active_apn_settings"] == {
        "apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
        "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None,
    }
    assert list(dev)[:3] == ["sim_card_status", "sim_card_missing", "airplane_mode"]
    assert state["surroundings"] == {
        "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
        "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
        "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None,
    }
    json.dumps(state)  # plain data
    assert normalize_user_db(state) == state  # idempotent


def test_agent_state_defaults_and_bad_data(tau2_root):
    db = normalize_db(parse_db_file(tau2_root / "domains" / "telecom" / "db.toml"))
    assert list(db)[:5] == ["plans", "customers", "lines", "bills", "devices"]
    line = db["lines"][0]
    assert "suspension_start_date" in line and list(line)[0] == "line_id"
    assert normalize_db(db) == db
    with pytest.raises(DataError, match="status"):
        normalize_db({"lines": [{**line, "status": "Sleeping"}]})
    with pytest.raises(DataError, match="colour"):
        normalize_user_db({"device": {"colour": "red"}})


# ---- the phone's state model ------------------------------------------------------------------


def test_default_phone_is_connected_on_5g_with_excellent_speed(env):
    # the db file's phone shows a good 5G signal until its first network search
    assert "Speed Test Result: 220.00 Mbps (Excellent)" in speed(env)  # 275 * good 0.8
    assert user(env, "check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
    fn(env, "simulate_network_search")  # the place has an excellent 5G signal
    assert "Speed Test Result: 275.00 Mbps (Excellent)" in speed(env)
    assert user(env, "check_status_bar") == "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
    assert fn(env, "assert_internet_speed", expected_speed=200, expected_desc="excellent")
    assert user(env, "can_send_mms") == "Your messaging app can send MMS messages."


def test_airplane_mode_means_no_service(env):
    user(env, "connect_vpn")
    assert "Airplane Mode is now ON." in user(env, "toggle_airplane_mode")
    d = device(env)
    assert (d["network_connection_status"], d["network_technology_connected"], d["network_signal_strength"]) == (
        "no_service", "none", "none")
    assert d["vpn_connected"] is False  # airplane mode drops the VPN
    assert speed(env) == "Speed test failed: No Connection."
    assert user(env, "check_status_bar").startswith("Status Bar: ✈️ Airplane Mode")
    assert user(env, "toggle_wifi").startswith("Cannot change Wi-Fi settings while Airplane Mode is ON.")
    assert fn(env, "assert_service_status", expected_status="no_service")
    user(env, "toggle_airplane_mode")
    assert fn(env, "assert_service_status", expected_status="connected")
    assert fn(env, "assert_mobile_data_status", expected_status=True)


def test_broken_apn_needs_reset_and_reboot(env):
    fn(env, "break_apn_settings")
    assert device(env)["network_connection_status"] == "no_service"
    assert not fn(env, "assert_mobile_data_status", expected_status=True)
    assert "APN settings will reset at reboot." in user(env, "reset_apn_settings")
    assert device(env)["network_connection_status"] == "no_service"  # not until the reboot
    assert user(env, "reboot_device").startswith("Resetting APN settings...\nRestarting network services...")
    assert device(env)["active_apn_settings"]["apn_name"] == "internet"
    assert fn(env, "assert_mobile_data_status", expected_status=True)


def test_data_usage_exceeded_blocks_data_until_refuel(env):
    env.run_function("assistant", "set_data_usage", {"customer_id": CUSTOMER, "line_id": LINE, "data_used_gb": 15.1})
    assert env.user_state()["surroundings"]["mobile_data_usage_exceeded"] is True
    assert speed(env) == "Speed test failed: No Connection."
    out = agent(env, "refuel_data", customer_id=CUSTOMER, line_id=LINE, gb_amount=2.0)
    assert json.loads(out.text) == {
        "message": "Successfully added 2.0 GB of data for line L1002 for $4.00",
        "new_data_refueling_gb": "2.0", "charge": "4.0",
    }
    assert env.user_state()["surroundings"]["mobile_data_usage_exceeded"] is False  # synced
    assert "(Excellent)" in speed(env)
    draft = next(b for b in env.agent_state()["bills"] if b["bill_id"] == "B1003")
    assert draft["line_items"][-1] == {
        "description": "Data refueling: 2.0 GB at $2.0/GB", "amount": 4.0, "date": "2025-02-25", "item_type": "Charge",
    }
    usage = json.loads(agent(env, "get_data_usage", customer_id=CUSTOMER, line_id=LINE).text)
    assert usage == {"line_id": LINE, "data_used_gb": "15.1", "data_limit_gb": "15.0",
                     "data_refueling_gb": "2.0", "cycle_end_date": "2025-02-28"}


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        ("4g_5g_preferred", "275.00 Mbps (Excellent)"),
        ("4g_only", "44.00 Mbps (Good)"),  # 55 * good 0.8
        ("3g_only", "1.50 Mbps (Poor)"),  # 3 * fair 0.5
        ("2g_only", "0.05 Mbps (Very Poor)"),  # 0.25 * poor 0.2
    ],
)
def test_speed_by_network_mode_and_signal(env, mode, text):
    assert f"Preferred Network Mode set to: {mode}" in user(env, "set_network_mode_preference", mode=mode)
    assert text in speed(env)


def test_speed_with_data_saver_poor_vpn_and_no_5g(env):
    fn(env, "simulate_network_search")
    fn(env, "turn_data_saver_mode_on")
    assert "55.00 Mbps (Good)" in speed(env)  # 275 * 0.2
    assert "🔽 Data Saver" in user(env, "check_status_bar")
    fn(env, "break_vpn")
    assert "5.50 Mbps (Fair)" in speed(env)  # 275 * 0.1 * 0.2
    assert "<PerformanceLevel.POOR: 'poor'>" in user(env, "check_vpn_status")
    assert fn(env, "assert_internet_not_excellent")
    user(env, "disconnect_vpn")
    user(env, "toggle_data_saver_mode")
    env.user_state()["surroundings"]["signal_strength"]["5G"] = "none"
    user(env, "reboot_device")
    assert device(env)["network_technology_connected"] == "4G"  # 4G/5G preferred falls back
    assert "44.00 Mbps (Good)" in speed(env)


def test_invalid_network_mode_is_refused_without_change(env):
    text = user(env, "set_network_mode_preference", mode="6g")
    assert text.startswith("Failed to set network mode: '6g' is not a valid option.")
    assert device(env)["network_mode_preference"] == "4g_5g_preferred"


def test_mms_needs_3g_permissions_mmsc_and_no_wifi_calling_mms(env):
    assert fn(env, "assert_can_send_mms", expected_status=True)
    user(env, "set_network_mode_preference", mode="2g_only")
    assert not fn(env, "assert_can_send_mms", expected_status=True)
    user(env, "set_network_mode_preference", mode="3g_only")
    assert fn(env, "assert_can_send_mms", expected_status=True)
    fn(env, "set_wifi_calling", enabled=True, mms_over_wifi=True)
    assert user(env, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned ON."
    assert not fn(env, "assert_can_send_mms", expected_status=True)
    user(env, "toggle_wifi_calling")
    ok, _ = fn(env, "remove_app_permission", app_name="messaging", permission="storage")
    assert ok and not fn(env, "assert_can_send_mms", expected_status=True)
    assert user(env, "check_app_permissions", app_name="messaging") == "App 'messaging' has permission for: sms, phone."
    assert user(env, "grant_app_permission", app_name="messaging", permission="Storage").startswith(
        "Success. Permission 'storage' granted to app 'messaging'.")
    assert user(env, "grant_app_permission", app_name="messaging", permission="camera").startswith("Error. ")
    assert user(env, "grant_app_permission", app_name="maps", permission="sms").startswith("Error. App 'maps' not found.")
    assert fn(env, "assert_can_send_mms", expected_status=True)
    fn(env, "break_apn_mms_setting")
    assert "MMSC URL (for picture messages): Not Set" in user(env, "check_apn_settings")
    user(env, "reset_apn_settings")
    user(env, "reboot_device")
    assert fn(env, "assert_can_send_mms", expected_status=True)


def test_sim_missing_is_fixed_by_reseat_but_a_locked_sim_is_not(env):
    fn(env, "unseat_sim_card")
    assert user(env, "check_sim_status") == "No SIM card detected in the phone."
    assert fn(env, "assert_service_status", expected_status="no_service")
    user(env, "reseat_sim_card")
    assert fn(env, "assert_service_status", expected_status="connected")
    fn(env, "lock_sim_card", mode="puk")
    assert "PUK" in user(env, "check_sim_status")
    user(env, "reseat_sim_card")
    user(env, "reboot_device")
    assert fn(env, "assert_service_status", expected_status="no_service")


def test_abroad_needs_phone_roaming_and_line_roaming(env):
    agent(env, "disable_roaming", customer_id=CUSTOMER, line_id=LINE)
    fn(env, "set_user_location", abroad=True)
    assert not fn(env, "assert_mobile_data_status", expected_status=True)
    user(env, "toggle_roaming")
    assert device(env)["roaming_enabled"] is True
    assert not fn(env, "assert_mobile_data_status", expected_status=True)  # the line does not allow it
    assert agent(env, "enable_roaming", customer_id=CUSTOMER, line_id=LINE).text == "Roaming enabled successfully"
    assert env.user_state()["surroundings"]["roaming_allowed"] is True
    assert fn(env, "assert_mobile_data_status", expected_status=True)
    assert agent(env, "enable_roaming", customer_id=CUSTOMER, line_id=LINE).text == "Roaming was already enabled"


def test_overdue_bill_payment_and_resume(env):
    env.run_function("assistant", "suspend_line_for_overdue_bill", {
        "customer_id": CUSTOMER, "line_id": LINE, "new_bill_id": "B1234321", "contract_ended": False})
    fn(env, "simulate_network_search")
    assert fn(env, "assert_service_status", expected_status="no_service")  # the line is suspended
    assert user(env, "check_payment_request") == "No payment request has been made."
    bill = json.loads(agent(env, "get_details_by_id", id="B1234321").text)
    assert (bill["status"], bill["total_due"], bill["period_start"], bill["due_date"]) == (
        "Overdue", 65.0, "2025-01-01", "2025-01-15")
    out = agent(env, "send_payment_request", customer_id=CUSTOMER, bill_id="B1234321")
    assert out.text == "Payment request sent to the customer for bill B1234321"
    assert user(env, "check_payment_request") == "You have a payment request for bill B1234321 of 65.0 USD."
    assert "already awaiting payment" in err(env, "send_payment_request", customer_id=CUSTOMER, bill_id="B1002")
    assert user(env, "make_payment") == "Payment of 65.0 USD has been made for bill B1234321."
    assert env.run_function("assistant", "assert_no_overdue_bill", {"overdue_bill_id": "B1234321"})
    assert env.user_state()["surroundings"]["payment_request"] is None
    assert user(env, "make_payment") == "You do not have a payment request."
    resumed = json.loads(agent(env, "resume_line", customer_id=CUSTOMER, line_id=LINE).text)
    assert resumed["line"]["status"] == "Active" and resumed["line"]["suspension_start_date"] is None
    assert fn(env, "assert_service_status", expected_status="no_service")  # until the phone searches again
    user(env, "reboot_device")
    assert fn(env, "assert_service_status", expected_status="connected")


def test_sync_waits_for_the_phone_number_and_rejects_an_unknown_one(tau2_root):
    e = Environment.fresh(SPEC, tau2_root / "domains" / "telecom")
    e.run_function("assistant", "set_data_usage", {"customer_id": CUSTOMER, "line_id": LINE, "data_used_gb": 99.0})
    assert e.user_state()["surroundings"]["mobile_data_usage_exceeded"] is False  # phone number not known yet
    with pytest.raises(Exception, match="555-000-0000"):
        e.run_function("user", "set_user_info", {"name": "Nobody", "phone_number": "555-000-0000"})


# ---- agent tools: results and error conditions ------------------------------------------------


def test_lookups_show_records_as_tau2_dumps_them(env):
    customer = json.loads(agent(env, "get_customer_by_phone", phone_number="555-123-2001").text)
    assert customer["customer_id"] == CUSTOMER and customer["created_at"] == "2025-01-15 10:30:00"
    assert json.loads(agent(env, "get_customer_by_id", customer_id=CUSTOMER).text) == customer
    found = json.loads(agent(env, "get_customer_by_name", full_name="john smith", dob="1985-06-15").text)
    assert [c["customer_id"] for c in found] == [CUSTOMER]
    assert json.loads(agent(env, "get_customer_by_name", full_name="John Smith", dob="1985-06-16").text) == []
    device_record = json.loads(agent(env, "get_details_by_id", id="D1002").text)
    assert device_record["activation_date"] == "2025-02-15 11:45:00"
    plan = json.loads(agent(env, "get_details_by_id", id="P1002").text)
    assert plan["data_limit_gb"] == 15.0
    bills = json.loads(agent(env, "get_bills_for_customer", customer_id=CUSTOMER, limit=2).text)
    assert [b["bill_id"] for b in bills] == ["B1003", "B1002"]  # newest issue date first
    assert agent(env, "transfer_to_human_agents", summary="x").text == "Transfer successful"


def test_agent_tool_errors(env):
    assert err(env, "get_customer_by_phone", phone_number="000") == "Customer with phone number 000 not found"
    assert err(env, "get_customer_by_id", customer_id="C9") == "Customer with ID C9 not found"
    assert err(env, "get_details_by_id", id="Q1") == "Unknown ID format or type: Q1"
    assert err(env, "get_details_by_id", id="L9") == "Line with ID L9 not found"
    assert err(env, "get_details_by_id", id="B9") == "Bill with ID B9 not found"
    assert err(env, "get_bills_for_customer", customer_id="C9") == "Customer with ID C9 not found"
    assert err(env, "suspend_line", customer_id=CUSTOMER, line_id="L1004", reason="x") == (
        "Line L1004 not found for customer C1001")
    assert err(env, "suspend_line", customer_id=CUSTOMER, line_id="L1003", reason="x") == "Line must be active to suspend"
    assert err(env, "resume_line", customer_id=CUSTOMER, line_id=LINE) == "Line must be suspended to resume"
    assert err(env, "send_payment_request", customer_id=CUSTOMER, bill_id="B1004") == (
        "Bill B1004 not found for customer C1001")
    assert err(env, "refuel_data", customer_id=CUSTOMER, line_id=LINE, gb_amount=0) == "Refuel amount must be positive"
    assert err(env, "get_data_usage", customer_id="C9", line_id=LINE) == "Customer with ID C9 not found"
    assert err(env, "disable_roaming", customer_id=CUSTOMER, line_id="L9") == "Line L9 not found for customer C1001"
    assert "missing" in err(env, "enable_roaming", customer_id=CUSTOMER)
    # a failed write changes nothing
    assert env.agent_state()["lines"][2]["status"] == "Suspended"


def test_suspend_and_refuel_without_a_draft_bill(env):
    out = json.loads(agent(env, "suspend_line", customer_id=CUSTOMER, line_id="L1001", reason="travel").text)
    assert out["message"].startswith("Line suspended successfully.")
    assert out["line"]["suspension_start_date"] == "2025-02-25"
    state = env.agent_state()
    customer = next(c for c in state["customers"] if c["customer_id"] == "C1003")
    before = list(customer["bill_ids"])
    agent(env, "resume_line", customer_id="C1003", line_id="L1009")
    assert not agent(env, "refuel_data", customer_id="C1003", line_id="L1009", gb_amount=1.5).error
    new_id = (set(customer["bill_ids"]) - set(before)).pop()
    draft = next(b for b in state["bills"] if b["bill_id"] == new_id)
    assert (draft["status"], draft["period_start"], draft["period_end"], draft["total_due"]) == (
        "Draft", "2025-03-01", "2025-03-31", 3.0)


def test_agent_side_assertions(env):
    run = env.run_function
    assert run("assistant", "assert_line_status", {"customer_id": CUSTOMER, "line_id": "L1003", "expected_status": "Suspended"})
    assert not run("assistant", "assert_line_status", {"customer_id": CUSTOMER, "line_id": LINE, "expected_status": "Suspended"})
    assert run("assistant", "assert_data_refueling_amount", {"customer_id": CUSTOMER, "line_id": LINE, "expected_amount": 0.0})
    assert not run("assistant", "assert_no_overdue_bill", {"overdue_bill_id": "B1005"})  # C1002's overdue bill
    assert run("assistant", "assert_no_overdue_bill", {"overdue_bill_id": "B0000"})
    assert run("assistant", "assert_overdue_bill_exists", {"customer_id": "C1002", "overdue_bill_id": "B1005"})
    with pytest.raises(Exception, match="not overdue"):
        run("assistant", "assert_overdue_bill_exists", {"customer_id": CUSTOMER, "overdue_bill_id": "B1001"})
