"""A shared location, and its builder."""

from __future__ import annotations

from typing import Literal

from channels.whatsapp.messages.base import Context, MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = ["Location", "LocationMessage", "location"]


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
