"""Structured arguments of the phone's tools (their JSON schema is what the user model sees)."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from agentrig.types import Strict


class APNNames(str, Enum):
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(Strict):
    """The settings of one Access Point Name (APN) connection."""

    apn_name: APNNames = Field(APNNames.INTERNET, description="Name of the APN connection.")
    reset_at_reboot: bool = Field(False, description="Whether the APN settings are reset at the next reboot.")
    mms_apn: str | None = Field("mms", description="The APN used for MMS traffic, when it differs from the data APN.")
    mmsc_url: str | None = Field(
        "http://mms.carrier.com/mms/wapenc",
        description="URL of the Multimedia Messaging Service Center (MMSC); needed to send MMS.",
    )
    mms_proxy: str | None = Field(None, description="Proxy server for MMS traffic, on networks that need one.")
    mms_port: int | None = Field(None, description="Port of the MMS proxy server, on networks that need one.")
