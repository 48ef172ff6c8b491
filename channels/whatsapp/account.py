"""The business behind the number, as the Graph API describes it to the bot.

Bots read these at start (that the token works, which number they speak for,
which templates they may send), and dashboards list them:

- ``GET /{version}/{phone_number_id}``: the number (``id``,
  ``display_phone_number``, ``verified_name``, ``quality_rating``; more
  with ``?fields=``). The display number reads as Meta's examples write it
  there, in the international format (``+1 631-555-5555``, ``+44 20 1234
  5678``); a webhook's ``metadata`` gives its digits;
- ``GET /{version}/{waba_id}``: the WhatsApp Business Account;
- ``GET /{version}/{waba_id}/phone_numbers``: its numbers;
- ``GET /{version}/{waba_id}/message_templates``: its templates, filtered
  by ``name``, ``status``, ``language`` and ``category``, a page of
  ``limit`` (25) at a time with ``after``/``before`` cursors, and with
  ``?summary=`` their counts;
- ``GET /{version}/{template_id}``: one template;
- ``GET`` and ``POST /{version}/{phone_number_id}/whatsapp_business_profile``:
  the profile; an update is checked as Meta checks it and read back later.

``?fields=a,b`` answers ``id`` and those fields. A field the node doesn't
have answers 100 ("Tried accessing nonexisting field"); one it has but the
simulator leaves unset is left out, as Graph leaves out a field without a
value. Templates given as Meta lists them (``--templates``) are listed as
given, with an ``id`` and a ``parameter_format`` where they lack one; the
built-in ones are listed with what is known of them: their name, language,
category and the placeholders they take. Templates are not created, edited
or deleted here: a ``POST`` or ``DELETE`` of one answers 100 saying so.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.whatsapp import _defaults as default
from channels.whatsapp._paging import page
from channels.whatsapp._request_body import BadBody, BodyTooLarge, decode_json, read_limited
from channels.whatsapp.errors import InvalidParameter, NoSuchObject
from channels.whatsapp.sends.problems import request_error
from channels.whatsapp.templates import TemplateRegistry, TemplateSpec

if TYPE_CHECKING:
    from channels.whatsapp.config import SimulatorConfig

__all__ = [
    "AccountAPI",
    "BusinessAccount",
    "business_account",
    "display_number",
    "template_id",
    "template_object",
    "unknown_object",
]

#: The throughput Meta gives a number by default (STANDARD), in messages a second.
_STANDARD_MPS: Final = 80
#: How many templates an account may hold (Meta's limit for a verified business).
_TEMPLATE_LIMIT: Final = 6000

_PHONE_FIELDS: Final = frozenset(
    {
        "id", "verified_name", "display_phone_number", "conversational_automation", "status",
        "quality_rating", "quality_score", "webhook_configuration", "name_status",
        "new_name_status", "code_verification_status", "account_mode", "is_on_biz_app",
        "is_official_business_account", "is_pin_enabled", "is_preverified_number",
        "search_visibility", "platform_type", "throughput", "health_status", "certificate",
        "new_certificate", "last_onboarded_time", "country_code", "country_dial_code",
        "messaging_limit_tier", "whatsapp_business_manager_messaging_limit",
        "eligibility_for_api_business_global_search", "unified_cert_status", "host_platform",
        "username", "new_display_name",
    }
)  # fmt: skip
_PHONE_DEFAULT: Final = ("id", "display_phone_number", "verified_name", "quality_rating")
_ACCOUNT_FIELDS: Final = frozenset(
    {
        "id", "name", "account_review_status", "purchase_order_number", "audiences",
        "ownership_type", "subscribed_apps", "business_verification_status", "country",
        "currency", "timezone_id", "on_behalf_of_business_info", "schedules",
        "is_enabled_for_insights", "dcc_config", "message_templates", "phone_numbers",
        "message_template_namespace", "primary_business_location", "health_status", "status",
        "marketing_messages_lite_api_status", "marketing_messages_onboarding_status",
        "owner_business_info", "disable_marketing_messages_on_cloud_api",
    }
)  # fmt: skip
_ACCOUNT_DEFAULT: Final = ("id", "name", "timezone_id", "message_template_namespace")
_TEMPLATE_FIELDS: Final = frozenset(
    {
        "id", "name", "language", "category", "status", "components", "parameter_format",
        "message_send_ttl_seconds", "correct_category", "previous_category", "rejected_reason",
        "library_template_name", "quality_score", "cta_url_link_tracking_opted_out",
        "sub_category", "degrees_of_freedom_spec",
    }
)  # fmt: skip
_TEMPLATE_DEFAULT: Final = ("name", "components", "language", "status", "category", "id")
_SUMMARY_FIELDS: Final = (
    "total_count",
    "message_template_count",
    "message_template_limit",
    "are_translations_complete",
)
_PROFILE_FIELDS: Final = (
    "about",
    "address",
    "description",
    "email",
    "profile_picture_url",
    "websites",
    "vertical",
)
_VERTICALS: Final = frozenset(
    {
        "UNDEFINED", "OTHER", "AUTO", "BEAUTY", "APPAREL", "EDU", "ENTERTAIN", "EVENT_PLAN",
        "FINANCE", "GROCERY", "GOVT", "HOTEL", "HEALTH", "NONPROFIT", "PROF_SERVICES", "RETAIL",
        "TRAVEL", "RESTAURANT", "ALCOHOL", "ONLINE_GAMBLING", "PHYSICAL_GAMBLING", "OTC_DRUGS",
    }
)  # fmt: skip
#: The longest text Meta takes in each field of a profile update.
_PROFILE_LIMITS: Final = {"about": 139, "address": 256, "description": 256, "email": 128}
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_PROFILE_BODY_LIMIT: Final = 64 * 1024


def template_id(name: str, language: str) -> str:
    """A template's id when none was given: 15 digits drawn from its name and language."""
    digest = hashlib.sha256(f"{name}\0{language}".encode()).digest()
    return str(10**14 + int.from_bytes(digest[:8], "big") % (9 * 10**14))


def template_object(spec: TemplateSpec) -> dict[str, Any]:
    """``spec`` as Meta lists it: the object it was read from, or what is known of it."""
    # As plain JSON: a YAML file may have given dates or other values JSON lacks.
    given = json.loads(json.dumps(spec.source, default=str)) if spec.source is not None else {}
    named = bool(spec.body_names or spec.header_names)
    listed: dict[str, Any] = {
        "name": spec.name,
        "language": spec.language,
        "status": spec.status,
        "category": spec.category.upper(),
        "id": template_id(spec.name, spec.language),
        "parameter_format": "NAMED" if named else "POSITIONAL",
        **given,
    }
    if "components" not in given:
        listed["components"] = _components(spec)
    return listed


def _components(spec: TemplateSpec) -> list[dict[str, Any]]:
    """A template's components from what is known of it (its words, else its placeholders)."""
    components: list[dict[str, Any]] = []
    if spec.header_format != "text":
        components.append({"type": "HEADER", "format": spec.header_format.upper()})
    elif spec.header_text or spec.header_params:
        text = spec.header_text or _placeholders(spec.header_params, spec.header_names)
        header = {"type": "HEADER", "format": "TEXT", "text": text}
        components.append(header | _examples("header", spec.header_params, spec.header_names))
    if spec.body_text or spec.body_params:
        text = spec.body_text or _placeholders(spec.body_params, spec.body_names)
        body = {"type": "BODY", "text": text}
        components.append(body | _examples("body", spec.body_params, spec.body_names))
    if spec.footer_text:
        components.append({"type": "FOOTER", "text": spec.footer_text})
    return components


def _examples(part: str, count: int, names: tuple[str, ...]) -> dict[str, Any]:
    """Sample values for a component's parameters, as Meta keeps them with every template."""
    if not count:
        return {}
    if names:
        named = [{"param_name": name, "example": f"sample {name}"} for name in names]
        return {"example": {f"{part}_text_named_params": named}}
    samples = [f"sample {n}" for n in range(1, count + 1)]
    return {"example": {f"{part}_text": samples if part == "header" else [samples]}}


def _placeholders(count: int, names: tuple[str, ...]) -> str:
    return " ".join(f"{{{{{name}}}}}" for name in (names or range(1, count + 1)))


@dataclass
class BusinessAccount:
    """The WhatsApp Business Account a simulator plays: its id, numbers, templates and profile.

    ``phone_numbers`` maps each number's id to its display number. The
    profile and the settings are kept per number and change with each update
    a bot posts.
    """

    waba_id: str
    phone_numbers: Mapping[str, str]
    templates: TemplateRegistry = field(default_factory=TemplateRegistry.default)
    verified_name: str = "Harness Test Business"
    throughput_mps: float = _STANDARD_MPS
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The Meta app the bot is (the one ``subscribed_apps`` lists).
    app_id: str = default.APP_ID
    #: What bots set on each number (``POST /{phone_number_id}``) that its fields show.
    number_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Each number's conversational automation and commerce settings, as bots set them
    #: (:mod:`~channels.whatsapp._number_settings`).
    automations: dict[str, dict[str, Any]] = field(default_factory=dict)
    commerce: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Each number's two-step verification PIN, once a bot has set one or registered with it,
    #: and the numbers deregistered (:mod:`~channels.whatsapp._registration`).
    pins: dict[str, str] = field(default_factory=dict)
    deregistered: set[str] = field(default_factory=set)

    def phone_number(self, phone_number_id: str) -> dict[str, Any]:
        """Every field of a number the simulator has a value for."""
        return {
            "id": phone_number_id,
            "display_phone_number": display_number(self.phone_numbers[phone_number_id]),
            "verified_name": self.verified_name,
            "quality_rating": "GREEN",
            "status": "CONNECTED",
            "name_status": "APPROVED",
            "code_verification_status": "VERIFIED",
            "account_mode": "LIVE",
            "platform_type": "CLOUD_API",
            "host_platform": "CLOUD_API",
            "throughput": {"level": "HIGH" if self.throughput_mps > _STANDARD_MPS else "STANDARD"},
            "messaging_limit_tier": "TIER_1K",
            "is_official_business_account": False,
            "is_on_biz_app": False,
            "is_pin_enabled": False,
            "is_preverified_number": False,
            **self.number_settings.get(phone_number_id, {}),
        }

    def account(self) -> dict[str, Any]:
        """Every field of the account the simulator has a value for."""
        namespace = uuid.UUID(bytes=hashlib.sha256(self.waba_id.encode()).digest()[:16])
        return {
            "id": self.waba_id,
            "name": self.verified_name,
            "timezone_id": "1",
            "message_template_namespace": str(namespace).replace("-", "_"),
            "account_review_status": "APPROVED",
            "business_verification_status": "VERIFIED",
            "country": "US",
            "currency": "USD",
            "ownership_type": "SELF_OWNED",
            "primary_business_location": "US",
        }

    def profile(self, phone_number_id: str) -> dict[str, Any]:
        """The number's business profile (Meta's defaults until a bot changes it)."""
        return self.profiles.setdefault(
            phone_number_id, {"about": "Hey there! I am using WhatsApp.", "vertical": "UNDEFINED"}
        )

    def template(self, object_id: str) -> dict[str, Any] | None:
        """The template whose id is ``object_id``, as Meta lists it, or ``None``."""
        for spec in self.templates:
            listed = template_object(spec)
            if listed["id"] == object_id:
                return listed
        return None


def business_account(config: SimulatorConfig, templates: TemplateRegistry) -> BusinessAccount:
    """The account ``config`` describes: its WABA id, its number, its throughput."""
    return BusinessAccount(
        config.waba_id,
        {config.phone_number_id: config.display_phone_number},
        templates,
        throughput_mps=config.throughput_mps,
        app_id=config.app_id,
    )


class AccountAPI:
    """The account's endpoints, for the fake Graph API to serve (see the module).

    ``check`` refuses a request whose version or access token is bad, as
    every Graph endpoint does, before anything else is read.
    """

    def __init__(self, account: BusinessAccount, check: Callable[[Request], None]) -> None:
        self.account = account
        #: Refuses a bad version or access token (see the class).
        self.check = check

    def node(self, request: Request, object_id: str) -> Response | None:
        """``GET /{version}/{id}`` for the number or the account; ``None`` for another id."""
        account = self.account
        if object_id in account.phone_numbers:
            found = _fields(request, account.phone_number(object_id), _PHONE_FIELDS, _PHONE_DEFAULT)
            return JSONResponse(found)
        if object_id == account.waba_id:
            fields = _fields(request, account.account(), _ACCOUNT_FIELDS, _ACCOUNT_DEFAULT)
            return JSONResponse(fields)
        return None

    def template_node(self, request: Request, object_id: str) -> Response | None:
        """``GET /{version}/{id}`` for a template; ``None`` if no template has that id."""
        template = self.account.template(object_id)
        if template is None:
            return None
        return JSONResponse(_fields(request, template, _TEMPLATE_FIELDS, _TEMPLATE_DEFAULT))

    async def numbers(self, request: Request) -> Response:
        """``GET /{version}/{waba_id}/phone_numbers``."""
        self.check(request)
        account = self._known_account(request)
        items = [account.phone_number(number) for number in account.phone_numbers]
        shown = [_fields(request, item, _PHONE_FIELDS, _PHONE_DEFAULT) for item in items]
        return JSONResponse(page(request, shown))

    async def templates(self, request: Request) -> Response:
        """``GET /{version}/{waba_id}/message_templates``; creating or deleting is refused."""
        self.check(request)
        account = self._known_account(request)
        if request.method != "GET":
            details = (
                f"The simulator does not {'delete' if request.method == 'DELETE' else 'create'}"
                " message templates: give the business's templates with --templates"
                " (SimulatorConfig.templates), as Meta lists them."
            )
            raise InvalidParameter(message=f"(#100) {details}", details=details)
        query = request.query_params
        chosen = [template_object(spec) for spec in account.templates]
        for key in ("name", "status", "language", "category"):
            wanted = query.get(key)
            if wanted is not None:  # a name exactly; the others, any of a comma-separated list
                choices = {wanted} if key == "name" else set(_listed(wanted))
                chosen = [t for t in chosen if str(t.get(key, "")) in choices]
        shown = [_fields(request, t, _TEMPLATE_FIELDS, _TEMPLATE_DEFAULT) for t in chosen]
        answer = page(request, shown)
        summary = query.get("summary")
        if summary is not None:
            total = sum(1 for _ in account.templates)
            counts = {
                "total_count": len(chosen),
                "message_template_count": total,
                "message_template_limit": _TEMPLATE_LIMIT,
                "are_translations_complete": True,
            }
            asked = _listed(summary) if summary.lower() not in ("true", "1") else _SUMMARY_FIELDS
            unknown = [name for name in asked if name not in counts]
            if unknown:
                raise _no_field(unknown[0], "WhatsAppBusinessAccountMessageTemplatesSummary")
            answer["summary"] = {name: counts[name] for name in asked}
        return JSONResponse(answer)

    async def profile(self, request: Request) -> Response:
        """``GET`` and ``POST /{version}/{phone_number_id}/whatsapp_business_profile``."""
        phone_number_id = self.known_number(request)
        account = self.account
        profile = account.profile(phone_number_id)
        if request.method == "GET":
            asked = request.query_params.get("fields")
            names = _PROFILE_FIELDS if asked is None else _listed(asked)
            for name in names:
                if name not in _PROFILE_FIELDS and name != "messaging_product":
                    raise _no_field(name, "WhatsAppBusinessProfile")
            shown = {name: profile[name] for name in names if name in profile}
            return JSONResponse({"data": [{**shown, "messaging_product": "whatsapp"}]})
        update = await _profile_update(request)
        profile.update(update)
        return JSONResponse({"success": True})

    def known_number(self, request: Request) -> str:
        """The ``{phone_number_id}`` a call names, once its version and token are checked.

        A number the account does not have answers Graph's "no object with ID".
        """
        self.check(request)
        phone_number_id: str = request.path_params["phone_number_id"]
        if phone_number_id not in self.account.phone_numbers:
            raise unknown_object(request.method, phone_number_id)
        return phone_number_id

    def _known_account(self, request: Request) -> BusinessAccount:
        waba_id = request.path_params["waba_id"]
        if waba_id != self.account.waba_id:
            raise unknown_object(request.method, waba_id)
        return self.account


def _listed(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _fields(
    request: Request,
    node: Mapping[str, Any],
    known: frozenset[str],
    default_fields: Iterable[str],
) -> dict[str, Any]:
    """``node`` cut to the fields asked for (``id`` always), or its default fields."""
    asked = request.query_params.get("fields")
    if asked is None:
        return {name: node[name] for name in default_fields if name in node}
    names = _listed(asked)
    for name in names:
        base = name.split("{", 1)[0].split(".", 1)[0]  # fields{sub} and field.limit(n)
        if base not in known and base not in node:
            raise _no_field(base, _NODE_TYPES.get(known, "node"))
    shown = {"id": node["id"]} if "id" in node else {}
    for name in names:
        base = name.split("{", 1)[0].split(".", 1)[0]
        if base in node:
            shown[base] = node[base]
    return shown


_NODE_TYPES: Final = {
    _PHONE_FIELDS: "WhatsAppBusinessPhoneNumber",
    _ACCOUNT_FIELDS: "WhatsAppBusinessAccount",
    _TEMPLATE_FIELDS: "WhatsAppBusinessHSM",
}


async def _profile_update(request: Request) -> dict[str, Any]:
    """The fields a profile update sets, checked as Meta checks them."""
    try:
        body = decode_json(await read_limited(request, _PROFILE_BODY_LIMIT))
    except BodyTooLarge:
        raise request_error("", f"the body is over {_PROFILE_BODY_LIMIT} bytes") from None
    except BadBody as exc:
        raise request_error("", f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise request_error("", "the body must be a JSON object")
    if body.get("messaging_product") != "whatsapp":
        raise request_error("messaging_product", 'required, and must be "whatsapp"')
    update: dict[str, Any] = {}
    for key, value in body.items():
        if key == "messaging_product":
            continue
        if key in _PROFILE_LIMITS:
            if not isinstance(value, str):
                raise request_error(key, "must be a string")
            if len(value) > _PROFILE_LIMITS[key]:
                raise request_error(key, f"must be at most {_PROFILE_LIMITS[key]} characters")
            if key == "about" and not value.strip():
                raise request_error(key, "must not be empty")
            if key == "email" and value and _EMAIL.fullmatch(value) is None:
                raise request_error(key, "is not an email address")
            update[key] = value
        elif key == "vertical":
            if not isinstance(value, str) or value not in _VERTICALS:
                raise request_error(key, f"must be one of {', '.join(sorted(_VERTICALS))}")
            update[key] = value
        elif key == "websites":
            update[key] = _websites(value)
        elif key == "profile_picture_handle":
            if not isinstance(value, str) or not value:
                raise request_error(key, "must be the handle of an upload")
            digest = hashlib.sha256(value.encode()).hexdigest()[:32]
            update["profile_picture_url"] = f"https://pps.whatsapp.net/v/t61/{digest}.jpg"
        else:
            raise request_error(key, "is not a field of the business profile")
    return update


def _websites(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > 2:
        raise request_error("websites", "must be a list of at most 2 URLs")
    for i, site in enumerate(value):
        if not isinstance(site, str) or len(site) > 256:
            raise request_error(f"websites[{i}]", "must be a URL of at most 256 characters")
        if not site.startswith(("http://", "https://")):
            raise request_error(f"websites[{i}]", "must start with http:// or https://")
    return list(value)


def _no_field(name: str, node_type: str) -> InvalidParameter:
    details = f"Tried accessing nonexisting field ({name}) on node type ({node_type})"
    return InvalidParameter(message=f"(#100) {details}", details=details)


@functools.cache
def display_number(number: str) -> str:
    """``number`` in the international format Graph's reads give (``+1 631-555-5555``).

    A number libphonenumber can't place is given as it was written.
    """
    import phonenumbers  # the metadata loads on first use, by the reads that need it

    digits = re.sub(r"[^0-9]", "", number)
    try:
        parsed = phonenumbers.parse(f"+{digits}")
    except phonenumbers.NumberParseException:
        return number
    if not phonenumbers.is_possible_number(parsed):
        return number
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.INTERNATIONAL)


def unknown_object(method: str, object_id: str) -> NoSuchObject:
    """Graph's answer for an id that names nothing this token may use (100, subcode 33)."""
    return NoSuchObject.about(method, object_id)
