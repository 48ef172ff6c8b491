"""Media shared by the processes of one Meta (``harness serve --redis``).

A file a user sends or a bot uploads through one process can be sent,
described and downloaded through any other: each file goes to Redis (for
as long as Meta keeps it, counted in real time, which virtual time only
outruns) and each download URL too (for its 5 minutes). Another process
reads a file from Redis the first time it is asked for it; its bytes never
travel on the channel the processes tell each other their changes on.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from channels.whatsapp.media import INBOUND_MEDIA_LIFETIME, MediaStore, StoredMedia, _Link
from harness.clock import Clock

__all__ = ["SharedMediaStore", "media_record"]


class _Publishes(Protocol):
    """Where the files go and come from: :class:`~channels.whatsapp.shared.SharedMeta`."""

    def media_added(self, record: Mapping[str, Any], lifetime: timedelta) -> None: ...

    def media_deleted(self, media_id: str) -> None: ...

    def link_issued(self, token: str, media_id: str, lifetime: timedelta) -> None: ...

    async def read_media(self, media_id: str) -> bytes | None: ...

    async def read_link(self, token: str) -> bytes | None: ...

    async def media_kept(self, media_id: str) -> bool: ...

    async def flush(self) -> None: ...


def media_record(media: StoredMedia) -> dict[str, Any]:
    """A file as it is kept in Redis: its details, and its bytes in base64."""
    return {
        "id": media.id,
        "data": base64.b64encode(media.data).decode("ascii"),
        "mime_type": media.mime_type,
        "created": media.created.isoformat(),
        "expires": media.expires.isoformat(),
        "filename": media.filename,
        "phone_number_id": media.phone_number_id,
    }


def _stored(record: Mapping[str, Any]) -> StoredMedia:
    return StoredMedia(
        id=record["id"],
        data=base64.b64decode(record["data"]),
        mime_type=record["mime_type"],
        created=datetime.fromisoformat(record["created"]),
        expires=datetime.fromisoformat(record["expires"]),
        filename=record["filename"],
        phone_number_id=record["phone_number_id"],
    )


class SharedMediaStore(MediaStore):
    """A :class:`MediaStore` whose files and download URLs every process of one Meta can use."""

    def __init__(
        self,
        shared: _Publishes,
        clock: Clock,
        public_url: str = "http://graph.local",
        *,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(clock, public_url, rng=rng)
        self._shared = shared

    def add(
        self,
        data: bytes,
        mime_type: str,
        *,
        filename: str | None = None,
        lifetime: timedelta = INBOUND_MEDIA_LIFETIME,
        phone_number_id: str | None = None,
    ) -> str:
        """Store the file here and in Redis; see :meth:`MediaStore.add`."""
        media_id = super().add(
            data,
            mime_type,
            filename=filename,
            lifetime=lifetime,
            phone_number_id=phone_number_id,
        )
        self._shared.media_added(media_record(self._media[media_id]), lifetime)
        return media_id

    def delete(self, media_id: str) -> bool:
        """Delete the file here and in Redis (another process forgets it when told)."""
        self._shared.media_deleted(media_id)
        return super().delete(media_id)

    def issue_url(self, media_id: str) -> str:
        """A download URL that works on every process; see :meth:`MediaStore.issue_url`."""
        url = super().issue_url(media_id)
        token = url.rsplit("/", 1)[1]
        self._shared.link_issued(token, media_id, self.url_lifetime)
        return url

    async def load(self, media_id: str) -> None:
        """Read the file from Redis if another process stored it and this one hasn't it yet.

        A file held here is checked against Redis too: once another process
        has answered its deletion, it is gone here as well.
        """
        if not media_id:
            return
        if media_id in self._media:
            await self.published()  # what this process did to it counts first
            if not await self._shared.media_kept(media_id):
                self.forget_here(media_id)
            return
        raw = await self._shared.read_media(media_id)
        if raw is not None:
            self._media[media_id] = _stored(json.loads(raw))

    async def load_link(self, token: str) -> None:
        """Read a download URL another process issued, and its file, if this one hasn't them."""
        if not token:
            return
        link = self._links.get(token)
        if link is None:
            raw = await self._shared.read_link(token)
            if raw is None:
                return
            issued = json.loads(raw)
            link = _Link(issued["media_id"], datetime.fromisoformat(issued["expires"]))
            self._links[token] = link
        await self.load(link.media_id)

    async def published(self) -> None:
        """Return once the files, deletions and download URLs made here are in Redis."""
        await self._shared.flush()

    def forget_here(self, media_id: str) -> None:
        """Another process deleted the file: drop this process's copy."""
        self._media.pop(media_id, None)
