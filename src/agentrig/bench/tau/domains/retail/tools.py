"""The retail agent's 16 tools, with tau2-bench's names, parameters, state changes, results and
error conditions (tau2 ``domains/retail/tools.py`` at v1.0.x: names and emails matched
case-insensitively, zips and ids exactly).

Results are the dicts tau2's models dump to (see ``models.py``); the state is the plain dict of
``db.json``, changed in place. Behaviours kept on purpose, because tau2's scores depend on them:

- cancelling refunds every entry of the payment history (refunds included), gift cards at once;
- modifying items records the unrounded price difference as one payment (> 0) or refund (<= 0)
  and takes it off a gift card's balance; exchanging only records the rounded difference;
- modifying several items at once gives every modified item its own new item id but the price
  and options of the last new item of the call (docs/tau2.md, "Reproduced quirks");
- changing the payment method or the address allows any "pending…" status, cancelling and
  modifying items only exactly "pending";
- checks that fail half way (a payment method missing after a gift card was credited) leave the
  changes made so far, as tau2's do.
"""

from __future__ import annotations

import json

from ...calculator import calculate
from ...toolkit import Toolkit, ToolError, tool
from .models import address_record

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _is_gift_card(method: dict) -> bool:
    return method.get("source") == "gift_card"


class RetailTools(Toolkit):
    """All the tools of the retail domain."""

    db: dict

    # ---- lookups ---------------------------------------------------------------------------

    def _get_order(self, order_id: str) -> dict:
        order = self.db["orders"].get(order_id)
        if order is None:
            raise ToolError("Order not found")
        return order

    def _get_user(self, user_id: str) -> dict:
        user = self.db["users"].get(user_id)
        if user is None:
            raise ToolError("User not found")
        return user

    def _get_product(self, product_id: str) -> dict:
        product = self.db["products"].get(product_id)
        if product is None:
            raise ToolError("Product not found")
        return product

    def _get_item(self, item_id: str) -> dict:
        for product in self.db["products"].values():
            variant = product["variants"].get(item_id)
            if variant is not None:
                return variant
        raise ToolError("Item not found")

    def _get_variant(self, product_id: str, variant_id: str) -> dict:
        variant = self._get_product(product_id)["variants"].get(variant_id)
        if variant is None:
            raise ToolError("Variant not found")
        return variant

    def _get_payment_method(self, user_id: str, payment_method_id: str) -> dict:
        method = self._get_user(user_id)["payment_methods"].get(payment_method_id)
        if method is None:
            raise ToolError("Payment method not found")
        return method

    @staticmethod
    def _check_counts(order: dict, item_ids: list[str], message) -> None:
        """Each id must occur in the order at least as often as in ``item_ids``."""
        in_order = [item["item_id"] for item in order["items"]]
        for item_id in item_ids:
            if item_ids.count(item_id) > in_order.count(item_id):
                raise ToolError(message(item_id))

    @staticmethod
    def _first_item(order: dict, item_id: str) -> dict:
        for item in order["items"]:
            if item["item_id"] == item_id:
                return item
        raise ToolError(f"Item {item_id} not found")

    def _new_variant(self, order: dict, item_id: str, new_item_id: str) -> tuple[dict, dict]:
        item = self._first_item(order, item_id)
        variant = self._get_variant(item["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_item_id} not found or available")
        return item, variant

    # ---- tools -----------------------------------------------------------------------------

    @tool
    def calculate(self, expression: str) -> str:
        """Work out the value of an arithmetic expression.

        Args:
            expression: The expression to evaluate, for example '2 + 2'. Only digits, the operators +, -, *, /, parentheses, dots and spaces are allowed.
        """
        return calculate(expression)

    @tool(write=True)
    def cancel_pending_order(self, order_id: str, reason: str) -> dict:
        """Cancel an order that is still pending; processed or delivered orders cannot be cancelled. Explain what the cancellation does and get an explicit yes from the user first. The order becomes 'cancelled' and its payment is refunded: at once to a gift card, otherwise within 5-7 business days. Returns the order as it is after the cancellation.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            reason: Why the order is cancelled: either 'no longer needed' or 'ordered by mistake'.
        """
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise ToolError("Invalid reason")
        refunds = []
        for payment in order["payment_history"]:
            refunds.append(
                {"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": payment["payment_method_id"]}
            )
            user = self._get_user(order["user_id"])
            method = self._get_payment_method(user["user_id"], payment["payment_method_id"])
            if _is_gift_card(method):
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    @tool(write=True)
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict:
        """Exchange items of a delivered order for other items of the same product. A delivered order can be returned or exchanged only once. Explain the exchange and get an explicit yes from the user first. Returns the order as it is after the exchange request.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            item_ids: The ids of the items to exchange, each like '1008292230'; an id may appear more than once.
            new_item_ids: The ids of the items to receive instead, each like '1008292230'; an id may appear more than once. The new id at each position must be a variant of the same product as the old id at that position.
            payment_method_id: The payment method that pays, or is refunded, the price difference, for example 'gift_card_0000000' or 'credit_card_0000000'; find it in the user's or the order's details.
        """
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be exchanged")
        self._check_counts(order, item_ids, lambda i: f"Number of {i} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match.")
        diff_price = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            item, variant = self._new_variant(order, item_id, new_item_id)
            diff_price += variant["price"] - item["price"]
        diff_price = round(diff_price, 2)
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if _is_gift_card(method) and method["balance"] < diff_price:
            raise ToolError("Insufficient gift card balance to pay for the price difference")
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff_price
        return order

    @tool
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Look up a user id by first name, last name and zip code; an error comes back when no user matches. Look users up by email first, and use this only when the email finds no one or the user does not remember it.

        Args:
            first_name: The customer's first name, for example 'John'.
            last_name: The customer's last name, for example 'Doe'.
            zip: The customer's zip code, for example '12345'.
        """
        first, last = first_name.lower(), last_name.lower()
        for user_id, user in self.db["users"].items():
            name = user["name"]
            if name["first_name"].lower() == first and name["last_name"].lower() == last and user["address"]["zip"] == zip:
                return user_id
        raise ToolError("User not found")

    @tool
    def find_user_id_by_email(self, email: str) -> str:
        """Look up a user id by email address; an error comes back when no user has that email.

        Args:
            email: The user's email address, for example 'something@example.com'.
        """
        wanted = email.lower()
        for user_id, user in self.db["users"].items():
            if user["email"].lower() == wanted:
                return user_id
        raise ToolError("User not found")

    @tool
    def get_order_details(self, order_id: str) -> dict:
        """Get an order's status and details.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
        """
        return self._get_order(order_id)

    @tool
    def get_product_details(self, product_id: str) -> dict:
        """Get a product's inventory details: all its items (variants) with their options, availability and prices.

        Args:
            product_id: The product id, for example '6086499569'. A product id is not an item id.
        """
        return self._get_product(product_id)

    @tool
    def get_item_details(self, item_id: str) -> dict:
        """Get one item's inventory details: its options, availability and price.

        Args:
            item_id: The item id, for example '6086499569'. An item id is not a product id.
        """
        return self._get_item(item_id)

    @tool
    def get_user_details(self, user_id: str) -> dict:
        """Get a user's details, their orders included.

        Args:
            user_id: The user id, for example 'sara_doe_496'.
        """
        return self._get_user(user_id)

    @tool
    def list_all_product_types(self) -> str:
        """List every product type by name with its product id. Each product type comes in several items, each with its own item id and options. The store has only 50 product types.

        Returns:
            A JSON object from product name to product id, with the names in alphabetical order.
        """
        names = {product["name"]: product["product_id"] for product in self.db["products"].values()}
        return json.dumps(names, sort_keys=True)

    @tool(write=True)
    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict:
        """Change the shipping address of a pending order. Explain the change and get an explicit yes from the user first. Returns the order as it is after the change.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            address1: The first address line, for example '123 Main St'.
            address2: The second address line, for example 'Apt 1', or ''.
            city: The city, for example 'San Francisco'.
            state: The state, for example 'CA'.
            country: The country, for example 'USA'.
            zip: The zip code, for example '12345'.
        """
        order = self._get_order(order_id)
        if "pending" not in order["status"]:
            raise ToolError("Non-pending order cannot be modified")
        order["address"] = address_record(
            {"address1": address1, "address2": address2, "city": city, "state": state, "country": country, "zip": zip}
        )
        return order

    @tool(write=True)
    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict:
        """Swap items of a pending order for other items of the same product. A pending order's items can be modified only once. Explain the change and get an explicit yes from the user first. Returns the order as it is after the change.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            item_ids: The ids of the items to replace, each like '1008292230'; an id may appear more than once.
            new_item_ids: The ids of the replacement items, each like '1008292230'; an id may appear more than once. The new id at each position must be a variant of the same product as the old id at that position.
            payment_method_id: The payment method that pays, or is refunded, the price difference, for example 'gift_card_0000000' or 'credit_card_0000000'; find it in the user's or the order's details.
        """
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be modified")
        self._check_counts(order, item_ids, lambda i: f"{i} not found")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match")
        diff_price = 0
        variant = None
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            if item_id == new_item_id:
                raise ToolError("The new item id should be different from the old item id")
            item, variant = self._new_variant(order, item_id, new_item_id)
            diff_price += variant["price"] - item["price"]
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if _is_gift_card(method) and method["balance"] < diff_price:
            raise ToolError("Insufficient gift card balance to pay for the new item")
        order["payment_history"].append(
            {
                "transaction_type": "payment" if diff_price > 0 else "refund",
                "amount": float(abs(diff_price)),
                "payment_method_id": payment_method_id,
            }
        )
        if _is_gift_card(method):
            method["balance"] = round(method["balance"] - diff_price, 2)
        # tau2-bench v1.0.1 quirk, kept on purpose: each item gets its own new id, but the price
        # and options of the LAST variant checked above (tau2 reuses that loop's variable), so a
        # call that modifies several items leaves all of them with one variant's price/options.
        # The price difference charged above is still the sum of the right per-item differences.
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            item = self._first_item(order, item_id)
            item["item_id"] = new_item_id
            item["price"] = variant["price"]
            item["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return order

    @tool(write=True)
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict:
        """Change the payment method of a pending order. Explain the change and get an explicit yes from the user first. Returns the order as it is after the change.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            payment_method_id: The payment method to pay with instead, for example 'gift_card_0000000' or 'credit_card_0000000'; find it in the user's or the order's details.
        """
        order = self._get_order(order_id)
        if "pending" not in order["status"]:
            raise ToolError("Non-pending order cannot be modified")
        method = self._get_payment_method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ToolError("There should be exactly one payment for a pending order")
        old_id = history[0]["payment_method_id"]
        if old_id == payment_method_id:
            raise ToolError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if _is_gift_card(method) and method["balance"] < amount:
            raise ToolError("Insufficient gift card balance to pay for the order")
        history.append({"transaction_type": "payment", "amount": float(amount), "payment_method_id": payment_method_id})
        history.append({"transaction_type": "refund", "amount": float(amount), "payment_method_id": old_id})
        if _is_gift_card(method):
            method["balance"] = round(method["balance"] - amount, 2)
        old_method = self._get_payment_method(order["user_id"], old_id)
        if _is_gift_card(old_method):
            old_method["balance"] = round(old_method["balance"] + amount, 2)
        return order

    @tool(write=True)
    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict:
        """Change a user's default address. Explain the change and get an explicit yes from the user first. Returns the user as they are after the change.

        Args:
            user_id: The user id, for example 'sara_doe_496'.
            address1: The first address line, for example '123 Main St'.
            address2: The second address line, for example 'Apt 1', or ''.
            city: The city, for example 'San Francisco'.
            state: The state, for example 'CA'.
            country: The country, for example 'USA'.
            zip: The zip code, for example '12345'.
        """
        user = self._get_user(user_id)
        user["address"] = address_record(
            {"address1": address1, "address2": address2, "city": city, "state": state, "country": country, "zip": zip}
        )
        return user

    @tool(write=True)
    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict:
        """Request the return of some items of a delivered order; the order becomes 'return requested' and the user gets an email explaining how and where to send the items back. Explain the return and get an explicit yes from the user first. Returns the order as it is after the return request.

        Args:
            order_id: The order id, for example '#W0000000' (note the leading '#').
            item_ids: The ids of the items to return, each like '1008292230'; an id may appear more than once.
            payment_method_id: The payment method that receives the refund, for example 'gift_card_0000000' or 'credit_card_0000000': the order's original payment method or a gift card; find it in the user's or the order's details.
        """
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be returned")
        user = self._get_user(order["user_id"])
        method = self._get_payment_method(user["user_id"], payment_method_id)
        if not _is_gift_card(method) and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise ToolError("Payment method should be the original payment method")
        self._check_counts(order, item_ids, lambda i: "Some item not found")
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the user over to a human agent, with a summary of the user's issue. Transfer only when the user explicitly asks for a human agent, or when the policy and the tools available leave you unable to solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"
