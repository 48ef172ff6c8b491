"""Interactive messages: reply buttons, lists, and the other kinds Meta offers.

Reply buttons and lists are checked in full against :class:`SendLimits`:
at most 3 buttons with unique ids and titles; at most 10 sections and 10
rows in all, row ids unique across sections, and every section titled once
there are several. The other kinds (``cta_url``, ``flow``, ``product`` ...)
need their ``action`` object, whose shape is theirs, and are held to what
Meta's description of an interactive message says of all kinds: a header of
a known type (text of at most 60 characters; required for ``product_list``,
refused for ``product``), a body of at most 1024 characters, a footer of at
most 60. Their body text, if any, is what the user reads.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, ValidationInfo, model_validator

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import Dispatch, Maybe, NonEmpty, SendModel, send_problem
from channels.whatsapp.sends.limits import Limit, context_of
from channels.whatsapp.sends.media import HeaderDocument, MediaRef

__all__ = [
    "AnyHeader",
    "ButtonAction",
    "ButtonBody",
    "ButtonInteractive",
    "DocumentHeader",
    "ImageHeader",
    "InteractiveContent",
    "InteractiveFooter",
    "InteractiveSend",
    "ListAction",
    "ListBody",
    "ListInteractive",
    "ListRow",
    "ListSection",
    "OptionalBody",
    "OtherInteractive",
    "ReplyButton",
    "ReplyChoice",
    "TextHeader",
    "VideoHeader",
]


class TextHeader(SendModel):
    """A text header (the only kind a list may have)."""

    type: Literal["text"]
    text: Annotated[str, Field(min_length=1), Limit("header_text")]


class ImageHeader(SendModel):
    """An image header of a reply-button message."""

    type: Literal["image"]
    image: MediaRef


class VideoHeader(SendModel):
    """A video header of a reply-button message."""

    type: Literal["video"]
    video: MediaRef


class DocumentHeader(SendModel):
    """A document header of a reply-button message."""

    type: Literal["document"]
    document: HeaderDocument


AnyHeader = Annotated[
    TextHeader | ImageHeader | VideoHeader | DocumentHeader, Dispatch("type", "header type")
]
"""A header of any kind: text, image, video or document."""


class InteractiveFooter(SendModel):
    """``footer``: a line of small text under the body."""

    text: Annotated[str, Field(min_length=1), Limit("footer_text")]


class ButtonBody(SendModel):
    """The body of a reply-button message."""

    text: Annotated[str, Field(min_length=1), Limit("button_body")]


class ListBody(SendModel):
    """The body of a list message."""

    text: Annotated[str, Field(min_length=1), Limit("list_body")]


class ReplyChoice(SendModel):
    """What a reply button says, and the id its tap sends back."""

    id: Annotated[str, Field(min_length=1), Limit("button_id")]
    title: Annotated[str, Field(min_length=1), Limit("button_title")]


class ReplyButton(SendModel):
    """One reply button."""

    type: Literal["reply"]
    reply: ReplyChoice


class ButtonAction(SendModel):
    """The buttons of a reply-button message: ids and titles unique."""

    buttons: Annotated[list[ReplyButton], Field(min_length=1), Limit("buttons")]

    @model_validator(mode="after")
    def _check_unique(self) -> Self:
        ids: set[str] = set()
        titles: set[str] = set()
        for index, button in enumerate(self.buttons):
            for seen, field, value in (
                (ids, "id", button.reply.id),
                (titles, "title", button.reply.title),
            ):
                if value in seen:
                    text = f"{field} {value!r} is used twice; each must be unique"
                    send_problem(
                        "send_invalid", text, "buttons", index, "reply", field, value=value
                    )
                seen.add(value)
        return self


class ButtonInteractive(SendModel):
    """A message with up to three reply buttons."""

    type: Literal["button"]
    header: Maybe[AnyHeader] = None
    footer: Maybe[InteractiveFooter] = None
    body: ButtonBody
    action: ButtonAction


class ListRow(SendModel):
    """One row of a list: the id its pick sends back, a title and a description."""

    id: Annotated[str, Field(min_length=1), Limit("row_id")]
    title: Annotated[str, Field(min_length=1), Limit("row_title")]
    description: Maybe[Annotated[str, Limit("row_description")]] = None


class ListSection(SendModel):
    """A titled group of rows."""

    title: Maybe[Annotated[str, Field(min_length=1), Limit("section_title")]] = None
    rows: Annotated[list[ListRow], Field(min_length=1), Limit("rows")]


# JSON Schema's half of the rule below; the row total and unique ids it can't say.
_TITLED_SECTIONS: dict[str, Any] = {
    "if": {"properties": {"sections": {"minItems": 2}}, "required": ["sections"]},
    "then": {"properties": {"sections": {"items": {"required": ["title"]}}}},
}


class ListAction(SendModel):
    """The menu of a list: its button label and sections."""

    model_config = ConfigDict(json_schema_extra=_TITLED_SECTIONS)

    button: Annotated[str, Field(min_length=1), Limit("list_button")]
    sections: Annotated[list[ListSection], Field(min_length=1), Limit("sections")]

    @model_validator(mode="after")
    def _check_rows(self, info: ValidationInfo) -> Self:
        most = context_of(info).limits.rows
        ids: set[str] = set()
        count = 0
        for at, section in enumerate(self.sections):
            if len(self.sections) > 1 and section.title is None:
                send_problem(
                    "send_missing", "required parameter is missing", "sections", at, "title"
                )
            for row_at, row in enumerate(section.rows):
                where = ("sections", at, "rows", row_at)
                count += 1
                if count > most:
                    text = f"a list holds at most {most} rows in all its sections"
                    send_problem("send_invalid", text, *where, value=row)
                if row.id in ids:
                    text = f"row id {row.id!r} is used twice; each must be unique"
                    send_problem("send_invalid", text, *where, "id", value=row.id)
                ids.add(row.id)
        return self


class ListInteractive(SendModel):
    """A message with a menu of up to ten rows."""

    type: Literal["list"]
    header: Maybe[TextHeader] = None
    footer: Maybe[InteractiveFooter] = None
    body: ListBody
    action: ListAction


class OptionalBody(SendModel):
    """The body of the other interactive kinds, which may leave it out."""

    text: Maybe[Annotated[NonEmpty, Limit("interactive_body")]] = None


class OtherInteractive(SendModel):
    """Interactive kinds the simulator passes through with light checks."""

    type: Literal[
        "address_message",
        "call_permission_request",
        "carousel",
        "catalog_message",
        "cta_url",
        "flow",
        "location_request_message",
        "order_details",
        "order_status",
        "product",
        "product_list",
        "request_contact_info",
        "voice_call",
    ]
    action: dict[str, Any]
    header: Maybe[AnyHeader] = None
    body: Maybe[OptionalBody] = None
    footer: Maybe[InteractiveFooter] = None

    @model_validator(mode="after")
    def _header_as_the_kind_wants(self) -> Self:
        if self.type == "product_list" and self.header is None:
            send_problem("send_missing", "a product list needs a header", "header")
        if self.type == "product" and self.header is not None:
            send_problem("send_invalid", "a single product message takes no header", "header")
        return self


InteractiveContent = Annotated[
    ButtonInteractive | ListInteractive | OtherInteractive, Dispatch("type", "interactive type")
]
"""The ``interactive`` object, validated as the kind its ``type`` names."""


class InteractiveSend(MessageSend):
    """An interactive message."""

    type: Literal["interactive"]
    interactive: InteractiveContent

    def content(self) -> SendSummary:
        """The interactive kind, and its body text as the text shown."""
        body = self.interactive.body
        text = None if body is None else body.text
        return {"interactive_type": self.interactive.type, "text": text}
