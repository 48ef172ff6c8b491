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

One module per kind of message, each with its models and builders; the union
and :func:`parse_message` are in :mod:`~channels.whatsapp.messages.inbound`,
and :func:`check_inbound` (what Meta would send, strictly) in
:mod:`~channels.whatsapp.messages.checks`.
"""

from __future__ import annotations

from channels.whatsapp.messages.base import (
    Context,
    MessageBase,
)
from channels.whatsapp.messages.checks import (
    INBOUND_TYPES,
    REPLY_TYPES,
    check_inbound,
    refusal,
)
from channels.whatsapp.messages.contacts import (
    ContactAddress,
    ContactCard,
    ContactEmail,
    ContactName,
    ContactOrg,
    ContactPhone,
    ContactsMessage,
    ContactUrl,
    contact_card,
    contacts_message,
)
from channels.whatsapp.messages.inbound import (
    InboundMessage,
    parse_message,
)
from channels.whatsapp.messages.interactive import (
    Button,
    ButtonMessage,
    ButtonReply,
    ButtonReplyInteractive,
    Interactive,
    InteractiveMessage,
    ListReply,
    ListReplyInteractive,
    UnknownInteractive,
    button_reply,
    list_reply,
    template_button,
)
from channels.whatsapp.messages.locations import (
    Location,
    LocationMessage,
    location,
)
from channels.whatsapp.messages.media import (
    Audio,
    AudioMessage,
    Document,
    DocumentMessage,
    Image,
    ImageMessage,
    Sticker,
    StickerMessage,
    Video,
    VideoMessage,
    audio,
    document,
    image,
    sticker,
    video,
)
from channels.whatsapp.messages.reactions import (
    Reaction,
    ReactionMessage,
    reaction,
)
from channels.whatsapp.messages.text import (
    Text,
    TextMessage,
    text_message,
)
from channels.whatsapp.messages.unreadable import (
    UnknownMessage,
    Unsupported,
    UnsupportedMessage,
    unsupported,
)

__all__ = [
    "INBOUND_TYPES",
    "REPLY_TYPES",
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
    "check_inbound",
    "contact_card",
    "contacts_message",
    "document",
    "image",
    "list_reply",
    "location",
    "parse_message",
    "reaction",
    "refusal",
    "sticker",
    "template_button",
    "text_message",
    "unsupported",
    "video",
]
