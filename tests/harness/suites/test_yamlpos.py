"""YAML with positions: YAML 1.2 scalars, refused duplicates, lines of every value, output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.exceptions import ScenarioError
from harness.suites.yamlpos import (
    LocatedError,
    YamlDocument,
    describe,
    dump_yaml,
    field_name,
    read_text,
    read_yaml,
    scenario_error,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("No", "No"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("9:00", "9:00"),
        ("1:30:00", "1:30:00"),
        ("2026-01-01", "2026-01-01"),
        ("1_000", "1_000"),
        ("=", "="),
        ("0b101", "0b101"),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("null", None),
        ("~", None),
        ("", None),
        ("010", 10),
        ("-7", -7),
        ("+5", 5),
        ("0o17", 15),
        ("0x1F", 31),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("-.5", -0.5),
        (".inf", float("inf")),
        ("-.Inf", float("-inf")),
        ("'true'", "true"),
        ('"010"', "010"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    read = read_yaml(f"k: {text}\n").data
    assert read == {"k": value}
    assert isinstance(read, dict)
    assert type(read["k"]) is type(value)


def test_nan_is_a_float() -> None:
    data = read_yaml("k: .nan\n").data
    assert isinstance(data, dict)
    assert data["k"] != data["k"]


def test_every_value_has_a_line() -> None:
    text = "name: x\nsteps:\n  - say: hi\n    gap: 2s\n  -\n    tap: ok\nlist: [a,\n  b]\n"
    document = read_yaml(text, path="f.yaml")
    assert document.path == Path("f.yaml")
    assert dict(document.lines) == {
        (): 1,
        ("name",): 1,
        ("steps",): 2,
        ("steps", 0): 3,
        ("steps", 0, "say"): 3,
        ("steps", 0, "gap"): 4,
        ("steps", 1): 6,
        ("steps", 1, "tap"): 6,
        ("list",): 7,
        ("list", 0): 7,
        ("list", 1): 8,
    }
    assert document.line_of(("steps", 0, "say", 0)) == 3  # the nearest written ancestor
    assert document.line_of(("nowhere",)) == 1
    assert read_yaml("").data is None


def test_duplicate_keys_are_refused_even_when_nested() -> None:
    with pytest.raises(ScenarioError) as caught:
        read_yaml("a:\n  b: 1\n  c: 2\n  b: 3\n", path="f.yaml")
    assert str(caught.value) == "f.yaml:4: a.b: duplicate key 'b' (first at line 2)"
    assert (caught.value.line, caught.value.field) == (4, "a.b")


def test_merge_keys_work_and_explicit_keys_win() -> None:
    text = "base: &b {x: 1, y: 2}\nboth: [&c {z: 3}]\nm:\n  <<: [*b, *c]\n  y: 9\n"
    data = read_yaml(text).data
    assert isinstance(data, dict)
    assert data["m"] == {"x": 1, "y": 9, "z": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a: [1\n",
            "f.yaml:2: invalid YAML: expected ',' or ']', but got '<stream end>' "
            "(while parsing a flow sequence)",
        ),
        (
            "a: 'x\n",
            "f.yaml:2: invalid YAML: found unexpected end of stream (while scanning a "
            "quoted scalar)",
        ),
        (
            "a:\n  - x\n - y\n",
            "f.yaml:3: invalid YAML: expected <block end>, but found "
            "'<block sequence start>' (while parsing a block mapping)",
        ),
        ("a: !!bool maybe\n", "f.yaml:1: a: invalid YAML: 'maybe' is not a valid !!bool"),
        ("a: !!timestamp x\n", "f.yaml:1: a: invalid YAML: 'x' is not a valid !!timestamp"),
        (
            "<<: 5\n",
            "f.yaml:1: invalid YAML: expected a mapping or list of mappings for "
            "merging, but found scalar (while constructing a mapping)",
        ),
        ("? [a]\n: b\n", "f.yaml:1: a key must be a string, got a collection (quote it)"),
        ("a:\n  true: 1\n", "f.yaml:2: a: a key must be a string, got a boolean (quote it)"),
        ("\x00", "f.yaml:1: invalid YAML: character U+0000 is not allowed in YAML"),
    ],
)
def test_bad_yaml_is_one_line_with_the_line(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        read_yaml(text, path="f.yaml")
    assert str(caught.value) == message


def test_field_names_read_like_paths() -> None:
    assert field_name(()) == ""
    assert field_name(("steps", 3, "expect", "reply_contains")) == "steps[3].expect.reply_contains"
    assert field_name(("agent", "my key")) == "agent['my key']"
    assert field_name((0, "a-b")) == "[0].a-b"


def test_errors_are_single_lines() -> None:
    error = scenario_error("two\nlines  here", path="a.yaml", line=3, field="f")
    assert str(error) == "a.yaml:3: f: two lines here"
    assert str(scenario_error("no place", path=None)) == "<scenario>: no place"


def test_describe_names_yaml_kinds() -> None:
    kinds = [describe(v) for v in (None, True, 1, 1.5, "s", b"b", [], (), {}, object())]
    assert kinds == [
        "null",
        "a boolean",
        "an integer",
        "a number",
        "a string",
        "binary data",
        "a list",
        "a list",
        "a mapping",
        "an object",
    ]


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int
    label: str = ""


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[_Inner]


def _first_error(text: str, data: object | None = None) -> str:
    document = read_yaml(text, path="f.yaml")
    with pytest.raises(ValidationError) as caught:
        _Outer.model_validate(document.data if data is None else data)
    return str(document.validation_error(caught.value, fields=lambda at: ("count", "label")))


def test_validation_errors_map_to_lines_and_suggest_fields() -> None:
    text = "items:\n  - count: 1\n  - count: x\n    lable: y\n"
    assert _first_error(text) == "f.yaml:3: items[1].count: expected an integer, got a string"
    assert _first_error("items:\n  - count: 1\n    lable: y\n") == (
        "f.yaml:3: items[0].lable: unknown field (did you mean 'label'?)"
    )
    assert _first_error("items:\n  - label: y\n") == (
        "f.yaml:2: items[0]: missing required field 'count'"
    )


def test_locate_steps_over_shorthands() -> None:
    document = YamlDocument(
        {"say": "hi", "tools": {"name": "x", "args": 5}, "rules": [{"r": 1}], "one": "n"},
        {("say",): 1, ("tools",): 2, ("tools", "args"): 3, ("rules",): 4, ("rules", 0): 5},
    )
    assert document.locate(("say", 0)) == ("say",)  # a string standing for a list of one
    assert document.locate(("tools", 0, "args")) == ("tools", "args")  # a mapping for a list
    assert document.locate(("rules", 0, "params")) == ("rules", 0, "r")  # {rule: params}
    assert document.locate(("one", "name")) == ("one",)  # a name standing for {name: ...}
    assert document.locate(("say", "Tag", 0), skip={"Tag"}) == ("say",)
    assert document.locate(("missing", "deeper")) == ("missing",)


def test_located_errors_point_below_the_value() -> None:
    class Model(BaseModel):
        message: dict[str, object]

        def model_post_init(self, context: object) -> None:
            if "id" in self.message:
                raise LocatedError("set by the channel", ("message", "id"))

    document = read_yaml("message:\n  type: text\n  id: x\n", path="f.yaml")
    with pytest.raises(ValidationError) as caught:
        Model.model_validate(document.data)
    assert str(document.validation_error(caught.value)) == (
        "f.yaml:3: message.id: set by the channel"
    )


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.sampled_from(["yes", "9:00", "0o17", "010", "=", "~", "", "1_0", "2026-01-01", "<<"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_values)
def test_what_dump_yaml_writes_reads_back_unchanged(value: object) -> None:
    assert read_yaml(dump_yaml({"v": value})).data == {"v": value}


@pytest.mark.parametrize("text", ["9:00", "yes", "0o17", "2026-01-01", "=", "1_000"])
def test_dump_yaml_quotes_what_yaml_1_1_or_1_2_would_not_read_as_text(text: str) -> None:
    assert dump_yaml({"k": text}) == f"k: '{text}'\n"


def test_dump_yaml_keeps_order_and_puts_short_leaves_on_one_line() -> None:
    data = {
        "z": 1,
        "tags": ["a", "b"],
        "steps": [{"say": "hi", "args": {"slot": "09:00"}}, {"say": "two\nlines"}],
    }
    assert dump_yaml(data) == (
        "z: 1\n"
        "tags: [a, b]\n"
        "steps:\n"
        "- say: hi\n"
        "  args: {slot: '09:00'}\n"
        "- say: |-\n"
        "    two\n"
        "    lines\n"
    )


# -- what is refused before it costs anything ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("steps:\n  - say: " + "[" * 500 + "]" * 500 + "\n", 2),
        ("a: " + "{b: " * 65 + "1" + "}" * 65 + "\n", 1),
        ("steps:\n" + "".join("  " * depth + "- \n" for depth in range(1, 600)), 65),
    ],
    ids=["flow lists", "flow mappings", "block lists"],
)
def test_nesting_past_64_levels_is_one_line_naming_where(text: str, line: int) -> None:
    with pytest.raises(ScenarioError) as caught:
        read_yaml(text, path="deep.yaml")
    assert str(caught.value) == f"deep.yaml:{line}: the YAML nests more than 64 levels deep"


def test_64_levels_are_read() -> None:
    assert read_yaml("[" * 63 + "1" + "]" * 63).data is not None


def test_a_file_over_1_mb_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"steps:\n" + b"  - say: hello there my friend\n" * 400_000)  # 12.4 MB
    with pytest.raises(ScenarioError) as caught:
        read_text(big)
    assert str(caught.value) == (
        f"{big}: the file is over 1 MB (1000000 bytes), the most a scenario file may hold:"
        " split it into several"
    )
    fits = tmp_path / "fits.yaml"
    fits.write_bytes(b"\xef\xbb\xbf" + b"#" * (1_000_000 - 3))
    assert read_text(fits) == "#" * (1_000_000 - 3)


def test_a_file_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"steps:\n  - say: caf\xe9\n")
    with pytest.raises(ScenarioError, match=r"latin1.yaml:2: not UTF-8 text \(byte 20\)$"):
        read_text(path)
