"""The retail domain: τ²-bench's 16 agent tools, their state changes, results and errors.

The gold replay on the real data must error on exactly the gold actions τ²-bench's own code
errors on (the fidelity anchor of issue 3); the targeted tests use a small hand-made store whose
numbers are easy to check, normalized the way the real db is.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Dict, List, Literal, Optional, Union

import pytest
from pydantic import BaseModel

from agentrig.bench.tau.data import domain_dir, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.domains.retail import DOMAIN, RetailTools
from agentrig.bench.tau.domains.retail.models import normalize
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.toolkit import to_text

# ---- the fidelity anchor: gold actions that fail in τ²-bench's own implementation ---------------

# task id -> {tool name: number of its gold actions that return an error}
GOLD_ERRORS = {
    "2": {"get_product_details": 1},
    "3": {"get_product_details": 1},
    "4": {"get_product_details": 1},
    "35": {"find_user_id_by_email": 1},
    "37": {"find_user_id_by_email": 1},
    "54": {"find_user_id_by_email": 1},
    "46": {"get_order_details": 2},
    "47": {"get_order_details": 2},
    "67": {"find_user_id_by_name_zip": 2},
    "105": {"exchange_delivered_order_items": 1},
}


@pytest.fixture(scope="module")
def retail_tasks(tau2_root):
    return load_tasks(tau2_root, "retail")


def test_gold_replay_errors_exactly_where_tau2_does(tau2_root, retail_tasks):
    from agentrig.bench.tau.replay import replay_gold

    ddir = domain_dir(tau2_root, "retail")
    present = {t.id for t in retail_tasks}
    expected = {tid: Counter(errs) for tid, errs in GOLD_ERRORS.items() if tid in present}
    assert expected, "none of the anchor tasks is in the data: the check would be empty"
    seen: dict[str, Counter] = {}
    for task in retail_tasks:
        result = replay_gold(DOMAIN, ddir, task)
        assert len(result.actions) == len(task.evaluation_criteria.actions or [])
        failed = Counter(a.name for a in result.actions if a.error)
        if failed:
            seen[task.id] = failed
        # a gold replay judged against its own gold state is a perfect DB score
        assert result.judgement.db_reward == 1.0, task.id
        assert result.judgement.env_reward == 1.0, task.id
        assert not result.init_problems, (task.id, result.init_problems)
    assert seen == expected


def test_gold_error_texts(tau2_root, retail_tasks):
    """The failing gold actions fail for tau2's reasons (not, say, bad arguments)."""
    ddir = domain_dir(tau2_root, "retail")
    by_id = {t.id: t for t in retail_tasks}
    reasons = {
        "get_product_details": "Error: Product not found",
        "find_user_id_by_email": "Error: User not found",
        "get_order_details": "Error: Order not found",
        "find_user_id_by_name_zip": "Error: User not found",
        "exchange_delivered_order_items": "Error: Insufficient gift card balance to pay for the price difference",
    }
    checked = 0
    for tid in GOLD_ERRORS:
        if tid not in by_id:
            continue
        env = Environment.fresh(DOMAIN, ddir)
        for action in by_id[tid].evaluation_criteria.actions:
            outcome = env.call("assistant", action.name, action.arguments, sync=False)
            if outcome.error:
                assert outcome.text == reasons[action.name], (tid, outcome.text)
                checked += 1
    assert checked >= 1


@pytest.mark.parametrize("task_id", ["21", "37"])
def test_modifying_several_items_gives_all_the_last_variants_price_and_options(tau2_root, retail_tasks, task_id):
    """τ²-bench v1.0.1's ``modify_pending_order_items`` checks every (old, new) pair and charges
    the sum of the right price differences, but then writes, for every pair, the new item id
    and the price and options of the LAST new variant it checked (the modifying loop reuses the
    checking loop's variable; tau2-bench issues #317/#318 show the same on these two tasks).
    The agent sees that state in the tool result, and the gold state is built with it.
    Task 21 modifies 2 items of #W9911714, task 37 modifies 3 of #W9348897 (shared split)."""
    from agentrig.bench.tau.replay import replay_gold

    ddir = domain_dir(tau2_root, "retail")
    task = next(t for t in retail_tasks if t.id == task_id)
    action = next(a for a in task.evaluation_criteria.actions if a.name == "modify_pending_order_items")
    args = action.arguments
    assert len(args["item_ids"]) >= 2

    env = Environment.fresh(DOMAIN, ddir)
    env.set_state(task)
    db = env.agent_state()
    before = json.loads(json.dumps(db["orders"][args["order_id"]]))
    catalog = {vid: v for p in db["products"].values() for vid, v in p["variants"].items()}
    last = catalog[args["new_item_ids"][-1]]
    right_diff = sum(catalog[new]["price"] - next(i["price"] for i in before["items"] if i["item_id"] == old)
                     for old, new in zip(args["item_ids"], args["new_item_ids"]))

    outcome = env.call("assistant", action.name, args)
    assert not outcome.error, outcome.text
    after = db["orders"][args["order_id"]]
    assert [i["item_id"] for i in after["items"]] == [
        args["new_item_ids"][args["item_ids"].index(i["item_id"])] if i["item_id"] in args["item_ids"] else i["item_id"]
        for i in before["items"]]  # each item its own new id, in place
    for old_id, new_id in zip(args["item_ids"], args["new_item_ids"]):
        item = next(i for i in after["items"] if i["item_id"] == new_id)
        assert item["price"] == last["price"] and item["options"] == last["options"]
        # the product and name stay those of the old item (same product)
        assert item["product_id"] == next(i["product_id"] for i in before["items"] if i["item_id"] == old_id)
    # so every modified item but the last now shows a price and options not its own
    first_new = catalog[args["new_item_ids"][0]]
    assert (first_new["price"], first_new["options"]) != (last["price"], last["options"])
    # untouched items keep theirs
    untouched = [i for i in before["items"] if i["item_id"] not in args["item_ids"]]
    assert untouched and all(i in after["items"] for i in untouched)
    # the money moved is the right per-item difference, not the one the items now show
    assert after["payment_history"][-1]["amount"] == pytest.approx(abs(right_diff))
    assert after["status"] == "pending (item modified)"
    # the tool result the agent sees is that order, wrong prices included
    assert json.loads(outcome.text) == after

    # tau2's gold state holds the same items, so the gold trajectory still scores DB 1
    gold = replay_gold(DOMAIN, ddir, task)
    assert gold.agent_state["orders"][args["order_id"]]["items"] == after["items"]
    assert gold.judgement.db_reward == 1.0


def test_real_db_is_normalized_and_copies_are_independent(tau2_root):
    ddir = domain_dir(tau2_root, "retail")
    a = Environment.fresh(DOMAIN, ddir)
    b = Environment.fresh(DOMAIN, ddir)
    db = a.agent_state()
    assert (len(db["products"]), len(db["users"]), len(db["orders"])) == (50, 500, 1000)
    assert all(o["cancel_reason"] is None for o in db["orders"].values())
    order_id = next(k for k, o in db["orders"].items() if o["status"] == "pending")
    assert not a.call("assistant", "cancel_pending_order", {"order_id": order_id, "reason": "ordered by mistake"}).error
    assert a.agent_state()["orders"][order_id]["status"] == "cancelled"
    assert b.agent_state()["orders"][order_id]["status"] == "pending"
    assert Environment.fresh(DOMAIN, ddir).agent_state()["orders"][order_id]["status"] == "pending"


# ---- tau2's data model, restated to check that our dicts dump like its models -------------------

class Variant(BaseModel):
    item_id: str
    options: Dict[str, str]
    available: bool
    price: float


class Product(BaseModel):
    name: str
    product_id: str
    variants: Dict[str, Variant]


class UserName(BaseModel):
    first_name: str
    last_name: str


class UserAddress(BaseModel):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class _Method(BaseModel):
    source: str
    id: str


class CreditCard(_Method):
    source: Literal["credit_card"]
    brand: str
    last_four: str


class Paypal(_Method):
    source: Literal["paypal"]


class GiftCard(_Method):
    source: Literal["gift_card"]
    balance: float


class User(BaseModel):
    user_id: str
    name: UserName
    address: UserAddress
    email: str
    payment_methods: Dict[str, Union[CreditCard, GiftCard, Paypal]]
    orders: List[str]


class Fulfillment(BaseModel):
    tracking_id: List[str]
    item_ids: List[str]


class OrderItem(BaseModel):
    name: str
    product_id: str
    item_id: str
    price: float
    options: Dict[str, str]


class OrderPayment(BaseModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(BaseModel):
    order_id: str
    user_id: str
    address: UserAddress
    items: List[OrderItem]
    status: Literal[
        "processed", "pending", "pending (item modified)", "delivered", "cancelled",
        "exchange requested", "return requested",
    ]
    fulfillments: List[Fulfillment]
    payment_history: List[OrderPayment]
    cancel_reason: Optional[Literal["no longer needed", "ordered by mistake"]] = None
    exchange_items: Optional[List[str]] = None
    exchange_new_items: Optional[List[str]] = None
    exchange_payment_method_id: Optional[str] = None
    exchange_price_difference: Optional[float] = None
    return_items: Optional[List[str]] = None
    return_payment_method_id: Optional[str] = None


def _dumps_like(model: type[BaseModel], record: dict) -> None:
    assert to_text(record) == json.dumps(model.model_validate(record).model_dump())


def test_real_records_dump_like_tau2_models(tau2_root):
    db = Environment.fresh(DOMAIN, domain_dir(tau2_root, "retail")).agent_state()
    for model, key in ((Product, "products"), (User, "users"), (Order, "orders")):
        for record in db[key].values():
            _dumps_like(model, record)


# ---- a small store for targeted tests ----------------------------------------------------------

def _variant(item_id, color, price, available=True):
    return {"item_id": item_id, "options": {"color": color}, "available": available, "price": price}


def _order(order_id, status, items, payments):
    lines = [
        {"name": name, "product_id": pid, "item_id": iid, "price": price, "options": {"color": color}}
        for (name, pid, iid, price, color) in items
    ]
    return {
        "order_id": order_id, "user_id": "ann_lee_1",
        "address": {"address1": "1 Elm St", "address2": "", "city": "Austin", "country": "USA", "state": "TX", "zip": "73301"},
        "items": lines, "status": status,
        "fulfillments": [{"tracking_id": ["111"], "item_ids": [i[2] for i in items]}] if status == "delivered" else [],
        "payment_history": [{"transaction_type": t, "amount": a, "payment_method_id": m} for (t, a, m) in payments],
    }


SHIRT_BLUE = ("T-Shirt", "P1", "I1", 10.5, "blue")
MUG_WHITE = ("Mug", "P2", "J1", 5, "white")  # an int price, as a hand-written file may have
LAMP_SMALL = ("Lamp", "P3", "K1", 5.0, "small")


def _store() -> dict:
    raw = {
        "products": {
            "P1": {"name": "T-Shirt", "product_id": "P1", "variants": {
                "I1": _variant("I1", "blue", 10.5), "I2": _variant("I2", "red", 12.25),
                "I3": _variant("I3", "green", 11.0, available=False), "I4": _variant("I4", "black", 9.0)}},
            "P2": {"name": "Mug", "product_id": "P2", "variants": {
                "J1": _variant("J1", "white", 5), "J2": _variant("J2", "black", 7.5)}},
            "P3": {"name": "Lamp", "product_id": "P3", "variants": {
                "K1": _variant("K1", "small", 5.0), "K2": _variant("K2", "large", 100.0)}},
        },
        "users": {
            "ann_lee_1": {
                "user_id": "ann_lee_1", "name": {"first_name": "Ann", "last_name": "Lee"},
                "address": {"address1": "1 Elm St", "address2": "", "city": "Austin", "country": "USA",
                            "state": "TX", "zip": "73301"},
                "email": "Ann.Lee@example.com",
                "payment_methods": {
                    "gift_card_1": {"source": "gift_card", "id": "gift_card_1", "balance": 20},
                    "credit_card_1": {"source": "credit_card", "id": "credit_card_1", "brand": "visa", "last_four": "4242"},
                    "paypal_1": {"source": "paypal", "id": "paypal_1"},
                },
                "orders": ["#W1", "#W2", "#W3", "#W4", "#W5", "#W6", "#W7", "#W8", "#W9"],
            },
        },
        "orders": {
            "#W1": _order("#W1", "pending", [SHIRT_BLUE, MUG_WHITE], [("payment", 15.5, "credit_card_1")]),
            "#W2": _order("#W2", "pending", [SHIRT_BLUE, SHIRT_BLUE], [("payment", 21.0, "gift_card_1")]),
            "#W3": _order("#W3", "delivered", [SHIRT_BLUE, MUG_WHITE], [("payment", 15.5, "paypal_1")]),
            "#W4": _order("#W4", "processed", [SHIRT_BLUE], [("payment", 10.5, "credit_card_1")]),
            "#W5": _order("#W5", "pending (item modified)", [SHIRT_BLUE], [("payment", 10.5, "credit_card_1")]),
            "#W6": _order("#W6", "pending", [SHIRT_BLUE], [("payment", 10.5, "gift_card_gone")]),
            "#W7": _order("#W7", "pending", [LAMP_SMALL], [("payment", 5.0, "credit_card_1")]),
            "#W8": _order("#W8", "pending", [LAMP_SMALL], [("payment", 50.0, "credit_card_1")]),
            "#W9": _order("#W9", "pending", [SHIRT_BLUE],
                          [("payment", 10.5, "credit_card_1"), ("refund", 10.5, "credit_card_1")]),
        },
    }
    return normalize(raw)


@pytest.fixture
def tools() -> RetailTools:
    return RetailTools(_store())


def ok(tools: RetailTools, name: str, **args):
    outcome = tools.call(name, args)
    assert not outcome.error, outcome.text
    return outcome


def err(tools: RetailTools, name: str, **args) -> str:
    before = json.dumps(tools.db)
    outcome = tools.call(name, args)
    assert outcome.error, outcome.text
    assert outcome.text.startswith("Error: ")
    assert json.dumps(tools.db) == before, "a refused call must not change the state"
    return outcome.text[len("Error: "):]


def order(tools, order_id="#W1") -> dict:
    return tools.db["orders"][order_id]


def balance(tools, method="gift_card_1") -> float:
    return tools.db["users"]["ann_lee_1"]["payment_methods"][method]["balance"]


# ---- the tool set ------------------------------------------------------------------------------

WRITE_TOOLS = {
    "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
    "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
    "return_delivered_order_items",
}
READ_TOOLS = {
    "calculate", "find_user_id_by_name_zip", "find_user_id_by_email", "get_order_details",
    "get_product_details", "get_item_details", "get_user_details", "list_all_product_types",
    "transfer_to_human_agents",
}


def test_tool_names_flags_and_parameters():
    specs = {s.name: s for s in RetailTools.tool_specs()}
    assert set(specs) == WRITE_TOOLS | READ_TOOLS and len(specs) == 16
    assert {n for n, s in specs.items() if s.write} == WRITE_TOOLS
    params = {n: (list(s.parameters["properties"]), sorted(s.parameters.get("required", []))) for n, s in specs.items()}
    assert params["exchange_delivered_order_items"] == (
        ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        sorted(["order_id", "item_ids", "new_item_ids", "payment_method_id"]),
    )
    assert params["modify_user_address"][0] == ["user_id", "address1", "address2", "city", "state", "country", "zip"]
    assert params["find_user_id_by_name_zip"][0] == ["first_name", "last_name", "zip"]
    assert params["list_all_product_types"] == ([], [])
    items = specs["return_delivered_order_items"].parameters["properties"]["item_ids"]
    assert items["type"] == "array" and items["items"] == {"type": "string"}
    assert all(s.description and all(p.get("description") for p in s.parameters["properties"].values())
               for s in specs.values())
    assert get_domain("retail") is DOMAIN and DOMAIN.policies == {"default": ("policy.md",)}


# ---- read tools --------------------------------------------------------------------------------

def test_calculate(tools):
    assert ok(tools, "calculate", expression="2 + 2").text == "4.0"
    assert ok(tools, "calculate", expression="(10.5 - 3) / 3").text == "2.5"
    assert ok(tools, "calculate", expression="10 / 3").text == "3.33"
    assert err(tools, "calculate", expression="2 ^ 3") == "Invalid characters in expression"
    assert err(tools, "calculate", expression="2 +")  # Python's syntax error, as tau2's eval
    assert err(tools, "calculate", expression="1 / 0") == "division by zero"
    assert ok(tools, "calculate", expression="2 ** 10").text == "1024.0"
    assert err(tools, "calculate", expression="9 ** (9 ** 9 ** 9)") == "Exponent too large in expression"


def test_find_user(tools):
    assert ok(tools, "find_user_id_by_email", email="ann.lee@EXAMPLE.com").text == "ann_lee_1"
    assert err(tools, "find_user_id_by_email", email="ann.lee@example.org") == "User not found"
    assert ok(tools, "find_user_id_by_name_zip", first_name="ANN", last_name="lee", zip="73301").text == "ann_lee_1"
    assert err(tools, "find_user_id_by_name_zip", first_name="Ann", last_name="Lee", zip="73302") == "User not found"
    assert err(tools, "find_user_id_by_name_zip", first_name="Anne", last_name="Lee", zip="73301") == "User not found"


def test_get_details(tools):
    assert json.loads(ok(tools, "get_order_details", order_id="#W1").text) == order(tools)
    _dumps_like(Order, json.loads(ok(tools, "get_order_details", order_id="#W1").text))
    assert err(tools, "get_order_details", order_id="W1") == "Order not found"
    product = ok(tools, "get_product_details", product_id="P2")
    assert product.text == json.dumps(tools.db["products"]["P2"])
    assert '"price": 5.0' in product.text  # an int price is shown as tau2's float field
    assert err(tools, "get_product_details", product_id="J1") == "Product not found"
    assert json.loads(ok(tools, "get_item_details", item_id="J2").text) == {
        "item_id": "J2", "options": {"color": "black"}, "available": True, "price": 7.5}
    assert err(tools, "get_item_details", item_id="P1") == "Item not found"
    user = ok(tools, "get_user_details", user_id="ann_lee_1")
    _dumps_like(User, json.loads(user.text))
    assert '"gift_card_1": {"source": "gift_card", "id": "gift_card_1", "balance": 20.0}' in user.text
    assert err(tools, "get_user_details", user_id="ann") == "User not found"


def test_list_all_product_types(tools, tau2_root):
    assert ok(tools, "list_all_product_types").text == '{"Lamp": "P3", "Mug": "P2", "T-Shirt": "P1"}'
    real = RetailTools(Environment.fresh(DOMAIN, domain_dir(tau2_root, "retail")).agent_state())
    listing = json.loads(ok(real, "list_all_product_types").text)
    assert len(listing) == 50 and list(listing) == sorted(listing)


def test_transfer(tools):
    assert ok(tools, "transfer_to_human_agents", summary="wants a human").text == "Transfer successful"


def test_bad_arguments_are_errors(tools):
    assert tools.call("get_order_details", {}).error
    assert tools.call("get_order_details", {"order_id": "#W1", "extra": 1}).error
    assert tools.call("return_delivered_order_items", {"order_id": "#W3", "item_ids": "I1",
                                                       "payment_method_id": "paypal_1"}).error
    assert tools.call("no_such_tool", {}).text == "Error: Tool 'no_such_tool' not found."


# ---- cancel ------------------------------------------------------------------------------------

def test_cancel_refunds_a_gift_card_at_once(tools):
    result = ok(tools, "cancel_pending_order", order_id="#W2", reason="no longer needed")
    o = order(tools, "#W2")
    assert o["status"] == "cancelled" and o["cancel_reason"] == "no longer needed"
    assert o["payment_history"] == [
        {"transaction_type": "payment", "amount": 21.0, "payment_method_id": "gift_card_1"},
        {"transaction_type": "refund", "amount": 21.0, "payment_method_id": "gift_card_1"},
    ]
    assert balance(tools) == 41.0
    assert result.text == json.dumps(o)
    _dumps_like(Order, json.loads(result.text))


def test_cancel_refunds_a_card_later(tools):
    ok(tools, "cancel_pending_order", order_id="#W1", reason="ordered by mistake")
    o = order(tools)
    assert o["status"] == "cancelled" and o["cancel_reason"] == "ordered by mistake"
    assert o["payment_history"][-1] == {"transaction_type": "refund", "amount": 15.5, "payment_method_id": "credit_card_1"}
    assert balance(tools) == 20.0


def test_cancel_refunds_every_history_entry(tools):
    """tau2 refunds each entry of the history, refunds included."""
    ok(tools, "cancel_pending_order", order_id="#W9", reason="ordered by mistake")
    assert [p["transaction_type"] for p in order(tools, "#W9")["payment_history"]] == ["payment", "refund", "refund", "refund"]


def test_cancel_errors(tools):
    assert err(tools, "cancel_pending_order", order_id="#W0", reason="no longer needed") == "Order not found"
    assert err(tools, "cancel_pending_order", order_id="#W4", reason="no longer needed") == "Non-pending order cannot be cancelled"
    assert err(tools, "cancel_pending_order", order_id="#W5", reason="no longer needed") == "Non-pending order cannot be cancelled"
    assert err(tools, "cancel_pending_order", order_id="#W1", reason="too expensive") == "Invalid reason"
    assert err(tools, "cancel_pending_order", order_id="#W6", reason="no longer needed") == "Payment method not found"


# ---- exchange and return -----------------------------------------------------------------------

def test_exchange_records_the_request_and_price_difference(tools):
    result = ok(tools, "exchange_delivered_order_items", order_id="#W3", item_ids=["J1", "I1"],
                new_item_ids=["J2", "I2"], payment_method_id="paypal_1")
    o = order(tools, "#W3")
    assert o["status"] == "exchange requested"
    assert o["exchange_items"] == ["I1", "J1"] and o["exchange_new_items"] == ["I2", "J2"]
    assert o["exchange_payment_method_id"] == "paypal_1"
    assert o["exchange_price_difference"] == round((7.5 - 5.0) + (12.25 - 10.5), 2) == 4.25
    assert o["payment_history"] == [{"transaction_type": "payment", "amount": 15.5, "payment_method_id": "paypal_1"}]
    assert [i["item_id"] for i in o["items"]] == ["I1", "J1"]  # items change only when the exchange happens
    _dumps_like(Order, json.loads(result.text))


def test_exchange_to_a_cheaper_item_with_a_gift_card(tools):
    ok(tools, "exchange_delivered_order_items", order_id="#W3", item_ids=["I1"], new_item_ids=["I4"],
       payment_method_id="gift_card_1")
    assert order(tools, "#W3")["exchange_price_difference"] == -1.5
    assert balance(tools) == 20.0  # nothing is paid until the exchange is carried out


def test_exchange_errors(tools):
    def ex(order_id="#W3", item_ids=("I1",), new_item_ids=("I2",), payment_method_id="paypal_1"):
        return err(tools, "exchange_delivered_order_items", order_id=order_id, item_ids=list(item_ids),
                   new_item_ids=list(new_item_ids), payment_method_id=payment_method_id)

    assert ex(order_id="#W0") == "Order not found"
    assert ex(order_id="#W1") == "Non-delivered order cannot be exchanged"
    assert ex(item_ids=["I2"]) == "Number of I2 not found."
    assert ex(item_ids=["I1", "I1"], new_item_ids=["I2", "I2"]) == "Number of I1 not found."
    assert ex(item_ids=["I1", "J1"], new_item_ids=["I2"]) == "The number of items to be exchanged should match."
    assert ex(new_item_ids=["J2"]) == "Variant not found"
    assert ex(new_item_ids=["I3"]) == "New item I3 not found or available"
    assert ex(payment_method_id="gift_card_9") == "Payment method not found"
    tools.db["users"]["ann_lee_1"]["payment_methods"]["gift_card_1"]["balance"] = 1.0
    assert ex(payment_method_id="gift_card_1") == "Insufficient gift card balance to pay for the price difference"


def test_return(tools):
    result = ok(tools, "return_delivered_order_items", order_id="#W3", item_ids=["J1", "I1"], payment_method_id="paypal_1")
    o = order(tools, "#W3")
    assert o["status"] == "return requested" and o["return_items"] == ["I1", "J1"]
    assert o["return_payment_method_id"] == "paypal_1" and len(o["payment_history"]) == 1
    _dumps_like(Order, json.loads(result.text))
    fresh = RetailTools(_store())
    ok(fresh, "return_delivered_order_items", order_id="#W3", item_ids=["I1"], payment_method_id="gift_card_1")
    assert order(fresh, "#W3")["return_payment_method_id"] == "gift_card_1"


def test_return_errors(tools):
    def ret(order_id="#W3", item_ids=("I1",), payment_method_id="paypal_1"):
        return err(tools, "return_delivered_order_items", order_id=order_id, item_ids=list(item_ids),
                   payment_method_id=payment_method_id)

    assert ret(order_id="#W0") == "Order not found"
    assert ret(order_id="#W1") == "Non-delivered order cannot be returned"
    assert ret(payment_method_id="credit_card_1") == "Payment method should be the original payment method"
    assert ret(payment_method_id="credit_card_9") == "Payment method not found"
    assert ret(item_ids=["I1", "I1"]) == "Some item not found"
    assert ret(item_ids=["K1"]) == "Some item not found"


# ---- modify a pending order --------------------------------------------------------------------

def test_modify_items_pays_the_difference_from_a_gift_card(tools):
    result = ok(tools, "modify_pending_order_items", order_id="#W1", item_ids=["I1", "J1"],
                new_item_ids=["I2", "J2"], payment_method_id="gift_card_1")
    o = order(tools)
    diff = (12.25 - 10.5) + (7.5 - 5.0)
    assert o["status"] == "pending (item modified)"
    assert o["payment_history"][-1] == {"transaction_type": "payment", "amount": diff, "payment_method_id": "gift_card_1"}
    assert balance(tools) == round(20.0 - diff, 2) == 15.75
    # τ²-bench v1.0.1: each item gets its own new id, but BOTH get the price and options of the
    # last new variant of the call (the mug J2), the shirt included
    assert o["items"][0] == {"name": "T-Shirt", "product_id": "P1", "item_id": "I2", "price": 7.5, "options": {"color": "black"}}
    assert o["items"][1] == {"name": "Mug", "product_id": "P2", "item_id": "J2", "price": 7.5, "options": {"color": "black"}}
    assert json.loads(result.text)["items"] == o["items"]  # the agent sees it too
    _dumps_like(Order, json.loads(result.text))


def test_modify_items_refunds_a_cheaper_swap_and_handles_duplicates(tools):
    ok(tools, "modify_pending_order_items", order_id="#W2", item_ids=["I1", "I1"], new_item_ids=["I4", "I4"],
       payment_method_id="credit_card_1")
    o = order(tools, "#W2")
    assert [i["item_id"] for i in o["items"]] == ["I4", "I4"]
    assert o["payment_history"][-1] == {"transaction_type": "refund", "amount": 3.0, "payment_method_id": "credit_card_1"}
    assert balance(tools) == 20.0


def test_modify_items_refund_to_a_gift_card_raises_its_balance(tools):
    ok(tools, "modify_pending_order_items", order_id="#W1", item_ids=["I1"], new_item_ids=["I4"],
       payment_method_id="gift_card_1")
    assert balance(tools) == 21.5


def test_modify_items_errors(tools):
    def mod(order_id="#W1", item_ids=("I1",), new_item_ids=("I2",), payment_method_id="credit_card_1"):
        return err(tools, "modify_pending_order_items", order_id=order_id, item_ids=list(item_ids),
                   new_item_ids=list(new_item_ids), payment_method_id=payment_method_id)

    assert mod(order_id="#W0") == "Order not found"
    assert mod(order_id="#W5") == "Non-pending order cannot be modified"
    assert mod(order_id="#W3") == "Non-pending order cannot be modified"
    assert mod(item_ids=["I2"]) == "I2 not found"
    assert mod(item_ids=["I1", "J1"], new_item_ids=["I2"]) == "The number of items to be exchanged should match"
    assert mod(new_item_ids=["I1"]) == "The new item id should be different from the old item id"
    assert mod(new_item_ids=["J2"]) == "Variant not found"
    assert mod(new_item_ids=["I3"]) == "New item I3 not found or available"
    assert mod(payment_method_id="paypal_9") == "Payment method not found"
    assert mod(order_id="#W7", item_ids=["K1"], new_item_ids=["K2"], payment_method_id="gift_card_1") == (
        "Insufficient gift card balance to pay for the new item")


def test_modify_address(tools):
    addr = {"address1": "9 Oak Rd", "address2": "Apt 2", "city": "Boston", "state": "MA", "country": "USA", "zip": "02101"}
    result = ok(tools, "modify_pending_order_address", order_id="#W5", **addr)
    assert order(tools, "#W5")["address"] == addr
    assert list(order(tools, "#W5")["address"]) == ["address1", "address2", "city", "country", "state", "zip"]
    _dumps_like(Order, json.loads(result.text))
    assert err(tools, "modify_pending_order_address", order_id="#W4", **addr) == "Non-pending order cannot be modified"
    assert err(tools, "modify_pending_order_address", order_id="#W0", **addr) == "Order not found"
    user = ok(tools, "modify_user_address", user_id="ann_lee_1", **addr)
    assert tools.db["users"]["ann_lee_1"]["address"] == addr
    _dumps_like(User, json.loads(user.text))
    assert err(tools, "modify_user_address", user_id="bob", **addr) == "User not found"


def test_modify_payment_card_to_gift_card(tools):
    result = ok(tools, "modify_pending_order_payment", order_id="#W1", payment_method_id="gift_card_1")
    assert order(tools)["payment_history"] == [
        {"transaction_type": "payment", "amount": 15.5, "payment_method_id": "credit_card_1"},
        {"transaction_type": "payment", "amount": 15.5, "payment_method_id": "gift_card_1"},
        {"transaction_type": "refund", "amount": 15.5, "payment_method_id": "credit_card_1"},
    ]
    assert balance(tools) == 4.5 and order(tools)["status"] == "pending"
    _dumps_like(Order, json.loads(result.text))


def test_modify_payment_gift_card_to_card_and_item_modified_orders(tools):
    ok(tools, "modify_pending_order_payment", order_id="#W2", payment_method_id="paypal_1")
    assert balance(tools) == 41.0
    ok(tools, "modify_pending_order_payment", order_id="#W5", payment_method_id="paypal_1")  # any "pending…"
    assert order(tools, "#W5")["payment_history"][-1]["transaction_type"] == "refund"


def test_modify_payment_errors(tools):
    def pay(order_id="#W1", payment_method_id="paypal_1"):
        return err(tools, "modify_pending_order_payment", order_id=order_id, payment_method_id=payment_method_id)

    assert pay(order_id="#W0") == "Order not found"
    assert pay(order_id="#W3") == "Non-pending order cannot be modified"
    assert pay(payment_method_id="paypal_9") == "Payment method not found"
    assert pay(order_id="#W9") == "There should be exactly one payment for a pending order"
    assert pay(payment_method_id="credit_card_1") == "The new payment method should be different from the current one"
    assert pay(order_id="#W8", payment_method_id="gift_card_1") == "Insufficient gift card balance to pay for the order"


def test_modify_payment_failing_late_keeps_partial_changes(tools):
    """As in tau2: the old method is looked up after the new one was charged."""
    outcome = tools.call("modify_pending_order_payment", {"order_id": "#W6", "payment_method_id": "gift_card_1"})
    assert outcome.error and outcome.text == "Error: Payment method not found"
    assert balance(tools) == 9.5
    assert len(order(tools, "#W6")["payment_history"]) == 3


def test_environment_call_and_write_flags(tau2_root):
    env = Environment.fresh(DOMAIN, domain_dir(tau2_root, "retail"))
    assert env.is_mutating("modify_pending_order_items") and not env.is_mutating("get_order_details")
    assert not env.is_mutating("calculate") and not env.is_mutating("transfer_to_human_agents")
    user_id = ok(env.agent, "find_user_id_by_email", email=env.agent_state()["users"]["noah_brown_6181"]["email"]).text
    assert user_id == "noah_brown_6181"
