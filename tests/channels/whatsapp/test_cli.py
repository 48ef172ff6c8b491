"""``harness serve``: its control token, and where it may listen without one."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from channels.whatsapp.cli import is_loopback, serve_command
from channels.whatsapp.config import SimulatorConfig
from tests.bots.loopback import free_port
from tests.support.processes import stop


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.com", False),
    ],
)
def test_only_loopback_addresses_count_as_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "myhost"])
def test_serving_beyond_loopback_without_a_control_token_is_refused_in_one_line(host: str) -> None:
    result = CliRunner().invoke(serve_command, ["--host", host, "--port", "0"])
    assert result.exit_code == 2
    [line] = [text for text in result.output.splitlines() if text.startswith("Error:")]
    assert line == (
        f"Error: --host {host} can be reached from other machines, and the control API drives"
        " every user: give --control-token (or HARNESS_CONTROL_TOKEN)"
    )


def test_an_empty_control_token_is_refused() -> None:
    result = CliRunner().invoke(serve_command, ["--control-token", " "])
    assert result.exit_code == 2
    assert "Error: Invalid value for --control-token: the token is empty" in result.output


async def _started(client: httpx.AsyncClient, process: asyncio.subprocess.Process) -> None:
    """Wait until the ``harness serve`` process answers (its OpenAPI document), at most 20 s."""
    deadline = time.monotonic() + 20
    while True:
        try:
            if (await client.get("/openapi.json")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.returncode is not None:
            pytest.fail((await process.communicate())[1].decode())
        assert time.monotonic() < deadline, "harness serve did not start in 20 s"
        await asyncio.sleep(0.1)


@pytest.mark.network
async def test_harness_serve_with_a_token_from_the_environment_wants_it_on_the_control_api() -> (
    None
):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(port)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "HARNESS_CONTROL_TOKEN": "s3cret"},
    )
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            await _started(client, process)
            assert (await client.get("/_harness/clock")).status_code == 401
            wrong = await client.get("/_harness/clock", headers={"Authorization": "Bearer x"})
            assert wrong.status_code == 401
            right = await client.get("/_harness/clock", headers={"Authorization": "Bearer s3cret"})
            assert right.status_code == 200, right.text
    finally:
        out, _ = await stop(process)
    assert "(with a control token)" in out.decode()


async def _eight_sends_at_once(*options: str) -> tuple[list[object], float]:
    """The codes ``harness serve *options`` answers eight template sends made at once with."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(port), *options),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    config = SimulatorConfig()
    template = {"name": "hello_world", "language": {"code": "en_US"}}
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            await _started(client, process)
            codes = []
            started = time.monotonic()
            for n in range(8):
                answer = await client.post(
                    f"/v25.0/{config.phone_number_id}/messages",
                    headers={"Authorization": f"Bearer {config.access_token}"},
                    json={
                        "messaging_product": "whatsapp",
                        "to": f"155500000{n:02d}",
                        "type": "template",
                        "template": template,
                    },
                )
                codes.append(answer.json().get("error", {}).get("code", answer.status_code))
            took = time.monotonic() - started
    finally:
        await stop(process)
    return codes, took


@pytest.mark.network
async def test_harness_serve_sends_at_the_throughput_it_is_given() -> None:
    # At once: three fit in one second's budget, then one per 1/3 s.
    codes, took = await _eight_sends_at_once("--throughput-mps", "3")
    assert codes[:3] == [200, 200, 200]
    assert set(codes) == {200, 130429}
    assert codes.count(200) <= 3 + int(took * 3)


@pytest.mark.network
async def test_harness_serve_without_rate_limits_takes_every_send() -> None:
    codes, _ = await _eight_sends_at_once("--throughput-mps", "3", "--no-rate-limits")
    assert codes == [200] * 8


@pytest.mark.network
async def test_harness_serve_answers_from_the_templates_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "templates.yaml"
    path.write_text("- {name: hello_world, language: en_US, status: PAUSED}\n", encoding="utf-8")
    codes, _ = await _eight_sends_at_once("--templates", str(path), "--no-rate-limits")
    assert codes == [132015] * 8


def test_serve_says_each_webhook_post_the_bot_did_not_answer_200(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from datetime import UTC, datetime

    from channels.whatsapp.cli import _say_unanswered_webhook
    from harness.trace import DeliveryAttempt

    at = datetime(2026, 1, 1, tzinfo=UTC)
    _say_unanswered_webhook(
        DeliveryAttempt(at=at, delivery="d1", items=("wamid.A",), status_code=200)
    )
    _say_unanswered_webhook(
        DeliveryAttempt(at=at, delivery="d2", items=("wamid.B",), status_code=500)
    )
    _say_unanswered_webhook(
        DeliveryAttempt(at=at, delivery="d2", attempt=2, items=("wamid.B",), error="timeout")
    )
    assert capsys.readouterr().err.splitlines() == [
        "webhook POST of wamid.B (attempt 1) answered 500",
        "webhook POST of wamid.B (attempt 2) got no answer (timeout)",
    ]
