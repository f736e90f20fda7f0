"""The airline domain's data shapes, as tau2's ``domains/airline/data_model.py`` dumps them.

State is the plain dict of ``db.json``: ``{"flights": {number: Flight}, "users": {id: User},
"reservations": {id: Reservation}}``. ``normalize`` rebuilds every record in the field order and
with the defaults of tau2's pydantic ``model_dump()`` (``"status": null`` on a reservation that is
not cancelled, ``address2: null`` when absent, gift card / certificate amounts as floats, payment
amounts and prices as ints), so that tool results serialize to tau2's JSON text.

The small pydantic models below are the tools' structured arguments (their JSON schema is what the
agent sees, and their validation errors are the ones tau2 reports).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

FlightType = Literal["round_trip", "one_way"]
CabinClass = Literal["business", "economy", "basic_economy"]
Insurance = Literal["yes", "no"]


class FlightInfo(BaseModel):
    flight_number: str = Field(description="The flight number, such as 'HAT001'.")
    date: str = Field(description="The date of the flight, as 'YYYY-MM-DD', such as '2024-05-01'.")


class Passenger(BaseModel):
    first_name: str = Field(description="The passenger's first name")
    last_name: str = Field(description="The passenger's last name")
    dob: str = Field(description="The passenger's date of birth, as YYYY-MM-DD")


class Payment(BaseModel):
    payment_id: str = Field(description="The ID of a payment method in the user's profile")
    amount: int = Field(description="The amount in dollars")


# ---- record builders in tau2's field order ------------------------------------------------------

def passenger_record(p: dict) -> dict:
    return {"first_name": p.get("first_name"), "last_name": p.get("last_name"), "dob": p.get("dob")}


def payment_record(p: dict) -> dict:
    return {"payment_id": p.get("payment_id"), "amount": _int(p.get("amount"))}


def reservation_flight_record(f: dict) -> dict:
    return {
        "flight_number": f.get("flight_number"),
        "origin": f.get("origin"),
        "destination": f.get("destination"),
        "date": f.get("date"),
        "price": _int(f.get("price")),
    }


def payment_method_record(m: dict) -> dict:
    source = m.get("source")
    if source == "credit_card":
        return {"source": source, "id": m.get("id"), "brand": m.get("brand"), "last_four": m.get("last_four")}
    return {"source": source, "id": m.get("id"), "amount": _float(m.get("amount"))}


_DATE_FIELDS = {
    "available": ("available_seats", "prices"),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}


def flight_date_record(d: dict) -> dict:
    status = d.get("status")
    out = {"status": status}
    for name in _DATE_FIELDS.get(status, tuple(k for k in d if k != "status")):
        value = d.get(name)
        if name in ("available_seats", "prices") and isinstance(value, dict):
            value = {k: _int(v) for k, v in value.items()}
        out[name] = value
    return out


def flight_record(f: dict) -> dict:
    return {
        "flight_number": f.get("flight_number"),
        "origin": f.get("origin"),
        "destination": f.get("destination"),
        "scheduled_departure_time_est": f.get("scheduled_departure_time_est"),
        "scheduled_arrival_time_est": f.get("scheduled_arrival_time_est"),
        "dates": {k: flight_date_record(v) for k, v in (f.get("dates") or {}).items()},
    }


def user_record(u: dict) -> dict:
    name = u.get("name") or {}
    address = u.get("address") or {}
    return {
        "user_id": u.get("user_id"),
        "name": {"first_name": name.get("first_name"), "last_name": name.get("last_name")},
        "address": {
            "address1": address.get("address1"),
            "address2": address.get("address2"),
            "city": address.get("city"),
            "country": address.get("country"),
            "state": address.get("state"),
            "zip": address.get("zip"),
        },
        "email": u.get("email"),
        "dob": u.get("dob"),
        "payment_methods": {k: payment_method_record(m) for k, m in (u.get("payment_methods") or {}).items()},
        "saved_passengers": [passenger_record(p) for p in u.get("saved_passengers") or []],
        "membership": u.get("membership"),
        "reservations": list(u.get("reservations") or []),
    }


def reservation_record(r: dict) -> dict:
    return {
        "reservation_id": r.get("reservation_id"),
        "user_id": r.get("user_id"),
        "origin": r.get("origin"),
        "destination": r.get("destination"),
        "flight_type": r.get("flight_type"),
        "cabin": r.get("cabin"),
        "flights": [reservation_flight_record(f) for f in r.get("flights") or []],
        "passengers": [passenger_record(p) for p in r.get("passengers") or []],
        "payment_history": [payment_record(p) for p in r.get("payment_history") or []],
        "created_at": r.get("created_at"),
        "total_baggages": _int(r.get("total_baggages")),
        "nonfree_baggages": _int(r.get("nonfree_baggages")),
        "insurance": r.get("insurance"),
        "status": r.get("status"),
    }


def normalize(db: dict) -> dict:
    """The db in the shape of tau2's ``FlightDB.model_dump()`` (unknown keys dropped)."""
    return {
        "flights": {k: flight_record(v) for k, v in (db.get("flights") or {}).items()},
        "users": {k: user_record(v) for k, v in (db.get("users") or {}).items()},
        "reservations": {k: reservation_record(v) for k, v in (db.get("reservations") or {}).items()},
    }


def _int(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _float(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
