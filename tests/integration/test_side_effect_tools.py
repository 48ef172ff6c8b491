"""Tools named as side-effecting for an agent at a URL whose spans don't say so.

The OpenTelemetry GenAI conventions have no word for a side effect, so a
bot's ``execute_tool`` spans leave ``no_repeated_side_effects`` nothing to
judge unless the run names the tools that have them (``--side-effect-tool``).
The bot here places an order for every copy of a message Meta delivers, and
reports each as a span of the conventions alone, as instrumentation does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from harness.cli.main import EXIT_FAILED, EXIT_USAGE
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots.loopback import free_port
from tests.support.bot_at_url import served_on_thread
from tests.support.cli import harness

pytestmark = pytest.mark.network

SCENARIO = """
name: a redelivered order
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: One pizza, please
  - expect: {reply_contains: Ordered}
  - redeliver: last
  - expect: {reply_contains: Ordered}
invariants:
  - no_repeated_side_effects
"""
FAST = ("--quiet", "0.5s", "--expect-timeout", "5s")
FIXTURE = Path(__file__).resolve().parents[2] / "scenarios/booking/fixtures/happy_confirm_button"


def _order_span(user: str) -> dict[str, Any]:
    """An ``execute_tool place_order`` span with the conventions' attributes, and no more."""
    now = time.time_ns()
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "place_order",
        "gen_ai.tool.call.arguments": '{"item": "pizza"}',
        "gen_ai.tool.call.result": '{"order": "A-1"}',
        "user.id": user,
    }
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": f"{now % 2**64:016x}",
        "name": "execute_tool place_order",
        "startTimeUnixNano": str(now - 1_000_000),
        "endTimeUnixNano": str(now),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


@contextmanager
def ordering_bot() -> Iterator[tuple[str, int]]:
    """A bot that orders for every copy of a message; yields its webhook and its Graph port.

    Its Graph API and its OTLP exporter are the harness's server, on the port yielded.
    """
    defaults = SimulatorConfig()
    graph_port = free_port()
    graph = f"http://127.0.0.1:{graph_port}"
    tasks: set[asyncio.Task[None]] = set()

    async def order(user: str) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            export = {"resourceSpans": [{"scopeSpans": [{"spans": [_order_span(user)]}]}]}
            await client.post(f"{graph}/v1/traces", json=export)
            await client.post(
                f"{graph}/v25.0/{defaults.phone_number_id}/messages",
                json={"messaging_product": "whatsapp", "to": user, "text": {"body": "Ordered"}},
                headers={"Authorization": f"Bearer {defaults.access_token}"},
            )

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        for entry in (await request.json())["entry"]:
            for change in entry["changes"]:
                for message in change["value"].get("messages", []):
                    task = asyncio.create_task(order(message["from"]))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
    with served_on_thread(app) as url:
        yield f"{url}/webhook", graph_port


def test_a_run_naming_the_side_effect_tool_fails_the_bot_that_orders_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "order.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with ordering_bot() as (webhook, graph_port):
        code = harness(
            "run", str(scenario), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST, "--side-effect-tool", "place_order",
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == EXIT_FAILED, out
    assert "no_repeated_side_effects" in out, out
    assert "made place_order run again" in out, out


async def test_a_scenario_at_a_url_marks_the_tools_named_as_side_effecting() -> None:
    with ordering_bot() as (webhook, graph_port):
        options = RunOptions(
            target_url=webhook,
            quiet=0.5,
            expect_timeout=5.0,
            channel_options={
                "graph_url": f"http://127.0.0.1:{graph_port}",
                "serve_graph": True,
                "side_effect_tools": ("place_order",),
            },
        )
        result = await Runner(options).run_scenario(parse_scenario(SCENARIO))
    assert result.status == "failed", result.error
    [violation] = result.violations
    assert violation.rule == "no_repeated_side_effects"
    assert "made place_order run again" in violation.message


@pytest.mark.parametrize("command", ["run", "replay", "regress"])
def test_a_side_effect_tool_without_target_url_is_a_usage_error(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURE if command != "run" else FIXTURE.parents[1] / "cancel_booking.yaml"
    code = harness(command, str(path), "--side-effect-tool", "place_order")
    assert code == EXIT_USAGE
    assert capsys.readouterr().err.strip() == (
        "error: --side-effect-tool needs --target-url (an agent in process marks its tools' "
        "side effects itself)"
    )
