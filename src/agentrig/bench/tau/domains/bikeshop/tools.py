"""The bikeshop agent's tools: customers, rental bikes, rentals and repair work orders.

State (``db.json``)::

    shop       {name, today, closed_weekday}          "today" is the only clock
    customers  {customer_id: {customer_id, first_name, last_name, email, phone, date_of_birth,
                membership ("none" | "club"), payment_methods {id: {payment_method_id, kind
                ("card" | "store_credit"), description[, balance]}}, own_bikes {id: {...}},
                rental_ids [..], repair_ids [..]}}
    bikes      {bike_id: {bike_id, model, category, size, daily_rate, deposit, status}}
    rentals    {rental_id: {rental_id, customer_id, bike_id, start_date, end_date, days,
                daily_rate, discount, total, payment_method_id, status, created_date,
                cancellation_fee, charges [{amount, payment_method_id, note}], refunds [..]}}
    repairs    {repair_id: {repair_id, customer_id, own_bike_id, services [code, sorted], quote,
                dropoff_date, ready_date, status, created_date}}
    services   {code: {code, name, price, duration_days}}

Tools enforce what the data makes impossible (unknown ids, taken bikes, closed days, dates in
the past, too little store credit, work already finished); the policy rules that test the agent
(identity checks, the e-bike age limit, the 14-day limit, no cancelling started rentals or
repairs) are the agent's to follow, as in τ²-bench.
"""

from __future__ import annotations

import datetime as dt

from ...toolkit import Toolkit, ToolError, tool
from . import rules
from .checks import ShopChecks


class BikeshopTools(ShopChecks, Toolkit):
    """Tools of the bikeshop domain (plus the non-tool functions of ``ShopChecks``)."""

    db: dict

    # ---- lookups (internal) --------------------------------------------------------------------

    def _customer(self, customer_id: str) -> dict:
        customer = self.db["customers"].get(customer_id)
        if customer is None:
            raise ToolError(f"Customer {customer_id} not found")
        return customer

    def _bike(self, bike_id: str) -> dict:
        bike = self.db["bikes"].get(bike_id)
        if bike is None:
            raise ToolError(f"Bike {bike_id} not found")
        return bike

    def _rental(self, rental_id: str) -> dict:
        rental = self.db["rentals"].get(rental_id)
        if rental is None:
            raise ToolError(f"Rental {rental_id} not found")
        return rental

    def _repair(self, repair_id: str) -> dict:
        repair = self.db["repairs"].get(repair_id)
        if repair is None:
            raise ToolError(f"Repair order {repair_id} not found")
        return repair

    def _service(self, code: str) -> dict:
        service = self.db["services"].get(code)
        if service is None:
            raise ToolError(f"Service {code} not found; list_repair_services shows the codes")
        return service

    def _payment_method(self, customer: dict, payment_method_id: str) -> dict:
        method = customer["payment_methods"].get(payment_method_id)
        if method is None:
            raise ToolError(f"Payment method {payment_method_id} not found for customer {customer['customer_id']}")
        return method

    def _charge(self, method: dict, amount: int) -> None:
        if method["kind"] == "store_credit":
            if method["balance"] < amount:
                raise ToolError(
                    f"Store credit {method['payment_method_id']} has {method['balance']} dollars, "
                    f"not enough for {amount} dollars"
                )
            method["balance"] -= amount

    def _future_open_day(self, value: str, what: str) -> dt.date:
        day = rules.parse_date(value, what)
        if day < rules.today(self.db):
            raise ToolError(f"{what} {value} is in the past (today is {self.db['shop']['today']})")
        if rules.is_closed(day):
            raise ToolError(f"{what} {value} is a {rules.weekday_name(day)}; the shop is closed on Mondays")
        return day

    def _price(self, customer: dict, bike: dict, start: str, end: str) -> dict:
        first = rules.parse_date(start, "start_date")
        last = rules.parse_date(end, "end_date")
        if last < first:
            raise ToolError(f"end_date {end} is before start_date {start}")
        days = rules.rental_days(first, last)
        gross = bike["daily_rate"] * days
        discount = rules.club_discount(gross, customer["membership"])
        return {"days": days, "daily_rate": bike["daily_rate"], "gross": gross, "discount": discount,
                "total": gross - discount}

    # ---- read tools ----------------------------------------------------------------------------

    @tool
    def get_today(self) -> dict:
        """Get today's date and weekday at the shop (the shop is closed on Mondays)."""
        day = rules.today(self.db)
        return {"today": day.isoformat(), "weekday": rules.weekday_name(day)}

    @tool
    def find_customer_by_email(self, email: str) -> str:
        """Find a customer's id from the email address on their account.

        Args:
            email: The customer's email address, such as 'marta.ruiz@fastmail.com'.
        """
        wanted = email.strip().lower()
        for customer in self.db["customers"].values():
            if customer["email"].lower() == wanted:
                return customer["customer_id"]
        raise ToolError("Customer not found")

    @tool
    def find_customer_by_phone(self, phone: str) -> str:
        """Find a customer's id from the phone number on their account.

        Args:
            phone: The customer's phone number, such as '415-555-0142'.
        """
        wanted = "".join(ch for ch in phone if ch.isdigit())
        for customer in self.db["customers"].values():
            if "".join(ch for ch in customer["phone"] if ch.isdigit()) == wanted:
                return customer["customer_id"]
        raise ToolError("Customer not found")

    @tool
    def get_customer_details(self, customer_id: str) -> dict:
        """Get a customer's account: name, contact details, date of birth, membership, payment
        methods (with store credit balance), own bikes, rental ids and repair order ids.

        Args:
            customer_id: The customer's id, such as 'CU-4417'.
        """
        return self._customer(customer_id)

    @tool
    def get_bike_details(self, bike_id: str) -> dict:
        """Get a rental bike's model, category, size, daily rate, deposit and status.

        Args:
            bike_id: The rental bike's id, such as 'BK-CTY-01'.
        """
        return self._bike(bike_id)

    @tool
    def search_available_bikes(self, category: str, start_date: str, end_date: str) -> list:
        """List the rental bikes of a category that are free on every day from start_date to
        end_date (both included).

        Args:
            category: One of 'city', 'road', 'mountain', 'ebike', 'kids', 'tandem'.
            start_date: First day of the rental, in the format YYYY-MM-DD.
            end_date: Last day of the rental (the return day), in the format YYYY-MM-DD.
        """
        if category not in rules.BIKE_CATEGORIES:
            raise ToolError(f"Unknown category '{category}'; choose one of {', '.join(rules.BIKE_CATEGORIES)}")
        first = rules.parse_date(start_date, "start_date")
        last = rules.parse_date(end_date, "end_date")
        if last < first:
            raise ToolError(f"end_date {end_date} is before start_date {start_date}")
        return [
            bike for bike in self.db["bikes"].values()
            if bike["category"] == category and rules.bike_is_free(self.db, bike["bike_id"], start_date, end_date)
        ]

    @tool
    def quote_rental(self, customer_id: str, bike_id: str, start_date: str, end_date: str) -> dict:
        """Work out the price of renting a bike for a customer, without booking anything: days,
        daily rate, gross amount, club discount and total.

        Args:
            customer_id: The customer's id, such as 'CU-4417'.
            bike_id: The rental bike's id, such as 'BK-CTY-01'.
            start_date: First day of the rental, in the format YYYY-MM-DD.
            end_date: Last day of the rental (the return day), in the format YYYY-MM-DD.
        """
        customer = self._customer(customer_id)
        bike = self._bike(bike_id)
        return {"bike_id": bike_id, "start_date": start_date, "end_date": end_date,
                **self._price(customer, bike, start_date, end_date)}

    @tool
    def get_rental_details(self, rental_id: str) -> dict:
        """Get a rental: bike, dates, price, payment method, status, charges and refunds.

        Args:
            rental_id: The rental's id, such as 'RN-20871'.
        """
        return self._rental(rental_id)

    @tool
    def get_repair_details(self, repair_id: str) -> dict:
        """Get a repair work order: the customer's bike, services, quote, drop-off and ready dates
        and status.

        Args:
            repair_id: The work order's id, such as 'WO-5512'.
        """
        return self._repair(repair_id)

    @tool
    def list_repair_services(self) -> list:
        """List the workshop's services with their codes, prices and how many days each takes."""
        return list(self.db["services"].values())

    # ---- write tools ---------------------------------------------------------------------------

    @tool(write=True)
    def book_rental(self, customer_id: str, bike_id: str, start_date: str, end_date: str, payment_method_id: str) -> dict:
        """Book a rental bike for a customer and charge the rental total to a payment method on
        the account. The deposit is taken in the shop at pickup.

        Args:
            customer_id: The customer's id, such as 'CU-4417'.
            bike_id: The rental bike's id, such as 'BK-CTY-01'.
            start_date: First day of the rental (the pickup day), in the format YYYY-MM-DD.
            end_date: Last day of the rental (the return day), in the format YYYY-MM-DD.
            payment_method_id: The id of a card or store credit on the customer's account, such as 'card_4417'.
        """
        customer = self._customer(customer_id)
        bike = self._bike(bike_id)
        method = self._payment_method(customer, payment_method_id)
        self._future_open_day(start_date, "start_date")
        price = self._price(customer, bike, start_date, end_date)
        if not rules.bike_is_free(self.db, bike_id, start_date, end_date):
            raise ToolError(f"Bike {bike_id} is not available from {start_date} to {end_date}")
        self._charge(method, price["total"])
        rental_id = rules.next_id(self.db["rentals"], "RN-")
        rental = {
            "rental_id": rental_id, "customer_id": customer_id, "bike_id": bike_id,
            "start_date": start_date, "end_date": end_date, "days": price["days"],
            "daily_rate": price["daily_rate"], "discount": price["discount"], "total": price["total"],
            "payment_method_id": payment_method_id, "status": "reserved",
            "created_date": self.db["shop"]["today"], "cancellation_fee": None,
            "charges": [{"amount": price["total"], "payment_method_id": payment_method_id, "note": "rental"}],
            "refunds": [],
        }
        self.db["rentals"][rental_id] = rental
        customer["rental_ids"].append(rental_id)
        return rental

    @tool(write=True)
    def cancel_rental(self, rental_id: str) -> dict:
        """Cancel a rental and refund what was paid to the payment method it was paid with, less
        the cancellation fee the policy sets (computed from today's date and the membership).

        Args:
            rental_id: The rental's id, such as 'RN-20871'.
        """
        rental = self._rental(rental_id)
        if rental["status"] not in rules.BOOKING_STATUSES:
            raise ToolError(f"Rental {rental_id} is {rental['status']} and cannot be cancelled")
        customer = self._customer(rental["customer_id"])
        fee = rules.cancellation_fee(rental, customer["membership"], rules.today(self.db))
        refund = rules.amount_paid(rental) - fee
        method = self._payment_method(customer, rental["payment_method_id"])
        if method["kind"] == "store_credit":
            method["balance"] += refund
        rental["status"] = "cancelled"
        rental["cancellation_fee"] = fee
        if refund > 0:
            rental["refunds"].append({"amount": refund, "payment_method_id": rental["payment_method_id"], "note": "cancellation"})
        return rental

    @tool(write=True)
    def extend_rental(self, rental_id: str, new_end_date: str) -> dict:
        """Move a reserved or active rental's return day later and charge the extra days (at the
        rental's daily rate, less the club discount) to the rental's payment method.

        Args:
            rental_id: The rental's id, such as 'RN-20871'.
            new_end_date: The new last day of the rental, in the format YYYY-MM-DD.
        """
        rental = self._rental(rental_id)
        if rental["status"] not in rules.BOOKING_STATUSES:
            raise ToolError(f"Rental {rental_id} is {rental['status']} and cannot be extended")
        old_end = dt.date.fromisoformat(rental["end_date"])
        new_end = rules.parse_date(new_end_date, "new_end_date")
        if new_end <= old_end:
            raise ToolError(f"new_end_date {new_end_date} must be after the current end date {rental['end_date']}")
        first_extra = (old_end + dt.timedelta(days=1)).isoformat()
        if not rules.bike_is_free(self.db, rental["bike_id"], first_extra, new_end_date, ignore_rental=rental_id):
            raise ToolError(f"Bike {rental['bike_id']} is not available from {first_extra} to {new_end_date}")
        customer = self._customer(rental["customer_id"])
        extra_days = (new_end - old_end).days
        gross = extra_days * rental["daily_rate"]
        discount = rules.club_discount(gross, customer["membership"])
        method = self._payment_method(customer, rental["payment_method_id"])
        self._charge(method, gross - discount)
        rental["end_date"] = new_end_date
        rental["days"] += extra_days
        rental["discount"] += discount
        rental["total"] += gross - discount
        rental["charges"].append({"amount": gross - discount, "payment_method_id": rental["payment_method_id"], "note": "extension"})
        return rental

    @tool(write=True)
    def book_repair(self, customer_id: str, own_bike_id: str, service_code: str, dropoff_date: str) -> dict:
        """Open a repair work order for one of the customer's own bikes with a first service. The
        quote is paid when the bike is collected. Add more services with add_repair_service.

        Args:
            customer_id: The customer's id, such as 'CU-4417'.
            own_bike_id: The id of the customer's own bike, such as 'OB-4417-1' (see get_customer_details).
            service_code: The code of the service, such as 'TUNE-BASIC' (see list_repair_services).
            dropoff_date: The day the customer brings the bike in, in the format YYYY-MM-DD.
        """
        customer = self._customer(customer_id)
        if own_bike_id not in customer["own_bikes"]:
            raise ToolError(f"Bike {own_bike_id} is not one of customer {customer_id}'s bikes")
        self._service(service_code)
        dropoff = self._future_open_day(dropoff_date, "dropoff_date")
        for other in self.db["repairs"].values():
            if other["own_bike_id"] == own_bike_id and other["status"] in rules.OPEN_REPAIR_STATUSES:
                raise ToolError(f"Bike {own_bike_id} already has an open work order, {other['repair_id']}")
        quote, ready = rules.repair_schedule(self.db, [service_code], dropoff)
        repair_id = rules.next_id(self.db["repairs"], "WO-")
        repair = {
            "repair_id": repair_id, "customer_id": customer_id, "own_bike_id": own_bike_id,
            "services": [service_code], "quote": quote, "dropoff_date": dropoff_date,
            "ready_date": ready, "status": "booked", "created_date": self.db["shop"]["today"],
        }
        self.db["repairs"][repair_id] = repair
        customer["repair_ids"].append(repair_id)
        return repair

    @tool(write=True)
    def add_repair_service(self, repair_id: str, service_code: str) -> dict:
        """Add a service to a work order that is booked or in progress; the quote and the ready
        date are updated.

        Args:
            repair_id: The work order's id, such as 'WO-5512'.
            service_code: The code of the service to add, such as 'FLAT-FIX' (see list_repair_services).
        """
        repair = self._repair(repair_id)
        if repair["status"] not in ("booked", "in_progress"):
            raise ToolError(f"Repair order {repair_id} is {repair['status']}; services can no longer be added")
        self._service(service_code)
        if service_code in repair["services"]:
            raise ToolError(f"Service {service_code} is already on repair order {repair_id}")
        repair["services"] = sorted([*repair["services"], service_code])
        repair["quote"], repair["ready_date"] = rules.repair_schedule(
            self.db, repair["services"], dt.date.fromisoformat(repair["dropoff_date"])
        )
        return repair

    @tool(write=True)
    def cancel_repair(self, repair_id: str) -> dict:
        """Cancel a repair work order that has not been finished.

        Args:
            repair_id: The work order's id, such as 'WO-5512'.
        """
        repair = self._repair(repair_id)
        if repair["status"] not in ("booked", "in_progress"):
            raise ToolError(f"Repair order {repair_id} is {repair['status']} and cannot be cancelled")
        repair["status"] = "cancelled"
        return repair

    @tool(write=True)
    def update_customer_phone(self, customer_id: str, phone: str) -> dict:
        """Change the phone number on a customer's account.

        Args:
            customer_id: The customer's id, such as 'CU-4417'.
            phone: The new phone number, in the format 415-555-0142.
        """
        customer = self._customer(customer_id)
        if not rules.PHONE_RE.match(phone):
            raise ToolError(f"Phone number '{phone}' must look like 415-555-0142")
        for other in self.db["customers"].values():
            if other["customer_id"] != customer_id and other["phone"] == phone:
                raise ToolError(f"Phone number {phone} is already on another customer's account")
        customer["phone"] = phone
        return customer

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the customer over to a member of the shop's staff, with a summary of their issue.
        Use it only when the customer asks for a person, or when the policy says the issue needs
        one (damage, accidents, deposits, complaints) and nothing else can be done with these tools.

        Args:
            summary: A short summary of the customer's issue.
        """
        return "Transfer successful"
