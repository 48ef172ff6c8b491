"""The simulated user's request, and the seeded stand-in that answers it without a model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.exceptions import LLMError
from harness.llm import AnthropicClient, LLMResponse, sdk_http_module
from harness.providers import STAND_IN
from harness.suites.simulate_step import Simulation
from harness.suites.user_actions import parse_action
from harness.suites.user_model import StandInUser, brief_of, user_request

EMPTY: dict[str, Any] = {
    "new_messages": [],
    "you_can_tap": [],
    "agent_read_your_messages": False,
    "agent_was_typing": False,
}


def simulation(**fields: Any) -> Simulation:
    return Simulation.model_validate({"persona": "Rosa, 68", "goal": "a table", **fields})


def phone(*texts: str, tap: tuple[str, ...] = ()) -> dict[str, Any]:
    shown = {**EMPTY, "new_messages": [{"text": t} for t in texts]}
    shown["you_can_tap"] = [{"id": t.lower(), "title": t} for t in tap]
    return shown


async def act(
    sim: Simulation,
    seed: int,
    shown: dict[str, Any],
    turns: list[tuple[dict[str, Any], LLMResponse]] | None = None,
) -> tuple[dict[str, Any], LLMResponse]:
    response = await StandInUser().create(**user_request(sim, seed, turns or [], shown))
    action = parse_action(response)  # every answer is a well-formed act call
    return action.model_dump(mode="json", exclude_defaults=True), response


def test_the_request_casts_the_model_and_forces_one_act_call() -> None:
    sim = simulation(agenda=["hi", {"media": "a.jpg"}], behaviour={"media": ["a.jpg"]})
    request = user_request(sim, 5, [], phone("Hello!"))
    assert request["tool_choice"] == {"type": "tool", "name": "act"}
    assert [tool["name"] for tool in request["tools"]] == ["act"]
    assert "never say or hint that it is a test" in request["system"]
    brief = json.loads(request["system"].split("<brief>")[1].split("</brief>")[0])
    assert brief == brief_of(sim, 5)
    assert brief["agenda"] == ["hi", {"media": "a.jpg"}]
    assert brief["seed"] == 5
    [message] = request["messages"]
    assert "<phone>" in message["content"][0]["text"]


async def test_earlier_turns_come_back_as_act_calls_answered_by_tool_results() -> None:
    sim = simulation(agenda=["hi", "friday"])
    first_phone = phone()
    _, first = await act(sim, 1, first_phone)
    request = user_request(sim, 1, [(first_phone, first)], phone("Which day?"))
    _user, assistant, latest = request["messages"]
    assert assistant == first.as_message()
    use_id = first.tool_uses[0].id
    assert latest["content"][0] == {"type": "tool_result", "tool_use_id": use_id, "content": "done"}


async def test_the_stand_in_works_through_the_agenda_then_taps_the_positive_button() -> None:
    sim = simulation(agenda=["hi there", "friday at 8pm"])
    turns: list[tuple[dict[str, Any], LLMResponse]] = []
    said = []
    for shown in (phone(), phone("Which day?"), phone("Shall I?", tap=("Change", "Confirm"))):
        action, response = await act(sim, 3, shown, turns)
        turns.append((shown, response))
        said.append(action)
    assert said[0]["messages"] == ["hi there"]
    assert said[0]["covered"] == 1
    assert said[1]["messages"] == ["friday at 8pm"]
    assert said[1]["covered"] == 2
    assert said[2]["action"] == "tap"
    assert said[2]["choice"] == "Confirm"
    done, _ = await act(sim, 3, phone("Booked!"), turns)
    assert done["action"] == "done"
    assert done["outcome"] == "goal_met"


async def test_a_user_with_nothing_left_to_say_and_a_question_pending_gives_up() -> None:
    action, _ = await act(simulation(), 0, phone("Which day would you like?"))
    assert action["action"] == "done"
    assert action["outcome"] == "gave_up"


async def test_the_same_request_gets_the_same_answer_and_seeds_give_other_users() -> None:
    sim = simulation(
        agenda=["I would like to book a table for friday evening please"],
        behaviour={"fragments": 0.5, "typos": 0.5},
    )
    answers = [await act(sim, seed, phone()) for seed in range(12)]
    again = [await act(sim, seed, phone()) for seed in range(12)]
    assert answers == again
    assert len({json.dumps(a[0], sort_keys=True) for a in answers}) > 1
    assert any(len(a[0]["messages"]) > 1 for a in answers)  # some come in fragments
    assert all(a[1].model == "claude-sonnet-4-6" for a in answers)
    assert StandInUser.provider == STAND_IN


async def test_bounds_of_zero_are_never_crossed() -> None:
    sim = simulation(
        agenda=["I would like to book a table for friday evening please", "and a high chair"],
        behaviour={"fragments": 0, "typos": 0, "taps": 0, "silences": {"chance": 0}},
    )
    for seed in range(20):
        action, _ = await act(sim, seed, phone("Hello"))
        assert action["messages"] == ["I would like to book a table for friday evening please"]
        typed, _ = await act(simulation(behaviour={"taps": 0}), seed, phone("?", tap=("Confirm",)))
        assert typed["action"] == "say"
        assert typed["messages"] == ["confirm"]


async def test_a_silence_comes_as_often_as_allowed_and_never_more() -> None:
    sim = simulation(agenda=["a", "b", "c"], behaviour={"silences": {"chance": 1, "length": "3h"}})
    action, first = await act(sim, 0, phone())  # never before the first word
    assert action["action"] == "say"
    action, second = await act(sim, 0, phone("Hi"), [(phone(), first)])
    assert action == {"action": "wait", "duration": "3h", "thought": "going quiet"}
    turns = [(phone(), first), (phone("Hi"), second)]
    action, _ = await act(sim, 0, phone("Hi"), turns)
    assert action["action"] == "say"  # at_most 1: the one silence is spent


async def test_change_of_mind_comes_once_when_asked_to_confirm() -> None:
    sim = simulation(behaviour={"change_mind": {"chance": 1, "say": ["make it 9pm"]}})
    action, first = await act(sim, 0, phone("Shall I?", tap=("Confirm",)))
    assert action["messages"] == ["make it 9pm"]
    action, _ = await act(sim, 0, phone("Shall I?", tap=("Confirm",)), [(phone(), first)])
    assert action["action"] == "tap"


async def test_the_stand_in_refuses_a_request_that_is_not_a_simulated_users() -> None:
    with pytest.raises(LLMError, match="no <brief>"):
        await StandInUser().create(
            model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=10, system="x"
        )


async def test_anthropics_model_gets_the_request_through_the_sdk_and_its_act_call_is_read() -> None:
    # The real user model, with the SDK's own HTTP seam answering in-process: no network.
    http = sdk_http_module()
    sent: list[Any] = []
    act_call = {"action": "say", "messages": ["hola", "una mesa?"], "thought": "greet"}

    def api(request: Any) -> Any:
        sent.append(json.loads(request.content))
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "act", "input": act_call}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 900, "output_tokens": 30},
        }
        return http.Response(200, json=body)

    client = AnthropicClient(
        "test-key", http_client=http.AsyncClient(transport=http.MockTransport(api))
    )
    try:
        sim = simulation(language="es", behaviour={"fragments": 0.5})
        response = await client.create(**user_request(sim, 2, [], phone("Hola!")))
    finally:
        await client.aclose()
    action = parse_action(response)
    assert action.model_dump(mode="json", exclude_defaults=True) == act_call
    [body] = sent
    assert body["tool_choice"] == {"type": "tool", "name": "act"}
    assert body["model"] == "claude-sonnet-4-6"
    assert '"language":"es"' in body["system"]
