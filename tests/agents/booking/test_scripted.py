"""The ScriptedModel: Messages-shaped, deterministic answers that hold a booking dialogue."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from agents.booking import TOOL_SCHEMAS, ScriptedModel
from agents.booking.reading import _result_data, read_request
from harness.llm import LLMClient, TextBlock, ToolUseBlock

SYSTEM = """You are the WhatsApp booking assistant of Casa Lucia, a restaurant.

## Today

Today is Thursday 2026-01-01; the time is 10:00 (UTC).

## Customer

{profile}

## House policies

Be kind. Tables are held for twenty minutes.
"""


def _system(profile: str = "- Nothing known yet.") -> str:
    return SYSTEM.format(profile=profile)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


async def _ask(
    messages: list[dict[str, Any]], profile: str = "- Nothing known yet.", **kw: Any
) -> Any:
    model = ScriptedModel()
    kw.setdefault("tools", list(TOOL_SCHEMAS))
    return await model.create(
        model="claude-test", system=_system(profile), messages=messages, max_tokens=512, **kw
    )


async def _run(messages: list[dict[str, Any]], results: dict[str, Any], **kw: Any) -> list[Any]:
    """Play the tool loop with canned tool results; returns the responses in order."""
    responses = []
    convo = list(messages)
    for _ in range(5):
        response = await _ask(convo, **kw)
        responses.append(response)
        if response.stop_reason != "tool_use":
            return responses
        use = response.tool_uses[0]
        if use.name not in results:
            return responses  # stop at the first tool the test has no answer for
        convo.append(response.as_message())
        convo.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": json.dumps(results[use.name]),
                    }
                ],
            }
        )
    raise AssertionError("the model never stopped")


FRIDAY = {
    "date": "2026-01-02",
    "day": "Friday 2 January",
    "slots": [
        {"time": t, "room": "garden room" if t.endswith(":00") else "mezzanine",
         "step_free": t.endswith(":00"), "tables_left": 2}
        for t in ("12:00", "12:30", "19:00", "19:30", "20:00")
    ],
}  # fmt: skip


async def test_it_answers_as_an_llm_client_does() -> None:
    model: LLMClient = ScriptedModel()
    response = await model.create(
        model="claude-sonnet-4-6", messages=[_user("hello")], max_tokens=256, tools=TOOL_SCHEMAS
    )
    assert response.stop_reason in ("end_turn", "tool_use")
    assert response.content
    assert response.usage.input_tokens > 0


async def test_a_day_leads_to_search_slots_in_the_messages_shape() -> None:
    response = await _ask([_user("Can I book a table for friday?")])
    assert response.stop_reason == "tool_use"
    assert response.model == "claude-test"
    text, use = response.content
    assert isinstance(text, TextBlock)
    assert isinstance(use, ToolUseBlock)
    assert use.name == "search_slots"
    assert use.input == {"date": "2026-01-02"}
    assert use.id.startswith("toolu_")
    assert response.usage.input_tokens > 100
    assert response.usage.output_tokens > 0


async def test_answers_are_deterministic() -> None:
    first = await _ask([_user("friday at 8pm")])
    second = await _ask([_user("friday at 8pm")])
    assert first == second
    other = await _ask([_user("saturday at 8pm")])
    assert other.id != first.id
    assert other.tool_uses[0].id != first.tool_uses[0].id


async def test_ids_and_token_counts_come_from_the_request_written_sorted() -> None:
    # What the recorded fixtures' ids were derived from: Python's JSON writer, keys sorted.
    messages = [_user("friday at 8pm, step-free please ✓")]
    response = await _ask(messages)
    written = json.dumps(
        {"model": "claude-test", "system": _system(), "messages": messages,
         "tools": list(TOOL_SCHEMAS)},
        sort_keys=True, default=str,
    )  # fmt: skip
    digest = hashlib.sha256(written.encode()).hexdigest()
    assert response.id == f"msg_{digest[:24]}"
    assert response.tool_uses[0].id == f"toolu_{digest[:20]}01"
    assert response.usage.input_tokens == len(written) // 4


@pytest.mark.parametrize(
    "content",
    ['{"status": "booked", "n": 1e400}', '{"left": NaN}', '{"big": 123456789012345678901234}',
     '  ["x"] ', '"\\ud800"', "not JSON", "{", ""],
)  # fmt: skip
def test_a_tool_result_is_read_as_pythons_json_reader_reads_it(content: str) -> None:
    try:
        expected = json.loads(content)
    except ValueError:
        expected = content
    block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content}
    (event,) = read_request(None, [{"role": "user", "content": [block]}]).events
    assert repr(event.data) == repr(expected)  # repr: NaN is not equal to itself


async def test_a_tool_result_is_parsed_once_and_left_as_parsed() -> None:
    # The model is shown the same results on each call; they are parsed once and shared, so
    # nothing that reads them may change them: after a whole booking, each is as first read.
    _result_data.cache_clear()
    results = {"search_slots": FRIDAY, "book_appointment": {"status": "booked", "id": "bk-7"}}
    await _run([_user("Friday at 19:00 for two please")], results)
    text = json.dumps(FRIDAY)
    block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": text}
    first = read_request(None, [{"role": "user", "content": [block]}]).events[0].data
    again = {**block, "content": "".join(text)}  # an equal text, another string object
    second = read_request(None, [{"role": "user", "content": [again]}]).events[0].data
    assert second is first
    assert _result_data.cache_info().hits >= 2
    for raw in ("", *(json.dumps(r) for r in results.values())):
        try:
            expected = json.loads(raw)
        except ValueError:
            expected = raw
        assert _result_data(raw) == expected


async def test_a_day_and_a_free_time_go_straight_to_booking() -> None:
    responses = await _run([_user("friday at 8pm")], {"search_slots": FRIDAY})
    _search, book = responses
    assert book.tool_uses[0].name == "book_appointment"
    assert book.tool_uses[0].input == {"date": "2026-01-02", "slot": "20:00"}


async def test_it_never_asks_again_for_the_day() -> None:
    history = [
        _user("a table on friday please"),
        _assistant("On Friday 2 January we have free tables at 19:00. Which time?"),
        _user("8pm"),
    ]
    response = await _ask(history)
    assert response.tool_uses[0].input == {"date": "2026-01-02"}


async def test_a_time_without_a_day_asks_only_for_the_day_then_remembers_the_time() -> None:
    first = await _ask([_user("hi, a table at 8pm please")])
    assert first.stop_reason == "end_turn"
    assert "Which day" in first.text
    assert "20:00" in first.text
    history = [_user("hi, a table at 8pm please"), _assistant(first.text), _user("saturday")]
    responses = await _run(history, {"search_slots": {**FRIDAY, "date": "2026-01-03"}})
    assert responses[-1].tool_uses[0].input["slot"] == "20:00"


async def test_access_needs_from_the_profile_shape_the_offer_and_the_booking() -> None:
    profile = (
        "- Access needs: wheelchair user (offer step-free seatings only)\n- Dietary needs: vegan"
    )
    responses = await _run([_user("friday at 7:30pm")], {"search_slots": FRIDAY}, profile=profile)
    answer = responses[-1]
    assert answer.stop_reason == "end_turn"
    assert "19:30 seating is on the mezzanine" in answer.text
    assert "12:00, 19:00 and 20:00" in answer.text
    assert "12:30" not in answer.text
    assert "wheelchair user, vegan" in answer.text
    booked = await _run([_user("friday at 8pm")], {"search_slots": FRIDAY}, profile=profile)
    assert booked[-1].tool_uses[0].input == {
        "date": "2026-01-02",
        "slot": "20:00",
        "notes": "wheelchair user; vegan",
        "step_free": True,
    }


async def test_needs_confirmation_makes_it_propose_and_yes_makes_it_book() -> None:
    results: dict[str, Any] = {
        "search_slots": FRIDAY,
        "book_appointment": {"status": "needs_confirmation", "date": "2026-01-02", "slot": "20:00"},
    }
    responses = await _run([_user("friday at 8pm")], results)
    proposal = responses[-1]
    assert proposal.text.endswith("Shall I confirm it?")
    assert "Friday 2 January at 20:00 in the garden room (step-free)" in proposal.text
    convo = [_user("friday at 8pm")]
    for response in responses[:-1]:
        convo.append(response.as_message())
        convo.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": response.tool_uses[0].id,
                        "content": json.dumps(results[response.tool_uses[0].name]),
                    }
                ],
            }
        )
    convo += [proposal.as_message(), _user("Confirm")]
    confirm = await _ask(convo)
    assert confirm.tool_uses[0].name == "book_appointment"
    assert confirm.tool_uses[0].input == {"date": "2026-01-02", "slot": "20:00"}


async def test_cancel_uses_the_reference_from_the_profile() -> None:
    profile = "- Booking BK-0007: Friday 2 January (2026-01-02) at 20:00, garden room"
    response = await _ask([_user("please cancel my booking")], profile=profile)
    assert response.tool_uses[0].name == "cancel_booking"
    assert response.tool_uses[0].input == {"booking_id": "BK-0007"}
    explicit = await _ask([_user("cancel bk-3")], profile=profile)
    assert explicit.tool_uses[0].input == {"booking_id": "BK-0003"}
    nothing = await _ask([_user("cancel my booking")])
    assert nothing.stop_reason == "end_turn"
    assert "reference" in nothing.text


async def test_policies_are_quoted_from_the_system_prompt() -> None:
    response = await _ask([_user("what is your cancellation policy?")])
    assert "Tables are held for twenty minutes." in response.text


async def test_without_the_tools_it_apologises() -> None:
    response = await _ask([_user("friday at 8pm")], tools=[])
    assert response.stop_reason == "end_turn"
    assert "can't reach the booking system" in response.text


async def test_a_greeting_gets_a_welcome_that_asks_for_the_day() -> None:
    response = await _ask([_user("hello!")])
    assert "Casa Lucia" in response.text
    assert "Which day" in response.text
