"""The trace contract: every event kind round-trips through JSON; turns group bursts."""

from __future__ import annotations

import copy
import gc
import json
import pickle
import tracemalloc
import typing
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, ValidationError

from harness.trace import (
    EVENT_ADAPTER,
    BlockChange,
    ClockJump,
    Conversation,
    DeliveryAttempt,
    DroppedMessage,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    Participant,
    StatusUpdate,
    ToolCall,
    Verification,
    build_turns,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# -- strategies ---------------------------------------------------------------

instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
names = st.text(min_size=1, max_size=12)
json_scalars: st.SearchStrategy[JsonValue] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
errors = st.builds(
    ErrorInfo,
    code=st.integers(min_value=0, max_value=999999),
    title=st.text(max_size=20),
    message=st.text(max_size=20),
    details=st.text(max_size=40),
    http_status=st.none() | st.integers(min_value=100, max_value=599),
)
users = st.none() | names

EVENT_STRATEGIES: dict[str, st.SearchStrategy[Event]] = {
    "inbound": st.builds(
        InboundMessage,
        at=instants,
        user=users,
        wamid=names,
        type=names,
        text=st.none() | st.text(max_size=40),
        reply_id=st.none() | names,
        context_id=st.none() | names,
        body=json_objects,
        delivery=st.none() | names,
        duplicate=st.booleans(),
    ),
    "send": st.builds(
        OutboundSend,
        at=instants,
        user=users,
        type=names,
        text=st.none() | st.text(max_size=40),
        request=json_objects,
        wamid=st.none() | names,
        error=st.none() | errors,
        in_window=st.none() | st.booleans(),
    ),
    "status": st.builds(
        StatusUpdate,
        at=instants,
        user=users,
        wamid=names,
        status=st.sampled_from(["sent", "delivered", "read", "failed", "played"]),
        errors=st.lists(errors, max_size=2).map(tuple),
        delivery=st.none() | names,
    ),
    "llm": st.builds(
        LLMExchange,
        at=instants,
        user=users,
        key=names,
        model=names,
        stop_reason=st.none() | st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
        input_tokens=st.integers(min_value=0, max_value=10**7),
        output_tokens=st.integers(min_value=0, max_value=10**7),
        source=st.sampled_from(["live", "recorded"]),
    ),
    "tool": st.builds(
        ToolCall,
        at=instants,
        user=users,
        name=names,
        args=json_objects,
        result=json_values,
        error=st.none() | st.text(max_size=30),
        side_effect=st.booleans(),
        source=st.sampled_from(["live", "recorded"]),
    ),
    "clock": st.builds(ClockJump, at=instants, user=users, previous=instants, reason=st.text()),
    "delivery": st.builds(
        DeliveryAttempt,
        at=instants,
        user=users,
        delivery=names,
        attempt=st.integers(min_value=1, max_value=100),
        items=st.lists(names, max_size=3).map(tuple),
        status_code=st.none() | st.integers(min_value=100, max_value=599),
        error=st.none() | st.text(max_size=30),
        latency_ms=st.none() | st.floats(min_value=0, max_value=1e6, allow_nan=False),
        faults=st.lists(st.sampled_from(["duplicate", "reordered", "batched", "retry"])).map(tuple),
    ),
    "verification": st.builds(
        Verification,
        at=instants,
        user=users,
        method=st.sampled_from(["GET", "POST"]),
        request=json_objects,
        challenge=names,
        status_code=st.none() | st.integers(min_value=100, max_value=599),
        answer=st.text(max_size=40),
        error=st.none() | st.text(max_size=30),
        passed=st.booleans(),
    ),
    "block": st.builds(
        BlockChange,
        at=instants,
        user=users,
        blocked=st.booleans(),
        input=st.text(max_size=20),
        error=st.none() | errors,
    ),
    "dropped": st.builds(
        DroppedMessage,
        at=instants,
        user=users,
        wamid=names,
        type=names,
        text=st.none() | st.text(max_size=40),
        reason=names,
    ),
}
any_event = st.one_of(*EVENT_STRATEGIES.values())


def test_every_event_kind_has_a_strategy() -> None:
    members = typing.get_args(typing.get_args(Event)[0])
    kinds = {m.model_fields["kind"].default for m in members}
    assert kinds == set(EVENT_STRATEGIES)


@pytest.mark.parametrize("kind", sorted(EVENT_STRATEGIES))
@given(data=st.data())
def test_each_event_kind_round_trips_through_json(kind: str, data: st.DataObject) -> None:
    event = data.draw(EVENT_STRATEGIES[kind])
    text = EVENT_ADAPTER.dump_json(event)
    back = EVENT_ADAPTER.validate_json(text)
    assert back == event
    assert type(back) is type(event)
    # through plain json too, as a JSONL reader would see it
    assert EVENT_ADAPTER.validate_python(json.loads(text)) == event


@given(events=st.lists(any_event, max_size=12))
def test_conversation_round_trips_through_json(events: list[Event]) -> None:
    conv = Conversation.from_events(
        events, id="c1", channel="whatsapp", participants=(Participant(id="u1", name="Ana"),)
    )
    assert Conversation.model_validate_json(conv.model_dump_json()) == conv


@pytest.mark.parametrize("kind", sorted(EVENT_STRATEGIES))
@given(data=st.data())
def test_events_given_the_same_fields_share_one_record_of_them(
    kind: str, data: st.DataObject
) -> None:
    event = data.draw(EVENT_STRATEGIES[kind])
    given_names = set(event.model_fields_set)
    values = {name: getattr(event, name) for name in given_names}
    cls = type(event)
    validated, trusted = cls(**values), cls.model_construct(**values)
    loaded = cls.model_validate_json(event.model_dump_json(exclude_unset=True))
    for other in (validated, trusted, loaded):
        assert other == event
        assert other.model_fields_set is event.model_fields_set  # one set, not one per event
        assert other.model_dump(exclude_unset=True) == event.model_dump(exclude_unset=True)
    copied = event.model_copy(update={"user": "someone else"})
    assert copied.model_fields_set == given_names | {"user"}
    assert event.model_fields_set == given_names  # the shared set is never written to


@pytest.mark.parametrize("kind", sorted(EVENT_STRATEGIES))
@given(data=st.data())
def test_an_event_built_from_trusted_values_is_the_one_pydantic_builds(
    kind: str, data: st.DataObject
) -> None:
    event = data.draw(EVENT_STRATEGIES[kind])
    cls = type(event)
    values = {name: getattr(event, name) for name in event.model_fields_set}
    trusted = cls.model_construct(**values)
    plain = BaseModel.model_construct.__func__(cls, **values)  # type: ignore[attr-defined]
    assert trusted == plain == event
    assert type(trusted) is cls
    assert list(trusted.__dict__.items()) == list(plain.__dict__.items())  # same order too
    assert trusted.model_fields_set == plain.model_fields_set
    assert trusted.model_dump_json() == plain.model_dump_json()
    assert repr(trusted) == repr(plain)
    assert pickle.loads(pickle.dumps(trusted)) == event
    assert copy.deepcopy(trusted) == event
    assert trusted.model_copy(update={"user": "u9"}) == plain.model_copy(update={"user": "u9"})
    with pytest.raises(ValidationError):
        trusted.user = "someone"  # type: ignore[misc]  # frozen, as any event
    named = cls.model_construct({"at"}, **values)
    assert (
        named.model_fields_set
        == {"at"}
        == plain.__class__.model_construct({"at"}, **values).model_fields_set
    )
    odd: dict[str, typing.Any] = {"at": T0, "surprise": 1}
    pydantics = BaseModel.model_construct.__func__(cls, **odd)  # type: ignore[attr-defined]
    assert cls.model_construct(**odd) == pydantics  # unknown names dropped, as pydantic does


def test_events_built_from_trusted_values_get_defaults_of_their_own() -> None:
    # The same call made again takes a plan kept from the first: a default made by a
    # factory is still made anew for each event, never shared between two of them.
    first = InboundMessage.model_construct(at=T0, wamid="wamid.1", type="text")
    second = InboundMessage.model_construct(at=T0, wamid="wamid.2", type="text")
    assert first.body == second.body == {}
    assert first.body is not second.body
    assert first.model_fields_set == {"at", "wamid", "type"}
    named = InboundMessage.model_construct({"wamid"}, at=T0, wamid="wamid.3", type="text")
    assert named.model_fields_set == {"wamid"}
    assert InboundMessage.model_construct(at=T0, wamid="w", type="text").model_fields_set == {
        "at",
        "wamid",
        "type",
    }


def _held(make: typing.Callable[[], object], count: int = 2000) -> float:
    """Bytes held per object ``make`` returns, measured with tracemalloc."""
    for _ in range(50):
        make()  # first-use caches, outside the measure
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [make() for _ in range(count)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    return (after - before) / count


def test_an_event_built_from_trusted_values_holds_far_less_than_a_validated_one() -> None:
    values: dict[str, typing.Any] = {
        "at": T0,
        "user": "u1",
        "delivery": "d1",
        "items": ("wamid.1",),
        "status_code": 200,
        "latency_ms": 1.5,
    }
    trusted = _held(lambda: DeliveryAttempt.model_construct(**values))
    validated = _held(lambda: DeliveryAttempt(**values))
    # Ten values as attributes of the object, not a dict of its own: about half.
    assert trusted < 0.65 * validated, (trusted, validated)


def test_models_are_frozen_and_strict() -> None:
    event = InboundMessage(at=T0, wamid="w1", type="text")
    with pytest.raises(ValidationError):
        event.wamid = "w2"  # type: ignore[misc]  # the point: assignment must fail
    with pytest.raises(ValidationError, match="extra"):
        InboundMessage.model_validate({"at": T0, "wamid": "w", "type": "text", "surprise": 1})


def test_unknown_kind_names_the_discriminator() -> None:
    with pytest.raises(ValidationError, match="kind"):
        EVENT_ADAPTER.validate_python({"kind": "telepathy", "at": T0.isoformat()})


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValidationError):
        InboundMessage(at=datetime(2026, 1, 1), wamid="w", type="text")


# -- turns --------------------------------------------------------------------


def _in(n: int, text: str, user: str = "u1", **kw: typing.Any) -> InboundMessage:
    return InboundMessage(
        at=T0 + timedelta(seconds=n), user=user, wamid=f"w{n}", type="text", text=text, **kw
    )


def _reply(n: int, text: str, user: str = "u1", **kw: typing.Any) -> OutboundSend:
    return OutboundSend(at=T0 + timedelta(seconds=n), user=user, type="text", text=text, **kw)


def test_burst_is_one_turn_and_reply_closes_it() -> None:
    events: list[Event] = [
        _in(0, "hi"),
        _in(1, "I want"),
        _in(2, "a table"),
        _reply(5, "Sure, which day?"),
        _in(9, "friday"),
        ToolCall(at=T0 + timedelta(seconds=10), name="search_slots", args={"date": "fri"}),
        _reply(11, "9am or 10am?"),
    ]
    turns = build_turns(events)
    assert [t.texts for t in turns] == [["hi", "I want", "a table"], ["friday"]]
    assert [r.text for r in turns[0].replies] == ["Sure, which day?"]
    assert [c.name for c in turns[1].tool_calls] == ["search_slots"]
    assert turns[1].start == T0 + timedelta(seconds=9)


def test_a_verification_of_the_endpoint_belongs_to_no_turn() -> None:
    check = Verification(
        at=T0 + timedelta(seconds=3),
        request={"hub.mode": "subscribe", "hub.challenge": "1158201444"},
        challenge="1158201444",
        status_code=200,
        answer="1158201444",
        passed=True,
    )
    events: list[Event] = [_in(0, "hi"), check, _reply(5, "hello"), _in(9, "bye")]
    turns = build_turns(events)
    assert [t.texts for t in turns] == [["hi"], ["bye"]]
    assert all(check not in t.actions for t in turns)
    assert Conversation.from_events(events).verifications() == [check]


def test_a_block_is_the_agents_act_and_a_dropped_message_joins_the_turn_it_follows() -> None:
    block = BlockChange(at=T0 + timedelta(seconds=2), user="u1", input="+u1")
    dropped = DroppedMessage(at=T0 + timedelta(seconds=9), user="u1", wamid="w9", type="text")
    events: list[Event] = [_in(0, "you idiot"), block, dropped, _in(20, "hello?")]
    turns = build_turns(events)
    assert [t.texts for t in turns] == [["you idiot"], ["hello?"]]
    assert turns[0].actions == (block, dropped)
    # A dropped message is no answer: the next message still belongs to a new burst only
    # because the agent blocked in between.
    quiet = build_turns([_in(0, "a"), dropped, _in(20, "b")])
    assert [t.texts for t in quiet] == [["a", "b"]]


def test_redelivered_copy_joins_the_open_turn_instead_of_starting_one() -> None:
    first = _in(0, "book 9am")
    copy = first.model_copy(update={"duplicate": True, "at": T0 + timedelta(seconds=30)})
    events: list[Event] = [first, _reply(2, "Booked"), copy, _reply(31, "Booked")]
    turns = build_turns(events)
    assert len(turns) == 1
    assert len(turns[0].inbound) == 2
    assert turns[0].messages == [first]
    assert len(turns[0].replies) == 2


def test_users_have_separate_turns() -> None:
    events: list[Event] = [
        _in(0, "a1", user="a"),
        _in(1, "b1", user="b"),
        _reply(2, "to a", user="a"),
        _in(3, "b2", user="b"),
        _reply(4, "to b", user="b"),
    ]
    turns = build_turns(events)
    assert [(t.user, t.texts) for t in turns] == [("a", ["a1"]), ("b", ["b1", "b2"])]
    assert [r.text for r in turns[1].replies] == ["to b"]


def test_read_receipts_are_sends_but_not_replies() -> None:
    events: list[Event] = [
        _in(0, "hi"),
        OutboundSend(at=T0, user="u1", type="mark_read"),
        _reply(1, "hello"),
    ]
    conv = Conversation.from_events(events)
    assert len(conv.sends()) == 2
    assert [r.text for r in conv.replies()] == ["hello"]


def test_query_helpers() -> None:
    err = ErrorInfo(code=131047, title="Re-engagement message")
    events: list[Event] = [
        _in(0, "book friday 9am"),
        ToolCall(at=T0, user="u1", name="search_slots", args={"date": "fri"}),
        ToolCall(at=T0, user="u1", name="book_appointment", args={"slot": "9"}, side_effect=True),
        _reply(1, "booked", wamid="out1", in_window=True),
        _in(100, "thanks"),
        _reply(101, "late", wamid="out2", in_window=False),
        OutboundSend(at=T0, user="u1", type="template", wamid="out3", in_window=False),
        _reply(102, "refused", error=ErrorInfo(code=100, http_status=400)),
        StatusUpdate(at=T0, user="u1", wamid="out2", status="failed", errors=(err,)),
        StatusUpdate(at=T0, user="u1", wamid="out1", status="read"),
    ]
    conv = Conversation.from_events(events)
    assert [c.name for c in conv.tool_calls(side_effect=True)] == ["book_appointment"]
    assert len(conv.tool_calls("search_slots")) == 1
    assert [s.text for s in conv.sends_outside_window()] == ["late"]
    failed = conv.failed_sends()
    assert len(failed) == 2
    assert isinstance(failed[1], StatusUpdate)
    assert failed[1].errors[0].code == 131047
    assert [m.text for m in conv.user_messages_before(1)] == ["book friday 9am"]
    assert conv.user_messages_before(0) == []
    assert conv.send_for("out2") is events[5]
    turn = conv.turn_of(events[2])
    assert turn is not None
    assert turn.index == 0
    assert [s.status for s in conv.statuses()] == ["failed", "read"]
    assert len(list(conv.of_kind("tool"))) == 2
