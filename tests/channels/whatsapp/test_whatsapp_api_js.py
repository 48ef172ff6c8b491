"""whatsapp-api-js, the TypeScript library from npm, unmodified, as a bot in its own process.

The bot (``tests/bots/node/bot.mjs``) is written as the library's README
shows, on Node's own HTTP server: the library checks each webhook's
signature, parses it into its events and makes every Graph API call itself
(read receipts with typing, replies quoting the message, reply buttons, a
contact card written as JSON text, a template with a header, a body and
three buttons, a photo downloaded, uploaded again as FormData and sent back
by id, then deleted; and a user who asks is blocked through the library's
``block``). The library names
``https://graph.facebook.com``; the bot gives it a fetch that sends those
calls to the simulator instead. A scenario runs
against it at a URL, as against a staging bot.

It needs Node.js (18 or later) and the library installed: ``npm ci --prefix
tests/bots/node`` (``.ci/run`` does both). Without them it is skipped, unless
``HARNESS_REQUIRE_NODE`` is set: then it fails.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Final

import pytest

from channels.whatsapp.channel import MEDIA_SAMPLES
from channels.whatsapp.config import SimulatorConfig
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario
from tests.bots.loopback import free_port, started_command

NODE: Final = shutil.which("node")
BOT_DIR: Final = Path(__file__).parents[2] / "bots" / "node"
INSTALLED: Final = (BOT_DIR / "node_modules" / "whatsapp-api-js" / "package.json").is_file()

pytestmark = pytest.mark.network


@pytest.fixture(autouse=True)
def _node() -> None:
    """Skip without Node.js and the library; fail instead where HARNESS_REQUIRE_NODE is set."""
    if NODE is not None and INSTALLED:
        return
    message = "needs Node.js and `npm ci --prefix tests/bots/node` (.ci/run does both)"
    if os.environ.get("HARNESS_REQUIRE_NODE"):
        pytest.fail(message + "; HARNESS_REQUIRE_NODE needs them")
    pytest.skip(message)


DEFAULTS: Final = SimulatorConfig()

SCENARIO: Final = parse_scenario(
    """
name: a bot written with whatsapp-api-js
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hello there
  - expect: {reply_contains: "You said: hello there"}
  - say: buttons
  - expect: {reply_contains: "Sure?"}
  - tap: "yes"
  - expect: {reply_contains: "Tapped: yes"}
  - say: card
  - expect: {replies: 1}
  - send: image
  - expect: {reply_contains: as sent}
invariants: [every_inbound_answered, sends_valid]
""",
    path="whatsapp_api_js.yaml",
)


def test_the_installed_library_is_the_pinned_one() -> None:
    installed = json.loads((BOT_DIR / "node_modules/whatsapp-api-js/package.json").read_text())
    pinned = json.loads((BOT_DIR / "package.json").read_text())["dependencies"]
    assert installed["version"] == pinned["whatsapp-api-js"]


async def _run(scenario: Scenario, **channel: object) -> tuple[ScenarioResult, str]:
    """``scenario`` against the bot in its own process; with what the bot wrote to stderr.

    ``channel`` adds channel options (``templates``).
    """
    assert NODE is not None
    graph_port, bot_port = free_port(), free_port()
    env = {
        "PORT": str(bot_port),
        "WHATSAPP_APP_SECRET": DEFAULTS.app_secret,
        "WHATSAPP_VERIFY_TOKEN": DEFAULTS.verify_token,
        "WHATSAPP_ACCESS_TOKEN": DEFAULTS.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": DEFAULTS.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
    }
    options = RunOptions(
        target_url=f"http://127.0.0.1:{bot_port}/webhook",
        channel_options={
            "graph_url": f"http://127.0.0.1:{graph_port}",
            "serve_graph": True,
            **channel,
        },
        quiet=0.6,
        expect_timeout=10.0,
    )
    async with started_command((NODE, "bot.mjs"), bot_port, env=env, cwd=BOT_DIR) as (
        _url,
        process,
    ):
        run = await Runner(options).run([scenario])
        process.terminate()
        _, stderr = await process.communicate()
    return run.scenarios[0], stderr.decode()


async def test_a_whatsapp_api_js_bot_runs_a_scenario_at_a_url() -> None:
    result, said = await _run(SCENARIO)
    problems = [v.headline() for v in result.violations], result.error, said
    assert result.status == "passed", problems
    assert "failed" not in said, said  # the bot logs each Graph API call the simulator refused
    conversation = result.conversation
    assert conversation is not None

    sends = conversation.sends()
    # Each message the bot got was marked read with "typing..." as the library writes it.
    receipts = [s.request for s in sends if not s.is_message]
    assert [s.type for s in sends if not s.is_message] == ["typing"] * 5
    assert all(r["typing_indicator"] == {"type": "text"} for r in receipts)
    hello = conversation.inbound()[0]
    [echo] = [s for s in sends if s.text == "You said: hello there"]
    # The library addresses the user by both wa_id and BSUID, and quotes the message.
    assert echo.request["to"] == hello.user
    assert echo.request["recipient"] == conversation.participants[0].user_id
    assert echo.request["context"] == {"message_id": hello.wamid}

    # The library writes a contacts message's array as JSON text; Graph reads it as the array.
    [card] = [s for s in sends if s.type == "contacts"]
    assert card.ok
    assert card.request["contacts"] == [
        {
            "name": {"formatted_name": "Ana Lima", "first_name": "Ana", "last_name": "Lima"},
            "phones": [{"phone": "+55 11 98765-4321", "type": "CELL"}],
        }
    ]

    # The photo came back whole: downloaded, uploaded again, sent by its new id.
    [photo] = [s for s in sends if s.type == "image"]
    sample = MEDIA_SAMPLES["image"][0]
    image = photo.request["image"]
    assert isinstance(image, dict)
    assert image["caption"] == f"{len(sample)} bytes, as sent"
    sent_in = conversation.inbound()[-1].body["image"]
    assert isinstance(sent_in, dict)
    assert sent_in["sha256"] == base64.b64encode(hashlib.sha256(sample).digest()).decode()


OFFER: Final = parse_scenario(
    """
name: a template written with whatsapp-api-js
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: offer
  - expect: {replies: 1}
invariants: [sends_valid]
""",
    path="whatsapp_api_js_template.yaml",
)

# The business's template as Meta lists it: what the bot's template must fit.
BUTTONS: Final = [
    {"type": "URL", "text": "Track", "url": "https://example.com/t/{{1}}"},
    {"type": "QUICK_REPLY", "text": "Stop"},
    {"type": "COPY_CODE", "example": "25OFF"},
]


def _order_ready(buttons: list[dict[str, str]]) -> dict[str, object]:
    return {
        "name": "order_ready",
        "language": "en_US",
        "status": "APPROVED",
        "category": "MARKETING",
        "components": [
            {"type": "HEADER", "format": "TEXT", "text": "Order {{1}}"},
            {"type": "BODY", "text": "Hi {{1}}, your order of {{2}} is ready."},
            {"type": "BUTTONS", "buttons": buttons},
        ],
    }


async def test_a_whatsapp_api_js_template_fits_the_business_s_template(tmp_path: Path) -> None:
    path = tmp_path / "templates.json"  # as --templates gives it
    path.write_text(json.dumps({"data": [_order_ready(BUTTONS)]}), encoding="utf-8")
    result, said = await _run(OFFER, templates=str(path))
    assert result.status == "passed", ([v.headline() for v in result.violations], said)
    assert result.conversation is not None
    [offer] = result.conversation.replies()
    assert offer.text == "Order #7\nHi Ana, your order of $25.00 is ready."
    # One button fewer in the business's template: the library's send no longer fits it.
    result, said = await _run(OFFER, templates=[_order_ready(BUTTONS[:2])])
    assert result.status == "failed"
    headlines = [v.headline() for v in result.violations]
    assert any("refused a template send with 132000" in h for h in headlines), headlines
    assert "template failed" in said


BATCHED: Final = parse_scenario(
    """
name: three quick messages, delivered in one webhook
users:
  - {name: Ana, wa_id: "5511987654321"}
faults: batched
steps:
  - say: [one, two, three]
    gap: 0.1s
  - expect: {reply_contains: "You said: three"}
    within: 3s
""",
    path="whatsapp_api_js_batched.yaml",
)


async def test_the_harness_finds_that_the_library_reads_one_message_of_a_batched_webhook() -> None:
    # whatsapp-api-js 6.3 hands the bot value.messages[0] alone; Meta may put several in one
    # webhook, and the batched fault does. The run says what the bot never answered.
    result, said = await _run(BATCHED)
    assert result.status == "failed", said
    assert [v.headline() for v in result.violations] == [
        "expect at turn 1 (line 9): no reply contains 'You said: three'"
    ]
    conversation = result.conversation
    assert conversation is not None
    assert [m.text for m in conversation.inbound()] == ["one", "two", "three"]
    assert [s.text for s in conversation.replies()] == ["You said: one"]
    # All three came in one POST: the fault, not a lost delivery.
    assert len({m.delivery for m in conversation.inbound()}) == 1


BLOCKING: Final = parse_scenario(
    """
name: a user asks to be blocked
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hello there
  - expect: {reply_contains: "You said: hello there", blocked: false}
  - say: block me
  - expect: {blocked: true, replies: 0}
  - say: are you there?
  - expect: {replies: 0}
""",
    path="whatsapp_api_js_blocking.yaml",
)


async def test_a_whatsapp_api_js_bot_blocks_a_user_through_the_library() -> None:
    # The library's block() names the user both ways ({"user": phone, "user_id": bsuid}).
    result, said = await _run(BLOCKING)
    assert result.status == "passed", ([v.headline() for v in result.violations], said)
    assert "failed" not in said, said
    conversation = result.conversation
    assert conversation is not None
    [change] = [e for e in conversation.events if e.kind == "block"]
    assert change.user == conversation.inbound()[0].user  # the number the run gave Ana
    [dropped] = [e for e in conversation.events if e.kind == "dropped"]
    assert dropped.text == "are you there?"
