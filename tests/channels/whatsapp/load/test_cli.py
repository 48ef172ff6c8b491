"""``harness load`` on the command line: bad input is one line and exit code 2."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import cli
from tests.bots.loopback import free_port, started_process
from tests.harness.test_lazy import _heavy, _loaded_after
from tests.support.processes import stop

CHAT = """\
name: chat
users: [{name: Ana, wa_id: "15550000001"}]
steps:
  - say: hi
"""


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    """A scenario with one say step."""
    path = tmp_path / "chat.yaml"
    path.write_text(CHAT)
    return path


def _load(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["load", *args])
    lines = [line for line in result.output.splitlines() if line.strip()]
    return result.exit_code, lines


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--users", "0"], "error: --users: 0 is outside 1..100,000"),
        (["--users", "200000"], "error: --users: 200000 is outside 1..100,000"),
        (["--rate", "0"], "error: --rate: 0 must be more than 0"),
        (["--max-messages", "0"], "error: --max-messages: 0 is outside 1..10,000,000"),
        (["--duration", "2d"], "error: --duration: 172800s is over the limit of 24h"),
        (["--reply-timeout", "0s"], "error: --reply-timeout: 0 must be more than 0"),
        (["--connections", "0"], "error: --connections: 0 is outside 1..10,000"),
        (
            ["--first-wa-id", "123"],
            "error: --first-wa-id: 123 to 132 are not phone numbers (8 to 15 digits)",
        ),
    ],
)
def test_an_option_out_of_bounds_is_one_line_naming_it(
    chat: Path, options: list[str], line: str
) -> None:
    code, lines = _load(
        "--target-url", "http://127.0.0.1:9/webhook", "--scenario", str(chat), *options
    )
    assert (code, lines) == (2, [line])


def test_a_target_that_is_not_a_url_is_refused(chat: Path) -> None:
    code, lines = _load("--target-url", "localhost:8001", "--scenario", str(chat))
    assert (code, lines) == (
        2,
        ["error: --target-url 'localhost:8001': expected an http(s):// URL"],
    )


def test_a_duration_that_is_not_one_is_refused(chat: Path) -> None:
    code, lines = _load(
        "--target-url", "http://x/webhook", "--scenario", str(chat), "--duration", "soon"
    )
    assert code == 2
    assert lines[-1].startswith("Error: Invalid value for --duration: bad duration 'soon'")


def test_a_throughput_limit_under_one_a_second_is_refused(chat: Path) -> None:
    code, lines = _load(
        "--target-url", "http://x/webhook", "--scenario", str(chat), "--throughput-mps", "0"
    )
    assert code == 2
    assert lines[-1] == "Error: Invalid value for '--throughput-mps': 0 is not in the range x>=1."


def test_a_missing_scenario_file_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, lines = _load("--target-url", "http://x/webhook", "--scenario", str(missing))
    assert code == 2
    assert lines[-1] == f"Error: Invalid value for --scenario: {missing}: no such file or folder"


def test_a_bad_templates_file_is_one_line_naming_it(chat: Path, tmp_path: Path) -> None:
    templates = tmp_path / "templates.yaml"
    templates.write_text("- name: order_ready\n  language: en_US\n  components: nope\n")
    code, lines = _load(
        "--target-url", "http://x/webhook", "--scenario", str(chat), "--templates", str(templates)
    )
    assert code == 2
    assert lines[-1].startswith("Error: Invalid value for --templates: ")
    assert f"{templates}:3: " in lines[-1]
    assert "components" in lines[-1]


def test_a_scenario_with_nothing_to_say_is_refused(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet.yaml"
    quiet.write_text(CHAT.replace("  - say: hi\n", "  - wait: 1h\n"))
    code, lines = _load("--target-url", "http://x/webhook", "--scenario", str(quiet))
    assert code == 2
    assert lines == [f"error: {quiet}: steps: no say or tap step to play (a load run needs one)"]


def test_a_target_nothing_answers_at_is_one_line(chat: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/webhook"
    code, lines = _load(
        "--target-url", url, "--scenario", str(chat), "--graph-port", str(free_port())
    )
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith(f"error: --target-url {url}: no answer (")


@pytest.mark.network
async def test_a_run_against_a_bot_in_another_process_with_the_rules_options_writes_reports(
    chat: Path, tmp_path: Path
) -> None:
    graph_port = free_port()
    env = {
        "WHATSAPP_APP_SECRET": "harness-app-secret",
        "WHATSAPP_VERIFY_TOKEN": "harness-verify-token",
        "WHATSAPP_ACCESS_TOKEN": "harness-access-token",
        "WHATSAPP_PHONE_NUMBER_ID": "100200300400500",
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
    }
    async with started_process("tests.bots.inline", env=env, ready_path="/webhook") as (bot, _):
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "harness", "load", "--target-url", f"{bot}/webhook"),
            *("--graph-port", str(graph_port), "--scenario", str(chat), "--users", "2"),
            *("--rate", "20", "--duration", "1s", "--think", "0.1s"),
            *("--no-statuses", "--throughput-mps", "500", "--no-rate-limits"),
            *("--json", str(tmp_path / "load.json"), "--html", str(tmp_path / "load.html")),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            await stop(process)
    assert process.returncode == 0, err.decode()
    report = json.loads((tmp_path / "load.json").read_text())
    assert report["passed"] is True
    assert report["results"]["replies"] == report["results"]["messages_sent"] > 0
    settings = report["settings"]
    assert (settings["statuses"], settings["throughput_mps"], settings["rate_limits"]) == (
        False,
        500,
        False,
    )
    assert report["results"]["statuses_answered"] == {}
    assert "lost 0, duplicated 0, late 0, refused 0, errors 0" in out.decode()
    assert (tmp_path / "load.html").read_text().startswith("<!doctype html>")


def test_the_commands_help_imports_none_of_what_a_run_uses() -> None:
    loaded = _loaded_after(
        "from harness.cli.main import main\ntry: main(['load', '--help'])\nexcept SystemExit: pass"
    )
    assert "channels.whatsapp.load_cli" in loaded
    assert _heavy(loaded) == []
    assert not [m for m in loaded if m == "aiohttp" or m.startswith("channels.whatsapp.load.")]
