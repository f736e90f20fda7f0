"""Keep the user's phone in step with the carrier's records (tau2's ``TelecomEnvironment.sync_tools``).

Once the user's phone number is known (``set_user_info``), after every call:

- the line of that number decides what the phone's surroundings allow: ``line_active`` (the line
  is Active), ``roaming_allowed`` (roaming enabled on the line) and
  ``mobile_data_usage_exceeded`` (data used >= plan limit + data refueled);
- a payment request the user has paid marks its bill Paid and goes away;
- with no payment request pending, the first of the customer's bills awaiting payment becomes
  the phone's payment request (bill id and amount due).

The phone only notices a line that became (in)active at its next network search (a reboot, a
toggle), as in tau2: the sync sets ``line_active`` but does not search the network.
"""

from __future__ import annotations

from .agent_tools import TelecomTools
from .user_functions import TelecomUserFunctions


def sync(agent: TelecomTools, user: TelecomUserFunctions) -> None:
    place = user.db["surroundings"]
    number = place["phone_number"]
    if number is None:
        return
    line = agent._line_by_phone(number)
    place["line_active"] = line["status"] == "Active"
    place["roaming_allowed"] = bool(line["roaming_enabled"])
    plan = agent._plan(line["plan_id"])
    place["mobile_data_usage_exceeded"] = (
        line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    )
    request = place["payment_request"]
    if request is not None and request["paid"]:
        agent._set_bill_paid(request["bill_id"])
        place["payment_request"] = None
    if place["payment_request"] is None:
        awaiting = agent._awaiting_payment(agent._customer_by_phone(number))
        if awaiting:
            bill = awaiting[0]
            place["payment_request"] = {"bill_id": bill["bill_id"], "amount_due": bill["total_due"], "paid": False}
