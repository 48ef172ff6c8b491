"""Scenario suites: the scenario language, its steps and expectations, invariants, and the runner.

They use the core (trace, clock, store, the channels' contract) and are used by
replay, the reports and the command line.

Names load on first use (see :mod:`harness.lazy`): reading a scenario file
imports neither the runner nor the built-in invariants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

if TYPE_CHECKING:
    from harness.suites.builtin_invariants import *
    from harness.suites.dates import *
    from harness.suites.distributed import *
    from harness.suites.expectations import *
    from harness.suites.explorer import *
    from harness.suites.fit import *
    from harness.suites.invariant_ref import *
    from harness.suites.invariants import *
    from harness.suites.jobs import *
    from harness.suites.judge_spec import *
    from harness.suites.keywords import *
    from harness.suites.messages import LABEL_PATTERN as LABEL_PATTERN
    from harness.suites.messages import SEND_SCHEMA as SEND_SCHEMA
    from harness.suites.messages import Label as Label
    from harness.suites.messages import MessageLabels as MessageLabels
    from harness.suites.messages import Reference as Reference
    from harness.suites.messages import check_send as check_send
    from harness.suites.messages import references as references
    from harness.suites.phone_view import *
    from harness.suites.preflight import *
    from harness.suites.queue import *
    from harness.suites.realtime import *
    from harness.suites.redelivery_invariants import *
    from harness.suites.registry import *
    from harness.suites.repeats import *
    from harness.suites.reproduce import *
    from harness.suites.run_options import *
    from harness.suites.runner import *
    from harness.suites.scenario import *
    from harness.suites.schedules import *
    from harness.suites.selection import *
    from harness.suites.sending import *
    from harness.suites.simulate import *
    from harness.suites.simulate_step import *
    from harness.suites.step_union import *
    from harness.suites.steps import *
    from harness.suites.store_watch import *
    from harness.suites.target import *
    from harness.suites.target_url import *
    from harness.suites.transcript import *
    from harness.suites.user_actions import *
    from harness.suites.user_clients import *
    from harness.suites.user_model import *
    from harness.suites.worker import *
    from harness.suites.yamlpos import *

#: The module that owns each public name.
_OWNERS: dict[str, str] = {
    "JOB_FUNCTION": "harness.suites.jobs",
    "NOT_PLAYED": "harness.suites.jobs",
    "ScenarioJob": "harness.suites.jobs",
    "decode_options": "harness.suites.jobs",
    "encode_options": "harness.suites.jobs",
    "job_key": "harness.suites.jobs",
    "parse_job_key": "harness.suites.jobs",
    "result_from_json": "harness.suites.jobs",
    "result_key": "harness.suites.jobs",
    "stopped_key": "harness.suites.jobs",
    "ATTEMPTS": "harness.suites.queue",
    "DEFAULT_HEARTBEAT": "harness.suites.queue",
    "QUEUE_NAME": "harness.suites.queue",
    "check_broker_url": "harness.suites.queue",
    "open_queue": "harness.suites.queue",
    "safe_broker_url": "harness.suites.queue",
    "JOB_TIMEOUT": "harness.suites.distributed",
    "RESULT_TTL": "harness.suites.distributed",
    "run_distributed": "harness.suites.distributed",
    "run_worker": "harness.suites.worker",
    "worker_name": "harness.suites.worker",
    "ACTIONS": "harness.suites.step_union",
    "ACT_TOOL": "harness.suites.user_actions",
    "AgendaItem": "harness.suites.simulate_step",
    "BaseStep": "harness.suites.steps",
    "Behaviour": "harness.suites.simulate_step",
    "BoundInvariant": "harness.suites.invariants",
    "CHANNEL_FAULTS": "harness.suites.schedules",
    "CRITERION_NAME": "harness.suites.judge_spec",
    "ChangeMind": "harness.suites.simulate_step",
    "ChannelFit": "harness.suites.fit",
    "Choice": "harness.suites.phone_view",
    "Criterion": "harness.suites.judge_spec",
    "DEFAULT_FORMAT": "harness.suites.dates",
    "DEFAULT_GAP": "harness.suites.steps",
    "DEFAULT_PHRASES": "harness.suites.builtin_invariants",
    "DEFAULT_TARGET": "harness.suites.target",
    "DEFAULT_USER": "harness.suites.scenario",
    "DEFAULT_USER_MODEL": "harness.suites.simulate_step",
    "DateExpression": "harness.suites.dates",
    "Done": "harness.suites.user_actions",
    "Duration": "harness.suites.steps",
    "DurationParam": "harness.suites.registry",
    "EVENTUAL": "harness.suites.expectations",
    "ExpectStep": "harness.suites.steps",
    "Expectation": "harness.suites.steps",
    "Exploration": "harness.suites.explorer",
    "ExploreStats": "harness.suites.explorer",
    "FAULT_KINDS": "harness.suites.schedules",
    "FaultsStep": "harness.suites.steps",
    "Finding": "harness.suites.explorer",
    "GAPS": "harness.suites.explorer",
    "GraphPlace": "harness.suites.worker",
    "IN_PROCESS_ONLY": "harness.suites.schedules",
    "FRAGMENT_GAP": "harness.suites.simulate",
    "Invariant": "harness.suites.registry",
    "InvariantFunction": "harness.suites.registry",
    "InvariantRef": "harness.suites.invariant_ref",
    "InvariantSpec": "harness.suites.invariants",
    "JUMPS": "harness.suites.explorer",
    "JudgeSpec": "harness.suites.judge_spec",
    "KeywordExpression": "harness.suites.keywords",
    "LABEL_PATTERN": "harness.suites.messages",
    "LONGEST_SCENARIO": "harness.suites.scenario",
    "Label": "harness.suites.messages",
    "LabelledStep": "harness.suites.steps",
    "LocatedError": "harness.suites.yamlpos",
    "MAX_DEPTH": "harness.suites.yamlpos",
    "MAX_FILE_BYTES": "harness.suites.yamlpos",
    "MEDIA_TYPES": "harness.suites.steps",
    "MessageLabels": "harness.suites.messages",
    "NamedSpec": "harness.suites.invariants",
    "ONLY_SUFFIX": "harness.suites.fit",
    "PhoneView": "harness.suites.phone_view",
    "REPLY_TYPES": "harness.suites.builtin_invariants",
    "RedeliverStep": "harness.suites.steps",
    "Reference": "harness.suites.messages",
    "Regex": "harness.suites.registry",
    "RunOptions": "harness.suites.run_options",
    "Runner": "harness.suites.runner",
    "SEND_SCHEMA": "harness.suites.messages",
    "STATUSES": "harness.suites.steps",
    "STEP_TAGS": "harness.suites.step_union",
    "STEP_TYPES": "harness.suites.step_union",
    "SayAction": "harness.suites.user_actions",
    "SayStep": "harness.suites.steps",
    "Scenario": "harness.suites.scenario",
    "ScenarioPart": "harness.suites.steps",
    "Schedule": "harness.suites.schedules",
    "SendMedia": "harness.suites.user_actions",
    "SendStep": "harness.suites.steps",
    "Silences": "harness.suites.simulate_step",
    "SimulateStep": "harness.suites.simulate_step",
    "Simulation": "harness.suites.simulate_step",
    "SpecLike": "harness.suites.invariants",
    "StandInUser": "harness.suites.user_model",
    "Step": "harness.suites.step_union",
    "Stretch": "harness.suites.simulate",
    "TapAction": "harness.suites.user_actions",
    "TapStep": "harness.suites.steps",
    "ToolExpectation": "harness.suites.steps",
    "Transcript": "harness.suites.transcript",
    "TurnFaults": "harness.suites.schedules",
    "TurnSteps": "harness.suites.schedules",
    "USER_MODELS": "harness.suites.user_clients",
    "User": "harness.suites.scenario",
    "UserAction": "harness.suites.user_actions",
    "UserStep": "harness.suites.steps",
    "WaitAction": "harness.suites.user_actions",
    "WaitStep": "harness.suites.steps",
    "YamlDocument": "harness.suites.yamlpos",
    "YamlPath": "harness.suites.yamlpos",
    "act_tool": "harness.suites.user_actions",
    "action_only_after_confirmation": "harness.suites.builtin_invariants",
    "bind": "harness.suites.invariants",
    "bind_invariants": "harness.suites.preflight",
    "brief": "harness.suites.registry",
    "change_faults": "harness.suites.sending",
    "brief_of": "harness.suites.user_model",
    "check": "harness.suites.invariants",
    "check_agent_settings": "harness.suites.preflight",
    "check_dated_regex": "harness.suites.dates",
    "check_dated_values": "harness.suites.dates",
    "check_dates": "harness.suites.dates",
    "check_expectation": "harness.suites.expectations",
    "check_faults": "harness.suites.preflight",
    "check_media": "harness.suites.simulate",
    "check_send": "harness.suites.messages",
    "check_step_messages": "harness.suites.sending",
    "check_user_models": "harness.suites.user_clients",
    "constraint_honored": "harness.suites.builtin_invariants",
    "describe": "harness.suites.yamlpos",
    "describe_factory": "harness.suites.target",
    "distinct_user": "harness.suites.realtime",
    "draw_schedule": "harness.suites.explorer",
    "dump_yaml": "harness.suites.yamlpos",
    "eventual_part": "harness.suites.expectations",
    "every_inbound_answered": "harness.suites.builtin_invariants",
    "expect_in_time": "harness.suites.realtime",
    "explore": "harness.suites.explorer",
    "fault_spec": "harness.suites.steps",
    "field_name": "harness.suites.yamlpos",
    "has_dates": "harness.suites.dates",
    "importable": "harness.suites.target",
    "inner_user_model": "harness.suites.user_clients",
    "invariant": "harness.suites.registry",
    "is_simulated": "harness.suites.repeats",
    "load_scenario": "harness.suites.scenario",
    "load_scenarios": "harness.suites.scenario",
    "load_target": "harness.suites.target",
    "messages_sent": "harness.suites.schedules",
    "media_message": "harness.suites.simulate",
    "media_path": "harness.suites.simulate",
    "needs_quiet": "harness.suites.expectations",
    "never_reasks": "harness.suites.builtin_invariants",
    "no_freeform_outside_window": "harness.suites.builtin_invariants",
    "no_repeated_side_effects": "harness.suites.redelivery_invariants",
    "no_repeated_answer": "harness.suites.redelivery_invariants",
    "one_reply_per_burst": "harness.suites.builtin_invariants",
    "only_channels": "harness.suites.fit",
    "parse_action": "harness.suites.user_actions",
    "parse_date_expression": "harness.suites.dates",
    "parse_scenario": "harness.suites.scenario",
    "parse_spec": "harness.suites.invariants",
    "phone_view": "harness.suites.phone_view",
    "play_simulation": "harness.suites.simulate",
    "read_text": "harness.suites.yamlpos",
    "read_yaml": "harness.suites.yamlpos",
    "references": "harness.suites.messages",
    "registered": "harness.suites.invariants",
    "registry": "harness.suites.registry",
    "render_event": "harness.suites.transcript",
    "repeated": "harness.suites.repeats",
    "replies_since": "harness.suites.expectations",
    "reply_text": "harness.suites.expectations",
    "resolve": "harness.suites.invariants",
    "resolve_dates": "harness.suites.dates",
    "scenario_error": "harness.suites.yamlpos",
    "scenario_json_schema": "harness.suites.scenario",
    "scenario_keywords": "harness.suites.selection",
    "select_by_keyword": "harness.suites.selection",
    "select_by_tags": "harness.suites.selection",
    "send_step": "harness.suites.sending",
    "sends_valid": "harness.suites.builtin_invariants",
    "settings_from": "harness.suites.target",
    "check_target_url": "harness.suites.target_url",
    "reach_target_url": "harness.suites.target_url",
    "shortest_reproduction": "harness.suites.reproduce",
    "split_turns": "harness.suites.schedules",
    "started_on": "harness.suites.expectations",
    "step_action": "harness.suites.step_union",
    "step_message": "harness.suites.sending",
    "unobserved": "harness.suites.invariants",
    "user_client": "harness.suites.user_clients",
    "user_request": "harness.suites.user_model",
    "watch_outages": "harness.suites.store_watch",
    "with_dates": "harness.suites.expectations",
    "with_late": "harness.suites.realtime",
    "with_run_news": "harness.suites.realtime",
    "numbers_seen": "harness.suites.realtime",
    "revisions": "harness.suites.realtime",
}

__all__ = sorted(_OWNERS)

_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
