"""The plugin against a bot configured with its own number: its secret, tokens and ids.

The echo bot here checks the handshake's verify token, every webhook's
signature with its own app secret, sends with its own access token and
answers only its own phone number id: it echoes the user's words only when
the plugin plays that number (``harness_app_secret`` ... in the ini, or
``--harness-app-secret`` ... on the command line), as ``harness run`` does
with ``--app-secret`` ...
"""

from __future__ import annotations

import pytest

from tests.bots.fake_openai import FakeOpenAI, Say
from tests.harness.pytest_plugin.conftest import write_ini
from tests.support.bot_at_url import BotAtUrl, echo_bot_at_url, model_bot_at_url, served_on_thread

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.network

FAST = ("-p", "no:cacheprovider", "-p", "no:randomly")
NUMBER = {
    "app_secret": "the-bots-own-secret",
    "verify_token": "the-bots-own-token",
    "access_token": "the-bots-own-access-token",
    "phone_number_id": "123456789012345",
}
ECHO = """\
name: the bot echoes
steps:
  - say: hello
  - expect: {reply_contains: "echo: hello"}
"""
ECHO_TEST = """
async def test_the_bot_echoes(wa):
    await wa.say("user", "hello")
    assert "echo: hello" in wa.replies("user")
"""


def _project(pytester: pytest.Pytester, served: BotAtUrl, **settings: str) -> None:
    write_ini(
        pytester,
        harness_target_url=served.webhook,
        harness_graph_port=str(served.graph_port),
        harness_scenarios="scenarios",
        **settings,
    )
    (pytester.mkdir("scenarios") / "echo.yaml").write_text(ECHO)
    pytester.makepyfile(test_echo=ECHO_TEST)


def test_a_bot_with_its_own_number_is_played_by_the_settings_in_the_ini(
    pytester: pytest.Pytester,
) -> None:
    with echo_bot_at_url(**NUMBER) as served:
        _project(pytester, served, **{f"harness_{key}": value for key, value in NUMBER.items()})
        result = pytester.runpytest(*FAST)
    result.assert_outcomes(passed=2)
    assert served.bot.posts >= 2
    assert served.bot.send_results
    assert all(code == 200 for code, _ in served.bot.send_results)


def test_a_bot_with_its_own_number_is_played_by_the_options_on_the_command_line(
    pytester: pytest.Pytester,
) -> None:
    given = [f"--harness-{key.replace('_', '-')}={value}" for key, value in NUMBER.items()]
    with echo_bot_at_url(**NUMBER) as served:
        _project(pytester, served)
        result = pytester.runpytest(*FAST, *given, "--harness-waba-id", "555")
    result.assert_outcomes(passed=2)
    assert served.bot.send_results
    assert all(code == 200 for code, _ in served.bot.send_results)


def test_a_bot_that_fails_the_handshake_is_one_line_under_each_test_naming_the_url(
    pytester: pytest.Pytester,
) -> None:
    with echo_bot_at_url(**NUMBER) as served:
        _project(pytester, served)
        result = pytester.runpytest(*FAST)
    # The scenario fails; the test's whatsapp fixture could not be set up.
    result.assert_outcomes(failed=1, errors=1)
    assert served.bot.posts == 0
    out = result.stdout.str()
    assert "Traceback" not in out, out
    assert "HandshakeError" not in out, out
    said = (
        f"webhook {served.webhook} failed the verification handshake: it answered 403 to "
        "hub.verify_token='harness-verify-token' (expected 200 and the challenge)"
    )
    # Each test's section is that line alone.
    for header in ("_ scenario: the bot echoes _", "_ ERROR at setup of test_the_bot_echoes _"):
        start = next(i for i, line in enumerate(result.outlines) if header in line)
        assert result.outlines[start + 1] == said, out
        assert result.outlines[start + 2].startswith(("=", "_")), out  # the next section


def test_a_bot_that_asks_its_model_through_the_harness_reaches_the_upstream_named(
    pytester: pytest.Pytester,
) -> None:
    provider = FakeOpenAI([Say("Hello from the staging model")])
    with served_on_thread(provider.app) as upstream, model_bot_at_url() as (webhook, graph_port):
        write_ini(pytester, harness_target_url=webhook, harness_graph_port=str(graph_port))
        pytester.makepyfile(
            test_model="""
            async def test_the_bot_answers_from_its_model(wa):
                await wa.say("user", "hello")
                assert wa.replies("user") == ["Hello from the staging model"]
            """
        )
        result = pytester.runpytest(*FAST, f"--harness-openai-upstream={upstream}/v1")
    result.assert_outcomes(passed=1)
    [(body, _headers)] = provider.requests
    assert body["messages"] == [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            ("--harness-openai-upstream", "http://127.0.0.1:9/v1"),
            "--harness-openai-upstream needs harness_target_url (an agent in process calls its "
            "model itself)",
        ),
        (
            ("--harness-target-url", "http://127.0.0.1:9/webhook", "--harness-anthropic-upstream",
             "127.0.0.1:9"),
            "--harness-anthropic-upstream '127.0.0.1:9': expected an http:// or https:// URL",
        ),
    ],
)  # fmt: skip
def test_an_upstream_that_cannot_be_used_stops_the_run_with_one_line(
    pytester: pytest.Pytester, given: tuple[str, ...], said: str
) -> None:
    write_ini(pytester, harness_target="agents.booking:agent_factory")
    if "--harness-target-url" in given:
        write_ini(pytester)
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest(*FAST, *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [f"ERROR: {said}"], result.errlines
