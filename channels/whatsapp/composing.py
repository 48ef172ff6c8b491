"""What a simulated user sends, completed and checked the way Meta would pass it on.

A mixin of :class:`~channels.whatsapp.simulator.WhatsAppSimulator`. Every
message a user sends (a scenario's ``send`` step, ``/_harness/inbound``, a
tap) goes through :meth:`UserMessages.compose` before it is delivered. A
malformed message is refused first, whatever else is wrong with it
(:func:`check_message_shape`); then

- a message named by reference in ``reaction.message_id`` or ``context.id``
  (``last_reply``, ``reply 2``: :mod:`harness.references`) gets its id, and
  a reaction without one reacts to the agent's last reply; an id must belong
  to this user's chat, and a reaction can't be reacted to or quoted;
- a quote gets its sender (``context.from``): the business number, or the
  user for one of their own messages;
- a reply button or list row answers the agent's last interactive message to
  the user (a template button, its last template) unless ``context`` names
  one, and must be one of that message's choices;
- a media message gets its ``mime_type`` and ``sha256`` from the file behind
  its id (uploaded through the control API, or made up by a scenario), an
  ogg audio ``voice``, a document its file name, a sticker ``animated``;
- an ``unsupported`` message gets Meta's 131051 error;

then :func:`~channels.whatsapp.messages.check_inbound` holds it to Meta's
shape. Bad input raises a ``PayloadError`` naming the field; a message the
conversation can't support yet (no reply to react to, no buttons to answer)
raises a :class:`~harness.exceptions.StepError`, as a tap on nothing does.
:func:`check_message_shape` makes the same shape check on a message before
any of that is known (a scenario's step, before the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import error_object
from channels.whatsapp.media import MediaStore, is_animated_webp, media_kind
from channels.whatsapp.messages import check_inbound, refusal
from channels.whatsapp.retention import Retention
from channels.whatsapp.simuser import ReceivedMessage, SentMessage, SimUser
from channels.whatsapp.summary import interactive_options
from harness.exceptions import StepError
from harness.references import MessageRef, refer
from harness.trace import Event

__all__ = ["CHANNEL_FIELDS", "UserMessages", "check_message_shape"]

#: Fields of a message the channel sets; a user's message leaves them out.
CHANNEL_FIELDS: Final = ("id", "from", "from_user_id", "timestamp")
_MEDIA: Final = ("audio", "document", "image", "sticker", "video")
_ANSWERS: Final = ("interactive", "button")
# Stand-ins for what the channel fills in, so that a shape can be checked before the run.
_SOME_ID: Final = "wamid.SHAPE"
_SENDER: Final = {"id": _SOME_ID, "from": "0", "timestamp": "0"}


def check_message_shape(message: Mapping[str, Any]) -> None:
    """Check ``message`` against Meta's shape, taking what the channel fills in as filled.

    References, a reaction's missing id, a tap's ``context`` and a media
    file's id, type and digest are left to the channel; everything else must
    be as Meta sends it. Raises ``PayloadError`` naming the field.
    """
    item = _own_fields(message)
    kind = item.get("type")
    reaction = item.get("reaction")
    if kind == "reaction" and isinstance(reaction, Mapping) and reaction.get("message_id") is None:
        item["reaction"] = {**reaction, "message_id": _SOME_ID}
    if kind in _ANSWERS and "context" not in item:
        item["context"] = {"from": "0", "id": _SOME_ID}
    media = item.get(str(kind))
    if kind in _MEDIA and isinstance(media, Mapping):
        stand_in = {"id": "0", "mime_type": "application/octet-stream", "sha256": "AA=="}
        item[str(kind)] = {**stand_in, **media}
    _fill_common(item, business="0")
    check_inbound({**_SENDER, **item})


def _own_fields(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in CHANNEL_FIELDS}


def _fill_common(item: dict[str, Any], *, business: str) -> None:
    """What needs no conversation to fill in: a quote's sender, an unsupported message's error."""
    context = item.get("context")
    if isinstance(context, Mapping) and "id" in context and "from" not in context:
        item["context"] = {"from": business, **context}
    if item.get("type") == "unsupported" and not item.get("errors"):
        item["errors"] = [error_object(131051).to_dict()]


class UserMessages:
    """Completing and checking what a simulated user sends (see the module's docstring)."""

    config: SimulatorConfig
    media: MediaStore
    events: list[Event]
    retention: Retention
    _sent: dict[str, SentMessage]
    _inbound: dict[str, ReceivedMessage]

    def _last_interactive(self, who: SimUser) -> SentMessage | None:
        """The agent's last interactive message to ``who`` (the outbound rules define it)."""
        raise NotImplementedError

    def compose(self, who: SimUser, message: Mapping[str, Any]) -> dict[str, Any]:
        """``message`` as Meta would pass it on from ``who``, without id, sender and timestamp."""
        check_message_shape(message)  # what is malformed is said first, whatever else is wrong
        kind = str(message["type"])
        item = refer(_own_fields(message), lambda field, text: self._message_id(who, field, text))
        if kind in _ANSWERS:
            item["context"] = self._answered(who, kind, item)
        context = item.get("context")
        quoted = context.get("id") if isinstance(context, Mapping) else None
        if isinstance(context, Mapping) and isinstance(quoted, str) and "from" not in context:
            item["context"] = {"from": self._sender_of(who, quoted), **context}
        media = item.get(kind)
        if kind in _MEDIA and isinstance(media, Mapping):
            item[kind] = self._media_details(kind, media)
        _fill_common(item, business=self.config.display_phone_number)
        check_inbound({**_SENDER, **item})
        return item

    # -- references ---------------------------------------------------------------

    def _message_id(self, who: SimUser, field: str, text: str) -> str:
        """The id a reference (or an id) names, if it is a message of ``who``'s chat."""
        if text.startswith("wamid."):
            wamid = text
        else:
            try:
                ref = MessageRef.parse(text, labels=False)
            except ValueError as exc:
                raise refusal(field, str(exc)) from None
            try:
                wamid = self.retention.resolve(ref, self.events, who.key)
            except StepError as exc:
                raise StepError(f"{field}: {exc}") from None
        sent = self._sent.get(wamid)
        received = self._inbound.get(wamid)
        if sent is not None and sent.user is who:
            if sent.send.type == "reaction":
                raise refusal(field, f"{wamid} is a reaction; a reaction can't be answered")
            return wamid
        if received is not None and received.user is who:
            if received.item.get("type") == "reaction":
                raise refusal(field, f"{wamid} is a reaction; a reaction can't be answered")
            return wamid
        raise refusal(field, f"no message {wamid} in the chat with user {who.key}")

    def _sender_of(self, who: SimUser, wamid: str) -> str:
        if wamid in self._sent:
            return self.config.display_phone_number
        return who.wa_id or who.user_id

    # -- taps -----------------------------------------------------------------------

    def _answered(self, who: SimUser, kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
        """The ``context`` of a tap: the message that held the choice, checked against it."""
        context = item.get("context")
        if context is not None and not isinstance(context, Mapping):
            raise refusal("context", "expected an object with from and id")
        given = (context or {}).get("id")
        if isinstance(given, str):
            held = self._sent.get(given)
            if held is None:
                raise refusal("context.id", f"{given} is the user's own; a tap answers the agent")
        else:
            if kind == "interactive":
                held = self._last_interactive(who)
            else:
                held = self._last_template(who)
            if held is None:
                what = "buttons or list" if kind == "interactive" else "template with buttons"
                raise StepError(f"context: the agent has sent user {who.key} no {what} to answer")
        if kind == "interactive":
            self._check_choice(item.get("interactive"), held)
        return {"from": self.config.display_phone_number, "id": held.wamid, **(context or {})}

    def _last_template(self, who: SimUser) -> SentMessage | None:
        for sent in reversed(self._sent.values()):
            if sent.user is who and sent.send.type == "template":
                return sent
        return None

    def _check_choice(self, interactive: object, held: SentMessage) -> None:
        """A button or row tapped must be one the answered message offered, with its title."""
        if not isinstance(interactive, Mapping):
            return  # check_inbound names what is missing
        kind = interactive.get("type")
        chosen = interactive.get(kind) if isinstance(kind, str) else None
        if kind not in ("button_reply", "list_reply") or not isinstance(chosen, Mapping):
            return
        offered = dict(held.send.body.get("interactive") or {})
        wanted = "list" if kind == "list_reply" else "button"
        if held.send.type != "interactive" or offered.get("type") != wanted:
            holds = "buttons" if wanted == "button" else "list"
            raise refusal(f"interactive.{kind}", f"{held.wamid} holds no {holds} to answer")
        options = {option: title for option, title, _ in interactive_options(offered)}
        choice = chosen.get("id")
        if choice not in options:
            listed = ", ".join(f"{i!r} ({t})" for i, t in options.items())
            raise StepError(
                f"interactive.{kind}.id: no choice {choice!r} in the message answered: {listed}"
            )
        if "title" in chosen and chosen["title"] != options[choice]:
            raise refusal(
                f"interactive.{kind}.title",
                f"{chosen['title']!r}, but the choice {choice!r} reads {options[choice]!r}",
            )

    # -- media ---------------------------------------------------------------------

    def _media_details(self, kind: str, media: Mapping[str, Any]) -> dict[str, Any]:
        """The media object with what Meta reports of the file behind its id."""
        media_id = media.get("id")
        if not isinstance(media_id, str):
            raise refusal(
                f"{kind}.id", "required: the id of the file (upload it: POST /_harness/media)"
            )
        stored = self.media.get(media_id)
        if stored is None:
            raise refusal(
                f"{kind}.id",
                f"no media {media_id!r} (upload the file first: POST /_harness/media; "
                "a user's media lasts 7 days)",
            )
        if kind != "document" and media_kind(stored.mime_type) != kind:
            raise refusal(f"{kind}.id", f"media {media_id} is {stored.mime_type}, not {kind}")
        given = media.get("mime_type")
        if given is not None and given != stored.mime_type:
            raise refusal(
                f"{kind}.mime_type", f"{given!r}, but media {media_id} is {stored.mime_type!r}"
            )
        rest = {k: v for k, v in media.items() if k not in ("id", "mime_type", "sha256")}
        details = {
            "mime_type": stored.mime_type,
            "sha256": stored.sha256_base64,
            "id": media_id,
            **rest,
        }
        if kind == "audio":
            details.setdefault("voice", stored.mime_type.startswith("audio/ogg"))
        elif kind == "document" and stored.filename is not None:
            details.setdefault("filename", stored.filename)
        elif kind == "sticker":
            details.setdefault("animated", is_animated_webp(stored.data))
        return details
