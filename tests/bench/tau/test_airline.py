"""The airline domain's 14 tools on the real tau2-bench db: results, state changes, errors."""

from __future__ import annotations

import json

import pytest

from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.state import fresh_copy

SPEC = get_domain("airline")
USER = "mei_hernandez_8984"  # gift card 98, two certificates of 250, two credit cards
GIFT = "gift_card_5309492"
CERT = "certificate_7502997"
CARD = "credit_card_6082923"


@pytest.fixture()
def env(tau2_root):
    return Environment.fresh(SPEC, tau2_root / "domains" / "airline")


def call(env, name, **arguments):
    return env.call("assistant", name, arguments)


def ok(env, name, **arguments):
    out = call(env, name, **arguments)
    assert not out.error, out.text
    return out


def err(env, name, **arguments):
    out = call(env, name, **arguments)
    assert out.error, out.text
    assert out.text.startswith("Error: ")
    return out.text


def test_tool_set_and_write_flags():
    specs = {s.name: s for s in SPEC.agent_toolkit.tool_specs()}
    assert list(specs) == [
        "book_reservation", "calculate", "cancel_reservation", "get_reservation_details",
        "get_user_details", "list_all_airports", "search_direct_flight", "search_onestop_flight",
        "send_certificate", "transfer_to_human_agents", "update_reservation_baggages",
        "update_reservation_flights", "update_reservation_passengers", "get_flight_status",
    ]
    writes = {n for n, s in specs.items() if s.write}
    assert writes == {
        "book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
        "update_reservation_flights", "update_reservation_passengers",
    }
    book = specs["book_reservation"].parameters
    assert book["required"] == [
        "user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
        "payment_methods", "total_baggages", "nonfree_baggages", "insurance",
    ]
    assert book["properties"]["cabin"]["enum"] == ["business", "economy", "basic_economy"]
    assert book["properties"]["flight_type"]["enum"] == ["round_trip", "one_way"]
    assert book["properties"]["insurance"]["enum"] == ["yes", "no"]
    assert book["properties"]["total_baggages"]["type"] == "integer"
    assert set(book["$defs"]) == {"FlightInfo", "Passenger", "Payment"}
    assert book["$defs"]["Payment"]["properties"]["amount"]["type"] == "integer"
    assert specs["update_reservation_flights"].parameters["required"] == [
        "reservation_id", "cabin", "flights", "payment_id"
    ]
    assert specs["list_all_airports"].parameters["properties"] == {}
    for s in specs.values():
        assert s.description and all(p.get("description") for p in s.parameters["properties"].values())


def test_normalized_state_has_tau2_model_dump_shape(env):
    res = env.agent_state()["reservations"]["R9QDGB"]
    assert list(res) == [
        "reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights",
        "passengers", "payment_history", "created_at", "total_baggages", "nonfree_baggages",
        "insurance", "status",
    ]
    assert res["status"] is None
    assert list(res["flights"][0]) == ["flight_number", "origin", "destination", "date", "price"]
    flight = env.agent_state()["flights"]["HAT001"]
    assert list(flight)[:3] == ["flight_number", "origin", "destination"]
    user = env.agent_state()["users"][USER]
    assert isinstance(user["payment_methods"][GIFT]["amount"], float)


def test_get_user_and_reservation_details(env):
    user = json.loads(ok(env, "get_user_details", user_id=USER).text)
    assert user["reservations"] == ["R9QDGB", "07S7FC", "79G8A9", "1AKIA8"]
    assert user["payment_methods"][GIFT] == {"source": "gift_card", "id": GIFT, "amount": 98.0}
    text = ok(env, "get_reservation_details", reservation_id="R9QDGB").text
    assert text.startswith('{"reservation_id": "R9QDGB", "user_id": "mei_hernandez_8984", ')
    assert text.endswith('"insurance": "yes", "status": null}')
    assert err(env, "get_user_details", user_id="nobody_1") == "Error: User nobody_1 not found"
    assert err(env, "get_reservation_details", reservation_id="ZZZZZZ") == "Error: Reservation ZZZZZZ not found"
    assert err(env, "get_user_details") == (
        "Error: AirlineTools.get_user_details() missing 1 required positional argument: 'user_id'"
    )
    assert "unexpected keyword argument 'extra'" in err(env, "get_user_details", user_id=USER, extra=1)


def test_list_all_airports(env):
    airports = json.loads(ok(env, "list_all_airports").text)
    assert len(airports) == 20
    assert airports[0] == {"iata": "SFO", "city": "San Francisco"}
    assert {"iata": "LGA", "city": "LaGuardia"} in airports


def test_search_direct_flight_matches_the_db(env):
    flights = json.loads(ok(env, "search_direct_flight", origin="PHL", destination="LGA", date="2024-05-16").text)
    db = env.agent_state()["flights"]
    expected = [
        n for n, f in db.items()
        if f["origin"] == "PHL" and f["destination"] == "LGA"
        and f["dates"].get("2024-05-16", {}).get("status") == "available"
    ]
    assert [f["flight_number"] for f in flights] == expected and "HAT001" in expected
    first = flights[0]
    assert list(first) == [
        "flight_number", "origin", "destination", "status", "scheduled_departure_time_est",
        "scheduled_arrival_time_est", "date", "available_seats", "prices",
    ]
    assert first["date"] is None and first["status"] == "available"
    # the result is a snapshot: changing it does not change the db
    out = call(env, "search_direct_flight", origin="PHL", destination="LGA", date="2024-05-16")
    out.result[0]["available_seats"]["economy"] = -5
    assert db[out.result[0]["flight_number"]]["dates"]["2024-05-16"]["available_seats"]["economy"] != -5
    # dates that are not "available" (landed, cancelled, ...) are never offered
    landed = json.loads(ok(env, "search_direct_flight", origin="PHL", destination="LGA", date="2024-05-05").text)
    assert all(db[f["flight_number"]]["dates"]["2024-05-05"]["status"] == "available" for f in landed)


def test_search_onestop_flight(env):
    pairs = json.loads(ok(env, "search_onestop_flight", origin="JFK", destination="SEA", date="2024-05-16").text)
    assert pairs
    for first, second in pairs:
        assert first["origin"] == "JFK" and second["destination"] == "SEA"
        assert first["destination"] == second["origin"]
        assert first["date"] == "2024-05-16"
        assert second["scheduled_departure_time_est"] >= first["scheduled_arrival_time_est"]
        next_day = "+1" in first["scheduled_arrival_time_est"]
        assert second["date"] == ("2024-05-17" if next_day else "2024-05-16")


def test_search_onestop_flight_next_day_connections(env):
    pairs = json.loads(ok(env, "search_onestop_flight", origin="ATL", destination="JFK", date="2024-05-16").text)
    overnight = [(a, b) for a, b in pairs if "+1" in a["scheduled_arrival_time_est"]]
    assert overnight and all(b["date"] == "2024-05-17" for _, b in overnight)


def _mini_airline(day1: str, day2: str) -> Environment:
    seats = {"basic_economy": 5, "economy": 5, "business": 5}
    prices = {"basic_economy": 50, "economy": 100, "business": 300}
    avail = {"status": "available", "available_seats": seats, "prices": prices}
    db = {
        "flights": {
            "HAT900": {"flight_number": "HAT900", "origin": "SEA", "destination": "ATL",
                       "scheduled_departure_time_est": "22:00:00", "scheduled_arrival_time_est": "03:00:00+1",
                       "dates": {day1: dict(avail)}},
            "HAT901": {"flight_number": "HAT901", "origin": "ATL", "destination": "MIA",
                       "scheduled_departure_time_est": "06:00:00", "scheduled_arrival_time_est": "08:00:00",
                       "dates": {day2: json.loads(json.dumps(avail))}},
        },
        "users": {},
        "reservations": {},
    }
    return Environment(SPEC, SPEC.normalize_db(db))


def test_search_onestop_next_day_quirk_without_zero_padding():
    # tau2 builds the next day as f"2024-05-{day + 1}": after 2024-05-20 that is 2024-05-21 ...
    assert len(_mini_airline("2024-05-20", "2024-05-21").call(
        "assistant", "search_onestop_flight", {"origin": "SEA", "destination": "MIA", "date": "2024-05-20"}).result) == 1
    # ... but after 2024-05-05 it is "2024-05-6", a date no flight has, so nothing connects
    assert _mini_airline("2024-05-05", "2024-05-06").call(
        "assistant", "search_onestop_flight", {"origin": "SEA", "destination": "MIA", "date": "2024-05-05"}).result == []


def test_get_flight_status(env):
    assert ok(env, "get_flight_status", flight_number="HAT001", date="2024-05-03").text == "cancelled"
    assert ok(env, "get_flight_status", flight_number="HAT001", date="2024-05-16").text == "available"
    assert ok(env, "get_flight_status", flight_number="HAT004", date="2024-05-15").text == "flying"
    assert err(env, "get_flight_status", flight_number="HAT999", date="2024-05-16") == "Error: Flight HAT999 not found"
    assert err(env, "get_flight_status", flight_number="HAT001", date="2024-06-01") == (
        "Error: Flight HAT001 not found on date 2024-06-01"
    )


def test_calculate(env):
    assert ok(env, "calculate", expression="(100 + 27) / 3").text == "42.33"
    assert ok(env, "calculate", expression="2 + 2").text == "4.0"
    assert err(env, "calculate", expression="2 + x") == "Error: Invalid characters in expression"
    assert err(env, "calculate", expression="1 / 0") == "Error: division by zero"
    assert err(env, "calculate", expression="2 +").startswith("Error: invalid syntax")
    assert not SPEC.agent_toolkit.is_write("calculate")


def test_transfer_to_human_agents(env):
    assert ok(env, "transfer_to_human_agents", summary="wants a refund").text == "Transfer successful"
    assert not SPEC.agent_toolkit.is_write("transfer_to_human_agents")


# ---- book_reservation ---------------------------------------------------------------------------

def _booking(**over):
    args = dict(
        user_id=USER, origin="PHL", destination="LGA", flight_type="one_way", cabin="economy",
        flights=[{"flight_number": "HAT001", "date": "2024-05-16"}],
        passengers=[{"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-01-11"}],
        payment_methods=[{"payment_id": GIFT, "amount": 98}, {"payment_id": CARD, "amount": 104}],
        total_baggages=1, nonfree_baggages=1, insurance="yes",
    )
    args.update(over)
    return args


def test_book_reservation_success_and_state(env):
    db = env.agent_state()
    seats_before = db["flights"]["HAT001"]["dates"]["2024-05-16"]["available_seats"]["economy"]
    out = ok(env, "book_reservation", **_booking())  # 122 + 30 insurance + 50 bag = 202
    res = json.loads(out.text)
    assert res["reservation_id"] == "HATHAT"
    assert res["created_at"] == "2024-05-15T15:00:00"
    assert res["flights"] == [{"flight_number": "HAT001", "origin": "PHL", "destination": "LGA",
                               "date": "2024-05-16", "price": 122}]
    assert res["payment_history"] == [{"payment_id": GIFT, "amount": 98}, {"payment_id": CARD, "amount": 104}]
    assert res["status"] is None and list(res)[-1] == "status"
    assert db["reservations"]["HATHAT"] == res
    assert db["users"][USER]["reservations"][-1] == "HATHAT"
    assert db["users"][USER]["payment_methods"][GIFT]["amount"] == 0.0
    assert db["flights"]["HAT001"]["dates"]["2024-05-16"]["available_seats"]["economy"] == seats_before - 1
    # the next bookings get the next fixed ids, then there are no more
    ok(env, "book_reservation", **_booking(payment_methods=[{"payment_id": CARD, "amount": 202}]))
    ok(env, "book_reservation", **_booking(payment_methods=[{"payment_id": CARD, "amount": 202}]))
    assert {"HATHAU", "HATHAV"} <= set(db["reservations"])
    assert err(env, "book_reservation", **_booking(payment_methods=[{"payment_id": CARD, "amount": 202}])) == (
        "Error: Too many reservations"
    )


def test_book_reservation_certificate_is_used_up(env):
    ok(env, "book_reservation", **_booking(
        insurance="no", nonfree_baggages=0,
        payment_methods=[{"payment_id": CERT, "amount": 100}, {"payment_id": CARD, "amount": 22}],
    ))
    assert CERT not in env.agent_state()["users"][USER]["payment_methods"]


@pytest.mark.parametrize(
    "over, message",
    [
        ({"user_id": "nobody_1"}, "Error: User nobody_1 not found"),
        ({"flights": [{"flight_number": "HAT999", "date": "2024-05-16"}]}, "Error: Flight HAT999 not found"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-07-01"}]},
         "Error: Flight HAT001 not found on date 2024-07-01"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-05-03"}]},
         "Error: Flight HAT001 not available on date 2024-05-03"),
        ({"flights": [{"flight_number": "HAT039", "date": "2024-05-16"}], "cabin": "basic_economy"},
         "Error: Not enough seats on flight HAT039"),
        ({"payment_methods": [{"payment_id": "credit_card_0000000", "amount": 202}]},
         "Error: Payment method credit_card_0000000 not found"),
        ({"payment_methods": [{"payment_id": GIFT, "amount": 202}]},
         f"Error: Not enough balance in payment method {GIFT}"),
        ({"payment_methods": [{"payment_id": CARD, "amount": 200}]},
         "Error: Payment amount does not add up, total price is 202, but paid 200"),
    ],
)
def test_book_reservation_errors_change_nothing(env, over, message):
    before = fresh_copy(env.agent_state())
    assert err(env, "book_reservation", **_booking(**over)) == message
    assert env.agent_state() == before


def test_book_reservation_argument_validation(env):
    text = err(env, "book_reservation", **_booking(flights=[{"flight_number": "HAT001"}]))
    assert text.startswith("Error: 1 validation error for FlightInfo\ndate\n  Field required")
    text = err(env, "book_reservation", **_booking(payment_methods=[{"payment_id": CARD, "amount": 201.5}]))
    assert text.startswith("Error: 1 validation error for Payment\namount")
    assert "cabin" in err(env, "book_reservation", **_booking(cabin="first"))
    # lax coercion of what tau2's models coerce: "1" -> 1
    ok(env, "book_reservation", **_booking(total_baggages="1", payment_methods=[{"payment_id": CARD, "amount": 202.0}]))
    assert env.agent_state()["reservations"]["HATHAT"]["total_baggages"] == 1


def test_book_reservation_same_certificate_twice_fails_midway_like_tau2(env):
    db = env.agent_state()
    text = err(env, "book_reservation", **_booking(
        insurance="no", nonfree_baggages=0,
        payment_methods=[{"payment_id": CERT, "amount": 61}, {"payment_id": CERT, "amount": 61}],
    ))
    assert text == f"Error: '{CERT}'"
    assert CERT not in db["users"][USER]["payment_methods"]  # popped before the failure
    assert "HATHAT" not in db["reservations"]


# ---- cancel / certificates / updates ------------------------------------------------------------

def test_cancel_reservation_refunds_without_releasing_seats(env):
    db = env.agent_state()
    seats = fresh_copy(db["flights"]["HAT034"]["dates"]["2024-05-28"])
    res = json.loads(ok(env, "cancel_reservation", reservation_id="R9QDGB").text)
    assert res["status"] == "cancelled"
    assert res["payment_history"] == [{"payment_id": CARD, "amount": 1911}, {"payment_id": CARD, "amount": -1911}]
    assert db["flights"]["HAT034"]["dates"]["2024-05-28"] == seats
    again = json.loads(ok(env, "cancel_reservation", reservation_id="R9QDGB").text)
    assert len(again["payment_history"]) == 4  # tau2 refunds every entry again
    assert err(env, "cancel_reservation", reservation_id="ZZZZZZ") == "Error: Reservation ZZZZZZ not found"


def test_send_certificate(env):
    methods = env.agent_state()["users"][USER]["payment_methods"]
    assert ok(env, "send_certificate", user_id=USER, amount=150).text == (
        f"Certificate certificate_3221322 added to user {USER} with amount 150."
    )
    assert methods["certificate_3221322"] == {"source": "certificate", "id": "certificate_3221322", "amount": 150.0}
    ok(env, "send_certificate", user_id=USER, amount=50)
    ok(env, "send_certificate", user_id=USER, amount=50)
    assert "certificate_3221324" in methods
    assert err(env, "send_certificate", user_id=USER, amount=50) == "Error: Too many certificates"
    assert err(env, "send_certificate", user_id="nobody_1", amount=50) == "Error: User nobody_1 not found"


def test_update_reservation_baggages(env):
    db = env.agent_state()
    res = json.loads(ok(env, "update_reservation_baggages", reservation_id="1AKIA8", total_baggages=3,
                        nonfree_baggages=1, payment_id=GIFT).text)
    assert (res["total_baggages"], res["nonfree_baggages"]) == (3, 1)
    assert res["payment_history"][-1] == {"payment_id": GIFT, "amount": 50}
    assert db["users"][USER]["payment_methods"][GIFT]["amount"] == 48.0
    # fewer paid bags: free of charge, no payment recorded
    res = json.loads(ok(env, "update_reservation_baggages", reservation_id="1AKIA8", total_baggages=1,
                        nonfree_baggages=0, payment_id=CARD).text)
    assert len(res["payment_history"]) == 2 and res["nonfree_baggages"] == 0
    base = dict(reservation_id="1AKIA8", total_baggages=5, nonfree_baggages=3)
    assert err(env, "update_reservation_baggages", **base, payment_id=CERT) == (
        "Error: Certificate cannot be used to update reservation"
    )
    assert err(env, "update_reservation_baggages", **base, payment_id=GIFT) == "Error: Gift card balance is not enough"
    assert err(env, "update_reservation_baggages", **base, payment_id="credit_card_0") == "Error: Payment method not found"
    assert err(env, "update_reservation_baggages", **{**base, "reservation_id": "ZZZZZZ"}, payment_id=CARD) == (
        "Error: Reservation ZZZZZZ not found"
    )


def _flights_of(env, rid):
    return [{"flight_number": f["flight_number"], "date": f["date"]}
            for f in env.agent_state()["reservations"][rid]["flights"]]


def test_update_reservation_flights_same_flights_costs_nothing(env):
    flights = _flights_of(env, "1AKIA8")
    res = json.loads(ok(env, "update_reservation_flights", reservation_id="1AKIA8", cabin="economy",
                        flights=flights, payment_id=CARD).text)
    assert len(res["payment_history"]) == 1  # price difference 0: no payment


def test_update_reservation_flights_upgrade_and_downgrade(env):
    db = env.agent_state()
    flights = _flights_of(env, "1AKIA8")
    prices = [db["flights"][f["flight_number"]]["dates"][f["date"]]["prices"] for f in flights]
    res = json.loads(ok(env, "update_reservation_flights", reservation_id="1AKIA8", cabin="business",
                        flights=flights, payment_id=CARD).text)
    paid = sum(f["price"] for f in db["reservations"]["1AKIA8"]["flights"])
    assert res["cabin"] == "business"
    assert [f["price"] for f in res["flights"]] == [p["business"] for p in prices]
    assert res["payment_history"][-1] == {"payment_id": CARD, "amount": (paid - 196 - 169) * 2}
    # back down to basic economy: refunded to the gift card (its balance grows)
    ok(env, "update_reservation_flights", reservation_id="1AKIA8", cabin="basic_economy",
       flights=flights, payment_id=GIFT)
    refund = (sum(p["basic_economy"] for p in prices) - paid) * 2
    assert refund < 0
    assert db["users"][USER]["payment_methods"][GIFT]["amount"] == 98.0 - refund
    assert db["reservations"]["1AKIA8"]["payment_history"][-1] == {"payment_id": GIFT, "amount": refund}


def test_update_reservation_flights_errors(env):
    base = dict(reservation_id="1AKIA8", cabin="economy", payment_id=CARD)
    assert err(env, "update_reservation_flights", **base,
               flights=[{"flight_number": "HAT999", "date": "2024-05-22"}]) == "Error: Flight HAT999 not found"
    assert err(env, "update_reservation_flights", **base,
               flights=[{"flight_number": "HAT001", "date": "2024-05-03"}]) == (
        "Error: Flight HAT001 not available on date 2024-05-03"
    )
    assert err(env, "update_reservation_flights", **{**base, "cabin": "business"},
               flights=[{"flight_number": "HAT039", "date": "2024-05-17"}]) == "Error: Not enough seats on flight HAT039"
    assert err(env, "update_reservation_flights", **{**base, "cabin": "business", "payment_id": CERT},
               flights=_flights_of(env, "1AKIA8")) == "Error: Certificate cannot be used to update reservation"
    assert err(env, "update_reservation_flights", **{**base, "reservation_id": "ZZZZZZ"},
               flights=[]) == "Error: Reservation ZZZZZZ not found"


def test_update_reservation_passengers(env):
    new = [{"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-01-11"},
           {"first_name": "Ana", "last_name": "Lee", "dob": "1990-02-02", "ignored": "x"}]
    res = json.loads(ok(env, "update_reservation_passengers", reservation_id="1AKIA8", passengers=new).text)
    assert res["passengers"][1] == {"first_name": "Ana", "last_name": "Lee", "dob": "1990-02-02"}
    assert err(env, "update_reservation_passengers", reservation_id="1AKIA8", passengers=new[:1]) == (
        "Error: Number of passengers does not match"
    )
    assert err(env, "update_reservation_passengers", reservation_id="ZZZZZZ", passengers=new) == (
        "Error: Reservation ZZZZZZ not found"
    )
    text = err(env, "update_reservation_passengers", reservation_id="1AKIA8", passengers=[{"first_name": "A"}, {}])
    assert text.startswith("Error: 2 validation errors for Passenger\nlast_name\n  Field required")
