"""A number's registration with the Cloud API, as Meta's OpenAPI description (v23.0) gives it.

- ``POST /{version}/{phone_number_id}/register`` (``messaging_product``
  ``whatsapp`` and a six-digit ``pin``; ``backup``, ``tier``,
  ``data_localization_region`` and ``meta_store_retention_minutes`` are
  optional): the number can send again. The PIN is the number's two-step
  verification PIN: a registration sets it when none is set, and must give
  the one set before (``POST /{phone_number_id}`` with ``pin``, or an earlier
  registration), else 133005.
- ``POST .../deregister``: the number no longer sends; every send, read
  receipt and typing indicator from it answers 133010 ("Account not
  registered") until it registers again. A number that is not registered
  answers Meta's example error (100, subcode 2207051).
- ``POST .../request_code`` (``code_method`` ``SMS`` or ``VOICE``, a
  ``language`` such as ``en`` or ``en_US``) and ``POST .../verify_code`` (a six-digit
  ``code``): answered as Meta does; the simulator sends no code, so any six
  digits verify.

A number starts registered, as a number a bot is given to send from is.
Parameters are read from the query string, a form or a JSON body, as Graph
reads them; a bad value answers 100 naming the field and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import JSONResponse, Response

from channels.whatsapp._openapi_parts import VERSION, change_operation, obj
from channels.whatsapp._request_body import graph_parameters
from channels.whatsapp.errors import InvalidParameter, NotRegistered, PinMismatch
from channels.whatsapp.sends.problems import request_error

if TYPE_CHECKING:
    from starlette.requests import Request

    from channels.whatsapp.account import AccountAPI

__all__ = ["RegistrationAPI", "not_registered", "registration_paths", "registration_schemas"]

_BODY_LIMIT: Final = 64 * 1024
_SIX_DIGITS: Final = re.compile(r"[0-9]{6}")
# A locale as Meta takes it: en, en_US, en-US, zh_Hant_TW (Meta's own Node SDK sends "en").
_LANGUAGE_PATTERN: Final = r"[a-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*"
_LANGUAGE: Final = re.compile(_LANGUAGE_PATTERN)
_REGION: Final = re.compile(r"[A-Z]{2}")
_CODE_METHODS: Final = ("SMS", "VOICE")
_TIERS: Final = ("PROD", "DEV")
_NOT_REGISTERED_SUBCODE: Final = 2207051


def not_registered() -> NotRegistered:
    """What a send from a deregistered number answers (133010)."""
    return NotRegistered(details="The phone number is not registered: register it before it sends.")


def _six_digits(given: Mapping[str, Any], name: str) -> str:
    value = given.get(name)
    if value is None:
        raise request_error(name, "required")
    if not isinstance(value, str) or _SIX_DIGITS.fullmatch(value) is None:
        raise request_error(name, "must be a string of six digits")
    return value


def _messaging_product(given: Mapping[str, Any]) -> None:
    if given.get("messaging_product") != "whatsapp":
        raise request_error("messaging_product", "must be 'whatsapp'")


def _registration(given: Mapping[str, Any]) -> str:
    """The PIN of a valid registration, once all of it is checked."""
    _messaging_product(given)
    pin = _six_digits(given, "pin")
    backup = given.get("backup")
    if backup is not None and (
        not isinstance(backup, Mapping)
        or not all(isinstance(backup.get(key), str) for key in ("password", "data"))
    ):
        raise request_error("backup", "must be an object with password and data")
    if "tier" in given and given["tier"] not in _TIERS:
        raise request_error("tier", f"must be one of {', '.join(_TIERS)}")
    region = given.get("data_localization_region")
    if region is not None and (not isinstance(region, str) or not _REGION.fullmatch(region)):
        raise request_error("data_localization_region", "must be a two-letter country code")
    retention = given.get("meta_store_retention_minutes")
    if retention is not None and retention not in (60, "60"):
        raise request_error("meta_store_retention_minutes", "must be 60")
    return pin


class RegistrationAPI:
    """The registration endpoints of a simulator's numbers (see the module).

    ``account`` checks each call's version, token and number as every
    account endpoint does; who is registered is kept on its account.
    """

    def __init__(self, account: AccountAPI) -> None:
        self.account = account.account
        self._number = account.known_number

    async def register(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/register``."""
        phone_number_id = self._number(request)
        pin = _registration(await graph_parameters(request, _BODY_LIMIT, ("backup",)))
        known = self.account.pins.get(phone_number_id)
        if known is not None and known != pin:
            raise PinMismatch(details="The PIN is not the number's two-step verification PIN.")
        self.account.pins[phone_number_id] = pin
        self.account.number_settings.setdefault(phone_number_id, {})["is_pin_enabled"] = True
        self.account.deregistered.discard(phone_number_id)
        return JSONResponse({"success": True})

    async def deregister(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/deregister``."""
        phone_number_id = self._number(request)
        if phone_number_id in self.account.deregistered:
            raise InvalidParameter(
                message="Phone number not registered on the WhatsApp Business Platform.",
                details="The number is not registered.",
                error_subcode=_NOT_REGISTERED_SUBCODE,
            )
        self.account.deregistered.add(phone_number_id)
        return JSONResponse({"success": True})

    async def request_code(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/request_code``."""
        self._number(request)
        given = await graph_parameters(request, _BODY_LIMIT)
        if given.get("code_method") not in _CODE_METHODS:
            raise request_error("code_method", f"must be {' or '.join(_CODE_METHODS)}")
        language = given.get("language")
        if not isinstance(language, str) or _LANGUAGE.fullmatch(language) is None:
            raise request_error("language", "must be a language or locale such as en or en_US")
        return JSONResponse({"success": True})

    async def verify_code(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/verify_code``."""
        self._number(request)
        _six_digits(await graph_parameters(request, _BODY_LIMIT), "code")
        return JSONResponse({"success": True})


# -- the OpenAPI description -------------------------------------------------------------


def registration_schemas() -> dict[str, Any]:
    """The component schemas of these endpoints, from the checks above."""
    six = {"type": "string", "pattern": "^[0-9]{6}$"}
    return {
        "RegisterRequest": obj(
            ["messaging_product", "pin"],
            messaging_product={"enum": ["whatsapp"]},
            pin=six,
            backup=obj(["password", "data"], password={"type": "string"}, data={"type": "string"}),
            tier={"enum": list(_TIERS)},
            data_localization_region={"type": "string", "pattern": "^[A-Z]{2}$"},
            meta_store_retention_minutes={"type": "integer", "minimum": 60, "maximum": 60},
        ),
        "RequestCodeRequest": obj(
            ["code_method", "language"],
            code_method={"enum": list(_CODE_METHODS)},
            language={"type": "string", "pattern": f"^{_LANGUAGE_PATTERN}$"},
        ),
        "VerifyCodeRequest": obj(["code"], code=six),
    }


def registration_paths(phone: Mapping[str, Any]) -> dict[str, Any]:
    """The operations of the registration endpoints."""
    base = "/{version}/{phone_number_id}"
    return {
        f"{base}/register": {
            "post": change_operation(
                "registerWhatsAppBusinessPhoneNumber",
                "Register the number (again), with its two-step verification PIN.",
                [VERSION, phone],
                "RegisterRequest",
            )
        },
        f"{base}/deregister": {
            "post": change_operation(
                "deregisterPhoneNumber",
                "Deregister the number: it sends nothing until it registers again.",
                [VERSION, phone],
            )
        },
        f"{base}/request_code": {
            "post": change_operation(
                "requestVerificationCode",
                "Ask for a verification code by SMS or voice (none is sent here).",
                [VERSION, phone],
                "RequestCodeRequest",
            )
        },
        f"{base}/verify_code": {
            "post": change_operation(
                "verifyPhoneNumberCode",
                "Verify the number with the code it was sent (any six digits here).",
                [VERSION, phone],
                "VerifyCodeRequest",
            )
        },
    }
