"""The simulator's media: what bots upload, what users send, and the short-lived download URLs.

Meta's media flow, reproduced on the simulator's clock: a bot uploads a file
(``POST /{version}/{phone_number_id}/media``) and gets a numeric id; asking
for an id (``GET /{version}/{media_id}``) returns metadata with a download
URL that needs the access token and works for 5 minutes; uploaded media
lives 30 days, media a user sent (created with :meth:`MediaStore.add`) 7.
The Graph routes live in :mod:`channels.whatsapp.graph`; this module holds
the store and Meta's type and size rules.

Sizes follow the facts document (section 8), in binary units: jpeg and png
5 MiB, audio and video 16 MiB, documents 100 MiB, webp stickers 100 KiB
static or 500 KiB animated. An oversized file answers 131053 (media upload
error); a MIME type Meta does not take answers 100, like any bad parameter.
``sha256`` in the metadata is lowercase hex, as Meta's media endpoint shows
it; webhooks carry the same digest in base64 (:attr:`StoredMedia.sha256_base64`).
The endpoint writes ``file_size`` as a string of digits, as Meta does.
"""

from __future__ import annotations

import base64
import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from channels.whatsapp.errors import InvalidParameter, MediaUploadError
from channels.whatsapp.ids import new_media_id
from harness.clock import Clock

__all__ = [
    "INBOUND_MEDIA_LIFETIME",
    "MEDIA_KINDS",
    "UPLOAD_LIFETIME",
    "URL_LIFETIME",
    "MediaStore",
    "StoredMedia",
    "document_filename",
    "is_animated_webp",
    "largest_size",
    "media_id_in",
    "media_kind",
    "size_limit",
]

KIB: Final = 1024
MIB: Final = 1024 * KIB

URL_LIFETIME: Final = timedelta(minutes=5)
"""How long a download URL from the media endpoint works."""
UPLOAD_LIFETIME: Final = timedelta(days=30)
"""How long media a bot uploaded can be sent and fetched."""
INBOUND_MEDIA_LIFETIME: Final = timedelta(days=7)
"""How long the id of media a user sent (in a webhook) can be fetched."""

MEDIA_KINDS: Final = {
    "audio": frozenset({"audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"}),
    "document": frozenset(
        {
            "text/plain",
            "application/pdf",
            "application/msword",
            "application/vnd.ms-excel",
            "application/vnd.ms-powerpoint",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        }
    ),
    "image": frozenset({"image/jpeg", "image/png"}),
    "sticker": frozenset({"image/webp"}),
    "video": frozenset({"video/3gpp", "video/mp4"}),
}
"""The MIME types Meta accepts for each kind of media (parameters such as ``codecs`` aside)."""

# The file name a document gets when the scenario names none, by MIME type.
_DOCUMENT_EXTENSIONS = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "application/msword": ".doc",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}


def document_filename(mime_type: str) -> str:
    """The file name of a document a user sends without one: ``document`` and its extension.

    Meta's webhooks always give a document a ``filename``.
    """
    base = mime_type.split(";", 1)[0].strip().lower()
    return "document" + _DOCUMENT_EXTENSIONS.get(base, "")


_LIMITS: Final = {"audio": 16 * MIB, "document": 100 * MIB, "image": 5 * MIB, "video": 16 * MIB}
_STICKER_STATIC: Final = 100 * KIB
_STICKER_ANIMATED: Final = 500 * KIB


def media_kind(mime_type: str) -> str | None:
    """The kind of media (``image``, ``audio``...) a MIME type uploads as, or ``None``."""
    base = mime_type.split(";", 1)[0].strip().lower()
    for kind, types in MEDIA_KINDS.items():
        if base in types:
            return kind
    return None


def media_id_in(message: object) -> str:
    """The media id a message names (``{"type": "image", "image": {"id": ...}}``), or ``""``."""
    if not isinstance(message, Mapping):
        return ""
    kind = message.get("type")
    media = message.get(kind) if isinstance(kind, str) else None
    found = media.get("id") if isinstance(media, Mapping) else None
    return found if isinstance(found, str) else ""


def is_animated_webp(data: bytes) -> bool:
    """Tell whether ``data`` is an animated WebP (an extended header with the animation flag)."""
    return (
        data[:4] == b"RIFF"
        and data[8:16] == b"WEBPVP8X"
        and len(data) > 20
        and bool(data[20] & 0x02)
    )


def largest_size(kind: str) -> int:
    """The largest file Meta takes for ``kind`` whatever its content (stickers: animated)."""
    return _STICKER_ANIMATED if kind == "sticker" else _LIMITS[kind]


def size_limit(kind: str, data: bytes = b"") -> int:
    """The largest file Meta takes for ``kind``; for stickers it depends on animation."""
    if kind == "sticker":
        return _STICKER_ANIMATED if is_animated_webp(data) else _STICKER_STATIC
    return _LIMITS[kind]


@dataclass(frozen=True, slots=True)
class StoredMedia:
    """One file in the store, with what Meta reports about it."""

    id: str
    data: bytes = field(repr=False)
    mime_type: str
    created: datetime
    expires: datetime
    filename: str | None = None
    phone_number_id: str | None = None
    """The business number it was uploaded on (``None`` for media users sent)."""

    @property
    def file_size(self) -> int:
        """Its size in bytes."""
        return len(self.data)

    @property
    def sha256(self) -> str:
        """Its SHA-256 in lowercase hex, as the media endpoint reports it."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def sha256_base64(self) -> str:
        """Its SHA-256 in base64, as inbound media webhooks carry it."""
        return base64.b64encode(hashlib.sha256(self.data).digest()).decode("ascii")


@dataclass(frozen=True, slots=True)
class _Link:
    media_id: str
    expires: datetime


class MediaStore:
    """Media by id, with lifetimes and download URLs measured on ``clock``.

    Ids and URL tokens come from ``rng`` (seeded with 0 unless given), so a
    replayed run hands out the same ids. Download URLs are
    ``{public_url}/_media/{token}``.
    """

    def __init__(
        self,
        clock: Clock,
        public_url: str = "http://graph.local",
        *,
        rng: random.Random | None = None,
        url_lifetime: timedelta = URL_LIFETIME,
    ) -> None:
        self.clock = clock
        self.public_url = public_url.rstrip("/")
        self.url_lifetime = url_lifetime
        self._rng = random.Random(0) if rng is None else rng
        self._media: dict[str, StoredMedia] = {}
        self._links: dict[str, _Link] = {}

    def add(
        self,
        data: bytes,
        mime_type: str,
        *,
        filename: str | None = None,
        lifetime: timedelta = INBOUND_MEDIA_LIFETIME,
        phone_number_id: str | None = None,
    ) -> str:
        """Store ``data`` without Meta's upload checks (media a user sends) and return its id."""
        media_id = new_media_id(self._rng)
        while media_id in self._media:
            media_id = new_media_id(self._rng)
        now = self.clock.now()
        self._media[media_id] = StoredMedia(
            media_id, bytes(data), mime_type, now, now + lifetime, filename, phone_number_id
        )
        return media_id

    def upload(
        self,
        data: bytes,
        mime_type: str,
        *,
        filename: str | None = None,
        phone_number_id: str | None = None,
    ) -> str:
        """Store a bot's upload after Meta's type and size checks, and return its id.

        Raises ``InvalidParameter`` (100) for a MIME type Meta does not take and
        ``MediaUploadError`` (131053) for a file over its kind's limit or empty.
        """
        kind = media_kind(mime_type)
        if kind is None:
            raise InvalidParameter(
                message=f"(#100) Param type {mime_type!r} is not a supported media type",
                details=f"type: {mime_type!r} is not one of the MIME types Meta accepts",
            )
        if not data:
            raise MediaUploadError(details="file: the file is empty")
        limit = size_limit(kind, data)
        if len(data) > limit:
            raise MediaUploadError(
                details=f"file: {len(data)} bytes is over the {limit}-byte limit for {kind} media"
            )
        return self.add(
            data,
            mime_type,
            filename=filename,
            lifetime=UPLOAD_LIFETIME,
            phone_number_id=phone_number_id,
        )

    def get(self, media_id: str) -> StoredMedia | None:
        """The media with ``media_id``, or ``None`` when unknown, deleted or expired."""
        media = self._media.get(media_id)
        if media is not None and self.clock.now() >= media.expires:
            del self._media[media_id]
            return None
        return media

    async def load(self, media_id: str) -> None:
        """Make sure media another process stored is here too (a store shared through Redis)."""

    async def load_link(self, token: str) -> None:
        """Make sure a download URL another process issued works here too (as :meth:`load`)."""

    async def published(self) -> None:
        """Return once this store's changes hold for every process that shares it.

        An answer that hands out a media id or a download URL waits for it, so
        the id or URL works at once through any process (here: at once).
        """

    def exists(self, media_id: str) -> bool:
        """Tell whether ``media_id`` can be sent or fetched now."""
        return self.get(media_id) is not None

    def delete(self, media_id: str) -> bool:
        """Delete the media; ``False`` when there was none (its URLs stop working too)."""
        return self._media.pop(media_id, None) is not None

    def forget(self, *, keep: int | None = None) -> None:
        """Drop expired media and download links, then the oldest files beyond ``keep``.

        A file dropped answers as one that never existed, as after its lifetime.
        """
        now = self.clock.now()
        for media_id in [i for i, media in self._media.items() if now >= media.expires]:
            del self._media[media_id]
        if keep is not None:
            for media_id in list(self._media)[: max(len(self._media) - keep, 0)]:
                del self._media[media_id]
        for token in [t for t, link in self._links.items() if link.expires <= now]:
            del self._links[token]

    def describe(self, media: StoredMedia) -> dict[str, Any]:
        """The media endpoint's answer for ``media``, with a fresh download URL.

        ``file_size`` is a string of digits, as Meta's media endpoint writes it.
        """
        return {
            "messaging_product": "whatsapp",
            "url": self.issue_url(media.id),
            "mime_type": media.mime_type,
            "sha256": media.sha256,
            "file_size": str(media.file_size),
            "id": media.id,
        }

    def issue_url(self, media_id: str) -> str:
        """A download URL for ``media_id`` that works for :attr:`url_lifetime`."""
        now = self.clock.now()
        for old in [t for t, link in self._links.items() if link.expires <= now]:
            del self._links[old]
        token = f"{self._rng.getrandbits(128):032x}"
        self._links[token] = _Link(media_id, now + self.url_lifetime)
        return f"{self.public_url}/_media/{token}"

    def download(self, token: str) -> StoredMedia | None:
        """The media behind a download URL's token; ``None`` once the URL or media expired."""
        link = self._links.get(token)
        if link is None or self.clock.now() >= link.expires:
            return None
        return self.get(link.media_id)
