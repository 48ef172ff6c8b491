"""A run against --target-url says once, before it starts, that the URL is wrong or dead."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.suites.target_url import check_target_url, reach_target_url
from tests.support.cli import harness


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8000/webhook", ("127.0.0.1", 8000)),
        ("https://bot.example.com/hook", ("bot.example.com", 443)),
        ("http://[::1]/webhook", ("::1", 80)),
    ],
)
def test_an_http_url_gives_its_host_and_port(url: str, address: tuple[str, int]) -> None:
    assert check_target_url(url) == address


@pytest.mark.parametrize(
    "url", ["notaurl", "ftp://x/y", "http:///webhook", "http://127.0.0.1:99999/webhook"]
)
def test_anything_else_is_refused_naming_the_option(url: str) -> None:
    with pytest.raises(ConfigError, match=r"^--target-url .*: not an http\(s\) URL"):
        check_target_url(url)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.network
async def test_a_url_where_nothing_listens_is_refused_before_the_run() -> None:
    port = _closed_port()
    with pytest.raises(ConfigError, match=rf"nothing answers at 127.0.0.1:{port} \("):
        await reach_target_url(f"http://127.0.0.1:{port}/webhook")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        await reach_target_url(f"http://127.0.0.1:{listening.getsockname()[1]}/webhook")


@pytest.mark.network
@pytest.mark.parametrize("url", ["dead", "notaurl"])
def test_a_run_at_a_bad_or_dead_url_is_one_line_and_exit_2(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.yaml").write_text("steps:\n  - say: hi\n", encoding="utf-8")
    target = f"http://127.0.0.1:{_closed_port()}/webhook" if url == "dead" else url
    code = harness("run", str(tmp_path), "--target-url", target)
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if line.strip()]
    assert len(errors) == 1, captured.err
    expected = (
        f"error: --target-url {target}: nothing answers at"
        if url == "dead"
        else "error: --target-url 'notaurl': not an http(s) URL"
    )
    assert errors[0].startswith(expected), errors[0]
    assert "Reproduce with" not in captured.out
