"""Tool results in a model request, set aside where the recording cannot answer their tool."""

from __future__ import annotations

from typing import Any

from harness.tool_results import SET_ASIDE, AnsweredCall, ToolResult, answered_calls, set_aside


def anthropic(result: Any, *, is_error: bool = False) -> dict[str, Any]:
    """A request whose last message answers a book_appointment call with ``result``."""
    answer: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}
    if is_error:
        answer["is_error"] = True
    return {
        "model": "claude-test",
        "messages": [
            {"role": "user", "content": "Friday at 10 please"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Booking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "book_appointment", "input": {}},
                ],
            },
            {"role": "user", "content": [answer]},
        ],
    }


def openai(result: str) -> dict[str, Any]:
    """The same in OpenAI's chat completions."""
    call = {"id": "call_1", "type": "function", "function": {"name": "book", "arguments": "{}"}}
    return {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": "Friday at 10 please"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ],
    }


def test_an_anthropic_tool_result_is_blanked_and_kept() -> None:
    body = anthropic('{"booking": "B-4"}')
    found = set_aside(body, answered=frozenset())
    assert found is not None
    blanked, results = found
    assert results == [ToolResult("book_appointment", '{"booking": "B-4"}')]
    assert blanked["messages"][2]["content"][0]["content"] == SET_ASIDE
    # only the result is blanked: the call, its id and the rest stay as they were
    assert blanked["messages"][:2] == body["messages"][:2]
    assert blanked["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"
    assert body["messages"][2]["content"][0]["content"] == '{"booking": "B-4"}'  # not touched


def test_two_results_that_differ_blank_to_the_same_request() -> None:
    first = set_aside(anthropic([{"type": "text", "text": "B-1"}]), frozenset())
    second = set_aside(anthropic([{"type": "text", "text": "B-4"}]), frozenset())
    assert first is not None
    assert second is not None
    assert first[0] == second[0]
    assert first[1] != second[1]


def test_a_failed_result_stays_apart_from_a_good_one() -> None:
    good = set_aside(anthropic("ok"), frozenset())
    failed = set_aside(anthropic("ok", is_error=True), frozenset())
    assert good is not None
    assert failed is not None
    assert good[0] != failed[0]


def test_a_tool_the_recording_answers_is_left_alone() -> None:
    assert set_aside(anthropic("B-4"), answered=frozenset({"book_appointment"})) is None


def test_a_request_without_tool_results_has_nothing_to_set_aside() -> None:
    assert set_aside({"messages": [{"role": "user", "content": "hi"}]}, frozenset()) is None
    assert set_aside({"prompt": "hi"}, frozenset()) is None


def test_an_openai_tool_message_is_blanked() -> None:
    found = set_aside(openai("B-4"), answered=frozenset())
    assert found is not None
    blanked, results = found
    assert results == [ToolResult("book", "B-4")]
    answer = {"role": "tool", "tool_call_id": "call_1", "content": SET_ASIDE}
    assert blanked["messages"][2] == answer
    assert set_aside(openai("B-4"), answered=frozenset({"book"})) is None


# -- the calls a request shows the agent made --------------------------------------------------


def test_an_anthropic_result_is_a_call_with_the_arguments_the_model_asked_for() -> None:
    body = anthropic([{"type": "text", "text": '{"booking": "B-4"}'}])
    body["messages"][1]["content"][1]["input"] = {"day": "friday", "time": "10:00"}
    assert answered_calls(body) == [
        AnsweredCall(
            "toolu_1", "book_appointment", {"day": "friday", "time": "10:00"}, {"booking": "B-4"}
        )
    ]
    [failed] = answered_calls(anthropic("the calendar is down", is_error=True))
    assert (failed.result, failed.failed) == ("the calendar is down", True)


def test_an_openai_result_is_a_call_with_its_json_arguments_read() -> None:
    body = openai('{"booking": "B-1"}')
    body["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"day": "friday"}'
    assert answered_calls(body) == [
        AnsweredCall("call_1", "book", {"day": "friday"}, {"booking": "B-1"})
    ]
    body["messages"][1]["tool_calls"][0]["function"]["arguments"] = "friday"  # not an object
    [call] = answered_calls(body)
    assert call.args == {"arguments": "friday"}


def test_a_result_whose_call_is_not_in_the_request_is_no_call() -> None:
    body = openai("ok")
    del body["messages"][1]  # the history was cut: nothing says which tool answered
    assert answered_calls(body) == []
    assert answered_calls({"model": "m"}) == []
    assert answered_calls(anthropic("ok") | {"messages": anthropic("ok")["messages"][:2]}) == []


def test_calls_seen_in_an_earlier_request_are_skipped() -> None:
    body = openai('{"booking": "B-1"}')
    assert answered_calls(body, skip={"call_1"}) == []
    assert [c.id for c in answered_calls(body, skip={"call_9"})] == ["call_1"]
