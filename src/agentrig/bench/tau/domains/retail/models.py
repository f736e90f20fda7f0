"""The retail domain's data shapes, as tau2's ``domains/retail/data_model.py`` dumps them.

State is the plain dict of ``db.json``: ``{"products": {product_id: Product}, "users": {user_id:
User}, "orders": {order_id: Order}}``. ``normalize`` rebuilds every record in the field order and
with the defaults of tau2's pydantic ``model_dump()``, so that tool results serialize to tau2's
JSON text and states compare as tau2's do:

- an order always carries ``cancel_reason``, ``exchange_items``, ``exchange_new_items``,
  ``exchange_payment_method_id``, ``exchange_price_difference``, ``return_items`` and
  ``return_payment_method_id`` (``null`` until a tool sets them);
- prices, payment amounts, gift card balances and exchange price differences are floats;
- a payment method has the fields of its kind only (gift card: source, id, balance; credit card:
  source, id, brand, last_four; paypal: source, id).
"""

from __future__ import annotations

ORDER_EXTRA_FIELDS = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)


def _float(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def address_record(a: dict | None) -> dict:
    a = a or {}
    return {
        "address1": a.get("address1"),
        "address2": a.get("address2"),
        "city": a.get("city"),
        "country": a.get("country"),
        "state": a.get("state"),
        "zip": a.get("zip"),
    }


def variant_record(v: dict) -> dict:
    return {
        "item_id": v.get("item_id"),
        "options": dict(v.get("options") or {}),
        "available": v.get("available"),
        "price": _float(v.get("price")),
    }


def product_record(p: dict) -> dict:
    return {
        "name": p.get("name"),
        "product_id": p.get("product_id"),
        "variants": {k: variant_record(v) for k, v in (p.get("variants") or {}).items()},
    }


def payment_method_record(m: dict) -> dict:
    source = m.get("source")
    if source == "gift_card":
        return {"source": source, "id": m.get("id"), "balance": _float(m.get("balance"))}
    if source == "credit_card":
        return {"source": source, "id": m.get("id"), "brand": m.get("brand"), "last_four": m.get("last_four")}
    if source == "paypal":
        return {"source": source, "id": m.get("id")}
    return dict(m)  # not a kind tau2 knows: left as given


def user_record(u: dict) -> dict:
    name = u.get("name") or {}
    return {
        "user_id": u.get("user_id"),
        "name": {"first_name": name.get("first_name"), "last_name": name.get("last_name")},
        "address": address_record(u.get("address")),
        "email": u.get("email"),
        "payment_methods": {k: payment_method_record(m) for k, m in (u.get("payment_methods") or {}).items()},
        "orders": list(u.get("orders") or []),
    }


def order_item_record(i: dict) -> dict:
    return {
        "name": i.get("name"),
        "product_id": i.get("product_id"),
        "item_id": i.get("item_id"),
        "price": _float(i.get("price")),
        "options": dict(i.get("options") or {}),
    }


def payment_record(p: dict) -> dict:
    return {
        "transaction_type": p.get("transaction_type"),
        "amount": _float(p.get("amount")),
        "payment_method_id": p.get("payment_method_id"),
    }


def _str_list(value):
    return None if value is None else list(value)


def order_record(o: dict) -> dict:
    return {
        "order_id": o.get("order_id"),
        "user_id": o.get("user_id"),
        "address": address_record(o.get("address")),
        "items": [order_item_record(i) for i in o.get("items") or []],
        "status": o.get("status"),
        "fulfillments": [
            {"tracking_id": list(f.get("tracking_id") or []), "item_ids": list(f.get("item_ids") or [])}
            for f in o.get("fulfillments") or []
        ],
        "payment_history": [payment_record(p) for p in o.get("payment_history") or []],
        "cancel_reason": o.get("cancel_reason"),
        "exchange_items": _str_list(o.get("exchange_items")),
        "exchange_new_items": _str_list(o.get("exchange_new_items")),
        "exchange_payment_method_id": o.get("exchange_payment_method_id"),
        "exchange_price_difference": _float(o.get("exchange_price_difference")),
        "return_items": _str_list(o.get("return_items")),
        "return_payment_method_id": o.get("return_payment_method_id"),
    }


def normalize(db: dict) -> dict:
    """The db in the shape of tau2's ``RetailDB.model_dump()`` (unknown keys dropped)."""
    return {
        "products": {k: product_record(v) for k, v in (db.get("products") or {}).items()},
        "users": {k: user_record(v) for k, v in (db.get("users") or {}).items()},
        "orders": {k: order_record(v) for k, v in (db.get("orders") or {}).items()},
    }
