"""The diff page: two conversations side by side, turn by turn, as WhatsApp-like chats.

Conversation A fills the left pane and B the right; each pane scrolls on its
own and a few lines of inline script keep them in step (scrolling one
scrolls the other, and a turn's row gets the same height on both sides, so
corresponding turns sit side by side). Each turn is a
``<section class="row" data-status="...">``; a turn that differs also has
the class ``changed`` and lists its differences. A summary at the top links
to every changed turn; ``#changed`` opens the page on the differing turns
only.

Rows are laid out by :func:`diff_rows`, which the terminal view shares, from
the same bubbles, ticks and tool cards the run report draws (its CSS is
inlined too, so both pages look alike). Autoescaping is on: every message
is untrusted text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from harness.files import write_atomic
from harness.replay.diff import ConversationDiff, TurnDiff
from harness.report._chat import _Layout
from harness.report._items import Item, TurnBlock
from harness.report.html import _environment, _read
from harness.trace import Conversation

__all__ = ["DiffRow", "diff_rows", "render_diff_html", "write_diff_html"]

_PAGE = "diff.html.j2"


@dataclass
class DiffRow:
    """One turn of the diff as drawn: its comparison, and each side's chat items.

    ``a`` or ``b`` is None on the side that lacks the turn. ``anchor`` is the
    row's id in pane A (pane B's is ``anchor`` + ``-b``); ``position``
    counts rows from 1, and both panes share it.
    """

    position: int
    anchor: str
    turn: TurnDiff
    a: list[Item] | None
    b: list[Item] | None

    @property
    def changed(self) -> bool:
        """True when the turn differs between the two sides."""
        return not self.turn.same


def _turn_items(conversation: Conversation) -> dict[int, list[Item]]:
    """Each turn's chat items; what happens outside turns joins the nearest turn.

    Items before a turn (a date divider, a webhook that never got through)
    are drawn at the top of that turn; items after the last turn at its end.
    """
    by_turn: dict[int, list[Item]] = {}
    pending: list[Item] = []
    last: int | None = None
    for item in _Layout(conversation, ()).layout({}):
        if isinstance(item, TurnBlock):
            by_turn[item.index] = [*pending, *item.items]
            pending = []
            last = item.index
        else:
            pending.append(item)
    if pending and last is not None:
        by_turn[last].extend(pending)
    return by_turn


def _anchor(turn: TurnDiff, taken: Iterable[str]) -> str:
    used = set(taken)
    anchor = f"turn-{turn.number}"
    while anchor in used:
        anchor += "-x"
    return anchor


def diff_rows(diff: ConversationDiff, a: Conversation, b: Conversation) -> list[DiffRow]:
    """The diff's turns in order, each with the chat items of its turn in A and in B."""
    items_a, items_b = _turn_items(a), _turn_items(b)
    rows: list[DiffRow] = []
    for position, turn in enumerate(diff.turns, start=1):
        rows.append(
            DiffRow(
                position=position,
                anchor=_anchor(turn, (r.anchor for r in rows)),
                turn=turn,
                a=None if turn.index_a is None else items_a.get(turn.index_a, []),
                b=None if turn.index_b is None else items_b.get(turn.index_b, []),
            )
        )
    return rows


def render_diff_html(
    diff: ConversationDiff,
    a: Conversation,
    b: Conversation,
    *,
    title_a: str = "A",
    title_b: str = "B",
) -> str:
    """The diff page, as one HTML document with its CSS and script inlined."""
    rows = diff_rows(diff, a, b)
    template = _environment().get_template(_PAGE)
    return template.render(
        diff=diff,
        rows=rows,
        changed=[r for r in rows if r.changed],
        sides=[
            ("a", title_a, sum(1 for t in diff.turns if t.index_a is not None)),
            ("b", title_b, sum(1 for t in diff.turns if t.index_b is not None)),
        ],
        # our own files, not user data: inlined as they are
        css=Markup(_read("report.css") + "\n" + _read("diff.css")),
        script=Markup(_read("diff.js")),
    )


def write_diff_html(
    diff: ConversationDiff,
    a: Conversation,
    b: Conversation,
    path: Path | str,
    *,
    title_a: str = "A",
    title_b: str = "B",
) -> Path:
    """Write the diff page atomically and return its path."""
    return write_atomic(path, render_diff_html(diff, a, b, title_a=title_a, title_b=title_b))
