"""The shop's arithmetic: dates, prices, fees and ids (no clock: "today" is ``db["shop"]["today"]``).

Everything here is a pure function of plain data, so the tools stay short and the tests can
check the rules directly. Money is whole US dollars (ints) throughout.
"""

from __future__ import annotations

import datetime as dt
import re

from ...toolkit import ToolError

CLUB_DISCOUNT_PERCENT = 10
FREE_CANCELLATION_DAYS = 2  # cancelled at least this many days before the start: no fee
CLOSED_WEEKDAY = 0  # Monday
BIKE_CATEGORIES = ("city", "road", "mountain", "ebike", "kids", "tandem")
BOOKING_STATUSES = ("reserved", "active")  # rentals that hold their bike
OPEN_REPAIR_STATUSES = ("booked", "in_progress", "ready")
PHONE_RE = re.compile(r"^\d{3}-\d{3}-\d{4}$")


def parse_date(value: str, what: str) -> dt.date:
    """A ``YYYY-MM-DD`` date, or a ToolError naming the argument."""
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{what} '{value}' is not a valid date; use the format YYYY-MM-DD") from None


def today(db: dict) -> dt.date:
    return dt.date.fromisoformat(db["shop"]["today"])


def weekday_name(day: dt.date) -> str:
    return day.strftime("%A")


def is_closed(day: dt.date) -> bool:
    return day.weekday() == CLOSED_WEEKDAY


def next_open_day(day: dt.date) -> dt.date:
    while is_closed(day):
        day += dt.timedelta(days=1)
    return day


def rental_days(start: dt.date, end: dt.date) -> int:
    """Days billed for a rental from ``start`` to ``end``, both included."""
    return (end - start).days + 1


def club_discount(gross: int, membership: str) -> int:
    """The club discount on a gross amount, rounded down to whole dollars."""
    return gross * CLUB_DISCOUNT_PERCENT // 100 if membership == "club" else 0


def cancellation_fee(rental: dict, membership: str, on: dt.date) -> int:
    """The fee kept when a rental is cancelled on day ``on``: one day's rate when the start is
    less than two days away (or already past), nothing for club members, never more than paid."""
    if membership == "club":
        return 0
    days_ahead = (dt.date.fromisoformat(rental["start_date"]) - on).days
    if days_ahead >= FREE_CANCELLATION_DAYS:
        return 0
    return min(rental["daily_rate"], amount_paid(rental))


def amount_paid(rental: dict) -> int:
    """What the customer has paid for a rental so far, net of refunds."""
    return sum(c["amount"] for c in rental["charges"]) - sum(r["amount"] for r in rental["refunds"])


def overlaps(a_start: str, a_end: str, b_start: str, b_end: str) -> bool:
    """Whether two inclusive date ranges (ISO strings) share a day."""
    return a_start <= b_end and b_start <= a_end


def bike_is_free(db: dict, bike_id: str, start: str, end: str, ignore_rental: str | None = None) -> bool:
    """Whether the bike is in service and no reserved/active rental holds it on any day of the range."""
    bike = db["bikes"][bike_id]
    if bike["status"] != "in_service":
        return False
    for rental in db["rentals"].values():
        if rental["bike_id"] != bike_id or rental["rental_id"] == ignore_rental:
            continue
        if rental["status"] in BOOKING_STATUSES and overlaps(start, end, rental["start_date"], rental["end_date"]):
            return False
    return True


def next_id(existing: dict, prefix: str) -> str:
    """``prefix`` + one more than the largest number among the ids that carry it."""
    numbers = [int(key[len(prefix):]) for key in existing if key.startswith(prefix) and key[len(prefix):].isdigit()]
    return f"{prefix}{max(numbers, default=0) + 1}"


def repair_schedule(db: dict, service_codes: list[str], dropoff: dt.date) -> tuple[int, str]:
    """(quote, ready date) of a work order: the services' prices summed; ready after the longest
    service takes, moved past a closed day."""
    services = [db["services"][code] for code in service_codes]
    quote = sum(s["price"] for s in services)
    days = max((s["duration_days"] for s in services), default=0)
    ready = next_open_day(dropoff + dt.timedelta(days=days))
    return quote, ready.isoformat()
