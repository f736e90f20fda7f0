"""The phone's non-tool functions: what tasks call in ``initialization_actions`` (break something,
place the user) and in ``env_assertions`` (check the outcome). Same names, arguments and effects
as tau2-bench's ``TelecomUserTools`` methods of those names; the tools are in ``user_tools.py``.
"""

from __future__ import annotations

from typing import Literal

from ...toolkit import Toolkit
from . import user_device as phone
from .records import NETWORK_STATUSES, PERMISSION_NAMES


class TelecomUserFunctions(Toolkit):
    """Base of the user's toolkit: state access plus the task-setup and assertion functions."""

    @property
    def device(self) -> dict:
        return self.db["device"]

    @property
    def surroundings(self) -> dict:
        return self.db["surroundings"]

    def _bar(self) -> str:
        return f"Status Bar: {phone.status_bar(self.db)}"

    # ---- who and where the user is -------------------------------------------------------------

    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings["name"] = name
        self.surroundings["phone_number"] = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings["is_abroad"] = abroad

    # ---- breaking and setting things -----------------------------------------------------------

    def turn_airplane_mode_on(self) -> str:
        if not phone.toggle_airplane_mode(self.db):
            phone.toggle_airplane_mode(self.db)
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if phone.toggle_airplane_mode(self.db):
            phone.toggle_airplane_mode(self.db)
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device["sim_card_missing"] = True
        phone.network_search(self.db)
        _check(phone.sim_status(self.db) == "missing", "the SIM card should be missing")
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        if mode == "pin":
            self.device["sim_card_status"] = "locked_pin"
        elif mode == "puk":
            self.device["sim_card_status"] = "locked_puk"
        phone.network_search(self.db)
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.device["data_enabled"] = True  # no network search, as in tau2
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if phone.flip(self.db, "data_enabled", search=True):
            phone.flip(self.db, "data_enabled", search=True)
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not phone.flip(self.db, "roaming_enabled", search=True):
            phone.flip(self.db, "roaming_enabled", search=True)
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if phone.flip(self.db, "roaming_enabled", search=True):
            phone.flip(self.db, "roaming_enabled", search=True)
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        if not phone.flip(self.db, "data_saver_mode", search=False):
            phone.flip(self.db, "data_saver_mode", search=False)
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        if phone.flip(self.db, "data_saver_mode", search=False):
            phone.flip(self.db, "data_saver_mode", search=False)
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.device["active_apn_settings"]["apn_name"] = "broken"
        phone.network_search(self.db)
        _check(self.device["network_connection_status"] == "no_service", "broken APN settings should mean no service")
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device["active_apn_settings"]["mmsc_url"] = None
        _check(not phone.can_send_mms(self.db), "without an MMSC URL the phone should not send MMS")
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        if self.device["wifi_calling_enabled"] != enabled:
            phone.flip(self.db, "wifi_calling_enabled", search=False)
        text = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.device["wifi_calling_mms_over_wifi"] = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return text

    def break_vpn(self) -> str:
        phone.connect_vpn(self.db)  # no-op when a VPN is already connected
        self.device["vpn_details"]["server_performance"] = "poor"
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in PERMISSION_NAMES:
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        app["permissions"][permission] = False
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    def simulate_network_search(self) -> None:
        phone.network_search(self.db)

    # ---- assertions ----------------------------------------------------------------------------

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device["airplane_mode"] == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        if expected_status not in NETWORK_STATUSES:
            raise ValueError(f"'{expected_status}' is not a valid NetworkStatus")
        return self.device["network_connection_status"] == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return phone.mobile_data_working(self.db) == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device["roaming_enabled"] == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device["data_saver_mode"] == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        speed, label = phone.speed_test(self.db)
        speed = speed or 0.0
        if expected_desc is None:
            return speed >= expected_speed
        return speed >= expected_speed and label.lower() == expected_desc.lower()

    def assert_internet_not_excellent(self) -> bool:
        _, label = phone.speed_test(self.db)
        return label.lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return phone.can_send_mms(self.db) == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings["mobile_data_usage_exceeded"] == expected_status


def _check(condition: bool, what: str) -> None:
    """tau2 asserts these after breaking something; a failure means an inconsistent task setup."""
    if not condition:
        raise AssertionError(what)
