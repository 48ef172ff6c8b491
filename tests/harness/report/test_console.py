"""The console: a progress bar or plain lines while running, a summary at the end."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from io import StringIO

from rich.console import Console

from harness.report import SuiteProgress, print_summary, result_line
from harness.results import RunResult, ScenarioResult, Violation
from harness.trace import Conversation, DeliveryAttempt
from tests.harness.report.sample import booking_run, crashed, double_booking, happy_booking


def _plain() -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, width=80, color_system=None), out


def test_result_lines_say_the_status_in_words() -> None:
    assert result_line(happy_booking()) == "PASS  happy booking (0.12s)"
    assert result_line(double_booking()) == (
        "FAIL  double booking: no_repeated_side_effects at turn 2 (line 5): "
        "book_table ran 2 times for one message (wamid.A2) (+1 more)"
    )
    assert result_line(crashed()) == "ERROR agent crash: agent answered 500 to every delivery"
    bare = ScenarioResult(name="x", status="error", error="  ")
    assert result_line(bare) == "ERROR x: could not be run"


def test_off_a_terminal_progress_is_one_line_per_scenario() -> None:
    console, out = _plain()
    assert not console.is_terminal
    with SuiteProgress(3, console=console) as progress:
        assert not progress.enabled
        for result in booking_run().scenarios:
            progress.start(result.name)
            progress.advance(result)
    lines = out.getvalue().splitlines()
    assert lines == [
        "PASS  happy booking (0.12s)",
        result_line(double_booking()),  # not wrapped at the console's 80 columns
        "ERROR agent crash: agent answered 500 to every delivery",
    ]
    assert (progress.passed, progress.failed, progress.errors, progress.done) == (1, 1, 1, 3)


def test_markup_in_a_scenario_name_is_printed_as_is() -> None:
    console, out = _plain()
    with SuiteProgress(1, console=console) as progress:
        progress.advance(ScenarioResult(name="[bold]x[/bold]", status="passed"))
    assert out.getvalue() == "PASS  [bold]x[/bold] (0.00s)\n"


def test_on_a_terminal_progress_draws_a_bar_and_prints_failures() -> None:
    out = StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    with SuiteProgress(3, console=console) as progress:
        assert progress.enabled
        progress.start("happy booking")
        progress.start("double booking")
        assert progress._description() == "happy booking (+1)"
        for result in booking_run().scenarios:
            progress.advance(result)
        assert progress._description() == "done"
    text = out.getvalue()
    assert "FAIL  double booking: no_repeated_side_effects" in text
    assert "ERROR agent crash" in text
    assert "PASS  happy booking" not in text  # passes only move the bar
    assert "3/3" in text
    assert "1 passed 1 failed 1 errors" in text


def test_a_bar_from_the_first_result_starts_no_thread_before_it() -> None:
    # A run in worker processes forks them before its first result, and only while this
    # process has no thread but its main one: rich redraws a bar from a thread of its own.
    out = StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    before = set(threading.enumerate())  # an earlier bar's thread may still be ending
    with SuiteProgress(2, console=console, from_first_result=True) as progress:
        progress.start("happy booking")
        assert set(threading.enumerate()) - before == set()
        assert out.getvalue() == ""
        progress.advance(happy_booking())
        assert len(set(threading.enumerate()) - before) == 1
        progress.advance(double_booking())
    text = out.getvalue()
    assert "FAIL  double booking: no_repeated_side_effects" in text
    assert "2/2" in text


def test_a_bar_waiting_for_a_result_that_never_comes_ends_quietly() -> None:
    out = StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    with SuiteProgress(2, console=console, from_first_result=True):
        pass
    assert out.getvalue() == ""


def test_progress_can_be_forced_off_on_a_terminal() -> None:
    out = StringIO()
    console = Console(file=out, force_terminal=True, color_system=None)
    with SuiteProgress(1, console=console, enabled=False) as progress:
        progress.advance(happy_booking())
    assert out.getvalue() == "PASS  happy booking (0.12s)\n"


def _summary(run: RunResult) -> str:
    console = Console(record=True, width=120, color_system=None, file=StringIO())
    print_summary(run, console)
    return console.export_text()


def _rows(text: str) -> dict[str, list[str]]:
    rows = [line for line in text.splitlines() if "whatsapp" in line and ".yaml  " in line]
    return {line.split()[0]: line.split() for line in rows}


def test_summary_table_lists_the_failing_scenarios_with_their_files() -> None:
    text = _summary(booking_run())
    header = next(line for line in text.splitlines() if "Scenario" in line)
    assert header.split() == ["Scenario", "File", "Channel", "Status", "Violations", "Time"]
    rows = _rows(text)
    assert set(rows) == {"double", "agent"}  # the passing scenario is not a row
    assert rows["double"] == [
        *("double", "booking", "scenarios/booking/double.yaml", "whatsapp", "FAIL", "2", "0.31s")
    ]
    assert rows["agent"] == [
        *("agent", "crash", "scenarios/booking/crash.yaml", "whatsapp", "ERROR", "-", "0.05s")
    ]
    assert "1 passed (-v lists them)" in text.splitlines()
    assert text.rstrip().splitlines()[-1] == "3 scenarios: 1 passed, 1 failed, 1 error in 0.48s"
    assert "\x1b[" not in text


def test_with_v_the_table_lists_every_scenario() -> None:
    console = Console(record=True, width=120, color_system=None, file=StringIO())
    print_summary(booking_run(), console, verbose=True)
    text = console.export_text()
    rows = _rows(text)
    assert set(rows) == {"happy", "double", "agent"}
    assert rows["happy"] == [
        *("happy", "booking", "scenarios/booking/happy.yaml", "whatsapp", "PASS", "0", "0.12s")
    ]
    assert "(-v lists them)" not in text


def test_a_run_that_passed_is_one_line_and_the_totals() -> None:
    passed = RunResult(scenarios=(happy_booking(),), duration_s=0.12)
    lines = [line for line in _summary(passed).splitlines() if line]
    assert lines == [
        "1 passed (-v lists them)",
        "model: 1 model call: claude-x via an unrecorded provider",
        "1 scenario: 1 passed, 0 failed, 0 errors in 0.12s",
    ]


def test_summary_details_each_failure_with_its_messages_and_reproduction() -> None:
    lines = _summary(booking_run()).splitlines()
    start = lines.index("FAIL double booking  (scenarios/booking/double.yaml, whatsapp, seed 7)")
    assert lines[start + 1 : start + 7] == [
        # The redelivery that caused it: the agent's webhook timed out once.
        "  ! webhook: 1 of 9 POSTs were not answered 200 (timeout ×1): Meta delivers them again",
        "  ✗ no_repeated_side_effects at turn 2 (line 5): "
        "book_table ran 2 times for one message (wamid.A2)",
        "      user 09:59:40: yes",
        "      tool 09:59:41: book_table {party: 2} -> B-1",
        "      tool 09:59:43: book_table {party: 2} -> B-2",
        "  ✗ expect: expected exactly 1 booking, found 2",
    ]
    assert lines[start + 7 : start + 10] == [
        "  Reproduce with:",
        "    name: double booking",
        "    faults: {duplicate: 1.0}",
    ]
    error = lines.index("ERROR agent crash  (scenarios/booking/crash.yaml, whatsapp, seed 7)")
    assert lines[error + 1 : error + 3] == [
        "  agent answered 500 to every delivery",
        "  RuntimeError: boom",
    ]
    assert not any(line.startswith("PASS happy booking") for line in lines)


def test_summary_prints_user_text_literally() -> None:
    scenario = ScenarioResult(
        name="[red]odd[/red]",
        status="failed",
        violations=(Violation(rule="r", message="[bold]no[/bold]", messages=("[link]x",)),),
    )
    text = _summary(RunResult(scenarios=(scenario,), duration_s=1))
    assert "FAIL [red]odd[/red]" in text
    assert "  ✗ r: [bold]no[/bold]" in text
    assert "      [link]x" in text
    assert "1 scenario: 0 passed, 1 failed, 0 errors in 1.00s" in text


def test_summary_of_an_empty_run() -> None:
    assert _summary(RunResult()).strip() == "0 scenarios: 0 passed, 0 failed, 0 errors in 0.00s"


def test_a_failure_says_how_many_webhook_posts_the_agent_did_not_answer_200() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    attempts = [
        DeliveryAttempt(at=at, delivery="d1", status_code=200),
        DeliveryAttempt(at=at, delivery="d2", status_code=500),
        DeliveryAttempt(at=at, delivery="d2", attempt=2, status_code=500),
        DeliveryAttempt(at=at, delivery="d2", attempt=3, error="timeout"),
    ]
    failed = ScenarioResult(
        name="silent",
        status="failed",
        violations=(Violation(rule="expect", message="no reply contains 'Which day'"),),
        conversation=Conversation.from_events(attempts),
    )
    console, out = _plain()
    print_summary(RunResult(scenarios=(failed,)), console=console)
    assert (
        "  ! webhook: 3 of 4 POSTs were not answered 200 (500 ×2, timeout ×1): "
        "Meta delivers them again"
    ) in out.getvalue()
    answered = failed.model_copy(update={"conversation": Conversation.from_events(attempts[:1])})
    console, out = _plain()
    print_summary(RunResult(scenarios=(answered,)), console=console)
    assert "webhook:" not in out.getvalue()


def test_webhook_posts_answered_403_are_put_down_to_the_app_secret_in_the_same_line() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    attempts = [
        DeliveryAttempt(at=at, delivery="d1", attempt=n, status_code=403) for n in (1, 2, 3)
    ]
    failed = ScenarioResult(
        name="refused",
        status="failed",
        violations=(Violation(rule="expect", message="no reply contains 'Which day'"),),
        conversation=Conversation.from_events(attempts),
    )
    console, out = _plain()
    print_summary(RunResult(scenarios=(failed,)), console=console)
    [line] = [line for line in out.getvalue().splitlines() if "webhook:" in line]
    assert line == (
        "  ! webhook: 3 of 3 POSTs were not answered 200 (403 ×3): Meta delivers them again; "
        "403: the harness signs each POST with the app secret it was given (--app-secret), "
        "and the agent may check X-Hub-Signature-256 with another"
    )


def test_a_revised_result_is_printed_again_and_counted_once() -> None:
    console, out = _plain()
    passed = ScenarioResult(name="late one", status="passed")
    failed = ScenarioResult(
        name="late one",
        status="failed",
        violations=(Violation(rule="late", message="the agent sent 'hi' after it ended"),),
    )
    with SuiteProgress(1, console=console) as progress:
        progress.advance(passed)
        progress.revise(passed, failed)
    assert out.getvalue().splitlines() == [
        "PASS  late one (0.00s)",
        "FAIL  late one: late: the agent sent 'hi' after it ended (was PASS)",
    ]
    assert (progress.passed, progress.failed, progress.done) == (0, 1, 1)
