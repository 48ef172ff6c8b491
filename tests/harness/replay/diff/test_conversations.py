"""The turn-by-turn diff of two conversations: what counts, what is noise, how turns pair."""

from __future__ import annotations

import pytest
from pydantic import JsonValue, ValidationError

from harness.replay.diff import ConversationDiff, TurnDiff, diff_conversations
from harness.trace import Conversation, ErrorInfo, InboundMessage, OutboundSend
from tests.harness.replay.diff.bookings import OTHER, START, USER, Booking, booking, two_users


def changes_of(diff: ConversationDiff, number: int) -> tuple[str, ...]:
    """The change lines of the turn numbered ``number`` (from 1)."""
    return next(t for t in diff.turns if t.number == number).changes


def only_change(a: Conversation, b: Conversation, number: int) -> tuple[str, ...]:
    """The changes of one turn, checking that no other turn changed."""
    diff = diff_conversations(a, b)
    assert [t.number for t in diff.differences] == [number]
    return changes_of(diff, number)


def test_identical_conversations_are_the_same() -> None:
    diff = diff_conversations(booking(), booking())
    assert diff.same
    assert [(t.index, t.status, t.user_a, t.user_b) for t in diff.turns] == [
        (0, "same", USER, USER),
        (1, "same", USER, USER),
        (2, "same", USER, USER),
    ]
    assert all(t.changes == () for t in diff.turns)
    assert diff.first_difference is None
    assert diff.differences == ()
    assert diff.lines() == []
    assert diff.summary() == "no differences in 3 turns (times not compared)"


def test_volatile_fields_are_ignored() -> None:
    recorded = booking(ids="REC", shift=0, latency=3.0, tokens=100)
    replayed = booking(ids="REPLAY", shift=7.5, latency=950.0, tokens=4000)
    assert recorded != replayed
    assert diff_conversations(recorded, replayed).same


def test_times_count_when_asked() -> None:
    diff = diff_conversations(booking(), booking(shift=5), compare_times=True)
    assert not diff.same
    assert diff.compare_times
    assert changes_of(diff, 1) == (
        "user message 1 time differs: 10:00:00 -> 10:00:05",
        "tool check_availability time differs: 10:00:03 -> 10:00:08",
        "reply 1 time differs: 10:00:04 -> 10:00:09",
    )
    late = diff_conversations(booking(), booking(shift=86400), compare_times=True)
    assert changes_of(late, 3)[0] == (
        "user message 1 time differs: 2025-03-01 10:01:00 -> 2025-03-02 10:01:00"
    )


def test_a_reply_text_change_is_one_line_in_its_turn() -> None:
    diff = diff_conversations(booking(), booking(booked="Booked for 9pm"))
    assert not diff.same
    assert [t.status for t in diff.turns] == ["same", "changed", "same"]
    first = diff.first_difference
    assert first is not None
    assert (first.index, first.number, first.label()) == (1, 2, "turn 2")
    assert first.changes == ("reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'",)
    assert diff.summary() == (
        "1 of 3 turns differ (1 changed); first at turn 2: "
        "reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"
    )
    assert diff.lines() == ["turn 2: reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"]


def test_tool_arguments_are_compared_by_field() -> None:
    diff = diff_conversations(booking(), booking(slot="21:00"))
    assert changes_of(diff, 1) == ("tool check_availability args differ: slot '20:00' -> '21:00'",)
    assert changes_of(diff, 2) == ("tool book_appointment args differ: slot '20:00' -> '21:00'",)


def test_message_ids_in_tool_arguments_are_volatile() -> None:
    a, b = booking(ids="X"), booking(ids="Y")
    assert a.tool_calls("book_appointment")[0].args != b.tool_calls("book_appointment")[0].args
    assert diff_conversations(a, b).same


def test_a_missing_reply_is_counted_and_named() -> None:
    a = booking(extra_reply="Anything else?")
    assert only_change(a, booking(), 2) == (
        "a: 2 replies, b: 1",
        "reply 2 only in a: text 'Anything else?'",
    )
    assert only_change(booking(), a, 2) == (
        "a: 1 reply, b: 2",
        "reply 2 only in b: text 'Anything else?'",
    )


def test_user_message_changes() -> None:
    assert only_change(booking(), booking(first="A table for 3"), 1) == (
        "user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> 'A table for 3'",
    )
    assert only_change(booking(), booking(tap=("change", "Change time")), 2) == (
        "user message 1 text differs: 'Confirm' -> 'Change time'",
        "user message 1 reply id differs: 'confirm' -> 'change'",
    )


def test_user_message_type_and_count() -> None:
    a = booking()
    turn = a.turns[0]
    first = turn.messages[0]
    typed = first.model_copy(update={"type": "image", "text": None, "body": {"type": "image"}})
    second = first.model_copy(update={"wamid": "wamid.more", "text": "and a high chair"})
    b = Conversation.from_events(
        [typed if e is first else e for e in a.events[:2]] + [second, *a.events[2:]]
    )
    assert changes_of(diff_conversations(a, b), 1) == (
        "user message 1 type differs: 'text' -> 'image'",
        "user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> (none)",
        "a: 1 user message, b: 2",
        "user message 2 only in b: 'and a high chair'",
    )


def test_content_without_text_is_compared_by_body() -> None:
    def place(latitude: float) -> Conversation:
        body: dict[str, JsonValue] = {
            "id": f"wamid.{latitude}",
            "timestamp": str(latitude),
            "type": "location",
            "location": {"latitude": latitude, "longitude": -46.6},
        }
        message = InboundMessage(
            at=START, user=USER, wamid=f"wamid.{latitude}", type="location", body=body
        )
        return Conversation.from_events([message])

    assert diff_conversations(place(-23.5), place(-23.5)).same
    assert changes_of(diff_conversations(place(-23.5), place(-22.9)), 1) == (
        "user message 1 content differs: location.latitude -23.5 -> -22.9",
    )


def test_media_ids_are_the_channels_and_not_compared() -> None:
    def photo(media_id: str, caption: str) -> Conversation:
        body: dict[str, JsonValue] = {
            "id": f"wamid.{media_id}",
            "type": "image",
            "image": {"id": media_id, "mime_type": "image/jpeg", "caption": caption},
        }
        message = InboundMessage(
            at=START, user=USER, wamid=f"wamid.{media_id}", type="image", body=body
        )
        return Conversation.from_events([message])

    # each run hands out media ids of its own, as it does message ids
    assert diff_conversations(photo("4469980719646669", "menu"), photo("41133485", "menu")).same
    assert changes_of(diff_conversations(photo("1", "menu"), photo("2", "bill")), 1) == (
        "user message 1 content differs: image.caption 'menu' -> 'bill'",
    )


def test_interactive_options_are_compared() -> None:
    fewer = booking(options=(("confirm", "Confirm"),))
    assert only_change(booking(), fewer, 1) == (
        "reply 1 options differ: "
        '["Confirm [confirm]","Change time [change]"] -> ["Confirm [confirm]"]',
    )
    renamed = booking(options=(("confirm", "Yes"), ("change", "Change time")))
    assert only_change(booking(), renamed, 1)[0].startswith(
        'reply 1 options differ: ["Confirm [confirm]",'
    )


def test_templates_are_compared_by_name_and_parameters() -> None:
    assert only_change(booking(), booking(template="booking_cancel"), 3) == (
        "reply 1 template differs: 'booking_reminder (en_US)' -> 'booking_cancel (en_US)'",
    )
    assert only_change(booking(), booking(template_params=("B-2",)), 3) == (
        """reply 1 template parameters differ: ["B-1"] -> ["B-2"]""",
    )


def test_a_reply_of_another_type_is_one_line() -> None:
    a = booking()
    template = a.turns[2].replies[0]
    as_text = OutboundSend(
        at=template.at,
        user=USER,
        type="text",
        text="See you tomorrow",
        request={"type": "text", "text": {"body": "See you tomorrow"}},
        wamid=template.wamid,
    )
    b = Conversation.from_events([as_text if e is template else e for e in a.events])
    assert only_change(a, b, 3) == (
        "reply 1 type differs: template booking_reminder (en_US) -> text 'See you tomorrow'",
    )


def test_other_request_fields_are_named_when_nothing_else_differs() -> None:
    def photo(link: str, ident: str) -> Conversation:
        return Conversation.from_events(
            [
                InboundMessage(at=START, user=USER, wamid=f"wamid.{ident}", type="text", text="hi"),
                OutboundSend(
                    at=START,
                    user=USER,
                    type="image",
                    request={
                        "type": "image",
                        "image": {"link": link},
                        "context": {"message_id": f"wamid.{ident}"},
                    },
                    wamid=f"wamid.out{ident}",
                ),
            ]
        )

    assert diff_conversations(photo("a.jpg", "1"), photo("a.jpg", "2")).same
    assert changes_of(diff_conversations(photo("a.jpg", "1"), photo("b.jpg", "1")), 1) == (
        "reply 1 request differs: image.link 'a.jpg' -> 'b.jpg'",
    )


@pytest.mark.parametrize(
    ("knobs", "line"),
    [
        (Booking(last_status="delivered"), "reply 1 status differs: read -> delivered"),
        (Booking(last_status="sent"), "reply 1 status differs: read -> sent"),
        (
            Booking(last_status="failed", failure=ErrorInfo(code=131047, title="Re-engagement")),
            "reply 1 status differs: read -> failed 131047",
        ),
        (
            Booking(refused=ErrorInfo(code=131056, title="Pair rate limit")),
            "reply 1 status differs: read -> refused 131056",
        ),
    ],
)
def test_reply_statuses_are_compared(knobs: Booking, line: str) -> None:
    assert only_change(booking(), booking(knobs), 1) == (line,)


def test_failure_codes_are_compared() -> None:
    a = booking(last_status="failed", failure=ErrorInfo(code=131047))
    b = booking(last_status="failed", failure=ErrorInfo(code=131026))
    assert only_change(a, b, 1) == ("reply 1 status differs: failed 131047 -> failed 131026",)


def test_tool_calls_only_on_one_side_and_failures() -> None:
    a = booking()
    check = a.tool_calls("check_availability")[0]
    without = Conversation.from_events([e for e in a.events if e is not check])
    assert only_change(a, without, 1) == (
        "a: 1 tool call, b: 0",
        'tool check_availability only in a: args {"date":"2025-03-02","party":2,"slot":"20:00"}',
    )
    assert only_change(booking(), booking(tool_error="slot taken"), 2) == (
        "tool book_appointment failed in b: 'slot taken'",
    )
    assert only_change(booking(tool_error="x"), booking(tool_error="y"), 2) == (
        "tool book_appointment error differs: 'x' -> 'y'",
    )


def test_a_repeated_tool_is_numbered() -> None:
    a = booking()
    book = a.tool_calls("book_appointment")[0]
    again = book.model_copy(update={"args": {**book.args, "party": 3}})
    events = list(a.events)
    events.insert(events.index(book) + 1, again)
    b = Conversation.from_events(events)
    assert only_change(a, b, 2) == (
        "a: 1 tool call, b: 2",
        "tool book_appointment #2 only in b: args "
        '{"message":"wamid.AIN2","party":3,"slot":"20:00"}',
    )


def test_redelivered_copies_are_counted() -> None:
    assert only_change(booking(), booking(redelivered=True), 2) == (
        "a: 0 redelivered copies, b: 1",
    )


def test_an_extra_turn_is_only_in_one_side() -> None:
    short = booking(thanks=False)
    diff = diff_conversations(short, booking())
    assert [t.status for t in diff.turns] == ["same", "same", "only_b"]
    extra = diff.turns[2]
    assert (extra.index, extra.index_a, extra.index_b, extra.user_a, extra.user_b) == (
        2,
        None,
        2,
        None,
        USER,
    )
    assert extra.changes == ("only in b: user 'thanks!'; 1 reply; 0 tool calls",)
    assert diff.summary() == (
        "1 of 3 turns differ (1 only in b); first at turn 3: "
        "only in b: user 'thanks!'; 1 reply; 0 tool calls"
    )
    missing = diff_conversations(booking(), short)
    assert [t.status for t in missing.turns] == ["same", "same", "only_a"]
    assert missing.turns[2].changes == ("only in a: user 'thanks!'; 1 reply; 0 tool calls",)


def test_empty_conversations() -> None:
    assert (
        diff_conversations(Conversation(), Conversation()).summary()
        == "no differences in 0 turns (times not compared)"
    )
    diff = diff_conversations(Conversation(), booking())
    assert [t.status for t in diff.turns] == ["only_b"] * 3


def test_turns_of_several_users_pair_by_user() -> None:
    a = two_users([(USER, "hi"), (OTHER, "hello"), (USER, "book"), (OTHER, "cancel")])
    b = two_users([(OTHER, "hello"), (USER, "hi"), (USER, "book"), (OTHER, "cancel")])
    diff = diff_conversations(a, b)
    assert diff.same
    assert [(t.index_a, t.index_b) for t in diff.turns] == [(0, 1), (1, 0), (2, 2), (3, 3)]
    assert diff.turns[0].label() == "turn 1 (turn 2 in b)"


def test_an_extra_turn_of_one_user_keeps_b_in_order() -> None:
    a = two_users([(USER, "hi"), (OTHER, "hello")])
    b = two_users([(USER, "hi"), (USER, "still there?"), (OTHER, "hello")])
    diff = diff_conversations(a, b)
    assert [(t.status, t.index_a, t.index_b) for t in diff.turns] == [
        ("same", 0, 0),
        ("only_b", None, 1),
        ("same", 1, 2),
    ]


def test_other_users_pair_by_index() -> None:
    a = two_users([(USER, "hi")])
    b = two_users([(OTHER, "hi")])
    assert only_change(a, b, 1) == (f"user differs: '{USER}' -> '{OTHER}'",)


def test_long_texts_show_where_they_differ() -> None:
    base = "Your table is booked. " * 6
    a = booking(booked=base + "See you at 8pm. Reply STOP to stop.")
    b = booking(booked=base + "See you at 9pm. Reply STOP to stop.")
    (line,) = only_change(a, b, 2)
    # twenty characters either side of the difference
    assert line == (
        "reply 1 text differs: …' booked. See you at 8pm. Reply STOP to st'… -> "
        "…' booked. See you at 9pm. Reply STOP to st'…"
    )
    start = only_change(booking(booked="8pm. " + base), booking(booked="9pm. " + base), 2)
    assert start == (
        f"reply 1 text differs: {('8pm. ' + base)[:21]!r}… -> {('9pm. ' + base)[:21]!r}…",
    )


def test_a_conversation_saved_without_turns_is_split_into_turns() -> None:
    full = booking()
    bare = Conversation(events=full.events)
    assert bare.turns == ()
    assert diff_conversations(full, bare).same


def test_the_diff_is_deterministic_and_round_trips() -> None:
    a, b = booking(), booking(slot="21:00", extra_reply="x", thanks=False)
    diff = diff_conversations(a, b)
    assert diff == diff_conversations(a, b)
    assert ConversationDiff.model_validate_json(diff.model_dump_json()) == diff
    with pytest.raises(ValidationError, match="same=True"):
        ConversationDiff(turns=diff.turns, same=True)
    with pytest.raises(ValidationError):
        diff.turns[0].status = "same"  # type: ignore[misc]  # frozen, on purpose
    assert TurnDiff(index=0, status="only_a").status_word == "only in a"
