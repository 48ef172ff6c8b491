"""Regression names: parsed leniently, refused clearly."""

from __future__ import annotations

import pytest

from agents.booking import Regression, parse_regressions
from harness.exceptions import ConfigError


def test_every_name_the_issue_lists_is_a_regression() -> None:
    names = (
        "book_without_confirm,no_dedupe,reply_per_fragment,ignore_window,no_chunking,"
        "forget_constraint"
    )
    assert parse_regressions(names) == frozenset(Regression)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", frozenset()),
        (None, frozenset()),
        (" NO-DEDUPE , ", {Regression.NO_DEDUPE}),
        ("no_chunking ignore_window", {Regression.NO_CHUNKING, Regression.IGNORE_WINDOW}),
        (["forget_constraint"], {Regression.FORGET_CONSTRAINT}),
    ],
)
def test_names_are_read_leniently(value: str | list[str] | None, expected: set[Regression]) -> None:
    assert parse_regressions(value) == frozenset(expected)


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_regressions("no_dedupe,book_twice")
    message = str(caught.value)
    assert "'book_twice'" in message
    for regression in Regression:
        assert regression.value in message
