"""Media messages: image, audio or voice note, video, document and sticker, and their builders.

Each carries the media's id and base64 ``sha256``; the bytes themselves are
fetched through the media endpoints (:mod:`channels.whatsapp.media`).
"""

from __future__ import annotations

from typing import Literal

from channels.whatsapp.messages.base import Context, MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = [
    "Audio",
    "AudioMessage",
    "Document",
    "DocumentMessage",
    "Image",
    "ImageMessage",
    "Sticker",
    "StickerMessage",
    "Video",
    "VideoMessage",
    "audio",
    "document",
    "image",
    "sticker",
    "video",
]


class Image(MetaModel):
    """A received image; ``sha256`` is base64, ``url`` is not always present."""

    id: str
    mime_type: str
    sha256: str
    caption: str | None = None
    url: str | None = None


class Audio(MetaModel):
    """A received audio file; ``voice`` marks a voice note."""

    id: str
    mime_type: str
    sha256: str
    voice: bool | None = None
    url: str | None = None


class Video(MetaModel):
    """A received video."""

    id: str
    mime_type: str
    sha256: str
    caption: str | None = None
    url: str | None = None


class Document(MetaModel):
    """A received document."""

    id: str
    mime_type: str
    sha256: str
    filename: str | None = None
    caption: str | None = None
    url: str | None = None


class Sticker(MetaModel):
    """A received sticker."""

    id: str
    mime_type: str
    sha256: str
    animated: bool | None = None
    url: str | None = None


class ImageMessage(MessageBase):
    """An image message."""

    type: Literal["image"] = "image"
    image: Image


class AudioMessage(MessageBase):
    """An audio message or voice note."""

    type: Literal["audio"] = "audio"
    audio: Audio


class VideoMessage(MessageBase):
    """A video message."""

    type: Literal["video"] = "video"
    video: Video


class DocumentMessage(MessageBase):
    """A document message."""

    type: Literal["document"] = "document"
    document: Document


class StickerMessage(MessageBase):
    """A sticker message."""

    type: Literal["sticker"] = "sticker"
    sticker: Sticker


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
