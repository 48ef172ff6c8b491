"""Keyword expressions, as ``pytest -k`` takes them: ``booking and not slow``.

An expression is words joined with ``and``, ``or`` and ``not``, grouped with
parentheses. A word matches when it is part of one of the names it is
checked against, ignoring case (``-k confirm`` picks every scenario with
"confirm" in its name, its file's path or its tags). ``not`` binds tighter
than ``and``, which binds tighter than ``or``. A malformed expression is a
:class:`~harness.exceptions.ConfigError` saying where it broke.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import NoReturn

from harness.exceptions import ConfigError

__all__ = ["KeywordExpression"]

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_OPERATORS = frozenset({"and", "or", "not"})

_Match = Callable[[Collection[str]], bool]


@dataclass(frozen=True)
class KeywordExpression:
    """A parsed ``-k`` expression; call :meth:`matches` with the names of one scenario."""

    text: str
    _match: _Match

    @classmethod
    def parse(cls, text: str, *, option: str = "-k") -> KeywordExpression:
        """Parse ``text``; ``option`` names the flag in errors."""
        tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        if not tokens:
            raise ConfigError(f"{option} {text!r}: the expression is empty")
        parser = _Parser(tokens, text, option)
        match = parser.disjunction()
        if parser.position < len(tokens):
            parser.fail(f"unexpected {tokens[parser.position]!r}")
        return cls(text, match)

    def matches(self, names: Collection[str]) -> bool:
        """True when the expression holds for a scenario known by ``names``."""
        return self._match([name.lower() for name in names])


class _Parser:
    """Recursive descent over the tokens: or > and > not > word or group."""

    def __init__(self, tokens: list[str], text: str, option: str) -> None:
        self.tokens = tokens
        self.text = text
        self.option = option
        self.position = 0

    def fail(self, problem: str) -> NoReturn:
        raise ConfigError(
            f"{self.option} {self.text!r}: {problem} (after {self.position} words; "
            "expected words joined by and, or, not and parentheses)"
        )

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def disjunction(self) -> _Match:
        parts = [self.conjunction()]
        while self.peek() == "or":
            self.position += 1
            parts.append(self.conjunction())
        if len(parts) == 1:
            return parts[0]
        return lambda names: any(part(names) for part in parts)

    def conjunction(self) -> _Match:
        parts = [self.negation()]
        while self.peek() == "and":
            self.position += 1
            parts.append(self.negation())
        if len(parts) == 1:
            return parts[0]
        return lambda names: all(part(names) for part in parts)

    def negation(self) -> _Match:
        if self.peek() == "not":
            self.position += 1
            inner = self.negation()
            return lambda names: not inner(names)
        return self.atom()

    def atom(self) -> _Match:
        token = self.peek()
        if token is None:
            self.fail("the expression ends too soon")
        if token == "(":
            self.position += 1
            inner = self.disjunction()
            if self.peek() != ")":
                self.fail("a '(' is not closed")
            self.position += 1
            return inner
        if token == ")" or token in _OPERATORS:
            self.fail(f"unexpected {token!r}")
        self.position += 1
        word = token.lower()
        return lambda names: any(word in name for name in names)
