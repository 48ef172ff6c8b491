"""Replaying a conversation a simulated user took part in: the scenario is played again.

A scripted chat replays from its event log, the user's messages resent at
their instants. A simulated user's messages depend on what the agent said,
so its fixture is replayed by playing the recorded scenario again, with both
model streams answering from the recording: the agent's (``llm.jsonl``) and
the simulated users' (``users.jsonl``). Nothing changed, every request hits
its recording and the conversation comes out byte for byte as recorded.

With the ``live`` policy a request the recording can't answer goes live:
a changed agent's new replies go to its own model, and the simulated user,
seeing new replies, asks its model anew (the same one that played it when
recorded: the offline stand-in, or Anthropic's API with the usual key), so a
changed agent meets the same simulated user again. With ``pinned``, the
first such request is a divergence, led by its turn.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from pathlib import Path
from typing import Final

from harness.exceptions import ConfigError
from harness.fixture import Fixture
from harness.providers import ANTHROPIC
from harness.recording import Recording
from harness.records import LLMRecord, ToolRecord
from harness.replay.diff import diff_conversations
from harness.replay.replay_result import Policy, ReplayResult, ReplayStatus
from harness.skew import Skew
from harness.suites.runner import Runner
from harness.suites.scenario import Scenario, parse_scenario
from harness.tape import RecordMode
from harness.trace import Conversation

__all__ = [
    "SIMULATED_MEDIA",
    "replay_simulated",
    "simulated_scenario",
    "user_model_of",
]

#: Where a fixture keeps the files its simulated users could send, with the scenario beside them.
SIMULATED_MEDIA: Final = Path("media") / "simulated"


def user_model_of(fixture: Fixture) -> str:
    """Who played the simulated users: `anthropic` if the API answered any, else the stand-in."""
    providers = {record.provider for record in fixture.records("users", LLMRecord)}
    return "anthropic" if ANTHROPIC in providers else "stand-in"


def simulated_scenario(fixture: Fixture) -> Scenario:
    """The scenario the fixture keeps in ``meta.json``, placed where its users' files were kept."""
    text = str(getattr(fixture.meta, "scenario_yaml", "") or "")
    return parse_scenario(text, path=fixture.path / SIMULATED_MEDIA / "scenario.yaml")


async def replay_simulated(
    runner: Runner,
    fixture: Fixture,
    scenario: Scenario,
    *,
    policy: Policy,
    skew: Skew | None,
) -> ReplayResult:
    """Play ``scenario`` again against the recording of both model streams, and compare."""
    if skew is not None and not skew.is_identity:
        raise ConfigError(
            f"{fixture.path}: a simulated user's conversation replays by playing its scenario "
            "again, so it takes no --skew (its user answers what the agent says, not a timetable)"
        )
    started = time.perf_counter()
    recording = Recording(
        mode=RecordMode.REPLAY,
        on_miss="raise" if policy == "pinned" else "live",
        llm_records=fixture.records("llm", LLMRecord),
        tool_records=fixture.records("tools", ToolRecord),
        user_llm_records=fixture.records("users", LLMRecord),
    )
    player = runner
    if policy == "live":
        # A changed agent meets the same simulated user: the model that played it when recorded.
        kind = user_model_of(fixture)
        options = dataclasses.replace(
            runner.options,
            user_model=kind,
            user_model_key=os.environ.get("ANTHROPIC_API_KEY") if kind == ANTHROPIC else None,
        )
        player = copy.copy(runner)
        player.options = options
    seed = int(getattr(fixture.meta, "seed", 0) or 0)
    pinned = scenario if scenario.seed is not None else scenario.model_copy(update={"seed": seed})
    result = await player.run_scenario(pinned, recording=recording)
    conversation = result.conversation
    divergences = tuple(
        _led_by_turn(str(d), at, conversation)
        for d, at in zip(recording.divergences, recording.divergence_times, strict=True)
    )
    changes: tuple[str, ...] = ()
    if fixture.conversation is not None and conversation is not None:
        diff = diff_conversations(fixture.conversation, conversation)
        changes = tuple(
            f"turn {t.index + 1}: {line}"
            for t in diff.turns
            if t.status != "same"
            for line in (t.changes or (t.status,))
        )
    status: ReplayStatus
    error = result.error
    if divergences:
        status, error = "diverged", None
    elif error:
        status = "error"
    elif policy == "pinned" and changes:
        status = "diverged"
    elif result.violations:
        status = "failed"
    elif changes:
        status = "changed"
    else:
        status = "same"
    return ReplayResult(
        fixture=str(fixture.path),
        status=status,
        scenario=fixture.meta.scenario,
        divergences=divergences,
        changes=changes,
        violations=result.violations,
        error=error,
        unused=len(recording.unused()),
        duration_s=round(time.perf_counter() - started, 4),
        conversation=conversation,
        agent_errors=result.agent_errors,
    )


def _led_by_turn(text: str, at: object, conversation: Conversation | None) -> str:
    turn = None
    for candidate in conversation.turns if conversation is not None else ():
        if candidate.start <= at:  # type: ignore[operator]  # at is the run's datetime
            turn = candidate.index
    return text if turn is None else f"turn {turn + 1}: {text}"
