"""Taps: on a reply button or a list row (``interactive``), or on a template's quick-reply button.

An ``interactive`` object of a kind not modelled here (``nfm_reply`` from
Flows...) parses as :class:`UnknownInteractive`, so it never breaks a parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, Discriminator, Tag

from channels.whatsapp.messages.base import Context, MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = [
    "Button",
    "ButtonMessage",
    "ButtonReply",
    "ButtonReplyInteractive",
    "Interactive",
    "InteractiveMessage",
    "ListReply",
    "ListReplyInteractive",
    "UnknownInteractive",
    "button_reply",
    "list_reply",
    "template_button",
]


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
