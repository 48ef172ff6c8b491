"""``--loop``: ``harness serve`` and ``harness load`` run on uvloop, unless told asyncio."""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
import pytest
from click.testing import CliRunner

from channels.whatsapp._event_loop import loop_factory, loop_name, run_on
from channels.whatsapp.cli import serve_command
from channels.whatsapp.load_cli import load_command
from tests.bots.loopback import free_port
from tests.channels.whatsapp.test_cli import _started
from tests.support.processes import stop


async def _which_loop() -> str:
    return loop_name(asyncio.get_running_loop())


@pytest.mark.parametrize(
    ("name", "runs_on"), [("auto", "uvloop"), ("uvloop", "uvloop"), ("asyncio", "asyncio")]
)
def test_each_loop_name_runs_the_loop_it_names(name: str, runs_on: str) -> None:
    assert run_on(loop_factory(name), _which_loop()) == runs_on


def test_without_uvloop_auto_falls_back_to_asyncio_and_asking_for_it_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    assert run_on(loop_factory("auto"), _which_loop()) == "asyncio"
    for command in (serve_command, load_command):
        extra = ["--target-url", "http://127.0.0.1:9/webhook"] if command is load_command else []
        result = CliRunner().invoke(command, [*extra, "--loop", "uvloop"])
        assert result.exit_code == 2, result.output
        [line] = [text for text in result.output.splitlines() if text.startswith("Error:")]
        assert line == (
            "Error: Invalid value for --loop: uvloop is not installed here (it builds on"
            " CPython for Linux and macOS); use --loop asyncio"
        )


def test_a_loop_that_is_not_one_of_the_choices_is_refused() -> None:
    result = CliRunner().invoke(serve_command, ["--loop", "trio"])
    assert result.exit_code == 2
    assert "Invalid value for '--loop': 'trio' is not one of 'auto', 'asyncio', 'uvloop'." in (
        result.output
    )


@pytest.mark.network
@pytest.mark.parametrize(("given", "runs_on"), [([], "uvloop"), (["--loop", "asyncio"], "asyncio")])
async def test_harness_serve_runs_on_the_loop_it_is_given(given: list[str], runs_on: str) -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(port), *given),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            await _started(client, process)
            assert (await client.get("/_harness/clock")).status_code == 200
    finally:
        out, _ = await stop(process)
    assert f"event loop: {runs_on}\n" in out.decode()
