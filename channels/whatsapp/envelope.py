"""The webhook envelope: building the POST body Meta sends, parsing it, walking its updates.

Shape, in Meta's key order::

    {"object": "whatsapp_business_account",
     "entry": [{"id": WABA_ID,
                "changes": [{"value": {"messaging_product": "whatsapp",
                                       "metadata": {...},
                                       "contacts": [...],
                                       "messages": [...] | "statuses": [...]},
                             "field": "messages"}]}]}

``build_webhook`` makes the one-update body Meta sends by default (and
``webhook_body`` the same from items that are JSON-ready dicts already);
``batch_webhooks`` folds several into one POST (up to 1000 updates) for the
batching fault; ``parse_webhook`` reads any of them back, and ``iter_updates``
yields each message, status or error with the metadata and contact it came
with. Changes of other ``field``s (template status updates...) are kept as
``OtherChange`` and skipped by ``iter_updates``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter

from channels.whatsapp.errors import ErrorObject
from channels.whatsapp.messages import InboundMessage
from channels.whatsapp.payloads import MetaModel, load_json, validate
from channels.whatsapp.statuses import Status

__all__ = [
    "MAX_UPDATES_PER_WEBHOOK",
    "MAX_WEBHOOK_BYTES",
    "Change",
    "Contact",
    "Entry",
    "ErrorUpdate",
    "MessageUpdate",
    "Metadata",
    "OtherChange",
    "Profile",
    "StatusUpdate",
    "Update",
    "Value",
    "WebhookPayload",
    "batch_webhooks",
    "build_value",
    "build_webhook",
    "contact",
    "contact_item",
    "iter_updates",
    "message_item",
    "parse_webhook",
    "profile_contact_item",
    "share_constants",
    "webhook_body",
]

MAX_UPDATES_PER_WEBHOOK = 1000
"""Meta aggregates at most this many updates (across entries, changes, items) in one POST."""

MAX_WEBHOOK_BYTES = 3 * 1024 * 1024
"""Meta's largest webhook body."""


class Metadata(MetaModel):
    """The business number a change concerns; clients filter on ``phone_number_id``."""

    display_phone_number: str
    phone_number_id: str


class Profile(MetaModel):
    """A user's WhatsApp profile: name, and username where the user set one."""

    name: str | None = None
    username: str | None = None


class Contact(MetaModel):
    """A user in ``value.contacts``: profile, wa_id and (since 2026) BSUID ``user_id``."""

    profile: Profile | None = None
    wa_id: str | None = None
    user_id: str | None = None
    parent_user_id: str | None = None
    identity_key_hash: str | None = None


class Value(MetaModel):
    """The ``value`` of a ``messages`` change: messages or statuses, with who and where."""

    messaging_product: str = "whatsapp"
    metadata: Metadata
    contacts: list[Contact] | None = None
    messages: list[InboundMessage] | None = None
    statuses: list[Status] | None = None
    errors: list[ErrorObject] | None = None


class Change(MetaModel):
    """A change of the ``messages`` field, the one that carries messages and statuses."""

    value: Value
    field: Literal["messages"] = "messages"


class OtherChange(MetaModel):
    """A change of another field (``message_template_status_update``...), kept as it came."""

    value: dict[str, Any]
    field: str


def _change_tag(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "<messages>" if isinstance(value, Change) else "<other>"
    if isinstance(value, Mapping) and value.get("field") == "messages":
        return "<messages>"
    return "<other>"


AnyChange: TypeAlias = Annotated[
    Annotated[Change, Tag("<messages>")] | Annotated[OtherChange, Tag("<other>")],
    Discriminator(_change_tag),
]


class Entry(MetaModel):
    """One WhatsApp Business Account's changes; ``id`` is the WABA id."""

    id: str
    changes: list[AnyChange]


class WebhookPayload(MetaModel):
    """A whole webhook POST body."""

    object: Literal["whatsapp_business_account"] = "whatsapp_business_account"
    entry: list[Entry]


_WEBHOOK = TypeAdapter(WebhookPayload)


def contact(
    wa_id: str | None,
    name: str | None = None,
    *,
    user_id: str | None = None,
    username: str | None = None,
) -> Contact:
    """Build an item of ``value.contacts``; statuses carry contacts without a profile."""
    if wa_id is None and user_id is None:
        raise ValueError("a contact needs wa_id, user_id (BSUID) or both")
    profile = None if name is None and username is None else Profile(name=name, username=username)
    return Contact(profile=profile, wa_id=wa_id, user_id=user_id)


def contact_item(wa_id: str | None, user_id: str | None) -> dict[str, Any]:
    """The contact :func:`contact` builds without a profile (a status's), as a dict."""
    if wa_id is None and user_id is None:
        raise ValueError("a contact needs wa_id, user_id (BSUID) or both")
    item: dict[str, Any] = {}
    if wa_id is not None:
        item["wa_id"] = wa_id
    if user_id is not None:
        item["user_id"] = user_id
    return item


def build_value(
    *,
    phone_number_id: str,
    display_phone_number: str,
    messages: Sequence[InboundMessage] = (),
    statuses: Sequence[Status] = (),
    contacts: Sequence[Contact] = (),
    errors: Sequence[ErrorObject] = (),
) -> Value:
    """Build the ``value`` of one change; empty sequences are left out of it."""
    if messages and statuses:
        raise ValueError("Meta sends messages and statuses in separate changes, not one value")
    if not (messages or statuses or errors):
        raise ValueError("a webhook value needs at least one message, status or error")
    return Value(
        metadata=Metadata(
            display_phone_number=display_phone_number, phone_number_id=phone_number_id
        ),
        contacts=list(contacts) or None,
        messages=list(messages) or None,
        statuses=list(statuses) or None,
        errors=list(errors) or None,
    )


def build_webhook(
    *,
    waba_id: str,
    phone_number_id: str,
    display_phone_number: str,
    messages: Sequence[InboundMessage] = (),
    statuses: Sequence[Status] = (),
    contacts: Sequence[Contact] = (),
    errors: Sequence[ErrorObject] = (),
) -> dict[str, Any]:
    """Build a webhook body (one entry, one change), ready for ``signing.serialize``."""
    value = build_value(
        phone_number_id=phone_number_id,
        display_phone_number=display_phone_number,
        messages=messages,
        statuses=statuses,
        contacts=contacts,
        errors=errors,
    )
    return _envelope(waba_id, value.to_dict())


def webhook_body(
    *,
    waba_id: str,
    phone_number_id: str,
    display_phone_number: str,
    statuses: Sequence[dict[str, Any]] = (),
    contacts: Sequence[dict[str, Any]] = (),
    messages: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The body :func:`build_webhook` makes for statuses or messages already dumped as dicts.

    The items are taken as they are (built by ``statuses.status_item``,
    :func:`contact_item` or :func:`message_item`): nothing is validated or copied.
    """
    if messages and statuses:
        raise ValueError("Meta sends messages and statuses in separate changes, not one value")
    if not (statuses or messages):
        raise ValueError("a webhook value needs at least one message, status or error")
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {
            "display_phone_number": display_phone_number,
            "phone_number_id": phone_number_id,
        },
    }
    if contacts:
        value["contacts"] = list(contacts)
    if messages:
        value["messages"] = list(messages)
    else:
        value["statuses"] = list(statuses)
    return _envelope(waba_id, value)


def profile_contact_item(wa_id: str, name: str) -> dict[str, Any]:
    """The contact :func:`contact` builds for a user with a profile name, as a dict."""
    return {"profile": {"name": name}, "wa_id": wa_id}


def message_item(
    wamid: str,
    from_: str,
    timestamp: int,
    body: str,
    *,
    context: tuple[str, str] | None = None,
    reply: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    """A user's message as the message models dump it, built directly as a dict.

    ``body`` is the text, or with ``reply`` (``button_reply`` or ``list_reply``,
    then the id and title) the message is that interactive reply instead.
    ``context`` is the business number and the wamid of the message replied to.
    """
    item: dict[str, Any] = {}
    if context is not None:
        item["context"] = {"from": context[0], "id": context[1]}
    item["from"] = from_
    item["id"] = wamid
    item["timestamp"] = str(timestamp)
    if reply is None:
        item["type"] = "text"
        item["text"] = {"body": body}
    else:
        kind, reply_id, title = reply
        item["type"] = "interactive"
        item["interactive"] = {"type": kind, kind: {"id": reply_id, "title": title}}
    return item


def _envelope(waba_id: str, value: dict[str, Any]) -> dict[str, Any]:
    # The envelope's own fields are fixed: written out directly, as the models would dump them.
    change = {"value": value, "field": "messages"}
    return {"object": "whatsapp_business_account", "entry": [{"id": waba_id, "changes": [change]}]}


def parse_webhook(body: bytes | bytearray | str | Mapping[str, Any]) -> WebhookPayload:
    """Parse a webhook body (raw bytes, text or decoded JSON).

    Raises ``PayloadError`` (a ``ValueError``) naming the JSON path of the
    first problem, e.g. ``entry[0].changes[0].value.metadata: Field required``.
    Unknown fields and message types are kept.
    """
    data = body if isinstance(body, Mapping) else load_json(body)
    return validate(_WEBHOOK, data, what="webhook")


@dataclass(frozen=True, slots=True)
class MessageUpdate:
    """An inbound message, with the business number it reached and the sender's contact."""

    waba_id: str
    metadata: Metadata
    contact: Contact | None
    message: InboundMessage


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """A status of a business message, with the recipient's contact when Meta sent one."""

    waba_id: str
    metadata: Metadata
    contact: Contact | None
    status: Status


@dataclass(frozen=True, slots=True)
class ErrorUpdate:
    """An error in ``value.errors``, reported beside (or instead of) the value's items."""

    waba_id: str
    metadata: Metadata
    error: ErrorObject


Update: TypeAlias = MessageUpdate | StatusUpdate | ErrorUpdate
"""One thing a webhook tells: a message, a status or an error."""


def iter_updates(payload: WebhookPayload) -> Iterator[Update]:
    """Yield every update of ``payload`` in order: entries, changes, then items.

    Each item's contact is the one in its value whose ``wa_id`` or
    ``user_id`` matches the item's sender (or recipient), else ``None``.
    """
    for entry in payload.entry:
        for change in entry.changes:
            if not isinstance(change, Change):
                continue
            value = change.value
            contacts = value.contacts or []
            for message in value.messages or []:
                found = _find_contact(contacts, message.from_, message.from_user_id)
                yield MessageUpdate(entry.id, value.metadata, found, message)
            for item in value.statuses or []:
                found = _find_contact(contacts, item.recipient_id, item.recipient_user_id)
                yield StatusUpdate(entry.id, value.metadata, found, item)
            for error in value.errors or []:
                yield ErrorUpdate(entry.id, value.metadata, error)


def _find_contact(
    contacts: Sequence[Contact], wa_id: str | None, user_id: str | None
) -> Contact | None:
    for candidate in contacts:
        if (wa_id is not None and candidate.wa_id == wa_id) or (
            user_id is not None and candidate.user_id == user_id
        ):
            return candidate
    return None


BatchMode: TypeAlias = Literal["entries", "changes", "items"]


def batch_webhooks(
    payloads: Sequence[Mapping[str, Any] | WebhookPayload], *, how: BatchMode = "items"
) -> dict[str, Any]:
    """Fold several webhook bodies into the one POST Meta might send instead.

    ``how`` says where updates share a level: ``"entries"`` keeps one entry
    per body; ``"changes"`` puts changes of the same WABA in one entry;
    ``"items"`` also merges neighbouring values for the same number and kind
    (messages or statuses), concatenating their items and contacts. The order
    of updates is always kept.
    Raises ``ValueError`` past ``MAX_UPDATES_PER_WEBHOOK`` updates.
    """
    parsed = [p if isinstance(p, WebhookPayload) else parse_webhook(p) for p in payloads]
    if not parsed:
        raise ValueError("nothing to batch")
    total = sum(1 for p in parsed for _ in iter_updates(p))
    if total > MAX_UPDATES_PER_WEBHOOK:
        raise ValueError(
            f"a webhook carries at most {MAX_UPDATES_PER_WEBHOOK} updates, not {total}"
        )
    entries = [entry for p in parsed for entry in p.entry]
    if how != "entries":
        by_waba: dict[str, list[Entry]] = {}
        for entry in entries:
            by_waba.setdefault(entry.id, []).append(entry)
        entries = [
            group[0].model_copy(update={"changes": [c for e in group for c in e.changes]})
            for group in by_waba.values()
        ]
        if how == "items":
            entries = [e.model_copy(update={"changes": _merge_changes(e.changes)}) for e in entries]
    return parsed[0].model_copy(update={"entry": entries}).to_dict()


def _merge_changes(changes: Sequence[Change | OtherChange]) -> list[Change | OtherChange]:
    # Only neighbours merge, so the order of updates is kept; reordering is a separate fault.
    merged: list[Change | OtherChange] = []
    for change in changes:
        last = merged[-1] if merged else None
        if isinstance(change, Change) and isinstance(last, Change) and _same_slot(last, change):
            merged[-1] = last.model_copy(update={"value": _merge_values(last.value, change.value)})
        else:
            merged.append(change)
    return merged


def _same_slot(first: Change, second: Change) -> bool:
    a, b = first.value, second.value
    return (
        a.metadata == b.metadata
        and bool(a.messages) == bool(b.messages)
        and bool(a.statuses) == bool(b.statuses)
    )


def _merge_values(first: Value, second: Value) -> Value:
    contacts = list(first.contacts or [])
    for candidate in second.contacts or []:
        if candidate not in contacts:
            contacts.append(candidate)
    return first.model_copy(
        update={
            "contacts": contacts or None,
            "messages": [*(first.messages or []), *(second.messages or [])] or None,
            "statuses": [*(first.statuses or []), *(second.statuses or [])] or None,
            "errors": [*(first.errors or []), *(second.errors or [])] or None,
        }
    )


def share_constants(payload: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """Let a user's new webhook hold what every one of them holds once: the same objects.

    Its ``metadata`` (the business number, the same in every webhook: the
    trace's envelopes keep it) becomes ``metadata`` when equal to it, keys in
    the same order; the product and the message's type become the shared
    strings. Nothing else sees the payload before this, and nothing changes a
    webhook once built, so the bytes signed are the same. Returns the
    metadata to share from now on (this payload's, if ``metadata`` differs).
    """
    value = payload["entry"][0]["changes"][0]["value"]
    if value.get("messaging_product") == "whatsapp":
        value["messaging_product"] = "whatsapp"
    for item in value.get("messages") or ():
        if isinstance(item.get("type"), str):
            item["type"] = sys.intern(item["type"])
    own = value.get("metadata")
    if not isinstance(own, dict):
        return metadata
    if list(own.items()) == list(metadata.items()):
        value["metadata"] = metadata
        return metadata
    return own
