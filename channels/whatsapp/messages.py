"""Inbound messages: one model per ``type`` a user can send, and a builder for each.

``InboundMessage`` is the union of them all, told apart by ``type``. A message
whose ``type`` is not modelled here (``order``, ``system``, ``nfm_reply``...)
or that lacks its type's object (Meta's ``value.errors`` sample: an
``interactive`` message without ``interactive``) parses as ``UnknownMessage``,
keeping every field, so a new kind of message never breaks a parse.

Builders take the fields a scenario cares about and fill in Meta's shape, e.g.
``text_message(wamid, from_, timestamp, body)``. ``from_`` is the user's
wa_id, or ``None`` for a username-only user known by BSUID alone
(``from_user_id``); ``timestamp`` is anything ``format_timestamp`` takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeAlias, TypedDict

from pydantic import BaseModel, Discriminator, Field, Tag, TypeAdapter

from channels.whatsapp.errors import ErrorObject, error_object
from channels.whatsapp.payloads import (
    MetaModel,
    Timestamp,
    TimestampLike,
    format_timestamp,
    validate,
)

__all__ = [
    "Audio",
    "AudioMessage",
    "Button",
    "ButtonMessage",
    "ButtonReply",
    "ButtonReplyInteractive",
    "ContactAddress",
    "ContactCard",
    "ContactEmail",
    "ContactName",
    "ContactOrg",
    "ContactPhone",
    "ContactUrl",
    "ContactsMessage",
    "Context",
    "Document",
    "DocumentMessage",
    "Image",
    "ImageMessage",
    "InboundMessage",
    "Interactive",
    "InteractiveMessage",
    "ListReply",
    "ListReplyInteractive",
    "Location",
    "LocationMessage",
    "MessageBase",
    "Reaction",
    "ReactionMessage",
    "Sticker",
    "StickerMessage",
    "Text",
    "TextMessage",
    "UnknownInteractive",
    "UnknownMessage",
    "Unsupported",
    "UnsupportedMessage",
    "Video",
    "VideoMessage",
    "audio",
    "button_reply",
    "contact_card",
    "contacts_message",
    "document",
    "image",
    "list_reply",
    "location",
    "parse_message",
    "reaction",
    "sticker",
    "template_button",
    "text_message",
    "unsupported",
    "video",
]


class Context(MetaModel):
    """What an inbound message refers to: the quoted message, or that it was forwarded.

    A reply (or a button or list reply) carries ``from`` (the business number)
    and ``id`` (the wamid it answers); a forwarded message carries
    ``forwarded`` or ``frequently_forwarded`` (forwarded more than five times).
    """

    from_: str | None = Field(default=None, alias="from")
    id: str | None = None
    forwarded: bool | None = None
    frequently_forwarded: bool | None = None


class MessageBase(MetaModel):
    """The fields every inbound message has, whatever its type."""

    context: Context | None = None
    from_: str | None = Field(default=None, alias="from")
    from_user_id: str | None = None
    id: str
    timestamp: Timestamp
    type: str
    errors: list[ErrorObject] | None = None

    @property
    def unix_time(self) -> int:
        """``timestamp`` as an int of unix seconds."""
        return int(self.timestamp)


class Text(MetaModel):
    """The ``text`` object of a text message."""

    body: str


class TextMessage(MessageBase):
    """A plain text message."""

    type: Literal["text"] = "text"
    text: Text


class ButtonReply(MetaModel):
    """The reply button a user tapped."""

    id: str
    title: str


class ListReply(MetaModel):
    """The list row a user picked."""

    id: str
    title: str
    description: str | None = None


class ButtonReplyInteractive(MetaModel):
    """The ``interactive`` object of a reply-button tap."""

    type: Literal["button_reply"] = "button_reply"
    button_reply: ButtonReply


class ListReplyInteractive(MetaModel):
    """The ``interactive`` object of a list pick."""

    type: Literal["list_reply"] = "list_reply"
    list_reply: ListReply


class UnknownInteractive(MetaModel):
    """An ``interactive`` object of a kind not modelled here (``nfm_reply`` from Flows...)."""

    type: str


def _interactive_tag(value: Any) -> str:
    if isinstance(value, BaseModel):
        return {ButtonReplyInteractive: "<button_reply>", ListReplyInteractive: "<list_reply>"}.get(
            type(value), "<other>"
        )
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind in ("button_reply", "list_reply") and kind in value:
            return f"<{kind}>"
    return "<other>"


Interactive: TypeAlias = Annotated[
    Annotated[ButtonReplyInteractive, Tag("<button_reply>")]
    | Annotated[ListReplyInteractive, Tag("<list_reply>")]
    | Annotated[UnknownInteractive, Tag("<other>")],
    Discriminator(_interactive_tag),
]
"""An ``interactive`` object, told apart by its ``type``."""


class InteractiveMessage(MessageBase):
    """A tap on a reply button or a pick from a list, answering the message in ``context``."""

    type: Literal["interactive"] = "interactive"
    interactive: Interactive


class Button(MetaModel):
    """The quick-reply button of a template a user tapped."""

    payload: str
    text: str


class ButtonMessage(MessageBase):
    """A tap on a template's quick-reply button (``type: "button"``)."""

    type: Literal["button"] = "button"
    button: Button


class Image(MetaModel):
    """A received image; ``sha256`` is base64, ``url`` is not always present."""

    id: str
    mime_type: str
    sha256: str
    caption: str | None = None
    url: str | None = None


class Audio(MetaModel):
    """A received audio file; ``voice`` marks a voice note."""

    id: str
    mime_type: str
    sha256: str
    voice: bool | None = None
    url: str | None = None


class Video(MetaModel):
    """A received video."""

    id: str
    mime_type: str
    sha256: str
    caption: str | None = None
    url: str | None = None


class Document(MetaModel):
    """A received document."""

    id: str
    mime_type: str
    sha256: str
    filename: str | None = None
    caption: str | None = None
    url: str | None = None


class Sticker(MetaModel):
    """A received sticker."""

    id: str
    mime_type: str
    sha256: str
    animated: bool | None = None
    url: str | None = None


class ImageMessage(MessageBase):
    """An image message."""

    type: Literal["image"] = "image"
    image: Image


class AudioMessage(MessageBase):
    """An audio message or voice note."""

    type: Literal["audio"] = "audio"
    audio: Audio


class VideoMessage(MessageBase):
    """A video message."""

    type: Literal["video"] = "video"
    video: Video


class DocumentMessage(MessageBase):
    """A document message."""

    type: Literal["document"] = "document"
    document: Document


class StickerMessage(MessageBase):
    """A sticker message."""

    type: Literal["sticker"] = "sticker"
    sticker: Sticker


class Location(MetaModel):
    """A shared location."""

    latitude: float
    longitude: float
    name: str | None = None
    address: str | None = None
    url: str | None = None


class LocationMessage(MessageBase):
    """A location message."""

    type: Literal["location"] = "location"
    location: Location


class ContactName(MetaModel):
    """The name on a shared contact card."""

    formatted_name: str
    first_name: str | None = None
    middle_name: str | None = None
    last_name: str | None = None
    prefix: str | None = None
    suffix: str | None = None


class ContactPhone(MetaModel):
    """A phone number on a contact card; ``wa_id`` when the number is on WhatsApp."""

    phone: str | None = None
    wa_id: str | None = None
    type: str | None = None


class ContactEmail(MetaModel):
    """An email address on a contact card."""

    email: str | None = None
    type: str | None = None


class ContactUrl(MetaModel):
    """A web address on a contact card."""

    url: str | None = None
    type: str | None = None


class ContactAddress(MetaModel):
    """A postal address on a contact card."""

    street: str | None = None
    city: str | None = None
    state: str | None = None
    zip: str | None = None
    country: str | None = None
    country_code: str | None = None
    type: str | None = None


class ContactOrg(MetaModel):
    """The organisation on a contact card."""

    company: str | None = None
    department: str | None = None
    title: str | None = None


class ContactCard(MetaModel):
    """One shared contact card."""

    addresses: list[ContactAddress] | None = None
    birthday: str | None = None
    emails: list[ContactEmail] | None = None
    name: ContactName
    org: ContactOrg | None = None
    phones: list[ContactPhone] | None = None
    urls: list[ContactUrl] | None = None


class ContactsMessage(MessageBase):
    """One or more shared contact cards."""

    type: Literal["contacts"] = "contacts"
    contacts: list[ContactCard]


class Reaction(MetaModel):
    """A reaction to ``message_id``; an empty or absent ``emoji`` removes it."""

    message_id: str
    emoji: str | None = None


class ReactionMessage(MessageBase):
    """A reaction added to (or removed from) a message."""

    type: Literal["reaction"] = "reaction"
    reaction: Reaction


class Unsupported(MetaModel):
    """What Meta says about a message it can't pass on (``type``: ``poll``, ...)."""

    type: str | None = None


class UnsupportedMessage(MessageBase):
    """A message Meta does not pass on; ``errors`` holds 131051."""

    type: Literal["unsupported"] = "unsupported"
    unsupported: Unsupported | None = None


class UnknownMessage(MessageBase):
    """A message of a type not modelled here, or missing its type's object; keeps all fields."""


_TAGGED: dict[str, tuple[type[MessageBase], str | None]] = {
    "text": (TextMessage, "text"),
    "interactive": (InteractiveMessage, "interactive"),
    "button": (ButtonMessage, "button"),
    "image": (ImageMessage, "image"),
    "audio": (AudioMessage, "audio"),
    "video": (VideoMessage, "video"),
    "document": (DocumentMessage, "document"),
    "sticker": (StickerMessage, "sticker"),
    "location": (LocationMessage, "location"),
    "contacts": (ContactsMessage, "contacts"),
    "reaction": (ReactionMessage, "reaction"),
    "unsupported": (UnsupportedMessage, None),
}
_TAG_OF_CLASS: dict[type[BaseModel], str] = {cls: f"<{kind}>" for kind, (cls, _) in _TAGGED.items()}


def _message_tag(value: Any) -> str:
    # Tags are written <type> so that an error location can tell them from JSON keys.
    if isinstance(value, BaseModel):
        return _TAG_OF_CLASS.get(type(value), "<other>")
    if isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str) and kind in _TAGGED:
            key = _TAGGED[kind][1]
            if key is None or key in value:
                return f"<{kind}>"
    return "<other>"


InboundMessage: TypeAlias = Annotated[
    Annotated[TextMessage, Tag("<text>")]
    | Annotated[InteractiveMessage, Tag("<interactive>")]
    | Annotated[ButtonMessage, Tag("<button>")]
    | Annotated[ImageMessage, Tag("<image>")]
    | Annotated[AudioMessage, Tag("<audio>")]
    | Annotated[VideoMessage, Tag("<video>")]
    | Annotated[DocumentMessage, Tag("<document>")]
    | Annotated[StickerMessage, Tag("<sticker>")]
    | Annotated[LocationMessage, Tag("<location>")]
    | Annotated[ContactsMessage, Tag("<contacts>")]
    | Annotated[ReactionMessage, Tag("<reaction>")]
    | Annotated[UnsupportedMessage, Tag("<unsupported>")]
    | Annotated[UnknownMessage, Tag("<other>")],
    Discriminator(_message_tag),
]
"""Any inbound message, told apart by ``type``."""

_MESSAGE = TypeAdapter[InboundMessage](InboundMessage)


def parse_message(data: Mapping[str, Any]) -> InboundMessage:
    """Parse one item of ``value.messages``; raises ``PayloadError`` naming the bad field."""
    return validate(_MESSAGE, data, what="message")


# Builders: what a simulated user sends. Each returns the model in Meta's exact shape;
# ``envelope.build_webhook`` wraps it for sending.


class _Common(TypedDict):
    context: Context | None
    from_: str | None
    from_user_id: str | None
    id: str
    timestamp: str


def _common(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    context: Context | None,
    from_user_id: str | None,
) -> _Common:
    if from_ is None and from_user_id is None:
        raise ValueError("a message needs a sender: from_ (wa_id), from_user_id (BSUID) or both")
    return _Common(
        context=context,
        from_=from_,
        from_user_id=from_user_id,
        id=wamid,
        timestamp=format_timestamp(timestamp),
    )


def text_message(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    body: str,
    *,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> TextMessage:
    """Build a text message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    return TextMessage(**common, text=Text(body=body))


def button_reply(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    reply_id: str,
    title: str,
    *,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> InteractiveMessage:
    """Build a reply-button tap; ``context`` names the message that held the buttons."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    reply = ButtonReply(id=reply_id, title=title)
    return InteractiveMessage(**common, interactive=ButtonReplyInteractive(button_reply=reply))


def list_reply(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    row_id: str,
    title: str,
    *,
    description: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> InteractiveMessage:
    """Build a list-row pick; ``context`` names the message that held the list."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    row = ListReply(id=row_id, title=title, description=description)
    return InteractiveMessage(**common, interactive=ListReplyInteractive(list_reply=row))


def template_button(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    payload: str,
    text: str,
    *,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> ButtonMessage:
    """Build a tap on a template's quick-reply button."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    return ButtonMessage(**common, button=Button(payload=payload, text=text))


def image(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    media_id: str,
    sha256: str,
    *,
    mime_type: str = "image/jpeg",
    caption: str | None = None,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> ImageMessage:
    """Build an image message; ``sha256`` is the base64 digest of the media bytes."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    media = Image(id=media_id, mime_type=mime_type, sha256=sha256, caption=caption, url=url)
    return ImageMessage(**common, image=media)


def audio(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    media_id: str,
    sha256: str,
    *,
    mime_type: str = "audio/ogg; codecs=opus",
    voice: bool | None = None,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> AudioMessage:
    """Build an audio message; ``voice=True`` for a recorded voice note."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    media = Audio(id=media_id, mime_type=mime_type, sha256=sha256, voice=voice, url=url)
    return AudioMessage(**common, audio=media)


def video(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    media_id: str,
    sha256: str,
    *,
    mime_type: str = "video/mp4",
    caption: str | None = None,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> VideoMessage:
    """Build a video message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    media = Video(id=media_id, mime_type=mime_type, sha256=sha256, caption=caption, url=url)
    return VideoMessage(**common, video=media)


def document(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    media_id: str,
    sha256: str,
    *,
    mime_type: str = "application/pdf",
    filename: str | None = None,
    caption: str | None = None,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> DocumentMessage:
    """Build a document message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    media = Document(
        id=media_id,
        mime_type=mime_type,
        sha256=sha256,
        filename=filename,
        caption=caption,
        url=url,
    )
    return DocumentMessage(**common, document=media)


def sticker(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    media_id: str,
    sha256: str,
    *,
    mime_type: str = "image/webp",
    animated: bool | None = False,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> StickerMessage:
    """Build a sticker message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    media = Sticker(id=media_id, mime_type=mime_type, sha256=sha256, animated=animated, url=url)
    return StickerMessage(**common, sticker=media)


def location(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    latitude: float,
    longitude: float,
    *,
    name: str | None = None,
    address: str | None = None,
    url: str | None = None,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> LocationMessage:
    """Build a location message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    place = Location(latitude=latitude, longitude=longitude, name=name, address=address, url=url)
    return LocationMessage(**common, location=place)


def contact_card(
    formatted_name: str,
    phone: str | None = None,
    *,
    wa_id: str | None = None,
    phone_type: str | None = "CELL",
    first_name: str | None = None,
    last_name: str | None = None,
) -> ContactCard:
    """Build a contact card with a name and, optionally, one phone number."""
    phones = None
    if phone is not None or wa_id is not None:
        phones = [ContactPhone(phone=phone, wa_id=wa_id, type=phone_type)]
    name = ContactName(formatted_name=formatted_name, first_name=first_name, last_name=last_name)
    return ContactCard(name=name, phones=phones)


def contacts_message(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    cards: Sequence[ContactCard],
    *,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> ContactsMessage:
    """Build a message sharing one or more contact cards."""
    if not cards:
        raise ValueError("a contacts message needs at least one card")
    common = _common(wamid, from_, timestamp, context, from_user_id)
    return ContactsMessage(**common, contacts=list(cards))


def reaction(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    message_id: str,
    emoji: str | None,
    *,
    from_user_id: str | None = None,
) -> ReactionMessage:
    """Build a reaction to ``message_id``; ``emoji`` ``""`` or ``None`` removes a reaction."""
    common = _common(wamid, from_, timestamp, None, from_user_id)
    return ReactionMessage(**common, reaction=Reaction(message_id=message_id, emoji=emoji))


def unsupported(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    unsupported_type: str | None = None,
    *,
    errors: Sequence[ErrorObject] | None = None,
    from_user_id: str | None = None,
) -> UnsupportedMessage:
    """Build a message Meta can't pass on (a poll...), with its 131051 error by default."""
    common = _common(wamid, from_, timestamp, None, from_user_id)
    if errors is None:
        errors = [error_object(131051)]
    info = None if unsupported_type is None else Unsupported(type=unsupported_type)
    return UnsupportedMessage(**common, errors=list(errors), unsupported=info)
