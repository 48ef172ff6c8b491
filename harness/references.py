"""Naming a message of the conversation where a user's message needs its id.

A user reacts to a message (``reaction.message_id``) or quotes one
(``context.id``), and the channel makes the ids up as the conversation goes,
so a scenario, or a caller of the simulator's control API, can't write
them down beforehand. It names the message instead:

- ``last_reply``: the agent's latest message to the user;
- ``reply 2``: the agent's second message to the user (counted from 1);
- a label (scenarios only): the message of the step carrying that label.

The agent's messages counted are those the channel accepted, reactions aside:
Meta lets nobody react to or quote a reaction. A reaction written without a
message id reacts to the agent's last reply, which is what a person's thumbs
up under the latest answer means. :func:`refer` fills every reference of a
message in; the scenario runner and the WhatsApp control API both use it, so
a reference means the same thing in a file and in a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from harness.exceptions import StepError
from harness.trace import Event, OutboundSend

__all__ = [
    "LAST_REPLY",
    "MESSAGE_ID_FIELDS",
    "MessageRef",
    "agent_replies",
    "message_ids",
    "refer",
]

#: The agent's latest message to the user.
LAST_REPLY: Final = "last_reply"
#: Where a user's message holds the id of another message: (object, key).
MESSAGE_ID_FIELDS: Final = (("reaction", "message_id"), ("context", "id"))

_REPLY: Final = re.compile(r"reply\s+(-?[0-9]+)")
_LABEL: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_RESERVED: Final = frozenset({LAST_REPLY, "reply"})
_SHAPES: Final = "last_reply, reply N (the agent's N-th message, from 1)"


@dataclass(frozen=True, slots=True)
class MessageRef:
    """A parsed reference: the agent's last message, its ``number``-th, or a ``label``."""

    text: str
    number: int | None = None
    label: str | None = None

    @classmethod
    def parse(cls, text: str, *, labels: bool = True) -> MessageRef:
        """Read ``last_reply``, ``reply N`` or (when ``labels``) a step's label.

        Raises ``ValueError`` saying which shapes a reference takes.
        """
        written = " ".join(text.split())
        if written == LAST_REPLY:
            return cls(written)
        reply = _REPLY.fullmatch(written)
        if reply is not None:
            number = int(reply.group(1))
            if number < 1:
                raise ValueError(f"'{written}': replies are counted from 1")
            return cls(written, number=number)
        if labels and _LABEL.fullmatch(written) and written not in _RESERVED:
            return cls(written, label=written)
        also = " or a step's label" if labels else " or a wamid"
        raise ValueError(f"'{text}' is not a message reference: expected {_SHAPES}{also}")

    @staticmethod
    def check_label(name: str) -> str:
        """``name`` if a step may carry it as its label, else ``ValueError`` saying why."""
        if name in _RESERVED:
            raise ValueError(f"'{name}' names the agent's replies; choose another label")
        if _LABEL.fullmatch(name) is None:
            raise ValueError(
                f"'{name}' is not a label: letters, digits, _ and -, starting with a letter or _"
            )
        return name

    def resolve(
        self,
        events: Sequence[Event],
        user: str,
        labels: Mapping[str, str | None] | None = None,
    ) -> str:
        """The id of the message this names in ``user``'s chat so far.

        Raises :class:`~harness.exceptions.StepError` when the conversation
        holds no such message: the agent has not sent it, or the labelled step
        sent nothing.
        """
        if self.label is not None:
            known = labels or {}
            if self.label not in known:
                raise StepError(f"no step labelled '{self.label}' has been played yet")
            found = known[self.label]
            if found is None:
                raise StepError(f"the step labelled '{self.label}' has no message to name")
            return found
        replies = agent_replies(events, user)
        if self.number is None:
            if not replies:
                raise StepError(f"{LAST_REPLY}: the agent has sent this user no message yet")
            return replies[-1]
        if self.number > len(replies):
            sent = f"only {len(replies)} message{'s' if len(replies) != 1 else ''}"
            raise StepError(f"{self.text}: the agent has sent this user {sent} so far")
        return replies[self.number - 1]


def agent_replies(events: Sequence[Event], user: str) -> list[str]:
    """The ids of the agent's messages to ``user`` that a user can react to or quote, in order."""
    return [
        event.wamid
        for event in events
        if isinstance(event, OutboundSend)
        and event.user == user
        and event.is_message
        and event.ok
        and event.wamid
        and event.type != "reaction"
    ]


def message_ids(message: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    """Each ``(field, value)`` of ``message`` naming another message (``reaction.message_id``)."""
    for obj, key in MESSAGE_ID_FIELDS:
        holder = message.get(obj)
        if isinstance(holder, Mapping) and key in holder:
            yield f"{obj}.{key}", holder[key]


def refer(message: Mapping[str, Any], resolve: Callable[[str, str], str]) -> dict[str, Any]:
    """``message`` with each message reference replaced by the id ``resolve(field, text)`` gives.

    A reaction without a ``message_id`` reacts to :data:`LAST_REPLY`. Values
    that are not strings are left for the channel's checks to refuse.
    """
    out = dict(message)
    if out.get("type") == "reaction":
        reaction = out.get("reaction")
        if isinstance(reaction, Mapping) and reaction.get("message_id") is None:
            rest = {k: v for k, v in reaction.items() if k != "message_id"}
            out["reaction"] = {"message_id": LAST_REPLY, **rest}
    for obj, key in MESSAGE_ID_FIELDS:
        holder = out.get(obj)
        if isinstance(holder, Mapping) and isinstance(holder.get(key), str):
            out[obj] = {**holder, key: resolve(f"{obj}.{key}", holder[key])}
    return out
