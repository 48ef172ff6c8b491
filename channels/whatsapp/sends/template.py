"""Template messages: a template approved for the business, in one language, with parameters.

Parameters are positional (``{"type": "text", "text": ...}``) or named
(with ``parameter_name``). The model checks the shape; whether the template
exists in that language, and takes that many parameters, is the
:class:`~channels.whatsapp.templates.TemplateRegistry`'s to say (132001,
132000 ...), from the components.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, StrictInt, model_validator

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import Maybe, NonEmpty, SendModel, send_problem
from channels.whatsapp.sends.limits import Limit

__all__ = [
    "TemplateComponent",
    "TemplateContent",
    "TemplateLanguage",
    "TemplateParameter",
    "TemplateSend",
]

# JSON Schema's half of the rule in TemplateParameter._check_text.
_TEXT_NEEDS_TEXT: dict[str, Any] = {
    "if": {"properties": {"type": {"const": "text"}}, "required": ["type"]},
    "then": {"required": ["text"]},
}


# Which of the template's buttons a button component fills in: 0, or "0" as Meta writes it.
_ButtonIndex = Annotated[StrictInt | Annotated[str, Field(pattern=r"^[0-9]+$")], Field()]


class TemplateParameter(SendModel):
    """One parameter: its type and value (``text`` for text parameters), optionally named."""

    model_config = ConfigDict(json_schema_extra=_TEXT_NEEDS_TEXT)

    type: NonEmpty
    parameter_name: Maybe[NonEmpty] = None
    text: Maybe[str] = None

    @model_validator(mode="after")
    def _check_text(self) -> Self:
        if self.type == "text" and self.text is None:
            send_problem("send_missing", "required parameter is missing", "text")
        return self


class TemplateComponent(SendModel):
    """A component (header, body, button ...) and the parameters it fills in.

    A ``button`` component names which of the template's buttons it fills in
    by ``index`` (``"0"`` or ``0``), and its kind by ``sub_type`` (``url``,
    ``quick_reply``, ``copy_code`` ...).
    """

    type: NonEmpty
    sub_type: Maybe[NonEmpty] = None
    index: Maybe[_ButtonIndex] = None
    parameters: Maybe[list[TemplateParameter]] = None


class TemplateLanguage(SendModel):
    """The language of the approved template, by code (``en_US``)."""

    code: Annotated[str, Field(min_length=1, max_length=16)]
    policy: Maybe[str] = None


class TemplateContent(SendModel):
    """``template``: which template, in which language, with which parameters."""

    name: Annotated[str, Field(min_length=1), Limit("template_name")]
    language: TemplateLanguage
    components: Maybe[list[TemplateComponent]] = None


class TemplateSend(MessageSend):
    """A template message: the only kind Meta delivers outside the 24-hour window."""

    type: Literal["template"]
    template: TemplateContent

    def content(self) -> SendSummary:
        """The template's name and language."""
        return {
            "template_name": self.template.name,
            "template_language": self.template.language.code,
        }
