"""Meta's WhatsApp error codes: what each means, its HTTP status, and how it reaches a bot.

``ERROR_CODES`` holds one :class:`ErrorSpec` per code the simulator
produces (``ErrorCode`` names them); :mod:`channels.whatsapp.errors` builds
the envelopes and exceptions from it. Where Meta is silent the defaults
follow the facts document, section 9: 400 with the code in the body for
rate limits, 500 for 131000, 404 for 132001.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Literal

__all__ = ["ERROR_CODES", "ERROR_DOCS_URL", "Delivery", "ErrorCode", "ErrorSpec", "spec_for"]

ERROR_DOCS_URL = "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"
"""The ``href`` Meta puts on the error objects of failed statuses."""

Delivery = Literal["sync", "async", "both"]
"""How a code usually reaches the bot: in the send's response, in a webhook, or either."""


class ErrorCode(IntEnum):
    """The error codes the simulator produces, by name."""

    AUTH_FAILED = 0
    APP_RATE_LIMIT = 4
    PERMISSION_DENIED = 10
    INVALID_PARAMETER = 100
    ACCESS_TOKEN_INVALID = 190
    PERMISSION_MISSING = 200
    UNKNOWN_PATH = 2500
    POLICY_BLOCKED = 368
    WABA_RATE_LIMIT = 80007
    THROUGHPUT_LIMIT = 130429
    SOMETHING_WENT_WRONG = 131000
    PARAMETER_MISSING = 131008
    PARAMETER_INVALID = 131009
    RECIPIENT_IS_SENDER = 131021
    SERVICE_UNAVAILABLE = 131016
    UNDELIVERABLE = 131026
    RE_ENGAGEMENT = 131047
    SPAM_RATE_LIMIT = 131048
    ECOSYSTEM_LIMIT = 131049
    UNSUPPORTED_MESSAGE_TYPE = 131051
    MEDIA_DOWNLOAD_ERROR = 131052
    MEDIA_UPLOAD_ERROR = 131053
    PAIR_RATE_LIMIT = 131056
    ACCOUNT_IN_MAINTENANCE = 131057
    MESSAGE_UNAVAILABLE = 131060
    RECIPIENT_NOT_SUPPORTED = 131062
    PIN_MISMATCH = 133005
    NOT_REGISTERED = 133010
    TEMPLATE_PARAM_MISMATCH = 132000
    TEMPLATE_NOT_FOUND = 132001
    TEMPLATE_PARAM_FORMAT = 132012
    TEMPLATE_PAUSED = 132015
    TEMPLATE_DISABLED = 132016
    BLOCK_USERS_FAILED = 139100
    BLOCKLIST_FULL = 139101
    BLOCKLIST_INTERNAL_ERROR = 139103

    @property
    def spec(self) -> ErrorSpec:
        """This code's row of ``ERROR_CODES``."""
        return ERROR_CODES[self]


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """What Meta says about one error code, and the defaults the simulator sends with it."""

    code: int
    title: str
    details: str
    http_status: int
    delivery: Delivery
    message: str | None = None
    """The Graph ``message`` when it is not the usual ``"(#code) title"``."""

    @property
    def graph_message(self) -> str:
        """The ``message`` of the Graph error envelope for this code."""
        return self.message if self.message is not None else f"(#{self.code}) {self.title}"


def _specs(*rows: ErrorSpec) -> Mapping[int, ErrorSpec]:
    return MappingProxyType({row.code: row for row in rows})


# fmt: off
ERROR_CODES: Mapping[int, ErrorSpec] = _specs(
    ErrorSpec(0, "Authentication error", "The access token could not be validated.", 401,
              "sync", message="Authentication error: the access token could not be validated."),
    ErrorSpec(4, "Application request limit reached",
              "The app has made too many Graph API calls.", 400, "sync"),
    ErrorSpec(10, "Permission denied",
              "The app does not have the permission this request needs.", 403, "sync"),
    ErrorSpec(100, "Invalid parameter",
              "A parameter is missing, unknown or not valid.", 400, "sync"),
    ErrorSpec(2500, "Unknown path components",
              "The path names something past the object and its edge.", 400, "sync"),
    ErrorSpec(190, "Access token has expired", "The access token has expired or is invalid.",
              401, "sync", message="Error validating access token: the session is invalid."),
    ErrorSpec(200, "Permission missing",
              "The app lacks the permission required for this action.", 403, "sync"),
    ErrorSpec(368, "Temporarily blocked for policies violations",
              "The account is temporarily blocked for violating WhatsApp policies.", 403, "sync"),
    ErrorSpec(80007, "Rate limit issues",
              "The WhatsApp Business Account has reached its rate limit.", 400, "sync"),
    ErrorSpec(130429, "Rate limit hit",
              "Message failed to send because the phone number has reached its throughput"
              " limit (messages per second).", 400, "sync"),
    ErrorSpec(131000, "Something went wrong", "An unknown error occurred.", 500, "both"),
    ErrorSpec(131008, "Required parameter is missing",
              "A required parameter is missing from the request.", 400, "sync"),
    ErrorSpec(131009, "Parameter value is not valid",
              "One or more parameter values are not valid.", 400, "both"),
    ErrorSpec(131016, "Service unavailable",
              "The service is temporarily unavailable; try again later.", 503, "sync"),
    ErrorSpec(131021, "Recipient cannot be sender",
              "The business can't block its own phone number.", 400, "sync"),
    ErrorSpec(131026, "Message undeliverable",
              "The message could not be delivered to the recipient.", 400, "async"),
    ErrorSpec(131047, "Re-engagement message",
              "Message failed to send because more than 24 hours have passed since the"
              " customer last replied to this number.", 400, "async"),
    ErrorSpec(131048, "Spam rate limit hit",
              "Message failed to send because this phone number is restricted for sending"
              " too many messages that users reported or blocked.", 400, "both"),
    ErrorSpec(131049, "Message not delivered to maintain healthy ecosystem engagement",
              "Meta chose not to deliver this message.", 400, "async"),
    ErrorSpec(131051, "Message type unknown", "Message type is currently not supported.",
              400, "both"),
    ErrorSpec(131052, "Media download error",
              "The media the user sent could not be downloaded.", 400, "async"),
    ErrorSpec(131053, "Media upload error", "The media could not be uploaded.", 400, "async"),
    ErrorSpec(131056, "(Business Account, Consumer Account) pair rate limit hit",
              "Message failed to send because there were too many messages sent from this"
              " phone number to the same phone number in a short period of time.", 400, "sync"),
    ErrorSpec(131057, "Account in maintenance mode",
              "The business account is in maintenance mode.", 400, "sync"),
    ErrorSpec(131060, "Message unavailable", "The message is no longer available.", 400,
              "async"),
    ErrorSpec(131062, "Business-scoped user ID not supported",
              "This message can't be sent to a business-scoped user ID.", 400, "sync"),
    ErrorSpec(132000, "Template parameter count mismatch",
              "The number of parameters does not match the number the template expects.",
              400, "sync"),
    ErrorSpec(132001, "Template does not exist",
              "The template does not exist in the requested language.", 404, "sync"),
    ErrorSpec(132012, "Parameter format mismatch",
              "A parameter is not of the kind the template has in that place (an image"
              " for an image header, say).", 400, "sync"),
    ErrorSpec(132015, "Template is paused",
              "The template is paused for low quality and can't be sent.", 400, "sync"),
    ErrorSpec(132016, "Template is disabled",
              "The template was paused too often for low quality and is disabled for good.",
              400, "sync"),
    ErrorSpec(139100, "Failed to block/unblock users",
              "Failed to block some users, see the block_users response list for details",
              400, "sync"),
    ErrorSpec(133005, "Two step verification PIN mismatch",
              "The PIN is not the number's two-step verification PIN.", 400, "sync"),
    ErrorSpec(133010, "Account not registered",
              "The phone number is not registered on the WhatsApp Business Platform.", 400,
              "sync"),
    ErrorSpec(139101, "Blocklist limit reached",
              "The blocklist holds as many users as it may (64,000).", 400, "sync"),
    ErrorSpec(139103, "Internal error",
              "The blocklist could not be changed; try again later.", 500, "sync"),
)
# fmt: on
"""Every code the simulator knows: title, default details, HTTP status, how it arrives."""


def spec_for(code: int) -> ErrorSpec:
    """Return the row for ``code``, or a generic 400 row for a code not in the table."""
    known = ERROR_CODES.get(code)
    if known is not None:
        return known
    return ErrorSpec(code, "Unknown error", f"Error {code}.", 400, "sync")
