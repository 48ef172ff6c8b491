"""Validation of send bodies for ``POST /{version}/{phone_number_id}/messages``.

:class:`SendValidator` validates a decoded JSON body against the send models
(:mod:`channels.whatsapp.sends`, the same models the OpenAPI document is
generated from) and turns it into a frozen :class:`ValidatedSend`, or raises
the :class:`GraphAPIError` Meta would answer with (see
:mod:`channels.whatsapp.sends.problems` for the codes and which of several
problems is reported). Beyond the models, it asks its
:class:`TemplateRegistry` whether a template exists in that language (132001)
and takes that many parameters (132000), and its media store whether a
media id may be sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import ValidationError

from channels.whatsapp._request_body import BadBody, decode_json
from channels.whatsapp.errors import (
    GraphAPIError,
    PermissionDenied,
    TemplateNotFound,
)
from channels.whatsapp.sends.common import SendAction, normalize_wa_id
from channels.whatsapp.sends.fields import without_nulls
from channels.whatsapp.sends.interactive import InteractiveSend
from channels.whatsapp.sends.limits import DEFAULT_LIMITS, SendContext, SendLimits
from channels.whatsapp.sends.problems import graph_error_for, request_error
from channels.whatsapp.sends.request import MESSAGE_TYPES, SEND_REQUEST
from channels.whatsapp.sends.template import TemplateSend
from channels.whatsapp.templates import TemplateRegistry

__all__ = [
    "DEFAULT_LIMITS",
    "MESSAGE_TYPES",
    "PAYMENT_TYPES",
    "SendAction",
    "SendLimits",
    "SendValidator",
    "ValidatedSend",
    "normalize_wa_id",
    "parse_json_body",
]


PAYMENT_TYPES = frozenset({"order_details", "order_status"})
"""The interactive types only a business with a payment configuration may send."""


@dataclass(frozen=True, slots=True)
class ValidatedSend:
    """A send body that passed validation, with the parts the simulator and trace need.

    For an individual message exactly one of ``to`` (normalized wa_id) and
    ``recipient`` (BSUID) is set; ``input`` is what the body said, echoed in
    the response. ``text`` is the text body, caption, interactive body or
    reaction emoji. ``message_id`` is the message read or reacted to.
    """

    phone_number_id: str
    action: SendAction
    body: Mapping[str, Any]
    type: str | None = None
    recipient_type: Literal["individual", "group"] = "individual"
    input: str | None = None
    to: str | None = None
    recipient: str | None = None
    group_id: str | None = None
    text: str | None = None
    context_id: str | None = None
    message_id: str | None = None
    interactive_type: str | None = None
    template_name: str | None = None
    template_language: str | None = None
    media_id: str | None = None
    media_link: str | None = None
    biz_opaque_callback_data: str | None = None
    #: The Graph API version the send was made through (``v25.0``), where known.
    api_version: str | None = None

    @property
    def user(self) -> str | None:
        """The user addressed: the wa_id, else the BSUID (``None`` for reads and groups)."""
        return self.to if self.to is not None else self.recipient


def parse_json_body(raw: bytes) -> object:
    """Decode a request body as JSON, or raise ``InvalidParameter`` (100).

    It must be UTF-8; ``NaN`` and ``Infinity`` are not JSON and are refused;
    so are nesting too deep and half of a surrogate pair (see
    :func:`~channels.whatsapp._request_body.decode_json`).
    """
    try:
        return decode_json(raw)
    except BadBody as exc:
        raise request_error("", f"the request body is not valid JSON ({exc})") from None


class SendValidator:
    """Checks send bodies against the send models, the templates and the media store.

    ``templates`` decides which templates exist (the default registry when
    ``None``); ``media_exists`` tells whether a media id may be sent (any id
    passes when ``None``); ``limits`` are Meta's unless given. ``payments``
    says whether the business has a payment configuration: without one, as
    for a business Meta has not set up for payments, ``order_details`` and
    ``order_status`` messages answer 10 (permission denied, 403).

    Meta looks the template up before it reads the language code, so a
    template name the business lacks answers 132001 even when the language
    code is missing or malformed.
    """

    def __init__(
        self,
        *,
        templates: TemplateRegistry | None = None,
        media_exists: Callable[[str], bool] | None = None,
        limits: SendLimits = DEFAULT_LIMITS,
        payments: bool = False,
    ) -> None:
        self.limits = limits
        self.templates = TemplateRegistry.default() if templates is None else templates
        self.media_exists = media_exists
        self.payments = payments

    def validate(
        self, phone_number_id: str, body: object, *, api_version: str | None = None
    ) -> ValidatedSend:
        """Validate one decoded body sent to ``phone_number_id``'s messages endpoint.

        ``api_version`` is the Graph API version of the path it came through.
        """
        context = SendContext(self.limits, self.media_exists)
        body = without_nulls(body)  # what the rules and the outbox read: no key given as null
        try:
            send = SEND_REQUEST.validate_python(body, context=context)
        except ValidationError as exc:
            error = graph_error_for(exc)
            raise self._unknown_template(body, error) or error from None
        summary = send.summary()
        if isinstance(send, TemplateSend):
            template = send.template
            spec = self.templates.check(
                template.name, template.language.code, template.components or ()
            )
            # What the user reads: the template's words with the parameters in, where known.
            raw = cast(Mapping[str, Any], body)["template"]
            words = spec.render(raw.get("components"))
            if words is not None:
                summary["text"] = words
        if (
            isinstance(send, InteractiveSend)
            and send.interactive.type in PAYMENT_TYPES
            and not self.payments
        ):
            raise PermissionDenied(
                details=f"interactive.type: {send.interactive.type} messages need a payment"
                " configuration, and this business has none"
            )
        # The model took the body, so it is a JSON object.
        body = cast(Mapping[str, Any], body)
        return ValidatedSend(phone_number_id, send.action, body, **summary, api_version=api_version)

    def _unknown_template(self, body: object, error: GraphAPIError) -> TemplateNotFound | None:
        """132001 for a template the business lacks, when ``error`` is about its language code."""
        if not error.details.startswith("template.language"):
            return None
        template = body.get("template") if isinstance(body, Mapping) else None
        name = template.get("name") if isinstance(template, Mapping) else None
        if not isinstance(name, str) or not name or self.templates.has(name):
            return None
        return TemplateNotFound(details=f"template.name: template {name!r} does not exist")
