"""The bundled suite in scenarios/booking against the reference agent and its planted bugs.

With no regression on, every scenario passes through the WhatsApp channel.
With each planted regression on, exactly the scenarios listed below fail,
each with exactly the invariants listed: so a test fails when a regression
stops being caught, and when it breaks a scenario that has nothing to do
with it. Through the direct channel the conversation logic is the same, so
the cross-turn bugs (booking without confirmation, a forgotten need) are
caught there too, while the channel's own faults (redelivery, bursts, the
24-hour window, the 4096-character limit) do not exist there: the scenarios
about them are tagged whatsapp-only, and the direct channel skips them and
says so.
"""

from __future__ import annotations

import asyncio
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from click.testing import CliRunner, Result

from agents.booking.regressions import Regression
from harness.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE, cli, main
from harness.results import RunResult, ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, load_scenarios

SUITE = Path(__file__).resolve().parents[2] / "scenarios" / "booking"
WHATSAPP_ONLY = "whatsapp-only"

# The invariants, by the names the scenarios use.
CONFIRMED = "action_only_after_confirmation"
REASKS = "never_reasks"
CONSTRAINT = "constraint_honored"
ONE_REPLY = "one_reply_per_burst"
NO_REPEAT = "no_repeated_side_effects"
WINDOW = "no_freeform_outside_window"
VALID = "sends_valid"

Rules: TypeAlias = frozenset[str]
Failures: TypeAlias = dict[str, Rules]

# Every scenario that books a table (all but the policy question): with the
# confirmation gate off, each of them books before the guest said yes.
_BOOKING = (
    "burst_answered_once",
    "cancel_booking",
    "change_proposed_time",
    "confirm_by_typing_yes",
    "flaky_network_happy_path",
    "happy_confirm_button",
    "hasty_typist_fragments",
    "media_answered_politely",
    "never_reasks_the_date",
    "redelivered_confirm_books_once",
    "returning_user_after_30h",
    "simulated_hesitant_customer",
    "unconfirmed_followup_template",
    "wheelchair_constraint_across_turns",
)
_UNCONFIRMED: Failures = {
    **{stem: frozenset({CONFIRMED}) for stem in _BOOKING},
    # Booked at once, the agent then meets the guest's "yes" or "perfect" with
    # "which day would you like?": asking again for the day it was given.
    "confirm_by_typing_yes": frozenset({CONFIRMED, REASKS}),
    "never_reasks_the_date": frozenset({CONFIRMED, REASKS}),
}
_FORGOTTEN: Failures = {
    "wheelchair_constraint_across_turns": frozenset({CONSTRAINT}),
    # The simulated customer's wheelchair, said in turn 2, is gone by the booking in turn 5.
    "simulated_hesitant_customer": frozenset({CONSTRAINT}),
}

#: Through WhatsApp: regression -> {scenario file stem: the invariants it violates}.
EXPECTED_WHATSAPP: dict[str, Failures] = {
    "book_without_confirm": _UNCONFIRMED,
    # A redelivered Confirm books a second table; the copy confirms nothing new.
    "no_dedupe": {
        "redelivered_confirm_books_once": frozenset({NO_REPEAT, CONFIRMED}),
        "flaky_network_happy_path": frozenset({NO_REPEAT, CONFIRMED}),
    },
    "reply_per_fragment": {
        "burst_answered_once": frozenset({ONE_REPLY}),
        "hasty_typist_fragments": frozenset({ONE_REPLY}),
        # The simulated customer types in fragments: each one gets its own half-answer.
        "simulated_hesitant_customer": frozenset({ONE_REPLY}),
    },
    "ignore_window": {"unconfirmed_followup_template": frozenset({WINDOW, VALID})},
    "no_chunking": {"policy_long_answer_chunked": frozenset({VALID})},
    "forget_constraint": _FORGOTTEN,
}

#: Through the direct channel, among the scenarios it plays (not the whatsapp-only ones).
EXPECTED_DIRECT: dict[str, Failures] = {
    "book_without_confirm": _UNCONFIRMED,
    "no_dedupe": {},
    "reply_per_fragment": {},
    "ignore_window": {},
    "no_chunking": {},
    "forget_constraint": _FORGOTTEN,
}

#: The scenarios tagged whatsapp-only: about the channel itself (redeliveries, bursts,
#: network faults, chunks of a long reply, the template after the window), so the
#: direct channel skips them, and says so.
DIRECT_SKIPS = frozenset(
    {
        "burst_answered_once",
        "flaky_network_happy_path",
        "hasty_typist_fragments",
        "policy_long_answer_chunked",
        "redelivered_confirm_books_once",
        "unconfirmed_followup_template",
    }
)


# -- helpers -----------------------------------------------------------------------


def _stem(result: ScenarioResult) -> str:
    return Path(result.path).stem


def _invariants(result: ScenarioResult) -> Rules:
    return frozenset(v.rule for v in result.violations if v.kind == "invariant")


def _failing(run: RunResult) -> dict[str, Rules]:
    return {_stem(s): _invariants(s) for s in run.scenarios if s.status in ("failed", "error")}


def _skipped(run: RunResult) -> set[str]:
    return {_stem(s) for s in run.scenarios if s.status == "skipped"}


def _explain(run: RunResult) -> str:
    lines = []
    for s in run.scenarios:
        if s.status == "passed":
            continue
        lines.append(f"{_stem(s)} [{s.channel}] {s.status}: {s.error or ''}")
        lines.extend(f"    {v.headline()}" for v in s.violations)
    return "\n".join(lines) or "(every scenario passed)"


async def _run(
    scenarios: Sequence[Scenario],
    *,
    regression: str | None = None,
    channel: str = "whatsapp",
    concurrency: int = 8,
    seed: int = 0,
) -> RunResult:
    settings = {"BOOKING_REGRESSIONS": regression} if regression else {}
    options = RunOptions(
        channel=channel, concurrency=concurrency, seed=seed, agent_settings=settings
    )
    return await Runner(options).run(scenarios)


def _pick(scenarios: Sequence[Scenario], *stems: str) -> list[Scenario]:
    chosen = [s for s in scenarios if s.path is not None and s.path.stem in stems]
    assert len(chosen) == len(stems), f"missing scenarios among {stems}"
    return chosen


_WAMID = re.compile(r"wamid\.[A-Za-z0-9+/_-]+=*")
# Keys whose digits are an id the channel handed out (a media id, the handshake's challenge).
_DIGIT_IDS = frozenset({"id", "challenge", "hub.challenge", "answer"})


def _named_in_order(data: Any, names: dict[str, str]) -> Any:
    """JSON data with each id the run handed out named by its first appearance instead.

    Every run hands out ids of its own, whatever the seed: what a run decided is
    which messages, statuses and replies refer to which, not the ids' letters.
    """
    if isinstance(data, dict):
        return {
            key: names.setdefault(value, f"#{len(names)}")
            if key in _DIGIT_IDS and isinstance(value, str) and value.isdigit()
            else _named_in_order(value, names)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [_named_in_order(item, names) for item in data]
    if isinstance(data, str):
        return _WAMID.sub(lambda m: names.setdefault(m.group(0), f"#{len(names)}"), data)
    return data


def _fingerprint(run: RunResult) -> list[tuple[Any, ...]]:
    """Everything a run decided, minus wall-clock measurements and the ids it handed out."""
    found: list[tuple[Any, ...]] = []
    for s in run.scenarios:
        events: list[Any] = []
        names: dict[str, str] = {}
        if s.conversation is not None:
            for event in s.conversation.model_dump(mode="json")["events"]:
                event.pop("latency_ms", None)  # a delivery's real time, not the virtual clock's
                events.append(_named_in_order(event, names))
        violations = [(v.kind, v.rule, v.turn, v.step, v.message) for v in s.violations]
        found.append((_stem(s), s.status, s.seed, violations, events))
    return found


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    """The bundled scenarios, read once."""
    return load_scenarios([SUITE])


# -- the suite itself ----------------------------------------------------------------


def test_the_suite_is_complete_and_well_formed(suite: list[Scenario]) -> None:
    assert len(suite) >= 10
    stems = {s.path.stem for s in suite if s.path is not None}
    assert len(stems) == len(suite)
    assert len({s.name for s in suite}) == len(suite), "scenario names must be unique"
    for scenario in suite:
        assert scenario.path is not None
        assert scenario.name != scenario.path.stem, f"{scenario.path.name} needs a name"
        assert scenario.description.strip(), scenario.name
        assert scenario.tags, scenario.name
        assert scenario.invariants, scenario.name
    wa_ids = [u.wa_id for s in suite for u in s.users if u.wa_id is not None]
    assert len(wa_ids) == len(set(wa_ids)), "each scenario has its own users"
    assert sum(1 for s in suite if any(u.bsuid for u in s.users)) >= 2
    # every planted regression has its expected failures, in both tables
    names = {r.value for r in Regression}
    assert set(EXPECTED_WHATSAPP) == names
    assert set(EXPECTED_DIRECT) == names
    known = {CONFIRMED, REASKS, CONSTRAINT, ONE_REPLY, NO_REPEAT, WINDOW, VALID}
    for failures in (*EXPECTED_WHATSAPP.values(), *EXPECTED_DIRECT.values()):
        assert set(failures) <= stems
        assert all(rules <= known for rules in failures.values())
    assert {
        s.path.stem for s in suite if s.path is not None and WHATSAPP_ONLY in s.tags
    } == DIRECT_SKIPS


async def test_the_suite_passes_with_no_regression(suite: list[Scenario]) -> None:
    run = await _run(suite)
    assert run.ok, _explain(run)
    assert run.passed == len(suite)


@pytest.mark.parametrize(
    "start",
    [datetime(2026, 1, 4, 23, tzinfo=UTC), datetime(2027, 12, 29, 6, tzinfo=UTC)],
    ids=["a-sunday-night", "a-wednesday-before-new-year"],
)
async def test_the_suite_passes_whichever_day_its_conversations_start(
    suite: list[Scenario], start: datetime
) -> None:
    # The scenarios name dates relative to their start (${friday}), as an agent on real
    # time needs; the committed fixtures keep the dates they were recorded with.
    run = await Runner(RunOptions(concurrency=8, start=start)).run(suite)
    assert run.ok, _explain(run)
    assert run.passed == len(suite)
    firsts = {s.conversation.events[0].at.date() for s in run.scenarios if s.conversation}
    assert firsts == {start.date()}
    booked = [
        date.fromisoformat(str(call.args["date"]))
        for s in run.scenarios
        if s.conversation is not None
        for call in s.conversation.tool_calls("book_appointment")
    ]
    # the dates checked are the start's coming days, not those of an in-process run's
    assert len(booked) >= 8
    assert all(0 < (day - start.date()).days < 14 for day in booked), booked


@pytest.mark.parametrize("regression", [r.value for r in Regression])
async def test_each_regression_fails_exactly_its_scenarios(
    suite: list[Scenario], regression: str
) -> None:
    run = await _run(suite, regression=regression)
    assert run.errors == 0, _explain(run)
    expected = EXPECTED_WHATSAPP[regression]
    assert _failing(run) == expected, _explain(run)
    # the invariant named for the bug is among them (the table above could drift)
    named = {
        "book_without_confirm": CONFIRMED,
        "no_dedupe": NO_REPEAT,
        "reply_per_fragment": ONE_REPLY,
        "ignore_window": WINDOW,
        "no_chunking": VALID,
        "forget_constraint": CONSTRAINT,
    }[regression]
    assert expected
    assert all(named in rules for rules in expected.values())


# -- the direct channel ----------------------------------------------------------------


async def test_the_logic_scenarios_pass_through_the_direct_channel(
    suite: list[Scenario],
) -> None:
    run = await _run(suite, channel="direct")
    assert run.errors == 0, _explain(run)
    assert run.ok, _explain(run)
    assert _failing(run) == {}, _explain(run)
    assert _skipped(run) == DIRECT_SKIPS
    for scenario, result in zip(suite, run.scenarios, strict=True):
        if WHATSAPP_ONLY not in scenario.tags:
            assert result.passed, _explain(run)
        else:
            assert result.status == "skipped", f"{scenario.name} is played through direct"
            assert [s.what for s in result.skipped] == ["scenario"]
            assert WHATSAPP_ONLY in result.skipped[0].reason
            assert result.conversation is None


@pytest.mark.parametrize("regression", [r.value for r in Regression])
async def test_through_the_direct_channel_only_logic_regressions_are_caught(
    suite: list[Scenario], regression: str
) -> None:
    run = await _run(suite, regression=regression, channel="direct")
    assert run.errors == 0, _explain(run)
    played = EXPECTED_DIRECT[regression].items()
    expected = {stem: rules for stem, rules in played if stem not in DIRECT_SKIPS}
    assert _failing(run) == expected, _explain(run)
    assert _skipped(run) == DIRECT_SKIPS


async def test_a_cross_turn_regression_is_caught_through_both_channels(
    suite: list[Scenario],
) -> None:
    confirming = _pick(suite, "happy_confirm_button", "confirm_by_typing_yes")
    runs = await asyncio.gather(
        *(
            _run(confirming, regression="book_without_confirm", channel=channel)
            for channel in ("whatsapp", "direct")
        )
    )
    for run in runs:
        assert [s.status for s in run.scenarios] == ["failed", "failed"], _explain(run)
        for result in run.scenarios:
            assert CONFIRMED in _invariants(result), _explain(run)
            first = next(v for v in result.violations if v.rule == CONFIRMED)
            assert first.turn is not None
            assert first.messages, "the violation shows the conversation"


async def test_a_redelivery_regression_is_caught_only_on_whatsapp(
    suite: list[Scenario],
) -> None:
    redelivered = _pick(suite, "redelivered_confirm_books_once")
    # Untagged, the scenario is played on the direct channel, without what it can't play.
    untagged = [s.model_copy(update={"tags": ()}) for s in redelivered]
    whatsapp, direct, played = await asyncio.gather(
        _run(redelivered, regression="no_dedupe", channel="whatsapp"),
        _run(redelivered, regression="no_dedupe", channel="direct"),
        _run(untagged, regression="no_dedupe", channel="direct"),
    )
    (caught,) = whatsapp.scenarios
    assert caught.status == "failed"
    assert NO_REPEAT in _invariants(caught)
    # the direct channel has no redelivery: the same agent bug can't show there
    assert direct.ok, _explain(direct)
    assert [s.status for s in direct.scenarios] == ["skipped"]
    (result,) = played.scenarios
    assert result.status == "passed", _explain(played)
    # the redelivery, and the check of what followed it, are skipped, and say so
    assert [(s.what, s.line) for s in result.skipped] == [("redeliver", 11), ("expect", 12)]
    assert result.conversation is not None
    assert [c.name for c in result.conversation.tool_calls()] == [
        "search_slots",
        "book_appointment",
    ]


# -- determinism ---------------------------------------------------------------------

_MANY = "no_dedupe,reply_per_fragment,ignore_window,no_chunking,forget_constraint"


async def test_results_do_not_depend_on_concurrency(suite: list[Scenario]) -> None:
    one, eight = await asyncio.gather(
        _run(suite, regression=_MANY, concurrency=1),
        _run(suite, regression=_MANY, concurrency=8),
    )
    assert not one.ok, "the comparison should include failures"
    assert _fingerprint(one) == _fingerprint(eight)


@pytest.mark.parametrize("channel", ["whatsapp", "direct"])
async def test_the_same_seed_gives_the_same_results(suite: list[Scenario], channel: str) -> None:
    first, second = await asyncio.gather(
        _run(suite, regression=_MANY, channel=channel, seed=42),
        _run(suite, regression=_MANY, channel=channel, seed=42),
    )
    assert _fingerprint(first) == _fingerprint(second)


# -- the command line ------------------------------------------------------------------
# Sync tests: `harness run` starts its own event loop.


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["run", *args], catch_exceptions=True)


def _broken_suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "happy.yaml").write_text(
        (SUITE / "happy_confirm_button.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (folder / "broken.yaml").write_text("name: broken\nsteps:\n  - say: [unclosed\n")
    return folder


def test_harness_run_exits_0_when_the_suite_passes() -> None:
    result = _invoke(str(SUITE), "--concurrency", "8")
    assert result.exit_code == EXIT_OK, result.output
    assert f"{len(load_scenarios([SUITE]))} passed" in result.output


def test_harness_run_exits_1_and_writes_reports_when_a_regression_is_on(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    result = _invoke(
        str(SUITE),
        "--agent-setting",
        "BOOKING_REGRESSIONS=reply_per_fragment",
        "--report-dir",
        str(reports),
    )
    assert result.exit_code == EXIT_FAILED, result.output
    for name in ("report.json", "junit.xml", "report.html"):
        assert (reports / name).is_file(), name
        assert (reports / name).stat().st_size > 0, name

    root = ET.parse(reports / "junit.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    suite = load_scenarios([SUITE])
    assert sorted(c.get("name", "") for c in cases) == sorted(s.name for s in suite)
    stem_of = {s.name: s.path.stem for s in suite if s.path is not None}
    failed = {stem_of[c.get("name", "")] for c in cases if c.find("failure") is not None}
    assert failed == set(EXPECTED_WHATSAPP["reply_per_fragment"])
    assert all(c.find("error") is None for c in cases)
    for case in cases:
        failure = case.find("failure")
        if failure is not None:
            assert ONE_REPLY in (failure.get("message", "") + (failure.text or ""))
    totals = root.find("./testsuite")
    assert totals is not None
    assert totals.get("tests") == str(len(suite))
    assert totals.get("failures") == str(len(failed))


def test_harness_main_exits_2_for_a_broken_scenario_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = _broken_suite(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["run", str(broken)])
    assert exited.value.code == EXIT_USAGE
    error = capsys.readouterr().err
    assert re.search(r"broken\.yaml:\d+: invalid YAML", error), error
    assert "Traceback" not in error


def test_harness_run_exits_2_for_a_broken_scenario_file_through_click(tmp_path: Path) -> None:
    result = _invoke(str(_broken_suite(tmp_path)))
    assert result.exit_code == EXIT_USAGE, (result.output, result.exception)
