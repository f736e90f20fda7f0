"""The telecom agent's tools (13, as in tau2-bench's ``TelecomTools``) plus the agent-side
functions tasks call in ``initialization_actions`` and ``env_assertions``.

State: the agent-side dict of ``db.toml`` (``records.normalize_db``). "Today" is 2025-02-25, as
in tau2. Tool results are what tau2 returns: records shown as its pydantic models dump them,
plain dicts with their numbers stringified (``PlainResult``), strings as they are.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, timedelta
from typing import Any

from ...toolkit import PlainResult, Toolkit, ToolError, tool
from .records import agent_view, line_item, new_bill

TODAY = date(2025, 2, 25)
_KIND_BY_PREFIX = (("L", "line"), ("D", "device"), ("B", "bill"), ("C", "customer"), ("P", "plan"))


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


class TelecomTools(Toolkit):
    """The carrier's systems as the agent sees them: customers, lines, plans, bills, devices."""

    # ---- lookups (not tools) -------------------------------------------------------------------

    def _find(self, collection: str, key: str, value: str, what: str) -> dict:
        for record in self.db[collection]:
            if record[key] == value:
                return record
        raise ToolError(f"{what} with ID {value} not found")

    def _line(self, line_id: str) -> dict:
        return self._find("lines", "line_id", line_id, "Line")

    def _plan(self, plan_id: str) -> dict:
        return self._find("plans", "plan_id", plan_id, "Plan")

    def _device(self, device_id: str) -> dict:
        return self._find("devices", "device_id", device_id, "Device")

    def _bill(self, bill_id: str) -> dict:
        return self._find("bills", "bill_id", bill_id, "Bill")

    def _customer(self, customer_id: str) -> dict:
        return self._find("customers", "customer_id", customer_id, "Customer")

    def _line_by_phone(self, phone_number: str) -> dict:
        for line in self.db["lines"]:
            if line["phone_number"] == phone_number:
                return line
        raise ToolError(f"Line with phone number {phone_number} not found")

    def _customer_by_phone(self, phone_number: str) -> dict:
        for customer in self.db["customers"]:
            if customer["phone_number"] == phone_number:
                return customer
            for line_id in customer["line_ids"]:
                if self._line(line_id)["phone_number"] == phone_number:
                    return customer
        raise ToolError(f"Customer with phone number {phone_number} not found")

    def _customer_line(self, customer_id: str, line_id: str) -> dict:
        customer = self._customer(customer_id)
        if line_id not in customer["line_ids"]:
            raise ToolError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id)

    def _awaiting_payment(self, customer: dict) -> list[dict]:
        bills = (self._bill(bill_id) for bill_id in customer["bill_ids"])
        return [bill for bill in bills if bill["status"] == "Awaiting Payment"]

    def _set_bill_paid(self, bill_id: str) -> str:
        self._bill(bill_id)["status"] = "Paid"
        return f"Bill {bill_id} set to paid"

    def get_available_plan_ids(self) -> list[str]:
        return [plan["plan_id"] for plan in self.db["plans"]]

    def _new_bill_id(self, customer_id: str) -> str:
        # tau2 draws a random "B" + 8 hex digits; a digest of the customer and the bill count
        # keeps the same shape and makes two plays of the same calls end in the same state
        seed = f"{customer_id}:{len(self.db['bills'])}".encode()
        return "B" + hashlib.sha256(seed).hexdigest()[:8]

    def _apply_one_time_charge(self, customer_id: str, amount: float, description: str) -> None:
        """Add a charge (or a credit, when negative) to the customer's draft bill, creating the
        draft bill of next month when there is none."""
        customer = self._customer(customer_id)
        draft = next(
            (bill for bill in map(self._bill, customer["bill_ids"]) if bill["status"] == "Draft"), None
        )
        if draft is None:
            start = (TODAY.replace(day=1) + timedelta(days=32)).replace(day=1)
            following = (start + timedelta(days=32)).replace(day=1)
            bill_id = self._new_bill_id(customer_id)
            draft = new_bill(
                bill_id=bill_id, customer_id=customer_id, period_start=start.isoformat(),
                period_end=(following - timedelta(days=1)).isoformat(), issue_date=start.isoformat(),
                total_due=0, due_date=(start + timedelta(days=14)).isoformat(), status="Draft",
            )
            self.db["bills"].append(draft)
            customer["bill_ids"].append(bill_id)
        kind = "Credit" if amount < 0 else "Charge"
        draft["line_items"].append(line_item(description, amount, TODAY.isoformat(), kind))
        draft["total_due"] += amount

    # ---- customer lookup -----------------------------------------------------------------------

    @tool
    def get_customer_by_phone(self, phone_number: str) -> dict:
        """Find the customer whose primary contact number, or one of whose lines' numbers, is the given phone number.

        Args:
            phone_number: The phone number to look for.
        """
        return agent_view("customer", self._customer_by_phone(phone_number))

    @tool
    def get_customer_by_id(self, customer_id: str) -> dict:
        """Get a customer by their unique customer ID.

        Args:
            customer_id: The customer's unique ID.
        """
        return agent_view("customer", self._customer(customer_id))

    @tool
    def get_customer_by_name(self, full_name: str, dob: str) -> list:
        """Find customers by full name and date of birth. Several customers can match similar names; the date of birth tells them apart.

        Args:
            full_name: The customer's full name.
            dob: The customer's date of birth, as YYYY-MM-DD.
        """
        wanted = full_name.lower()
        return [
            agent_view("customer", c)
            for c in self.db["customers"]
            if c["full_name"].lower() == wanted and c["date_of_birth"] == dob
        ]

    @tool
    def get_details_by_id(self, id: str) -> dict:
        """Get the record behind an ID: a customer (C...), line (L...), device (D...), bill (B...) or plan (P...).

        Args:
            id: The ID of the record to get.
        """
        for prefix, kind in _KIND_BY_PREFIX:
            if id.startswith(prefix):
                record = {
                    "line": self._line, "device": self._device, "bill": self._bill,
                    "customer": self._customer, "plan": self._plan,
                }[kind](id)
                return agent_view(kind, record)
        raise ToolError(f"Unknown ID format or type: {id}")

    # ---- lines ---------------------------------------------------------------------------------

    @tool(write=True)
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> str:
        """Suspend one of the customer's lines (for at most 6 months). The line must be Active; it becomes Suspended from today.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to suspend.
            reason: Why the line is suspended.
        """
        line = self._customer_line(customer_id, line_id)
        if line["status"] != "Active":
            raise ToolError("Line must be active to suspend")
        line["status"] = "Suspended"
        line["suspension_start_date"] = TODAY.isoformat()
        return _json({"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line})

    @tool(write=True)
    def resume_line(self, customer_id: str, line_id: str) -> str:
        """Resume a line that is Suspended or Pending Activation: it becomes Active and its suspension date is cleared.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to resume.
        """
        line = self._customer_line(customer_id, line_id)
        if line["status"] not in ("Suspended", "Pending Activation"):
            raise ToolError("Line must be suspended to resume")
        line["status"] = "Active"
        line["suspension_start_date"] = None
        return _json({"message": "Line resumed successfully", "line": line})

    # ---- billing -------------------------------------------------------------------------------

    @tool
    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list:
        """List the customer's bills, newest issue date first.

        Args:
            customer_id: ID of the customer.
            limit: The most bills to return.
        """
        customer = self._customer(customer_id)
        bills = sorted(map(self._bill, customer["bill_ids"]), key=lambda b: b["issue_date"], reverse=True)
        return bills[:limit]

    @tool(write=True)
    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        """Ask the customer to pay one of their bills: the bill becomes Awaiting Payment and the customer is notified. Fails when the bill is not the customer's or another of their bills already awaits payment. It does not check whether the bill is already paid: check the bill's status first.

        Args:
            customer_id: ID of the customer who owns the bill.
            bill_id: ID of the bill to request payment for.
        """
        customer = self._customer(customer_id)
        if self._awaiting_payment(customer):
            raise ToolError("A bill is already awaiting payment for this customer")
        if bill_id not in customer["bill_ids"]:
            raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
        bill = self._bill(bill_id)
        bill["status"] = "Awaiting Payment"
        return f"Payment request sent to the customer for bill {bill['bill_id']}"

    # ---- usage and roaming ---------------------------------------------------------------------

    @tool
    def get_data_usage(self, customer_id: str, line_id: str) -> PlainResult:
        """Get a line's data usage in the current billing cycle: data used, the plan's data limit, data refueled and the end date of the cycle.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line.
        """
        line = self._customer_line(customer_id, line_id)
        plan = self._plan(line["plan_id"])
        next_month = date(TODAY.year + (TODAY.month == 12), TODAY.month % 12 + 1, 1)
        return PlainResult({
            "line_id": line_id,
            "data_used_gb": line["data_used_gb"],
            "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"],
            "cycle_end_date": (next_month - timedelta(days=1)).isoformat(),
        })

    @tool(write=True)
    def enable_roaming(self, customer_id: str, line_id: str) -> str:
        """Turn on international roaming for a line.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line.
        """
        line = self._customer_line(customer_id, line_id)
        if line["roaming_enabled"]:
            return "Roaming was already enabled"
        line["roaming_enabled"] = True
        return "Roaming enabled successfully"

    @tool(write=True)
    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        """Turn off international roaming for a line.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line.
        """
        line = self._customer_line(customer_id, line_id)
        if not line["roaming_enabled"]:
            return "Roaming was already disabled"
        line["roaming_enabled"] = False
        return "Roaming disabled successfully"

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the user over to a human agent, with a summary of the user's issue.
        Transfer only when
        - the user explicitly asks for a human agent, or
        - the policy and the available tools do not let you solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"

    @tool(write=True)
    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> PlainResult:
        """Add data to a line for the current cycle, charged on the customer's next bill at the plan's refuelling price per GB.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to add data to.
            gb_amount: How much data to add, in GB.
        """
        line = self._customer_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ToolError("Refuel amount must be positive")
        plan = self._plan(line["plan_id"])
        price = plan["data_refueling_price_per_gb"]
        charge = gb_amount * price
        line["data_refueling_gb"] += gb_amount
        self._apply_one_time_charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
        return PlainResult({
            "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": line["data_refueling_gb"],
            "charge": charge,
        })

    # ---- task setup (not tools) ----------------------------------------------------------------

    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        self._customer_line(customer_id, line_id)["data_used_gb"] = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(
        self, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
    ) -> str:
        """Give the customer an overdue bill of one month's plan price for the line (issued last
        month) and suspend the line; with ``contract_ended`` its contract ended last month."""
        line = self._line(line_id)
        if line["status"] != "Active":
            raise ToolError("Line must be active to suspend for unpaid bill")
        amount = self._plan(line["plan_id"])["price_per_month"]
        if amount <= 0:
            raise ToolError("Amount must be positive for overdue bill")
        customer = self._customer(customer_id)
        if any(self._bill(b)["status"] == "Overdue" for b in customer["bill_ids"]):
            raise ToolError("Customer already has an overdue bill")
        last_month_end = TODAY.replace(day=1) - timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        bill = new_bill(
            bill_id=new_bill_id, customer_id=customer_id, period_start=last_month_start.isoformat(),
            period_end=last_month_end.isoformat(), issue_date=last_month_start.isoformat(), total_due=0,
            due_date=(last_month_start + timedelta(days=14)).isoformat(), status="Overdue",
        )
        bill["line_items"].append(
            line_item(f"Charge for line {line_id}", amount, TODAY.isoformat(), "Charge" if amount > 0 else "Credit")
        )
        bill["total_due"] += amount
        self.db["bills"].append(bill)
        customer["bill_ids"].append(new_bill_id)
        line["status"] = "Suspended"
        line["suspension_start_date"] = TODAY.isoformat()
        if contract_ended:
            line["contract_end_date"] = last_month_end.isoformat()
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    # ---- assertions (not tools) ----------------------------------------------------------------

    def assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        line = self._customer_line(customer_id, line_id)
        return abs(line["data_refueling_gb"] - expected_amount) < 1e-6

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        return self._customer_line(customer_id, line_id)["status"] == expected_status

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        customer = self._customer(customer_id)
        if overdue_bill_id not in customer["bill_ids"]:
            raise ToolError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id)["status"] != "Overdue":
            raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        """True when the bill is not in the database or is paid."""
        try:
            return self._bill(overdue_bill_id)["status"] == "Paid"
        except ToolError:
            return True
