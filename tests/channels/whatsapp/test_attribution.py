"""Which running scenario a model call belongs to, by the users' words its request quotes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from channels.whatsapp.attribution import most_recently_quoted, request_text
from harness.trace import Event, InboundMessage

START = datetime(2026, 12, 1, 9, tzinfo=UTC)


def _said(user: str, *texts_at: tuple[str, int]) -> list[Event]:
    return [
        InboundMessage(
            at=START + timedelta(seconds=s), user=user, wamid=f"w.{user}.{s}", type="text", text=t
        )
        for t, s in texts_at
    ]


# Three users order, then all three say "Yes"; Carla's "Yes" is the latest.
TRACES = [
    _said("ana", ("I want 2 widgets", 0), ("Yes", 10)),
    _said("bia", ("I want 3 gadgets", 1), ("Yes", 11)),
    _said("carla", ("I want 1 gizmo", 2), ("Yes", 12)),
]


def _asking(*said: str) -> str:
    return request_text([{"role": "user", "content": text} for text in said])


def test_words_every_user_wrote_do_not_decide_whose_call_it_is() -> None:
    # The agent rewrote the tap as "Yes, confirm the order."; Bia's own words place the call.
    text = _asking("I want 3 gadgets", "Yes, confirm the order.")
    assert most_recently_quoted(TRACES, text) == 1


def test_when_only_shared_words_are_quoted_the_latest_writer_wins() -> None:
    assert most_recently_quoted(TRACES, _asking("Yes")) == 2
    assert most_recently_quoted(TRACES, _asking("something else")) is None
