"""What a simulated user sends: one builder per inbound message type.

Each builder takes the fields a scenario cares about and returns the model
from ``messages`` in Meta's exact shape, e.g.
``text_message(wamid, from_, timestamp, body)``. ``from_`` is the user's
wa_id, or ``None`` for a username-only user known by BSUID alone
(``from_user_id``); ``timestamp`` is anything ``format_timestamp`` takes.
``envelope.build_webhook`` wraps the result for sending.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from channels.whatsapp.errors import ErrorObject, error_object
from channels.whatsapp.messages import (
    Audio,
    AudioMessage,
    Button,
    ButtonMessage,
    ButtonReply,
    ButtonReplyInteractive,
    ContactCard,
    ContactName,
    ContactPhone,
    ContactsMessage,
    Context,
    Document,
    DocumentMessage,
    Image,
    ImageMessage,
    InteractiveMessage,
    ListReply,
    ListReplyInteractive,
    Location,
    LocationMessage,
    Reaction,
    ReactionMessage,
    Sticker,
    StickerMessage,
    Text,
    TextMessage,
    Unsupported,
    UnsupportedMessage,
    Video,
    VideoMessage,
)
from channels.whatsapp.payloads import TimestampLike, format_timestamp

__all__ = [
    "audio",
    "button_reply",
    "contact_card",
    "contacts_message",
    "document",
    "image",
    "list_reply",
    "location",
    "reaction",
    "sticker",
    "template_button",
    "text_message",
    "unsupported",
    "video",
]


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
