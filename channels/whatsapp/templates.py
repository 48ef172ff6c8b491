"""The message templates a business has approved, and what a send must give each of them.

A :class:`TemplateRegistry` answers a template send as Meta does: 132001 for
a template the business lacks in that language (or one not approved), 132015
and 132016 for one paused or disabled, 132000 for a wrong number of
parameters in the header, the body or a button, 132012 for a header parameter
of the wrong kind (text where the template shows an image).

The templates can be given as Meta lists them (``GET
/{WABA-ID}/message_templates``: the response's ``data``, or the whole
response): objects with a ``name``, a ``language``, a ``status`` and
``components``. What a send must give is read from the components:

- ``HEADER``: with ``format: TEXT``, one parameter per placeholder in its
  ``text`` (``{{1}}``, or ``{{name}}`` when the template names them); with
  ``IMAGE``, ``VIDEO``, ``DOCUMENT`` or ``LOCATION``, one parameter of that
  type;
- ``BODY``: one parameter per placeholder in its ``text``;
- ``BUTTONS``: in order, each button's parameters, given by a ``button``
  component with its ``index``: a ``URL`` button whose ``url`` holds a
  placeholder takes one, as do ``COPY_CODE``, ``OTP`` and ``MPM`` buttons;
  ``QUICK_REPLY``, ``FLOW`` and ``CATALOG`` buttons may take one (a payload,
  an action) or none; other buttons take none.

An authentication template, as created, has a ``BODY`` without text: Meta
writes it (``{{1}} is your verification code.``), so it takes the code.
``FOOTER`` takes no parameters; other components (carousels, offers) are
not checked. A send's text, as the trace and the reports show it, is the
template's words with the send's parameters put in (:meth:`TemplateSpec.render`).
:func:`load_templates` reads such a list from a JSON or YAML file, with a
one-line error naming the file, the line and the field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from channels.whatsapp.errors import (
    TemplateDisabled,
    TemplateNotFound,
    TemplateParamFormat,
    TemplateParamMismatch,
    TemplatePaused,
)
from harness.exceptions import ConfigError, HarnessError
from harness.suites.yamlpos import YamlPath, field_name, read_text, read_yaml

if TYPE_CHECKING:
    from channels.whatsapp.sends.template import TemplateComponent

__all__ = [
    "TemplateButton",
    "TemplateRegistry",
    "TemplateSpec",
    "load_templates",
    "read_templates",
    "template_objects",
]

# A placeholder in a component's text: {{1}} or, in a template that names them, {{first_name}}.
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")

#: Parameters a send gives each kind of button: (at least, at most). A URL button takes one
#: only when its URL holds a placeholder (read from the template).
_BUTTON_PARAMS: Final[Mapping[str, tuple[int, int]]] = {
    "quick_reply": (0, 1),
    "url": (0, 0),
    "phone_number": (0, 0),
    "voice_call": (0, 0),
    "copy_code": (1, 1),
    "otp": (1, 1),
    "mpm": (1, 1),
    "flow": (0, 1),
    "catalog": (0, 1),
}

_MEDIA_HEADERS: Final = frozenset({"image", "video", "document", "location"})


@dataclass(frozen=True, slots=True)
class TemplateButton:
    """One of a template's buttons: its kind and how many parameters a send gives it.

    ``kind`` is Meta's button type in lower case (``url``, ``quick_reply``,
    ``copy_code``, ``otp`` ...). A send gives it at least ``params`` and at
    most ``most`` parameters (``None``: any number, for a kind not known here).
    """

    kind: str
    params: int = 0
    most: int | None = 0


@dataclass(frozen=True, slots=True)
class TemplateSpec:
    """An approved message template in one language, and the parameters it takes.

    ``header_format`` is ``text``, or the kind of its media header (``image``,
    ``video``, ``document``, ``location``), which takes one parameter of that
    type. ``body_names`` and ``header_names`` are the names of its parameters
    when the template names them (``{{first_name}}``): a send then gives each
    by ``parameter_name``. ``buttons`` are its buttons in order, or ``None``
    when not described (then button parameters are not checked). Only a
    template whose ``status`` is ``APPROVED`` can be sent.
    """

    name: str
    language: str
    body_params: int = 0
    header_params: int = 0
    category: str = "utility"
    header_format: str = "text"
    body_names: tuple[str, ...] = ()
    header_names: tuple[str, ...] = ()
    buttons: tuple[TemplateButton, ...] | None = None
    status: str = "APPROVED"
    #: Its words, placeholders and all (``Hi {{1}}``), where known: a text header, the body
    #: and the footer. What a send shows the user is these with its parameters put in.
    header_text: str = ""
    body_text: str = ""
    footer_text: str = ""
    #: The object it was read from, as Meta lists it (``None`` for one built in code).
    source: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def render(self, components: object) -> str | None:
        """What the user reads of a send of this template: its words, the parameters put in.

        ``components`` is the send's ``template.components`` as JSON; a
        parameter reads as its text, or as the ``fallback_value`` of a currency
        or a date. ``None`` when the template's words are not known.
        """
        if not (self.header_text or self.body_text or self.footer_text):
            return None
        given: dict[str, list[Mapping[str, Any]]] = {}
        for component in components if isinstance(components, list) else ():
            if isinstance(component, Mapping) and isinstance(component.get("type"), str):
                parameters = component.get("parameters")
                listed = parameters if isinstance(parameters, list) else []
                kept = given.setdefault(component["type"].lower(), [])
                kept.extend(p for p in listed if isinstance(p, Mapping))
        lines = (
            _filled(self.header_text, given.get("header", [])),
            _filled(self.body_text, given.get("body", [])),
            self.footer_text,
        )
        return "\n".join(line for line in lines if line)


#: ``hello_world`` as Meta lists it on every new account (what a listing shows of it).
_HELLO_WORLD: Final = {
    "name": "hello_world",
    "language": "en_US",
    "status": "APPROVED",
    "category": "UTILITY",
    "components": [
        {"type": "HEADER", "format": "TEXT", "text": "Hello World"},
        {
            "type": "BODY",
            "text": "Welcome and congratulations!! This message demonstrates your ability to send"
            " a message notification from WhatsApp Business Platform\u2019s Cloud API. Thank you"
            " for taking the time to test with us.",
        },
        {"type": "FOOTER", "text": "WhatsApp Business API Team"},
    ],
}


class TemplateRegistry:
    """The templates a business number has, by name and language code.

    A send naming a template or language it lacks answers 132001; what else
    it answers is in :meth:`check`.
    """

    def __init__(self, templates: Iterable[TemplateSpec] = ()) -> None:
        self._specs: dict[tuple[str, str], TemplateSpec] = {}
        for spec in templates:
            self.add(spec)

    @classmethod
    def default(cls) -> TemplateRegistry:
        """A few templates most bots and samples use: ``hello_world`` and two utilities."""
        return cls(
            [
                TemplateSpec("hello_world", "en_US", source=_HELLO_WORLD),
                TemplateSpec("appointment_reminder", "en_US", body_params=2),
                TemplateSpec("order_update", "en_US", body_params=1),
            ]
        )

    @classmethod
    def given(cls, objects: Iterable[Any] | None) -> TemplateRegistry:
        """The business's templates as Meta lists them, or :meth:`default` when none were given."""
        return cls.default() if objects is None else cls.from_meta(list(objects))

    @classmethod
    def from_meta(cls, objects: object) -> TemplateRegistry:
        """The templates as Meta lists them (see :func:`read_templates`)."""
        return cls(read_templates(objects))

    def add(self, spec: TemplateSpec) -> None:
        """Approve ``spec`` (replacing any template of the same name and language)."""
        self._specs[spec.name, spec.language] = spec

    def get(self, name: str, language: str) -> TemplateSpec | None:
        """The template ``name`` in ``language``, or ``None``."""
        return self._specs.get((name, language))

    def has(self, name: str) -> bool:
        """Tell whether a template called ``name`` exists in any language."""
        return any(known == name for known, _ in self._specs)

    def __iter__(self) -> Iterator[TemplateSpec]:
        return iter(list(self._specs.values()))

    def check(
        self, name: str, language: str, components: Sequence[TemplateComponent] = ()
    ) -> TemplateSpec:
        """Return the template a send names, or raise what Meta would answer.

        132001 for a template not there (or not approved), 132015 paused,
        132016 disabled; 132000 when the header, the body or a button gets
        another number of parameters than it takes (or other names); 132012
        when a media header gets a parameter of another type. ``components``
        are the send's ``template.components``; their types are read in any
        case (``BODY`` is ``body``), as Meta reads them.
        """
        spec = self.get(name, language)
        if spec is None:
            languages = sorted(lang for (n, lang) in self._specs if n == name)
            known = f" (it exists in {', '.join(languages)})" if languages else ""
            raise TemplateNotFound(
                details=f"template.name: template {name!r} does not exist in {language}{known}"
            )
        _check_status(spec)
        given: dict[str, list[Any]] = {}
        buttons: dict[int, int] = {}
        for component in components:
            parameters = component.parameters or []
            kind = component.type.lower()  # Meta takes "BODY" as "body" (pywa writes it so)
            if kind == "button":
                index = _button_index(spec, component.index)
                buttons[index] = buttons.get(index, 0) + len(parameters)
            else:
                given.setdefault(kind, []).extend(parameters)
        _check_part(spec, "header", spec.header_params, spec.header_names, given.get("header", []))
        _check_part(spec, "body", spec.body_params, spec.body_names, given.get("body", []))
        header = given.get("header", [])
        kind_given = header[0].type.lower() if header else spec.header_format
        if spec.header_format != "text" and kind_given != spec.header_format:
            raise TemplateParamFormat(
                details=f"template.components: {spec.name} ({spec.language}) has a"
                f" {spec.header_format} header; the send gave a {header[0].type} parameter"
            )
        if spec.buttons is not None:
            for index, button in enumerate(spec.buttons):
                count = buttons.get(index, 0)
                if count < button.params or (button.most is not None and count > button.most):
                    takes = _takes(button.params, button.most)
                    raise TemplateParamMismatch(
                        details=f"template.components: {spec.name} ({spec.language}) expects"
                        f" {takes} parameter(s) for button {index} ({button.kind}), got {count}"
                    )
        return spec


def _check_status(spec: TemplateSpec) -> None:
    status = spec.status.upper()
    where = f"template.name: {spec.name} ({spec.language})"
    if status == "PAUSED":
        raise TemplatePaused(details=f"{where} is paused")
    if status == "DISABLED":
        raise TemplateDisabled(details=f"{where} is disabled")
    if status != "APPROVED":
        raise TemplateNotFound(details=f"{where} is {status}, not approved")


def _check_part(
    spec: TemplateSpec, part: str, expected: int, names: tuple[str, ...], given: list[Any]
) -> None:
    where = f"template.components: {spec.name} ({spec.language})"
    if len(given) != expected:
        raise TemplateParamMismatch(
            details=f"{where} expects {expected} {part} parameter(s), got {len(given)}"
        )
    if names:
        named = sorted(str(p.parameter_name) for p in given if p.parameter_name is not None)
        if len(named) != len(given) or named != sorted(names):
            raise TemplateParamMismatch(
                details=f"{where} names its {part} parameters {', '.join(names)};"
                f" the send named {', '.join(named) or 'none'}"
            )


def _button_index(spec: TemplateSpec, index: object) -> int:
    where = f"template.components: {spec.name} ({spec.language})"
    if isinstance(index, str) and index.isdigit():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool):
        raise TemplateParamMismatch(details=f"{where}: a button component needs its index")
    if spec.buttons is not None and not 0 <= index < len(spec.buttons):
        raise TemplateParamMismatch(
            details=f"{where} has {len(spec.buttons)} button(s); the send gave parameters for"
            f" button {index}"
        )
    return index


def _shown(parameter: Mapping[str, Any]) -> str:
    """How a parameter reads on the phone: its text, or a currency's or a date's fallback."""
    kind = parameter.get("type")
    if kind == "text":
        return str(parameter.get("text", ""))
    value = parameter.get(kind) if isinstance(kind, str) else None
    if isinstance(value, Mapping):
        return str(value.get("fallback_value", ""))
    return str(value) if isinstance(value, str | int | float) else ""


def _filled(text: str, parameters: list[Mapping[str, Any]]) -> str:
    """``text`` with each placeholder replaced by its parameter (by number, or by name)."""
    named = {str(p["parameter_name"]): p for p in parameters if "parameter_name" in p}

    def put(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.isdigit():
            index = int(key) - 1
            found = parameters[index] if 0 <= index < len(parameters) else None
        else:
            found = named.get(key)
        return match.group(0) if found is None else _shown(found)

    return _PLACEHOLDER.sub(put, text)


def _takes(least: int, most: int | None) -> str:
    if most == least:
        return str(least)
    return f"{least} to {most}" if most is not None else f"at least {least}"


# -- reading Meta's template objects ---------------------------------------------------------

Fail = Callable[[str, YamlPath], Exception]


def _config_error(message: str, at: YamlPath) -> Exception:
    return ConfigError(f"templates: {field_name(at) or '(root)'}: {message}")


def read_templates(objects: object, *, fail: Fail = _config_error) -> tuple[TemplateSpec, ...]:
    """The templates in Meta's own form: a list of template objects, or ``{"data": [...]}``.

    Each object needs a ``name`` and a ``language``; ``status`` defaults to
    ``APPROVED`` and ``category`` to ``UTILITY``; fields Meta adds (``id``,
    ``quality_score`` ...) are ignored. A problem raises ``fail(message,
    path)`` (by default :class:`~harness.exceptions.ConfigError` naming the
    field).
    """
    at: YamlPath = ()
    if isinstance(objects, Mapping) and "data" in objects:
        objects, at = objects["data"], ("data",)
    if not isinstance(objects, list):
        raise fail("expected a list of templates (or Meta's response, with data: [...])", at)
    specs: list[TemplateSpec] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(objects):
        spec = _template(item, (*at, i), fail)
        if (spec.name, spec.language) in seen:
            raise fail(f"{spec.name} in {spec.language} is listed twice", (*at, i, "name"))
        seen.add((spec.name, spec.language))
        specs.append(spec)
    return tuple(specs)


def load_templates(path: Path | str) -> tuple[tuple[TemplateSpec, ...], tuple[Any, ...]]:
    """Read a JSON or YAML file of templates in Meta's form (see :func:`read_templates`).

    Returns the templates and the objects as read (plain data, to pass on;
    not to be changed: a file unchanged since it was last read is not read
    again, as every scenario of a run asks for it). A problem is one
    :class:`~harness.exceptions.ConfigError` line naming the file, the line
    and the field.
    """
    try:
        found = Path(path).stat()
    except OSError:
        found = None
    if found is None:  # read_text says why, in one line naming the file
        return _load(str(path), 0, -1)
    return _load(str(path), found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int, size: int) -> tuple[tuple[TemplateSpec, ...], tuple[Any, ...]]:
    """The file at ``path`` when it had this time and size (see :func:`load_templates`)."""
    try:
        document = read_yaml(read_text(path), path=path)  # JSON is YAML too
    except HarnessError as exc:  # unreadable, or not YAML: one line naming the file
        raise ConfigError(str(exc)) from None

    def fail(message: str, at: YamlPath) -> Exception:
        return ConfigError(str(document.error(message, at)))

    specs = read_templates(document.data, fail=fail)
    data = document.data
    objects = data["data"] if isinstance(data, Mapping) and "data" in data else data
    return specs, tuple(objects) if isinstance(objects, list) else ()


def template_objects(value: object) -> tuple[Any, ...]:
    """Meta's template objects from an option: a JSON or YAML file's path, or the objects.

    Raises a one-line :class:`~harness.exceptions.ConfigError` naming the
    file (if any), the line and the field of the first problem.
    """
    if isinstance(value, str | Path):
        return load_templates(value)[1]
    read_templates(value)
    if isinstance(value, Mapping) and "data" in value:
        value = value["data"]
    return tuple(value) if isinstance(value, list) else ()


def _text(value: object, at: YamlPath, fail: Fail, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise fail("expected a non-empty string", at)
    return value


def _template(item: object, at: YamlPath, fail: Fail) -> TemplateSpec:
    if not isinstance(item, Mapping):
        raise fail("expected a template object (name, language, components)", at)
    name = _text(item.get("name"), (*at, "name"), fail)
    language = _text(item.get("language"), (*at, "language"), fail)
    status = _text(item.get("status", "APPROVED"), (*at, "status"), fail).upper()
    category = _text(item.get("category", "UTILITY"), (*at, "category"), fail).lower()
    components = item.get("components", [])
    if not isinstance(components, list):
        raise fail("expected a list of components", (*at, "components"))
    parts: dict[str, Any] = {}
    kinds: set[str] = set()
    for j, component in enumerate(components):
        where = (*at, "components", j)
        if not isinstance(component, Mapping):
            raise fail("expected a component object (type: HEADER, BODY, FOOTER, BUTTONS)", where)
        kind = _text(component.get("type"), (*where, "type"), fail).lower()
        if kind in kinds and kind in ("header", "body", "footer", "buttons"):
            raise fail(f"the template has a second {kind.upper()}", (*where, "type"))
        kinds.add(kind)
        if kind == "header":
            parts.update(_header(component, where, fail))
        elif kind == "body":
            text = component.get("text")
            count, names = _placeholders(text, (*where, "text"), fail)
            if category == "authentication" and text is None:
                text, count = _code_body(component), 1  # Meta writes the body
            parts.update(body_params=count, body_names=names, body_text=text or "")
        elif kind == "footer":
            text = component.get("text")
            if category == "authentication" and text is None:
                text = _code_footer(component)
            parts["footer_text"] = _text(text, (*where, "text"), fail, required=False)
        elif kind == "buttons":
            parts["buttons"] = _buttons(component.get("buttons"), (*where, "buttons"), fail)
    return TemplateSpec(
        name,
        language,
        category=category,
        status=status,
        buttons=parts.pop("buttons", ()),
        source=item,
        **parts,
    )


def _header(component: Mapping[str, Any], at: YamlPath, fail: Fail) -> dict[str, Any]:
    kind = _text(component.get("format", "TEXT"), (*at, "format"), fail).lower()
    if kind != "text":
        # A media (or location) header: one parameter of that type.
        return {"header_format": kind, "header_params": 1}
    text = component.get("text")
    count, names = _placeholders(text, (*at, "text"), fail)
    return {
        "header_format": "text",
        "header_params": count,
        "header_names": names,
        "header_text": text or "",
    }


def _code_body(component: Mapping[str, Any]) -> str:
    """The body Meta writes for an authentication template: the code, and maybe a warning."""
    warning = " For your security, do not share this code."
    return "{{1}} is your verification code." + (
        warning if component.get("add_security_recommendation") is True else ""
    )


def _code_footer(component: Mapping[str, Any]) -> str | None:
    """The footer Meta writes for an authentication template with an expiry."""
    minutes = component.get("code_expiration_minutes")
    if isinstance(minutes, int) and not isinstance(minutes, bool):
        return f"This code expires in {minutes} minutes."
    return None


def _placeholders(text: object, at: YamlPath, fail: Fail) -> tuple[int, tuple[str, ...]]:
    """How many parameters ``text`` takes, and their names when it names them."""
    found = _PLACEHOLDER.findall(_text(text, at, fail, required=False))
    unique = list(dict.fromkeys(found))
    if all(name.isdigit() for name in unique):
        numbers = sorted(int(name) for name in unique)
        if numbers != list(range(1, len(numbers) + 1)):
            raise fail("placeholders must be numbered {{1}}, {{2}} ... in order, none left out", at)
        return len(numbers), ()
    if any(name.isdigit() for name in unique):
        raise fail("placeholders are all numbered ({{1}}) or all named ({{name}}), not both", at)
    return len(unique), tuple(unique)


def _buttons(buttons: object, at: YamlPath, fail: Fail) -> tuple[TemplateButton, ...]:
    if not isinstance(buttons, list):
        raise fail("expected a list of buttons", at)
    out: list[TemplateButton] = []
    for k, button in enumerate(buttons):
        where = (*at, k)
        if not isinstance(button, Mapping):
            raise fail("expected a button object (type, text ...)", where)
        kind = _text(button.get("type"), (*where, "type"), fail).lower()
        least, most = _BUTTON_PARAMS.get(kind, (0, None))
        if kind == "url" and _PLACEHOLDER.search(_text(button.get("url"), (*where, "url"), fail)):
            least = most = 1
        out.append(TemplateButton(kind, least, most))
    return tuple(out)
