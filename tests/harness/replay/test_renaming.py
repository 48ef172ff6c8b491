"""Replayed messages get ids of their own, and the recording is rewritten to match."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.llm import LLMResponse, TextBlock
from harness.llm_recorder import RecordingLLMClient
from harness.records import LLMRecord, ToolRecord
from harness.replay.renaming import rename_in_records, renamed_id, renamed_ids
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder

OLD = "wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQ4RjAwOEFFRjIwNzQzQjM2MkExQwA="
AT = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_new_id_keeps_the_shape_and_depends_on_the_salt() -> None:
    new = renamed_id(OLD, "run-1")
    assert new.startswith("wamid.")
    assert len(new) == len(OLD)
    assert new != OLD
    assert renamed_id(OLD, "run-1") == new
    assert renamed_id(OLD, "run-2") != new
    assert renamed_ids(["", OLD], "run-1") == {OLD: new}


async def _recorded(messages: list[dict[str, str]]) -> LLMRecord:
    answer = LLMResponse(id="msg_1", model="m", content=(TextBlock(text="ok"),))

    class Model:
        async def create(self, **kwargs: object) -> LLMResponse:
            return answer

    client = RecordingLLMClient(Model(), RecordMode.RECORD)
    await client.create(model="m", messages=messages, max_tokens=10)
    [record] = client.records
    return record


async def test_a_model_request_quoting_an_old_id_finds_its_answer_under_the_new_one() -> None:
    record = await _recorded([{"role": "user", "content": f"reply to {OLD}"}])
    ids = renamed_ids([OLD], "run-1")
    [renamed], _ = rename_in_records([record], [], ids)
    assert renamed.key != record.key
    assert OLD not in str(renamed.request)
    replay = RecordingLLMClient(None, RecordMode.REPLAY, records=[renamed])
    answer = await replay.create(
        model="m", messages=[{"role": "user", "content": f"reply to {ids[OLD]}"}], max_tokens=10
    )
    assert answer.text == "ok"


async def test_records_that_quote_no_old_id_stay_as_they_are() -> None:
    record = await _recorded([{"role": "user", "content": "hello"}])
    tool = ToolRecord(key="k", name="lookup", args={"q": "x"}, result=1, recorded_at=AT)
    llm, tools = rename_in_records([record], [tool], {OLD: renamed_id(OLD, "s")})
    assert llm == [record]
    assert tools == [tool]


async def test_a_tool_call_with_an_old_id_in_its_arguments_is_answered_under_the_new_one() -> None:
    recorder = ToolRecorder(RecordMode.RECORD)

    async def react(message_id: str) -> str:
        return f"reacted to {message_id}"

    recorder.register("react", react, side_effect=True)
    await recorder.call("react", {"message_id": OLD})
    ids = renamed_ids([OLD], "run-1")
    _, [renamed] = rename_in_records([], recorder.records, ids)
    replay = ToolRecorder(RecordMode.REPLAY, records=[renamed])
    replay.register("react", react, side_effect=True)
    assert await replay.call("react", {"message_id": ids[OLD]}) == f"reacted to {OLD}"
