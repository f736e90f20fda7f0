"""The telecom domain's state shapes, as tau2's pydantic models dump them.

Agent side (``db.toml``): ``{"plans": [...], "customers": [...], "lines": [...], "bills": [...],
"devices": [...]}``, lists of records. User side (``user_db.toml``): ``{"device": {...},
"surroundings": {...}}``: the user's phone and where the user is.

``normalize_db`` / ``normalize_user_db`` rebuild every record in the field order of tau2's models
(``tau2/domains/telecom/data_model.py`` and ``user_data_model.py``) with the defaults those models
fill in for absent fields (``"suspension_start_date": None``, ``"wifi_ssid": None``, a default
``surroundings`` block, ...), float fields as floats and enum fields checked. Dates and date-times
stay the ISO strings of the db file (TOML date values are turned into such strings).

``agent_view`` is how an agent-side record is shown in a tool result: tau2 returns the pydantic
model, whose ``datetime`` fields ``json.dumps(..., default=str)`` prints as ``YYYY-MM-DD HH:MM:SS``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable

from agentrig.errors import DataError

# ---- enum values (tau2's str Enums) -------------------------------------------------------------

LINE_STATUSES = ("Active", "Suspended", "Pending Activation", "Closed")
BILL_STATUSES = ("Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed")
ACCOUNT_STATUSES = ("Active", "Suspended", "Pending Verification", "Closed")
PAYMENT_METHOD_TYPES = ("Credit Card", "Debit Card", "PayPal")
DEVICE_TYPES = ("phone", "router", "tablet", "watch", "other")

SIM_STATUSES = ("active", "missing", "locked_pin", "locked_puk")
TECHNOLOGIES = ("none", "2G", "3G", "4G", "5G")
MODE_PREFERENCES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
SIGNALS = ("none", "poor", "fair", "good", "excellent")
PERFORMANCE_LEVELS = ("unknown", "poor", "fair", "good", "excellent")
NETWORK_STATUSES = ("connected", "searching", "no_service", "emergency_only")
APN_NAMES = ("internet", "broken")

_REQUIRED = object()


# ---- value kinds ---------------------------------------------------------------------------------

def _iso(value: Any) -> Any:
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    return value


def _float(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _enum(allowed: tuple[str, ...]) -> Callable[[Any, str], Any]:
    def check(value: Any, where: str) -> Any:
        if value is not None and value not in allowed:
            raise DataError(
                f"{where}: {value!r} is not a valid value; expected one of {', '.join(allowed)}"
            )
        return value

    return check


def _plain(value: Any, where: str) -> Any:
    return _iso(value)


def _number(value: Any, where: str) -> Any:
    return _float(value)


# A field: (name, default or _REQUIRED, converter(value, where) or a nested record builder).
Field = tuple[str, Any, Callable[[Any, str], Any]]


def _record(fields: tuple[Field, ...], kind: str) -> Callable[[Any, str], dict]:
    names = {f[0] for f in fields}

    def build(raw: Any, where: str) -> dict:
        if not isinstance(raw, dict):
            raise DataError(f"{where}: a {kind} must be a table/object, got {type(raw).__name__}")
        extra = [k for k in raw if k not in names]
        if extra:
            raise DataError(
                f"{where}: unknown field(s) {', '.join(map(repr, extra))} in a {kind}; "
                f"known fields: {', '.join(sorted(names))}"
            )
        out: dict = {}
        for name, default, convert in fields:
            if name in raw:
                value = raw[name]
            elif default is _REQUIRED:
                raise DataError(f"{where}: a {kind} needs the field {name!r}")
            else:
                value = default() if callable(default) else default
            out[name] = None if value is None else convert(value, f"{where}.{name}")
        return out

    return build


def _list_of(build: Callable[[Any, str], dict]) -> Callable[[Any, str], list]:
    def convert(value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise DataError(f"{where}: expected a list, got {type(value).__name__}")
        return [build(v, f"{where}[{i}]") for i, v in enumerate(value)]

    return convert


def _str_list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise DataError(f"{where}: expected a list, got {type(value).__name__}")
    return list(value)


# ---- agent side ----------------------------------------------------------------------------------

_plan = _record((
    ("plan_id", _REQUIRED, _plain),
    ("name", _REQUIRED, _plain),
    ("data_limit_gb", _REQUIRED, _number),
    ("price_per_month", _REQUIRED, _number),
    ("data_refueling_price_per_gb", _REQUIRED, _number),
), "plan")

_address = _record((
    ("street", _REQUIRED, _plain),
    ("city", _REQUIRED, _plain),
    ("state", _REQUIRED, _plain),
    ("zip_code", _REQUIRED, _plain),
), "address")

_payment_method = _record((
    ("method_type", _REQUIRED, _enum(PAYMENT_METHOD_TYPES)),
    ("account_number_last_4", _REQUIRED, _plain),
    ("expiration_date", _REQUIRED, _plain),
), "payment method")

_customer = _record((
    ("customer_id", _REQUIRED, _plain),
    ("full_name", _REQUIRED, _plain),
    ("date_of_birth", _REQUIRED, _plain),
    ("email", _REQUIRED, _plain),
    ("phone_number", _REQUIRED, _plain),
    ("address", _REQUIRED, _address),
    ("account_status", "Pending Verification", _enum(ACCOUNT_STATUSES)),
    ("payment_methods", list, _list_of(_payment_method)),
    ("line_ids", list, _str_list),
    ("bill_ids", list, _str_list),
    ("created_at", "2025-01-01", _plain),
    ("last_extension_date", None, _plain),
    ("goodwill_credit_used_this_year", 0.0, _number),
), "customer")

_line = _record((
    ("line_id", _REQUIRED, _plain),
    ("phone_number", _REQUIRED, _plain),
    ("status", "Pending Activation", _enum(LINE_STATUSES)),
    ("plan_id", _REQUIRED, _plain),
    ("device_id", None, _plain),
    ("data_used_gb", 0.0, _number),
    ("data_refueling_gb", 0.0, _number),
    ("roaming_enabled", False, _plain),
    ("contract_end_date", None, _plain),
    ("last_plan_change_date", None, _plain),
    ("last_sim_replacement_date", None, _plain),
    ("suspension_start_date", None, _plain),
), "line")

_line_item = _record((
    ("description", _REQUIRED, _plain),
    ("amount", _REQUIRED, _number),
    ("date", _REQUIRED, _plain),
    ("item_type", _REQUIRED, _plain),
), "bill line item")

_bill = _record((
    ("bill_id", _REQUIRED, _plain),
    ("customer_id", _REQUIRED, _plain),
    ("period_start", _REQUIRED, _plain),
    ("period_end", _REQUIRED, _plain),
    ("issue_date", _REQUIRED, _plain),
    ("total_due", _REQUIRED, _number),
    ("due_date", _REQUIRED, _plain),
    ("line_items", list, _list_of(_line_item)),
    ("status", "Draft", _enum(BILL_STATUSES)),
), "bill")

_device = _record((
    ("device_id", _REQUIRED, _plain),
    ("device_type", _REQUIRED, _enum(DEVICE_TYPES)),
    ("model", _REQUIRED, _plain),
    ("imei", None, _plain),
    ("is_esim_capable", _REQUIRED, _plain),
    ("activated", False, _plain),
    ("activation_date", None, _plain),
    ("last_esim_transfer_date", None, _plain),
), "device")

AGENT_COLLECTIONS: tuple[tuple[str, Callable[[Any, str], dict]], ...] = (
    ("plans", _plan),
    ("customers", _customer),
    ("lines", _line),
    ("bills", _bill),
    ("devices", _device),
)

# datetime-typed fields (shown as "YYYY-MM-DD HH:MM:SS" in tool results)
_DATETIME_FIELDS = {
    "customer": ("created_at",),
    "device": ("activation_date", "last_esim_transfer_date"),
}


def normalize_db(db: dict) -> dict:
    """The agent-side db in tau2's dump shape (a new dict; the input is not kept)."""
    if not isinstance(db, dict):
        raise DataError(f"telecom db: expected a table/object at the top level, got {type(db).__name__}")
    out: dict = {}
    for name, build in AGENT_COLLECTIONS:
        out[name] = _list_of(build)(db.get(name, []), f"telecom db: {name}")
    for key, value in db.items():  # newer tau2 fields (e.g. phone_number_aliases) kept as they are
        if key not in out:
            out[key] = value
    return out


def new_bill(**fields: Any) -> dict:
    """A bill record in tau2's field order (used by tools that create bills)."""
    return _bill(fields, "new bill")


def line_item(description: str, amount: float, date: str, item_type: str) -> dict:
    return {"description": description, "amount": amount, "date": date, "item_type": item_type}


def _show_datetime(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 10 and value[10] == "T":
        return value[:10] + " " + value[11:]
    return value


def agent_view(kind: str, record: dict) -> dict:
    """An agent-side record as tau2's tool result shows it (a shallow copy when anything changes)."""
    fields = _DATETIME_FIELDS.get(kind)
    if not fields:
        return record
    view = dict(record)
    for name in fields:
        view[name] = _show_datetime(view.get(name))
    return view


# ---- user side -----------------------------------------------------------------------------------

DEFAULT_APN = {
    "apn_name": "internet",
    "reset_at_reboot": False,
    "mms_apn": "mms",
    "mmsc_url": "http://mms.carrier.com/mms/wapenc",
    "mms_proxy": None,
    "mms_port": None,
}

_apn = _record((
    ("apn_name", "internet", _enum(APN_NAMES)),
    ("reset_at_reboot", False, _plain),
    ("mms_apn", "mms", _plain),
    ("mmsc_url", "http://mms.carrier.com/mms/wapenc", _plain),
    ("mms_proxy", None, _plain),
    ("mms_port", None, _plain),
), "APN settings")

_vpn = _record((
    ("server_address", None, _plain),
    ("protocol", None, _plain),
    ("server_performance", "unknown", _enum(PERFORMANCE_LEVELS)),
), "VPN details")

_permissions = _record((
    ("sms", False, _plain),
    ("storage", False, _plain),
    ("phone", False, _plain),
    ("network", False, _plain),
), "app permissions")

PERMISSION_NAMES = ("sms", "storage", "phone", "network")

_app = _record((
    ("app_name", _REQUIRED, _plain),
    ("permissions", lambda: {}, _permissions),
), "app status")


def _default_apps() -> dict:
    return {
        "messaging": {"app_name": "messaging", "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
        "browser": {"app_name": "browser", "permissions": {"sms": False, "storage": True, "phone": False, "network": True}},
    }


def _apps(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise DataError(f"{where}: expected a table of apps by name, got {type(value).__name__}")
    return {name: _app(app, f"{where}.{name}") for name, app in value.items()}


def _default_signals() -> dict:
    return {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}


def _signals(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise DataError(f"{where}: expected a table of signal strength by technology")
    check_tech, check_signal = _enum(TECHNOLOGIES), _enum(SIGNALS)
    return {check_tech(k, where): check_signal(v, f"{where}.{k}") for k, v in value.items()}


_payment_request = _record((
    ("bill_id", _REQUIRED, _plain),
    ("amount_due", _REQUIRED, _number),
    ("paid", False, _plain),
), "payment request")

_phone = _record((
    ("sim_card_status", "active", _enum(SIM_STATUSES)),
    ("sim_card_missing", False, _plain),
    ("airplane_mode", False, _plain),
    ("network_signal_strength", "good", _enum(SIGNALS)),
    ("network_technology_connected", "5G", _enum(TECHNOLOGIES)),
    ("network_connection_status", "connected", _enum(NETWORK_STATUSES)),
    ("battery_level", 80, _plain),
    ("data_enabled", True, _plain),
    ("roaming_enabled", False, _plain),
    ("network_mode_preference", "4g_5g_preferred", _enum(MODE_PREFERENCES)),
    ("active_apn_settings", lambda: {}, _apn),
    ("wifi_enabled", False, _plain),
    ("wifi_connected", False, _plain),
    ("wifi_ssid", None, _plain),
    ("wifi_signal_strength", "none", _enum(SIGNALS)),
    ("wifi_calling_enabled", False, _plain),
    ("wifi_calling_mms_over_wifi", False, _plain),
    ("data_saver_mode", False, _plain),
    ("vpn_enabled_setting", False, _plain),
    ("vpn_connected", False, _plain),
    ("vpn_details", None, _vpn),
    ("app_statuses", _default_apps, _apps),
), "phone")

_surroundings = _record((
    ("name", None, _plain),
    ("phone_number", None, _plain),
    ("is_abroad", False, _plain),
    ("roaming_allowed", False, _plain),
    ("signal_strength", _default_signals, _signals),
    ("mobile_data_usage_exceeded", False, _plain),
    ("line_active", True, _plain),
    ("payment_request", None, _payment_request),
), "surroundings")

_user_db = _record((
    ("device", lambda: {}, _phone),
    ("surroundings", lambda: {}, _surroundings),
), "user db")


def normalize_user_db(user_db: dict) -> dict:
    """The user-side db in tau2's dump shape: every field of the phone and the surroundings."""
    return _user_db(user_db if user_db is not None else {}, "telecom user db")


def default_user_db() -> dict:
    return normalize_user_db({})


def apn_record(raw: dict) -> dict:
    return _apn(raw, "apn_settings")
