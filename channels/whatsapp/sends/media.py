"""Media messages (image, audio, video, document, sticker), and the media objects they carry.

Media is sent by the id of an upload or by an http(s) link, never both. The
id must be one the media store holds (when the :class:`SendContext` says
which). Images, videos and documents may have a caption; only documents a
filename. An interactive message's header media is a :class:`MediaRef` too, but
for a document (:class:`HeaderDocument`), which keeps its filename.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import (
    Matches,
    Maybe,
    NonEmpty,
    Problem,
    Refused,
    SendModel,
    checked_first,
    send_problem,
)
from channels.whatsapp.sends.limits import Limit, context_of

__all__ = [
    "LINK_PATTERN",
    "AudioSend",
    "CaptionedMedia",
    "DocumentMedia",
    "DocumentSend",
    "HeaderDocument",
    "ImageSend",
    "MediaRef",
    "StickerSend",
    "VideoSend",
]

LINK_PATTERN: Final = r"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\[\]\s]+([/?#]|$)"
"""An http or https URL with a host."""

_NO_CAPTION: Final = "only images, videos and documents have a caption"
_NO_FILENAME: Final = "only documents have a filename"

Caption = Annotated[str, Limit("caption")]


class _MediaSource(SendModel):
    """The id or the link of a media object, exactly one of them."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["id"]}, {"required": ["link"]}]}
    )

    id: Maybe[NonEmpty] = None
    link: Maybe[Annotated[str, Matches(LINK_PATTERN, "is not an http or https URL")]] = None

    @field_validator("id")
    @classmethod
    def _check_stored(cls, value: str, info: ValidationInfo) -> str:
        exists = context_of(info).media_exists
        if exists is not None and not exists(value):
            send_problem("send_invalid", f"no media with id {value!r} (or it expired)", value=value)
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _check_one_source(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        found: Problem | None = None
        if isinstance(data, dict) and "id" in data and "link" in data:
            found = ("send_invalid", "give the media id or a link, not both", ())
        elif isinstance(data, dict) and "id" not in data and "link" not in data:
            found = ("send_missing", "required parameter is missing", ("id",))
        return checked_first(found, data, handler)

    def source(self) -> SendSummary:
        """The media id or link, as the summary of a send holds them."""
        if self.id is not None:
            return {"media_id": self.id}
        return {"media_link": self.link} if self.link is not None else {}


class MediaRef(_MediaSource):
    """Audio, a sticker, or an interactive header's media: no caption, no filename."""

    caption: Annotated[None, Refused(_NO_CAPTION)] = None
    filename: Annotated[None, Refused(_NO_FILENAME)] = None


class HeaderDocument(_MediaSource):
    """An interactive header's document: no caption, and the filename the user sees."""

    caption: Annotated[None, Refused(_NO_CAPTION)] = None
    filename: Maybe[Annotated[str, Field(min_length=1), Limit("filename")]] = None


class CaptionedMedia(_MediaSource):
    """An image or a video, with an optional caption."""

    caption: Maybe[Caption] = None
    filename: Annotated[None, Refused(_NO_FILENAME)] = None


class DocumentMedia(_MediaSource):
    """A document, with an optional caption and the filename the user sees."""

    caption: Maybe[Caption] = None
    filename: Maybe[Annotated[str, Field(min_length=1), Limit("filename")]] = None


def _captioned(media: CaptionedMedia | DocumentMedia) -> SendSummary:
    found = media.source()
    if media.caption is not None:
        found["text"] = media.caption
    return found


class ImageSend(MessageSend):
    """An image message."""

    type: Literal["image"]
    image: CaptionedMedia

    def content(self) -> SendSummary:
        """The media, and the caption as the text shown."""
        return _captioned(self.image)


class VideoSend(MessageSend):
    """A video message."""

    type: Literal["video"]
    video: CaptionedMedia

    def content(self) -> SendSummary:
        """The media, and the caption as the text shown."""
        return _captioned(self.video)


class DocumentSend(MessageSend):
    """A document message."""

    type: Literal["document"]
    document: DocumentMedia

    def content(self) -> SendSummary:
        """The media, and the caption as the text shown."""
        return _captioned(self.document)


class AudioSend(MessageSend):
    """An audio message."""

    type: Literal["audio"]
    audio: MediaRef

    def content(self) -> SendSummary:
        """The media."""
        return self.audio.source()


class StickerSend(MessageSend):
    """A sticker message."""

    type: Literal["sticker"]
    sticker: MediaRef

    def content(self) -> SendSummary:
        """The media."""
        return self.sticker.source()
