"""The model client's recorder: keys, record/replay/passthrough, divergence diagnostics."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import pytest

from harness.canonical import canonical_json, canonical_key
from harness.clock import VirtualClock
from harness.divergence import llm_differences
from harness.exceptions import ConfigError, Divergence
from harness.inflight import running_on
from harness.llm import LLMResponse, SystemPrompt, TextBlock, ToolUseBlock, Usage
from harness.llm_recorder import VOLATILE_PARAMS, RecordingLLMClient
from harness.records import LLMRecord
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import Event, LLMExchange
from tests.harness.recorder_fakes import START, StepClock

SYSTEM = "You are the booking assistant of Trattoria Roma. Confirm before booking."
BOOK_TOOL = {"name": "book_table", "input_schema": {"type": "object", "properties": {}}}
AVAILABILITY_TOOL = {"name": "check_availability", "input_schema": {"type": "object"}}


class FakeLLM:
    """Answers "answer 1", "answer 2"... and keeps the requests it was sent."""

    def __init__(self, delays: Sequence[int] = ()) -> None:
        self.calls: list[dict[str, Any]] = []
        self.delays = list(delays)

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        self.calls.append({"model": model, "messages": messages, "system": system, **params})
        n = len(self.calls)
        for _ in range(self.delays[n - 1] if n <= len(self.delays) else 0):
            await asyncio.sleep(0)
        return LLMResponse(
            id=f"msg_{n}",
            model=f"{model}-20250514",
            content=(TextBlock(text=f"answer {n}"),),
            stop_reason="end_turn",
            usage=Usage(input_tokens=100 * n, output_tokens=n),
        )


def chat(*texts: str) -> list[dict[str, Any]]:
    """Alternating user and assistant messages."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text}
        for i, text in enumerate(texts)
    ]


def ask(**changes: Any) -> dict[str, Any]:
    """Keyword arguments of a typical request, with ``changes`` applied."""
    kwargs: dict[str, Any] = {
        "model": "claude-test",
        "system": SYSTEM,
        "tools": [BOOK_TOOL, AVAILABILITY_TOOL],
        "messages": chat("a table for 4 on Friday?", "8pm is free. Book it?", "yes please"),
        "max_tokens": 512,
        "temperature": 0.2,
    }
    kwargs.update(changes)
    return kwargs


async def recorded(*requests: dict[str, Any]) -> list[LLMRecord]:
    recorder = RecordingLLMClient(FakeLLM(), "record", clock=StepClock())
    for kwargs in requests:
        await recorder.create(**kwargs)
    return recorder.records


async def divergence(records: list[LLMRecord], **changes: Any) -> Divergence:
    client = RecordingLLMClient(None, "replay", records=records)
    with pytest.raises(Divergence) as caught:
        await client.create(**ask(**changes))
    return caught.value


# --- keys ---------------------------------------------------------------------------------------


def test_canonical_json_sorts_keys_and_is_compact() -> None:
    assert canonical_json({"b": [1, {"d": 1, "c": "é"}], "a": None}) == (
        '{"a":null,"b":[1,{"c":"é","d":1}]}'
    )
    assert canonical_key({"b": 1, "a": 2}) == canonical_key({"a": 2, "b": 1})
    assert len(canonical_key({})) == 64


def test_keys_are_sorted_past_what_orjson_can_write() -> None:
    # An integer over 64 bits takes the standard library's path; keys are sorted there too.
    big = 2**70
    assert canonical_json({"b": big, "a": [{"d": 1, "c": 2}]}) == (
        '{"a":[{"c":2,"d":1}],"b":1180591620717411303424}'
    )
    assert canonical_key({"b": big, "a": 1}) == canonical_key({"a": 1, "b": big})


async def test_key_ignores_dict_order_and_volatile_params() -> None:
    records = await recorded(
        ask(),
        dict(reversed(list(ask(metadata={"user_id": "u1"}, request_id="req_1").items()))),
        ask(messages=[{"content": m["content"], "role": m["role"]} for m in ask()["messages"]]),
    )

    assert "metadata" in VOLATILE_PARAMS
    assert len({record.key for record in records}) == 1
    assert "metadata" not in records[1].request


# What changes from one run to the next without changing what is asked: per-request ids,
# user tags and the SDK's transport options (as the Anthropic SDK names them).
_RUN_TO_RUN = {
    "metadata": ({"user_id": "u1"}, {"user_id": "u2"}),
    "request_id": ("req_1", "req_2"),
    "timeout": (10.0, 600),
    "extra_headers": ({"X-Trace": "a"}, {"X-Trace": "b"}),
    "extra_query": ({"beta": "1"}, {"beta": "2"}),
    "idempotency_key": ("k-1", "k-2"),
}


@pytest.mark.parametrize("param", sorted(_RUN_TO_RUN))
async def test_a_param_that_changes_from_run_to_run_does_not_change_the_key(param: str) -> None:
    first, second = _RUN_TO_RUN[param]
    records = await recorded(ask(), ask(**{param: first}), ask(**{param: second}))
    assert len({record.key for record in records}) == 1
    assert all(param not in record.request for record in records)


async def test_a_recording_made_with_one_timeout_replays_with_another() -> None:
    records = await recorded(ask(timeout=10.0, extra_headers={"X-Trace": "a"}))
    replayer = RecordingLLMClient(None, "replay", records=records)
    answer = await replayer.create(**ask(timeout=30.0, extra_headers={"X-Trace": "b"}))
    assert answer.content == (TextBlock(text="answer 1"),)


async def test_key_changes_with_anything_that_is_asked() -> None:
    records = await recorded(ask(), ask(temperature=0.3), ask(top_k=3), ask(system=SYSTEM + "!"))

    assert len({record.key for record in records}) == 4


async def test_extra_volatile_params_are_left_out() -> None:
    recorder = RecordingLLMClient(FakeLLM(), volatile=["trace_id"])
    await recorder.create(**ask(trace_id="a"))
    await recorder.create(**ask(trace_id="b"))

    first, second = recorder.records
    assert first.key == second.key
    assert "trace_id" not in first.request


async def test_response_blocks_key_like_their_dict_form() -> None:
    blocks = (TextBlock(text="Checking."), ToolUseBlock(id="t1", name="f", input={"x": 1}))
    as_models = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": blocks}]
    as_dicts = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [block.model_dump() for block in blocks]},
    ]

    first, second = await recorded(ask(messages=as_models), ask(messages=as_dicts))

    assert first.key == second.key


async def test_record_keeps_a_snapshot_of_the_request() -> None:
    messages = chat("hi")
    recorder = RecordingLLMClient(FakeLLM())
    await recorder.create(**ask(messages=messages))
    messages.append({"role": "assistant", "content": "changed later"})
    messages[0]["content"] = "edited later"

    assert recorder.records[0].request["messages"] == [{"role": "user", "content": "hi"}]


# --- record and replay --------------------------------------------------------------------------


async def test_record_keeps_model_tokens_and_time() -> None:
    inner = FakeLLM()
    recorder = RecordingLLMClient(inner, RecordMode.RECORD, clock=StepClock())

    response = await recorder.create(**ask())

    (record,) = recorder.records
    assert response.text == "answer 1"
    assert record.response == response
    assert (record.model, record.input_tokens, record.output_tokens) == (
        "claude-test-20250514",
        100,
        1,
    )
    assert record.recorded_at == START + timedelta(seconds=1)
    assert record.request["temperature"] == 0.2
    assert inner.calls[0]["temperature"] == 0.2
    assert LLMRecord.model_validate_json(record.model_dump_json()) == record


async def test_volatile_params_still_reach_the_inner_client() -> None:
    inner = FakeLLM()
    await RecordingLLMClient(inner).create(**ask(metadata={"user_id": "u1"}))

    assert inner.calls[0]["metadata"] == {"user_id": "u1"}


async def test_on_record_sees_each_record_as_it_is_made() -> None:
    made: list[LLMRecord] = []
    recorder = RecordingLLMClient(FakeLLM(), on_record=made.append)

    await recorder.create(**ask())
    assert [r.response.text for r in made] == ["answer 1"]
    await recorder.create(**ask(temperature=0.5))

    assert made == recorder.records


async def test_records_replay_after_a_json_lines_round_trip() -> None:
    lines = [record.model_dump_json() for record in await recorded(ask(), ask(top_k=2))]
    client = RecordingLLMClient(
        None, "replay", records=[LLMRecord.model_validate_json(line) for line in lines]
    )

    assert (await client.create(**ask(top_k=2))).text == "answer 2"
    assert (await client.create(**ask())).text == "answer 1"


async def test_a_request_asked_twice_gets_its_two_answers_in_order() -> None:
    records = await recorded(ask(), ask())
    client = RecordingLLMClient(None, "replay", records=records)

    first = await client.create(**ask())
    second = await client.create(**ask())

    assert (first.text, second.text) == ("answer 1", "answer 2")
    with pytest.raises(Divergence) as caught:
        await client.create(**ask())
    assert caught.value.differences == ("asked 3 times, recorded 2",)
    assert caught.value.key == records[0].key


async def test_a_replayed_answer_takes_the_recorded_time_on_the_runs_clock() -> None:
    slow, quick = await recorded(ask(), ask(top_k=2))
    records = [
        slow.model_copy(update={"latency_ms": 1500.0}),
        quick.model_copy(update={"latency_ms": 0.0}),
    ]
    clock = VirtualClock(START, auto_advance=True)
    client = RecordingLLMClient(None, "replay", records=records, clock=clock)

    assert (await client.create(**ask(top_k=2))).text == "answer 2"
    assert clock.now() == START  # no time recorded, none taken
    assert (await client.create(**ask())).text == "answer 1"
    assert clock.now() == START + timedelta(seconds=1.5)


async def test_replay_never_calls_the_inner_client() -> None:
    records = await recorded(ask())
    inner = FakeLLM()
    client = RecordingLLMClient(inner, "replay", records=records)

    assert (await client.create(**ask())).text == "answer 1"
    assert inner.calls == []


async def test_on_miss_live_calls_through_and_records() -> None:
    records = await recorded(ask())
    inner = FakeLLM()
    client = RecordingLLMClient(inner, "replay", records=records, on_miss="live")

    replayed = await client.create(**ask())
    live = await client.create(**ask(temperature=0.9))

    assert replayed.text == "answer 1"
    assert live.text == "answer 1"  # the fresh inner client's first answer
    assert len(inner.calls) == 1
    assert [r.request.get("temperature") for r in client.new_records] == [0.9]
    assert [r.response for r in client.records] == [records[0].response, live]
    assert client.unused() == []


async def test_unused_recordings_are_reported() -> None:
    records = await recorded(ask(), ask(messages=chat("cancel my booking")))
    client = RecordingLLMClient(None, "replay", records=records)
    await client.create(**ask())

    assert client.unused() == [records[1]]
    assert not client.all_played
    report = client.report()
    assert "2 recorded LLM requests loaded, 1 served, 1 unused" in report
    assert "unused #2" in report
    assert "cancel my booking" in report

    await client.create(**ask(messages=chat("cancel my booking")))
    assert client.all_played


async def test_passthrough_records_nothing_but_feeds_the_sink() -> None:
    inner = FakeLLM()
    events: list[Event] = []
    client = RecordingLLMClient(inner, "passthrough", sink=events.append)

    await client.create(**ask())
    await client.create(**ask())

    assert len(inner.calls) == 2
    assert client.records == []
    assert [e.source for e in events if isinstance(e, LLMExchange)] == ["live", "live"]


async def test_sink_gets_one_exchange_per_call() -> None:
    events: list[Event] = []
    clock = StepClock()
    recorder = RecordingLLMClient(FakeLLM(), sink=events.append, clock=clock)
    await recorder.create(**ask())
    client = RecordingLLMClient(
        None, "replay", records=recorder.records, sink=events.append, clock=clock
    )
    await client.create(**ask())

    live, replayed = events
    assert isinstance(live, LLMExchange)
    assert isinstance(replayed, LLMExchange)
    assert live.key == replayed.key == recorder.records[0].key
    assert (live.source, replayed.source) == ("live", "recorded")
    assert (replayed.model, replayed.input_tokens, replayed.output_tokens) == (
        "claude-test-20250514",
        100,
        1,
    )
    assert replayed.stop_reason == "end_turn"
    assert live.at == START + timedelta(seconds=1)
    assert replayed.at == START + timedelta(seconds=2)


async def test_concurrent_recording_keeps_call_order() -> None:
    # The first call finishes last; records still follow the order of the calls.
    recorder = RecordingLLMClient(FakeLLM(delays=[5, 0, 2]))

    await asyncio.gather(*(recorder.create(**ask(messages=chat(f"q{i}"))) for i in range(3)))

    assert [r.request["messages"] for r in recorder.records] == [chat(f"q{i}") for i in range(3)]


async def test_concurrent_replay_serves_each_answer_once() -> None:
    records = await recorded(ask(), ask(), ask(messages=chat("other")))
    client = RecordingLLMClient(None, "replay", records=records)

    answers = await asyncio.gather(
        client.create(**ask()),
        client.create(**ask(messages=chat("other"))),
        client.create(**ask()),
    )

    assert sorted(a.text for a in answers) == ["answer 1", "answer 2", "answer 3"]
    assert answers[1].text == "answer 3"
    assert client.all_played


# --- divergence ---------------------------------------------------------------------------------


async def test_nothing_recorded_says_so() -> None:
    error = await divergence([])

    assert error.differences == ("nothing recorded: this recorder holds no LLM requests",)
    assert str(error).startswith("replay diverged: nothing recorded")


async def test_divergence_names_the_system_prompt() -> None:
    error = await divergence(await recorded(ask()), system=SYSTEM.replace("Roma", "Milano"))

    (difference,) = error.differences
    assert difference.startswith("system prompt differs (recorded: '")
    assert "Roma" in difference
    assert "Milano" in difference


def test_an_openai_request_s_system_message_is_its_system_prompt() -> None:
    def chat_request(system: str, *said: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": system}]
        messages += [{"role": "user", "content": text} for text in said]
        return {"model": "gpt-4o-mini", "messages": messages}

    recorded = chat_request("You book tables in Roma.", "hi", "a table for 4?")
    assert llm_differences(
        recorded, chat_request("You book tables in Milano.", "hi", "a table for 4?")
    ) == ["system prompt differs (recorded: '…k tables in Roma.'; now: '…k tables in Milano.')"]
    # Messages keep the index they have in the request.
    assert llm_differences(recorded, chat_request("You book tables in Roma.", "hi", "for 5?")) == [
        "messages[2] differs (recorded: 'user: a table for 4?'; now: 'user: for 5?')"
    ]
    developer = {**recorded, "messages": [{**recorded["messages"][0], "role": "developer"}]}
    assert llm_differences(
        developer, {**developer, "messages": [{"role": "developer", "content": "x"}]}
    )[0].startswith("system prompt differs")


async def test_divergence_names_added_and_removed_tools() -> None:
    error = await divergence(
        await recorded(ask()), tools=[BOOK_TOOL, {"name": "cancel_booking", "input_schema": {}}]
    )

    assert error.differences == (
        "tools differ (added: cancel_booking; removed: check_availability)",
    )


async def test_divergence_names_a_changed_tool() -> None:
    changed = {**BOOK_TOOL, "description": "Book a table."}
    error = await divergence(await recorded(ask()), tools=[changed, AVAILABILITY_TOOL])

    assert error.differences == ("tools differ (changed: book_table)",)


async def test_divergence_names_the_message_that_differs() -> None:
    messages = chat("a table for 4 on Friday?", "8pm is free. Book it?", "no, make it 9pm")
    error = await divergence(await recorded(ask()), messages=messages)

    assert error.differences == (
        "messages[2] differs (recorded: 'user: yes please'; now: 'user: no, make it 9pm')",
    )


async def test_divergence_counts_messages() -> None:
    messages = [*ask()["messages"], {"role": "assistant", "content": "Booked!"}]
    error = await divergence(await recorded(ask()), messages=messages)

    assert error.differences == ("messages: 4 now, 3 recorded",)


async def test_divergence_names_params() -> None:
    error = await divergence(
        await recorded(ask(top_k=5)), temperature=0.7, max_tokens=1024, stop_sequences=["END"]
    )

    assert error.differences == (
        "param max_tokens: 512 -> 1024",
        'param stop_sequences: (absent) -> ["END"]',
        "param temperature: 0.2 -> 0.7",
        "param top_k: 5 -> (absent)",
    )


async def test_divergence_names_the_model() -> None:
    error = await divergence(await recorded(ask()), model="claude-other")

    assert error.differences == ("model: claude-test -> claude-other",)


async def test_divergence_previews_long_texts_near_the_change() -> None:
    long = "Please remember that my daughter is allergic to peanuts and shellfish. " * 3
    records = await recorded(ask(messages=chat(long + "Friday")))
    error = await divergence(records, messages=chat(long + "Saturday"))

    (difference,) = error.differences
    assert "…" in difference
    assert "Friday" in difference
    assert "Saturday" in difference
    assert len(difference) < 200


async def test_divergence_compares_with_the_nearest_recorded_request() -> None:
    turn1 = ask(messages=chat("a table for 4 on Friday?"))
    turn2 = ask(messages=chat("a table for 4 on Friday?", "8pm is free. Book it?", "yes"))
    turn3 = ask(messages=chat("a table for 4 on Friday?", "8pm?", "yes", "Booked.", "thanks"))
    records = await recorded(turn1, turn2, turn3)
    changed = chat("a table for 4 on Friday?", "8pm is free. Book it?", "yes!")

    error = await divergence(records, messages=changed, temperature=0.5)

    assert error.differences == (
        "messages[2] differs (recorded: 'user: yes'; now: 'user: yes!')",
        "param temperature: 0.2 -> 0.5",
    )
    assert "against recorded LLM request #2 of 3, unused" in str(error)


async def test_divergence_message_is_one_line_led_by_what_differs() -> None:
    changes: dict[str, Any] = {
        "system": "multi\nline",
        "temperature": 0.9,
        "messages": chat("x\ny"),
    }
    error = await divergence(await recorded(ask()), **changes)

    message = str(error)
    assert "\n" not in message
    assert message.startswith("replay diverged: system prompt differs")
    assert error.key == canonical_key(ask(**changes))


# --- configuration ------------------------------------------------------------------------------


def test_mode_parsing_lists_the_valid_modes() -> None:
    assert RecordMode.parse("replay") is RecordMode.REPLAY
    assert RecordMode.parse(RecordMode.RECORD) is RecordMode.RECORD
    with pytest.raises(ConfigError, match="valid modes: record, replay, passthrough"):
        RecordMode.parse("rewind")


def test_constructors_validate_mode_and_on_miss() -> None:
    with pytest.raises(ConfigError, match="'playback'"):
        RecordingLLMClient(FakeLLM(), "playback")
    with pytest.raises(ConfigError, match="valid values: raise, live"):
        RecordingLLMClient(FakeLLM(), on_miss="ignore")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(ConfigError, match="valid modes"):
        ToolRecorder("REPLAY")


def test_an_inner_client_is_needed_unless_replay_only() -> None:
    RecordingLLMClient(None, "replay")
    with pytest.raises(ConfigError, match="needs an inner client"):
        RecordingLLMClient(None, "replay", records=[], on_miss="live")
    with pytest.raises(ConfigError, match="needs an inner client"):
        RecordingLLMClient(None, "record")
    with pytest.raises(ConfigError, match="needs an inner client"):
        RecordingLLMClient(None, "passthrough")


async def test_a_replayed_answer_takes_the_time_it_took_on_the_recordings_clock() -> None:
    held, paced = await recorded(ask(), ask(top_k=2))
    records = [
        # Recorded in-process: the model took 1.5 real seconds while virtual time stood still.
        held.model_copy(update={"latency_ms": 1500.0, "waited_s": 0.0}),
        # Recorded where virtual time follows real time (harness serve).
        paced.model_copy(update={"latency_ms": 1500.0, "waited_s": 1.5}),
    ]
    clock = VirtualClock(START, auto_advance=True)
    client = RecordingLLMClient(None, "replay", records=records, clock=clock)

    assert (await client.create(**ask())).text == "answer 1"
    assert clock.now() == START
    assert (await client.create(**ask(top_k=2))).text == "answer 2"
    assert clock.now() == START + timedelta(seconds=1.5)


async def test_a_recording_keeps_how_long_the_call_took_on_the_runs_clock() -> None:
    class Slow(FakeLLM):
        async def create(self, **kwargs: Any) -> LLMResponse:
            await asyncio.sleep(0.05)  # real time, as a model over the network takes
            return await super().create(**kwargs)

    clock = VirtualClock(START, auto_advance=True)
    client = RecordingLLMClient(Slow(), "record", clock=clock)
    with running_on(clock):
        await client.create(**ask())
    [record] = client.records
    assert record.latency_ms is not None
    assert record.latency_ms >= 50
    assert record.waited_s == 0  # the run's clock was held while the model answered


def test_wrap_refuses_a_providers_own_sdk_client_saying_what_to_wrap() -> None:
    import anthropic
    import openai

    from harness.recording import wrap

    sdk = anthropic.AsyncAnthropic(api_key="test-key")
    given: Any  # what an untyped agent hands over
    for given in (sdk, sdk.messages):
        with pytest.raises(ConfigError, match=r"AnthropicClient\(client=your_client\)"):
            wrap(given)
    given = openai.AsyncOpenAI(api_key="test-key")
    with pytest.raises(ConfigError, match=r"not openai's AsyncOpenAI"):
        wrap(given)


# --- tools that ran for real --------------------------------------------------------------------


def booked(booking: str) -> dict[str, Any]:
    """A request carrying book_table's result back to the model."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "book_table", "input": {"party": 4}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": booking}
    messages = [
        {"role": "user", "content": "a table for 4 on Friday"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    return ask(messages=messages)


async def test_a_tool_the_recording_cannot_answer_may_answer_differently() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records, clock=StepClock())
    client.answered_tools = frozenset()  # the recording holds no tool's answers
    response = await client.create(**booked("BK-0006"))
    assert response == records[0].response
    assert [line for _, line in client.set_aside_notes] == [
        "book_table answered BK-0006 where the recording has BK-0004: it ran for real "
        "(the recording holds no answer for it), and the model calls were matched without "
        "its result"
    ]
    assert client.unused() == []


async def test_the_same_result_again_needs_no_note() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records)
    client.answered_tools = frozenset()
    await client.create(**booked("BK-0004"))
    assert client.set_aside_notes == []


async def test_a_result_the_recording_answers_must_match() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records)
    client.answered_tools = frozenset({"book_table"})  # replayed: its result can't differ
    with pytest.raises(Divergence, match="BK-0006"):
        await client.create(**booked("BK-0006"))


async def test_without_knowing_which_tools_are_answered_every_request_must_match() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records)
    with pytest.raises(Divergence):
        await client.create(**booked("BK-0006"))


async def test_set_aside_results_do_not_excuse_anything_else() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records)
    client.answered_tools = frozenset()
    changed = booked("BK-0006")
    changed["system"] = "You book tables. Never confirm."
    with pytest.raises(Divergence, match="system"):
        await client.create(**changed)


async def test_set_aside_matches_are_served_in_recorded_order() -> None:
    first, second = booked("BK-0004"), booked("BK-0004")
    records = await recorded(first, second)
    client = RecordingLLMClient(None, "replay", records=records)
    client.answered_tools = frozenset()
    answers = [await client.create(**booked(f"BK-000{n}")) for n in (6, 7)]
    assert [a.id for a in answers] == [r.response.id for r in records]
    with pytest.raises(Divergence):  # both served: a third is one too many
        await client.create(**booked("BK-0008"))


async def test_a_divergence_names_what_the_agent_changed_not_what_the_world_answered() -> None:
    records = await recorded(booked("BK-0004"))
    client = RecordingLLMClient(None, "replay", records=records)
    client.answered_tools = frozenset()
    changed = booked("BK-0006")
    changed["messages"] = [*changed["messages"], {"role": "user", "content": "and a drink"}]
    with pytest.raises(Divergence) as caught:
        await client.create(**changed)
    assert "BK-000" not in str(caught.value)
    assert "messages: 4 now, 3 recorded" in str(caught.value)
