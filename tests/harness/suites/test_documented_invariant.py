"""The custom invariant of the how-to guide, run as a user would write it beside their scenarios."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fixture import load_fixture
from harness.suites.invariants import check
from harness.suites.registry import registry
from harness.trace import Conversation, OutboundSend

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "scenarios" / "booking" / "fixtures" / "happy_confirm_button"


@pytest.fixture
def checks_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The guide's ``checks.py`` as a module of a user's project."""
    guide = (ROOT / "docs" / "how-to" / "custom-invariant.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- custom-invariant -->\n```python\n(.*?)```", guide, re.S)
    assert block is not None, "the how-to guide has lost its custom invariant example"
    (tmp_path / "readme_checks.py").write_text(block.group(1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "readme_checks"
    sys.modules.pop("readme_checks", None)
    registry().pop("no_emoji_in_replies", None)  # a name of this test's, not the suite's


def _with_reply(conversation: Conversation, text: str) -> Conversation:
    """The conversation with its last text reply changed to ``text``."""
    events = list(conversation.events)
    last = max(i for i, e in enumerate(events) if isinstance(e, OutboundSend) and e.type == "text")
    events[last] = events[last].model_copy(update={"text": text})
    return Conversation.from_events(events, participants=conversation.participants)


def test_the_readmes_invariant_finds_an_emoji_and_names_its_turn(checks_module: str) -> None:
    importlib.import_module(checks_module)
    recorded = load_fixture(FIXTURE).conversation
    assert recorded is not None
    path = f"{checks_module}:no_emoji_in_replies"
    assert check(recorded, [path]) == []
    [violation] = check(_with_reply(recorded, "Booked! 🎉 See you"), [path])
    assert violation.rule == "no_emoji_in_replies"
    assert violation.message == "the agent wrote 🎉"
    assert violation.turn == len(recorded.turns) - 1
    assert any("Booked! 🎉 See you" in line for line in violation.messages)
    assert check(_with_reply(recorded, "Booked! 🎉"), [{path: {"allowed": "🎉"}}]) == []
