"""The options of ``harness run`` and ``harness replay`` for a bot of one's own at a URL.

A bot configured with its own number checks the handshake's verify token,
every webhook's signature with its own app secret, sends with its own access
token and answers only its own phone number id: it echoes the user's words
only when the harness plays that number. A bot whose SDK is aimed at the
harness has its model calls sent on to the provider the run names.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.main import EXIT_OK, EXIT_USAGE
from tests.bots.fake_openai import Call, FakeOpenAI, Say
from tests.support.bot_at_url import echo_bot_at_url, model_bot_at_url, served_on_thread
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
    # The echo bot sends no buttons for the recorded tap: the line names the recorded user,
    # not the number the replay played them by.
    assert "error: the agent sent user 5511987654321 no buttons" in out, out


def test_regress_replays_every_fixture_against_the_bot_at_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "fixtures"
    for name in ("happy_confirm_button", "redelivered_confirm_books_once"):
        shutil.copytree(FIXTURE.parent / name, folder / name)
    given = [arg for key, value in NUMBER.items() for arg in (f"--{key.replace('_', '-')}", value)]
    with echo_bot_at_url(**NUMBER) as served:
        code = _harness(
            "regress", str(folder), "--target-url", served.webhook,
            "--graph-port", str(served.graph_port), *FAST, *given,
        )  # fmt: skip
    out = capsys.readouterr().out
    # The echo bot is not the agent these were recorded with: both replays reach it, and
    # stop where it sends no buttons for the recorded tap.
    assert code == 1, out
    assert served.bot.posts >= 2, out
    assert "text 'echo: Hi! Do you have a table on Friday at 8pm?'" in out, out
    assert "2 fixtures: 0 same, 2 not" in out, out


def test_regress_takes_one_agent_not_two(capsys: pytest.CaptureFixture[str]) -> None:
    code = _harness(
        "regress", str(FIXTURE), "--target-url", "http://127.0.0.1:9/webhook",
        "--candidate", "target=agents.booking:agent_factory",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert capsys.readouterr().err.strip() == (
        "error: give --candidate target= or --target-url, not both"
    )


def test_a_run_at_a_url_sends_the_agents_model_calls_to_the_provider_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "hello.yaml"
    scenario.write_text(
        "steps:\n  - say: hello\n  - expect: {reply_contains: from the staging model}\n",
        encoding="utf-8",
    )
    provider = FakeOpenAI([Say("Hello from the staging model")])
    with served_on_thread(provider.app) as upstream, model_bot_at_url() as (webhook, graph_port):
        code = _harness(
            "run", str(scenario), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST, "--openai-upstream", f"{upstream}/v1",
        )  # fmt: skip
    assert code == EXIT_OK, capsys.readouterr().out
    [(body, _headers)] = provider.requests
    assert body["messages"] == [{"role": "user", "content": "hello"}]


def test_model_calls_the_provider_never_answered_are_a_line_of_the_failed_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "hello.yaml"
    scenario.write_text(
        "steps:\n  - say: hello\n  - expect: {reply_contains: from the staging model}\n",
        encoding="utf-8",
    )
    with model_bot_at_url() as (webhook, graph_port):
        code = _harness(
            "run", str(scenario), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST, "--openai-upstream", "http://127.0.0.1:9/v1",  # nothing there
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    [line] = [line for line in out.splitlines() if "! model:" in line]
    assert line.startswith(
        "  ! model: 1 of 1 calls got no answer (502: the harness could not get an answer from "
        "http://127.0.0.1:9/v1: "
    ), out
    assert "model calls" not in out  # the summary counts no call that was never answered


def test_a_live_replay_at_a_url_sends_unrecorded_model_calls_to_the_provider_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    provider = FakeOpenAI([Say("Hello from the staging model")])
    with served_on_thread(provider.app) as upstream, model_bot_at_url() as (webhook, graph_port):
        _harness(
            "replay", str(FIXTURE), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST, "--policy", "live", "--openai-upstream", f"{upstream}/v1",
        )  # fmt: skip
    out = capsys.readouterr().out
    assert len(provider.requests) == 1, out
    assert "text 'Hello from the staging model'" in out, out


@pytest.mark.parametrize("option", ["--anthropic-upstream", "--openai-upstream"])
def test_an_upstream_without_target_url_is_a_usage_error(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _harness("replay", str(FIXTURE), option, "http://127.0.0.1:9/v1")
    assert code == EXIT_USAGE
    assert capsys.readouterr().err.strip() == (
        f"error: {option} needs --target-url (an agent in process calls its model itself)"
    )


def test_a_replay_whose_agent_fails_the_handshake_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with echo_bot_at_url(verify_token="the-bots-own-token") as served:
        code = _harness(
            "replay", str(FIXTURE), "--target-url", served.webhook,
            "--graph-port", str(served.graph_port), *FAST,
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured.out
    assert "changed" not in captured.out
    [line] = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    assert line.startswith(
        f"error: webhook {served.webhook} failed the verification handshake: it answered 403"
    ), line


def test_a_run_whose_agent_fails_the_handshake_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text("steps:\n  - say: hi\n", encoding="utf-8")
    with echo_bot_at_url(verify_token="the-bots-own-token") as served:
        code = _harness(
            "run", str(tmp_path), "--target-url", served.webhook,
            "--graph-port", str(served.graph_port), *FAST,
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured.out
    assert served.bot.posts == 0, captured.out  # no scenario was played
    assert "ERROR" not in captured.out
    [line] = [line for line in captured.err.splitlines() if line.strip()]
    assert line.startswith(
        f"error: webhook {served.webhook} failed the verification handshake: it answered 403"
    ), line


def _run_at_the_model_bot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script: list[Say | Call], invariant: str
) -> tuple[int, str, FakeOpenAI]:
    scenario = tmp_path / "order.yaml"
    scenario.write_text(
        f"steps:\n  - say: one widget please\ninvariants:\n  - {invariant}\n",
        encoding="utf-8",
    )
    provider = FakeOpenAI(script)
    with served_on_thread(provider.app) as upstream, model_bot_at_url() as (webhook, graph_port):
        code = _harness(
            "run", str(scenario), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST, "--openai-upstream", f"{upstream}/v1", "--report-dir", str(tmp_path / "r"),
        )  # fmt: skip
    return code, capsys.readouterr().out, provider


def test_a_check_about_tools_holds_for_an_agent_whose_model_asked_for_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The bot has no tool spans; its model calls come through the harness, and asked for no
    # tool: it called none, and a check about tools holds.
    code, out, provider = _run_at_the_model_bot(
        tmp_path, capsys, [Say("Hello!")], "no_repeated_side_effects"
    )
    assert len(provider.requests) == 1, out
    assert "PASS" in out, out
    assert code == EXIT_OK, out


def test_the_tools_an_agent_ran_are_seen_in_what_it_tells_its_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No spans, no recorders: the result of place_order the bot gave back to its model says it
    # ran the tool, with the arguments the model asked for, before anyone confirmed anything.
    script: list[Say | Call] = [Call("place_order", {"item": "widget", "qty": 1}), Say("Ordered!")]
    code, out, provider = _run_at_the_model_bot(
        tmp_path, capsys, script, "action_only_after_confirmation: {tool: place_order}"
    )
    assert len(provider.requests) == 2, out
    assert code == 1, out
    assert "place_order was called before the agent proposed anything to confirm" in out, out
    report = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    [scenario] = report["scenarios"]
    [call] = [e for e in scenario["conversation"]["events"] if e["kind"] == "tool"]
    assert (call["name"], call["args"], call["result"]) == (
        "place_order",
        {"item": "widget", "qty": 1},
        {"order": "ORD-2"},
    )


@pytest.mark.parametrize("skew", ["agent-offset=-5m", "shift=+1h,agent-offset=+30s"])
def test_an_agent_offset_for_an_agent_at_a_url_is_a_usage_error(
    skew: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _harness(
        "replay", str(FIXTURE), "--target-url", "http://127.0.0.1:9/webhook", "--skew", skew
    )
    assert code == EXIT_USAGE
    assert capsys.readouterr().err.strip() == (
        "error: --skew agent-offset: an agent at --target-url reads its own machine's clock, "
        "which the replay can't move; skew that clock there (shift and scale move the "
        "webhooks' timestamps)"
    )


def test_a_shift_and_a_scale_still_move_a_replay_at_a_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = [arg for key, value in NUMBER.items() for arg in (f"--{key.replace('_', '-')}", value)]
    with echo_bot_at_url(**NUMBER) as served:
        code = _harness(
            "replay", str(FIXTURE), "--target-url", served.webhook,
            "--graph-port", str(served.graph_port), *FAST, *given,
            "--skew", "shift=+25h@turn2,scale=2",
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code != EXIT_USAGE, out
    assert served.bot.posts >= 1, out
    assert "text 'echo: Hi! Do you have a table on Friday at 8pm?'" in out, out


@pytest.mark.parametrize("command", ["replay", "regress"])
def test_model_calls_a_pinned_replay_refused_are_said_to_be_refused(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with model_bot_at_url() as (webhook, graph_port):
        _harness(
            command, str(FIXTURE), "--target-url", webhook, "--graph-port", str(graph_port),
            *FAST,
        )  # fmt: skip
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("model: ")]
    assert line == "model: 1 model call refused: not in the recording (asked for gpt-test)", out
    assert "unrecorded provider" not in out, out
