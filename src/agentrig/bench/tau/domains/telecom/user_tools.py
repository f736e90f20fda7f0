"""The tools of the user's phone (30, as in tau2-bench's ``TelecomUserTools``).

Same names, parameters, read/write flags, state changes and result texts as tau2 (results that
change a setting end with the new status bar). Descriptions are our own words.
"""

from __future__ import annotations

from ...toolkit import tool
from . import user_device as phone
from .records import MODE_PREFERENCES, PERMISSION_NAMES, apn_record
from .user_functions import TelecomUserFunctions
from .user_models import APNSettings

_SIM_TEXT = {
    "active": "Your SIM card is active and working.",
    "missing": "No SIM card detected in the phone.",
    "locked_pin": "The SIM card is locked with a PIN code.",
    "locked_puk": "The SIM card is locked with a PUK code.",
}

_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}


def _on(flag: bool) -> str:
    return "ON" if flag else "OFF"


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


class TelecomUserTools(TelecomUserFunctions):
    """The user's phone as a toolkit over the user-side state ``{"device", "surroundings"}``."""

    # ---- status and network --------------------------------------------------------------------

    @tool
    def check_status_bar(self) -> str:
        """Show the icons currently in the phone's status bar at the top of the screen: cellular signal strength, network type, whether mobile data is on (and data saver), Wi-Fi, VPN and the battery level."""
        return self._bar()

    @tool
    def check_network_status(self) -> str:
        """Show the phone's connection to cellular networks and Wi-Fi: airplane mode, SIM status, cellular connection, signal strength and network type, whether mobile data and data roaming are on, and the Wi-Fi radio and connection."""
        d = self.device
        lines = [
            f"Airplane Mode: {_on(d['airplane_mode'])}",
            f"SIM Card Status: {phone.sim_status(self.db)}",
            f"Cellular Connection: {d['network_connection_status']}",
            f"Cellular Signal: {d['network_signal_strength']}",
            f"Cellular Network Type: {d['network_technology_connected']}",
            f"Mobile Data Enabled: {_yes(d['data_enabled'])}",
            f"Data Roaming Enabled: {_yes(d['roaming_enabled'])}",
            f"Wi-Fi Radio: {_on(d['wifi_enabled'])}",
            f"Wi-Fi Connected: {_yes(d['wifi_connected'])}",
        ]
        if d["wifi_connected"]:
            lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
        return "\n".join(lines)

    @tool
    def check_network_mode_preference(self) -> str:
        """Show which network mode the phone prefers (e.g. 4G/5G preferred, 3G only)."""
        return f"Network Mode Preference: {self.device['network_mode_preference']}"

    @tool(write=True)
    def set_network_mode_preference(self, mode: str) -> str:
        """Change which kind of cellular network the phone prefers to use (5G, 4G/LTE, 3G, 2G). Faster networks give faster data and may use more battery.

        Args:
            mode: The network mode to prefer: one of "4g_5g_preferred", "4g_only", "3g_only", "2g_only".
        """
        if mode not in MODE_PREFERENCES:
            return (
                f"Failed to set network mode: '{mode}' is not a valid option. "
                f"Please use one of: {', '.join(MODE_PREFERENCES)}\n{self._bar()}"
            )
        self.device["network_mode_preference"] = mode
        phone.network_search(self.db)
        return f"Preferred Network Mode set to: {mode}\n{self._bar()}"

    @tool
    def run_speed_test(self) -> str:
        """Measure the download speed of the phone's mobile data connection, and say what the connection is good enough for."""
        speed, label = phone.speed_test(self.db)
        if speed is None:
            return f"Speed test failed: {label or 'Could not determine speed'}."
        return f"Speed Test Result: {speed:.2f} Mbps ({label}). {_SPEED_ADVICE.get(label, '')}"

    # ---- airplane mode, SIM, data, roaming -----------------------------------------------------

    @tool(write=True)
    def toggle_airplane_mode(self) -> str:
        """Switch Airplane Mode ON or OFF. While it is ON, every wireless connection (cellular, Wi-Fi, Bluetooth) is off. Tells the new state."""
        now_on = phone.toggle_airplane_mode(self.db)
        return f"Airplane Mode is now {_on(now_on)}.\n{self._bar()}"

    @tool
    def check_sim_status(self) -> str:
        """Check whether the SIM card works, and its state: active, missing, or locked by a PIN or PUK code."""
        status = phone.sim_status(self.db)
        return _SIM_TEXT.get(status, f"Unknown SIM status: {status}")

    @tool(write=True)
    def reseat_sim_card(self) -> str:
        """Take the SIM card out and put it back in, which can fix a SIM that is not recognised."""
        self.device["sim_card_missing"] = False
        phone.network_search(self.db)
        return f"SIM card re-seated successfully.\n{self._bar()}"

    @tool(write=True)
    def toggle_data(self) -> str:
        """Switch the phone's mobile data ON or OFF: whether it may use the cellular network for internet when there is no Wi-Fi. Tells the new state."""
        now_on = phone.flip(self.db, "data_enabled", search=True)
        return f"Mobile Data is now {_on(now_on)}.\n{self._bar()}"

    @tool(write=True)
    def toggle_roaming(self) -> str:
        """Switch Data Roaming ON or OFF. When ON, the phone may use data networks outside the carrier's own coverage. Tells the new state."""
        now_on = phone.flip(self.db, "roaming_enabled", search=True)
        return f"Data Roaming is now {_on(now_on)}.\n{self._bar()}"

    @tool
    def check_data_restriction_status(self) -> str:
        """Check whether a data-limiting feature is on, i.e. Data Saver mode."""
        if self.device["data_saver_mode"]:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool(write=True)
    def toggle_data_saver_mode(self) -> str:
        """Switch Data Saver mode ON or OFF. When ON, the phone uses less data, which can slow data down. Tells the new state."""
        now_on = phone.flip(self.db, "data_saver_mode", search=False)
        return f"Data Saver Mode is now {_on(now_on)}.\n{self._bar()}"

    # ---- APN -----------------------------------------------------------------------------------

    @tool
    def check_apn_settings(self) -> str:
        """Show the APN settings the phone uses to reach the carrier's mobile data network: the APN name and the MMSC URL used for picture messages."""
        apn = self.device["active_apn_settings"]
        return (
            f"Current APN Name: {apn['apn_name'] or 'Not Set'}\n"
            f"MMSC URL (for picture messages): {apn['mmsc_url'] or 'Not Set'}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool(write=True)
    def set_apn_settings(self, apn_settings: APNSettings) -> str:
        """Replace the phone's APN settings.

        Args:
            apn_settings: The new APN settings.
        """
        record = apn_record(apn_settings.model_dump(mode="json"))
        self.device["active_apn_settings"] = record
        phone.network_search(self.db)
        return f"APN settings set to: {record['apn_name']}\n{self._bar()}"

    @tool(write=True)
    def reset_apn_settings(self) -> str:
        """Put the APN settings back to their defaults (applied when the phone restarts)."""
        self.device["active_apn_settings"]["reset_at_reboot"] = True
        phone.network_search(self.db)
        return f"APN settings will reset at reboot.\n{self._bar()}"

    # ---- Wi-Fi and Wi-Fi calling ---------------------------------------------------------------

    @tool
    def check_wifi_status(self) -> str:
        """Check Wi-Fi: whether it is on, which network the phone is connected to (if any) and the signal strength."""
        d = self.device
        if not d["wifi_enabled"]:
            return "Wi-Fi is turned OFF."
        if d["wifi_connected"]:
            return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
        return "Wi-Fi is ON but not connected to any network."

    @tool(write=True)
    def toggle_wifi(self) -> str:
        """Switch the phone's Wi-Fi radio ON or OFF: whether it can find and join wireless networks for internet. Tells the new state."""
        now_on = phone.toggle_wifi(self.db)
        if now_on is None:
            return f"Cannot change Wi-Fi settings while Airplane Mode is ON.\n{self._bar()}"
        return f"Wi-Fi is now {_on(now_on)}.\n{self._bar()}"

    @tool
    def check_wifi_calling_status(self) -> str:
        """Check whether Wi-Fi Calling is on: making and receiving calls over Wi-Fi instead of the cellular network."""
        return f"Wi-Fi Calling is currently turned {_on(self.device['wifi_calling_enabled'])}."

    @tool(write=True)
    def toggle_wifi_calling(self) -> str:
        """Switch Wi-Fi Calling ON or OFF. With it, calls go over Wi-Fi instead of the cellular network, which helps where the cellular signal is weak. Tells the new state."""
        now_on = phone.flip(self.db, "wifi_calling_enabled", search=False)
        return f"Wi-Fi Calling is now {_on(now_on)}.\n{self._bar()}"

    # ---- VPN -----------------------------------------------------------------------------------

    @tool
    def check_vpn_status(self) -> str:
        """Check whether a VPN (Virtual Private Network) is in use: whether it is on and connected, with the connection details when there are any."""
        d = self.device
        if d["vpn_connected"]:
            if d["vpn_details"]:
                return f"VPN is ON and connected. Details: {phone.vpn_details_text(d['vpn_details'])}"
            return "VPN is ON and connected (no specific details available)."
        if d["vpn_enabled_setting"]:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool(write=True)
    def connect_vpn(self) -> str:
        """Connect to the VPN (Virtual Private Network)."""
        if not phone.connect_vpn(self.db):
            return "VPN already connected."
        return f"VPN connected successfully.\n{self._bar()}"

    @tool(write=True)
    def disconnect_vpn(self) -> str:
        """Disconnect the active VPN (Virtual Private Network), so internet traffic no longer goes through a VPN server; this can change the connection speed and what content is reachable."""
        if phone.disconnect_vpn(self.db):
            return f"VPN disconnected successfully.\n{self._bar()}"
        return f"No active VPN connection to disconnect.\n{self._bar()}"

    # ---- apps and MMS --------------------------------------------------------------------------

    @tool
    def check_installed_apps(self) -> str:
        """List the names of the apps installed on the phone."""
        return f"The following apps are installed on the phone: {', '.join(self.device['app_statuses'])}"

    @tool
    def check_app_status(self, app_name: str) -> str:
        """Show details about one app: the permissions it has been granted.

        Args:
            app_name: The name of the app.
        """
        app = self.device["app_statuses"].get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app)
        lines = [f"Status for App: {app_name}"]
        if granted:
            lines.append(" - Permissions Granted:")
            lines.extend(f"   - {name}" for name in granted)
        else:
            lines.append(" - Permissions: None granted.")
        return "\n".join(lines)

    @tool
    def check_app_permissions(self, app_name: str) -> str:
        """Show which permissions an app has (such as storage, SMS, phone or network access).

        Args:
            app_name: The name of the app.
        """
        app = self.device["app_statuses"].get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool(write=True)
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Give an app one permission (such as storage or SMS access); some app features need it.

        Args:
            app_name: The name of the app to give the permission to.
            permission: The permission to give, in lowercase (e.g. "storage", "sms").
        """
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if app is None:
            outcome = f"Error. App '{app_name}' not found. Cannot grant permission."
        elif permission not in PERMISSION_NAMES:
            outcome = (
                f"Error. Permission '{permission}' not tracked for app '{app_name}', "
                f"available permissions: {list(app['permissions'])}"
            )
        else:
            app["permissions"][permission] = True
            outcome = f"Success. Permission '{permission}' granted to app '{app_name}'."
        return f"{outcome}\n{self._bar()}"

    @tool
    def can_send_mms(self) -> str:
        """Check whether the default messaging app can send MMS (picture) messages."""
        if phone.can_send_mms(self.db):
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    # ---- device --------------------------------------------------------------------------------

    @tool(write=True)
    def reboot_device(self) -> str:
        """Restart the phone. This clears many temporary software problems by restarting all services and connections."""
        steps = phone.reboot(self.db)
        return "\n".join(steps) + f"\n{self._bar()}"

    # ---- payments ------------------------------------------------------------------------------

    @tool
    def check_payment_request(self) -> str:
        """Check whether the agent has sent you a request to pay a bill."""
        request = self.surroundings["payment_request"]
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request['bill_id']} of {request['amount_due']} USD."

    @tool(write=True)
    def make_payment(self) -> str:
        """Pay the bill the agent has sent you a payment request for."""
        request = self.surroundings["payment_request"]
        if request is None:
            return "You do not have a payment request."
        request["paid"] = True
        return f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}."


def _granted(app: dict) -> list[str]:
    return [name.replace("_", " ").lower() for name, allowed in app["permissions"].items() if allowed]
