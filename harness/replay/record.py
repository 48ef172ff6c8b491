"""Recording a scenario once, at the agent's seams and at the channel, into a fixture.

The scenario runs as ``harness run`` would run it, with the agent's model
client and tools recording (:mod:`harness.recording`). The fixture gets the
channel's events with their virtual times and delivery attempts, every model
exchange with its tokens and model, every tool call, an OpenTelemetry-shaped
span per exchange, the files users sent (under ``media/``), the assembled
conversation, and in ``meta.json`` what a replay needs to play it again:
the scenario itself, its seed, its channel settings and the agent's settings.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from harness.channel import ChannelSession
from harness.files import write_atomic
from harness.fixture import FixtureMeta, FixtureWriter, make_span
from harness.providers import span_provider_attributes
from harness.recording import Recording
from harness.records import LLMRecord, ToolRecord
from harness.results import ScenarioResult
from harness.suites.runner import Runner
from harness.suites.scenario import Scenario, parse_scenario
from harness.suites.simulate_step import SimulateStep
from harness.suites.target import settings_from
from harness.tape import RecordMode
from harness.trace import Event, InboundMessage

__all__ = ["SECRET_OPTIONS", "llm_span", "record_scenario"]

#: Channel options that are secrets: never written into a fixture.
SECRET_OPTIONS = frozenset({"app_secret", "verify_token", "access_token"})


def llm_span(
    record: LLMRecord,
    index: int,
    run: str,
    *,
    key: str | None = None,
    source: Literal["live", "recorded"] = "live",
) -> dict[str, Any]:
    """The OpenTelemetry-shaped span of one model exchange (GenAI attribute names).

    ``run`` and ``index`` seed its ids, so a recording's spans are the same every
    time; ``key`` replaces the record's request key when it was recomputed.
    The span names who answered (:func:`harness.providers.span_provider_attributes`):
    the live API, the offline stand-in, or, with ``source="recorded"``, an
    earlier recording of either replayed into this one.
    """
    digest = hashlib.sha256(f"{run}:{index}".encode()).hexdigest()
    at = int(record.recorded_at.timestamp() * 1e9)
    return make_span(
        name=f"chat {record.model}",
        trace_id=digest[:32],
        span_id=digest[32:48],
        start_time_unix_nano=at,
        end_time_unix_nano=at,
        attributes={
            **span_provider_attributes(record.provider, source),
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": record.model,
            "gen_ai.response.model": record.response.model,
            "gen_ai.usage.input_tokens": record.input_tokens,
            "gen_ai.usage.output_tokens": record.output_tokens,
            "gen_ai.response.finish_reasons": [record.response.stop_reason or ""],
            "harness.request.key": record.key if key is None else key,
        },
        kind="CLIENT",
    )


async def record_scenario(
    runner: Runner,
    scenario: Scenario,
    out: Path | str,
    *,
    overwrite: bool = False,
    secrets: tuple[str, ...] = (),
    progress: Callable[[LLMRecord | ToolRecord], None] | None = None,
    recorded: tuple[Sequence[LLMRecord], Sequence[ToolRecord]] | None = None,
) -> ScenarioResult:
    """Run ``scenario`` with recording seams and write everything into the fixture ``out``.

    ``progress`` hears of each model exchange and tool call as it is recorded.
    With ``recorded`` (an earlier recording's model and tool records), those
    answer the requests they match and only the others reach the agent's
    model and tools; the fixture keeps the earlier records, then the new ones.
    """
    options = runner.options
    channel_options = {k: v for k, v in options.channel_options.items() if k not in SECRET_OPTIONS}
    agent_settings = {**settings_from(scenario.agent), **options.agent_settings}
    seed = scenario.seed if scenario.seed is not None else options.seed
    meta = FixtureMeta.model_validate(
        {
            "scenario": scenario.name,
            "channel": options.channel,
            "recorded_at": datetime.now(UTC),
            "agent_version": runner.target,
            "seed": seed,
            "faults": scenario.faults,
            "scenario_yaml": _scenario_text(scenario),
            "agent_settings": agent_settings,
            "channel_options": channel_options,
        }
    )
    known_secrets = (
        tuple(str(v) for k, v in options.channel_options.items() if k in SECRET_OPTIONS) + secrets
    )
    llm_records: list[LLMRecord] = []
    with FixtureWriter(out, meta, overwrite=overwrite, secrets=known_secrets) as writer:

        def keep_llm(record: LLMRecord, source: Literal["live", "recorded"] = "live") -> None:
            llm_records.append(record)
            writer.append("llm", record)
            span = llm_span(record, len(llm_records), scenario.name, source=source)
            writer.append("spans", span)
            if progress is not None:
                progress(record)

        def keep_user(record: LLMRecord) -> None:
            # The simulated users' own stream: apart from the agent's, with no span of its own.
            writer.append("users", record)

        def keep_tool(record: ToolRecord) -> None:
            writer.append("tools", record)
            if progress is not None:
                progress(record)

        streamed: list[Event] = []

        def keep_event(event: Event) -> None:
            # Written as it happens: a recording killed mid-run keeps its events so far.
            streamed.append(event)
            writer.append("events", event)

        if recorded is None:
            recording = Recording(
                mode=RecordMode.RECORD,
                on_llm_record=keep_llm,
                on_tool_record=keep_tool,
                on_event=keep_event,
                on_user_llm_record=keep_user,
            )
        else:
            old_llm, old_tools = recorded
            for old in old_llm:
                keep_llm(old, "recorded")
            for old_tool in old_tools:
                keep_tool(old_tool)
            recording = Recording(
                mode=RecordMode.REPLAY,
                on_miss="live",
                llm_records=old_llm,
                tool_records=old_tools,
                on_llm_record=keep_llm,
                on_tool_record=keep_tool,
                on_event=keep_event,
                on_user_llm_record=keep_user,
            )
        _keep_simulated_media(writer, scenario)
        media: dict[str, str] = {}

        async def collect_media(session: ChannelSession) -> None:
            fetch = getattr(session, "media", None)
            if not callable(fetch):
                return
            for event in session.conversation().events:
                if isinstance(event, InboundMessage) and not event.duplicate:
                    found = fetch(event.wamid)
                    if found is not None:
                        data, mime = found
                        name = _media_name(event.wamid, mime)
                        media[event.wamid] = writer.add_media(name, data)

        result = await runner.run_scenario(
            scenario, recording=recording, before_close=collect_media
        )
        if result.conversation is not None:
            final = list(result.conversation.events)
            if final[: len(streamed)] == streamed:
                for event in final[len(streamed) :]:  # what the run added after the channel
                    writer.append("events", event)
            else:
                writer.replace_log("events", final)
            writer.write_conversation(result.conversation)
        if media:
            _write_media_index(writer, media)
    if llm_records:
        _patch_model(Path(out), llm_records[0])
    return result


def _keep_simulated_media(writer: FixtureWriter, scenario: Scenario) -> None:
    """The files simulated users may send, kept for a replay that plays them again."""
    base = scenario.path.parent if scenario.path is not None else Path.cwd()
    for step in scenario.steps:
        if isinstance(step, SimulateStep):
            for name in step.simulate.behaviour.media:
                data = (base / name).read_bytes()
                writer.add_media((Path("simulated") / name).as_posix(), data)


def _media_name(wamid: str, mime: str) -> str:
    extension = mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"
    digest = hashlib.sha256(wamid.encode()).hexdigest()[:16]
    return f"{digest}{extension}"


def _write_media_index(writer: FixtureWriter, media: Mapping[str, str]) -> None:
    text = json.dumps(dict(sorted(media.items())), indent=2) + "\n"
    write_atomic(writer.path / "media" / "index.json", text)


def _patch_model(root: Path, first: LLMRecord) -> None:
    """Name in ``meta.json`` the model the conversation asked for, and who answered."""
    path = root / "meta.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"] = first.model
    data["provider"] = first.provider
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _scenario_text(scenario: Scenario) -> str:
    """The scenario as its file says it, so a replay's lines are the file's; else minimal YAML.

    The file's text is kept only while it still reads as this scenario.
    """
    if scenario.path is not None:
        try:
            text = Path(scenario.path).read_text(encoding="utf-8")
            if parse_scenario(text, path=scenario.path) == scenario:
                return text
        except (OSError, ValueError):
            pass
    return scenario.to_yaml()
