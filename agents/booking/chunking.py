"""Splitting long replies into WhatsApp-sized messages.

Meta refuses a text body over 4096 characters (code points). A long reply
(a full slot list, the house policies) is split on word boundaries, at a
paragraph or line break when one falls in the second half of the window, so
each piece reads well on its own. A single word longer than the limit (a
pasted URL, say) is split hard, since there is no boundary to use.
"""

from __future__ import annotations

from typing import Final

from harness.exceptions import ConfigError

__all__ = ["TEXT_LIMIT", "split_message"]

#: Meta's limit on a text message body, in characters.
TEXT_LIMIT: Final = 4096


def split_message(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """``text`` as pieces of at most ``limit`` characters, cut between words.

    Whitespace at a cut is dropped (the message boundary replaces it);
    whitespace inside a piece is kept as written. Blank text gives no pieces.
    """
    if limit < 1:
        raise ConfigError(f"a message limit must be at least 1 character, not {limit}")
    rest = text.strip()
    pieces: list[str] = []
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        if cut == 0:  # one word longer than the limit: no boundary to cut at
            pieces.append(rest[:limit])
            rest = rest[limit:].lstrip()
            continue
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def _cut_point(text: str, limit: int) -> int:
    """Where to cut ``text``: the index of a whitespace character at most ``limit``, or 0.

    A paragraph break, then a line break, is preferred when it lies in the
    second half of the window; otherwise the last whitespace wins. ``text``
    starts with a non-space, so a cut at index 0 would leave an empty piece.
    """
    window = text[: limit + 1]
    for mark in ("\n\n", "\n"):
        at = window.rfind(mark)
        if at > limit // 2:
            return at
    for at in range(len(window) - 1, 0, -1):
        if window[at].isspace():
            return at
    return 0
