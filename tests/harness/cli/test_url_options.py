"""A bot at a URL configured with its own number: ``harness replay`` takes its secrets and ids.

The bot checks the handshake's verify token, every webhook's signature with
its own app secret, sends with its own access token and answers only its own
phone number id: it echoes the user's words only when the harness plays that
number, as ``harness run --target-url`` does with the same options.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bot_at_url import echo_bot_at_url
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "scenarios" / "booking" / "fixtures" / "happy_confirm_button"
NUMBER = {
    "app_secret": "the-bots-own-secret",
    "verify_token": "the-bots-own-token",
    "access_token": "the-bots-own-access-token",
    "phone_number_id": "123456789012345",
}
FAST = ("--quiet", "0.5s", "--expect-timeout", "2s")

pytestmark = pytest.mark.network


def test_replay_at_a_url_plays_the_number_the_bot_is_configured_with(
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = [arg for key, value in NUMBER.items() for arg in (f"--{key.replace('_', '-')}", value)]
    with echo_bot_at_url(**NUMBER) as served:
        _harness(
            "replay", str(FIXTURE), "--target-url", served.webhook,
            "--graph-port", str(served.graph_port), *FAST, *given, "--waba-id", "555",
        )  # fmt: skip
    out = capsys.readouterr().out
    assert served.bot.posts >= 1, out
    assert "text 'echo: Hi! Do you have a table on Friday at 8pm?'" in out, out
    assert all(code == 200 for code, _ in served.bot.send_results), served.bot.send_results
