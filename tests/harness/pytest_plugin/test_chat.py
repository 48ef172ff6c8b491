"""The whatsapp fixture: a test plays the user against the agent and checks what happened."""

from __future__ import annotations

import pytest

from tests.harness.pytest_plugin.conftest import write_ini

pytest_plugins = ["pytester"]

TARGET = "agents.booking:agent_factory"

BOOKING = """\
import pytest

from harness.pytest_plugin import assert_invariants


@pytest.mark.whatsapp(users=["Ana"])
async def test_a_confirmed_booking(wa):
    await wa.say("Ana", "Could I book a table for friday at 9pm?")
    [proposal] = wa.replies("Ana")
    assert "21:00" in proposal and "Confirm" in proposal
    await wa.tap("Ana", "confirm")
    assert "BK-0001" in wa.replies("Ana")[-1]
    assert [c.name for c in wa.trace().tool_calls()] == ["search_slots", "book_appointment"]
    assert_invariants(wa.trace(), ["no_repeated_side_effects", "sends_valid"])


async def test_an_unconfirmed_proposal_is_followed_up_by_template(whatsapp):
    await whatsapp.say("user", "Is there a table next wednesday at 8pm?")
    assert len(whatsapp.replies("user")) == 1
    await whatsapp.advance("25h")
    assert whatsapp.replies("user")[-1].startswith("[template appointment_reminder]")
    assert_invariants(whatsapp.trace(), ["no_freeform_outside_window", "sends_valid"])


@pytest.mark.whatsapp(settings={"BOOKING_REGRESSIONS": "no_dedupe"})
async def test_a_redelivered_confirm_books_twice_without_dedupe(wa):
    await wa.say("user", "Could I book a table for friday at 9pm?")
    await wa.tap("user", "confirm")
    await wa.redeliver("user")
    confirmed = {"action_only_after_confirmation": {"proposal": "shall I (confirm|book)"}}
    assert_invariants(wa.trace(), [confirmed, "no_repeated_side_effects"])
"""


def test_a_test_plays_the_user_and_checks_replies_tools_and_invariants(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    pytester.makepyfile(test_booking=BOOKING)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *InvariantsFailed: 2 invariant violations:",
            "E * ✗ no_repeated_side_effects at turn 2: the redelivered message 'Confirm' made "
            "book_appointment run again*",
            "E *     [[]turn 2[]] user user (redelivered): Confirm [[]button confirm[]]",
            "E *   1 more from the same cause:",
            "E *     - action_only_after_confirmation at turn 2: book_appointment was called "
            "again with no new proposal*",
        ]
    )


ECHO_CONFTEST = """\
import pytest

from mybot import create_app


@pytest.fixture
def whatsapp_app():
    return lambda env: create_app(env.settings, client=env.http_client)
"""

ECHO_TESTS = """\
async def test_the_bot_echoes(wa):
    await wa.say("user", "hello there")
    assert wa.replies("user") == ["You said: hello there"]
    assert wa.replies() == ["You said: hello there"]
    assert [m.text for m in wa.trace().inbound()] == ["hello there"]
"""

ECHO_SCENARIO = """\
name: the bot echoes what it is told
steps:
  - say: hello there
  - expect: {reply_contains: "You said: hello there", replies: 1}
invariants: [every_inbound_answered, sends_valid]
"""


def test_the_app_fixture_in_conftest_is_the_agent_of_tests_and_scenarios(
    pytester: pytest.Pytester, echo_bot: str
) -> None:
    write_ini(pytester, harness_scenarios="scenarios")
    pytester.makepyfile(mybot=echo_bot, conftest=ECHO_CONFTEST, test_echo=ECHO_TESTS)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "echo.yaml").write_text(ECHO_SCENARIO)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(passed=2)


def test_an_app_fixture_that_returns_an_app_is_told_to_return_a_factory(
    pytester: pytest.Pytester, echo_bot: str
) -> None:
    write_ini(pytester)
    built = ECHO_CONFTEST.replace(
        "lambda env: create_app(env.settings, client=env.http_client)",
        'create_app({"WHATSAPP_APP_SECRET": "s", "WHATSAPP_GRAPH_URL": "g", '
        '"WHATSAPP_PHONE_NUMBER_ID": "1", "WHATSAPP_ACCESS_TOKEN": "t"})',
    )
    pytester.makepyfile(mybot=echo_bot, conftest=built, test_echo=ECHO_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["whatsapp_app returned an ASGI app (Starlette); return a factory that builds one*"]
    )


def test_without_an_agent_the_fixture_says_how_to_name_one(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makepyfile(test_echo=ECHO_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["no agent to test: override the whatsapp_app fixture in *"])


def test_a_user_the_conversation_does_not_have_is_named_with_those_it_has(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    pytester.makepyfile(
        test_users="""
import pytest

@pytest.mark.whatsapp(users=["Ana", {"name": "Ben", "bsuid": "US.1234567890"}])
async def test_unknown(wa):
    await wa.say("Carla", "hi")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no user 'Carla' in this conversation (its users: Ana, Ben)*"])


def test_the_fixture_works_with_pytest_asyncio_in_strict_mode(
    pytester: pytest.Pytester, echo_bot: str
) -> None:
    ini = "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = module\n"
    pytester.makefile(".ini", pytest=ini)
    strict = "import pytest\n\n\n@pytest.mark.asyncio(loop_scope='module')\n" + ECHO_TESTS
    pytester.makepyfile(mybot=echo_bot, conftest=ECHO_CONFTEST, test_echo=strict)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(passed=1)


def test_a_marker_keyword_the_fixture_does_not_read_fails_the_test_naming_those_it_does(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    pytester.makepyfile(
        test_typo="""
import pytest

@pytest.mark.whatsapp(fautls="flaky")
async def test_typo(wa):
    await wa.say("user", "hi")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.whatsapp: unknown keyword 'fautls' (did you mean 'faults'?); "
            "it takes faults, seed, settings, users"
        ]
    )
