"""Recordings kept in a store, so every replica of an agent in another process shares them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.exceptions import ConfigError, Divergence
from harness.fixture import load_fixture
from harness.llm import LLMResponse, TextBlock, Usage
from harness.recording import Recording, fetch_records, publish_records, wrap, wrap_tools
from harness.records import LLMRecord, ToolRecord
from harness.store import RedisStore
from harness.tape import RecordMode

FIXTURE = Path(__file__).resolve().parents[2] / "scenarios/booking/fixtures/happy_confirm_button"

pytestmark = pytest.mark.redis


class Model:
    """A model that answers with a fixed text and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def create(self, **request: object) -> LLMResponse:
        self.calls += 1
        return LLMResponse(
            id=f"msg_{self.calls}",
            model=str(request["model"]),
            content=(TextBlock(text=f"answer {self.calls}"),),
            stop_reason="end_turn",
            usage=Usage(input_tokens=3, output_tokens=2),
        )


async def test_two_replicas_replay_one_recording_from_redis(redis_url: str, namespace: str) -> None:
    fixture = load_fixture(FIXTURE)
    llm = fixture.records("llm", LLMRecord)
    tools = fixture.records("tools", ToolRecord)
    store = RedisStore.from_url(redis_url, namespace=namespace)
    await publish_records(store, "happy", llm, tools)
    assert await fetch_records(store, "happy") == (llm, tools)

    settings = {
        "HARNESS_RECORD_MODE": "replay",
        "HARNESS_RECORDING_URL": redis_url,
        "HARNESS_FIXTURE_ID": "happy",
    }
    # Two replicas, each with its own connection, as two processes would have.
    replicas = [Recording.from_settings(settings) for _ in range(2)]
    answers = []
    for recording in replicas:
        assert recording is not None
        assert recording.store is not None
        recording.store = recording.store.with_namespace(namespace)
        client = wrap(Model(), recording)  # no call reaches the model in replay
        first = llm[0].request
        response = await client.create(
            model=str(first["model"]),
            messages=first["messages"],  # type: ignore[arg-type]  # recorded JSON messages
            max_tokens=int(first["max_tokens"]),  # type: ignore[arg-type]  # an int in the JSON
            system=first.get("system"),  # type: ignore[arg-type]  # the recorded prompt text
            tools=first.get("tools"),  # type: ignore[arg-type]  # the recorded tool schemas
        )
        answers.append(response)
        with pytest.raises(Divergence):
            await client.create(model="other", messages=[], max_tokens=1)
        assert len(recording.divergences) == 1
        await recording.store.close()
    assert answers[0] == answers[1] == llm[0].response
    await store.close()


async def test_a_replica_records_into_redis(redis_url: str, namespace: str) -> None:
    recording = Recording.in_store(
        RedisStore.from_url(redis_url, namespace=namespace), "live-chat", RecordMode.RECORD
    )
    model = Model()
    client = wrap(model, recording)
    tools = wrap_tools(recording)
    tools.register(
        "search_slots", lambda date: {"date": date, "slots": ["19:00"]}, side_effect=False
    )
    await client.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    await tools.call("search_slots", {"date": "2026-01-02"})
    await recording.flush()
    assert recording.store is not None
    llm, recorded_tools = await fetch_records(recording.store, "live-chat")
    assert [r.response.text for r in llm] == ["answer 1"]
    assert [(t.name, t.args) for t in recorded_tools] == [("search_slots", {"date": "2026-01-02"})]
    assert model.calls == 1
    await recording.store.close()


def test_settings_name_what_is_missing() -> None:
    assert Recording.from_settings({}) is None
    assert Recording.from_settings({"HARNESS_RECORD_MODE": "passthrough"}) is None
    with pytest.raises(ConfigError, match="HARNESS_RECORDING_URL and HARNESS_FIXTURE_ID"):
        Recording.from_settings({"HARNESS_RECORD_MODE": "replay"})
    with pytest.raises(ConfigError, match="HARNESS_ON_MISS"):
        Recording.from_settings(
            {
                "HARNESS_RECORD_MODE": "replay",
                "HARNESS_RECORDING_URL": "redis://127.0.0.1:6379/15",
                "HARNESS_FIXTURE_ID": "x",
                "HARNESS_ON_MISS": "shrug",
            }
        )
