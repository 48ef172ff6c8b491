"""A suite against an agent at a URL, as against a staging deployment.

The booking agent is served over loopback HTTP on real time and configured
like a deployment (the simulator's secrets, and the fake Graph API's address
as its Graph API base URL); the runner reaches it only through its URL.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agents.booking import BookingSettings, create_app
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario

SCENARIO = """
name: booking against a URL
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: A table on friday at 8pm please
  - expect: {reply_contains: Confirm, tool_not_called: book_appointment}
  - tap: confirm
  - expect: {reply_contains: Booked}
invariants:
  - sends_valid
  - every_inbound_answered
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.network
async def test_a_suite_against_a_webhook_url(tmp_path: Path) -> None:
    defaults = SimulatorConfig()
    graph_port = _free_port()
    settings = BookingSettings.from_env(
        {
            "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
            "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
            "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
            "WHATSAPP_APP_SECRET": defaults.app_secret,
            "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
            "BOOKING_DEBOUNCE_SECONDS": "0.2",
        }
    )
    app = create_app(settings)
    async with BackgroundServer(app) as agent:
        runner = Runner(
            RunOptions(
                target_url=f"{agent.url}/webhook",
                channel_options={
                    "graph_url": f"http://127.0.0.1:{graph_port}",
                    "serve_graph": True,
                },
            )
        )
        scenario = parse_scenario(SCENARIO, path=tmp_path / "url.yaml")
        run = await runner.run([scenario])
    await app.state.agent.aclose()
    [result] = run.scenarios
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error
    assert result.conversation is not None
    replies = [r.text or "" for r in result.conversation.replies()]
    assert any("Booked" in r for r in replies)
    assert run.target.endswith("/webhook")
