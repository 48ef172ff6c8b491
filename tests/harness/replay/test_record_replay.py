"""Recording a bundled scenario into a fixture, and replaying fixtures against changed agents.

A recording is checked file by file (meta, the four logs, the conversation,
media, no secrets), then replayed. Replays of the committed fixtures check
the plan (redeliveries, bursts), a candidate agent that diverges under the
pinned policy and fails an invariant under the live one, and prompt
overrides, which must never outlive the replay that made them.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import shutil
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from agents.booking.prompts import DEFAULT_PROMPTS, packaged_prompt
from channels.whatsapp.config import SimulatorConfig
from harness.channel import AgentEnvironment
from harness.clock import DEFAULT_START
from harness.fixture import SCHEMA_VERSION, Fixture, load_fixture, read_jsonl
from harness.prompts import overridden, override
from harness.records import LLMRecord, ToolRecord
from harness.replay.playback import plan_from_fixture, replay_fixture
from harness.replay.record import record_scenario
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario, parse_scenario
from harness.suites.target import DEFAULT_TARGET
from harness.trace import Conversation, InboundMessage

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "booking"
FIXTURES = SCENARIOS / "fixtures"
HERE = "tests.harness.replay.test_record_replay"
NO_DEDUPE = {"BOOKING_REGRESSIONS": "no_dedupe"}
PIRATE = "You are a pirate. Answer every question with 'arr'."


async def _record(
    tmp_path: Path, scenario: str, options: RunOptions | None = None
) -> tuple[Path, ScenarioResult]:
    out = tmp_path / scenario
    runner = Runner(options or RunOptions())
    result = await record_scenario(runner, load_scenario(SCENARIOS / f"{scenario}.yaml"), out)
    return out, result


@pytest.fixture
async def happy(tmp_path: Path) -> Path:
    """A fresh recording of the happy path (a proposal, a Confirm tap, a booking)."""
    out, result = await _record(tmp_path, "happy_confirm_button")
    assert result.status == "passed", result.violations
    return out


def _committed(name: str) -> Fixture:
    return load_fixture(FIXTURES / name)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [line.value for line in read_jsonl(path)]


# -- what a recording holds -----------------------------------------------------------


async def test_meta_names_the_scenario_channel_model_and_keeps_the_scenario(happy: Path) -> None:
    meta = json.loads((happy / "meta.json").read_text(encoding="utf-8"))
    scenario = load_scenario(SCENARIOS / "happy_confirm_button.yaml")
    assert meta["schema_version"] == SCHEMA_VERSION == 1
    assert meta["scenario"] == scenario.name == "happy booking with the Confirm button"
    assert meta["channel"] == "whatsapp"
    assert meta["agent_version"] == DEFAULT_TARGET
    assert meta["seed"] == 0
    # The model is the one the agent actually asked for, as the LLM log shows.
    models = {record["model"] for record in _lines(happy / "llm.jsonl")}
    assert models == {meta["model"]}
    assert meta["model"].startswith("claude-")
    # ... and who answered it: the offline stand-in, not the model it names.
    providers = {record["provider"] for record in _lines(happy / "llm.jsonl")}
    assert providers == {meta["provider"]} == {"offline-stand-in"}
    # The scenario itself travels with the fixture, so a replay needs no YAML file.
    again = parse_scenario(meta["scenario_yaml"])
    assert again.to_yaml() == scenario.to_yaml()
    assert [(r.name, r.params) for r in again.invariants] == [
        (r.name, r.params) for r in scenario.invariants
    ]


async def test_meta_keeps_the_scenarios_own_seed_and_faults(tmp_path: Path) -> None:
    out, result = await _record(tmp_path, "flaky_network_happy_path")
    assert result.status == "passed", result.violations
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert (meta["seed"], meta["faults"]) == (8, "flaky")
    # The flaky channel's duplicates and late webhooks replay from the recording.
    replayed = await replay_fixture(Runner(RunOptions()), load_fixture(out))
    assert (replayed.status, replayed.unused, replayed.changes) == ("same", 0, ())


async def test_events_log_the_channel_on_the_virtual_clock(happy: Path) -> None:
    events = _lines(happy / "events.jsonl")
    kinds = [e["kind"] for e in events]
    assert {"inbound", "send", "status", "delivery"} <= set(kinds)
    inbound = [e for e in events if e["kind"] == "inbound"]
    assert [(e["type"], e["text"]) for e in inbound] == [
        ("text", "Hi! Do you have a table on Friday at 8pm?"),
        ("interactive", "Confirm"),
    ]
    # Each inbound names the delivery that carried it, and that delivery is logged.
    deliveries = {e["delivery"] for e in events if e["kind"] == "delivery"}
    assert {e["delivery"] for e in inbound} <= deliveries
    statuses = [e["status"] for e in events if e["kind"] == "status"]
    assert {"sent", "delivered", "read"} <= set(statuses)
    # Virtual time: the conversation starts at the clock's fixed instant and takes seconds.
    fixture = load_fixture(happy)
    times = [e.at for e in fixture.events]
    assert times[0] == DEFAULT_START
    assert times == sorted(times)
    assert times[-1] - times[0] < timedelta(minutes=1)
    assert fixture.conversation is not None
    assert fixture.events == fixture.conversation.events


async def test_events_are_on_disk_as_they_happen_so_a_killed_recording_keeps_them(
    tmp_path: Path,
) -> None:
    out = tmp_path / "cut"
    on_disk_at_first_model_call: list[list[dict[str, Any]]] = []

    def look(record: LLMRecord | ToolRecord) -> None:
        if not on_disk_at_first_model_call:
            on_disk_at_first_model_call.append(_lines(out / "events.jsonl"))

    scenario = load_scenario(SCENARIOS / "happy_confirm_button.yaml")
    result = await record_scenario(Runner(RunOptions()), scenario, out, progress=look)
    [seen] = on_disk_at_first_model_call
    # The user's first message was in the file before the model had answered it.
    assert [e["text"] for e in seen if e["kind"] == "inbound"] == [
        "Hi! Do you have a table on Friday at 8pm?"
    ]
    fixture = load_fixture(out)
    assert fixture.conversation is not None
    assert result.conversation is not None
    assert fixture.events == fixture.conversation.events == result.conversation.events


async def test_llm_log_holds_each_exchange_with_its_tokens_and_model(happy: Path) -> None:
    fixture = load_fixture(happy)
    records = fixture.records("llm", LLMRecord)
    assert len(records) >= 2
    for record in records:
        assert record.model == fixture.meta.model
        assert record.input_tokens > 0
        assert record.output_tokens > 0
        assert re.fullmatch(r"[0-9a-f]{64}", record.key)
        assert record.request["model"] == record.model
    assert fixture.conversation is not None
    exchanges = fixture.conversation.llm_exchanges()
    assert [e.key for e in exchanges] == [r.key for r in records]
    assert [e.input_tokens for e in exchanges] == [r.input_tokens for r in records]


async def test_tools_log_marks_the_side_effecting_tools(happy: Path) -> None:
    records = load_fixture(happy).records("tools", ToolRecord)
    assert [(r.name, r.side_effect) for r in records] == [
        ("search_slots", False),
        ("book_appointment", True),
    ]
    booked = records[1]
    assert booked.args == {"customer": "5511987654321", "date": "2026-01-02", "slot": "20:00"}
    assert booked.error is None
    assert "BK-0001" in json.dumps(booked.result)


async def test_spans_use_genai_attribute_names(happy: Path) -> None:
    spans = _lines(happy / "spans.jsonl")
    records = load_fixture(happy).records("llm", LLMRecord)
    assert len(spans) == len(records)
    for span, record in zip(spans, records, strict=True):
        attributes = span["attributes"]
        assert attributes["gen_ai.operation.name"] == "chat"
        # The bundled agent answers with its offline stand-in: no span says Anthropic did.
        assert attributes["gen_ai.provider.name"] == "offline-stand-in"
        assert attributes["gen_ai.system"] == "offline-stand-in"
        assert attributes["harness.llm.provider"] == "the offline stand-in (no model)"
        assert attributes["harness.llm.source"] == "live"
        assert attributes["gen_ai.request.model"] == record.model
        assert attributes["gen_ai.usage.input_tokens"] == record.input_tokens
        assert attributes["gen_ai.usage.output_tokens"] == record.output_tokens
        assert attributes["harness.request.key"] == record.key
        assert re.fullmatch(r"[0-9a-f]{32}", span["trace_id"])
        assert re.fullmatch(r"[0-9a-f]{16}", span["span_id"])
        assert span["kind"] == "CLIENT"
    assert len({span["span_id"] for span in spans}) == len(spans)


async def test_conversation_json_is_the_assembled_trace(happy: Path) -> None:
    conversation = Conversation.model_validate_json(
        (happy / "conversation.json").read_text(encoding="utf-8")
    )
    assert [t.texts for t in conversation.turns] == [
        ["Hi! Do you have a table on Friday at 8pm?"],
        ["Confirm"],
    ]
    assert [t.name for t in conversation.turns[1].tool_calls] == ["book_appointment"]
    assert [p.id for p in conversation.participants] == ["5511987654321"]
    assert "BK-0001" in (conversation.turns[1].replies[0].text or "")


async def test_media_bytes_land_under_media_with_relative_paths(tmp_path: Path) -> None:
    out, result = await _record(tmp_path, "media_answered_politely")
    assert result.status == "passed", result.violations
    index = json.loads((out / "media" / "index.json").read_text(encoding="utf-8"))
    inbound = {e.wamid: e for e in load_fixture(out).events if isinstance(e, InboundMessage)}
    by_type = {inbound[wamid].type: path for wamid, path in index.items()}
    assert set(by_type) == {"image", "sticker"}  # the location carries no file
    for wamid, stored in index.items():
        rel = PurePosixPath(stored)
        assert not rel.is_absolute()
        assert "\\" not in stored
        assert rel.parts[0] == "media"
        assert ".." not in rel.parts
        data = (out / stored).read_bytes()
        # The stored bytes are the very file the user sent: Meta's sha256 of them matches.
        kind = inbound[wamid].type
        media = inbound[wamid].body[kind]
        assert isinstance(media, dict)
        assert base64.b64encode(hashlib.sha256(data).digest()).decode() == media["sha256"]
    assert inbound[next(w for w in index if inbound[w].type == "image")].text == (
        "is this table free?"
    )
    replayed = await replay_fixture(Runner(RunOptions()), load_fixture(out))
    assert (replayed.status, replayed.unused) == ("same", 0)


@pytest.mark.parametrize(
    "secrets",
    [
        pytest.param({}, id="simulator-defaults"),
        pytest.param(
            {
                "app_secret": "appsecret-7f3a91c2e8",
                "access_token": "EAAGm0PX4ZCpsBAKaccess91c2",
                "verify_token": "verify-token-5d2b77e0",
            },
            id="given-on-the-command-line",
        ),
    ],
)
async def test_no_secret_lands_in_any_file(tmp_path: Path, secrets: dict[str, str]) -> None:
    out, result = await _record(
        tmp_path, "happy_confirm_button", RunOptions(channel_options=secrets)
    )
    # The run passed, so the agent verified signatures and sent with these very secrets.
    assert result.status == "passed", result.violations
    config = SimulatorConfig.model_validate(secrets)
    values = [config.app_secret, config.access_token, config.verify_token]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"meta.json", "events.jsonl", "llm.jsonl", "tools.jsonl"}
    for path in files:
        data = path.read_bytes()
        for value in values:
            assert value.encode() not in data, f"{value!r} leaked into {path.name}"


async def test_a_fresh_recording_replays_the_same_with_every_record_used(happy: Path) -> None:
    result = await replay_fixture(Runner(RunOptions()), load_fixture(happy))
    assert result.status == "same"
    assert (result.unused, result.divergences, result.changes) == (0, (), ())
    assert result.violations == ()
    assert result.error is None


# -- the replay plan ---------------------------------------------------------------


def test_the_plan_redelivers_a_message_meta_sent_twice() -> None:
    fixture = _committed("redelivered_confirm_books_once")
    actions = plan_from_fixture(fixture)
    assert [a.kind for a in actions] == ["say", "tap", "redeliver"]
    say, tap, again = actions
    assert tap.choice == "confirm"
    # The copy is of the user's second message: the very Confirm tap, by wamid.
    assert (again.index, again.wamid) == (2, tap.wamid)
    assert (say.starts_turn, tap.starts_turn, again.starts_turn) == (True, True, False)
    copies = [e for e in fixture.events if isinstance(e, InboundMessage) and e.duplicate]
    assert [c.at for c in copies] == [again.at]


async def test_a_replayed_redelivery_reaches_the_agent_and_books_once() -> None:
    result = await replay_fixture(
        Runner(RunOptions()), _committed("redelivered_confirm_books_once")
    )
    assert result.status == "same"
    assert result.conversation is not None
    copies = result.conversation.inbound(duplicates=True)
    assert [m.duplicate for m in copies] == [False, False, True]
    assert copies[2].wamid == copies[1].wamid
    assert len(result.conversation.tool_calls("book_appointment")) == 1


def test_the_plan_keeps_a_bursts_timing() -> None:
    fixture = _committed("burst_answered_once")
    actions = plan_from_fixture(fixture)
    recorded = [e.at for e in fixture.events if isinstance(e, InboundMessage)]
    assert [a.at for a in actions] == recorded
    assert [a.kind for a in actions] == ["say", "say", "say", "tap"]
    assert [a.starts_turn for a in actions] == [True, False, False, True]
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(actions)]
    assert gaps[:2] == [timedelta(seconds=1), timedelta(seconds=1)]  # the scenario's `gap: 1s`
    assert [a.text for a in actions[:3]] == [
        "hi",
        "can I get a table tomorrow",
        "around 7pm? there will be 4 of us",
    ]


# -- a changed agent: pinned diverges, live fails the invariant -----------------------


async def test_a_changed_agent_diverges_under_the_pinned_policy_and_says_where() -> None:
    result = await replay_fixture(
        Runner(RunOptions()), _committed("redelivered_confirm_books_once"), agent_settings=NO_DEDUPE
    )
    assert result.status == "diverged"
    [divergence] = result.divergences
    # Which parts of the model request changed, against the nearest recorded one.
    assert "system prompt differs" in divergence
    assert "messages: 11 now, 9 recorded" in divergence
    assert "against recorded LLM request #5 of 5" in divergence
    assert result.violations == ()  # the agent's reasoning stopped at the divergence


async def test_a_divergence_names_the_turn_it_happened_in() -> None:
    result = await replay_fixture(
        Runner(RunOptions()), _committed("redelivered_confirm_books_once"), agent_settings=NO_DEDUPE
    )
    assert result.status == "diverged"
    explanation = " ".join(result.divergences + result.changes)
    assert "turn 2" in explanation


async def test_the_same_candidate_under_the_live_policy_fails_the_invariant() -> None:
    result = await replay_fixture(
        Runner(RunOptions()),
        _committed("redelivered_confirm_books_once"),
        policy="live",
        agent_settings=NO_DEDUPE,
    )
    assert result.status == "failed"
    assert (result.divergences, result.error) == ((), None)
    repeated = [v for v in result.violations if v.rule == "no_repeated_side_effects"]
    assert len(repeated) == 1
    assert repeated[0].turn == 1  # 0-based: the Confirm turn, where the copy arrived
    assert "book_appointment" in repeated[0].message
    # The replay ran to its end: the copy booked a second table.
    assert result.conversation is not None
    assert len(result.conversation.tool_calls("book_appointment")) == 2


# -- prompt overrides ----------------------------------------------------------------


async def test_a_prompt_override_diverges_under_pinned_naming_the_system_prompt() -> None:
    packaged = DEFAULT_PROMPTS.get("system")
    result = await replay_fixture(
        Runner(RunOptions()), _committed("happy_confirm_button"), prompts={"system": PIRATE}
    )
    assert result.status == "diverged"
    assert result.divergences
    assert "system prompt differs" in result.divergences[0]
    assert "You are a pirate." in result.divergences[0]
    assert any(line.startswith("turn 1:") for line in result.changes)
    assert DEFAULT_PROMPTS.get("system") == packaged


async def test_a_prompt_override_runs_under_live_with_fresh_model_answers() -> None:
    fixture = _committed("happy_confirm_button")
    changed = packaged_prompt("system")
    assert changed is not None
    changed += "\nAlways thank the guest for writing.\n"
    result = await replay_fixture(
        Runner(RunOptions()), fixture, policy="live", prompts={"system": changed}
    )
    assert result.status == "same"
    assert result.error is None
    assert result.conversation is not None
    exchanges = result.conversation.llm_exchanges()
    assert exchanges
    assert {e.source for e in exchanges} == {"live"}  # every request changed
    assert result.unused == len(fixture.records("llm", LLMRecord))  # tools still replayed
    assert DEFAULT_PROMPTS.get("system") == packaged_prompt("system")


class PromptSeen(BaseException):
    """Raised by :func:`prompt_spy_factory`: the system prompt an agent built then would get.

    A BaseException, so it escapes the replay's own error handling.
    """

    def __init__(self, prompt: str) -> None:
        super().__init__(prompt[:40])
        self.prompt = prompt


def prompt_spy_factory(env: AgentEnvironment) -> object:
    """An agent factory that reports the prompt in force by raising :class:`PromptSeen`."""
    raise PromptSeen(DEFAULT_PROMPTS.get("system"))


def crashing_factory(env: AgentEnvironment) -> object:
    """An agent factory that crashes, naming the start of the prompt in force."""
    raise RuntimeError(f"agent crashed under prompt {DEFAULT_PROMPTS.get('system')[:17]!r}")


async def test_the_prompt_is_restored_when_the_agent_crashes() -> None:
    before = DEFAULT_PROMPTS.get("system")
    assert before == packaged_prompt("system")
    runner = Runner(RunOptions(target=f"{HERE}:crashing_factory"))
    result = await replay_fixture(
        runner, _committed("happy_confirm_button"), prompts={"system": PIRATE}
    )
    assert result.status == "error"
    assert result.error == "RuntimeError: agent crashed under prompt 'You are a pirate.'"
    assert DEFAULT_PROMPTS.get("system") == before
    assert overridden("system") is None


async def test_the_prompt_is_restored_when_the_replay_raises() -> None:
    before = DEFAULT_PROMPTS.get("system")
    runner = Runner(RunOptions(target=f"{HERE}:prompt_spy_factory"))
    with pytest.raises(PromptSeen) as raised:
        await replay_fixture(runner, _committed("happy_confirm_button"), prompts={"system": PIRATE})
    assert raised.value.prompt == PIRATE  # the override was in force inside the replay
    assert DEFAULT_PROMPTS.get("system") == before
    assert overridden("system") is None


def _fail_inside_overrides() -> None:
    with override({"system": "outer"}):
        assert DEFAULT_PROMPTS.get("system") == "outer"
        with override({"system": "inner", "greeting": "hello"}):
            assert (overridden("system"), overridden("greeting")) == ("inner", "hello")
            raise RuntimeError("boom")


def test_override_restores_the_prompts_when_the_block_raises() -> None:
    packaged = DEFAULT_PROMPTS.get("system")
    with pytest.raises(RuntimeError, match="boom"):
        _fail_inside_overrides()
    assert (overridden("system"), overridden("greeting")) == (None, None)
    assert DEFAULT_PROMPTS.get("system") == packaged


def _fail_inside(prompts: dict[str, str]) -> None:
    with override(prompts):
        raise ValueError("inner")


def test_nested_overrides_unwind_one_at_a_time() -> None:
    with override({"system": "outer"}):
        with pytest.raises(ValueError, match="inner"):
            _fail_inside({"system": "inner"})
        assert overridden("system") == "outer"
    assert overridden("system") is None


async def test_a_fixture_without_its_conversation_replays_with_the_participants_in_meta(
    tmp_path: Path,
) -> None:
    # A proxy killed mid-chat leaves no conversation.json; it lists the participants in meta.
    copy = tmp_path / "cut-short"
    shutil.copytree(_committed("happy_confirm_button").path, copy)
    conversation = json.loads((copy / "conversation.json").read_text())
    (copy / "conversation.json").unlink()
    meta = json.loads((copy / "meta.json").read_text())
    meta["participants"] = conversation["participants"]
    (copy / "meta.json").write_text(json.dumps(meta))
    result = await replay_fixture(Runner(RunOptions()), load_fixture(copy))
    assert (result.status, result.divergences) == ("same", ())


async def test_a_replay_names_the_lines_of_the_scenario_file(tmp_path: Path) -> None:
    # The fixture keeps the file's own text, so a replay's violations point where the run's did.
    broken = RunOptions(agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"})
    out, recorded = await _record(tmp_path, "redelivered_confirm_books_once", broken)
    assert recorded.status == "failed"
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    file = SCENARIOS / "redelivered_confirm_books_once.yaml"
    assert meta["scenario_yaml"] == file.read_text(encoding="utf-8")
    replayed = await replay_fixture(Runner(broken), load_fixture(out))
    assert replayed.status == "failed"  # the same conversation, its rules broken again
    assert not replayed.changes
    # A replay checks the invariants again (the expectations were the run's).
    lines = {(v.rule, v.line) for v in recorded.violations if v.rule != "expect"}
    assert len(lines) == 2
    assert {(v.rule, v.line) for v in replayed.violations} == lines
