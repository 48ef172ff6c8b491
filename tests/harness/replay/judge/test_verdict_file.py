"""``verdicts.json``: verdicts saved with the exchanges that replay them, and read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.exceptions import FixtureFormatError, FixtureNotFound, SchemaVersionError
from harness.fixture import VERDICTS_FILE
from harness.llm_recorder import RecordingLLMClient
from harness.records import LLMRecord
from harness.replay.judge import Judge, Verdict, load_verdicts, save_verdicts
from harness.trace import InboundMessage
from tests.harness.replay.judge.fakes import GOAL, FakeModel, api_message, conversation, response_of


@pytest.fixture
async def recording() -> tuple[Verdict, list[LLMRecord]]:
    """A verdict recorded live, and the exchange behind it."""
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    judge = Judge(recorder)
    result = await judge.evaluate(conversation(), goal=GOAL)
    return result, judge.records


def test_verdicts_round_trip_through_their_file(
    tmp_path: Path, recording: tuple[Verdict, list[LLMRecord]]
) -> None:
    result, records = recording

    written = save_verdicts(tmp_path, [result], records=records)
    loaded = load_verdicts(tmp_path)

    assert written == tmp_path / VERDICTS_FILE
    assert [p.name for p in tmp_path.iterdir()] == [VERDICTS_FILE]  # no temp file left behind
    assert json.loads(written.read_text("utf-8"))["schema_version"] == 1
    assert loaded.verdicts == (result,)
    assert list(loaded.records) == records


async def test_a_saved_verdict_replays_offline(
    tmp_path: Path, recording: tuple[Verdict, list[LLMRecord]]
) -> None:
    result, records = recording
    loaded = load_verdicts(save_verdicts(tmp_path / "verdicts.json", [result], records=records))

    replayer = RecordingLLMClient(None, "replay", records=loaded.records)

    assert await Judge(replayer).evaluate(conversation(), goal=GOAL) == result.model_copy(
        update={"recorded": True}
    )


async def test_secrets_are_scrubbed_from_the_file_and_it_still_replays(tmp_path: Path) -> None:
    secret = "EAAG-very-secret-access-token"
    original = conversation()
    leaky = original.model_copy(
        update={
            "events": (
                *original.events,
                InboundMessage(
                    at=original.events[-1].at,
                    user="447700900123",
                    wamid="wamid.Z",
                    type="text",
                    text=f"my token is {secret}",
                ),
            )
        }
    )
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    judge = Judge(recorder)
    result = await judge.evaluate(leaky)

    path = save_verdicts(tmp_path / "v.json", [result], records=judge.records, secrets=[secret])
    loaded = load_verdicts(path)

    assert secret not in path.read_text("utf-8")
    replayer = RecordingLLMClient(None, "replay", records=loaded.records)
    assert (await Judge(replayer).evaluate(leaky)).recorded


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (None, FixtureNotFound, "not found"),
        ('{"schema_version": 1,\n "verdicts": [', FixtureFormatError, r"v\.json:2: invalid JSON"),
        ("[]", FixtureFormatError, "expected a JSON object"),
        ('{"schema_version": 2}', SchemaVersionError, "schema version 2 is not supported"),
        ('{"verdicts": []}', SchemaVersionError, "schema version None"),
        ('{"schema_version": 1, "verdicts": [{}]}', FixtureFormatError, r"verdicts\.0\.scenario"),
        ('{"schema_version": 1, "extra": 1}', FixtureFormatError, "extra: Extra inputs"),
    ],
)
def test_a_bad_verdicts_file_is_one_clear_error(
    tmp_path: Path, content: str | None, error: type[Exception], message: str
) -> None:
    path = tmp_path / "v.json"
    if content is not None:
        path.write_text(content, "utf-8")

    with pytest.raises(error, match=message):
        load_verdicts(path)
