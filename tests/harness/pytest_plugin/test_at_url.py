"""The plugin against a bot at a URL: each test plays numbers and message ids of its own.

The bot here (:mod:`tests.bots.greeter`) dedupes webhooks by message id, as
Meta advises, and remembers every number it has heard from: a test that
played another test's number, or sent another test's message id, would see
the bot answer "Welcome back" or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.config import SimulatorConfig
from tests.bots import greeter
from tests.bots.loopback import free_port
from tests.harness.pytest_plugin.conftest import write_ini
from tests.support.bot_at_url import served_on_thread

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.network

FAST = ("-p", "no:cacheprovider", "-p", "no:randomly")

FIRST_VISIT = """\
name: {name}
steps:
  - say: hello
  - expect: {{reply_contains: "Nice to meet you! You said: hello"}}
"""


@dataclass(frozen=True)
class Served:
    """The greeter bot at its URL, and the port its Graph API is expected on."""

    webhook: str
    graph_port: int


@contextmanager
def greeter_at_url() -> Iterator[Served]:
    """Serve the greeter bot on loopback, with the simulator's number."""
    defaults = SimulatorConfig()
    graph_port = free_port()
    settings = {
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
    }
    with served_on_thread(greeter.create_app(settings)) as url:
        yield Served(f"{url}/webhook", graph_port)


def _at(served: Served) -> tuple[str, ...]:
    return (
        "--harness-target-url",
        served.webhook,
        "--harness-graph-port",
        str(served.graph_port),
    )


def test_each_scenario_at_a_url_is_a_new_user_with_message_ids_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    folder = pytester.mkdir("scenarios")
    for stem in ("first", "second"):
        text = FIRST_VISIT.format(name=f"the {stem} visit is a first one")
        (folder / f"{stem}.yaml").write_text(text)
    with greeter_at_url() as served:
        result = pytester.runpytest("--harness-scenarios", "scenarios", *FAST, *_at(served))
        result.assert_outcomes(passed=2)
        # A second run against the same bot: its users are new to it too.
        again = pytester.runpytest("--harness-scenarios", "scenarios", *FAST, *_at(served))
        again.assert_outcomes(passed=2)


def test_each_whatsapp_fixture_test_at_a_url_is_a_new_user_with_message_ids_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makepyfile(
        test_visits="""
        import pytest

        @pytest.mark.parametrize("visit", ["first", "second"])
        async def test_a_visit_is_a_first_one(wa, visit):
            await wa.say("user", "hello")
            assert wa.replies("user") == ["Nice to meet you! You said: hello"]
        """
    )
    with greeter_at_url() as served:
        result = pytester.runpytest(*FAST, *_at(served))
        result.assert_outcomes(passed=2)
        again = pytester.runpytest(*FAST, *_at(served))
        again.assert_outcomes(passed=2)


def test_a_failing_scenario_at_a_url_names_the_numbers_the_agent_saw_and_reproduces_its_own(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    folder = pytester.mkdir("scenarios")
    (folder / "back.yaml").write_text(
        "name: a first visit is a return\n"
        "users: [{name: ana, wa_id: '5511987654321'}]\n"
        "steps:\n"
        "  - say: hello\n"
        "  - expect: {reply_contains: Welcome back}\n"
    )
    with greeter_at_url() as served:
        result = pytester.runpytest("--harness-scenarios", "scenarios", *FAST, *_at(served))
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines([r"the agent saw the users as: ana 55\d{11}$"])
    result.stdout.fnmatch_lines(["*users:*", "*name: ana*", "*wa_id: '5511987654321'*"])
    assert "the agent saw the users as: ana 5511987654321" not in result.stdout.str()


def _post_until_heard(url: str) -> None:
    """Post an empty export to ``url`` until something answers (20 s at most), blocking."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.post(url, json={"resourceSpans": []}, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)


def _reports_the_handshake_first(app: ASGIApp, graph_port: int) -> ASGIApp:
    """``app``, but its handshake first posts a span to the harness, blocking until it can.

    As an OpenTelemetry exporter run inside the bot's event loop does: while
    nothing listens it retries, and the bot answers nothing meanwhile.
    """
    traces = f"http://127.0.0.1:{graph_port}/v1/traces"

    async def bot(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            _post_until_heard(traces)  # on the loop, as the exporter's retries are
        await app(scope, receive, send)

    return bot


def test_the_check_of_the_bot_serves_what_the_bot_reports_to(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    folder = pytester.mkdir("scenarios")
    (folder / "first.yaml").write_text(FIRST_VISIT.format(name="a bot that reports its handshake"))
    defaults = SimulatorConfig()
    graph_port = free_port()
    settings = {
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
    }
    app = _reports_the_handshake_first(greeter.create_app(settings), graph_port)
    with served_on_thread(app) as url:
        served = Served(f"{url}/webhook", graph_port)
        result = pytester.runpytest("--harness-scenarios", "scenarios", *FAST, *_at(served))
    result.assert_outcomes(passed=1)
