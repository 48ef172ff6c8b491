"""One test's recording, in the harness's fixture format: what it replays, what it writes.

A test that drives the agent itself (through the ``whatsapp`` fixture)
replays the model and tool answers of its fixture directory, or records
them there, as its :data:`~harness.pytest_plugin.modes.Plan` says. The
fixture is the one ``harness record`` writes (``meta.json``, the logs, the
conversation), so ``harness replay`` and ``harness diff`` read it too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from harness.fixture import FixtureMeta, FixtureWriter, load_fixture
from harness.recording import Recording
from harness.records import LLMRecord, ToolRecord
from harness.replay.record import llm_span
from harness.tape import RecordMode
from harness.trace import Conversation

__all__ = ["Cassette", "missing_recording"]


def missing_recording(path: Path) -> str:
    """What a test says when it has no recording to replay."""
    return (
        f"no recording at {path}: record it with pytest --harness-record-mode once "
        "(the default, none, only replays, so nothing reaches the agent's model live)"
    )


class Cassette:
    """The recording of one test: replayed, recorded afresh, or replayed and extended.

    ``plan`` is ``replay``, ``record`` or ``extend`` (a missing recording
    never gets this far). :attr:`recording` goes into the conversation's
    channel setup; :meth:`save` writes the fixture when there is something
    new to keep.
    """

    def __init__(self, path: Path, plan: str, *, name: str, channel: str, agent: str) -> None:
        self.path = path
        self.plan = plan
        self.name = name
        self.channel = channel
        self.agent = agent
        self.old_llm: list[LLMRecord] = []
        self.old_tools: list[ToolRecord] = []
        self.new_llm: list[LLMRecord] = []
        self.new_tools: list[ToolRecord] = []
        if plan in ("replay", "extend"):
            fixture = load_fixture(path)
            self.old_llm = fixture.records("llm", LLMRecord)
            self.old_tools = fixture.records("tools", ToolRecord)
        if plan == "record":
            self.recording = Recording(
                mode=RecordMode.RECORD,
                on_llm_record=self.new_llm.append,
                on_tool_record=self.new_tools.append,
            )
        else:
            self.recording = Recording(
                mode=RecordMode.REPLAY,
                on_miss="live" if plan == "extend" else "raise",
                llm_records=self.old_llm,
                tool_records=self.old_tools,
                on_llm_record=self.new_llm.append,
                on_tool_record=self.new_tools.append,
            )

    def divergences(self) -> list[str]:
        """The requests a replay could not answer, one line each."""
        return [str(error) for error in self.recording.divergences]

    def save(self, conversation: Conversation | None, *, seed: int = 0) -> bool:
        """Write the fixture if this run made something to keep; True when it did."""
        if self.plan == "replay" or (self.plan == "extend" and not self.new_llm + self.new_tools):
            return False
        meta = FixtureMeta.model_validate(
            {
                "scenario": self.name,
                "channel": self.channel,
                "recorded_at": datetime.now(UTC),
                "agent_version": self.agent,
                "seed": seed,
            }
        )
        llm = [*self.old_llm, *self.new_llm]
        with FixtureWriter(self.path, meta, overwrite=True) as writer:
            for index, record in enumerate(llm, start=1):
                writer.append("llm", record)
                carried = index <= len(self.old_llm)  # replayed into this recording
                span = llm_span(record, index, self.name, source="recorded" if carried else "live")
                writer.append("spans", span)
            for tool in [*self.old_tools, *self.new_tools]:
                writer.append("tools", tool)
            if conversation is not None:
                for event in conversation.events:
                    writer.append("events", event)
                writer.write_conversation(conversation)
        return True
