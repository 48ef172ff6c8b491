"""What a bot sets on its number, checked as Meta's OpenAPI description says, and read back.

- ``POST /{version}/{phone_number_id}`` (Meta's ``updatePhoneNumberStatus``):
  ``pin`` (two-step verification), ``new_display_name``,
  ``whatsapp_business_api_data``, ``search_visibility``, ``username``,
  ``connection_status``, ``webhook_url`` and ``webhook_configuration``, all
  optional and combined at will. :func:`number_update` checks them; the
  number's webhook URL is registered by :mod:`~channels.whatsapp.subscriptions`.
  Of what is set, the number's fields show what Meta's description lists
  among a number's fields (``username``) and what the simulator already
  answers (``is_pin_enabled``); the rest is checked and answered, not kept.
- ``GET`` and ``POST /{version}/{phone_number_id}/conversational_automation``:
  the welcome message, the ice breakers (``prompts``: 3 at most, 80
  characters each) and the commands (30 at most, named ``[a-zA-Z0-9_]``,
  30 characters, described in 256, each name once). The description
  documents only the ``POST``; a ``GET`` answers what the number's
  ``conversational_automation`` field holds on Meta, with its ``id``.
- ``GET`` and ``POST /{version}/{phone_number_id}/whatsapp_commerce_settings``:
  ``is_cart_enabled`` (``true`` by default) and ``is_catalog_visible``
  (``false``), as Meta's commerce guide gives them.

Parameters are read from the query string, a form or a JSON body, as Graph
reads them; a parameter an endpoint does not know is left alone, but an
update must name at least one it knows. A bad value answers 100 naming the field,
and an update is checked whole before any of it is kept.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import JSONResponse, Response

from channels.whatsapp._openapi_parts import (
    VERSION,
    change_operation,
    obj,
    query,
    read_operation,
    ref,
)
from channels.whatsapp._request_body import graph_parameters
from channels.whatsapp.errors import InvalidParameter
from channels.whatsapp.sends.problems import request_error

if TYPE_CHECKING:
    from starlette.requests import Request

    from channels.whatsapp.account import AccountAPI

__all__ = [
    "NUMBER_FIELDS",
    "NUMBER_OBJECTS",
    "NumberSettingsAPI",
    "number_paths",
    "number_schemas",
    "number_update",
]

_BODY_LIMIT: Final = 64 * 1024
NUMBER_FIELDS: Final = (
    "pin",
    "new_display_name",
    "whatsapp_business_api_data",
    "search_visibility",
    "username",
    "connection_status",
    "webhook_url",
    "webhook_configuration",
)
"""What ``POST /{phone_number_id}`` takes (Meta's ``PhoneNumberStatusUpdateRequest``)."""
NUMBER_OBJECTS: Final = ("whatsapp_business_api_data", "webhook_configuration")
"""Its parameters that are objects (a form or a query string gives them as JSON text)."""
_PIN: Final = re.compile(r"[0-9]{6}")
_DISPLAY_NAME: Final = (2, 75)
_SEARCH_VISIBILITY: Final = ("VISIBLE", "HIDDEN")
_CONNECTION_STATUSES: Final = (
    "CONNECTED", "DISCONNECTED", "PENDING", "FLAGGED", "RESTRICTED", "RATE_LIMITED",
    "MESSAGING_LIMIT_TIER_0", "MESSAGING_LIMIT_TIER_1", "MESSAGING_LIMIT_TIER_2",
    "MESSAGING_LIMIT_TIER_3", "MESSAGING_LIMIT_TIER_4",
)  # fmt: skip
_API_DATA_FLAGS: Final = ("show_security_notifications", "notify_user_change_number")

_AUTOMATION_FIELDS: Final = ("enable_welcome_message", "prompts", "commands")
_PROMPTS: Final = 3
_PROMPT_LENGTH: Final = 80
_COMMANDS: Final = 30
_COMMAND_NAME_LENGTH: Final = 30
_COMMAND_NAME: Final = "^[a-zA-Z0-9_]+$"
_COMMAND_DESCRIPTION_LENGTH: Final = 256

_COMMERCE_FIELDS: Final = ("is_cart_enabled", "is_catalog_visible")
#: Meta's defaults: "the shopping cart is enabled and the storefront icon is hidden".
_COMMERCE_DEFAULTS: Final = {"is_cart_enabled": True, "is_catalog_visible": False}


def _none_known(names: tuple[str, ...]) -> InvalidParameter:
    return request_error("", f"nothing to change: give at least one of {', '.join(names)}")


def _pin(value: object, name: str) -> bool:
    """Whether ``value`` turns two-step verification on (six digits) or off (empty)."""
    if not isinstance(value, str) or (value and _PIN.fullmatch(value) is None):
        raise request_error(name, "must be a string of six digits (or empty)")
    return bool(value)


def _choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise request_error(name, f"must be one of {', '.join(choices)}")
    return value


def _flag(value: object, name: str) -> bool:
    """A boolean, as JSON gives it or as a query string or form writes it (``true``, ``false``)."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise request_error(name, "must be true or false")


def _api_data(value: object) -> bool | None:
    """``whatsapp_business_api_data`` checked; its PIN's effect (``None``: it gives none)."""
    name = "whatsapp_business_api_data"
    if not isinstance(value, Mapping):
        raise request_error(name, "must be an object")
    known = ("pin", *_API_DATA_FLAGS)
    for key, item in value.items():
        if key == "pin":
            _pin(item, f"{name}.pin")
        elif key in _API_DATA_FLAGS:
            if not isinstance(item, bool):
                raise request_error(f"{name}.{key}", "must be true or false")
        else:
            raise request_error(f"{name}.{key}", f"is not one of {', '.join(known)}")
    return _pin(value["pin"], f"{name}.pin") if "pin" in value else None


def number_update(given: Mapping[str, Any]) -> dict[str, Any]:
    """The number's fields a ``POST /{phone_number_id}`` changes, once all of it is checked.

    Raises the 100 Meta answers for a bad value, or for a call that names
    none of :data:`NUMBER_FIELDS`. ``webhook_configuration`` is checked by
    the caller, which registers it.
    """
    if not any(name in given for name in NUMBER_FIELDS):
        raise _none_known(NUMBER_FIELDS)
    shown: dict[str, Any] = {}
    if "whatsapp_business_api_data" in given:
        enabled = _api_data(given["whatsapp_business_api_data"])
        if enabled is not None:
            shown["is_pin_enabled"] = enabled
    if "pin" in given:
        shown["is_pin_enabled"] = _pin(given["pin"], "pin")
    if "new_display_name" in given:
        name = given["new_display_name"]
        shortest, longest = _DISPLAY_NAME
        if not isinstance(name, str) or not name.strip() or not shortest <= len(name) <= longest:
            raise request_error(
                "new_display_name", f"must be a name of {shortest} to {longest} characters"
            )
    if "search_visibility" in given:
        _choice(given["search_visibility"], "search_visibility", _SEARCH_VISIBILITY)
    if "connection_status" in given:
        _choice(given["connection_status"], "connection_status", _CONNECTION_STATUSES)
    if "webhook_url" in given:
        url = given["webhook_url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise request_error("webhook_url", "must be an http:// or https:// URL")
    if "username" in given:
        username = given["username"]
        if not isinstance(username, str) or not username.strip():
            raise request_error("username", "must be a non-empty string")
        shown["username"] = username
    return shown


def _automation_update(given: Mapping[str, Any]) -> dict[str, Any]:
    """The conversational automation settings a ``POST`` sets, checked whole."""
    if not any(name in given for name in _AUTOMATION_FIELDS):
        raise _none_known(_AUTOMATION_FIELDS)
    update: dict[str, Any] = {}
    if "enable_welcome_message" in given:
        update["enable_welcome_message"] = _flag(
            given["enable_welcome_message"], "enable_welcome_message"
        )
    if "prompts" in given:
        prompts = given["prompts"]
        if not isinstance(prompts, list) or len(prompts) > _PROMPTS:
            raise request_error("prompts", f"must be a list of at most {_PROMPTS} prompts")
        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, str) or len(prompt) > _PROMPT_LENGTH:
                raise request_error(f"prompts[{i}]", f"must be text of {_PROMPT_LENGTH} at most")
        update["prompts"] = list(prompts)
    if "commands" in given:
        update["commands"] = _commands(given["commands"])
    return update


def _commands(commands: object) -> list[dict[str, str]]:
    if not isinstance(commands, list) or len(commands) > _COMMANDS:
        raise request_error("commands", f"must be a list of at most {_COMMANDS} commands")
    seen: set[str] = set()
    for i, command in enumerate(commands):
        at = f"commands[{i}]"
        if not isinstance(command, Mapping):
            raise request_error(at, "must be an object with command_name and command_description")
        name, description = command.get("command_name"), command.get("command_description")
        if not isinstance(name, str) or re.fullmatch(_COMMAND_NAME, name) is None:
            raise request_error(f"{at}.command_name", "required: letters, digits and _ only")
        if len(name) > _COMMAND_NAME_LENGTH:
            raise request_error(
                f"{at}.command_name", f"must be at most {_COMMAND_NAME_LENGTH} characters"
            )
        if name in seen:
            raise request_error(f"{at}.command_name", f"{name!r} is given twice")
        seen.add(name)
        if not isinstance(description, str) or len(description) > _COMMAND_DESCRIPTION_LENGTH:
            raise request_error(
                f"{at}.command_description",
                f"required: text of at most {_COMMAND_DESCRIPTION_LENGTH} characters",
            )
        extra = sorted(set(command) - {"command_name", "command_description"})
        if extra:
            raise request_error(f"{at}.{extra[0]}", "is not a field of a command")
    return [dict(command) for command in commands]


def _commerce_update(given: Mapping[str, Any]) -> dict[str, bool]:
    if not any(name in given for name in _COMMERCE_FIELDS):
        raise _none_known(_COMMERCE_FIELDS)
    return {name: _flag(given[name], name) for name in _COMMERCE_FIELDS if name in given}


def _settings_id(phone_number_id: str) -> str:
    """The id of a number's commerce settings: 15 digits drawn from the number's id."""
    digest = hashlib.sha256(f"whatsapp_commerce_settings\0{phone_number_id}".encode()).digest()
    return str(10**14 + int.from_bytes(digest[:8], "big") % (9 * 10**14))


class NumberSettingsAPI:
    """The conversational automation and commerce settings endpoints (see the module).

    ``account`` checks each call's version, token and number as every
    account endpoint does; the settings live on its account, beside the profile.
    """

    def __init__(self, account: AccountAPI) -> None:
        self.account = account.account
        self._number = account.known_number

    async def automation(self, request: Request) -> Response:
        """``GET`` and ``POST /{version}/{phone_number_id}/conversational_automation``."""
        phone_number_id = self._number(request)
        settings = self.account.automations.setdefault(
            phone_number_id, {"enable_welcome_message": False, "prompts": [], "commands": []}
        )
        if request.method == "GET":
            held = copy.deepcopy(settings)
            return JSONResponse({"conversational_automation": held, "id": phone_number_id})
        given = await graph_parameters(request, _BODY_LIMIT, ("prompts", "commands"))
        settings.update(_automation_update(given))
        return JSONResponse({"success": True})

    async def commerce(self, request: Request) -> Response:
        """``GET`` and ``POST /{version}/{phone_number_id}/whatsapp_commerce_settings``."""
        phone_number_id = self._number(request)
        settings = self.account.commerce.setdefault(phone_number_id, dict(_COMMERCE_DEFAULTS))
        if request.method == "GET":
            return JSONResponse({"data": [{"id": _settings_id(phone_number_id), **settings}]})
        settings.update(_commerce_update(await graph_parameters(request, _BODY_LIMIT)))
        return JSONResponse({"success": True})


# -- the OpenAPI description -------------------------------------------------------------


def number_schemas() -> dict[str, Any]:
    """The component schemas of these endpoints, from the limits the checks above hold."""
    boolean = {"type": "boolean"}
    pin = {"type": "string", "pattern": "^([0-9]{6})?$"}
    command = obj(
        ["command_name", "command_description"],
        command_name={
            "type": "string",
            "pattern": _COMMAND_NAME,
            "maxLength": _COMMAND_NAME_LENGTH,
        },
        command_description={"type": "string", "maxLength": _COMMAND_DESCRIPTION_LENGTH},
    )
    automation = {
        "type": "object",
        "properties": {
            "enable_welcome_message": boolean,
            "prompts": {
                "type": "array",
                "maxItems": _PROMPTS,
                "items": {"type": "string", "maxLength": _PROMPT_LENGTH},
            },
            "commands": {"type": "array", "maxItems": _COMMANDS, "items": ref("BotCommand")},
        },
    }
    shortest, longest = _DISPLAY_NAME
    return {
        "PhoneNumberUpdate": {
            "type": "object",
            "description": "All optional, combined at will; at least one must be given.",
            "properties": {
                "pin": pin,
                "new_display_name": {
                    "type": "string",
                    "minLength": shortest,
                    "maxLength": longest,
                    "pattern": r"\S",
                },
                "whatsapp_business_api_data": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"pin": pin, **dict.fromkeys(_API_DATA_FLAGS, boolean)},
                },
                "search_visibility": {"enum": list(_SEARCH_VISIBILITY)},
                "username": {"type": "string", "pattern": r"\S"},
                "connection_status": {"enum": list(_CONNECTION_STATUSES)},
                "webhook_url": {"type": "string", "pattern": "^https?://"},
                "webhook_configuration": obj(
                    ["override_callback_uri", "verify_token"],
                    override_callback_uri={"type": "string", "pattern": "^https?://"},
                    verify_token={"type": "string", "minLength": 1},
                ),
            },
        },
        "BotCommand": command,
        "ConversationalAutomation": automation,
        "ConversationalAutomationSettings": obj(
            ["conversational_automation", "id"],
            conversational_automation=ref("ConversationalAutomation"),
            id={"type": "string"},
        ),
        "CommerceSettings": obj(
            ["data"],
            data={
                "type": "array",
                "items": obj(
                    ["id", *_COMMERCE_FIELDS],
                    id={"type": "string"},
                    **dict.fromkeys(_COMMERCE_FIELDS, boolean),
                ),
            },
        ),
    }


def number_paths(phone: Mapping[str, Any]) -> dict[str, Any]:
    """The operations of the conversational automation and commerce settings endpoints."""
    flag = {"type": "string", "enum": ["true", "false"]}
    return {
        "/{version}/{phone_number_id}/conversational_automation": {
            "get": read_operation(
                "getConversationalAutomation",
                "The number's welcome message, ice breakers and commands.",
                [VERSION, phone],
                "ConversationalAutomationSettings",
                "The settings.",
            ),
            "post": change_operation(
                "configureConversationalAutomation",
                "Change the number's welcome message, ice breakers or commands.",
                [VERSION, phone],
                "ConversationalAutomation",
            ),
        },
        "/{version}/{phone_number_id}/whatsapp_commerce_settings": {
            "get": read_operation(
                "getCommerceSettings",
                "Whether the number shows a cart and its catalog.",
                [VERSION, phone],
                "CommerceSettings",
                "The settings.",
            ),
            "post": change_operation(
                "setOrUpdateCommerceSettings",
                "Show or hide the number's cart and catalog.",
                [
                    VERSION,
                    phone,
                    query("is_cart_enabled", "Show the cart (true by default).", flag),
                    query("is_catalog_visible", "Show the catalog (false by default).", flag),
                ],
            ),
        },
    }
