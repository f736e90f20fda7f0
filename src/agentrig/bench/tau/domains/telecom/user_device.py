"""The user's phone: how its settings and the user's surroundings decide what works.

State is the user-side dict (``records.normalize_user_db``): ``db["device"]`` is the phone,
``db["surroundings"]`` where the user is (abroad or not, the signal of each technology there) and
what the carrier side allows (kept in step by ``sync``: line active, roaming allowed, data
allowance used up, a pending payment request).

The rules are tau2-bench's (``TelecomUserTools``):

- a *network search* connects the phone according to the SIM and the preferred network mode
  (4G/5G preferred takes 5G when the place has a 5G signal, else 4G; "only" modes take their
  technology) with the place's signal for that technology; a missing or locked SIM, airplane
  mode, broken APN settings or an inactive line mean no service;
- mobile data works only with signal and service, data roaming on and allowed when abroad, the
  data switch on and the allowance not used up;
- the speed test: the middle of the technology's speed range, times the signal factor, times 0.1
  behind a poorly performing VPN and 0.2 with data saver on;
- MMS needs working mobile data, 3G or better, no Wi-Fi Calling MMS-over-Wi-Fi, an MMSC URL and
  the messaging app's storage and SMS permissions.
"""

from __future__ import annotations

from enum import Enum

from .records import DEFAULT_APN


class PerformanceLevel(str, Enum):
    """tau2's enum of VPN server performance (its repr shows up in ``check_vpn_status``)."""

    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}

# Mbps range per technology, and the share of it each signal level gets
SPEED_RANGES = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
SIGNAL_FACTORS = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
# (upper bound, label): the first bound the speed is below names it
SPEED_LABELS = ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good"))
_MODE_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}

SIGNAL_ICONS = {
    "none": "📵 No Signal",
    "poor": "📶¹ Poor",
    "fair": "📶² Fair",
    "good": "📶³ Good",
    "excellent": "📶⁴ Excellent",
}


def sim_status(db: dict) -> str:
    device = db["device"]
    return "missing" if device["sim_card_missing"] else device["sim_card_status"]


def _no_service(device: dict) -> None:
    device["network_connection_status"] = "no_service"
    device["network_technology_connected"] = "none"
    device["network_signal_strength"] = "none"


def network_search(db: dict) -> None:
    """Re-evaluate the cellular connection (tau2's ``simulate_network_search``)."""
    device, place = db["device"], db["surroundings"]
    signals = place["signal_strength"]
    if sim_status(db) == "active":
        device["network_connection_status"] = "connected"
        mode = device["network_mode_preference"]
        tech = _MODE_TECH.get(mode, "4G")
        if mode == "4g_5g_preferred" and signals.get("5G", "none") != "none":
            tech = "5G"
        device["network_technology_connected"] = tech
        device["network_signal_strength"] = signals.get(tech, "none")
    else:
        _no_service(device)
    if device["airplane_mode"]:
        _no_service(device)
    if device["active_apn_settings"]["apn_name"] == "broken":
        _no_service(device)
    if not place["line_active"]:
        _no_service(device)


def mobile_data_working(db: dict) -> bool:
    device, place = db["device"], db["surroundings"]
    if device["airplane_mode"] or device["network_signal_strength"] == "none":
        return False
    if device["network_connection_status"] == "no_service":
        return False
    if place["is_abroad"] and not (device["roaming_enabled"] and place["roaming_allowed"]):
        return False
    if not device["data_enabled"]:
        return False
    return not place["mobile_data_usage_exceeded"]


def speed_test(db: dict) -> tuple[float | None, str]:
    """(Mbps, label) of a mobile-data speed test; (None, "No Connection") without mobile data."""
    if not mobile_data_working(db):
        return None, "No Connection"
    device = db["device"]
    factor = 1.0
    vpn = device["vpn_details"]
    if device["vpn_connected"] and vpn and vpn["server_performance"] == "poor":
        factor = 0.1
    if device["data_saver_mode"]:
        factor *= 0.2
    low, high = SPEED_RANGES.get(device["network_technology_connected"], (0.0, 0.0))
    signal = SIGNAL_FACTORS.get(device["network_signal_strength"], 0.0)
    speed = round((low + high) / 2.0 * signal * factor, 2)
    for bound, label in SPEED_LABELS:
        if speed < bound:
            return speed, label
    return speed, "Excellent"


def can_send_mms(db: dict) -> bool:
    device = db["device"]
    if not mobile_data_working(db):
        return False
    if device["network_technology_connected"] == "2G":
        return False
    if device["wifi_calling_enabled"] and device["wifi_calling_mms_over_wifi"]:
        return False  # the carrier does not carry MMS over Wi-Fi
    if device["active_apn_settings"]["mmsc_url"] is None:
        return False
    messaging = device["app_statuses"].get("messaging")
    if messaging is None:
        return False
    permissions = messaging["permissions"]
    return bool(permissions["storage"] and permissions["sms"])


def status_bar(db: dict) -> str:
    """The icons of the phone's status bar, joined by ``" | "``."""
    device = db["device"]
    parts: list[str] = []
    if device["airplane_mode"]:
        parts.append("✈️ Airplane Mode")
    else:
        parts.append(SIGNAL_ICONS.get(device["network_signal_strength"], SIGNAL_ICONS["none"]))
        tech = device["network_technology_connected"]
        if tech != "none":
            parts.append(tech)
        if device["data_enabled"] and tech != "none":
            parts.append("📱 Data Enabled")
            if device["data_saver_mode"]:
                parts.append("🔽 Data Saver")
        else:
            parts.append("📵 Data Disabled")
    if device["wifi_enabled"] and device["wifi_connected"]:
        ssid = device["wifi_ssid"]
        parts.append(f"📡 Connected to {ssid}" if ssid else "📡 Enabled")
    if device["vpn_connected"]:
        parts.append("🔒 VPN Connected")
    parts.append(f"🔋 {device['battery_level']}%")
    return " | ".join(parts)


def disconnect_vpn(db: dict) -> bool:
    device = db["device"]
    if not device["vpn_connected"]:
        return False
    device["vpn_connected"] = False
    device["vpn_details"] = None
    return True


def connect_vpn(db: dict) -> bool:
    """Connect to the default VPN server; False when a VPN is already connected."""
    device = db["device"]
    if device["vpn_connected"]:
        return False
    device["vpn_connected"] = True
    device["vpn_details"] = dict(DEFAULT_VPN)
    return True


def _drop_wifi(device: dict) -> None:
    device["wifi_connected"] = False
    device["wifi_ssid"] = None
    device["wifi_signal_strength"] = "none"


def toggle_airplane_mode(db: dict) -> bool:
    """Flip airplane mode (Wi-Fi drops either way; turning it on also drops the VPN); the new state."""
    device = db["device"]
    was_on = device["airplane_mode"]
    device["airplane_mode"] = not was_on
    if was_on:
        device["network_connection_status"] = "searching"
        if device["wifi_enabled"]:
            _drop_wifi(device)
    else:
        _drop_wifi(device)
        disconnect_vpn(db)
    network_search(db)
    return device["airplane_mode"]


def toggle_wifi(db: dict) -> bool | None:
    """Flip the Wi-Fi radio; None (nothing changes) while airplane mode is on."""
    device = db["device"]
    if device["airplane_mode"]:
        return None
    device["wifi_enabled"] = not device["wifi_enabled"]
    if not device["wifi_enabled"]:
        _drop_wifi(device)
    return device["wifi_enabled"]


def flip(db: dict, field: str, search: bool) -> bool:
    """Flip a boolean phone setting (then search the network when the setting affects it)."""
    device = db["device"]
    device[field] = not device[field]
    if search:
        network_search(db)
    return device[field]


def reboot(db: dict) -> list[str]:
    """Restart the phone: pending APN reset applied, network services restarted; the steps."""
    device = db["device"]
    steps = []
    if device["active_apn_settings"]["reset_at_reboot"]:
        steps.append("Resetting APN settings...")
        device["active_apn_settings"] = dict(DEFAULT_APN)
    steps.append("Restarting network services...")
    device["network_connection_status"] = "searching"
    network_search(db)
    return steps


def vpn_details_text(details: dict) -> str:
    """The VPN details as tau2 prints its model dump (a Python dict with the enum member)."""
    shown = dict(details)
    shown["server_performance"] = PerformanceLevel(details["server_performance"])
    return str(shown)
