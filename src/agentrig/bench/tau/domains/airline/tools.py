"""The airline agent's 14 tools, with tau2-bench's names, parameters, state changes, results and
error conditions (tau2 ``domains/airline/tools.py`` at v1.0.x; exact id matching).

Results are the dicts tau2's models dump to (see ``models.py``). Quirks kept on purpose, because
tau2's scores depend on them: cancelling does not release seats, changing flights does not move
seats either, a second cancellation refunds again, the one-stop search builds the next day's date
as ``2024-05-<day + 1>`` (no zero padding), new ids come from fixed lists.
"""

from __future__ import annotations


from pydantic import BaseModel

from ...calculator import calculate
from ...toolkit import Toolkit, ToolError, tool
from .models import (
    CabinClass,
    FlightInfo,
    FlightType,
    Insurance,
    Passenger,
    Payment,
    passenger_record,
    payment_record,
)
from .state import AirlineState

NEW_PAYMENT_IDS = (3221322, 3221323, 3221324)
NOW = "2024-05-15T15:00:00"

AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"),
    ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"),
    ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)


def _parse_items(items: list, model: type[BaseModel]) -> list:
    """tau2 turns the list into models only when every item is a dict (validation errors are
    pydantic's own); anything else is used as given."""
    items = [x.model_dump() if isinstance(x, BaseModel) else x for x in items]
    if all(isinstance(x, dict) for x in items):
        return [model(**x) for x in items]
    return items


class AirlineTools(AirlineState, Toolkit):
    """All the tools of the airline domain."""

    db: dict

    # ---- tools (in tau2's order) -----------------------------------------------------------

    @tool(write=True)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: FlightType,
        cabin: CabinClass,
        flights: list[FlightInfo | dict],
        passengers: list[Passenger | dict],
        payment_methods: list[Payment | dict],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Insurance,
    ) -> dict:
        """Book a new reservation.

        Args:
            user_id: The ID of the user the reservation is for, such as 'sara_doe_496'.
            origin: The IATA code of the trip's origin city, such as 'SFO'.
            destination: The IATA code of the trip's destination city, such as 'JFK'.
            flight_type: The type of trip: 'one_way' or 'round_trip'.
            cabin: The cabin class: 'basic_economy', 'economy' or 'business'.
            flights: One object per flight segment of the trip.
            passengers: One object per passenger.
            payment_methods: One object per payment method used, with the amount charged to it.
            total_baggages: The total number of checked bags of the reservation.
            nonfree_baggages: How many of those bags are paid for.
            insurance: Whether travel insurance is bought: 'yes' or 'no'.
        """
        flights = _parse_items(flights, FlightInfo)
        passengers = _parse_items(passengers, Passenger)
        payment_methods = _parse_items(payment_methods, Payment)
        user = self._get_user(user_id)
        reservation_id = self._new_reservation_id()
        reservation = {
            "reservation_id": reservation_id,
            "user_id": user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": [],
            "passengers": [passenger_record(p.model_dump()) for p in passengers],
            "payment_history": [payment_record(p.model_dump()) for p in payment_methods],
            "created_at": NOW,
            "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
            "status": None,
        }
        total_price = 0
        instances = []
        for info in flights:
            number = info.flight_number
            flight = self._get_flight(number)
            instance = self._get_flight_instance(number, info.date)
            if instance["status"] != "available":
                raise ToolError(f"Flight {number} not available on date {info.date}")
            if instance["available_seats"][cabin] < len(passengers):
                raise ToolError(f"Not enough seats on flight {number}")
            price = instance["prices"][cabin]
            reservation["flights"].append({
                "flight_number": number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": info.date,
                "price": price,
            })
            instances.append(instance)
            total_price += price * len(passengers)
        if insurance == "yes":
            total_price += 30 * len(passengers)
        total_price += 50 * nonfree_baggages

        methods = user["payment_methods"]
        for payment in payment_methods:
            if payment.payment_id not in methods:
                raise ToolError(f"Payment method {payment.payment_id} not found")
            method = methods[payment.payment_id]
            if method["source"] in ("gift_card", "certificate") and method["amount"] < payment.amount:
                raise ToolError(f"Not enough balance in payment method {payment.payment_id}")
        total_payment = sum(p.amount for p in payment_methods)
        if total_payment != total_price:
            raise ToolError(
                f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}"
            )
        for payment in payment_methods:
            method = methods[payment.payment_id]  # a certificate listed twice fails here, as in tau2
            if method["source"] == "gift_card":
                method["amount"] -= payment.amount
            elif method["source"] == "certificate":
                methods.pop(payment.payment_id)
        for instance in instances:
            instance["available_seats"][cabin] -= len(passengers)
        self.db["reservations"][reservation_id] = reservation
        self.db["users"][user_id]["reservations"].append(reservation_id)
        return reservation

    @tool
    def calculate(self, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The expression to calculate, such as '2 + 2'. It may contain only numbers, the operators +, -, *, /, parentheses and spaces.
        """
        return calculate(expression)

    @tool(write=True)
    def cancel_reservation(self, reservation_id: str) -> dict:
        """Cancel a whole reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
        """
        reservation = self._get_reservation(reservation_id)
        refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    @tool
    def get_reservation_details(self, reservation_id: str) -> dict:
        """Get the details of a reservation.

        Args:
            reservation_id: The reservation ID, such as '8JX2WO'.
        """
        return self._get_reservation(reservation_id)

    @tool
    def get_user_details(self, user_id: str) -> dict:
        """Get the details of a user, their reservations included.

        Args:
            user_id: The user ID, such as 'sara_doe_496'.
        """
        return self._get_user(user_id)

    @tool
    def list_all_airports(self) -> list:
        """List all the airports served, with their cities."""
        return [{"iata": iata, "city": city} for iata, city in AIRPORTS]

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list:
        """Search the direct flights between two cities on a given date, with their departure and arrival times, flight numbers, seats left and prices per cabin.

        Args:
            origin: The three-letter airport code of the origin city, such as 'JFK'.
            destination: The three-letter airport code of the destination city, such as 'LAX'.
            date: The date of the flight, as 'YYYY-MM-DD', such as '2024-01-01'.
        """
        return self._search_direct_flight(date=date, origin=origin, destination=destination)

    @tool
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list:
        """Search the one-stop connections between two cities on a given date, with their departure and arrival times, flight numbers, seats left and prices per cabin.

        Args:
            origin: The three-letter airport code of the origin city, such as 'JFK'.
            destination: The three-letter airport code of the destination city, such as 'LAX'.
            date: The date of the first flight, as 'YYYY-MM-DD', such as '2024-05-01'.
        """
        results = []
        for first in self._search_direct_flight(date=date, origin=origin, destination=None):
            first["date"] = date
            date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
            for second in self._search_direct_flight(
                date=date2,
                origin=first["destination"],
                destination=destination,
                leave_after=first["scheduled_arrival_time_est"],
            ):
                second["date"] = date2
                results.append([first, second])
        return results

    @tool(write=True)
    def send_certificate(self, user_id: str, amount: int) -> str:
        """Send a travel certificate to a user. Use with care!

        Args:
            user_id: The ID of the user who receives the certificate, such as 'sara_doe_496'.
            amount: The value of the certificate, in dollars.
        """
        user = self._get_user(user_id)
        methods = user["payment_methods"]
        for number in NEW_PAYMENT_IDS:
            payment_id = f"certificate_{number}"
            if payment_id not in methods:
                methods[payment_id] = {"source": "certificate", "id": payment_id, "amount": float(amount)}
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ToolError("Too many certificates")

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
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> dict:
        """Update the checked bags of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            total_baggages: The new total number of checked bags of the reservation.
            nonfree_baggages: The new number of paid checked bags of the reservation.
            payment_id: The ID of a payment method saved in the user's profile, such as 'credit_card_7815826', 'gift_card_7815826' or 'certificate_7815826'.
        """
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation["user_id"])
        total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        payment = self._payment_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return reservation

    @tool(write=True)
    def update_reservation_flights(
        self, reservation_id: str, cabin: CabinClass, flights: list[FlightInfo | dict], payment_id: str
    ) -> dict:
        """Update the flights of a reservation. The price difference is charged to, or refunded to, the given payment method.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            cabin: The cabin class of the reservation.
            flights: One object per flight segment of the WHOLE new reservation; segments that do not change must be listed too.
            payment_id: The ID of a payment method saved in the user's profile, such as 'credit_card_7815826', 'gift_card_7815826' or 'certificate_7815826'.
        """
        flights = _parse_items(flights, FlightInfo)
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation["user_id"])
        n_passengers = len(reservation["passengers"])
        total_price = 0
        new_flights = []
        for info in flights:
            kept = next(
                (
                    f for f in reservation["flights"]
                    if f["flight_number"] == info.flight_number and f["date"] == info.date
                    and cabin == reservation["cabin"]
                ),
                None,
            )
            if kept is not None:
                total_price += kept["price"] * n_passengers
                new_flights.append(kept)
                continue
            flight = self._get_flight(info.flight_number)
            instance = self._get_flight_instance(info.flight_number, info.date)
            if instance["status"] != "available":
                raise ToolError(f"Flight {info.flight_number} not available on date {info.date}")
            if instance["available_seats"][cabin] < n_passengers:
                raise ToolError(f"Not enough seats on flight {info.flight_number}")
            segment = {
                "flight_number": info.flight_number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": info.date,
                "price": instance["prices"][cabin],
            }
            total_price += segment["price"] * n_passengers
            new_flights.append(segment)
        total_price -= sum(f["price"] for f in reservation["flights"]) * n_passengers
        payment = self._payment_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["flights"] = new_flights
        reservation["cabin"] = cabin
        return reservation

    @tool(write=True)
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Passenger | dict]) -> dict:
        """Update the passengers of a reservation (their number cannot change).

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            passengers: One object per passenger.
        """
        passengers = _parse_items(passengers, Passenger)
        reservation = self._get_reservation(reservation_id)
        if len(passengers) != len(reservation["passengers"]):
            raise ToolError("Number of passengers does not match")
        reservation["passengers"] = [passenger_record(p.model_dump()) for p in passengers]
        return reservation

    @tool
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """Get the status of a flight on a date.

        Args:
            flight_number: The flight number.
            date: The date of the flight.
        """
        return self._get_flight_instance(flight_number, date)["status"]

