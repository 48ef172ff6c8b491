"""The harness core: trace, clock, LLM seam, recorders, fixtures and store.

It knows nothing about WhatsApp; channels and agents build on it. Every
public name of the core is importable from here, and those of the scenario
suites' and replay's modules that :data:`_OWNERS` names.

Names load on first use (PEP 562, see :mod:`harness.lazy`): ``import harness``
reads this module and two small ones, and ``harness.Conversation`` or ``from
harness import Conversation`` imports the one module that owns the name
(:data:`_OWNERS` says which), so a program that needs the clock does not pay
for the suites and the judge. Type checkers read the ``TYPE_CHECKING``
imports instead, which give them every name at once; a test keeps the two,
and each module's ``__all__``, in step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names
from harness.version import VERSION as VERSION  # "as VERSION": re-exported to type checkers

__version__ = VERSION

if TYPE_CHECKING:
    from harness.acting import *
    from harness.agent import *
    from harness.agent_contract import *
    from harness.canonical import *
    from harness.channel import *
    from harness.clock import *
    from harness.divergence import *
    from harness.durations import *
    from harness.endpoints import *
    from harness.exceptions import *
    from harness.failures import *
    from harness.files import *
    from harness.fixture import *
    from harness.inflight import *
    from harness.lazy import *
    from harness.llm import *
    from harness.llm_recorder import *
    from harness.options import *
    from harness.outages import *
    from harness.plugins import *
    from harness.project import *
    from harness.prompts import *
    from harness.providers import *
    from harness.record_mode import *
    from harness.recording import *
    from harness.records import *
    from harness.redaction import *
    from harness.references import *
    from harness.remote import *
    from harness.replay.diff import *
    from harness.replay.judge import *
    from harness.replay.playback import *
    from harness.replay.record import *
    from harness.results import *
    from harness.skew import *
    from harness.store import *
    from harness.suites.builtin_invariants import *
    from harness.suites.expectations import *
    from harness.suites.invariant_ref import *
    from harness.suites.invariants import *
    from harness.suites.registry import *
    from harness.suites.runner import *
    from harness.suites.scenario import *
    from harness.suites.simulate_step import *
    from harness.suites.step_union import *
    from harness.suites.steps import *
    from harness.suites.target import *
    from harness.suites.transcript import *
    from harness.suites.yamlpos import *
    from harness.tape import *
    from harness.tool_recorder import *
    from harness.trace import *
    from harness.version import *
    from harness.wallclock import *

#: The module that owns each public name: each module's whole ``__all__``.
_OWNERS: dict[str, str] = {
    "Simulation": "harness.suites.simulate_step",
    "SimulateStep": "harness.suites.simulate_step",
    "Silences": "harness.suites.simulate_step",
    "ChangeMind": "harness.suites.simulate_step",
    "Behaviour": "harness.suites.simulate_step",
    "AgendaItem": "harness.suites.simulate_step",
    "DEFAULT_USER_MODEL": "harness.suites.simulate_step",
    "ACTIONS": "harness.suites.step_union",
    "ANTHROPIC": "harness.providers",
    "AgentAnnouncement": "harness.remote",
    "AgentContractError": "harness.exceptions",
    "AgentEnvironment": "harness.channel",
    "AgentFactory": "harness.channel",
    "AgentOffset": "harness.skew",
    "AnthropicClient": "harness.llm",
    "BaseStep": "harness.suites.steps",
    "BoundInvariant": "harness.suites.invariants",
    "BusyTransport": "harness.inflight",
    "CALL_LATENCY_ATTRIBUTE": "harness.fixture",
    "CONVERSATION_FILE": "harness.fixture",
    "ChannelError": "harness.exceptions",
    "ChannelPlugin": "harness.plugins",
    "ChannelSession": "harness.channel",
    "ChannelSetup": "harness.channel",
    "RecordedCall": "harness.channel",
    "Clock": "harness.clock",
    "ClockError": "harness.exceptions",
    "ClockJump": "harness.trace",
    "ConfigError": "harness.exceptions",
    "ContentBlock": "harness.llm",
    "Conversation": "harness.trace",
    "ConversationDiff": "harness.replay.diff",
    "Criterion": "harness.replay.judge",
    "CriterionScore": "harness.replay.judge",
    "DEFAULT_GAP": "harness.suites.steps",
    "DEFAULT_MODEL": "harness.replay.judge",
    "DEFAULT_PHRASES": "harness.suites.builtin_invariants",
    "DEFAULT_REAL_WORK_LIMIT": "harness.clock",
    "DEFAULT_RUBRIC": "harness.replay.judge",
    "DEFAULT_START": "harness.clock",
    "DEFAULT_TARGET": "harness.suites.target",
    "DEFAULT_USER": "harness.suites.scenario",
    "DeliveryAttempt": "harness.trace",
    "DeliveryError": "harness.exceptions",
    "DirectAgent": "harness.agent",
    "DirectMessage": "harness.agent",
    "DirectOption": "harness.agent",
    "DirectReply": "harness.agent",
    "DirectTurn": "harness.agent",
    "Divergence": "harness.exceptions",
    "Duration": "harness.suites.steps",
    "DurationParam": "harness.suites.registry",
    "ENTRY_POINT_GROUP": "harness.plugins",
    "EVENTUAL": "harness.suites.expectations",
    "EVENT_ADAPTER": "harness.trace",
    "EXIT_BELOW_THRESHOLD": "harness.replay.judge",
    "EXIT_NO_VERDICT": "harness.replay.judge",
    "ErrorInfo": "harness.trace",
    "Event": "harness.trace",
    "EventKind": "harness.trace",
    "ExpectStep": "harness.suites.steps",
    "Expectation": "harness.suites.steps",
    "FRESH_AGENT_ADVICE": "harness.agent_contract",
    "Fixture": "harness.fixture",
    "FixtureError": "harness.exceptions",
    "FixtureFormatError": "harness.exceptions",
    "FixtureMeta": "harness.fixture",
    "FixtureNotFound": "harness.exceptions",
    "FixtureWarning": "harness.fixture",
    "FixtureWriter": "harness.fixture",
    "GateFailure": "harness.replay.judge",
    "GateOutcome": "harness.replay.judge",
    "GateStatus": "harness.replay.judge",
    "HandshakeError": "harness.exceptions",
    "HarnessClock": "harness.remote",
    "HarnessError": "harness.exceptions",
    "HarnessLink": "harness.remote",
    "InboundMessage": "harness.trace",
    "Invariant": "harness.suites.registry",
    "InvariantFunction": "harness.suites.registry",
    "InvariantRef": "harness.suites.invariant_ref",
    "InvariantSpec": "harness.suites.invariants",
    "JsonlLine": "harness.fixture",
    "JsonlWriter": "harness.fixture",
    "Judge": "harness.replay.judge",
    "JudgeMode": "harness.replay.judge",
    "JumpListener": "harness.clock",
    "LAST_REPLY": "harness.references",
    "LLMAPIError": "harness.exceptions",
    "LLMClient": "harness.llm",
    "LLMError": "harness.exceptions",
    "LLMExchange": "harness.trace",
    "LLMRecord": "harness.records",
    "LLMRequest": "harness.llm",
    "LLMResponse": "harness.llm",
    "LONGEST_SCENARIO": "harness.suites.scenario",
    "LOG_FILES": "harness.fixture",
    "LabelledStep": "harness.suites.steps",
    "LocatedError": "harness.suites.yamlpos",
    "LogName": "harness.fixture",
    "MEDIA_DIR": "harness.fixture",
    "MEDIA_TYPES": "harness.suites.steps",
    "MESSAGE_ID_FIELDS": "harness.references",
    "META_FILE": "harness.fixture",
    "MemoryStore": "harness.store",
    "MessageRef": "harness.references",
    "ModelCount": "harness.providers",
    "NON_MESSAGE_SEND_TYPES": "harness.trace",
    "NO_TARGET": "harness.project",
    "NamedSpec": "harness.suites.invariants",
    "OBSERVABLE_KINDS": "harness.trace",
    "ObservableClock": "harness.clock",
    "OffsetClock": "harness.clock",
    "OnMiss": "harness.tape",
    "Outages": "harness.outages",
    "OutboundSend": "harness.trace",
    "PROJECT_FILE": "harness.project",
    "Participant": "harness.trace",
    "Parts": "harness.divergence",
    "Policy": "harness.replay.playback",
    "MIN_SUBSTRING": "harness.redaction",
    "ProjectSettings": "harness.project",
    "REDACTED": "harness.redaction",
    "REDIS_SCHEMES": "harness.store",
    "REPLY_TYPES": "harness.suites.builtin_invariants",
    "RealWorkTimeout": "harness.exceptions",
    "RecordMode": "harness.record_mode",
    "RecordedToolError": "harness.tool_recorder",
    "Recording": "harness.recording",
    "RecordingError": "harness.exceptions",
    "RecordingLLMClient": "harness.llm_recorder",
    "Redactor": "harness.redaction",
    "RedeliverStep": "harness.suites.steps",
    "RedisStore": "harness.store",
    "Regex": "harness.suites.registry",
    "ReplayAction": "harness.replay.playback",
    "ReplayResult": "harness.replay.playback",
    "ReplayStatus": "harness.replay.playback",
    "Rubric": "harness.replay.judge",
    "RunOptions": "harness.suites.runner",
    "RunResult": "harness.results",
    "RunShared": "harness.channel",
    "Runner": "harness.suites.runner",
    "SCENARIO_HEADER": "harness.remote",
    "SCHEMA_VERSION": "harness.fixture",
    "SECRET_OPTIONS": "harness.replay.record",
    "STAND_IN": "harness.providers",
    "STATUSES": "harness.suites.steps",
    "STEP_TAGS": "harness.suites.step_union",
    "STEP_TYPES": "harness.suites.step_union",
    "STORE_SETTING": "harness.remote",
    "SayStep": "harness.suites.steps",
    "Scale": "harness.skew",
    "Scenario": "harness.suites.scenario",
    "ScenarioError": "harness.exceptions",
    "ScenarioPart": "harness.suites.steps",
    "ScenarioResult": "harness.results",
    "ScenarioScope": "harness.remote",
    "ScenarioStatus": "harness.results",
    "SchemaVersionError": "harness.exceptions",
    "ScopedStore": "harness.remote",
    "SendStep": "harness.suites.steps",
    "SettingsCheck": "harness.channel",
    "Shift": "harness.skew",
    "SignatureError": "harness.exceptions",
    "Sink": "harness.tape",
    "Skew": "harness.skew",
    "Skip": "harness.results",
    "SpanKind": "harness.fixture",
    "SpanStatus": "harness.fixture",
    "SpecLike": "harness.suites.invariants",
    "StatusUpdate": "harness.trace",
    "Step": "harness.suites.step_union",
    "StepError": "harness.exceptions",
    "Store": "harness.store",
    "StoreError": "harness.exceptions",
    "StoreUnavailable": "harness.exceptions",
    "SystemClock": "harness.clock",
    "SystemPrompt": "harness.llm",
    "TapStep": "harness.suites.steps",
    "TextBlock": "harness.llm",
    "ToolCall": "harness.trace",
    "ToolExpectation": "harness.suites.steps",
    "ToolRecord": "harness.records",
    "ToolRecorder": "harness.tool_recorder",
    "ToolUseBlock": "harness.llm",
    "Transcript": "harness.suites.transcript",
    "Turn": "harness.trace",
    "TurnDiff": "harness.replay.diff",
    "TurnStatus": "harness.replay.diff",
    "UnknownTool": "harness.exceptions",
    "Usage": "harness.llm",
    "User": "harness.suites.scenario",
    "UserSpec": "harness.channel",
    "UserStep": "harness.suites.steps",
    "VERDICTS_FILE": "harness.fixture",
    "VERDICTS_SCHEMA_VERSION": "harness.replay.judge",
    "VERDICT_TOOL": "harness.replay.judge",
    "VERSION": "harness.version",
    "VOLATILE_PARAMS": "harness.llm_recorder",
    "Verdict": "harness.replay.judge",
    "VerdictFile": "harness.replay.judge",
    "Verification": "harness.trace",
    "Violation": "harness.results",
    "ViolationKind": "harness.results",
    "VirtualClock": "harness.clock",
    "WaitStep": "harness.suites.steps",
    "YamlDocument": "harness.suites.yamlpos",
    "YamlPath": "harness.suites.yamlpos",
    "acting_for": "harness.acting",
    "action_only_after_confirmation": "harness.suites.builtin_invariants",
    "agent_clock": "harness.channel",
    "agent_key": "harness.remote",
    "agent_replies": "harness.references",
    "answered_by": "harness.providers",
    "bind": "harness.suites.invariants",
    "brief": "harness.suites.registry",
    "build_agent": "harness.agent_contract",
    "build_turns": "harness.trace",
    "busy": "harness.inflight",
    "canonical_bytes": "harness.canonical",
    "canonical_json": "harness.canonical",
    "canonical_key": "harness.canonical",
    "check": "harness.suites.invariants",
    "check_expectation": "harness.suites.expectations",
    "check_rubric": "harness.replay.judge",
    "check_threshold": "harness.replay.judge",
    "clip": "harness.divergence",
    "collect_outages": "harness.outages",
    "clock_key": "harness.remote",
    "close_agent": "harness.channel",
    "collecting_failures": "harness.failures",
    "constraint_honored": "harness.suites.builtin_invariants",
    "current_clock": "harness.inflight",
    "current_scope": "harness.remote",
    "current_user": "harness.acting",
    "describe": "harness.suites.yamlpos",
    "describe_provider": "harness.providers",
    "diff_conversations": "harness.replay.diff",
    "dump_yaml": "harness.suites.yamlpos",
    "events_key": "harness.remote",
    "eventual_part": "harness.suites.expectations",
    "every_inbound_answered": "harness.suites.builtin_invariants",
    "exchange_label": "harness.providers",
    "explain_agent_error": "harness.agent_contract",
    "failure_line": "harness.failures",
    "fetch_records": "harness.recording",
    "field_name": "harness.suites.yamlpos",
    "find_project": "harness.project",
    "format_duration": "harness.durations",
    "gate_outcome": "harness.replay.judge",
    "had_outage": "harness.outages",
    "hold": "harness.clock",
    "importable": "harness.suites.target",
    "in_scope": "harness.remote",
    "invariant": "harness.suites.registry",
    "is_sensitive_key": "harness.redaction",
    "json_default": "harness.llm",
    "llm_differences": "harness.divergence",
    "llm_parts": "harness.divergence",
    "llm_span": "harness.replay.record",
    "load_channel_plugins": "harness.plugins",
    "load_fixture": "harness.fixture",
    "load_scenario": "harness.suites.scenario",
    "load_scenarios": "harness.suites.scenario",
    "load_target": "harness.suites.target",
    "load_verdicts": "harness.replay.judge",
    "loop_errors": "harness.agent_contract",
    "make_span": "harness.fixture",
    "MAX_DEPTH": "harness.suites.yamlpos",
    "MAX_FILE_BYTES": "harness.suites.yamlpos",
    "message_ids": "harness.references",
    "message_text": "harness.divergence",
    "model_counts": "harness.providers",
    "needs_quiet": "harness.suites.expectations",
    "never_reasks": "harness.suites.builtin_invariants",
    "no_freeform_outside_window": "harness.suites.builtin_invariants",
    "no_repeated_side_effects": "harness.suites.builtin_invariants",
    "note_outage": "harness.outages",
    "one_reply_per_burst": "harness.suites.builtin_invariants",
    "check_store": "harness.store",
    "open_store": "harness.store",
    "overridden": "harness.prompts",
    "PromptFile": "harness.prompts",
    "PromptFiles": "harness.prompts",
    "declared_prompts": "harness.prompts",
    "override": "harness.prompts",
    "lazy_names": "harness.lazy",
    "parse_duration": "harness.durations",
    "parse_json": "harness.canonical",
    "parse_duration_text": "harness.durations",
    "parse_prompt_overrides": "harness.prompts",
    "parse_rubric": "harness.replay.judge",
    "parse_scenario": "harness.suites.scenario",
    "parse_settings": "harness.options",
    "parse_skew": "harness.skew",
    "parse_spec": "harness.suites.invariants",
    "parse_verdict": "harness.replay.judge",
    "plan_from_fixture": "harness.replay.playback",
    "provider_of": "harness.providers",
    "recorded_calls": "harness.replay.playback",
    "publish_offset": "harness.remote",
    "publish_records": "harness.recording",
    "quote": "harness.divergence",
    "read_announcement": "harness.remote",
    "read_events": "harness.remote",
    "read_jsonl": "harness.fixture",
    "read_text": "harness.suites.yamlpos",
    "read_yaml": "harness.suites.yamlpos",
    "record_scenario": "harness.replay.record",
    "refer": "harness.references",
    "redact": "harness.redaction",
    "registered": "harness.suites.invariants",
    "registry": "harness.suites.registry",
    "render_event": "harness.suites.transcript",
    "render_transcript": "harness.replay.judge",
    "replay_fixture": "harness.replay.playback",
    "reply_text": "harness.suites.expectations",
    "report_failure": "harness.failures",
    "request_body": "harness.llm",
    "resolve": "harness.suites.invariants",
    "resolve_target": "harness.project",
    "running_on": "harness.inflight",
    "save_verdicts": "harness.replay.judge",
    "scenario_error": "harness.suites.yamlpos",
    "scenario_json_schema": "harness.suites.scenario",
    "sdk_http_module": "harness.llm",
    "sends_valid": "harness.suites.builtin_invariants",
    "settings_differences": "harness.replay.playback",
    "settings_check": "harness.channel",
    "settings_from": "harness.suites.target",
    "span_provider_attributes": "harness.providers",
    "started_on": "harness.suites.expectations",
    "step_action": "harness.suites.step_union",
    "store_key": "harness.recording",
    "tool_differences": "harness.divergence",
    "tool_parts": "harness.divergence",
    "unobserved": "harness.suites.invariants",
    "virtual_base": "harness.clock",
    "wall_clock_from": "harness.wallclock",
    "with_dates": "harness.suites.expectations",
    "working_key": "harness.remote",
    "wrap": "harness.recording",
    "wrap_tools": "harness.recording",
    "write_atomic": "harness.files",
    "ANTHROPIC_ERROR_TYPES": "harness.endpoints",
    "ANTHROPIC_PATH": "harness.endpoints",
    "ANTHROPIC_UPSTREAM": "harness.endpoints",
    "MODEL_OPERATIONS": "harness.endpoints",
    "OPENAI_PATH": "harness.endpoints",
    "OPENAI_UPSTREAM": "harness.endpoints",
    "OTLP_TRACES_PATH": "harness.endpoints",
    "Endpoints": "harness.endpoints",
    "ModelEndpoint": "harness.endpoints",
    "OTLPReceiver": "harness.endpoints",
    "Seat": "harness.endpoints",
    "Seating": "harness.endpoints",
    "Stamp": "harness.endpoints",
    "anthropic_error": "harness.endpoints",
    "anthropic_events": "harness.endpoints",
    "anthropic_message": "harness.endpoints",
    "check_anthropic_request": "harness.endpoints",
    "check_openai_request": "harness.endpoints",
    "openai_chunks": "harness.endpoints",
    "openai_completion": "harness.endpoints",
    "openai_error": "harness.endpoints",
    "parse_anthropic_message": "harness.endpoints",
    "parse_openai_completion": "harness.endpoints",
    "request_key": "harness.endpoints",
    "span_events": "harness.endpoints",
}

__all__ = sorted([*_OWNERS, "__version__"])


_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
