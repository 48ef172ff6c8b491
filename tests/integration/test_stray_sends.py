"""A bot at a URL that answers a number of its own rather than the user who wrote.

Bots configured with a fixed recipient (a ``RECIPIENT_WAID``) send every
answer to that number. In a run against such a bot at a URL the number is no
scenario's user: Meta would take the send and fail it with 131047 on a status
webhook, and so must the run, and its report must say where the answer went,
beside the verdict ("got no answer") that it leaves as it is.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.signing import is_valid
from harness.report import result_line
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots import inline
from tests.bots.loopback import free_port, serve_in_process

DEFAULTS: Final = SimulatorConfig()
FIXED: Final = "15550009999"

SCENARIO = parse_scenario(
    """
name: the bot answers someone else
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: hello there
  - expect: {reply_contains: hello there}
invariants: [every_inbound_answered]
"""
)


def _bot_settings(graph_port: int, *, reply_to: str) -> dict[str, str]:
    """The inline bot's settings: the simulator's defaults, and the one number it answers."""
    return {
        "WHATSAPP_APP_SECRET": DEFAULTS.app_secret,
        "WHATSAPP_VERIFY_TOKEN": DEFAULTS.verify_token,
        "WHATSAPP_ACCESS_TOKEN": DEFAULTS.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": DEFAULTS.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
        "BOT_REPLY_TO": reply_to,
    }


class Received:
    """The bot behind a recorder of every webhook body it is posted, and its signature."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.bodies: list[tuple[bytes, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = dict(scope["headers"])
        signature = headers.get(b"x-hub-signature-256")
        self.bodies.append((body, signature.decode() if signature else None))

        async def again() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, again, send)

    def statuses(self) -> list[dict[str, Any]]:
        """Every status item the bot was sent."""
        return [
            item
            for body, _ in self.bodies
            for entry in json.loads(body)["entry"]
            for change in entry["changes"]
            for item in change["value"].get("statuses", [])
        ]


@pytest.mark.network
async def test_a_bot_answering_a_fixed_number_gets_131047_and_the_report_says_where_it_sent() -> (
    None
):
    graph_port = free_port()
    settings = _bot_settings(graph_port, reply_to=FIXED)
    bot = Received(inline.create_app(settings))
    async with serve_in_process(bot) as url:
        options = RunOptions(
            target_url=f"{url}/webhook",
            channel_options={
                "graph_url": f"http://127.0.0.1:{graph_port}",
                "serve_graph": True,
                "statuses": {"sent": 0.1},  # the failed status well inside the run
            },
            quiet=0.6,
            expect_timeout=2.0,
        )
        run = await Runner(options).run([SCENARIO])
    [result] = run.scenarios
    # The verdict stays what the scenario's checks say: Ana got no answer.
    assert result.status == "failed"
    assert "every_inbound_answered" in {v.rule for v in result.violations}
    # Beside it: where the answer went, and what Meta made of it.
    [stray] = result.stray_sends
    assert (stray.to, stray.type, stray.text, stray.running) == (
        FIXED,
        "text",
        "You said: hello there",
        1,
    )
    assert stray.outcome == "accepted, then failed: 131047 (Re-engagement message)"
    assert result_line(result).endswith("; the agent sent to 15550009999, none of its users")
    # Ana wrote from a number of this run's own; the report names it, for the bot's logs.
    [(name, number)] = result.numbers.items()
    assert (name, len(number)) == ("Ana", 13)
    assert number != "5511987654321"
    # The bot was told, on a signed status webhook, as Meta tells it.
    assert stray.wamid is not None
    [(body, signature)] = [(b, sig) for b, sig in bot.bodies if stray.wamid.encode() in b]
    assert is_valid(body, signature, DEFAULTS.app_secret)
    [failed] = [s for s in bot.statuses() if s["id"] == stray.wamid]
    assert (failed["status"], failed["recipient_id"]) == ("failed", FIXED)
    assert [e["code"] for e in failed["errors"]] == [131047]


@pytest.mark.network
async def test_with_keep_numbers_a_bot_answering_its_configured_number_passes() -> None:
    # The tutorial bot's set-up: it answers the number it is configured with, which is the
    # scenario's own user once the run keeps the numbers the scenario gives.
    graph_port = free_port()
    settings = _bot_settings(graph_port, reply_to="5511987654321")  # Ana's number in the scenario
    async with serve_in_process(inline.create_app(settings)) as url:
        options = RunOptions(
            target_url=f"{url}/webhook",
            channel_options={"graph_url": f"http://127.0.0.1:{graph_port}", "serve_graph": True},
            quiet=0.6,
            expect_timeout=2.0,
            keep_numbers=True,
            concurrency=4,
        )
        run = await Runner(options).run([SCENARIO, SCENARIO])
    assert [r.status for r in run.scenarios] == ["passed", "passed"], [
        (v.rule, v.message) for r in run.scenarios for v in r.violations
    ]
    assert all(not r.stray_sends and not r.numbers for r in run.scenarios)
