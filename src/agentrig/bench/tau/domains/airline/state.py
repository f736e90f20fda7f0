"""The airline state's lookups and shared rules (the tools are in ``tools.py``): records by id
with tau2's "not found" errors, new reservation ids, the direct-flight search and charging a price
change to a payment method."""

from __future__ import annotations

from ...toolkit import ToolError
from .models import Payment, payment_record

NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")


class AirlineState:
    """Mixed into ``AirlineTools``: reads and writes ``self.db`` (the airline db)."""

    db: dict

    def _get_user(self, user_id: str) -> dict:
        users = self.db["users"]
        if user_id not in users:
            raise ToolError(f"User {user_id} not found")
        return users[user_id]

    def _get_reservation(self, reservation_id: str) -> dict:
        reservations = self.db["reservations"]
        if reservation_id not in reservations:
            raise ToolError(f"Reservation {reservation_id} not found")
        return reservations[reservation_id]

    def _get_flight(self, flight_number: str) -> dict:
        flights = self.db["flights"]
        if flight_number not in flights:
            raise ToolError(f"Flight {flight_number} not found")
        return flights[flight_number]

    def _get_flight_instance(self, flight_number: str, date: str) -> dict:
        flight = self._get_flight(flight_number)
        if date not in flight["dates"]:
            raise ToolError(f"Flight {flight_number} not found on date {date}")
        return flight["dates"][date]

    def _new_reservation_id(self) -> str:
        for reservation_id in NEW_RESERVATION_IDS:
            if reservation_id not in self.db["reservations"]:
                return reservation_id
        raise ToolError("Too many reservations")

    def _search_direct_flight(self, date: str, origin: str | None = None, destination: str | None = None,
                              leave_after: str | None = None) -> list[dict]:
        results = []
        for flight in self.db["flights"].values():
            if origin is not None and flight["origin"] != origin:
                continue
            if destination is not None and flight["destination"] != destination:
                continue
            instance = flight["dates"].get(date)
            if instance is None or instance["status"] != "available":
                continue
            if leave_after is not None and not flight["scheduled_departure_time_est"] >= leave_after:
                continue
            results.append({
                "flight_number": flight["flight_number"],
                "origin": flight["origin"],
                "destination": flight["destination"],
                "status": "available",
                "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                "date": None,
                "available_seats": dict(instance["available_seats"]),
                "prices": dict(instance["prices"]),
            })
        return results

    def _payment_for_update(self, user: dict, payment_id: str, total_price: int) -> dict | None:
        """Charge (or refund, when negative) a price change to one saved payment method."""
        methods = user["payment_methods"]
        if payment_id not in methods:
            raise ToolError("Payment method not found")
        method = methods[payment_id]
        if method["source"] == "certificate":
            raise ToolError("Certificate cannot be used to update reservation")
        if method["source"] == "gift_card" and method["amount"] < total_price:
            raise ToolError("Gift card balance is not enough")
        if method["source"] == "gift_card":
            method["amount"] -= total_price
        if total_price != 0:
            return payment_record(Payment(payment_id=payment_id, amount=total_price).model_dump())
        return None
