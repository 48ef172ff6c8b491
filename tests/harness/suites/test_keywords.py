"""Keyword expressions as pytest -k takes them: words, and, or, not, parentheses."""

from __future__ import annotations

import pytest

from harness.exceptions import ConfigError
from harness.suites.keywords import KeywordExpression

NAMES = ["Redelivered confirm books once", "scenarios/booking/redelivered.yaml", "whatsapp-only"]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("confirm", True),
        ("CONFIRM", True),  # case does not matter
        ("booking/redel", True),  # part of the file's path
        ("whatsapp-only", True),  # a tag
        ("cancel", False),
        ("confirm and not cancel", True),
        ("confirm and cancel", False),
        ("cancel or once", True),
        ("not confirm or once", True),  # not binds tighter than or
        ("not (confirm or cancel)", False),
        ("(cancel or redelivered) and books", True),
        ("not not confirm", True),
    ],
)
def test_an_expression_matches_as_pytest_k_does(expression: str, expected: bool) -> None:
    assert KeywordExpression.parse(expression).matches(NAMES) is expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("", "the expression is empty"),
        ("confirm and", "the expression ends too soon"),
        ("(confirm or cancel", "a '(' is not closed"),
        ("confirm cancel", "unexpected 'cancel'"),
        ("and confirm", "unexpected 'and'"),
        ("confirm )", "unexpected ')'"),
    ],
)
def test_a_malformed_expression_is_one_line_naming_the_problem(
    expression: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        KeywordExpression.parse(expression)
    message = str(caught.value)
    assert message.startswith(f"-k {expression!r}: {problem}")
    assert "\n" not in message
