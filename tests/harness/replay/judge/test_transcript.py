"""The transcript the judge reads: what the user lived through, and nothing else."""

from __future__ import annotations

from harness.replay.judge import Judge, render_transcript
from harness.trace import Conversation
from tests.harness.replay.judge.fakes import FakeModel, conversation


def test_the_transcript_leaves_out_channel_mechanics() -> None:
    lines = render_transcript(conversation())

    assert len(lines) == 12
    assert lines[0] == "[turn 1] user Ana: Hi! Can I get a table for 4 this Friday?"
    assert sum(line.startswith("[turn 3] user Ana: yes please") for line in lines) == 1
    assert lines[-1] == (
        "[turn 3] status failed 131047 (Re-engagement message) "
        "(the agent's message 'See you tonight at 19:30!')"
    )


def test_an_empty_conversation_is_said_to_be_empty() -> None:
    request = Judge(FakeModel()).request(Conversation())

    assert "(the conversation is empty)" in request.messages[0]["content"]
