"""``harness run --distributed`` and ``harness worker`` on the command line: errors are one line."""

from __future__ import annotations

import pytest

from harness.cli.main import EXIT_USAGE
from tests.bots.loopback import free_port
from tests.support.cli import harness as _harness


def test_a_distributed_run_against_a_url_without_a_store_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    code = _harness("run", "--distributed", url, "--target-url", "http://127.0.0.1:9/webhook")
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.count("\n") == 1
    assert err.startswith("error: --distributed with --target-url needs --redis")


@pytest.mark.parametrize(
    "args",
    [
        ("--graph-advertise", "http://10.0.0.5:8000"),  # no --target-url nor --redis
        ("--target-url", "http://127.0.0.1:9/webhook", "--graph-advertise", "http://h:1"),
        (
            "--target-url",
            "http://x:9/webhook",
            "--redis",
            "redis://x:9/0",
            "--graph-advertise",
            "x",
        ),
    ],
)
def test_an_advertised_graph_api_needs_a_url_a_target_url_and_a_store(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code = _harness("run", *args)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.count("\n") == 1
    assert "--graph-advertise" in err


def test_a_worker_graph_address_that_is_not_a_url_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _harness("worker", "--broker", "redis://127.0.0.1:6379/0", "--graph-advertise", "h:1")
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "--graph-advertise" in err
    assert err.count("\n") == 1


def test_a_distributed_run_with_a_broker_that_is_not_redis_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _harness("run", "--distributed", "amqp://guest:secret@127.0.0.1/")
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err == (
        "error: --distributed 'amqp://guest:***@127.0.0.1/': the broker is a Redis URL "
        "(redis://host:6379/0, rediss://..., unix:///path/to/redis.sock)\n"
    )


def test_a_worker_whose_broker_does_not_answer_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    code = _harness("worker", "--broker", url)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith(f"error: --broker: the broker at {url} did not answer")
    assert err.count("\n") == 1


def test_a_worker_heartbeat_under_a_second_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = _harness("worker", "--broker", "redis://127.0.0.1:6379/0", "--heartbeat", "200ms")
    assert code == EXIT_USAGE
    assert "--heartbeat" in capsys.readouterr().err
