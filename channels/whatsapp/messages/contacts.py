"""Shared contact cards: names, phones, emails, addresses and organisation, and their builders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from channels.whatsapp.messages.base import Context, MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = [
    "ContactAddress",
    "ContactCard",
    "ContactEmail",
    "ContactName",
    "ContactOrg",
    "ContactPhone",
    "ContactUrl",
    "ContactsMessage",
    "contact_card",
    "contacts_message",
]


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
