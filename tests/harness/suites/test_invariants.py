"""Invariants: the registry, specs from YAML, plugins by import path, and the built-ins.

Each built-in is shown a trace where it holds and one where it fails; a
failure must name the turn and show the lines involved.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from harness.exceptions import ConfigError
from harness.results import Violation
from harness.suites.builtin_invariants import (
    action_only_after_confirmation,
    constraint_honored,
    every_inbound_answered,
    never_reasks,
    no_freeform_outside_window,
    one_reply_per_burst,
    sends_valid,
)
from harness.suites.invariants import (
    BoundInvariant,
    InvariantSpec,
    bind,
    check,
    parse_spec,
    registered,
    resolve,
)
from harness.suites.redelivery_invariants import no_repeated_side_effects
from harness.suites.registry import Invariant, invariant
from harness.suites.transcript import Transcript, render_event
from harness.trace import (
    ClockJump,
    Conversation,
    DeliveryAttempt,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    Participant,
    StatusUpdate,
    ToolCall,
)
from tests.harness.suites.custom_invariants import quiet_agent

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ANA = Participant(id="ana", name="Ana", wa_id="15550001111")
BEN = Participant(id="ben", name="Ben", wa_id="15550002222")
FRIDAY: dict[str, JsonValue] = {"date": "2026-01-09", "slot": "09:00"}
FRIDAY_CALL = "tool book_appointment(date='2026-01-09', slot='09:00')"
WINDOW_CLOSED = ErrorInfo(
    code=131047,
    title="Re-engagement message",
    details="More than 24 hours have passed since the customer last replied.",
)
PLUGINS = "tests.harness.suites.custom_invariants"
BUILTINS = {
    "action_only_after_confirmation",
    "constraint_honored",
    "every_inbound_answered",
    "never_reasks",
    "no_freeform_outside_window",
    "no_repeated_answer",
    "no_repeated_side_effects",
    "one_reply_per_burst",
    "sends_valid",
}


class Log:
    """A conversation written event by event on a virtual clock; each call returns its index."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.now = T0
        self._seq = 0

    def _add(self, event: Event) -> int:
        self.events.append(event)
        return len(self.events) - 1

    def _tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def _wamid(self, prefix: str) -> str:
        self._seq += 1
        return f"wamid.{prefix}{self._seq}"

    def user(
        self,
        text: str | None,
        *,
        who: str = "ana",
        after: float = 10.0,
        type: str = "text",
        reply_id: str | None = None,
        burst: str | None = None,
    ) -> int:
        return self._add(
            InboundMessage(
                at=self._tick(after),
                user=who,
                wamid=self._wamid("in"),
                type=type,
                text=text,
                reply_id=reply_id,
                burst=burst,
            )
        )

    def redeliver(self, index: int, *, after: float = 5.0) -> int:
        original = self.events[index]
        assert isinstance(original, InboundMessage)
        copy = original.model_copy(update={"at": self._tick(after), "duplicate": True})
        return self._add(copy)

    def agent(
        self,
        text: str | None,
        *,
        who: str = "ana",
        type: str = "text",
        after: float = 1.0,
        in_window: bool | None = True,
        error: ErrorInfo | None = None,
        template: str | None = None,
    ) -> int:
        request: dict[str, JsonValue] = {"template": {"name": template}} if template else {}
        return self._add(
            OutboundSend(
                at=self._tick(after),
                user=who,
                type=type,
                text=text,
                request=request,
                wamid=None if error else self._wamid("out"),
                error=error,
                in_window=in_window,
            )
        )

    def tool(
        self,
        name: str,
        args: Mapping[str, JsonValue] | None = None,
        *,
        who: str | None = "ana",
        side_effect: bool = True,
        error: str | None = None,
        after: float = 0.5,
    ) -> int:
        return self._add(
            ToolCall(
                at=self._tick(after),
                user=who,
                name=name,
                args=dict(args or {}),
                side_effect=side_effect,
                error=error,
            )
        )

    def status(self, send: int, status: str, *errors: ErrorInfo, after: float = 1.0) -> int:
        sent = self.events[send]
        assert isinstance(sent, OutboundSend)
        assert sent.wamid is not None
        return self._add(
            StatusUpdate(
                at=self._tick(after), user=sent.user, wamid=sent.wamid, status=status, errors=errors
            )
        )

    def conversation(self, *, finished: bool = False) -> Conversation:
        return Conversation.from_events(self.events, participants=(ANA, BEN))


def one(violations: Iterable[Violation]) -> Violation:
    found = list(violations)
    assert len(found) == 1, [v.headline() for v in found]
    return found[0]


# -- the registry ----------------------------------------------------------------------


def test_every_builtin_is_registered_and_documented() -> None:
    assert set(registered()) >= BUILTINS
    for name in BUILTINS:
        found = resolve(name)
        assert found.name == name
        assert found.description


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve("nevr_reasks")
    message = str(caught.value)
    assert "unknown invariant 'nevr_reasks'" in message
    assert "did you mean 'never_reasks'?" in message
    for name in BUILTINS:
        assert name in message
    assert "\n" not in message


def test_usage_shows_parameters_and_defaults() -> None:
    assert resolve("never_reasks").usage == "never_reasks(pattern, fact=None)"
    assert resolve("one_reply_per_burst").usage == (
        "one_reply_per_burst(max_replies=1, gap='1.5s', chunk_min=2000, within='1h')"
    )
    assert resolve("no_repeated_side_effects").usage == "no_repeated_side_effects()"


def test_the_decorator_registers_and_returns_the_function() -> None:
    assert resolve("custom_quiet_agent").function is quiet_agent
    assert "custom_quiet_agent" in registered()
    # registering the same function again (a re-import) is harmless
    assert invariant("custom_quiet_agent")(quiet_agent) is quiet_agent


def test_a_name_belongs_to_one_function() -> None:
    def impostor(conversation: Conversation) -> list[Violation]:
        return []

    with pytest.raises(ConfigError, match="'never_reasks' is already registered by"):
        invariant("never_reasks")(impostor)


@pytest.mark.parametrize("name", ["", "has space", "pkg.mod:fn", "9lives"])
def test_a_registered_name_is_a_plain_identifier(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid invariant name"):
        invariant(name)


def test_an_invariant_must_take_the_conversation_then_keywords() -> None:
    def nothing() -> list[Violation]:
        return []

    def positional(conversation: Conversation, limit: int, /) -> list[Violation]:
        return []

    with pytest.raises(ConfigError, match="must take the conversation as its first argument"):
        invariant("test_shape_nothing")(nothing)
    with pytest.raises(ConfigError, match="parameter 'limit' must be keyword-only"):
        invariant("test_shape_positional")(positional)
    assert "test_shape_nothing" not in registered()


# -- parameters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"never_reasks": {}},
            "invariant 'never_reasks': missing parameter 'pattern' "
            "(usage: never_reasks(pattern, fact=None))",
        ),
        (
            {"never_reasks": {"pattern": "x", "facts": "y"}},
            "invariant 'never_reasks': unknown parameter 'facts'; did you mean 'fact'? "
            "(usage: never_reasks(pattern, fact=None))",
        ),
        (
            {"one_reply_per_burst": {"max_replies": "two"}},
            "invariant 'one_reply_per_burst': parameter 'max_replies': Input should be a "
            "valid integer, unable to parse string as an integer (got 'two')",
        ),
        (
            {"one_reply_per_burst": {"max_replies": 0}},
            "invariant 'one_reply_per_burst': parameter 'max_replies': Input should be "
            "greater than 0 (got 0)",
        ),
        (
            {"never_reasks": {"pattern": "which (day"}},
            "invariant 'never_reasks': parameter 'pattern': not a valid regular expression "
            "(missing ), unterminated subpattern at position 6) (got 'which (day')",
        ),
        (
            {"every_inbound_answered": {"within": "soon"}},
            "invariant 'every_inbound_answered': parameter 'within': bad duration 'soon': "
            "expected a number with a unit (d, h, m, s, ms), e.g. 90s, 5m, 1d2h or 1.5h",
        ),
        (
            {"every_inbound_answered": {"within": "-5s"}},
            "invariant 'every_inbound_answered': parameter 'within': "
            "a duration can't be negative (got '-5s')",
        ),
        (
            {"action_only_after_confirmation": {"phrases": ["yes", 3]}},
            "invariant 'action_only_after_confirmation': parameter 'phrases': [1]: "
            "Input should be a valid string (got 3)",
        ),
        (
            {"sends_valid": {"strict": True}},
            "invariant 'sends_valid': unknown parameter 'strict' (usage: sends_valid())",
        ),
    ],
)
def test_bad_parameters_are_one_line_naming_invariant_and_parameter(
    spec: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        bind(spec)
    assert str(caught.value) == expected


def test_parameters_are_converted_to_the_functions_types() -> None:
    bound = bind(
        {
            "every_inbound_answered": {"within": "30s", "ignore": "reaction"},
        }
    )
    assert bound.params == {"within": timedelta(seconds=30), "ignore": ("reaction",)}
    assert bind({"one_reply_per_burst": {"gap": 2}}).params == {"gap": timedelta(seconds=2)}
    phrases = bind({"action_only_after_confirmation": {"phrases": ["si", "dale"]}}).params
    assert phrases == {"phrases": ("si", "dale")}


def test_a_parameter_name_must_be_text() -> None:
    from_yaml: Any = {1: True}  # YAML keys may be numbers
    with pytest.raises(ConfigError, match="parameter names must be text, got 1"):
        resolve("sends_valid").validate(from_yaml)


# -- specs as YAML writes them ---------------------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [
        {"never_reasks": {"pattern": "which day"}},
        {"name": "never_reasks", "params": {"pattern": "which day"}},
        ("never_reasks", {"pattern": "which day"}),
        InvariantSpec(name="never_reasks", params={"pattern": "which day"}),
    ],
)
def test_spec_shapes_with_parameters(obj: object) -> None:
    assert parse_spec(obj) == InvariantSpec(name="never_reasks", params={"pattern": "which day"})


@pytest.mark.parametrize(
    "obj",
    ["sends_valid", " sends_valid ", {"sends_valid": None}, {"name": "sends_valid"}],
)
def test_spec_shapes_without_parameters(obj: object) -> None:
    assert parse_spec(obj) == InvariantSpec(name="sends_valid", params={})


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (3, "an invariant spec is a name, {name: {params}} or {name: ..., params: {...}}; got 3"),
        (["sends_valid"], "an invariant spec is a name"),
        ({"a": {}, "b": {}}, "an invariant spec is a name"),
        ({}, "an invariant spec is a name"),
        ({"never_reasks": "which day"}, "invariant 'never_reasks': params must be a mapping"),
        ({"name": "sends_valid", "parms": {}}, "invariant 'sends_valid': unexpected key 'parms'"),
        ({"name": 5}, "an invariant name must be non-empty text, got 5"),
        ("  ", "an invariant name must be non-empty text"),
    ],
)
def test_bad_spec_shapes(obj: object, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_spec(obj)
    assert str(caught.value).startswith(expected)
    assert "\n" not in str(caught.value)


@dataclass(frozen=True)
class ScenarioInvariant:
    """Stands in for the scenario loader's parsed invariant: name, params and line."""

    name: str
    params: dict[str, Any]
    line: int | None = None


def test_a_parsed_scenario_invariant_is_a_spec_and_its_line_reaches_the_violations() -> None:
    spec = parse_spec(ScenarioInvariant("every_inbound_answered", {"within": "1m"}, line=12))
    assert spec == InvariantSpec(name="every_inbound_answered", params={"within": "1m"}, line=12)
    log = Log()
    log.user("hi")
    violation = one(check(log.conversation(), [ScenarioInvariant("every_inbound_answered", {}, 7)]))
    assert violation.line == 7
    assert violation.headline() == (
        "every_inbound_answered at turn 1 (line 7): the message got no answer from the agent"
    )
    crash = one(check(log.conversation(), [ScenarioInvariant(f"{PLUGINS}:broken", {}, 9)]))
    assert crash.line == 9


# -- plugins by import path ------------------------------------------------------------


def _emoji_conversation() -> Conversation:
    log = Log()
    log.user("hi")
    log.agent("Hello! 😀 What can I book for you?")
    return log.conversation()


def test_an_import_path_loads_a_plain_function() -> None:
    found = resolve(f"{PLUGINS}:no_emojis")
    assert isinstance(found, Invariant)
    assert found.name == f"{PLUGINS}:no_emojis"
    conversation = _emoji_conversation()
    violation = one(check(conversation, [f"{PLUGINS}:no_emojis"]))
    assert violation.rule == "no_emojis"
    assert violation.turn == 0
    assert violation.messages == ("[turn 1] agent: Hello! 😀 What can I book for you?",)
    assert check(conversation, [{f"{PLUGINS}:no_emojis": {"allowed": "😀"}}]) == []


def test_a_plugins_parameters_are_validated_too() -> None:
    with pytest.raises(ConfigError, match=r"parameter 'allowed': Input should be a valid string"):
        bind({f"{PLUGINS}:no_emojis": {"allowed": 3}})


def test_an_import_path_to_a_decorated_function_keeps_its_registered_name() -> None:
    assert resolve(f"{PLUGINS}:quiet_agent").name == "custom_quiet_agent"


def test_an_import_path_finds_a_module_in_the_folder_you_run_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As with --target-url, where no agent is imported from here first: only the folder counts.
    (tmp_path / "folder_checks.py").write_text(
        "def no_goodbye(conversation):\n    return []\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", ".")])
    monkeypatch.delitem(sys.modules, "folder_checks", raising=False)
    try:
        assert resolve("folder_checks:no_goodbye").name == "folder_checks:no_goodbye"
    finally:
        sys.modules.pop("folder_checks", None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "tests.harness.no_such_module:fn",
            "invariant 'tests.harness.no_such_module:fn': can't import "
            "'tests.harness.no_such_module' (ModuleNotFoundError: No module named "
            "'tests.harness.no_such_module')",
        ),
        (
            f"{PLUGINS}:missing",
            f"invariant '{PLUGINS}:missing': '{PLUGINS}' has no 'missing'",
        ),
        (
            f"{PLUGINS}:NOT_A_FUNCTION",
            "invariant '{PLUGINS}:NOT_A_FUNCTION' is not callable (got 42)",
        ),
        (f"{PLUGINS}:", f"invariant '{PLUGINS}:': an import path is package.module:function"),
        (
            f"{PLUGINS}:takes_positional",
            f"invariant '{PLUGINS}:takes_positional': parameter 'limit' must be keyword-only",
        ),
    ],
)
def test_import_paths_that_cannot_load(path: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(path)
    assert str(caught.value).startswith(expected.replace("{PLUGINS}", PLUGINS))


# -- running specs ---------------------------------------------------------------------


def test_check_runs_specs_in_order_and_is_empty_when_all_hold() -> None:
    log = Log()
    log.user("hi")
    log.agent("Hello!")
    conversation = log.conversation()
    assert check(conversation, sorted(BUILTINS - {"never_reasks", "constraint_honored"})) == []
    log.user("anyone there?")
    failing = log.conversation()
    found = check(failing, ["every_inbound_answered", f"{PLUGINS}:no_emojis", "sends_valid"])
    assert [v.rule for v in found] == ["every_inbound_answered"]


def test_an_invariant_that_raises_becomes_a_violation_of_its_rule() -> None:
    log = Log()
    log.user("hi")
    conversation = log.conversation()
    found = check(conversation, [f"{PLUGINS}:broken", "every_inbound_answered"])
    assert [v.rule for v in found] == [f"{PLUGINS}:broken", "every_inbound_answered"]
    crash = found[0]
    assert crash.message.startswith(
        "the invariant itself failed with IndexError: tuple index out of range"
    )
    assert "(custom_invariants.py:" in crash.message
    assert crash.turn is None


def test_an_invariant_that_yields_something_else_becomes_a_violation() -> None:
    crash = one(check(Log().conversation(), [f"{PLUGINS}:not_violations"]))
    assert crash.message.startswith("the invariant itself failed with TypeError: it yielded a str")


def test_a_bad_spec_fails_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match="unknown invariant 'nope'"):
        check(Log().conversation(), [f"{PLUGINS}:broken", "nope"])


def test_bind_gives_a_runnable_invariant() -> None:
    bound = bind({"never_reasks": {"pattern": "which day"}})
    assert isinstance(bound, BoundInvariant)
    assert bound.name == "never_reasks"
    assert bound.spec == InvariantSpec(name="never_reasks", params={"pattern": "which day"})
    assert bound.run(Log().conversation()) == []


def test_calling_an_invariant_validates_then_runs_it() -> None:
    found = resolve("one_reply_per_burst")
    assert found(Log().conversation(), {"max_replies": 2}) == []
    with pytest.raises(ConfigError):
        found(Log().conversation(), {"max_replies": -1})


# -- rendering -------------------------------------------------------------------------


def _at(seconds: float = 0) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            InboundMessage(at=_at(), user="ana", wamid="w", type="text", text="yes please"),
            "user Ana: yes please",
        ),
        (
            InboundMessage(
                at=_at(), user="ana", wamid="w", type="text", text="yes", duplicate=True
            ),
            "user Ana (redelivered): yes",
        ),
        (
            InboundMessage(
                at=_at(), user="ana", wamid="w", type="interactive", text="Confirm", reply_id="ok"
            ),
            "user Ana: Confirm [button ok]",
        ),
        (InboundMessage(at=_at(), user="ana", wamid="w", type="image"), "user Ana: <image>"),
        (
            InboundMessage(at=_at(), user="15559990000", wamid="w", type="text", text="hi"),
            "user 15559990000: hi",
        ),
        (OutboundSend(at=_at(), user="ana", type="text", text="Booked"), "agent: Booked"),
        (
            OutboundSend(at=_at(), user="ana", type="interactive", text="Friday 9:00?"),
            "agent (interactive): Friday 9:00?",
        ),
        (
            OutboundSend(
                at=_at(),
                user="ana",
                type="template",
                request={"template": {"name": "reminder"}},
                in_window=False,
            ),
            "agent (template reminder)",
        ),
        (
            OutboundSend(
                at=_at(),
                user="ana",
                type="text",
                text="Hello",
                in_window=False,
                error=WINDOW_CLOSED,
            ),
            "agent (window closed): Hello -> refused 131047 (Re-engagement message: "
            "More than 24 hours have passed since the customer last replied.)",
        ),
        (OutboundSend(at=_at(), user="ana", type="mark_read"), "agent mark_read"),
        (
            ToolCall(at=_at(), name="book_appointment", args={"date": "2026-01-09", "n": 2}),
            "tool book_appointment(date='2026-01-09', n=2)",
        ),
        (
            ToolCall(at=_at(), name="book_appointment", args={"step_free": True}, error="full"),
            "tool book_appointment(step_free=True) -> error: full",
        ),
        (
            StatusUpdate(at=_at(), user="ana", wamid="o", status="failed", errors=(WINDOW_CLOSED,)),
            "status failed 131047 (Re-engagement message)",
        ),
        (StatusUpdate(at=_at(), user="ana", wamid="o", status="read"), "status read"),
        (
            LLMExchange(at=_at(), key="k", model="claude-x", stop_reason="tool_use"),
            "llm claude-x via an unrecorded provider (stop tool_use)",
        ),
        (
            LLMExchange(at=_at(), key="k", model="claude-x", provider="anthropic"),
            "llm claude-x via the Anthropic API",
        ),
        (
            LLMExchange(
                at=_at(), key="k", model="claude-x", provider="offline-stand-in", source="recorded"
            ),
            "llm recorded: the offline stand-in (no model), asked for claude-x",
        ),
        (ClockJump(at=_at(90000), previous=_at(), reason="wait"), "clock +1d1h (wait)"),
        (
            DeliveryAttempt(at=_at(), delivery="d1", attempt=2, status_code=500, faults=("retry",)),
            "delivery d1 attempt 2 -> 500 [retry]",
        ),
        (DeliveryAttempt(at=_at(), delivery="d2"), "delivery d2 attempt 1 -> no answer"),
    ],
)
def test_render_event(event: Event, line: str) -> None:
    assert render_event(event, names={"ana": "Ana"}) == line
    assert render_event(event, 1, names={"ana": "Ana"}) == f"[turn 2] {line}"


def test_render_event_clips_long_text_and_names_recipients() -> None:
    long = OutboundSend(at=_at(), user="ben", type="text", text="word " * 1000)
    line = render_event(long, names={"ben": "Ben"}, recipient=True)
    assert line.startswith("agent to Ben: word word")
    assert line.endswith("… (+4840 chars)")
    assert len(line) < 200


def test_transcript_maps_events_to_turns_also_after_a_json_round_trip() -> None:
    log = Log()
    log.user("book friday")
    same = ToolCall(at=T0, user="ana", name="book_appointment", args=dict(FRIDAY))
    log.events.append(same)
    log.agent("Booked")
    log.user("and again")
    log.events.append(same)  # the very same object, twice in the log
    log.agent(None, type="typing")
    conversation = log.conversation()
    loaded = Conversation.model_validate_json(conversation.model_dump_json())
    expected = [
        "[turn 1] user Ana: book friday",
        f"[turn 1] {FRIDAY_CALL}",
        "[turn 1] agent: Booked",
        "[turn 2] user Ana: and again",
        f"[turn 2] {FRIDAY_CALL}",
        "[turn 2] agent typing",
    ]
    for conv in (conversation, loaded):
        t = Transcript(conv)
        assert t.lines() == expected
        assert [t.turn(i) for i in range(6)] == [0, 0, 0, 1, 1, 1]
        assert t.turn_events(1) == [3, 4, 5]
    assert check(loaded, sorted(BUILTINS - {"never_reasks", "constraint_honored"})) == check(
        conversation, sorted(BUILTINS - {"never_reasks", "constraint_honored"})
    )


def test_events_before_the_first_turn_have_no_turn() -> None:
    log = Log()
    log.agent(None, template="ready", type="template")
    log.user("thanks")
    t = Transcript(log.conversation())
    assert t.turn(0) is None
    assert t.line(0) == "agent (template ready)"
    violation = t.violation("x", "y", [0])
    assert violation.turn is None
    assert violation.messages == ("agent (template ready)",)


# -- action only after confirmation ----------------------------------------------------


def test_action_only_after_confirmation_holds_after_a_typed_yes_and_a_button() -> None:
    log = Log()
    log.user("Table for two on Friday at 9?")
    log.agent("Friday 9:00 for two: shall I book it?", type="interactive")
    log.user("Yes please")
    log.tool("book_appointment", FRIDAY)
    log.agent("Booked for Friday 9:00")
    log.user("And Saturday at 9 too")
    log.agent("Saturday 9:00 for two?", type="interactive")
    log.user("Confirm", type="interactive", reply_id="confirm")
    log.tool("book_appointment", {"date": "2026-01-10", "slot": "09:00"})
    log.tool("search_slots", {"date": "2026-01-11"}, side_effect=False)
    assert list(action_only_after_confirmation(log.conversation())) == []


def test_action_only_after_confirmation_fails_on_a_booking_nobody_confirmed() -> None:
    log = Log()
    log.user("hi")
    greeting = log.agent("Hi! What can I book for you?")
    asked = log.user("Friday at 9 please")
    call = log.tool("book_appointment", FRIDAY)
    log.agent("Booked for Friday 9:00")
    violation = one(check(log.conversation(), ["action_only_after_confirmation"]))
    assert violation.rule == "action_only_after_confirmation"
    assert violation.turn == 1
    assert violation.message == (
        "book_appointment was called before the user confirmed the agent's proposal"
    )
    assert violation.messages == (
        "[turn 1] agent: Hi! What can I book for you?",
        "[turn 2] user Ana: Friday at 9 please",
        f"[turn 2] {FRIDAY_CALL}",
    )
    assert violation.events == (greeting, asked, call)
    assert violation.headline().startswith("action_only_after_confirmation at turn 2: ")


def test_a_yes_before_any_proposal_confirms_nothing() -> None:
    log = Log()
    log.user("yes, book Friday at 9")
    log.tool("book_appointment", FRIDAY)
    violation = one(action_only_after_confirmation(log.conversation()))
    assert violation.turn == 0
    assert "before the agent proposed anything" in violation.message


def test_a_confirmation_allows_one_call_and_a_redelivered_yes_confirms_nothing() -> None:
    log = Log()
    log.user("Friday at 9")
    log.agent("Friday 9:00: shall I book it?")
    yes = log.user("yes")
    log.tool("book_appointment", FRIDAY)
    log.agent("Booked!")
    log.redeliver(yes)
    again = log.tool("book_appointment", FRIDAY)
    violation = one(action_only_after_confirmation(log.conversation()))
    assert violation.turn == 1
    assert violation.events[-1] == again
    assert violation.messages[-1] == f"[turn 2] {FRIDAY_CALL}"


def test_a_second_call_on_a_used_confirmation_says_so_and_never_that_nothing_was_proposed() -> None:
    log = Log()
    log.user("Friday at 9")
    log.agent("Friday 9:00: shall I book it?")
    yes = log.user("yes")
    first = log.tool("book_appointment", FRIDAY)
    log.agent("Booked!")
    log.redeliver(yes)
    again = log.tool("book_appointment", FRIDAY)
    found = action_only_after_confirmation(log.conversation(), proposal="shall I")
    violation = one(found)
    assert "proposed anything" not in violation.message
    assert violation.message == (
        "book_appointment was called again with no new proposal since its call in turn 2"
    )
    assert violation.events == (first, again)


def test_action_only_after_confirmation_parameters() -> None:
    log = Log()
    log.agent("Cancel booking BK-0001?")
    log.user("dale")
    log.tool("cancel_booking", {"booking_id": "BK-0001"})
    conversation = log.conversation()
    spec = {"tool": "cancel_booking", "phrases": ["si", "dale"]}
    assert check(conversation, [{"action_only_after_confirmation": spec}]) == []
    assert len(
        check(conversation, [{"action_only_after_confirmation": {"tool": "cancel_booking"}}])
    )
    # with a proposal pattern, a greeting proposes nothing
    log2 = Log()
    log2.user("hi")
    log2.agent("Hello!")
    log2.user("ok book friday 9")
    log2.tool("book_appointment", FRIDAY)
    conversation2 = log2.conversation()
    assert list(action_only_after_confirmation(conversation2)) == []
    assert len(list(action_only_after_confirmation(conversation2, proposal=r"shall I book")))


def test_confirmations_are_per_user() -> None:
    log = Log()
    log.user("Friday at 9")
    log.agent("Shall I book Friday 9:00?")
    log.user("Friday at 9", who="ben")
    log.agent("Shall I book Friday 9:00?", who="ben")
    log.user("yes")
    log.tool("book_appointment", {**FRIDAY, "customer": "ben"}, who="ben")
    violation = one(action_only_after_confirmation(log.conversation()))
    assert violation.turn == 1
    assert violation.messages == (
        "[turn 2] agent to Ben: Shall I book Friday 9:00?",
        "[turn 2] tool book_appointment(date='2026-01-09', slot='09:00', customer='ben')",
    )


# -- never re-ask ----------------------------------------------------------------------


def test_never_reasks_with_a_fact_holds_when_the_agent_uses_it() -> None:
    log = Log()
    log.agent("Which day would you like?")
    log.user("Friday please")
    log.agent("Friday it is. What time?")
    found = never_reasks(log.conversation(), pattern="which (day|date)", fact="friday|saturday")
    assert list(found) == []


def test_never_reasks_with_a_fact_fails_when_the_agent_asks_for_it_again() -> None:
    log = Log()
    log.user("hi")
    log.agent("Hello! How can I help?")
    gave = log.user("A table for two on Friday please")
    log.agent("Sure. What time?")
    log.user("9am")
    asked = log.agent("Great, and which day would you like?")
    spec = {"never_reasks": {"pattern": "which (day|date)", "fact": r"friday|\d{4}-\d\d-\d\d"}}
    violation = one(check(log.conversation(), [spec]))
    assert violation.turn == 2
    assert violation.message == "the agent asked for something the user already gave in turn 2"
    assert violation.messages == (
        "[turn 2] user Ana: A table for two on Friday please",
        "[turn 3] agent: Great, and which day would you like?",
    )
    assert violation.events == (gave, asked)


def test_never_reasks_without_a_fact_fails_on_a_question_asked_again_after_an_answer() -> None:
    log = Log()
    log.user("book a table")
    first = log.agent("Which day would you like?")
    log.agent("Which day suits you?")  # asked twice before any answer: not a re-ask
    answer = log.user("the 9th")
    again = log.agent("Sorry, which day was that?")
    violation = one(never_reasks(log.conversation(), pattern="which day"))
    assert violation.turn == 1
    assert violation.message == "the agent asked again what the user already answered in turn 2"
    assert violation.events == (first + 1, answer, again)
    assert violation.messages[-1] == "[turn 2] agent: Sorry, which day was that?"
    assert first == 1


# -- a constraint stays honored --------------------------------------------------------


def _wheelchair_log(notes: str, step_free: bool) -> tuple[Log, int, int]:
    log = Log()
    log.tool("book_appointment", {**FRIDAY, "notes": ""}, who=None)  # before it was said
    stated = log.user("I use a wheelchair")
    log.agent("Noted. Friday 9:00 in the garden room, step-free. Book it?")
    log.user("yes")
    call = log.tool("book_appointment", {**FRIDAY, "notes": notes, "step_free": step_free})
    return log, stated, call


def test_constraint_honored_holds_when_the_booking_carries_it() -> None:
    log, _, _ = _wheelchair_log("wheelchair user", True)
    conversation = log.conversation()
    assert list(constraint_honored(conversation, mention="wheelchair", arg="notes")) == []
    assert list(constraint_honored(conversation, mention="wheelchair", require="true")) == []
    spec = {"mention": "wheelchair", "reply_require": "step-free"}
    assert check(conversation, [{"constraint_honored": spec}]) == []


def test_constraint_honored_fails_when_a_later_booking_drops_it() -> None:
    log, stated, call = _wheelchair_log("", False)
    spec = {"constraint_honored": {"mention": "wheelchair|step-free", "arg": "notes"}}
    violation = one(check(log.conversation(), [spec]))
    assert violation.turn == 1
    assert violation.message == (
        "book_appointment dropped the need the user stated in turn 1: "
        "its 'notes' argument does not match 'wheelchair|step-free'"
    )
    assert violation.messages == (
        "[turn 1] user Ana: I use a wheelchair",
        "[turn 2] tool book_appointment(date='2026-01-09', slot='09:00', notes='', "
        "step_free=False)",
    )
    assert violation.events == (stated, call)
    found = one(constraint_honored(log.conversation(), mention="wheelchair", require="true"))
    assert "no argument matches 'true'" in found.message


def test_constraint_honored_checks_proposals_with_reply_require() -> None:
    log = Log()
    log.user("vegan menu please")
    proposal = log.agent("Friday 9:00, set menu. Book it?")
    log.user("yes")
    call = log.tool("book_appointment", {**FRIDAY, "notes": "vegan"})
    violation = one(constraint_honored(log.conversation(), mention="vegan", reply_require="vegan"))
    assert violation.message == (
        "the proposal before book_appointment dropped the need stated in turn 1"
    )
    assert violation.events == (0, proposal, call)
    by_pattern = one(
        constraint_honored(
            log.conversation(), mention="vegan", reply_require="vegan", proposal="book it"
        )
    )
    assert by_pattern.events == (0, proposal)
    assert by_pattern.turn == 0


# -- one reply per burst ---------------------------------------------------------------


def test_one_reply_per_burst_holds_for_a_debounced_answer() -> None:
    log = Log()
    log.user("hi")
    log.user("table for 2", after=1)
    log.user("friday?", after=1)
    log.agent(None, type="mark_read")
    log.agent(None, type="typing")
    log.agent("Friday has 9:00 and 11:00 free.", after=2)
    log.user("9 please", after=3)
    log.agent("Booked?")
    log.agent("Also, we have a terrace!")  # two replies to one message: not a burst
    assert list(one_reply_per_burst(log.conversation())) == []


def test_one_reply_per_burst_fails_when_each_fragment_is_answered() -> None:
    # the fragments were each answered at once, so the turns split them ...
    log = Log()
    parts = [log.user("hi")]
    replies = [log.agent("Hello!", after=0.2)]
    parts.append(log.user("table for 2", after=0.8))
    replies.append(log.agent("For when?", after=0.2))
    parts.append(log.user("friday?", after=0.8))
    replies.append(log.agent("Friday works.", after=0.2))
    conversation = log.conversation()
    assert [len(t.messages) for t in conversation.turns] == [1, 1, 1]
    # ... but the burst is still seen by its timing
    violation = one(check(conversation, ["one_reply_per_burst"]))
    assert violation.turn == 1
    assert violation.message == "a burst of 3 messages got 3 separate replies, more than 1"
    assert violation.messages == (
        "[turn 1] user Ana: hi",
        "[turn 1] agent: Hello!",
        "[turn 2] user Ana: table for 2",
        "[turn 2] agent: For when?",
        "[turn 3] user Ana: friday?",
        "[turn 3] agent: Friday works.",
    )
    assert violation.events == tuple(sorted([*parts, *replies]))
    assert list(one_reply_per_burst(conversation, gap=timedelta(0))) == []
    assert list(one_reply_per_burst(conversation, max_replies=3)) == []


def test_one_reply_per_burst_fails_for_several_replies_in_one_turn() -> None:
    log = Log()
    log.user("hi")
    log.user("friday at 9?", after=4)
    log.agent("Hello!", after=2)
    second = log.agent("Friday 9:00 is free.", type="interactive")
    violation = one(one_reply_per_burst(log.conversation()))
    assert violation.turn == 0
    assert violation.events == (0, 1, 2, second)


def test_a_long_reply_split_into_chunks_counts_once() -> None:
    log = Log()
    log.user("all the policies")
    log.user("please", after=1)
    log.agent("x" * 4000, after=2)
    log.agent("y" * 2500)
    log.agent("z" * 100)
    conversation = log.conversation()
    assert list(one_reply_per_burst(conversation)) == []
    assert len(list(one_reply_per_burst(conversation, chunk_min=4096))) == 1


# -- no repeated side effects ----------------------------------------------------------


def test_no_repeated_side_effects_holds_for_an_ignored_redelivery() -> None:
    log = Log()
    log.agent("Friday 9:00?")
    yes = log.user("yes")
    booked = log.tool("book_appointment", FRIDAY, error="calendar down")
    log.tool("book_appointment", FRIDAY)  # a retry after a failure is fine
    log.tool("search_slots", FRIDAY, side_effect=False)
    log.tool("search_slots", FRIDAY, side_effect=False)
    log.redeliver(yes)
    log.user("cancel it")
    log.tool("cancel_booking", {"booking_id": "BK-0001"})
    log.user("actually book it again")
    log.tool("book_appointment", FRIDAY)  # a state change came in between
    assert booked == 2
    assert list(no_repeated_side_effects(log.conversation())) == []


def test_a_redelivered_message_that_books_again_is_a_violation() -> None:
    log = Log()
    log.agent("Shall I book Friday 9:00?")
    yes = log.user("yes")
    first = log.tool("book_appointment", FRIDAY)
    log.agent("Booked!")
    copy = log.redeliver(yes)
    again = log.tool("book_appointment", FRIDAY)
    violation = one(check(log.conversation(), ["no_repeated_side_effects"]))
    assert violation.turn == 0
    assert violation.message == (
        "the redelivered message 'yes' made book_appointment run again (first in turn 1)"
    )
    assert violation.messages == (
        "[turn 1] user Ana: yes",
        f"[turn 1] {FRIDAY_CALL}",
        "[turn 1] user Ana (redelivered): yes",
        f"[turn 1] {FRIDAY_CALL}",
    )
    assert violation.events == (yes, first, copy, again)


def test_a_redelivery_repeat_is_caught_even_with_different_arguments() -> None:
    log = Log()
    yes = log.user("yes")
    log.tool("book_appointment", {**FRIDAY, "notes": "Ana"})
    log.tool("send_email", {"to": "ana@example.com"})
    log.redeliver(yes)
    again = log.tool("book_appointment", {**FRIDAY, "notes": "Ana, 2 people"})
    violation = one(no_repeated_side_effects(log.conversation()))
    assert violation.events[-1] == again
    assert "made book_appointment run again" in violation.message


def test_a_late_redelivery_only_counts_identical_repeats() -> None:
    log = Log()
    yes = log.user("yes")
    log.tool("book_appointment", FRIDAY)
    log.user("and Saturday too")
    log.redeliver(yes)
    log.tool("book_appointment", {"date": "2026-01-10", "slot": "09:00"})
    assert list(no_repeated_side_effects(log.conversation())) == []


def test_the_same_side_effect_twice_without_redelivery_is_a_violation() -> None:
    log = Log()
    log.user("book friday at 9")
    first = log.tool("book_appointment", FRIDAY)
    log.tool("search_slots", FRIDAY, side_effect=False)
    second = log.tool("book_appointment", FRIDAY)
    violation = one(no_repeated_side_effects(log.conversation()))
    assert violation.message == (
        "book_appointment ran again with the same arguments (first in turn 1)"
    )
    assert violation.events == (first, second)


# -- no repeated answer -----------------------------------------------------------------


def test_a_redelivered_message_answered_again_is_a_violation() -> None:
    log = Log()
    hi = log.user("hi")
    first = log.agent("Hello!")
    copy = log.redeliver(hi)
    again = log.agent("Hello!")
    violation = one(check(log.conversation(), ["no_repeated_answer"]))
    assert (
        violation.message
        == "the redelivered message 'hi' was answered again (first answered in turn 1)"
    )
    assert violation.events == (hi, first, copy, again)
    assert violation.turn == 0


def test_a_copy_left_unanswered_holds_and_so_does_the_next_message() -> None:
    log = Log()
    hi = log.user("hi")
    log.agent("Hello!")
    log.redeliver(hi)
    log.agent(None, type="mark_read")  # a receipt for the copy is no answer
    log.user("book friday")
    log.agent("Friday is free!")
    assert check(log.conversation(), ["no_repeated_answer"]) == []


def test_a_copy_before_any_answer_is_not_judged() -> None:
    # Two messages after both copies: one answer in two parts, or one answer each; no telling.
    log = Log()
    hi = log.user("hi")
    log.redeliver(hi, after=0.1)
    log.agent("Hello!")
    log.agent("How can I help?")
    assert check(log.conversation(), ["no_repeated_answer"]) == []


def test_a_copy_of_a_message_whose_answer_meta_refused_may_be_answered() -> None:
    log = Log()
    hi = log.user("hi")
    log.agent("Hello!", error=WINDOW_CLOSED)
    log.redeliver(hi)
    log.agent("Hello!")
    assert check(log.conversation(), ["no_repeated_answer"]) == []


def test_each_user_is_judged_on_their_own_answers() -> None:
    log = Log()
    hi = log.user("hi")
    log.agent("Hello Ben!", who="ben")  # Ben's answer does not answer Ana
    log.redeliver(hi)
    log.agent("Hello Ana!")
    log.user("hey", who="ben")
    assert check(log.conversation(), ["no_repeated_answer"]) == []


# -- the 24-hour window ----------------------------------------------------------------


def test_no_freeform_outside_window_holds_for_templates() -> None:
    log = Log()
    log.user("hi")
    sent = log.agent("Hello!")
    log.status(sent, "delivered")
    log.agent(None, type="template", template="reminder", in_window=False, after=90000)
    assert list(no_freeform_outside_window(log.conversation())) == []


def test_a_free_text_after_the_window_closed_is_a_violation_with_its_failed_status() -> None:
    log = Log()
    log.user("hi")
    log.agent("Hello!")
    log.user("book friday")
    late = log.agent("Friday is free!", after=25 * 3600, in_window=False)
    failed = log.status(late, "failed", WINDOW_CLOSED, after=60)
    violation = one(check(log.conversation(), ["no_freeform_outside_window"]))
    assert violation.turn == 1
    assert violation.message == (
        "a free-form text message went out with the 24-hour window closed, "
        "and it failed with 131047"
    )
    assert violation.messages == (
        "[turn 2] agent (window closed): Friday is free!",
        "[turn 2] status failed 131047 (Re-engagement message)",
    )
    assert violation.events == (late, failed)


def test_a_free_text_the_channel_saw_outside_the_window_is_a_violation_before_any_status() -> None:
    # The run ended before Meta's failed status came: what the channel saw is enough.
    log = Log()
    log.user("hi")
    late = log.agent("Still there?", after=25 * 3600, in_window=False)
    violation = one(check(log.conversation(), ["no_freeform_outside_window"]))
    assert violation.events == (late,)
    assert violation.message == ("a free-form text message went out with the 24-hour window closed")


def test_a_send_refused_with_131047_and_a_stray_failed_status_are_violations() -> None:
    log = Log()
    log.user("hi")
    refused = log.agent("Hello!", in_window=None, error=WINDOW_CLOSED)
    stray = log._add(
        StatusUpdate(
            at=T0, user="ana", wamid="wamid.unknown", status="failed", errors=(WINDOW_CLOSED,)
        )
    )
    first, second = no_freeform_outside_window(log.conversation())
    assert first.events == (refused,)
    assert second.events == (stray,)
    assert second.message == "a message failed with 131047: the 24-hour window was closed"


# -- every send valid ------------------------------------------------------------------


def test_sends_valid_holds_when_every_send_is_delivered() -> None:
    log = Log()
    log.user("hi")
    sent = log.agent("Hello!")
    for status in ("sent", "delivered", "read"):
        log.status(sent, status)
    assert list(sends_valid(log.conversation())) == []


def test_sends_valid_fails_on_a_refused_send_and_a_failed_status() -> None:
    log = Log()
    log.user("hi")
    refused = log.agent(
        "x" * 5000,
        error=ErrorInfo(
            code=100, title="Invalid parameter", details="text.body is longer than 4096"
        ),
    )
    log.user("hello?")
    sent = log.agent("Sorry! Here you go.", type="interactive")
    failed = log.status(
        sent, "failed", ErrorInfo(code=131026, title="Message undeliverable"), after=30
    )
    refusal, failure = check(log.conversation(), ["sends_valid"])
    assert refusal.turn == 0
    assert refusal.message == (
        "the Graph API refused a text send with 100 (Invalid parameter: text.body is longer "
        "than 4096)"
    )
    assert refusal.events == (refused,)
    assert refusal.messages[0].endswith(
        "-> refused 100 (Invalid parameter: text.body is longer than 4096)"
    )
    assert failure.turn == 1
    assert failure.message == (
        "an interactive message failed to deliver: 131026 (Message undeliverable)"
    )
    assert failure.messages == (
        "[turn 2] agent (interactive): Sorry! Here you go.",
        "[turn 2] status failed 131026 (Message undeliverable)",
    )
    assert failure.events == (sent, failed)


# -- every inbound answered ------------------------------------------------------------


def test_every_inbound_answered_holds_when_each_burst_gets_a_reply() -> None:
    log = Log()
    log.user("hi")
    log.user("table for 2?", after=1)
    log.agent("Hello! For when?", after=3)
    log.user("friday", after=3600)
    log.agent("Friday it is.", after=20)
    log.user("👍", type="reaction")  # a reaction needs no answer
    conversation = log.conversation()
    assert list(every_inbound_answered(conversation)) == []
    assert check(conversation, [{"every_inbound_answered": {"within": "30s"}}]) == []


def test_every_inbound_answered_fails_for_an_unanswered_burst() -> None:
    log = Log()
    log.user("hi")
    log.agent("Hello!")
    first = log.user("are you open on sunday?")
    second = log.user("for lunch", after=2)
    log.agent(None, type="mark_read")
    violation = one(check(log.conversation(), ["every_inbound_answered"]))
    assert violation.turn == 1
    assert violation.message == "the burst of 2 messages got no answer from the agent"
    assert violation.messages == (
        "[turn 2] user Ana: are you open on sunday?",
        "[turn 2] user Ana: for lunch",
    )
    assert violation.events == (first, second)


def test_a_bot_marking_each_fragment_read_has_not_answered_it() -> None:
    # A bot that marks each message read (with "typing...") as it comes, then
    # answers: the receipts end no burst, so the fragments are one turn.
    log = Log()
    messages = []
    for text in ("one", "two", "three"):
        messages.append(log.user(text, after=0.2))
        log.agent(None, type="mark_read", after=0.01)
        log.agent(None, type="typing", after=0.01)
    log.agent("You said one, two and three.", after=1.5)
    conversation = log.conversation()
    assert [len(t.messages) for t in conversation.turns] == [3]
    assert check(conversation, ["every_inbound_answered", "one_reply_per_burst"]) == []


def test_every_inbound_answered_takes_a_burst_the_agents_work_split_as_one() -> None:
    # The channel played three messages as one burst; the agent called its
    # model for each (so each is a turn) and answered once, after the last.
    log = Log()
    for text in ("one", "two", "three"):
        log.user(text, after=0.2, burst="b1")
        log.tool("think", {}, after=0.05)
    log.agent("You said one, two and three.", after=1.5)
    conversation = log.conversation()
    assert len(conversation.turns) == 3
    assert check(conversation, ["every_inbound_answered", "one_reply_per_burst"]) == []
    # Unmarked, the same turns are three bursts, and the first two went unanswered.
    unmarked = Log()
    for text in ("one", "two", "three"):
        unmarked.user(text, after=0.2)
        unmarked.tool("think", {}, after=0.05)
    unmarked.agent("You said one, two and three.", after=1.5)
    violations = check(unmarked.conversation(), ["every_inbound_answered"])
    assert [(v.turn, v.message) for v in violations] == [
        (0, "the message got no answer from the agent"),
        (1, "the message got no answer from the agent"),
    ]


def test_every_inbound_answered_within_a_time_limit() -> None:
    log = Log()
    asked = log.user("hi")
    answered = log.agent("Hello!", after=45)
    conversation = log.conversation()
    violation = one(every_inbound_answered(conversation, within=timedelta(seconds=30)))
    assert violation.turn == 0
    assert violation.message == (
        "the first answer came 45s after the user's last message, more than 30s"
    )
    assert violation.events == (asked, answered)
    assert list(every_inbound_answered(conversation, within=timedelta(minutes=1))) == []
    assert check(conversation, [{"every_inbound_answered": {"within": 60}}]) == []
    assert len(check(conversation, [{"every_inbound_answered": {"within": 44.5}}])) == 1


def test_a_rule_naming_a_tool_the_agent_never_called_but_one_near_it_says_so() -> None:
    # Spelled book_apointment, the rule would hold however often book_appointment ran.
    log = Log()
    log.user("Friday at 9 please")
    call = log.tool("book_appointment", FRIDAY)
    conversation = log.conversation()
    for found in (
        action_only_after_confirmation(conversation, tool="book_apointment"),
        constraint_honored(conversation, mention="wheelchair", tool="book_apointment"),
    ):
        violation = one(found)
        assert violation.message == (
            "the rule names tool 'book_apointment', which the agent never called; "
            "it called 'book_appointment': is the name misspelled?"
        )
        assert violation.events == (call,)
    # A name far from every call is a tool this run did not use, not a typo.
    assert list(action_only_after_confirmation(conversation, tool="cancel_booking")) == []
