"""YAML that remembers where each value was written, and errors that say so.

PyYAML's ``safe_load`` forgets positions, so a problem found after loading
(by pydantic, say) could not name its line. :func:`read_yaml` composes the
node tree and builds plain data from it, plus a table from each path
(``("steps", 3, "expect")``) to the 1-based line it is written on.
:meth:`YamlDocument.validation_error` turns a pydantic ``ValidationError``
into one :class:`~harness.exceptions.ScenarioError` line such as
``happy.yaml:14: steps[3].expect.reply_contains: expected a string, got a list``.

A file is read whole, so it may be at most :data:`MAX_FILE_BYTES` (1 MB; a
scenario is a few kilobytes); values may nest at most :data:`MAX_DEPTH`
levels deep. Past either, the file is refused with one line, before PyYAML
spends minutes on it or recurses until Python gives up.

Files are read with the YAML 1.2 core schema, the one editors validate with:
only ``true``/``false`` (any case) are booleans, and ``yes``, ``on``, ``9:00``
or ``2026-01-01`` stay strings (PyYAML's YAML 1.1 rules would read ``9:00``
as the integer 540). Duplicate keys are refused rather than silently
overwritten; merge keys (``<<: *base``) work. :func:`dump_yaml` writes with
the same rules, so whatever it writes reads back unchanged.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeAlias

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.exceptions import ScenarioError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "LocatedError",
    "YamlDocument",
    "YamlPath",
    "describe",
    "dump_yaml",
    "field_name",
    "read_text",
    "read_yaml",
    "scenario_error",
]

#: Where a value sits in a document: mapping keys and 0-based sequence indexes.
YamlPath: TypeAlias = tuple[str | int, ...]

# Aliases may make a small file expand enormously ("billion laughs"); past this
# many values the file is refused.
_MAX_VALUES: Final = 200_000
MAX_FILE_BYTES: Final = 1_000_000
"""The largest YAML file read (1 MB)."""
MAX_DEPTH: Final = 64
"""How deeply a YAML document's collections may nest."""

_INT: Final = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT: Final = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_CORE_RESOLVERS: Final = (
    # tag, pattern, the characters a match may start with ("" for the empty scalar)
    ("tag:yaml.org,2002:null", re.compile(r"~|null|Null|NULL|"), [*"~nN", ""]),
    ("tag:yaml.org,2002:bool", re.compile(r"true|True|TRUE|false|False|FALSE"), list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"<<"), ["<"]),
)


class _TooDeep(yaml.MarkedYAMLError):
    """Collections nested past :data:`MAX_DEPTH`."""


class _CoreLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema resolution, refusing nesting past :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # Composing recurses once per level: stop before Python's recursion limit does.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                message = f"the YAML nests more than {MAX_DEPTH} levels deep"
                raise _TooDeep(problem=message, problem_mark=self.get_mark())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _CoreDumper(yaml.SafeDumper):
    """SafeDumper that quotes every string YAML 1.1 or 1.2 would read as something else.

    Quoting for both keeps what it writes portable: ``"9:00"`` stays quoted
    although :class:`_CoreLoader` would read it plain as a string.
    """


# Each class gets its own resolver table (PyYAML keeps them per class): the
# loader's holds the YAML 1.2 core rules only, the dumper's adds them to 1.1's.
_CoreLoader.yaml_implicit_resolvers = {}
_CoreDumper.yaml_implicit_resolvers = {
    first: list(resolvers) for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()
}
for _cls in (_CoreLoader, _CoreDumper):
    for _tag, _pattern, _first in _CORE_RESOLVERS:
        _cls.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern.pattern})$"), _first)


def _construct_int(loader: yaml.SafeLoader, node: Node) -> int:
    # YAML 1.2: a leading zero is decimal, octal needs 0o (PyYAML reads 010 as 8).
    assert isinstance(node, ScalarNode)  # the resolver only tags scalars as int
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits.startswith("0o"):
        return sign * int(digits[2:], 8)
    if digits.startswith("0x"):
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Multi-line text reads best as a literal block; PyYAML falls back to
    # quoting when a block can't carry the text exactly.
    style = "|" if "\n" in value else None
    if any(char in value for char in "\x85\u2028\u2029"):
        style = '"'  # PyYAML mangles these line breaks in any other style
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CoreDumper.add_representer(str, _str_representer)


class LocatedError(ValueError):
    """A validation problem below the value being validated.

    Raise it from a pydantic validator with ``loc`` relative to that value
    (``("id",)`` inside a message object); :meth:`YamlDocument.validation_error`
    appends it to pydantic's location, so the error names the exact line.
    """

    def __init__(self, message: str, loc: YamlPath = ()) -> None:
        super().__init__(message)
        self.loc = loc


def field_name(path: YamlPath) -> str:
    """A path as a user reads it: ``steps[3].expect.reply_contains``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[\w-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def scenario_error(
    message: str,
    *,
    path: Path | str | None,
    line: int | None = None,
    field: str | None = None,
) -> ScenarioError:
    """A :class:`ScenarioError` whose text is one line: ``file:line: field: message``."""
    where = "<scenario>" if path is None else str(path)
    if line is not None:
        where += f":{line}"
    text = " ".join(message.split())
    text = f"{where}: {field}: {text}" if field else f"{where}: {text}"
    return ScenarioError(text, path=path, line=line, field=field or None)


_KINDS: Final[tuple[tuple[type, str], ...]] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (bytes, "binary data"),
    (list, "a list"),
    (tuple, "a list"),
    (dict, "a mapping"),
)


def describe(value: object) -> str:
    """What kind of YAML value this is, for messages: ``a list``, ``null``..."""
    if value is None:
        return "null"
    for kind, text in _KINDS:
        if isinstance(value, kind):
            return text
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


_EXPECTED: Final = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}


def _message(error: ErrorDetails, fields: Collection[str]) -> str:
    kind, ctx, value = error["type"], error.get("ctx", {}), error.get("input")
    if kind in _EXPECTED:
        hint = ""
        if kind == "string_type" and isinstance(value, int | float):
            hint = " (quote it to mean text)"
        return f"expected {_EXPECTED[kind]}, got {describe(value)}{hint}"
    if kind == "extra_forbidden":
        name = error["loc"][-1] if error["loc"] else ""
        close = difflib.get_close_matches(str(name), fields, n=1, cutoff=0.6)
        return "unknown field" + (f" (did you mean '{close[0]}'?)" if close else "")
    if kind == "literal_error":
        return f"expected {ctx.get('expected')}, got {value!r}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        count = ctx.get("min_length", 1)
        return f"expected at least {count} item{'' if count == 1 else 's'}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()), "?")
        words = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}
        return f"must be {words.get(kind, '<=')} {bound}, got {value!r}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(error["msg"])


def _consequence(error: ErrorDetails) -> bool:
    # pydantic re-checks a list's length after dropping its invalid items; the
    # items' own errors say what is wrong.
    value = error.get("input")
    min_length = error.get("ctx", {}).get("min_length", 0)
    return (
        error["type"] == "too_short"
        and isinstance(value, list | tuple)
        and len(value) >= min_length
    )


@dataclass(frozen=True)
class YamlDocument:
    """Plain data read from YAML, with the line of every value in it.

    ``lines`` maps a path to the line of its key (for a mapping entry) or of
    the item itself (for a sequence item); the root is ``()``.
    """

    data: object
    lines: Mapping[YamlPath, int] = field(default_factory=dict)
    path: Path | None = None

    def line_of(self, path: YamlPath) -> int | None:
        """The line of ``path``, or of its nearest ancestor written in the file."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None

    def locate(self, loc: YamlPath, *, skip: Collection[str] = ()) -> YamlPath:
        """Map a validation location onto the document's own path.

        Validators reshape shorthands (a string into a one-item list, a
        one-key mapping into ``{name, params}``), so a location may name
        places that are not in the file; the path stops at, or steps over,
        them. Location parts in ``skip`` (union tags) are dropped.
        """
        node: object = self.data
        out: list[str | int] = []
        parts = [part for part in loc if not (isinstance(part, str) and part in skip)]
        for position, part in enumerate(parts):
            if isinstance(node, dict):
                if part in node:
                    node = node[part]
                    out.append(part)
                    continue
                if part == "params" and len(node) == 1:  # {rule: {params}} shorthand
                    key = next(iter(node))
                    node = node[key]
                    out.append(key)
                    continue
                if part == 0:  # a single mapping that stands for a one-item list
                    continue
                out.append(part)  # a missing or unknown key: name it, then stop
                break
            if isinstance(node, list):
                if isinstance(part, int) and 0 <= part < len(node):
                    node = node[part]
                    out.append(part)
                    continue
                break
            # a scalar standing for a list of one, or for {name: scalar}
            if part == 0 or (part == "name" and position == len(parts) - 1):
                continue
            break
        return tuple(out)

    def error(self, message: str, at: YamlPath = ()) -> ScenarioError:
        """A one-line error at ``at`` (a path in this document)."""
        return scenario_error(
            message, path=self.path, line=self.line_of(at), field=field_name(at) or None
        )

    def validation_error(
        self,
        exc: ValidationError,
        *,
        skip: Collection[str] = (),
        fields: Callable[[YamlPath], Collection[str]] = lambda at: (),
    ) -> ScenarioError:
        """The first problem in ``exc`` (by line), as a one-line error.

        ``skip`` lists location parts to drop (the tags of tagged unions);
        ``fields(path)`` lists the fields allowed beside ``path``, to suggest
        one for a typo.
        """
        # (missing?, line, order): a missing field is often a misspelt one, and
        # the misspelling names the better line.
        found: list[tuple[bool, int, int, ScenarioError]] = []
        for order, error in enumerate(exc.errors()):
            if _consequence(error):
                continue
            loc: YamlPath = tuple(error["loc"])
            located = error.get("ctx", {}).get("error")
            if isinstance(located, LocatedError):
                loc += located.loc
            at = self.locate(loc, skip=skip)
            message = _message(error, fields(at))
            if error["type"] == "missing" and at:
                message = f"missing required field '{at[-1]}'"
                at = at[:-1]
            line = self.line_of(at)
            missing = error["type"] == "missing"
            found.append((missing, line or 0, order, self.error(message, at)))
        if not found:  # only consequences: report the first as it is
            return self.error(_message(exc.errors()[0], ()), ())
        return min(found, key=lambda item: item[:3])[3]


class _Builder:
    def __init__(self, loader: _CoreLoader, path: Path | None) -> None:
        self.loader = loader
        self.path = path
        self.lines: dict[YamlPath, int] = {}
        self.count = 0
        self.active: set[int] = set()

    def fail(self, message: str, node: Node, at: YamlPath) -> ScenarioError:
        line = node.start_mark.line + 1
        return scenario_error(message, path=self.path, line=line, field=field_name(at) or None)

    def build(self, node: Node, at: YamlPath) -> object:
        self.count += 1
        if self.count > _MAX_VALUES:
            raise self.fail(f"more than {_MAX_VALUES} values (aliases expand too far)", node, at)
        if id(node) in self.active:
            raise self.fail("an alias refers to the value that contains it", node, at)
        if isinstance(node, ScalarNode):
            return self.scalar(node, at)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                items = []
                for index, item in enumerate(node.value):
                    self.lines[(*at, index)] = item.start_mark.line + 1
                    items.append(self.build(item, (*at, index)))
                return items
            assert isinstance(node, MappingNode)  # the node kinds are closed
            return self.mapping(node, at)
        finally:
            self.active.discard(id(node))

    def scalar(self, node: ScalarNode, at: YamlPath) -> object:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except Exception:  # PyYAML's constructors reject a bad tagged scalar in many ways
            tag = node.tag.rsplit(":", 1)[-1]
            message = f"invalid YAML: {node.value!r} is not a valid !!{tag}"
            raise self.fail(message, node, at) from None

    def key(self, node: Node, at: YamlPath) -> str:
        key = self.build(node, at) if isinstance(node, ScalarNode) else None
        if not isinstance(key, str):
            found = describe(key) if isinstance(node, ScalarNode) else "a collection"
            raise self.fail(f"a key must be a string, got {found} (quote it)", node, at)
        return key

    def mapping(self, node: MappingNode, at: YamlPath) -> dict[str, object]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.key(key_node, at)
            line = key_node.start_mark.line + 1
            if key in seen:
                message = f"duplicate key '{key}' (first at line {seen[key]})"
                raise self.fail(message, key_node, (*at, key))
            seen[key] = line
        try:
            self.loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            raise _syntax_error(exc, self.path) from None
        out: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node, at)
            self.lines[(*at, key)] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, (*at, key))
        return out


def _syntax_error(exc: yaml.YAMLError, path: Path | None, text: str = "") -> ScenarioError:
    if isinstance(exc, yaml.reader.ReaderError):
        problem = f"character U+{exc.character:04X} is not allowed in YAML"
        line_number = text[: exc.position].count("\n") + 1
        return scenario_error(f"invalid YAML: {problem}", path=path, line=line_number)
    if isinstance(exc, _TooDeep):
        line = None if exc.problem_mark is None else exc.problem_mark.line + 1
        return scenario_error(str(exc.problem), path=path, line=line)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not YAML"
        if exc.context and exc.problem and exc.problem.startswith("but "):
            problem = f"{exc.context}, {exc.problem}"  # "expected X, but found Y"
        elif exc.context and exc.problem:
            problem += f" ({exc.context})"
        line = None if mark is None else mark.line + 1
        return scenario_error(f"invalid YAML: {problem}", path=path, line=line)
    return scenario_error(f"invalid YAML: {exc}", path=path)


def read_yaml(text: str, *, path: Path | str | None = None) -> YamlDocument:
    """Read one YAML document with the line of every value in it.

    An empty document gives ``data=None``. Syntax errors, duplicate keys and
    non-string keys raise :class:`~harness.exceptions.ScenarioError` naming
    the line.
    """
    where = None if path is None else Path(path)
    try:
        loader = _CoreLoader(text)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, where, text) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return YamlDocument(None, {(): 1}, where)
        builder = _Builder(loader, where)
        builder.lines[()] = root.start_mark.line + 1
        data = builder.build(root, ())
        return YamlDocument(data, builder.lines, where)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, where, text) from None
    except RecursionError:  # called from deep in a stack already: still one line
        message = "nested too deeply to read"
        raise scenario_error(message, path=where, line=loader.line + 1) from None
    finally:
        loader.dispose()


def read_text(path: Path | str) -> str:
    """A YAML file's text, BOM dropped; one-line ``ScenarioError`` if unreadable or too large.

    Refuses a file over :data:`MAX_FILE_BYTES` without reading more of it,
    and one that is not UTF-8, naming the line of the first bad byte.
    """
    where = Path(path)
    try:
        with where.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise scenario_error(f"can't read the file: {exc.strerror or exc}", path=where) from None
    if len(raw) > MAX_FILE_BYTES:
        message = (
            f"the file is over 1 MB ({MAX_FILE_BYTES} bytes), the most a scenario file may"
            " hold: split it into several"
        )
        raise scenario_error(message, path=where)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte {exc.start + 1})"
        raise scenario_error(message, path=where, line=line) from None


class _FlowList(list[object]):
    pass


class _FlowDict(dict[str, object]):
    pass


def _flow_list(dumper: yaml.SafeDumper, value: _FlowList) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


def _flow_dict(dumper: yaml.SafeDumper, value: _FlowDict) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=True)


_CoreDumper.add_representer(_FlowList, _flow_list)
_CoreDumper.add_representer(_FlowDict, _flow_dict)
_CoreDumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]
_FLOW_WIDTH: Final = 60


def _short(values: Collection[object]) -> bool:
    scalars = all(not isinstance(value, list | tuple | dict) for value in values)
    return scalars and sum(len(str(value)) + 4 for value in values) <= _FLOW_WIDTH


def _styled(value: object, *, in_mapping: bool) -> object:
    # Lists of a few scalars and small mappings of scalars under a key go on
    # one line (tags: [a, b]; args: {slot: "09:00"}); everything else is block.
    if isinstance(value, list | tuple):
        items = [_styled(item, in_mapping=False) for item in value]
        return _FlowList(items) if _short(items) else items
    if isinstance(value, dict):
        pairs = {key: _styled(item, in_mapping=True) for key, item in value.items()}
        flow = in_mapping and _short([*pairs, *pairs.values()])
        return _FlowDict(pairs) if flow else pairs
    return value


def dump_yaml(data: object) -> str:
    """Write plain data as block YAML that :func:`read_yaml` reads back unchanged.

    Keys keep their order; short lists of scalars and short mappings of
    scalars under a key go on one line (``tags: [booking, happy]``); text
    with line breaks is a literal block.
    """
    return yaml.dump(
        _styled(data, in_mapping=False),
        Dumper=_CoreDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
