"""The bikeshop functions that tasks call directly, not tools: ``initialization_actions`` set a
scene up, ``env_assertions`` check the end state. The engine finds them with ``getattr`` on the
agent-side toolkit, so they are plain methods; the agent never sees them.
"""

from __future__ import annotations

from ...toolkit import ToolError
from . import rules


class ShopChecks:
    """Mixed into ``BikeshopTools``; uses its ``db`` and its ``_customer`` / ``_bike`` /
    ``_rental`` / ``_repair`` lookups (which raise ``ToolError`` for an unknown id)."""

    db: dict

    def set_bike_status(self, bike_id: str, status: str) -> dict:
        """Put a rental bike in or out of service ('in_service' or 'maintenance')."""
        if status not in ("in_service", "maintenance"):
            raise ToolError(f"Unknown bike status '{status}'")
        bike = self._bike(bike_id)
        bike["status"] = status
        return bike

    def assert_rental_status(self, rental_id: str, expected_status: str) -> bool:
        return self._rental(rental_id)["status"] == expected_status

    def assert_store_credit_balance(self, customer_id: str, expected_balance: int) -> bool:
        customer = self._customer(customer_id)
        credits = [m for m in customer["payment_methods"].values() if m["kind"] == "store_credit"]
        return sum(m["balance"] for m in credits) == expected_balance

    def assert_bike_booked(self, bike_id: str, customer_id: str, start_date: str, end_date: str) -> bool:
        """Whether the customer holds a reserved rental of the bike for exactly these dates."""
        return any(
            r["bike_id"] == bike_id and r["customer_id"] == customer_id and r["status"] == "reserved"
            and r["start_date"] == start_date and r["end_date"] == end_date
            for r in self.db["rentals"].values()
        )

    def assert_repair_quote(self, repair_id: str, expected_quote: int) -> bool:
        return self._repair(repair_id)["quote"] == expected_quote

    def assert_no_open_rentals(self, customer_id: str) -> bool:
        """Whether none of the customer's rentals is reserved or active."""
        return not any(
            r["customer_id"] == customer_id and r["status"] in rules.BOOKING_STATUSES
            for r in self.db["rentals"].values()
        )
