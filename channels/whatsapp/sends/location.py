"""Location messages: a point on the map, with an optional name and address.

Coordinates are numbers; quoted ones (``"37.5"``, as some of Meta's samples
write them) are taken too when they are plain decimals in range. One pattern
per bound says which strings those are, for the checks and the schema alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import Maybe, SendModel, json_kind

__all__ = ["LATITUDE_TEXT", "LONGITUDE_TEXT", "Coordinate", "LocationContent", "LocationSend"]

LATITUDE_TEXT: Final = r"^-?(?:[0-8]?[0-9](?:\.[0-9]+)?|90(?:\.0+)?)$"
"""A latitude written as a decimal string: -90 to 90."""
LONGITUDE_TEXT: Final = r"^-?(?:(?:1[0-7][0-9]|[0-9]?[0-9])(?:\.[0-9]+)?|180(?:\.0+)?)$"
"""A longitude written as a decimal string: -180 to 180."""


@dataclass(frozen=True, slots=True)
class Coordinate:
    """Annotation: a number from ``-bound`` to ``bound``, or a decimal string matching ``text``."""

    bound: int
    text: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(self._check)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        number = {"type": "number", "minimum": -self.bound, "maximum": self.bound}
        return {"anyOf": [number, {"type": "string", "pattern": self.text}]}

    def _check(self, value: Any) -> float:
        if isinstance(value, str):
            if re.fullmatch(self.text, value) is None:
                self._refuse(f"must be a number between {-self.bound} and {self.bound}")
            return float(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._refuse(f"must be a number, not {json_kind(value)}")
        if not -self.bound <= value <= self.bound:
            self._refuse(f"must be between {-self.bound} and {self.bound}")
        return float(value)

    @staticmethod
    def _refuse(text: str) -> None:
        raise PydanticCustomError("send_invalid", "{problem}", {"problem": text})


class LocationContent(SendModel):
    """``location``: latitude and longitude, and what to call the place."""

    latitude: Annotated[float, Coordinate(90, LATITUDE_TEXT)]
    longitude: Annotated[float, Coordinate(180, LONGITUDE_TEXT)]
    name: Maybe[str] = None
    address: Maybe[str] = None


class LocationSend(MessageSend):
    """A location message."""

    type: Literal["location"]
    location: LocationContent

    def content(self) -> SendSummary:
        """The place's name as the text shown."""
        return {"text": self.location.name}
